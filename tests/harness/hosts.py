#!/usr/bin/env python3
"""Several real hosts on this machine: systemd-nspawn containers (standard library only).

Each host is a Debian rootfs of its own, booted with systemd as PID 1, sshd on
``127.0.0.1:22NN`` and the packaged ``tor`` service, reachable by Ansible as an
ordinary inventory entry (ssh, root, a key this harness generates).  The
containers share the host's network (no namespaces to create or leak), so
every port is distinct per host: ssh, and tor's ControlPort/SocksPort/ORPort
(given to the inventory as ``testbed_tor_*_port`` host vars), and four ports for
the services' backends (``testbed_app_ports``), all claimed against other beds.

The base rootfs is made once with ``debootstrap`` from the mirror apt already
uses and cached in ``~/.cache/onionlab/`` (``$ONIONLAB_CACHE``); building it
holds an exclusive ``flock`` on ``rootfs.lock``, copying it a shared one, so
concurrent runs neither race nor copy a half-built tree.  A tree without its
completion marker (or missing an essential file) is a partial build: it is
removed and built again.  Each host gets the tree as an overlayfs mount
(lower = the cache, upper = the host's own directory: instant and a few MB),
or with ``ONIONLAB_HOSTS_LAYOUT=copy`` (or no overlayfs) a ``cp -a`` copy.
Every container gets cgroups of its own below the harness's (see
``own_cgroups``), removed at teardown.

Nothing a host runs may reach another address:

* tor always gets a torrc written by the harness: ``DisableNetwork 1`` unless
  it joins the private network of ``privnet.py`` (then it gets our
  DirAuthority lines + ``TestingTorNetwork 1`` and knows no other authority),
  and a ``ClientOnionAuthDir`` (``/var/lib/tor/onion_auth``, tor's, 0700) for
  permanent client authorization keys;
* ``/etc/resolv.conf`` names only 127.0.0.1;
* apt's periodic timers are masked, and apt inside a host fails at once (a proxy nobody
  listens on).  ``--apt-packages`` (``HostBed(apt_packages=...)``) gives the hosts a local
  package repository instead: see ``AptRepo``.

Processes: one ``systemd-nspawn`` per host, started in its own session; its
PID and start time go to ``DIR/state.json`` (and a pointer to that file to
``~/.cache/onionlab/beds/``) before anything waits on it.  Teardown sends
SIGTERM to each nspawn PID (the container's systemd shuts down cleanly),
waits (a second SIGTERM makes nspawn terminate at once), then SIGKILLs
what is left, unmounts the overlays and removes the run directory.
``cleanup`` does the same for every bed registered in ``~/.cache/onionlab/beds/``
whose ``up`` process is gone (or all with ``--all``); processes are found
through those state files only, never by name.

CLI::

    python tests/harness/hosts.py up [--dir DIR] [-n 3] [--privnet PRIVNET_DIR] [--stock] [--inventory-out FILE]
                                     [--apt-packages onionbalance[,...]]
        # FILE.ini gets an INI inventory, any other name JSON (= YAML)
    python tests/harness/hosts.py inventory --dir DIR     # print the inventory (JSON = YAML)
    python tests/harness/hosts.py down --dir DIR
    python tests/harness/hosts.py cleanup [--all]
    python tests/harness/hosts.py ensure-packages   # every Debian package a step needs (CONTROLLER_PACKAGES)
    python tests/harness/hosts.py apt-repo onionbalance [--suite S]  # build (or find) the cached repo

The parts, one file each (every name stays importable from here)::

    rootfs.py     RootfsCache: the cached debootstrapped tree per release, apt_mirror, ubuntu_keyring, log
    aptrepo.py    AptRepo: a local apt repository for the hosts (--apt-packages)
    ports.py      free_ports (every free port of the harness) and choose_ssh_ports (the block 22N1..22Nn)
    cgroups.py    own_cgroups and the inotify limit: what each container needs from the kernel
    inventory.py  inventory_ini: the inventory as INI
    hostbed.py    HostBed: the hosts themselves (trees, torrcs, boot, inventory, teardown_state)
    hosts.py      this: the controller's packages (CONTROLLER_PACKAGES, ensure_packages) and the CLI
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time

try:  # imported as harness.hosts (pytest) or run as a script
    from . import privnet_cli, procs
    from .rootfs import (  # noqa: F401  (re-exported)
        apt_mirror, cache_dir, DEBOOTSTRAP_SCRIPTS, DEFAULT_MIRROR, ESSENTIAL, host_suite, KEYRING_SUITE, log,
        _make_ubuntu_keyring, MARKER, mask_units, MASKED_UNITS, PACKAGES, _parse_deb822_sources,
        _parse_one_line_sources, RECIPE_VERSION, RootfsCache, STOCK_TORRC, SUITES, UBUNTU_KEYRING,
        ubuntu_keyring, UBUNTU_MIRROR, _write)
    from .aptrepo import (  # noqa: F401  (re-exported)
        apt_lists_name, APT_REPO_MOUNT, APT_REPO_SOURCE, APT_REPO_VERSION, AptRepo, give_apt_repo,
        write_flat_repo)
    from .ports import (  # noqa: F401  (re-exported)
        choose_ssh_ports, port_free, SSH_BASE_PORT)
    from .cgroups import (  # noqa: F401  (re-exported)
        ensure_inotify_instances, enter_cgroups, INOTIFY_INSTANCES, INOTIFY_MINIMUM, overlay_supported,
        own_cgroups, remove_cgroups)
    from .inventory import (  # noqa: F401  (re-exported)
        _ini_value, inventory_ini)
    from .hostbed import (  # noqa: F401  (re-exported)
        APP_PORTS, beds_dir, claimed_ports, CLIENT_AUTH_DIR, DEFAULTS_TORRC, host_torrc, HostBed,
        _mounts_under, RESTART_TOR, _ssh_banner, START_TOR, stock_defaults_torrc, STOCK_OFFLINE_LINES,
        teardown_state, _tor_ids, SSH_ARGS, TOR_STATE, tor_state_script, WAIT_CONTROL_SOCKET, wait_control_socket_script)
except ImportError:  # pragma: no cover
    import privnet_cli
    import procs
    from rootfs import (  # noqa: F401
        apt_mirror, cache_dir, DEBOOTSTRAP_SCRIPTS, DEFAULT_MIRROR, ESSENTIAL, host_suite, KEYRING_SUITE, log,
        _make_ubuntu_keyring, MARKER, mask_units, MASKED_UNITS, PACKAGES, _parse_deb822_sources,
        _parse_one_line_sources, RECIPE_VERSION, RootfsCache, STOCK_TORRC, SUITES, UBUNTU_KEYRING,
        ubuntu_keyring, UBUNTU_MIRROR, _write)
    from aptrepo import (  # noqa: F401
        apt_lists_name, APT_REPO_MOUNT, APT_REPO_SOURCE, APT_REPO_VERSION, AptRepo, give_apt_repo,
        write_flat_repo)
    from ports import (  # noqa: F401
        choose_ssh_ports, port_free, SSH_BASE_PORT)
    from cgroups import (  # noqa: F401
        ensure_inotify_instances, enter_cgroups, INOTIFY_INSTANCES, INOTIFY_MINIMUM, overlay_supported,
        own_cgroups, remove_cgroups)
    from inventory import (  # noqa: F401
        _ini_value, inventory_ini)
    from hostbed import (  # noqa: F401
        APP_PORTS, beds_dir, claimed_ports, CLIENT_AUTH_DIR, DEFAULTS_TORRC, host_torrc, HostBed,
        _mounts_under, RESTART_TOR, _ssh_banner, START_TOR, stock_defaults_torrc, STOCK_OFFLINE_LINES,
        teardown_state, _tor_ids, SSH_ARGS, TOR_STATE, tor_state_script, WAIT_CONTROL_SOCKET, wait_control_socket_script)

# What this machine (the controller) needs from Debian's packages, by group: a command (or file)
# -> the package that has it. ./run installs tor, python3-venv and git itself (before .venv exists).
#   bed: the nspawn hosts (HostBed, `up`, the demo);
#   tests: what the tests run besides: the private network's tor-gencert, Onionbalance on the
#     private network (test_privnet_onionbalance.py), a real Prometheus (test_metrics_*.py) and
#     Alertmanager (test_onionprobe_bed.py; amtool checks the prometheus role's configuration), node_exporter
#     serving the watchdog's textfile (test_metrics_onion_privnet.py), curl beside tor_onion_probe
#     (test_tor_onion_probe.py).
CONTROLLER_PACKAGES = {
    'bed': {'systemd-nspawn': 'systemd-container', 'debootstrap': 'debootstrap',
            'ssh': 'openssh-client', 'ssh-keygen': 'openssh-client', 'dpkg-deb': 'dpkg'},
    'tests': {'tor': 'tor', 'tor-gencert': 'tor', 'onionbalance': 'onionbalance',
              '/usr/bin/prometheus': 'prometheus', '/usr/bin/promtool': 'prometheus', 'curl': 'curl',
              '/usr/bin/prometheus-alertmanager': 'prometheus-alertmanager',
              '/usr/bin/amtool': 'prometheus-alertmanager',
              '/usr/bin/prometheus-node-exporter': 'prometheus-node-exporter'},
}
PACKAGE_GROUPS = tuple(CONTROLLER_PACKAGES)
APT_PACKAGES = CONTROLLER_PACKAGES['bed']  # the name before the groups


# ---------------------------------------------------------------------------
# this machine's packages
# ---------------------------------------------------------------------------

def _have(cmd):
    """Whether a command exists (on PATH, or in the sbin directories a non-root PATH lacks)."""
    if os.path.isabs(cmd):
        return os.access(cmd, os.X_OK)
    return bool(shutil.which(cmd, path=os.pathsep.join([os.environ.get('PATH', ''), '/usr/sbin', '/sbin'])))


def missing_packages(groups=PACKAGE_GROUPS):
    """The Debian packages of these groups (CONTROLLER_PACKAGES) whose commands are missing."""
    return sorted({pkg for g in groups for cmd, pkg in CONTROLLER_PACKAGES[g].items() if not _have(cmd)})


def ensure_packages(groups=('bed',)):
    """apt-get install the Debian packages of these groups (CONTROLLER_PACKAGES) whose commands are
    missing; returns them. ``bed`` (the default, for a bed alone: the fixtures, ``up``) or every group
    (``ensure-packages``, what the steps of ./run test call). One install at a time on this machine:
    an flock of ours (the CI lanes call this at the same time), and apt's own lock waited for
    (DPkg::Lock::Timeout) when something else holds it. apt-get update only when the install fails
    (a fresh machine has no or old package lists)."""
    if not missing_packages(groups):
        return []
    sudo = [] if os.geteuid() == 0 else ['sudo']
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    wait = ['-o', 'DPkg::Lock::Timeout=600']
    with open(os.path.join(cache_dir(), 'apt-install.lock'), 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        need = missing_packages(groups)  # again: another process may have installed them meanwhile
        if not need:
            return []
        log('installing Debian packages: %s' % ' '.join(need))
        install = sudo + ['apt-get'] + wait + ['install', '-y', '-qq', '--no-install-recommends'] + need
        if subprocess.call(install, env=env, stdout=subprocess.DEVNULL) != 0:
            subprocess.check_call(sudo + ['apt-get'] + wait + ['update', '-qq'], env=env)
            subprocess.check_call(install, env=env, stdout=subprocess.DEVNULL)
        still = missing_packages(groups)
        if still:
            raise RuntimeError('installed %s, but these still lack their commands: %s' % (' '.join(need), still))
    return need


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

def _load_state(d):
    with open(os.path.join(os.path.abspath(d), 'state.json')) as f:
        return json.load(f)


def _privnet_join_lines(pn_dir):
    st = privnet_cli.read_state(os.path.abspath(pn_dir))
    if not st or st.get('status') not in ('ready', 'degraded'):
        raise SystemExit('no ready privnet in %s' % pn_dir)
    return st['join_torrc_lines']


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def cmd_up(args):
    ensure_packages()
    if args.dir and os.path.exists(os.path.join(args.dir, 'state.json')):
        try:
            old = _load_state(args.dir)
        except (OSError, ValueError):
            old = {}
        if any(procs.pid_alive(h['pid'], h['starttime']) for h in old.get('hosts', []) if h.get('pid')):
            print('a bed is already up in %s' % args.dir, file=sys.stderr)
            return 1
        teardown_state(old)
    join = _privnet_join_lines(args.privnet) if args.privnet else None
    bed = HostBed(n=args.n, base_dir=args.dir, privnet_join_lines=join, stock=args.stock, suites=args.suite,
                  apt_packages=_package_list(args.apt_packages))
    # A SIGTERM during up tears down what was started (as SIGINT does).
    signal.signal(signal.SIGTERM, _interrupt)
    bed.up()
    # From here on the nspawns outlive this process: 'down' stops them.
    bed.owner_pid = None
    bed.write_inventory(args.inventory_out)
    bed.save()
    print(bed.inventory_path)
    print('# %d hosts up in %.1fs; stop with: %s down --dir %s' % (bed.n, bed.timings['total'], sys.argv[0],
                                                                  bed.base_dir), file=sys.stderr)
    return 0


def _package_list(values):
    return [p for v in values or [] for p in v.replace(',', ' ').split()]


def cmd_apt_repo(args):
    repo = AptRepo(_package_list(args.packages), RootfsCache(args.suite))
    t0 = time.monotonic()
    print(repo.ensure())
    print('# %s in %.1fs' % ('built' if repo.built else 'cached', time.monotonic() - t0), file=sys.stderr)
    return 0


def cmd_down(args):
    try:
        state = _load_state(args.dir)
    except (OSError, ValueError):
        print('no bed state in %s' % args.dir, file=sys.stderr)
        return 0
    t0 = time.monotonic()
    teardown_state(state)
    for reg in glob.glob(os.path.join(beds_dir(), 'bed-%s.json' % state.get('run_id'))):
        _forget(reg)
    print('hosts down in %.1fs' % (time.monotonic() - t0))
    return 0


def _forget(reg):
    """A bed's registry entry removed; one that another process removed meanwhile (a bed of another lane going down
    between the glob and the read) is no error."""
    try:
        os.unlink(reg)
    except FileNotFoundError:
        pass


def cmd_cleanup(args):
    """Tear down registered beds whose owner is gone (all with --all)."""
    n = 0
    for reg in sorted(glob.glob(os.path.join(beds_dir(), 'bed-*.json'))):
        try:
            with open(reg) as f:
                entry = json.load(f)
            with open(entry['state']) as f:
                state = json.load(f)
        except (OSError, ValueError, KeyError):
            _forget(reg)
            continue
        owner = state.get('owner_pid')
        if not args.all and owner and procs.pid_alive(owner, state.get('owner_starttime')):
            continue  # an in-process bed (pytest) still running
        if not args.all and owner is None and any(
                procs.pid_alive(h['pid'], h['starttime']) for h in state.get('hosts', []) if h.get('pid')):
            print('bed %s (%s) is up (CLI); use down --dir or cleanup --all' % (state['run_id'], state['dir']))
            continue
        log('cleaning up bed %s in %s' % (state.get('run_id'), state.get('dir')))
        teardown_state(state)
        _forget(reg)
        n += 1
    for partial in glob.glob(os.path.join(cache_dir(), 'rootfs-*.partial-*')) + glob.glob(
            os.path.join(cache_dir(), 'apt-*.partial-*')):
        pid = partial.rsplit('-', 1)[1]
        if pid.isdigit() and not procs.pid_alive(int(pid)):
            log('removing partial tree %s' % partial)
            shutil.rmtree(partial, ignore_errors=True)
    print('cleaned up %d bed(s)' % n)
    return 0


def cmd_inventory(args):
    state = _load_state(args.dir)
    with open(state['inventory']) as f:
        sys.stdout.write(f.read())
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = p.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('up')
    s.add_argument('--dir')
    s.add_argument('-n', type=int, default=3)
    s.add_argument('--privnet', metavar='PRIVNET_DIR', help='join the privnet.py network started in this dir')
    s.add_argument('--inventory-out', help='also write the inventory here: INI when FILE ends in .ini, else JSON '
                                           '(which is YAML)')
    s.add_argument('--suite', action='append', choices=sorted(SUITES),
                   help='release of the hosts, once per host in turn (default: this machine\'s)')
    s.add_argument('--stock', action='store_true',
                   help="tor as Debian ships it: stock /etc/tor/torrc, control socket /run/tor/control")
    s.add_argument('--apt-packages', action='append', metavar='PKG[,PKG]',
                   help='Debian packages the hosts can apt-get install, from a local repository built '
                        'once on this machine (e.g. onionbalance)')
    s = sub.add_parser('apt-repo')
    s.add_argument('packages', nargs='+')
    s.add_argument('--suite', choices=sorted(SUITES))
    s = sub.add_parser('down')
    s.add_argument('--dir', required=True)
    s = sub.add_parser('cleanup')
    s.add_argument('--all', action='store_true', help='also beds that look alive')
    s = sub.add_parser('inventory')
    s.add_argument('--dir', required=True)
    sub.add_parser('ensure-packages')
    args = p.parse_args(argv)
    if args.cmd == 'ensure-packages':
        ensure_packages(PACKAGE_GROUPS)
        return 0
    return {'up': cmd_up, 'down': cmd_down, 'cleanup': cmd_cleanup, 'inventory': cmd_inventory,
            'apt-repo': cmd_apt_repo}[args.cmd](args)


if __name__ == '__main__':
    sys.exit(main())
