#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_onion_probe's time to first byte next to curl's, on the same onion service through the same
SocksPort of the private Tor network (tests/harness/privnet.py), N fetches each, in a shuffled order.

    .venv/bin/python bench/onion_probe.py [--rounds 30] [--gap 0.05] [--seed 17] [--privnet DIR]

Measured, per fetch of http://<onion>/ (a local HTTP backend behind an ADD_ONION service):
  * time to first byte: the module's time_to_first_byte from its backend's attempt (probe.attempt,
    in-process), and curl --socks5-hostname's %{time_starttransfer}; both count from the connection to
    the SocksPort to the first byte of the answer;
  * wall time of one process: the module file run by Python with its arguments (as Ansible runs it on
    a target, without Ansible's own overhead) next to one curl process.
The first fetch (descriptor, introduction, rendezvous) is made before and not counted: this
compares fetches over tor's circuits already built. The three clients take turns in a shuffled
order, GAP seconds apart: a fetch right after another one on the same circuit is slower (run in a
fixed order, curl right after ours, curl's median was 10 ms higher). --privnet uses a network
started with `tests/harness/privnet_cli.py start --dir DIR` instead of starting one.

Measured here (2 cores, tor 0.4.9.11, 60 rounds): time to first byte, median, ours 28.2 ms, the
module process 28.6 ms, curl 28.6 ms; wall time of a module process 185 ms, of curl 61 ms.
"""

import argparse
import http.server
import json
import os
import random
import shutil
import statistics
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
from harness import privnet_cli  # noqa: E402

MODULE = ROOT / "plugins" / "modules" / "tor_onion_probe.py"


def link_collection():
    parent = COLLECTIONS / "ansible_collections" / "onionlab"
    parent.mkdir(parents=True, exist_ok=True)
    if not (parent / "tor").exists():
        (parent / "tor").symlink_to(ROOT)


class Backend(http.server.ThreadingHTTPServer):
    daemon_threads = True


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"onionlab bench\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def stats(values):
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
    return statistics.median(values) * 1000, values[0] * 1000, p90 * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--gap", type=float, default=0.05, help="seconds between two fetches")
    ap.add_argument("--seed", type=int, default=17, help="of the order of the three fetches in each round")
    ap.add_argument("--privnet", help="directory of a running privnet (tests/harness/privnet_cli.py start --dir)")
    args = ap.parse_args()
    curl = shutil.which("curl")
    if not curl:
        sys.exit("curl is needed")
    link_collection()
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import probe, socks
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
    from harness.reach import Reach, Tor     # imports the collection: after link_collection()

    net = None
    if args.privnet:
        state = privnet_cli.read_state(args.privnet)
        socks_port, onion_ctl, client_ctl = state["socks_port"], state["onion"], state["client"]
    else:
        net = pn.PrivNet(ready_timeout=120)
        net.start()
        socks_port, onion_ctl, client_ctl = net.socks_port, net.onion.info(), net.client.info()
    backend = Backend(("127.0.0.1", 0), Handler)
    threading.Thread(target=backend.serve_forever, daemon=True).start()
    work = Path(tempfile.mkdtemp(prefix="onionlab-bench-probe-"))
    try:
        client = Tor(client_ctl["control_port"], client_ctl["cookie_path"], "client", socks_port=socks_port)
        with connect(port=onion_ctl["control_port"], cookie_path=onion_ctl["cookie_path"]) as ctl, \
                Reach(Tor(onion_ctl["control_port"], onion_ctl["cookie_path"], "onion"), client) as reach:
            svc = ctl.add_onion([(80, "127.0.0.1:%d" % backend.server_address[1])], flags=["DiscardPK"])
            address = svc["service_id"] + ".onion"
            _body, first = reach.fetch(address, deadline=120, since=None)
            print("onion service %s: first fetch %.2fs after its descriptor was on the HSDirs (not counted)"
                  % (address, first))
            proxy = socks.SocksProxy("127.0.0.1", socks_port)
            target = probe.parse_target({"address": address}, 0, 30.0)
            args_file = work / "args.json"
            args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"socks_port": socks_port,
                                                                     "targets": [{"address": address}]}}))
            env = dict(os.environ, PYTHONPATH=str(COLLECTIONS))
            curl_cmd = [curl, "-sS", "-o", "/dev/null", "--max-time", "30", "-w", "%{http_code} %{time_starttransfer}",
                        "--socks5-hostname", "127.0.0.1:%d" % socks_port, "http://%s/" % address]
            ours, theirs, module_ttfb, module_wall, curl_wall = [], [], [], [], []

            def fetch_ours():
                outcome = probe.attempt(proxy, target)
                if not outcome.reachable:
                    sys.exit("probe failed: %s" % outcome.error)
                ours.append(outcome.time_to_first_byte)

            def fetch_curl():
                t0 = time.monotonic()
                out = subprocess.run(curl_cmd, stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
                curl_wall.append(time.monotonic() - t0)
                code, seconds = out.split()
                if code != "200":
                    sys.exit("curl got HTTP %s" % code)
                theirs.append(float(seconds))

            def fetch_module():
                t0 = time.monotonic()
                out = subprocess.run([sys.executable, str(MODULE), str(args_file)], stdout=subprocess.PIPE,
                                     universal_newlines=True, env=env, check=True).stdout
                module_wall.append(time.monotonic() - t0)
                (entry,) = json.loads(out)["targets"]
                if not entry["reachable"]:
                    sys.exit("module run failed: %s" % entry["error"])
                module_ttfb.append(entry["time_to_first_byte"])

            order = random.Random(args.seed)
            for _ in range(args.rounds):
                fetches = [fetch_ours, fetch_curl, fetch_module]
                order.shuffle(fetches)          # no client always right after another
                for fetch in fetches:
                    fetch()
                    time.sleep(args.gap)
            ctl.del_onion(svc["service_id"])
    finally:
        backend.shutdown()
        shutil.rmtree(str(work), ignore_errors=True)
        if net is not None:
            net.stop()
    print("%d fetches each, in a shuffled order each round, %.0f ms apart, warm circuits; milliseconds"
          % (args.rounds, args.gap * 1000))
    print("%-46s %9s %9s %9s" % ("", "median", "min", "p90"))
    for name, values in (("time to first byte: tor_onion_probe (attempt)", ours),
                         ("time to first byte: module process", module_ttfb),
                         ("time to first byte: curl --socks5-hostname", theirs),
                         ("wall time: module process (python3 + imports)", module_wall),
                         ("wall time: curl process", curl_wall)):
        print("%-46s %9.2f %9.2f %9.2f" % ((name,) + stats(values)))
    diff = statistics.median(ours) - statistics.median(theirs)
    print("median time to first byte, ours minus curl's: %+.2f ms" % (diff * 1000))


if __name__ == "__main__":
    main()
