#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs of tor_hidden_service at the same moment against one throwaway tor: how many services
are lost, and what the lock costs in wall time.

    .venv/bin/python bench/concurrency.py [--parallel 8] [--rounds 10] [--collections DIR]

Each round starts PARALLEL module processes at once (the module file run by Python with its
arguments in a JSON file, as Ansible runs it on a target), each adding its own persistent
service, then counts the services missing from tor and from the drop-in. --collections points
at another ansible_collections root (e.g. a worktree of an older commit) to measure that
code on the same machine in the same session.
"""

import argparse
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--collections", default=str(ROOT / ".build" / "collections"))
    args = ap.parse_args()
    module = Path(args.collections) / "ansible_collections" / "onionlab" / "tor" / "plugins" / "modules" / \
        "tor_hidden_service.py"
    sys.path.insert(0, args.collections)
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
    base = Path(tempfile.mkdtemp(prefix="onionlab-conc-"))
    env = dict(os.environ, PYTHONPATH=args.collections)
    lost_tor = lost_drop_in = failed = 0
    walls = []
    try:
        with TorInstance(base / "tor") as tor:
            drop_in = base / "torrc.d" / "onionlab.conf"
            wanted = []
            for rnd in range(args.rounds):
                procs = []
                for i in range(args.parallel):
                    path = str(base / ("s%d-%d" % (rnd, i)))
                    wanted.append(path)
                    argf = base / ("a%d-%d.json" % (rnd, i))
                    argf.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {
                        "control_port": tor.control_port, "config_file": str(drop_in), "path": path,
                        "ports": [{"port": 80 + i}]}}))
                    procs.append(argf)
                start = time.monotonic()
                running = [subprocess.Popen([sys.executable, str(module), str(a)], env=env, stdout=subprocess.PIPE,
                                            stderr=subprocess.STDOUT) for a in procs]
                for proc in running:
                    out = proc.communicate(120)[0].decode()
                    if '"failed": true' in out:
                        failed += 1
                walls.append(time.monotonic() - start)
                with connect(port=tor.control_port) as ctl:
                    live = [s["path"] for s in hs.services_from_conf(ctl.get_conf("HiddenServiceOptions"))]
                on_disk = [s["path"] for s in (hs.read_drop_in(str(drop_in)) or [])]
                lost_tor = sum(1 for p in wanted if p not in live)
                lost_drop_in = sum(1 for p in wanted if p not in on_disk)
            total = args.rounds * args.parallel
            walls.sort()
            print("%d rounds x %d runs at once: %d/%d services missing from tor, %d/%d from the drop-in, %d runs failed;"
                  " wall per round min %.2f s, median %.2f s, max %.2f s"
                  % (args.rounds, args.parallel, lost_tor, total, lost_drop_in, total, failed,
                     walls[0], walls[len(walls) // 2], walls[-1]))
    finally:
        shutil.rmtree(str(base), ignore_errors=True)


if __name__ == "__main__":
    main()
