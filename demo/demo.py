#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""./run demo: a throwaway local tor (DisableNetwork 1, nothing leaves the machine), the
playbook demo/local.yml run twice (the second run changes nothing), the addresses printed,
and everything stopped and removed again."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from harness.tor_instance import TorInstance  # noqa: E402


def playbook(tor, base):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    cmd = [str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", "localhost,", "-c", "local",
           str(ROOT / "demo" / "local.yml"), "-e", json.dumps({"tor_control_port": tor.control_port,
                                                                "demo_dir": str(base)})]
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    return proc, time.monotonic() - start


def main():
    base = Path(tempfile.mkdtemp(prefix="onionlab-demo-"))
    (base / "torrc.d").mkdir()
    try:
        print("== starting a throwaway tor in %s (DisableNetwork 1)" % base)
        with TorInstance(base / "tor") as tor:
            print("   tor pid %d, ControlPort 127.0.0.1:%d, cookie authentication" % (tor.pid, tor.control_port))
            for attempt in ("first run", "second run"):
                proc, took = playbook(tor, base)
                print("\n== %s of demo/local.yml (%.1f s)" % (attempt, took))
                lines = proc.stdout.splitlines()
                shown = [l for l in lines if '"msg":' in l or l.startswith(("changed:", "ok:", "localhost ", "fatal"))]
                print("\n".join("   " + l.strip() for l in shown))
                if proc.returncode != 0:
                    print(proc.stdout)
                    return 1
            recap = [l for l in lines if l.startswith("localhost ")]
            if not recap or "changed=0" not in recap[0]:
                print("!! the second run changed something")
                return 1
            print("\n== the second run changed nothing (changed=0)")
            print("== tor's torrc now %%includes %s; stopping tor (pid %d)" % (base / "torrc.d/onionlab.conf", tor.pid))
        return 0
    finally:
        shutil.rmtree(str(base), ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
