#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Soak of the tests that reach an onion service through a client (issue 37): each one N times, its failure rate
and its time (p50, max). Not run by .ci/run: a few hours for N=5 on 2 cores.

    .venv/bin/python bench/soak_reach.py --runs 5                   # every file below, and the molecule scenarios
    .venv/bin/python bench/soak_reach.py --runs 3 --only test_privnet_dos.py --no-molecule
    .venv/bin/python bench/soak_reach.py --runs 5 --molecule-only

Each run is a pytest process of its own (a private network of its own: no run inherits another's state), its
output kept in .build/soak/<file>.<n>.log; a failed run's failing tests and the first lines of what Reach printed
(both sides' events) are shown at once. Prints one row per file or scenario, and a last line: runs, failures.
Run it with ./run's environment (`./run test` once made .venv and .build/collections), on an otherwise idle machine
or beside a known load (say which in the note).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the tests that reach a service through a client tor (harness.reach), by where CI runs them
FILES = [
    'tests/integration/privnet/test_privnet.py',
    'tests/integration/privnet/test_privnet_dos.py',
    'tests/integration/privnet/test_privnet_client_auth.py',
    'tests/integration/privnet/test_privnet_service_rotation.py',
    'tests/integration/modules/test_tor_onion_probe.py',
    'tests/integration/beds/test_hosts.py',
    'tests/integration/privnet/test_metrics_privnet.py',
    'tests/integration/beds/test_metrics_bed.py',
    'tests/integration/privnet/test_privnet_onionbalance.py',
    'tests/integration/roles/test_role_onion_vanguards.py',
]
SCENARIOS = ['default']     # molecule: verify fetches every service through the network's client


def run(cmd, log, cwd, env):
    t0 = time.monotonic()
    with open(log, 'w') as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=env, stdin=subprocess.DEVNULL)
    return rc, time.monotonic() - t0


def why(log):
    """The failing tests and the first lines of the first failure's report."""
    with open(log, errors='replace') as f:
        text = f.read()
    failed = re.findall(r'^FAILED (\S+)', text, re.M) or re.findall(r'^ERROR (\S+)', text, re.M)
    first = re.search(r'^E +(.*)$', text, re.M)
    return failed, first.group(1)[:300] if first else text[-300:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--only', action='append', help='a file name (or part of one) of the list; repeatable')
    ap.add_argument('--no-molecule', action='store_true')
    ap.add_argument('--molecule-only', action='store_true', help='the molecule scenarios alone')
    args = ap.parse_args()
    files = [] if args.molecule_only else [f for f in FILES if not args.only or any(o in f for o in args.only)]
    scenarios = [] if args.no_molecule or (args.only and not args.molecule_only) else SCENARIOS
    logs = os.path.join(ROOT, '.build', 'soak')
    os.makedirs(logs, exist_ok=True)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.build', 'collections'),
               PATH=os.path.join(ROOT, '.venv', 'bin') + os.pathsep + os.environ.get('PATH', ''))
    rows = []
    jobs = [(f, [sys.executable, '-m', 'pytest', '-p', 'no:cacheprovider', '-q', '-s', f], ROOT) for f in files]
    jobs += [('molecule ' + s, ['molecule', 'test', '-s', s], os.path.join(ROOT, 'extensions')) for s in scenarios]
    for name, cmd, cwd in jobs:
        times, failures = [], []
        for i in range(1, args.runs + 1):
            log = os.path.join(logs, '%s.%d.log' % (os.path.basename(name).replace(' ', '-'), i))
            rc, took = run(cmd, log, cwd, env)
            times.append(took)
            if rc != 0:
                failed, first = why(log)
                failures.append(i)
                print('  %s run %d FAILED after %.0fs: %s -- %s (%s)' % (name, i, took, failed, first, log), flush=True)
            else:
                print('  %s run %d passed in %.0fs' % (name, i, took), flush=True)
        rows.append((name, args.runs, len(failures), statistics.median(times), max(times)))
    print('\n%-58s %5s %8s %8s %8s' % ('file or scenario', 'runs', 'failed', 'p50 s', 'max s'))
    for name, runs, failed, p50, top in rows:
        print('%-58s %5d %8s %8.0f %8.0f' % (name, runs, '%d (%d%%)' % (failed, 100 * failed // runs), p50, top))
    total, bad = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print('%d runs, %d failed' % (total, bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
