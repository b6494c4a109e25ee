#!/usr/bin/env python3
"""Requests to an Onionbalance frontend address through privnet.py's client tor (JSON on stdout).

Used by ./run demo; the logic is harness.onionbalance's
(Frontend, until_steady, until_seen), shared with tests/integration/privnet/test_privnet_onionbalance.py.
A fresh circuit per request (a SOCKS username of its own), so the client picks an introduction
point of the frontend descriptor anew each time; a page names its backend ("host H ..." or
"backend NAME").

    python tests/harness/frontend_requests.py --privnet DIR --address A until-steady [--allowed host2,host3] [--count N]
        # until 6 answers in a row come from --allowed (any backend if empty): {"seconds", "failures", "pages", ...}
    python tests/harness/frontend_requests.py --privnet DIR --address A until-seen --names host1,host2
        # until each of --names answered (the client's descriptors dropped every 15 s): {"seconds", "pages"}

The collection must be importable: ANSIBLE_COLLECTIONS_PATH names the directory holding
ansible_collections/onionlab/tor (./run and tests/ci set it).
"""

import argparse
import json
import os
import sys
import time

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))] + [
    p for p in os.environ.get('ANSIBLE_COLLECTIONS_PATH', '').split(os.pathsep) if p]

from harness import onionbalance as ob  # noqa: E402
from harness import privnet_cli  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--privnet', required=True, metavar='DIR', help='the directory of privnet_cli.py start')
    p.add_argument('--address', required=True)
    p.add_argument('--deadline', type=float, default=240.0)
    p.add_argument('--pattern', default=ob.PAGE_NAME, help='regex whose group 1 names the backend in a page')
    sub = p.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('until-steady', help='until STEADY answers in a row come from --allowed')
    s.add_argument('--allowed', default='', help='backend names, comma-separated (empty: any)')
    s.add_argument('--steady', type=int, default=6)
    s.add_argument('--count', type=int, default=0, help='then this many more requests, counted by backend')
    s = sub.add_parser('until-seen', help='until every backend of --names served a page')
    s.add_argument('--names', required=True)
    args = p.parse_args(argv)
    state = privnet_cli.read_state(os.path.abspath(args.privnet))
    if not state or state.get('status') not in ('ready', 'degraded'):
        print('no ready privnet in %s' % args.privnet, file=sys.stderr)
        return 2
    front = ob.Frontend(state['socks_port'], args.address, state['client']['control_port'],
                        state['client']['cookie_path'], args.pattern)
    t0 = time.monotonic()
    try:
        if args.cmd == 'until-steady':
            allowed = {x for x in args.allowed.split(',') if x}
            result = ob.until_steady(front.get, allowed, t0, args.deadline, args.steady, forget=front.forget)
            if args.count:
                counted = {}
                for _ in range(args.count):
                    name, _why = front.get()
                    counted[name or 'failed'] = counted.get(name or 'failed', 0) + 1
                result['counted'] = counted
        else:
            names = [x for x in args.names.split(',') if x]
            result = ob.until_seen(front.get, names, t0, args.deadline, front.forget)
    except AssertionError as e:
        print(json.dumps({'failed': True, 'msg': str(e), 'seconds': round(time.monotonic() - t0, 1)}))
        return 1
    print(json.dumps(result))
    return 0


if __name__ == '__main__':
    sys.exit(main())
