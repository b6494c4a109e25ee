#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which step makes tor build new introduction points and publish them, when the relays of its introduction points
freeze (issue 38): measured on the private Tor network, a fresh client as the judge.

A private network (3 authorities, --relays relays), one more tor with a persistent service and an ephemeral one
(ADD_ONION, its key kept here) in front of a local web server. Each trial: both services reachable by a fresh client
(NEWNYM, then a fetch through the network's client); the relays at the end of the services' introduction circuits
that are not authorities nor guards of the client or the service are stopped (SIGSTOP: the TCP connections stay open,
tor on the service side notices nothing); a fetch must now fail; then one step is taken:

  none       nothing (the control: how long until tor finds out by itself)
  close      CLOSECIRCUIT of the service's introduction circuits
  sighup     SIGHUP of the service's tor
  setconf    SETCONF of the persistent service's block with HiddenServiceNumIntroductionPoints changed and back
  readd      DEL_ONION + ADD_ONION of the ephemeral service with its key (the persistent one: nothing)
  restart    tor restarted (stopped by its PID, started again), the ephemeral service added back with its key

and a fresh client fetches both services every --probe seconds until each answers or --window seconds pass; tor's
HS_DESC UPLOADED events and new HS_SERVICE_INTRO circuits are counted. The relays are thawed (SIGCONT) and the
services must be reachable again before the next trial. Printed: per step and service, seconds from the step to the
first answer (or never), uploads, new intro circuits. Nothing leaves 127.0.0.1.

Usage: .venv/bin/python bench/intro_repair.py [--steps none,close,sighup,setconf,readd,restart] [--trials 1]
       [--relays 8] [--window 240] [--probe 5]
"""

from __future__ import annotations

import argparse
import http.server
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / ".build" / "collections"))
sys.path.insert(0, str(ROOT / "bench"))
from harness import privnet as pn  # noqa: E402
from harness.fixtures import socks5_http_get  # noqa: E402
from harness.http_backend import Ok as Handler  # noqa: E402  (the tests' one-line page)
from watchdog_faults import guards, restart_node  # noqa: E402  (the campaign's helpers)


def connect(node):
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect as _connect
    return _connect(port=node.control_port, cookie_path=node.cookie_path, timeout=30)


def intro_circuits(ctl, sids):
    """{circuit id: (service id, last hop fingerprint)} of the built intro circuits of the services (read by the
    library's health_layers.parse_circuits)."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.health_layers import parse_circuits
    out = {}
    for circ in parse_circuits(ctl.get_info("circuit-status")["circuit-status"]):
        query = circ["keywords"].get("REND_QUERY")
        if (circ["status"] == "BUILT" and circ["keywords"].get("PURPOSE") == "HS_SERVICE_INTRO" and query in sids
                and circ["path"]):
            out[circ["id"]] = (query, circ["path"][-1][0])
    return out


def fetch(net, address, timeout):
    with connect(net.client) as cctl:
        cctl.signal("NEWNYM")
    time.sleep(0.2)
    try:
        status, _body = socks5_http_get(net.socks_port, address, timeout=timeout,
                                        username="probe-%d" % time.monotonic_ns())
        return status == 200, "HTTP %s" % status
    except Exception as exc:  # noqa: BLE001 - a failed fetch is the data point
        return False, str(exc)[:80]


class Uploads(threading.Thread):
    """HS_DESC UPLOADED events of the service tor, with times."""

    def __init__(self, node):
        super().__init__(daemon=True)
        self.node, self.events, self.stop = node, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                with connect(self.node) as ctl:
                    ctl.request("SETEVENTS", ["HS_DESC"])
                    while not self.stop.is_set():
                        event = ctl.sock.wait_event(1.0)
                        if event is not None and event.lines[0].text.startswith("HS_DESC UPLOADED"):
                            self.events.append((time.monotonic(), event.lines[0].text.split()[2]))
            except Exception:  # noqa: BLE001 - tor restarted: again
                self.stop.wait(1.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", default="none,close,sighup,setconf,readd,restart")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--relays", type=int, default=8)
    ap.add_argument("--window", type=float, default=240.0)
    ap.add_argument("--probe", type=float, default=5.0)
    args = ap.parse_args()
    backend = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    net = pn.PrivNet(n_relays=args.relays, ready_timeout=240)
    work = Path(tempfile.mkdtemp(prefix="onionlab-intro-"))
    frozen = []
    uploads = None
    try:
        net.start()
        hs_dir = work / "hs"
        hs_dir.mkdir(mode=0o700)
        port_line = "127.0.0.1:%d" % backend.server_address[1]
        svc = net.add_tor("svc", extra_lines=["HiddenServiceDir %s" % hs_dir, "HiddenServicePort 80 %s" % port_line])
        uploads = Uploads(svc)
        uploads.start()
        persistent = (hs_dir / "hostname").read_text().strip()
        with connect(svc) as ctl:
            added = ctl.add_onion([(80, port_line)], flags=["Detach"])
        key = added["private_key"]
        ephemeral = added["service_id"] + ".onion"
        services = {"persistent": persistent, "ephemeral": ephemeral}
        sids = dict((a[:-6], n) for n, a in services.items())
        authorities = set(a.fingerprint for a in net.authorities)
        by_fp = dict((r.fingerprint, r) for r in net.relays)
        print("services: %s" % services)
        results = []
        for trial in range(args.trials):
            for step in args.steps.split(","):
                # 1. both reachable
                t0 = time.monotonic()
                for name, address in services.items():
                    while True:
                        ok, why = fetch(net, address, 30)
                        if ok:
                            break
                        if time.monotonic() - t0 > 400:
                            sys.exit("%s never reachable before step %s: %s" % (name, step, why))
                        time.sleep(3)
                # 2. freeze the intro relays (not the authorities)
                with connect(svc) as ctl:
                    before = intro_circuits(ctl, sids)
                hops = set(fp for _sid, fp in before.values())
                # not a guard of the client (a frozen guard stops the judge itself) nor of the service's tor (it stops
                # every circuit of the service: another fault; the first run froze them and nothing came back)
                spared = guards(net.client, svc)
                frozen = [by_fp[fp] for fp in hops if fp in by_fp and fp not in authorities and fp not in spared]
                for relay in frozen:
                    os.kill(relay.pid, signal.SIGSTOP)
                print("\n== trial %d step %s: %d intro circuits, intro relays %d (%d authorities, %d guards), frozen %d"
                      % (trial + 1, step, len(before), len(hops), len(hops & authorities),
                         len(hops & spared - authorities), len(frozen)))
                broken = dict((n, fetch(net, a, 30)) for n, a in services.items())
                print("  after the freeze: %s" % dict((n, why) for n, (ok, why) in broken.items()))
                # 3. the step
                stepped = time.monotonic()
                with connect(svc) as ctl:
                    if step == "close":
                        for circ in before:
                            try:
                                ctl.request("CLOSECIRCUIT", [circ])
                            except Exception as exc:  # noqa: BLE001
                                print("  CLOSECIRCUIT %s: %s" % (circ, exc))
                    elif step == "sighup":
                        os.kill(svc.pid, signal.SIGHUP)
                    elif step == "setconf":
                        lines = [("HiddenServiceDir", str(hs_dir)), ("HiddenServicePort", "80 " + port_line)]
                        ctl.set_conf(lines + [("HiddenServiceNumIntroductionPoints", "4")])
                        ctl.set_conf(lines + [("HiddenServiceNumIntroductionPoints", "3")])
                    elif step == "restart":
                        pass
                    elif step == "readd":
                        ctl.request("DEL_ONION", [ephemeral[:-6]])
                        kind, _sep, blob = key.partition(":")
                        ctl.add_onion([(80, port_line)], key_type=kind, key_blob=blob, flags=["Detach"])
                if step == "restart":       # tor restarted as its service manager would; the ephemeral one added back
                    restart_node(svc)
                    with connect(svc) as ctl:
                        kind, _sep, blob = key.partition(":")
                        ctl.add_onion([(80, port_line)], key_type=kind, key_blob=blob, flags=["Detach"])
                # 4. until each answers
                back = {}
                while len(back) < len(services) and time.monotonic() - stepped < args.window:
                    for name, address in services.items():
                        if name not in back and fetch(net, address, 25)[0]:
                            back[name] = round(time.monotonic() - stepped, 1)
                    time.sleep(args.probe)
                with connect(svc) as ctl:
                    after = intro_circuits(ctl, sids)
                ups = [(round(t - stepped, 1), sid) for t, sid in uploads.events if t >= stepped]
                row = {"step": step, "trial": trial + 1, "frozen": len(frozen),
                       "back": dict((n, back.get(n, "never")) for n in services),
                       "uploads": dict((n, len([u for u in ups if u[1] == a[:-6]])) for n, a in services.items()),
                       "new_intro": len(set(after) - set(before))}
                results.append(row)
                print("  back after: %s; uploads %s (first at %s); new intro circuits %d"
                      % (row["back"], row["uploads"], ups[:1], row["new_intro"]))
                for relay in frozen:
                    os.kill(relay.pid, signal.SIGCONT)
                frozen = []
        print("\nstep     trial frozen  persistent  ephemeral")
        for row in results:
            back = row["back"]
            print("%-8s %5d %6d  %10s %10s" % (
                row["step"], row["trial"], row["frozen"], back["persistent"], back["ephemeral"]))
    finally:
        for relay in frozen:
            os.kill(relay.pid, signal.SIGCONT)
        if uploads:
            uploads.stop.set()
        net.stop()


if __name__ == "__main__":
    main()
