#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Soak: the watchdog on healthy services for a long time must repair nothing and raise no false alarm.

A private Tor network (tests/harness/privnet.py) and a tor with a SocksPort running --services persistent services
(--privnet DIR: a running network's onion-service tor and ephemeral services, whose reach is then not checked); the watchdog (watchdog.Watchdog, its own state and metrics files) runs every
--interval seconds for --minutes minutes, as the timer would; meanwhile a client fetches each service now and
then through the network's SocksPort (fresh descriptor: NEWNYM first). Once, in the middle, a run of the
collection holds the tor's lock while a watchdog run happens (a role run at the same time as a check): no repair
may happen then. Printed: checks, verdicts by state, repairs by step (expected 0), unhealthy verdicts with their
reasons, client fetches ok/failed, the lock run's line.

Usage: .venv/bin/python bench/watchdog_soak.py [--minutes 30] [--interval 30] [--services 3] [--privnet DIR]
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = ROOT / ".build" / "collections"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(COLLECTIONS))
from harness import privnet as pn  # noqa: E402
from harness import privnet_cli  # noqa: E402
from harness.fixtures import socks5_http_get  # noqa: E402

HOLDER = ("import sys, time\nsys.path.insert(0, sys.argv[2])\n"
          "from ansible_collections.onionlab.tor.plugins.module_utils._tor.lock import TorLock\n"
          "with TorLock(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(float(sys.argv[3]))\n")


def _layer_gauges(path):
    """[(layer, value)] of the onionlab_watchdog_layer_ok lines of a textfile the watchdog wrote."""
    out = []
    try:
        text = Path(path).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        if line.startswith("onionlab_watchdog_layer_ok{"):
            labels, _, value = line.rpartition(" ")
            layer = labels.split('layer="', 1)[1].split('"', 1)[0]
            out.append((layer, value))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--interval", type=float, default=30)
    ap.add_argument("--services", type=int, default=3)
    ap.add_argument("--privnet")
    args = ap.parse_args()
    from ansible_collections.onionlab.tor.plugins.module_utils import _onion_watchdog as watchdog
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect

    import http.server
    import threading

    from harness.http_backend import Ok as Handler   # the tests' one-line page

    backend = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    work = Path(tempfile.mkdtemp(prefix="onionlab-soak-"))
    addresses = []
    net = None
    if args.privnet:
        state = privnet_cli.read_state(args.privnet)
        onion_ctl, socks_port = state["onion"], state["socks_port"]
        client_ctl = state["client"]
    else:
        net = pn.PrivNet(ready_timeout=120)
        net.start()
        # a tor of its own with a SocksPort on 127.0.0.1 (the watchdog's reach layer: a fresh client on the service's
        # own tor, as on a host whose tor role opened that port for it) and persistent services (their ports known,
        # so the backend and reach layers are checked; an ephemeral service the collection did not record gets
        # neither: the first 60-minute run checked no reach)
        lines = []
        for i in range(args.services):
            (work / ("hs%d" % i)).mkdir(mode=0o700)
            lines += ["HiddenServiceDir %s" % (work / ("hs%d" % i)),
                      "HiddenServicePort 80 127.0.0.1:%d" % backend.server_address[1]]
        onion_ctl = net.add_tor("soak", socks=True, extra_lines=lines).info()
        socks_port, client_ctl = net.socks_port, net.client.info()
        addresses = [(work / ("hs%d" % i) / "hostname").read_text().strip() for i in range(args.services)]
    try:
        with connect(port=onion_ctl["control_port"], cookie_path=onion_ctl["cookie_path"]) as ctl:
            while len(addresses) < args.services:       # --privnet: ephemeral ones on its onion tor
                addresses.append(ctl.add_onion([(80, "127.0.0.1:%d" % backend.server_address[1])],
                                               flags=["Detach"])["service_id"] + ".onion")
            data_dir = dict(ctl.get_conf("DataDirectory"))["DataDirectory"]
        config = {"control_port": onion_ctl["control_port"], "cookie_path": onion_ctl["cookie_path"],
                  "addresses": addresses, "state_file": str(work / "state.json"),
                  "metrics_file": str(work / "wd.prom"), "restart_command": ["false"]}
        verdicts, unhealthy, fetches, layers = collections.Counter(), [], collections.Counter(), collections.Counter()
        lock_line = None
        start = time.monotonic()
        end = start + args.minutes * 60
        runs = 0
        while time.monotonic() < end:
            runs += 1
            holder = None
            if runs == max(2, int(args.minutes * 60 / args.interval / 2)):
                holder = subprocess.Popen([sys.executable, "-c", HOLDER, data_dir, str(COLLECTIONS), "120"],
                                          stdout=subprocess.PIPE, universal_newlines=True)
                assert holder.stdout.readline().strip() == "held"
            dog = watchdog.Watchdog(config, out=open("/dev/null", "w"))
            dog.run()
            if holder is not None:
                holder.kill()
                holder.wait()
                lock_line = [l for l in dog.lines if "lock" in l] or dog.lines
            for line in dog.lines:
                state = line.split(" state=")[1].split(" ")[0] if " state=" in line else "tor-unreachable"
                verdicts[state] += 1
                if state != "healthy":
                    unhealthy.append("%.0fs %s" % (time.monotonic() - start, line[:300]))
            checked = len(addresses) - sum(1 for l in dog.lines if " state=" in l)
            verdicts["healthy (silent)"] += checked
            layers.update(_layer_gauges(work / "wd.prom"))
            if runs % 2 == 0:
                with connect(port=client_ctl["control_port"], cookie_path=client_ctl["cookie_path"]) as cctl:
                    cctl.signal("NEWNYM")
                for address in addresses:
                    try:
                        socks5_http_get(socks_port, address, timeout=60)
                        fetches["ok"] += 1
                    except Exception as exc:   # noqa: BLE001 - any failure is a failed fetch, counted
                        fetches["failed: %s" % str(exc)[:60]] += 1
            time.sleep(max(0.0, args.interval - 0.5))
        state = json.loads((work / "state.json").read_text())
        repairs = collections.Counter()
        for record in state["services"].values():
            repairs.update(record["repairs"])
        print("soak: %.1f min, %d watchdog runs, %d services" % ((time.monotonic() - start) / 60, runs, len(addresses)))
        print("verdicts: %s" % dict(verdicts))
        print("repairs by step: %s (expected none)" % (dict(repairs) or "none"))
        print("layer gauges over the runs (layer=value: 1 ok, 0 failed, -1 not checked): %s"
              % ", ".join("%s=%s: %d" % (k[0], k[1], n) for k, n in sorted(layers.items())))
        print("client fetches (NEWNYM before each round): %s" % dict(fetches))
        print("run while a run of the collection held the lock: %s" % lock_line)
        for line in unhealthy[:20]:
            print("  not healthy: %s" % line)
    finally:
        if net is not None:
            net.stop()


if __name__ == "__main__":
    main()
