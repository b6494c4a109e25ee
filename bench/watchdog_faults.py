#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fault campaign: the watchdog against faults injected on the private Tor network, tor alone as the control.

A private network (voting interval --voting-interval, 60 s by default: its time period is 24 voting rounds, 24
minutes, so no new period hands the services a new upload inside a fault's window) and two more tors, each with
one persistent onion service in front of the same local web server: "watched" (the watchdog runs against it every
--interval seconds, confirm_checks 1, its restart command restarts that tor) and "alone" (the control: the same
checks in report-only mode, which repair nothing, so that its state is known too). A prober fetches both services every --probe seconds through the network's client, which is told
NEWNYM first (it forgets descriptors, as a fresh client). For each fault, in turn:

  hsdirs    every HSDir of the network (authorities and relays) restarted one after the other, their descriptor
            caches empty; HS_DESC UPLOAD events of both service tors are recorded (did tor upload on its own?);
  freeze    the watched tor stopped (SIGSTOP) for 3 intervals, then thawed (SIGCONT): no repair may happen;
  kill      the watched tor killed (SIGKILL) and started again 5 s later, as its service manager would: no repair
            storm;
  intro     the watched tor's introduction circuits closed (CLOSECIRCUIT): tor rebuilds them; the watchdog must not
            restart it.

Measured per fault: the first watchdog verdict that is not healthy (detect), its actions, the first healthy verdict
after them, and for both services the first successful fetch after the fault (s after the injection, or never
within --window). Nothing leaves 127.0.0.1.

Usage: .venv/bin/python bench/watchdog_faults.py [--faults hsdirs,freeze,kill,intro] [--interval 30]
       [--probe 5] [--window 300] [--voting-interval 60]
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
COLLECTIONS = ROOT / ".build" / "collections"
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(COLLECTIONS))
from harness import privnet as pn  # noqa: E402
from harness.fixtures import socks5_http_get  # noqa: E402


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, *a):
        pass


def restart_node(node, pause=0.5):
    """Stop a tor of the network by its PID, start it again with the same torrc (and wait for its control port)."""
    pn.kill_pids([(node.pid, node.starttime)], 5.0)
    try:
        node.proc.wait(5)
    except Exception:  # noqa: BLE001 - already reaped
        pass
    time.sleep(pause)
    node.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
            with connect(port=node.control_port, cookie_path=node.cookie_path, timeout=5):
                return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.2)


class Campaign(object):
    def __init__(self, args):
        self.args = args
        self.t0 = None
        self.timeline = []
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def note(self, what, **fields):
        with self.lock:
            self.timeline.append((time.monotonic(), what, fields))

    # -- the threads -----------------------------------------------------------------------------------------
    def prober(self, net, targets):
        from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
        while not self.stop.is_set():
            try:
                with connect(port=net.client.control_port, cookie_path=net.client.cookie_path) as cctl:
                    cctl.signal("NEWNYM")
            except Exception:  # noqa: BLE001
                pass
            for name, address in targets.items():
                try:
                    status, _body = socks5_http_get(net.socks_port, address, timeout=25)
                    self.note("fetch", service=name, ok=status == 200)
                except Exception as exc:  # noqa: BLE001 - a failed fetch is a data point
                    self.note("fetch", service=name, ok=False, why=str(exc)[:80])
            self.stop.wait(self.args.probe)

    def dog(self, config, restart, name):
        from ansible_collections.onionlab.tor.plugins.module_utils._tor import watchdog
        while not self.stop.is_set():
            w = watchdog.Watchdog(config, restart=restart, out=open(os.devnull, "w"))
            w.run()
            for line in w.lines:
                self.note("watchdog", line="[%s] %s" % (name, line))
            if not w.lines:
                self.note("watchdog", line="[%s] state=healthy (silent)" % name)
            self.stop.wait(self.args.interval)

    def uploads(self, node, name):
        from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
        while not self.stop.is_set():
            try:
                with connect(port=node.control_port, cookie_path=node.cookie_path, timeout=30) as ctl:
                    ctl.request("SETEVENTS", ["HS_DESC"])
                    while not self.stop.is_set():
                        event = ctl.sock.wait_event(1.0)
                        if event is not None and event.lines[0].text.startswith("HS_DESC UPLOADED"):
                            self.note("uploaded", service=name)
            except Exception:  # noqa: BLE001 - the tor restarted: connect again
                self.stop.wait(1.0)

    # -- one fault ------------------------------------------------------------------------------------------
    def measure(self, fault, start, end):
        events = [(t - start, what, f) for t, what, f in self.timeline if start <= t < end]
        out = {"fault": fault}
        for name in ("watched", "alone"):
            fetches = [(t, f["ok"]) for t, what, f in events if what == "fetch" and f["service"] == name]
            failed = [t for t, ok in fetches if not ok]
            first_ok_after_failure = None
            if failed:
                first_ok_after_failure = next((t for t, ok in fetches if ok and t > failed[0]), None)
            out[name] = {"failed_fetches": len(failed), "fetches": len(fetches),
                         "first_failure": round(failed[0], 1) if failed else None,
                         "back": None if not failed else (round(first_ok_after_failure, 1)
                                                          if first_ok_after_failure is not None else "never"),
                         "uploads": [round(t, 1) for t, what, f in events if what == "uploaded" and f["service"] == name]}
        lines = [(round(t, 1), f["line"]) for t, what, f in events if what == "watchdog"]
        out["watchdog"] = lines
        out["repairs"] = [l for l in lines if l[1].startswith("[watched]") and " action=" in l[1]
                          and " action=none" not in l[1]]
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--faults", default="hsdirs,freeze,kill,intro")
    ap.add_argument("--interval", type=float, default=30.0)
    ap.add_argument("--probe", type=float, default=5.0)
    ap.add_argument("--window", type=float, default=300.0)
    ap.add_argument("--voting-interval", type=int, default=60)
    args = ap.parse_args()
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion_health
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect

    backend = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    net = pn.PrivNet(ready_timeout=180, voting_interval=args.voting_interval)
    work = Path(tempfile.mkdtemp(prefix="onionlab-faults-"))
    campaign = Campaign(args)
    threads = []
    try:
        net.start()
        tors, targets = {}, {}
        for name in ("watched", "alone"):
            hs_dir = work / ("hs-" + name)
            hs_dir.mkdir(mode=0o700)
            tors[name] = net.add_tor(name, extra_lines=["HiddenServiceDir %s" % hs_dir,
                                                        "HiddenServicePort 80 127.0.0.1:%d" % backend.server_address[1]])
        for name, node in tors.items():
            deadline = time.monotonic() + 180
            while True:
                with connect(port=node.control_port, cookie_path=node.cookie_path, timeout=30) as ctl:
                    result = onion_health.check(ctl, timeout=20)
                if result["services"] and result["services"][0]["state"] == "healthy":
                    targets[name] = result["services"][0]["address"]
                    break
                if time.monotonic() > deadline:
                    sys.exit("%s never became healthy: %s" % (name, result))
                time.sleep(3)
        print("services: %s" % targets)
        watched = tors["watched"]
        config = {"control_port": watched.control_port, "cookie_path": watched.cookie_path,
                  "state_file": str(work / "wd.json"), "metrics_file": str(work / "wd.prom"), "confirm_checks": 1,
                  "restart_interval": 600}

        def restart():
            restart_node(watched)
            return True, "restarted by the campaign"

        alone = tors["alone"]
        control = {"control_port": alone.control_port, "cookie_path": alone.cookie_path, "report_only": True,
                   "state_file": str(work / "alone.json"), "metrics_file": str(work / "alone.prom")}
        threads = [threading.Thread(target=campaign.prober, args=(net, targets), daemon=True),
                   threading.Thread(target=campaign.dog, args=(config, restart, "watched"), daemon=True),
                   threading.Thread(target=campaign.dog, args=(control, None, "alone, report only"), daemon=True)]
        threads += [threading.Thread(target=campaign.uploads, args=(node, name), daemon=True)
                    for name, node in tors.items()]
        for thread in threads:
            thread.start()
        time.sleep(args.interval)                     # a quiet stretch first
        results = []
        for fault in args.faults.split(","):
            start = time.monotonic()
            if fault == "hsdirs":
                for node in net.authorities + net.relays:
                    restart_node(node, pause=0.2)
            elif fault == "freeze":
                os.kill(watched.pid, signal.SIGSTOP)
                time.sleep(3 * args.interval)
                os.kill(watched.pid, signal.SIGCONT)
            elif fault == "kill":
                os.kill(watched.pid, signal.SIGKILL)
                time.sleep(5)
                restart_node(watched, pause=0)
            elif fault == "intro":
                with connect(port=watched.control_port, cookie_path=watched.cookie_path) as ctl:
                    status = ctl.get_info("circuit-status")["circuit-status"]
                    closed = 0
                    for line in status.splitlines():
                        if "PURPOSE=HS_SERVICE_INTRO" in line:
                            ctl.request("CLOSECIRCUIT", [line.split()[0]])
                            closed += 1
                campaign.note("watchdog", line="(campaign) closed %d intro circuits" % closed)
            else:
                sys.exit("unknown fault %s" % fault)
            campaign.note("injected", fault=fault)
            time.sleep(args.window)
            results.append(campaign.measure(fault, start, time.monotonic()))
            r = results[-1]
            print("\n== %s (injected %.1f s)" % (fault, time.monotonic() - start - args.window))
            for name in ("watched", "alone"):
                print("  %-8s fetches %d, failed %d, first failure %s s, back %s s, uploads at %s"
                      % (name, r[name]["fetches"], r[name]["failed_fetches"], r[name]["first_failure"],
                         r[name]["back"], r[name]["uploads"][:6]))
            print("  watchdog repairs: %d" % len(r["repairs"]))
            for t, line in r["watchdog"]:
                if "silent" not in line:
                    head, _, tail = line.partition(" evidence=")
                    evidence, _, rest = tail.partition(" action=")
                    print("   %6.1f %s evidence=%s action=%s" % (t, head, evidence[:140], rest))
    finally:
        campaign.stop.set()
        for thread in threads:
            thread.join(30)
        net.stop()


if __name__ == "__main__":
    main()
