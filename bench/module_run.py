#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Wall time of one tor_hidden_service run (create, then unchanged) next to a bare
`ansible -m ping`, on this machine, against a throwaway tor. Median of N rounds.

    .venv/bin/python bench/module_run.py [N]
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from harness.tor_instance import TorInstance  # noqa: E402

BIN = ROOT / ".venv" / "bin"
ENV = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
           ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCALHOST_WARNING="0")


def timed(cmd):
    start = time.monotonic()
    subprocess.run(cmd, env=ENV, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    base = Path(tempfile.mkdtemp(prefix="onionlab-bench-"))
    rows = {"ansible -m ping": [], "tor_hidden_service create": [], "tor_hidden_service unchanged": [],
            "tor_hidden_service_info": []}
    try:
        with TorInstance(base / "tor") as tor:
            for i in range(rounds):
                args = json.dumps({"control_port": tor.control_port, "path": str(base / ("s%d" % i)),
                                   "ports": [{"port": 80}], "config_file": str(base / "onionlab.conf")})
                adhoc = [str(BIN / "ansible"), "localhost", "-i", "localhost,", "-c", "local"]
                rows["ansible -m ping"].append(timed(adhoc + ["-m", "ping"]))
                hs = adhoc + ["-m", "onionlab.tor.tor_hidden_service", "-a", args]
                rows["tor_hidden_service create"].append(timed(hs))
                rows["tor_hidden_service unchanged"].append(timed(hs))
                rows["tor_hidden_service_info"].append(timed(adhoc + [
                    "-m", "onionlab.tor.tor_hidden_service_info", "-a", json.dumps({"control_port": tor.control_port})]))
    finally:
        shutil.rmtree(str(base), ignore_errors=True)
    ping = statistics.median(rows["ansible -m ping"])
    print("%-32s %10s %10s %8s" % ("ad-hoc run (%d rounds)" % rounds, "median s", "min s", "x ping"))
    for name, values in rows.items():
        med = statistics.median(values)
        print("%-32s %10.3f %10.3f %8.2f" % (name, med, min(values), med / ping))


if __name__ == "__main__":
    main()
