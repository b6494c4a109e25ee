#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fault campaign: the watchdog against faults injected on the private Tor network, a tor left alone beside it.

A private network (3 authorities, --relays relays; voting every --voting-interval seconds, 60 by default, so a time
period is 24 minutes) and two more tors, each with a SocksPort on 127.0.0.1 (the reach layer's fresh client) and
one persistent onion service in front of a web server of its own: "watched" (the watchdog, watchdog.Watchdog as the
timer runs it, every --interval seconds: its restart command restarts that tor, its backend_units entry restarts
that web server) and "alone" (the same checks in report-only mode, which repair nothing). A prober fetches both
services every --probe seconds through the network's client, told NEWNYM first (it forgets descriptors, as a fresh
client). Each fault is injected into both tors at once, --trials times in turn:

  hsdirs     every HSDir of the network (authorities and relays) restarted one after the other: caches empty;
  backend    both web servers stopped for --backend-minutes (3), then started again (the alone one only then);
  hung       both tors stopped (SIGSTOP: alive, not answering) for --hung-minutes (10), then thawed (SIGCONT);
  intro      the relays at the end of both services' introduction circuits (not authorities, not a guard of the
             client or of the two tors) stopped (SIGSTOP) for --intro-minutes (5), then thawed;
  kill       both tors killed (SIGKILL) and started again 5 s later, as their service manager would;
  vanguards  the vanguards addon (--vanguards, a vanguards 0.3.1 command; left out without it) run once against
             both tors (--one_shot_vanguards with a new state file: new layer-2 and layer-3 guards).

After a fault ends, the trial lasts until both services answered again or --window seconds; one that did not is
restarted ("the operator") and must answer, and each watchdog must have found its service healthy
again (which resets its ladder), before the next fault. Measured per trial and tor: the first check that
found it not healthy (detect, s after the injection), the first failed and the first answered fetch after it
(back), failed fetches, the watchdog's actions. Printed: a line per trial, and per fault p50/p90 of back and
detect for both tors. Nothing leaves 127.0.0.1.

Usage: .venv/bin/python bench/watchdog_faults.py [--faults hsdirs,backend,hung,intro,kill,vanguards] [--trials 5]
       [--interval 60] [--probe 5] [--window 300] [--hung-minutes 10] [--backend-minutes 3] [--intro-minutes 5]
       [--vanguards PATH] [--restart-interval 120] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
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
from harness import procs  # noqa: E402
from harness.fixtures import socks5_http_get  # noqa: E402
from harness.http_backend import HttpBackend, Ok  # noqa: E402  (the tests' backend: its stop never hangs)

NAMES = ("watched", "alone")


class Backend(object):
    """A web server on a fixed 127.0.0.1 port that can be stopped and started again."""

    def __init__(self):
        self.server = None
        self.port = 0
        self.start()

    def start(self):
        if self.server is None:
            self.server = HttpBackend(Ok, ("127.0.0.1", self.port))
            self.port = self.server.port

    def stop(self):
        if self.server is not None:
            self.server.stop()
            self.server = None


def _ctl(node, timeout=10):
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
    return connect(port=node.control_port, cookie_path=node.cookie_path, timeout=timeout)


def restart_node(node, pause=0.5):
    """Stop a tor of the network by its PID (a stopped one too: SIGKILL after the grace), start it again with the same
    torrc and wait for its control port."""
    procs.kill_pids([(node.pid, node.starttime)], 5.0)
    try:
        node.proc.wait(5)
    except Exception:  # noqa: BLE001 - already reaped
        pass
    time.sleep(pause)
    node.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with _ctl(node, 5):
                return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.2)


def signal_node(node, sig):
    """sig to the tor's process if it is still the same process (by start time)."""
    if procs.pid_alive(node.pid, node.starttime):
        os.kill(node.pid, sig)


def pct(values, p):
    """The p-th percentile (nearest rank) of numbers; None when empty."""
    values = sorted(values)
    if not values:
        return None
    rank = max(1, int(-(-p * len(values) // 100)))
    return values[rank - 1]


class Campaign(object):
    def __init__(self, args):
        self.args = args
        self.timeline = []
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def note(self, what, **fields):
        with self.lock:
            self.timeline.append((time.monotonic(), what, fields))

    # -- the threads -----------------------------------------------------------------------------------------
    def prober(self, net, targets):
        while not self.stop.is_set():
            try:
                with _ctl(net.client) as cctl:
                    cctl.signal("NEWNYM")
            except Exception:  # noqa: BLE001
                pass
            threads = [threading.Thread(target=self.fetch, args=(net, name, address))
                       for name, address in targets.items()]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            self.stop.wait(self.args.probe)

    def fetch(self, net, name, address):
        t = time.monotonic()
        try:
            status, _body = socks5_http_get(net.socks_port, address, timeout=20, username="probe-%s-%f" % (name, t))
            # an answered fetch counts when it was answered (one begun while tor was stopped can be answered after
            # the restart), a failed one when it began
            self.note("fetch", service=name, ok=status == 200, started=time.monotonic() if status == 200 else t,
                      why="HTTP %d" % status)
        except Exception as exc:  # noqa: BLE001 - a failed fetch is a data point
            self.note("fetch", service=name, ok=False, started=t, why=str(exc)[:80])

    def dog(self, name, config, restart):
        from ansible_collections.onionlab.tor.plugins.module_utils import _onion_watchdog as watchdog
        while not self.stop.is_set():
            w = watchdog.Watchdog(config, restart=restart, out=open(os.devnull, "w"))
            try:
                w.run()
            except Exception as exc:  # noqa: BLE001 - a crash of a run is a finding
                self.note("watchdog", tor=name, line="CRASH %r" % exc, healthy=False)
            for line in w.lines:
                healthy = " state=healthy" in line and " action=none" in line
                self.note("watchdog", tor=name, line=line, healthy=healthy)
            if not w.lines:
                self.note("watchdog", tor=name, line="(silent: healthy)", healthy=True)
            self.stop.wait(self.args.interval)

    def uploads(self, node, name):
        while not self.stop.is_set():
            try:
                with _ctl(node, 30) as ctl:
                    ctl.request("SETEVENTS", ["HS_DESC"])
                    while not self.stop.is_set():
                        event = ctl.sock.wait_event(1.0)
                        if event is not None and event.lines[0].text.startswith("HS_DESC UPLOADED"):
                            self.note("uploaded", service=name)
            except Exception:  # noqa: BLE001 - the tor restarted or is stopped: connect again
                self.stop.wait(1.0)

    # -- what happened -----------------------------------------------------------------------------------------
    def fetches(self, name, since):
        return [(f["started"] - since, f["ok"], f["why"]) for t, what, f in list(self.timeline)
                if what == "fetch" and f["service"] == name and f["started"] >= since]

    def back(self, name, since, ended):
        """Seconds from `since` to the first answer after the first failure; None while there is none; 0.0 when no
        fetch failed and one answered after the fault ended."""
        fetches = self.fetches(name, since)
        failed = [t for t, ok, _ in fetches if not ok]
        if not failed:
            return 0.0 if any(ok for t, ok, _ in fetches if t + since >= ended) else None
        return next((t for t, ok, _ in fetches if ok and t > failed[0]), None)

    def measure(self, fault, trial, start, ended, end, extra):
        events = [(t - start, what, f) for t, what, f in self.timeline if start <= t < end]
        row = {"fault": fault, "trial": trial, "fault_seconds": round(ended - start, 1)}
        row.update(extra)
        for name in NAMES:
            fetches = self.fetches(name, start)
            failed = [t for t, ok, _ in fetches if not ok]
            back = self.back(name, start, ended)
            dog = [(round(t, 1), f["line"]) for t, what, f in events if what == "watchdog" and f["tor"] == name]
            unhealthy = [t for t, what, f in events if what == "watchdog" and f["tor"] == name and not f["healthy"]]
            row[name] = {"fetches": len(fetches), "failed": len(failed),
                         "first_failure": round(failed[0], 1) if failed else None,
                         "back": None if back is None else round(back, 1),
                         "detect": round(unhealthy[0], 1) if unhealthy else None,
                         "actions": [(t, _field(line, "action"), _field(line, "layer") or _field(line, "tor"))
                                     for t, line in dog if _field(line, "action") not in (None, "none")],
                         # the decision's words (a line's evidence is long; its result says why this step)
                         "results": [(t, _field(line, "action"), (_field(line, "result") or "")[:300])
                                     for t, line in dog if "silent" not in line],
                         "lines": [(t, line[:400]) for t, line in dog if "silent" not in line],
                         "uploads": [round(t, 1) for t, what, f in events
                                     if what == "uploaded" and f["service"] == name],
                         "why": sorted(set(w for _, ok, w in fetches if not ok))[:4]}
        return row


def _field(line, key):
    """The value of key=... in a journal line (quoted or not)."""
    marker = " %s=" % key
    if marker not in line:
        return None
    rest = line.split(marker, 1)[1]
    if rest.startswith('"'):
        return rest[1:].split('"', 1)[0]
    return rest.split(" ", 1)[0]


def _built(*nodes):
    """The built circuits of the tors (health_layers.parse_circuits: id, status, path [(fingerprint, nickname)])."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.health_layers import parse_circuits
    out = []
    for node in nodes:
        with _ctl(node) as ctl:
            out += parse_circuits(ctl.get_info("circuit-status")["circuit-status"])
    return [c for c in out if c["status"] == "BUILT" and c["path"]]


def intro_relays(tors, authorities, guards):
    """{fingerprint} at the end of the HS_SERVICE_INTRO circuits of the tors, without authorities and guards."""
    return set(c["path"][-1][0] for c in _built(*tors)
               if c["keywords"].get("PURPOSE") == "HS_SERVICE_INTRO") - authorities - guards


def guards(*nodes):
    """{fingerprint} of the guards the tors use now: the first hop of each of their built circuits (GETINFO
    entry-guards lists the sampled set, on a network this small nearly every relay)."""
    return set(c["path"][0][0] for c in _built(*nodes))


def wait_answered(campaign, name, since, deadline):
    while time.monotonic() < deadline:
        if any(ok for t, ok, _ in campaign.fetches(name, since)):
            return True
        time.sleep(1)
    return False


def wait_healthy_check(campaign, name, since, deadline):
    """Until a run of the tor's watchdog found its service healthy after `since` (which resets its ladder): the next
    trial then begins on a clean ladder, not on the step the last fault left."""
    while time.monotonic() < deadline:
        if any(what == "watchdog" and f["tor"] == name and f["healthy"] and t >= since
               for t, what, f in list(campaign.timeline)):
            return True
        time.sleep(1)
    return False


def inject(fault, args, net, tors, backends, work, trial):
    """Inject one fault into both tors; returns (the time it ended, extra facts for the row)."""
    extra = {}
    if fault == "hsdirs":
        for node in net.authorities + net.relays:
            restart_node(node, pause=0.2)
    elif fault == "backend":
        for backend in backends.values():
            backend.stop()
        time.sleep(args.backend_minutes * 60)
        for backend in backends.values():
            backend.start()        # the watched one is up already when its watchdog restarted it
    elif fault == "hung":
        for node in tors.values():
            os.kill(node.pid, signal.SIGSTOP)
        stopped = dict((name, (node.pid, node.starttime)) for name, node in tors.items())
        time.sleep(args.hung_minutes * 60)
        for name, node in tors.items():
            if (node.pid, node.starttime) == stopped[name]:
                signal_node(node, signal.SIGCONT)
            else:
                extra.setdefault("restarted_while_hung", []).append(name)
    elif fault == "intro":
        authorities = set(a.fingerprint for a in net.authorities)
        # not a guard of the client (the judge) nor of the services' tors (a frozen guard stops every circuit of its
        # tor: that is another fault, and on 8 relays the intro relays are often guards too)
        spared = guards(net.client, *tors.values())
        fps = intro_relays(tors.values(), authorities, spared)
        frozen = [r for r in net.relays if r.fingerprint in fps]
        extra.update(frozen=len(frozen), guards_spared=len(spared - authorities))
        for relay in frozen:
            os.kill(relay.pid, signal.SIGSTOP)
        try:
            time.sleep(args.intro_minutes * 60)
        finally:
            for relay in frozen:
                signal_node(relay, signal.SIGCONT)
    elif fault == "kill":
        for node in tors.values():
            os.kill(node.pid, signal.SIGKILL)
        time.sleep(5)
        for node in tors.values():
            restart_node(node, pause=0)
    elif fault == "vanguards":
        # 2 layer-2 and 3 layer-3 guards, as the onion_vanguards role's test on a network this small: with the
        # addon's defaults it loops without a word when fewer relays qualify (measured here: 120 s, nothing set)
        config = work / "vanguards.conf"
        config.write_text("[Vanguards]\nnum_layer2_guards = 2\nnum_layer3_guards = 3\n")
        for name, node in tors.items():
            state = work / ("vanguards-%s-%d.state" % (name, trial))
            try:
                proc = subprocess.run([args.vanguards, "--config", str(config),
                                       "--control_port", str(node.control_port),
                                       "--state", str(state), "--one_shot_vanguards", "--disable_bandguards",
                                       "--disable_rendguard"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      universal_newlines=True, timeout=120, check=False)
                said = "rc %d" % proc.returncode
            except subprocess.TimeoutExpired:
                said = "timed out after 120 s"
            with _ctl(node) as ctl:
                conf = dict(ctl.get_conf("HSLayer2Nodes", "HSLayer3Nodes"))
            extra[name + "_vanguards"] = "%s, HSLayer2Nodes %d, HSLayer3Nodes %d" % (
                said, len([x for x in (conf.get("HSLayer2Nodes") or "").split(",") if x]),
                len([x for x in (conf.get("HSLayer3Nodes") or "").split(",") if x]))
    else:
        raise SystemExit("unknown fault %s" % fault)
    return time.monotonic(), extra


def vanguards_command():
    """The vanguards 0.3.1 command of a venv of its own under .build (made with pip the first time)."""
    venv = ROOT / ".build" / "vanguards-0.3.1"
    command = venv / "bin" / "vanguards"
    if not command.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "vanguards==0.3.1"], check=True)
    return str(command)


def summary(results, faults, window):
    print("\n== summary: seconds after the injection (never = not within the fault + %d s)" % window)
    print("%-10s %-8s %6s %10s %10s %10s %10s %8s  %s" % ("fault", "tor", "trials", "detect p50", "detect p90",
                                                          "back p50", "back p90", "failed", "actions"))
    for fault in faults:
        rows = [r for r in results if r["fault"] == fault]
        for name in NAMES:
            never = float("inf")
            backs = [never if r[name]["back"] is None else r[name]["back"] for r in rows]
            detects = [never if r[name]["detect"] is None else r[name]["detect"] for r in rows]
            actions = {}
            for r in rows:
                for _t, action, _layer in r[name]["actions"]:
                    actions[action] = actions.get(action, 0) + 1
            print("%-10s %-8s %6d %10s %10s %10s %10s %8s  %s" % (
                fault, name, len(rows), _s(pct(detects, 50)), _s(pct(detects, 90)), _s(pct(backs, 50)),
                _s(pct(backs, 90)), "/".join(str(r[name]["failed"]) for r in rows), actions or "-"))


def _s(value):
    return "-" if value is None else ("never" if value == float("inf") else "%.1f" % value)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--faults", default="hsdirs,backend,hung,intro,kill,vanguards")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--relays", type=int, default=8)
    ap.add_argument("--interval", type=float, default=60.0)
    ap.add_argument("--probe", type=float, default=5.0)
    ap.add_argument("--window", type=float, default=300.0)
    ap.add_argument("--hung-minutes", type=float, default=10.0)
    ap.add_argument("--backend-minutes", type=float, default=3.0)
    ap.add_argument("--intro-minutes", type=float, default=5.0)
    ap.add_argument("--voting-interval", type=int, default=60)
    ap.add_argument("--restart-interval", type=int, default=120,
                    help="the watched tor's restart_interval and backend_restart_interval (the role's defaults, 3600 "
                         "and 600, hold back the repairs of the next trials of a fault: they come minutes apart here)")
    ap.add_argument("--vanguards", default="auto",
                    help="a vanguards command; auto (the default): vanguards 0.3.1 from PyPI in .build/vanguards-0.3.1 "
                         "(made once); none: leave that fault out")
    ap.add_argument("--json", help="write every trial's row here")
    args = ap.parse_args()
    faults = args.faults.split(",")
    if "vanguards" in faults and args.vanguards == "none":
        faults.remove("vanguards")
    elif "vanguards" in faults and args.vanguards == "auto":
        args.vanguards = vanguards_command()
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion_health

    # every running relay voted Stable (by default only those above the median uptime: too few for the addon)
    net = pn.PrivNet(n_relays=args.relays, ready_timeout=240, voting_interval=args.voting_interval,
                     authority_extra=["AuthDirVoteStableGuaranteeMinUptime 0"])
    work = Path(tempfile.mkdtemp(prefix="onionlab-faults-"))
    campaign = Campaign(args)
    threads, results = [], []
    backends = dict((name, Backend()) for name in NAMES)
    try:
        net.start()
        tors, targets = {}, {}
        for name in NAMES:
            hs_dir = work / ("hs-" + name)
            hs_dir.mkdir(mode=0o700)
            tors[name] = net.add_tor(name, socks=True, extra_lines=[
                "HiddenServiceDir %s" % hs_dir, "HiddenServicePort 80 127.0.0.1:%d" % backends[name].port])
        for name, node in tors.items():
            deadline = time.monotonic() + 240
            while True:
                with _ctl(node, 30) as ctl:
                    result = onion_health.check(ctl, timeout=20)
                if result["services"] and result["services"][0]["state"] == "healthy":
                    targets[name] = result["services"][0]["address"]
                    break
                if time.monotonic() > deadline:
                    sys.exit("%s never became healthy: %s" % (name, result))
                time.sleep(3)
        print("services: %s" % targets, flush=True)

        def config(name, **more):
            node = tors[name]
            return dict({"control_port": node.control_port, "cookie_path": node.cookie_path,
                         "state_file": str(work / ("%s.json" % name)), "metrics_file": str(work / ("%s.prom" % name)),
                         "reach_timeout": 30.0, "reach_attempts": 2}, **more)

        def restart(argv=None):
            if argv:                                    # backend_restart_command + [unit]
                backends["watched"].start()
                return True, "web server started by the campaign"
            restart_node(tors["watched"])
            return True, "restarted by the campaign"

        watched = config("watched", backend_units={"127.0.0.1:%d" % backends["watched"].port: "campaign-web.service"},
                         restart_interval=args.restart_interval, backend_restart_interval=args.restart_interval)
        threads = [threading.Thread(target=campaign.prober, args=(net, targets), daemon=True),
                   threading.Thread(target=campaign.dog, args=("watched", watched, restart), daemon=True),
                   threading.Thread(target=campaign.dog, args=("alone", config("alone", report_only=True), None),
                                    daemon=True)]
        threads += [threading.Thread(target=campaign.uploads, args=(node, name), daemon=True)
                    for name, node in tors.items()]
        for thread in threads:
            thread.start()
        time.sleep(args.interval)                     # a quiet stretch first
        for trial in range(1, args.trials + 1):
            for fault in faults:
                start = time.monotonic()
                campaign.note("injected", fault=fault)
                ended, extra = inject(fault, args, net, tors, backends, work, trial)
                while time.monotonic() - ended < args.window:
                    if all(campaign.back(name, start, ended) is not None for name in NAMES):
                        break
                    time.sleep(2)
                row = campaign.measure(fault, trial, start, ended, time.monotonic(), extra)
                operator = []
                for name in NAMES:
                    if row[name]["back"] is None:    # the operator steps in: a restart
                        operator.append(name)
                        backends[name].start()
                        restart_node(tors[name])
                row["operator_restarted"] = operator
                results.append(row)
                _print_row(row)
                again = time.monotonic()
                for name in NAMES:
                    if not wait_answered(campaign, name, again, again + 600):
                        print("  %s not answering 600 s after the trial: stopping" % name)
                        raise SystemExit(1)
                for name in NAMES:
                    if not wait_healthy_check(campaign, name, again, time.monotonic() + 3 * args.interval + 120):
                        print("  %s: no healthy check within 3 intervals after the trial; its ladder carries on"
                              % name, flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(results, indent=1))
        summary(results, faults, args.window)
    finally:
        campaign.stop.set()
        for thread in threads:
            thread.join(30)
        for backend in backends.values():
            backend.stop()
        net.stop()


def _print_row(row):
    extra = dict((k, v) for k, v in row.items() if k not in ("fault", "trial", "fault_seconds") + NAMES)
    print("\n== %s trial %d (the fault lasted %.1f s) %s" % (row["fault"], row["trial"], row["fault_seconds"],
                                                           extra or ""), flush=True)
    for name in NAMES:
        r = row[name]
        print("  %-8s detect %s s, fetches %d, failed %d (first %s s), back %s s, actions %s, uploads %s; %s"
              % (name, r["detect"], r["fetches"], r["failed"], r["first_failure"], r["back"], r["actions"],
                 r["uploads"][:6], r["why"]), flush=True)
        for t, line in r["lines"][:8]:
            print("     %6.1f %s" % (t, line[:300]), flush=True)
        for t, action, result in r["results"][:8]:
            print("     %6.1f action=%s result=%s" % (t, action, result), flush=True)


if __name__ == "__main__":
    main()
