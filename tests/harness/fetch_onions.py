#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fetch http://ADDRESS/ through the private network's client SocksPort for every entry of an
onion_service summary file, retrying while descriptors propagate (bounded), and check that each
page names its host. Prints one line per service and the time to the first page.

    fetch_onions.py --privnet DIR --summary onion-services.yml [--deadline 90]
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from harness.fixtures import fetch_onion  # noqa: E402


def read_summary(path):
    import yaml
    with open(path) as handle:
        return yaml.safe_load(handle) or []


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--privnet", required=True)
    parser.add_argument("--summary", required=True)
    parser.add_argument("--deadline", type=float, default=90.0)
    args = parser.parse_args(argv)
    with open(os.path.join(args.privnet, "state.json")) as handle:
        socks_port = json.load(handle)["socks_port"]
    entries = read_summary(args.summary)
    if not entries:
        print("no services in %s" % args.summary)
        return 1
    failures = 0
    start = time.monotonic()
    for entry in entries:
        try:
            body, took, attempts = fetch_onion(socks_port, entry["onion_address"], entry["ports"][0],
                                               deadline=args.deadline)
        except Exception as exc:  # report every service, then fail
            print("FAIL %s %s %s: %s" % (entry["host"], entry["service"], entry["onion_address"], exc))
            failures += 1
            continue
        ok = ("host %s service %s" % (entry["host"], entry["service"])) in body
        print("%s %s %s %s: %.1fs, %d attempt(s)" % ("ok  " if ok else "FAIL", entry["host"], entry["service"],
                                                      entry["onion_address"], took, attempts))
        failures += 0 if ok else 1
    print("%d of %d services reached through Tor in %.1fs" % (len(entries) - failures, len(entries),
                                                              time.monotonic() - start))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
