# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The private Tor network of privnet.py in the background: a supervisor process that owns it, its state file
(DIR/state.json), and the commands to start, stop, list and join it (standard library only).

CLI::

    python tests/harness/privnet_cli.py start  [--dir DIR] [--relays N] [--no-onion] [--voting-interval 20]
    python tests/harness/privnet_cli.py env    --dir DIR [--format sh|json|torrc]
    python tests/harness/privnet_cli.py status --dir DIR
    python tests/harness/privnet_cli.py stop   --dir DIR
    python tests/harness/privnet_cli.py cleanup [--all]   # networks start left behind

``start`` returns once the network is ready and prints ``export PRIVNET_...``
lines (``env`` prints them again).  ``env --format torrc`` prints the torrc
lines an extra tor needs to join (DirAuthority lines + testing settings);
``DIR/join.torrc`` holds the same text.  Without ``--dir``, ``start`` makes a
temporary directory and ``stop`` removes it.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:  # imported as harness.privnet_cli (pytest) or from this directory (run as a script)
    from .privnet import STATE_FILE, PrivNet, _registry_entry, cache_dir, log
    from .procs import kill_pids, pid_alive, proc_starttime
except ImportError:  # pragma: no cover
    from privnet import STATE_FILE, PrivNet, _registry_entry, cache_dir, log
    from procs import kill_pids, pid_alive, proc_starttime


def read_state(d):
    try:
        with open(os.path.join(d, STATE_FILE)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_state(d, state):
    tmp = os.path.join(d, STATE_FILE + '.tmp')
    with open(tmp, 'w') as f:
        json.dump(state, f, indent=2)
    os.replace(tmp, os.path.join(d, STATE_FILE))


def env_lines(state):
    lines = {
        'PRIVNET_DIR': state['dir'],
        'PRIVNET_SOCKS_PORT': state['socks_port'],
        'PRIVNET_CLIENT_CONTROL_PORT': state['client']['control_port'],
        'PRIVNET_CLIENT_COOKIE': state['client']['cookie_path'],
        'PRIVNET_JOIN_TORRC': state['join_torrc'],
    }
    if state.get('onion'):
        lines['PRIVNET_ONION_CONTROL_PORT'] = state['onion']['control_port']
        lines['PRIVNET_ONION_COOKIE'] = state['onion']['cookie_path']
    return ["export %s='%s'" % (k, v) for k, v in lines.items()]


def cmd_supervise(args):
    """Runs detached; owns the tors until SIGTERM."""
    stop = {'flag': False}

    def handler(signum, frame):
        stop['flag'] = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    net = PrivNet(base_dir=args.dir, n_relays=args.relays, with_onion=not args.no_onion,
                  ready_timeout=args.timeout, voting_interval=args.voting_interval)
    state = {'status': 'starting', 'supervisor_pid': os.getpid(),
             'supervisor_starttime': proc_starttime(os.getpid()), 'dir': net.base_dir,
             'created_dir': args.created_dir}
    write_state(net.base_dir, state)
    try:
        net.start()
        state.update(net.info())
        state.update({'status': 'ready', 'created_dir': args.created_dir})
        write_state(net.base_dir, state)
        while not stop['flag']:
            time.sleep(1)
            dead = [n.name for n in net.nodes if not n.running()]
            if dead and state['status'] == 'ready':
                state['status'] = 'degraded'
                state['dead'] = dead
                write_state(net.base_dir, state)
    except KeyboardInterrupt:
        pass
    except Exception as e:  # noqa: BLE001 - report every failure in the state file
        state.update({'status': 'failed', 'error': str(e)})
        write_state(net.base_dir, state)
        log('failed: %s' % e)
        return 1
    finally:
        net.stop()
    state['status'] = 'stopped'
    write_state(net.base_dir, state)
    return 0


def cmd_start(args):
    created = args.dir is None
    d = os.path.abspath(args.dir or tempfile.mkdtemp(prefix='onionlab-privnet-'))
    os.makedirs(d, mode=0o700, exist_ok=True)
    old = read_state(d)
    if old and old.get('status') in ('starting', 'ready', 'degraded') and \
            pid_alive(old['supervisor_pid'], old.get('supervisor_starttime')):
        print('privnet already running in %s (supervisor %d)' % (d, old['supervisor_pid']), file=sys.stderr)
        return 1
    try:
        os.unlink(os.path.join(d, STATE_FILE))
    except FileNotFoundError:
        pass
    t0 = time.monotonic()
    cmd = [sys.executable, os.path.abspath(__file__), '_supervise', '--dir', d,
           '--relays', str(args.relays), '--timeout', str(args.timeout),
           '--voting-interval', str(args.voting_interval)]
    if args.no_onion:
        cmd.append('--no-onion')
    if created:
        cmd.append('--created-dir')
    with open(_registry_entry(d), 'w') as f:  # for `cleanup`
        json.dump({'dir': d}, f)
    with open(os.path.join(d, 'supervisor.log'), 'ab') as logf:
        sup = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                               start_new_session=True, close_fds=True)
    while True:
        state = read_state(d)
        if state and state.get('status') in ('ready', 'failed'):
            break
        if sup.poll() is not None:
            state = read_state(d) or {'status': 'failed', 'error': 'supervisor exited %s' % sup.returncode}
            break
        time.sleep(0.1)
    if state['status'] != 'ready':
        print('privnet failed: %s (see %s/supervisor.log)' % (state.get('error'), d), file=sys.stderr)
        sup.wait()
        return 1
    print('\n'.join(env_lines(state)))
    print('# privnet ready in %.1fs (supervisor pid %d; stop with: %s stop --dir %s)'
          % (time.monotonic() - t0, state['supervisor_pid'], sys.argv[0], d))
    return 0


def stop_dir(d, grace=5.0):
    """Stop the CLI network of directory d: its supervisor, then any tor left (by PID)."""
    state = read_state(d)
    if not state:
        return False
    pid, st = state.get('supervisor_pid'), state.get('supervisor_starttime')
    if pid:
        kill_pids([(pid, st)], grace=grace + 5)
    # Safety net: tors whose supervisor died without stopping them.
    tors = [(n['pid'], n['starttime']) for n in state.get('nodes', []) if n.get('pid')]
    left = kill_pids(tors, grace=grace)
    t0 = time.monotonic()
    while any(pid_alive(p, s) for p, s in tors) and time.monotonic() - t0 < 5:
        time.sleep(0.1)
    if left:
        print('SIGKILLed %s' % left, file=sys.stderr)
    if state.get('created_dir'):
        shutil.rmtree(d, ignore_errors=True)
    try:
        os.unlink(_registry_entry(d))
    except FileNotFoundError:
        pass
    return True


def cmd_stop(args):
    d = os.path.abspath(args.dir)
    if not stop_dir(d, args.grace):
        print('no privnet state in %s' % d, file=sys.stderr)
        return 1
    print('privnet stopped')
    return 0


def cmd_cleanup(args):
    """Stop networks started by `start` and never stopped: those whose
    supervisor is gone always, running ones only with --all."""
    n = 0
    for reg in sorted(glob.glob(os.path.join(cache_dir(), 'privnets', 'privnet-*.json'))):
        try:
            with open(reg) as f:
                d = json.load(f)['dir']
        except (OSError, ValueError, KeyError):
            os.unlink(reg)
            continue
        state = read_state(d)
        if state and not args.all and state.get('status') != 'stopped' and \
                pid_alive(state.get('supervisor_pid') or 0, state.get('supervisor_starttime')):
            print('privnet in %s is running (supervisor %s); use stop --dir or cleanup --all'
                  % (d, state.get('supervisor_pid')))
            continue
        if not stop_dir(d):
            os.unlink(reg)
        n += 1
    print('cleaned up %d privnet(s)' % n)
    return 0


def cmd_status(args):
    state = read_state(os.path.abspath(args.dir))
    if not state:
        print('no privnet state in %s' % args.dir)
        return 1
    sup = pid_alive(state.get('supervisor_pid', 0), state.get('supervisor_starttime'))
    print('status: %s; supervisor %s %s' % (state.get('status'), state.get('supervisor_pid'),
                                           'alive' if sup else 'gone'))
    ok = sup and state.get('status') == 'ready'
    for n in state.get('nodes', []):
        alive = pid_alive(n['pid'], n['starttime'])
        ok = ok and alive
        print('  %-8s %-9s pid %-7s control %-5s %s' % (n['name'], n['role'], n['pid'], n['control_port'],
                                                       'alive' if alive else 'DEAD'))
    return 0 if ok else 1


def cmd_env(args):
    state = read_state(os.path.abspath(args.dir))
    if not state or state.get('status') not in ('ready', 'degraded'):
        print('privnet in %s is not ready' % args.dir, file=sys.stderr)
        return 1
    if args.format == 'json':
        print(json.dumps(state, indent=2))
    elif args.format == 'torrc':
        print('\n'.join(state['join_torrc_lines']))
    else:
        print('\n'.join(env_lines(state)))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = p.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('start', help='start the network in the background and wait until ready')
    s.add_argument('--dir')
    s.add_argument('--relays', type=int, default=3)
    s.add_argument('--no-onion', action='store_true')
    s.add_argument('--timeout', type=float, default=60.0)
    s.add_argument('--voting-interval', type=int, default=10, metavar='SECONDS',
                   help="the authorities' voting interval once running (20 for Onionbalance's --is-testnet)")
    s = sub.add_parser('_supervise')
    s.add_argument('--dir', required=True)
    s.add_argument('--relays', type=int, default=3)
    s.add_argument('--no-onion', action='store_true')
    s.add_argument('--timeout', type=float, default=60.0)
    s.add_argument('--created-dir', action='store_true')
    s.add_argument('--voting-interval', type=int, default=10)
    s = sub.add_parser('stop')
    s.add_argument('--dir', required=True)
    s.add_argument('--grace', type=float, default=5.0)
    s = sub.add_parser('status')
    s.add_argument('--dir', required=True)
    s = sub.add_parser('cleanup', help='stop networks left behind by start (see --all)')
    s.add_argument('--all', action='store_true', help='also the ones still running')
    s = sub.add_parser('env')
    s.add_argument('--dir', required=True)
    s.add_argument('--format', choices=('sh', 'json', 'torrc'), default='sh')
    args = p.parse_args(argv)
    return {'start': cmd_start, '_supervise': cmd_supervise, 'stop': cmd_stop,
            'status': cmd_status, 'env': cmd_env, 'cleanup': cmd_cleanup}[args.cmd](args)


if __name__ == '__main__':
    sys.exit(main())
