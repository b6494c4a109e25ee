#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark: the cost of one tor_onion_health check (the watchdog's check: every layer, tor, descriptor, backend,
introduction and reach) per service, against a plain `GETINFO version` round trip on the same control connection,
in the same run (issue 38: the verdict's cost at 1, 10 and 50 services).

On a private Tor network of its own (tests/harness/privnet.py, voting every 60 s): one more tor with a
SocksPort on 127.0.0.1 (the reach layer's fresh client is the service's own tor), N persistent services on it in
front of a local HTTP server, each waited for until the whole verdict is healthy (a fresh client got an answer). Then,
repetition by repetition in alternation: one check of all N services and one GETINFO round trip. For each: this
process's CPU time, the service tor's CPU time (its /proc/PID/stat), the circuits tor launched meanwhile (CIRC
LAUNCHED on a second control connection), the bytes on the control connection, and the check's wall time (it waits
on the network). Per service = the check's figures / N. The ratio check/GETINFO (this process's CPU) is printed.

Usage: .venv/bin/python bench/onion_health.py [--services 1,10,50] [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = ROOT / ".build" / "collections"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(COLLECTIONS))
from harness import privnet as pn  # noqa: E402
from onion_probe import Backend, Handler  # noqa: E402  (the same local web server as that benchmark's)


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


def tor_cpu(pid):
    """The tor process's CPU seconds so far (utime + stime of /proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def launched(watch):
    """CIRC LAUNCHED events that arrived on the watching connection since the last call."""
    n = 0
    while True:
        # a timeout above 0: with 0, wait_event returns at once unless a whole line is buffered already, without
        # reading the socket (the first runs counted 0 circuits that way)
        event = watch.sock.wait_event(0.05)
        if event is None:
            return n
        words = event.lines[0].text.split()     # CIRC <id> LAUNCHED ...
        n += 1 if len(words) >= 3 and words[0] == "CIRC" and words[2] == "LAUNCHED" else 0


def measure(fn, counted, pid, watch):
    launched(watch)
    sent, received = counted.sent, counted.received
    cpu, tor, wall = time.process_time(), tor_cpu(pid), time.monotonic()
    fn()
    return (time.process_time() - cpu, time.monotonic() - wall, counted.sent - sent + counted.received - received,
            tor_cpu(pid) - tor, launched(watch))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--services", default="1,10,50", help="comma-separated numbers of services")
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    link_collection()
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion_health
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect

    backend = Backend(("127.0.0.1", 0), Handler)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    sizes = [int(x) for x in args.services.split(",")]
    # voting every 60 s: a time period of 24 minutes, as long as a run (with 10 s, periods of 4 minutes turned during
    # the 50-service checks and the descriptor layer compared tor's descriptor of one period with the HSDirs' other)
    net = pn.PrivNet(ready_timeout=180, voting_interval=60)
    net.start()
    work = tempfile.mkdtemp(prefix="onionlab-health-bench-")
    try:
        # persistent services (torrc): their ports are known, so the backend and reach layers are checked (an
        # ephemeral service that the collection's record does not hold gets neither)
        lines = []
        for i in range(max(sizes)):
            hs_dir = os.path.join(work, "hs%d" % i)
            os.mkdir(hs_dir, 0o700)
            lines += ["HiddenServiceDir %s" % hs_dir, "HiddenServicePort 80 127.0.0.1:%d" % backend.server_address[1]]
        node = net.add_tor("health", socks=True, extra_lines=lines)
        info = node.info()
        made = [open(os.path.join(work, "hs%d" % i, "hostname")).read().strip() for i in range(max(sizes))]
        with connect(port=info["control_port"], cookie_path=info["cookie_path"], timeout=60) as ctl, \
                connect(port=info["control_port"], cookie_path=info["cookie_path"], timeout=60) as watch:
            watch.request("SETEVENTS", ["CIRC"])
            counted = Counted(ctl.sock._sock)
            ctl.sock._sock = counted
            print("tor %s, %d CPU(s); backend 127.0.0.1:%d" % (ctl.get_info("version")["version"], os.cpu_count(),
                                                               backend.server_address[1]))
            print("%-9s %12s %12s %10s %10s %12s %14s %10s" % (
                "services", "CPU ms/svc", "tor ms/svc", "circ/svc", "wall s", "bytes/svc", "GETINFO CPU ms",
                "CPU ratio"))
            for n in sizes:
                t0 = time.monotonic()
                while True:
                    result = onion_health.check(ctl, addresses=made[:n], timeout=30)
                    if all(s["state"] == "healthy" and (s.get("layers") or {}).get("reach", {}).get("ok") is True
                           for s in result["services"]):
                        break
                    if time.monotonic() - t0 > 600:
                        sys.exit("the services did not become healthy in 600 s: %s"
                                 % [s["reasons"] for s in result["services"] if s["state"] != "healthy"][:3])
                    ctl.sock.wait_event(5.0)
                print("          %d services healthy (a fresh client got an answer) %.0f s after they were made"
                      % (n, time.monotonic() - t0))
                checks, plain = [], []
                for _ in range(args.reps):
                    checks.append(measure(lambda: onion_health.check(ctl, addresses=made[:n], timeout=30), counted,
                                          info["pid"], watch))
                    plain.append(measure(lambda: ctl.get_info("version"), counted, info["pid"], watch))
                cpu = statistics.median(c[0] for c in checks) * 1000 / n
                plain_cpu = statistics.median(p[0] for p in plain) * 1000
                print("%-9d %12.1f %12.1f %10.2f %10.2f %12.0f %14.3f %10.0f" % (
                    n, cpu, statistics.median(c[3] for c in checks) * 1000 / n,
                    statistics.median(c[4] for c in checks) / n, statistics.median(c[1] for c in checks),
                    statistics.median(c[2] for c in checks) / n, plain_cpu,
                    cpu / plain_cpu if plain_cpu else float("nan")))
    finally:
        backend.shutdown()
        net.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
