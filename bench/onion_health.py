#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the cost of one tor_onion_health check (the watchdog's check) per service, against a plain
`GETINFO version` round trip on the same control connection, in the same run.

On the private Tor network (tests/harness/privnet.py; --privnet DIR uses a running one), N ephemeral services
on its onion-service tor, each waited for until healthy. Then, repetition by repetition in alternation: one
check of all N services (onion_health.check: consensus and microdescriptors read and parsed, the ring, the own
descriptors, one HSFETCH per service to every responsible HSDir and its events), and one GETINFO round trip.
For each: the process's CPU time and the bytes sent and received on the control connection; the check's wall
time too (it waits on the network). Per service = the check's figures / N. The ratio check/GETINFO is printed.

Usage: .venv/bin/python bench/onion_health.py [--services 1,4] [--reps 10] [--privnet DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = ROOT / ".build" / "collections"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(COLLECTIONS))
from harness import privnet as pn  # noqa: E402


def link_collection():
    parent = COLLECTIONS / "ansible_collections" / "onionlab"
    parent.mkdir(parents=True, exist_ok=True)
    if not (parent / "tor").exists():
        (parent / "tor").symlink_to(ROOT)


class Counted(object):
    """Counts the bytes a ControlSocket sends and receives (wraps its socket)."""

    def __init__(self, sock):
        self._sock = sock
        self.sent = self.received = 0

    def sendall(self, data):
        self.sent += len(data)
        return self._sock.sendall(data)

    def recv(self, size):
        data = self._sock.recv(size)
        self.received += len(data)
        return data

    def __getattr__(self, name):
        return getattr(self._sock, name)


def measure(fn, counted):
    sent, received = counted.sent, counted.received
    cpu, wall = time.process_time(), time.monotonic()
    fn()
    return time.process_time() - cpu, time.monotonic() - wall, counted.sent - sent + counted.received - received


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--services", default="1,4", help="comma-separated numbers of services")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--privnet", help="directory of a running privnet (tests/harness/privnet.py start --dir)")
    args = ap.parse_args()
    link_collection()
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion_health
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect

    net = None
    if args.privnet:
        onion_ctl = pn.read_state(args.privnet)["onion"]
    else:
        net = pn.PrivNet(ready_timeout=120)
        net.start()
        onion_ctl = net.onion.info()
    try:
        with connect(port=onion_ctl["control_port"], cookie_path=onion_ctl["cookie_path"], timeout=60) as ctl:
            counted = Counted(ctl.sock._sock)
            ctl.sock._sock = counted
            made = []
            print("%-9s %12s %12s %12s %14s %10s" % ("services", "CPU ms/svc", "wall s", "bytes/svc", "GETINFO CPU ms",
                                                      "CPU ratio"))
            for n in [int(x) for x in args.services.split(",")]:
                while len(made) < n:
                    made.append(ctl.add_onion([(80, "127.0.0.1:9")], flags=["Detach"])["service_id"] + ".onion")
                deadline = time.monotonic() + 180
                while time.monotonic() < deadline:
                    result = onion_health.check(ctl, addresses=made[:n], timeout=30)
                    if all(s["state"] == "healthy" for s in result["services"]):
                        break
                    ctl.sock.wait_event(3.0)
                else:
                    sys.exit("the services did not become healthy: %s" % [s["reasons"] for s in result["services"]])
                checks, plain = [], []
                for _ in range(args.reps):
                    checks.append(measure(lambda: onion_health.check(ctl, addresses=made[:n], timeout=30), counted))
                    plain.append(measure(lambda: ctl.get_info("version"), counted))
                cpu = statistics.median(c[0] for c in checks) * 1000 / n
                wall = statistics.median(c[1] for c in checks)
                size = statistics.median(c[2] for c in checks) / n
                plain_cpu = statistics.median(p[0] for p in plain) * 1000
                print("%-9d %12.1f %12.2f %12.0f %14.3f %10.0f" % (n, cpu, wall, size, plain_cpu,
                                                                   cpu / plain_cpu if plain_cpu else float("nan")))
                print("          GETINFO version: %.0f bytes, %.4f s wall (median of %d)" % (
                    statistics.median(p[2] for p in plain), statistics.median(p[1] for p in plain), args.reps))
            for address in made:
                ctl.del_onion(address[:-len(".onion")])
    finally:
        if net is not None:
            net.stop()


if __name__ == "__main__":
    main()
