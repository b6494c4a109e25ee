#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Round trips of our control-protocol client against stem's Controller, same tor, same run.

    .venv/bin/python bench/control.py [--n 500] [--connects 50] [--rounds 3]

A throwaway tor (tests/harness/tor_instance.py: DisableNetwork 1, cookie auth, two
HiddenService blocks so that GETCONF HiddenServiceOptions has something to say) is started;
each variant does N round trips per round, the best round counts (the least disturbed by
other load on the machine). Per-call median and mean in microseconds; ratio = variant's
median / our client's median for the same operation (stem: > 1 means we are faster).

stem caches some GETINFO answers ('version' among them): its get_info variant runs with
set_caching(False), so that every call is a round trip to tor; msg() is stem's raw variant.
stem's authenticate() also reads __OwningControllerProcess (one more round trip): that is
part of its connect time, as it is of every stem user's.
"""

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COLLECTIONS = REPO / ".build" / "collections"
if not (COLLECTIONS / "ansible_collections" / "onionlab" / "tor").exists():
    (COLLECTIONS / "ansible_collections" / "onionlab").mkdir(parents=True, exist_ok=True)
    (COLLECTIONS / "ansible_collections" / "onionlab" / "tor").symlink_to(REPO)
sys.path[:0] = [str(COLLECTIONS), str(REPO / "tests")]

import stem.control  # noqa: E402  (test-only dependency, in .venv)

from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect  # noqa: E402
from harness.tor_instance import TorInstance  # noqa: E402


def timed(call, n, rounds):
    """Per-call seconds of the best round (lowest total) of n calls."""
    best = None
    for _ in range(rounds):
        samples = []
        for _ in range(n):
            start = time.perf_counter()
            call()
            samples.append(time.perf_counter() - start)
        if best is None or sum(samples) < sum(best):
            best = samples
    return best


def stem_controller(port):
    controller = stem.control.Controller.from_port(port=port)
    controller.authenticate()
    return controller


def stem_connect(port):
    stem_controller(port).close()


def ours_connect(port):
    connect(port=port).close()


def run(n, connects, rounds):
    base = Path(tempfile.mkdtemp(prefix="onionlab-bench-"))
    try:
        return _run(base, n, connects, rounds)
    finally:
        shutil.rmtree(str(base), ignore_errors=True)


def _run(base, n, connects, rounds):
    hs = [base / "hs1", base / "hs2"]
    extra = ["HiddenServiceDir %s" % hs[0], "HiddenServicePort 80 127.0.0.1:8080",
             "HiddenServicePort 443 127.0.0.1:8443", "HiddenServiceDir %s" % hs[1],
             "HiddenServicePort 22 127.0.0.1:22"]
    rows = []
    with TorInstance(base, extra=extra) as tor:
        port = tor.control_port
        # stem's authenticate() sends TAKEOWNERSHIP when __OwningControllerProcess is our pid,
        # and tor exits when that connection closes. Keep tor bound to this process through one
        # connection of our own instead, for the whole run.
        keeper = connect(port=port)
        keeper.take_ownership()
        keeper.reset_conf(["__OwningControllerProcess"])
        ours = connect(port=port)
        theirs = stem_controller(port)
        theirs.set_caching(False)
        assert not theirs.is_caching_enabled()
        # same answers before timing anything
        assert ours.get_info("version")["version"] == theirs.get_info("version")
        assert [v for k, v in ours.get_conf("HiddenServiceOptions") if k == "HiddenServiceDir"] == \
            theirs.get_conf_map("HiddenServiceOptions", multiple=True)["HiddenServiceDir"]
        variants = [
            ("GETINFO version", [
                ("onionlab get_info", lambda: ours.get_info("version")),
                ("onionlab request", lambda: ours.request("GETINFO", ["version"])),
                ("stem get_info (no cache)", lambda: theirs.get_info("version")),
                ("stem msg", lambda: theirs.msg("GETINFO version")),
            ]),
            ("GETCONF HiddenServiceOptions", [
                ("onionlab get_conf", lambda: ours.get_conf("HiddenServiceOptions")),
                ("onionlab request", lambda: ours.request("GETCONF", ["HiddenServiceOptions"])),
                ("stem get_conf_map (no cache)",
                 lambda: theirs.get_conf_map("HiddenServiceOptions", multiple=True)),
                ("stem msg", lambda: theirs.msg("GETCONF HiddenServiceOptions")),
            ]),
        ]
        for operation, calls in variants:
            for _name, call in calls:          # warm up every path once
                for _ in range(20):
                    call()
            for name, call in calls:
                rows.append((operation, name, timed(call, n, rounds), n))
        ours.close()
        theirs.close()
        connect_rows = [("onionlab connect()", lambda: ours_connect(port)),
                        ("stem from_port+authenticate", lambda: stem_connect(port))]
        for name, call in connect_rows:
            call()
        for name, call in connect_rows:
            rows.append(("connect + authenticate", name, timed(call, connects, rounds), connects))
        tor_version = keeper.get_info("version")["version"]
        keeper.close()
    return rows, tor_version


def report(rows, tor_version, rounds):
    print("%-30s %-30s %6s %11s %11s %8s" % ("operation", "client", "calls", "median us", "mean us",
                                              "ratio"))
    print("-" * 101)
    reference = {}
    for operation, name, samples, n in rows:
        median = statistics.median(samples) * 1e6
        mean = statistics.mean(samples) * 1e6
        reference.setdefault(operation, median)
        print("%-30s %-30s %6d %11.1f %11.1f %7.2fx" % (operation, name, n, median, mean,
                                                        median / reference[operation]))
    print("\nratio: median per call / onionlab's median for the same operation (best of %d rounds)" % rounds)
    print("tor %s, python %s, stem %s" % (tor_version, sys.version.split()[0], stem.__version__))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=500, help="round trips per variant and round (500)")
    parser.add_argument("--connects", type=int, default=50, help="connect+authenticate per round (50)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the best counts (3)")
    args = parser.parse_args()
    rows, tor_version = run(args.n, args.connects, args.rounds)
    report(rows, tor_version, args.rounds)


if __name__ == "__main__":
    main()
