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
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

try:  # imported as harness.hosts (pytest) or run as a script
    from . import privnet
except ImportError:  # pragma: no cover
    import privnet

PACKAGES = ['systemd', 'systemd-sysv', 'dbus', 'openssh-server', 'python3', 'python3-apt', 'tor', 'iproute2',
            'ca-certificates']
# Bump when the base rootfs recipe changes: the cache key includes it.
# 2: Debian's packaged /etc/tor/torrc kept as STOCK_TORRC (stock hosts get it back).
RECIPE_VERSION = 2
MARKER = '.onionlab-rootfs.json'
ESSENTIAL = ['usr/lib/systemd/systemd', 'usr/sbin/sshd', 'usr/bin/python3', 'usr/bin/tor',
             'etc/ssh/sshd_config', 'usr/share/tor/tor-service-defaults-torrc']
# What this machine (the controller) needs from Debian's packages, by group: a command (or file)
# -> the package that has it. ./run installs tor, python3-venv and git itself (before .venv exists).
#   bed: the nspawn hosts (HostBed, `up`, the demo);
#   tests: what the tests run besides: the private network's tor-gencert, Onionbalance on the
#     private network (test_privnet_onionbalance.py), a real Prometheus (test_metrics_*.py) and
#     Alertmanager (test_onionprobe_bed.py; amtool checks the prometheus role's configuration), curl
#     beside tor_onion_probe (test_tor_onion_probe.py).
CONTROLLER_PACKAGES = {
    'bed': {'systemd-nspawn': 'systemd-container', 'debootstrap': 'debootstrap',
            'ssh': 'openssh-client', 'ssh-keygen': 'openssh-client', 'dpkg-deb': 'dpkg'},
    'tests': {'tor': 'tor', 'tor-gencert': 'tor', 'onionbalance': 'onionbalance',
              '/usr/bin/prometheus': 'prometheus', '/usr/bin/promtool': 'prometheus', 'curl': 'curl',
              '/usr/bin/prometheus-alertmanager': 'prometheus-alertmanager',
              '/usr/bin/amtool': 'prometheus-alertmanager'},
}
PACKAGE_GROUPS = tuple(CONTROLLER_PACKAGES)
APT_PACKAGES = CONTROLLER_PACKAGES['bed']  # the name before the groups
SSH_BASE_PORT = 2200
DEFAULT_MIRROR = 'http://deb.debian.org/debian'
UBUNTU_MIRROR = os.environ.get('ONIONLAB_UBUNTU_MIRROR', 'http://archive.ubuntu.com/ubuntu')
# The releases a bed can boot, and what debootstrap needs for each besides PACKAGES: Ubuntu's
# tor is in universe; debootstrap 1.0.128 (bookworm) has no 'noble' script, jammy's fits it.
SUITES = {
    'bookworm': {'vendor': 'debian', 'components': 'main'},
    'trixie': {'vendor': 'debian', 'components': 'main'},
    'jammy': {'vendor': 'ubuntu', 'components': 'main,universe'},
    'noble': {'vendor': 'ubuntu', 'components': 'main,universe', 'script': 'jammy'},
}
DEBOOTSTRAP_SCRIPTS = '/usr/share/debootstrap/scripts'
UBUNTU_KEYRING = '/usr/share/keyrings/ubuntu-archive-keyring.gpg'
KEYRING_SUITE = 'trixie'  # the Debian release whose ubuntu-keyring package gives Ubuntu's keyring


def log(msg):
    print('[hosts %7.2f] %s' % (time.monotonic() % 10000, msg), file=sys.stderr, flush=True)


cache_dir = privnet.cache_dir


def beds_dir():
    d = os.path.join(cache_dir(), 'beds')
    os.makedirs(d, exist_ok=True)
    return d


# ---------------------------------------------------------------------------
# packages and mirror
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


def _parse_one_line_sources(text):
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if not line.startswith('deb '):
            continue
        words = line.split()[1:]
        if words and words[0].startswith('['):  # options: [arch=amd64 signed-by=...]
            while words and not words[0].endswith(']'):
                words.pop(0)
            words.pop(0)
        if len(words) >= 2:
            yield words[0], words[1]


def _parse_deb822_sources(text):
    for stanza in text.split('\n\n'):
        fields, key = {}, None
        for line in stanza.splitlines():
            if line.startswith('#') or not line.strip():
                continue
            if line[0] in ' \t' and key:
                fields[key] += ' ' + line.strip()
                continue
            key, _, value = line.partition(':')
            key = key.strip().lower()
            fields[key] = value.strip()
        if fields.get('enabled', 'yes').lower() == 'no':
            continue
        if 'deb' not in fields.get('types', '').split():
            continue
        for uri in fields.get('uris', '').split():
            for suite in fields.get('suites', '').split():
                yield uri, suite


def apt_mirror(suite, root='/etc/apt'):
    """The first enabled 'deb' source for exactly this suite (not -updates/-security)."""
    files = [os.path.join(root, 'sources.list')] + sorted(glob.glob(os.path.join(root, 'sources.list.d', '*')))
    for path in files:
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        if path.endswith('.sources'):
            entries = _parse_deb822_sources(text)
        elif path.endswith('.list'):
            entries = _parse_one_line_sources(text)
        else:
            continue  # apt ignores other names too
        for uri, s in entries:
            if s == suite and not uri.startswith(('cdrom:', 'file:')):
                return uri.rstrip('/')
    return UBUNTU_MIRROR if SUITES.get(suite, {}).get('vendor') == 'ubuntu' else DEFAULT_MIRROR


def ubuntu_keyring():
    """Ubuntu's archive keyring: the host's (package ubuntu-keyring, from trixie on), else made
    once from Debian trixie's ubuntu-keyring package: its Filename and SHA256 from the Packages
    index of the cached trixie tree (verified by debootstrap), the .deb from the Debian mirror."""
    if os.path.exists(UBUNTU_KEYRING):
        return UBUNTU_KEYRING
    dest = os.path.join(cache_dir(), 'ubuntu-keyring')
    path = os.path.join(dest, UBUNTU_KEYRING.lstrip('/'))
    with open(os.path.join(cache_dir(), 'ubuntu-keyring.lock'), 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # jammy and noble builds ask at the same time
        if not os.path.exists(path):
            _make_ubuntu_keyring(dest)
    return path


def _make_ubuntu_keyring(dest):
    root = RootfsCache(KEYRING_SUITE).ensure()
    lists = glob.glob(os.path.join(root, 'var/lib/apt/lists/*_main_binary-*_Packages'))
    fields = {}
    for path_ in lists[:1]:
        with open(path_, errors='replace') as f:
            for stanza in f.read().split('\n\n'):
                if '\nPackage: ubuntu-keyring\n' in '\n' + stanza + '\n':
                    fields = dict(line.split(': ', 1) for line in stanza.splitlines()
                                  if line.startswith(('Filename: ', 'SHA256: ')))
    if not fields:
        raise RuntimeError('no ubuntu-keyring in the Packages index of %s' % root)
    import urllib.request
    with urllib.request.urlopen('%s/%s' % (apt_mirror(KEYRING_SUITE), fields['Filename']), timeout=60) as r:
        data = r.read()
    if hashlib.sha256(data).hexdigest() != fields['SHA256']:
        raise RuntimeError('ubuntu-keyring: SHA256 differs from the Packages index')
    tmp = tempfile.mkdtemp(dir=cache_dir())
    deb = os.path.join(tmp, 'ubuntu-keyring.deb')
    with open(deb, 'wb') as f:
        f.write(data)
    subprocess.check_call(['dpkg-deb', '-x', deb, tmp])
    os.unlink(deb)
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)


def host_suite():
    try:
        with open('/etc/os-release') as f:
            for line in f:
                if line.startswith('VERSION_CODENAME='):
                    return line.split('=', 1)[1].strip().strip('"') or 'bookworm'
    except OSError:
        pass
    return 'bookworm'


# ---------------------------------------------------------------------------
# base rootfs cache
# ---------------------------------------------------------------------------

class RootfsCache:
    def __init__(self, suite=None, mirror=None):
        self.suite = suite or host_suite()
        self.mirror = mirror or apt_mirror(self.suite)
        key = hashlib.sha256(json.dumps([RECIPE_VERSION, self.suite, PACKAGES]).encode()).hexdigest()[:10]
        self.path = os.path.join(cache_dir(), 'rootfs-%s-%s' % (self.suite, key))
        self.lock_path = os.path.join(cache_dir(), 'rootfs-%s.lock' % self.suite)  # releases build in parallel
        self.built = False  # True if this run had to debootstrap

    def complete(self):
        try:
            with open(os.path.join(self.path, MARKER)) as f:
                json.load(f)
        except (OSError, ValueError):
            return False
        return all(os.path.exists(os.path.join(self.path, p)) for p in ESSENTIAL)

    def _lock(self, mode):
        f = open(self.lock_path, 'a')
        fcntl.flock(f, mode)
        return f

    def ensure(self):
        """Build the cached rootfs if needed; return its path."""
        with self._lock(fcntl.LOCK_SH):
            if self.complete():
                return self.path
        with self._lock(fcntl.LOCK_EX):
            if self.complete():  # somebody else built it meanwhile
                return self.path
            self._build()
        return self.path

    def _build(self):
        t0 = time.monotonic()
        for stale in [self.path] + glob.glob(self.path + '.partial*'):
            if os.path.exists(stale):
                log('removing partial rootfs %s' % stale)
                shutil.rmtree(stale, ignore_errors=True)
        tmp = '%s.partial-%d' % (self.path, os.getpid())
        log('debootstrap %s from %s (once; cached in %s)' % (self.suite, self.mirror, self.path))
        spec = SUITES.get(self.suite, {'vendor': 'debian', 'components': 'main'})
        cmd = ['debootstrap', '--variant=minbase', '--components=' + spec['components'],
               '--include=' + ','.join(PACKAGES)]
        if spec['vendor'] == 'ubuntu':
            cmd.append('--keyring=' + ubuntu_keyring())
        cmd += [self.suite, tmp, self.mirror]
        if spec.get('script') and not os.path.exists(os.path.join(DEBOOTSTRAP_SCRIPTS, self.suite)):
            cmd.append(os.path.join(DEBOOTSTRAP_SCRIPTS, spec['script']))
        logfile = self.path + '.debootstrap.log'
        with open(logfile, 'wb') as lf:
            rc = subprocess.call(cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if rc != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            with open(logfile, errors='replace') as lf:
                tail = lf.read()[-2000:]
            raise RuntimeError('debootstrap failed (rc %d), see %s:\n%s' % (rc, logfile, tail))
        self._customise(tmp)
        with open(os.path.join(tmp, MARKER), 'w') as f:
            json.dump({'recipe': RECIPE_VERSION, 'suite': self.suite, 'mirror': self.mirror,
                       'packages': PACKAGES, 'built': time.time()}, f)
        os.rename(tmp, self.path)
        self.built = True
        log('rootfs built in %.1fs' % (time.monotonic() - t0))

    @staticmethod
    def _customise(root):
        """Host-independent changes made once in the cache."""
        mask_units(root)
        _write(os.path.join(root, 'etc/resolv.conf'), 'nameserver 127.0.0.1\n')
        _write(os.path.join(root, 'etc/machine-id'), '')
        # No package downloads from inside a host.
        for d in glob.glob(os.path.join(root, 'var/cache/apt/archives/*.deb')):
            os.unlink(d)
        # The packaged default torrc would open SocksPort 9050 and go online:
        # replace it with a disabled one until a host gets its own; keep the
        # package's file, byte for byte, for stock hosts.
        shutil.copy2(os.path.join(root, 'etc/tor/torrc'), os.path.join(root, STOCK_TORRC.lstrip('/')))
        _write(os.path.join(root, 'etc/tor/torrc'), 'DisableNetwork 1\nSocksPort 0\n')


# Units that would reach the network or make no sense in a container
# (systemd-remount-fs sometimes fails there and marks the system degraded).
MASKED_UNITS = ('apt-daily.timer', 'apt-daily-upgrade.timer', 'apt-daily.service', 'apt-daily-upgrade.service',
                'e2scrub_all.timer', 'fstrim.timer', 'systemd-timesyncd.service', 'getty@tty1.service',
                'console-getty.service', 'systemd-remount-fs.service')


def mask_units(root):
    sysd = os.path.join(root, 'etc/systemd/system')
    os.makedirs(sysd, exist_ok=True)
    for unit in MASKED_UNITS:
        link = os.path.join(sysd, unit)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink('/dev/null', link)


def _write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.islink(path):
        os.unlink(path)
    with open(path, 'w') as f:
        f.write(text)
    os.chmod(path, mode)


# ---------------------------------------------------------------------------
# a local apt repository for the hosts
# ---------------------------------------------------------------------------

APT_REPO_MOUNT = '/srv/onionlab-apt'  # where a host sees the repository (read-only bind mount)
APT_REPO_SOURCE = '/etc/apt/sources.list.d/onionlab-local.list'
APT_REPO_VERSION = 1  # bump when the repository recipe changes (part of the cache key)


class AptRepo:
    """The .debs a host needs to ``apt-get install PACKAGES`` on top of the cached rootfs of one
    suite, as a flat repository (``Packages`` + ``Release``) in ``~/.cache/onionlab/apt-SUITE-KEY``.

    Built once on the controller, a pure download: apt-get with the rootfs's dpkg status, sources
    and keyring but lists and archives of its own (``--download-only``: nothing is installed
    anywhere), so it fetches exactly what the rootfs lacks; a warm run finds the finished
    repository (its marker) and downloads nothing.  Each host gets it read-only at
    ``APT_REPO_MOUNT``, an apt source ``deb [trusted=yes] file:APT_REPO_MOUNT ./`` and the index in
    its apt lists (as after an ``apt-get update``), so ``apt install PACKAGE`` (Ansible's apt module
    without update_cache) works as on a real host, and everything else still fails offline."""

    def __init__(self, packages, rootfs):
        self.packages = sorted(set(packages))
        self.rootfs = rootfs  # a RootfsCache
        key = hashlib.sha256(json.dumps([APT_REPO_VERSION, os.path.basename(rootfs.path),
                                         self.packages]).encode()).hexdigest()[:10]
        self.path = os.path.join(cache_dir(), 'apt-%s-%s' % (rootfs.suite, key))
        self.lock_path = os.path.join(cache_dir(), 'apt-%s.lock' % rootfs.suite)
        self.built = False
        self.seconds = 0.0

    def complete(self):
        return os.path.exists(os.path.join(self.path, MARKER)) and os.path.exists(os.path.join(self.path, 'Packages'))

    def ensure(self):
        """Build the repository if needed (the rootfs first); return its path."""
        root = self.rootfs.ensure()
        with open(self.lock_path, 'a') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not self.complete():
                self._build(root)
        return self.path

    def _build(self, root):
        t0 = time.monotonic()
        tmp = '%s.partial-%d' % (self.path, os.getpid())
        for stale in [self.path, tmp]:
            shutil.rmtree(stale, ignore_errors=True)
        work = os.path.join(tmp, '.apt')
        empty = os.path.join(work, 'empty')
        for d in ('lists/partial', 'archives/partial', 'cache', 'empty'):
            os.makedirs(os.path.join(work, d), exist_ok=True)
        opts = []
        for k, v in [('Dir::State::status', os.path.join(root, 'var/lib/dpkg/status')),
                     ('Dir::Etc::sourcelist', os.path.join(root, 'etc/apt/sources.list')),
                     ('Dir::Etc::sourceparts', os.path.join(root, 'etc/apt/sources.list.d')),
                     ('Dir::Etc::trusted', os.path.join(empty, 'trusted.gpg')),
                     ('Dir::Etc::trustedparts', os.path.join(root, 'etc/apt/trusted.gpg.d')),
                     ('Dir::Etc::preferencesparts', empty),
                     ('Dir::State::Lists', os.path.join(work, 'lists')),
                     ('Dir::Cache', os.path.join(work, 'cache')),
                     ('Dir::Cache::archives', os.path.join(work, 'archives')),
                     ('APT::Sandbox::User', 'root'), ('Debug::NoLocking', '1'),
                     ('Acquire::Languages', 'none')]:
            opts += ['-o', '%s=%s' % (k, v)]
        log('apt repo for %s: downloading %s and what %s lacks (once; cached in %s)'
            % (self.rootfs.suite, ' '.join(self.packages), os.path.basename(root), self.path))
        env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
        for cmd in (['apt-get', '-q'] + opts + ['update'],
                    ['apt-get', '-q', '-y'] + opts + ['install', '--download-only', '--no-install-recommends']
                    + self.packages):
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                               stdin=subprocess.DEVNULL)
            if r.returncode != 0:
                shutil.rmtree(tmp, ignore_errors=True)
                raise RuntimeError('apt repo for %s: %s failed (rc %d):\n%s' % (
                    self.rootfs.suite, cmd[-1], r.returncode, r.stdout.decode(errors='replace')[-2000:]))
        debs = sorted(glob.glob(os.path.join(work, 'archives', '*.deb')))
        for deb in debs:
            os.rename(deb, os.path.join(tmp, os.path.basename(deb)))
        shutil.rmtree(work)
        write_flat_repo(tmp)
        with open(os.path.join(tmp, MARKER), 'w') as f:
            json.dump({'version': APT_REPO_VERSION, 'suite': self.rootfs.suite, 'rootfs': self.rootfs.path,
                       'packages': self.packages, 'debs': [os.path.basename(d) for d in debs],
                       'built': time.time()}, f)
        os.rename(tmp, self.path)
        self.built = True
        self.seconds = time.monotonic() - t0
        log('apt repo for %s: %d .debs in %.1fs' % (self.rootfs.suite, len(debs), self.seconds))


def write_flat_repo(d):
    """Packages and Release for the .debs in d (what dpkg-scanpackages + apt-ftparchive make):
    each .deb's control fields (dpkg-deb -f) with its Filename, Size and hashes."""
    stanzas = []
    for deb in sorted(glob.glob(os.path.join(d, '*.deb'))):
        control = subprocess.run(['dpkg-deb', '-f', deb], stdout=subprocess.PIPE, check=True).stdout.decode()
        with open(deb, 'rb') as f:
            data = f.read()
        stanzas.append(control.rstrip('\n') + '\nFilename: ./%s\nSize: %d\nMD5sum: %s\nSHA256: %s\n' % (
            os.path.basename(deb), len(data), hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest()))
    text = '\n'.join(stanzas).encode()
    with open(os.path.join(d, 'Packages'), 'wb') as f:
        f.write(text)
    with open(os.path.join(d, 'Release'), 'w') as f:
        f.write('Origin: onionlab-testbed\nLabel: onionlab-testbed\nDate: %s\n'
                'MD5Sum:\n %s %d Packages\nSHA256:\n %s %d Packages\n' % (
                    time.strftime('%a, %d %b %Y %H:%M:%S UTC', time.gmtime()),
                    hashlib.md5(text).hexdigest(), len(text), hashlib.sha256(text).hexdigest(), len(text)))


def apt_lists_name(uri_path, name):
    """The file in /var/lib/apt/lists that apt-get update makes for a flat file: source."""
    return (uri_path.strip('/') and '_' + uri_path.strip('/').replace('/', '_')) + '_._' + name


def give_apt_repo(root, repo_path):
    """The host's apt source and index for the repository mounted at APT_REPO_MOUNT."""
    _write(os.path.join(root, APT_REPO_SOURCE.lstrip('/')),
           '# the bed\'s local repository (tests/harness/hosts.py AptRepo), read-only\n'
           'deb [trusted=yes] file:%s ./\n' % APT_REPO_MOUNT)
    lists = os.path.join(root, 'var/lib/apt/lists')
    os.makedirs(lists, exist_ok=True)
    for name in ('Release', 'Packages'):
        shutil.copyfile(os.path.join(repo_path, name), os.path.join(lists, apt_lists_name(APT_REPO_MOUNT, name)))


# ---------------------------------------------------------------------------
# the bed
# ---------------------------------------------------------------------------

def port_free(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(('127.0.0.1', port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def choose_ssh_ports(n, claimed=()):
    """A block 22N1..22Nn (N = 0, 1, ...) of free ports that no other bed claims."""
    for base in range(SSH_BASE_PORT, 2900, 10 if n < 10 else 100):
        ports = [base + i for i in range(1, n + 1)]
        if not set(ports) & set(claimed) and all(port_free(p) for p in ports):
            return ports
    raise RuntimeError('no free block of ssh ports from %d' % SSH_BASE_PORT)


APP_PORTS = 4  # backend ports per host (testbed_app_ports)


def claimed_ports(exclude_state=None):
    """Ports held by the registered beds (their sshd may not listen yet)."""
    ports = set()
    for reg in glob.glob(os.path.join(beds_dir(), 'bed-*.json')):
        try:
            with open(reg) as f:
                path = json.load(f)['state']
            if path == exclude_state:
                continue
            with open(path) as f:
                for h in json.load(f).get('hosts', []):
                    ports.update(h.get(k) for k in ('ssh_port', 'tor_control_port', 'tor_socks_port',
                                                    'tor_or_port'))
                    ports.update(h.get('app_ports') or [])
        except (OSError, ValueError, KeyError):
            continue
    ports.discard(None)
    return ports


CLIENT_AUTH_DIR = '/var/lib/tor/onion_auth'
# A shell command for a stock host: wait (up to 30 s) until tor's ControlSocket accepts a connection
# (after boot or a restart tor opens it about a second after systemd calls it started).
def wait_control_socket_script(timeout=30):
    """A shell command for a stock host: wait until tor's ControlSocket accepts a connection (tor
    opens it about a second after systemd calls it started, and the file exists from bind(), before
    listen()); on failure it prints the unit's status and exits 1."""
    return ("python3 - <<'EOF' || { systemctl status tor@default --no-pager; exit 1; }\n"
            "import socket, sys, time\n"
            "deadline = time.monotonic() + %d\n"
            "while True:\n"
            "    try:\n"
            "        s = socket.socket(socket.AF_UNIX); s.connect('/run/tor/control'); s.close(); break\n"
            "    except OSError as exc:\n"
            "        if time.monotonic() > deadline: sys.exit('tor control socket: %%s' %% exc)\n"
            "        time.sleep(0.1)\n"
            "EOF" % timeout)


WAIT_CONTROL_SOCKET = wait_control_socket_script(30)
# Restart a stock host's tor and wait until its control socket accepts a connection (the socket
# file exists from bind(); `test -S` alone let a test connect before listen()).
RESTART_TOR = 'systemctl restart tor@default && ' + WAIT_CONTROL_SOCKET
START_TOR = 'systemctl start tor@default && ' + WAIT_CONTROL_SOCKET
# Debian's packaged /etc/tor/torrc, kept in the cached tree (every line a comment)
STOCK_TORRC = '/etc/tor/torrc.onionlab-stock'
DEFAULTS_TORRC = '/usr/share/tor/tor-service-defaults-torrc'


def _tor_ids(root):
    """uid and gid of debian-tor in the host's tree (-1, -1 when it has none)."""
    try:
        with open(os.path.join(root, 'etc/passwd')) as f:
            for line in f:
                fields = line.split(':')
                if fields[0] == 'debian-tor' and len(fields) > 3:
                    return int(fields[2]), int(fields[3])
    except OSError:
        pass
    return -1, -1


def host_torrc(host, join_lines):
    lines = [
        '# written by tests/harness/hosts.py for %s' % host['name'],
        'Nickname %s' % host['name'].replace('-', ''),
        # ExtendedErrors: tor's onion service reply codes (0xf0-0xf7, e.g. missing client authorization)
        'SocksPort 127.0.0.1:%d ExtendedErrors' % host['tor_socks_port'],
        'ControlPort 127.0.0.1:%d' % host['tor_control_port'],
        'CookieAuthentication 1',
        # client authorization keys given with Flags=Permanent (the onion_client role) live here
        'ClientOnionAuthDir %s' % CLIENT_AUTH_DIR,
    ]
    if join_lines:
        lines += ['# joins the private test network (privnet.py)'] + list(join_lines)
    else:
        lines += ['# no private network: stay offline', 'DisableNetwork 1']
    return '\n'.join(lines) + '\n'


# Offline without DisableNetwork: with `User` set and DisableNetwork 1 at start, tor 0.4.9 never
# opens a unix ControlSocket (it defers unix listeners past the privileged phase and retries
# listeners only while the network is enabled; measured: the socket appears 1 s after start
# without DisableNetwork, never with it). So a stock host's tor knows one directory authority, on
# 127.0.0.1:1 where nothing listens, and no fallback directories: all it ever dials is that.
STOCK_OFFLINE_LINES = (
    'UseDefaultFallbackDirs 0',
    'DirAuthority onionlaboffline orport=1 127.0.0.1:1 0000000000000000000000000000000000000000',
)


def stock_defaults_torrc(text, host, join_lines):
    """Debian's tor-service-defaults-torrc for a stock host: as packaged (ControlSocket
    /run/tor/control, cookie /run/tor/control.authcookie, DataDirectory /var/lib/tor) except
    that its TCP SocksPort 9050, which every host would share, becomes the host's own port on
    127.0.0.1, and the lines that keep tor off the real network come last."""
    out = []
    for line in text.splitlines():
        if line.split() == ['SocksPort', '9050']:
            line = 'SocksPort 127.0.0.1:%d ExtendedErrors' % host['tor_socks_port']
        out.append(line)
    out.append('# onionlab testbed: the network this host may use (/etc/tor/torrc is the stock one)')
    out += list(join_lines) if join_lines else list(STOCK_OFFLINE_LINES)
    return '\n'.join(out) + '\n'


class HostBed:
    """N hosts; ``with HostBed(n=3) as bed: bed.inventory_path ...``"""

    def __init__(self, n=3, base_dir=None, privnet_join_lines=None, name_prefix='host',
                 boot_timeout=120.0, grace=15.0, layout=None, stock=False, suites=None, apt_packages=None):
        """stock: the hosts run tor as Debian ships it (stock /etc/tor/torrc, ControlSocket
        /run/tor/control and its cookie, no ControlPort, no ClientOnionAuthDir), kept off the
        real network by the last lines of the defaults torrc (see stock_defaults_torrc).
        apt_packages: Debian packages the hosts can apt-get install from a local repository
        (AptRepo, built once per suite on the controller), e.g. ['onionbalance']."""
        if n < 1:
            raise ValueError('n must be >= 1')
        # 'overlay': an overlayfs per host over the cached tree (instant, a few MB each);
        # 'copy': cp -a of the tree (~330 MB and 1-4 s per host).
        self.layout = layout or os.environ.get('ONIONLAB_HOSTS_LAYOUT') or (
            'overlay' if overlay_supported() else 'copy')
        self.n = n
        self.created_dir = base_dir is None
        self.base_dir = os.path.abspath(base_dir or tempfile.mkdtemp(prefix='onionlab-hosts-', dir='/var/tmp'))
        os.makedirs(self.base_dir, mode=0o700, exist_ok=True)
        self.join_lines = list(privnet_join_lines or [])
        self.name_prefix = name_prefix
        self.stock = stock
        # host i runs suites[i % len(suites)] (default: this machine's release)
        self.suites = list(suites or [host_suite()])
        self.apt_packages = sorted(set(apt_packages or []))
        self.apt_repos = {}  # suite -> path of its AptRepo
        self.boot_timeout = boot_timeout
        self.grace = grace
        self.run_id = uuid.uuid4().hex[:6]
        self.hosts = []
        self.procs = {}
        self.timings = {}
        self.key = os.path.join(self.base_dir, 'id_ed25519')
        self.state_path = os.path.join(self.base_dir, 'state.json')
        self.inventory_path = os.path.join(self.base_dir, 'inventory.yml')
        self.registry = os.path.join(beds_dir(), 'bed-%s.json' % self.run_id)
        self.owner_pid = os.getpid()

    # -- state -----------------------------------------------------------
    def state(self):
        return {
            'run_id': self.run_id, 'dir': self.base_dir, 'created_dir': self.created_dir,
            'owner_pid': self.owner_pid,
            'owner_starttime': privnet.proc_starttime(self.owner_pid) if self.owner_pid else None,
            'key': self.key, 'inventory': self.inventory_path, 'hosts': self.hosts,
            'joined_privnet': bool(self.join_lines), 'stock': self.stock, 'timings': self.timings, 'layout': self.layout,
            'apt_packages': self.apt_packages, 'apt_repos': self.apt_repos,
        }

    def save(self):
        tmp = self.state_path + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(self.state(), f, indent=2)
        os.replace(tmp, self.state_path)
        # Atomically too: other beds read it (claimed_ports) while this one saves.
        tmp = '%s.%d.tmp' % (self.registry, os.getpid())
        with open(tmp, 'w') as f:
            json.dump({'state': self.state_path, 'dir': self.base_dir}, f)
        os.replace(tmp, self.registry)

    # -- lifecycle -------------------------------------------------------
    def up(self):
        t0 = time.monotonic()
        try:
            self._up(t0)
        except BaseException:
            self.down()
            raise
        return self

    def _up(self, t0):
        self.save()
        caches = {s: RootfsCache(s) for s in dict.fromkeys(self.suites)}
        errors = []

        repos = {s: AptRepo(self.apt_packages, c) for s, c in caches.items()} if self.apt_packages else {}

        def ensure(c):
            try:
                c.ensure()
                if c.suite in repos:
                    self.apt_repos[c.suite] = repos[c.suite].ensure()
            except BaseException as e:  # noqa: BLE001  (re-raised below)
                errors.append(e)
        import threading
        threads = [threading.Thread(target=ensure, args=(c,)) for c in caches.values()]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if errors:
            raise errors[0]
        self.timings['rootfs'] = time.monotonic() - t0
        self.timings['rootfs_built'] = any(c.built for c in caches.values())
        if repos:
            self.timings['apt_repo'] = sum(r.seconds for r in repos.values())
            self.timings['apt_repo_built'] = any(r.built for r in repos.values())
        for old in (self.key, self.key + '.pub'):
            if os.path.exists(old):
                os.unlink(old)
        subprocess.check_call(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'onionlab-testbed',
                               '-f', self.key])
        with open(self.key + '.pub') as f:
            pubkey = f.read()
        # Choose and record the ports under a lock: two beds starting together
        # (e.g. both waiting for the same rootfs build) must not pick the same.
        with open(os.path.join(cache_dir(), 'ports.lock'), 'a') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            claimed = claimed_ports(self.state_path)
            self._assign_ports(claimed)
            log('ports: ssh %s (claimed by other beds: %d)' % ([h['ssh_port'] for h in self.hosts], len(claimed)))
            self.save()
        self._give_trees(caches, pubkey, t0)

    def _assign_ports(self, claimed):
        ssh_ports = choose_ssh_ports(self.n, claimed)
        per_host = 3 + APP_PORTS
        tor_ports = [p for p in privnet.free_ports(per_host * self.n + len(claimed)) if p not in claimed]
        tor_ports = iter(tor_ports[:per_host * self.n])
        for i in range(self.n):
            name = '%s%d' % (self.name_prefix, i + 1)
            self.hosts.append({
                'suite': self.suites[i % len(self.suites)], 'name': name, 'machine': 'onionlab-%s-%s' % (self.run_id, name),
                'root': os.path.join(self.base_dir, name, 'root'), 'ssh_port': ssh_ports[i],
                'tor_control_port': next(tor_ports), 'tor_socks_port': next(tor_ports),
                'tor_or_port': next(tor_ports), 'app_ports': [next(tor_ports) for _ in range(APP_PORTS)],
                'pid': None, 'starttime': None,
                'log': os.path.join(self.base_dir, name + '.console.log'), 'mount': None,
            })

    def _give_trees(self, caches, pubkey, t0):
        # Give each host its tree, under shared locks so the caches are not rebuilt meanwhile.
        import contextlib
        t1 = time.monotonic()
        with contextlib.ExitStack() as locks:
            for cache in caches.values():
                locks.enter_context(cache._lock(fcntl.LOCK_SH))
                if not cache.complete():
                    raise RuntimeError('rootfs cache %s vanished' % cache.path)
            if self.layout == 'overlay':
                for h in self.hosts:
                    self._mount_overlay(h, caches[h['suite']].path)
            else:
                for h in self.hosts:
                    os.makedirs(os.path.dirname(h['root']), exist_ok=True)
                cps = [subprocess.Popen(['cp', '-a', '--reflink=auto', caches[h['suite']].path, h['root']])
                       for h in self.hosts]
                for h, p in zip(self.hosts, cps):
                    if p.wait() != 0:
                        raise RuntimeError('copying the rootfs for %s failed' % h['name'])
        self.timings['copy'] = time.monotonic() - t1
        for h in self.hosts:
            self._personalise(h, pubkey)
        t2 = time.monotonic()
        ensure_inotify_instances()
        for h in self.hosts:
            self._boot(h)
        self.save()
        self._wait_ssh()
        if self.stock:
            self._wait_control_socket()
        self.timings['boot'] = time.monotonic() - t2
        self.write_inventory()
        self.timings['total'] = time.monotonic() - t0
        self.save()
        log('%d hosts up in %.1fs (rootfs %.1fs%s, %s %.1fs, boot to ssh+systemd %.1fs)' % (
            self.n, self.timings['total'], self.timings['rootfs'], ' built' if self.timings['rootfs_built'] else ' cached',
            self.layout, self.timings['copy'], self.timings['boot']))

    def _mount_overlay(self, h, rootfs):
        top = os.path.dirname(h['root'])
        for sub in ('upper', 'work', 'root'):
            os.makedirs(os.path.join(top, sub), exist_ok=True)
        h['mount'] = h['root']
        self.save()  # the mount is recorded before it exists: teardown/cleanup find it
        subprocess.check_call(['mount', '-t', 'overlay', 'overlay', '-o',
                               'lowerdir=%s,upperdir=%s,workdir=%s' % (rootfs, os.path.join(top, 'upper'),
                                                                       os.path.join(top, 'work')),
                               h['root']])

    def _personalise(self, h, pubkey):
        root = h['root']
        mask_units(root)  # again: the cached tree may come from an older recipe
        _write(os.path.join(root, 'etc/hostname'), h['name'] + '\n')
        _write(os.path.join(root, 'etc/hosts'), '127.0.0.1\tlocalhost %s\n::1\tlocalhost\n' % h['name'])
        _write(os.path.join(root, 'etc/machine-id'), uuid.uuid4().hex + '\n', 0o444)
        os.makedirs(os.path.join(root, 'root/.ssh'), mode=0o700, exist_ok=True)
        _write(os.path.join(root, 'root/.ssh/authorized_keys'), pubkey, 0o600)
        _write(os.path.join(root, 'etc/ssh/sshd_config.d/onionlab-testbed.conf'),
               'Port %d\nListenAddress 127.0.0.1\nPermitRootLogin prohibit-password\n'
               'PasswordAuthentication no\nUseDNS no\n' % h['ssh_port'])
        if self.stock:
            shutil.copy2(os.path.join(root, STOCK_TORRC.lstrip('/')), os.path.join(root, 'etc/tor/torrc'))
            defaults = os.path.join(root, DEFAULTS_TORRC.lstrip('/'))
            with open(defaults) as f:
                text = f.read()
            _write(defaults, stock_defaults_torrc(text, h, self.join_lines))
            h['stock'] = True
        else:
            _write(os.path.join(root, 'etc/tor/torrc'), host_torrc(h, self.join_lines))
        # tor refuses to start when its ClientOnionAuthDir is missing: made here, tor's, 0700
        auth_dir = os.path.join(root, CLIENT_AUTH_DIR.lstrip('/'))
        os.makedirs(auth_dir, mode=0o700, exist_ok=True)
        os.chmod(auth_dir, 0o700)
        os.chown(auth_dir, *_tor_ids(root))
        if h['suite'] in self.apt_repos:
            give_apt_repo(root, self.apt_repos[h['suite']])
        # A host of the bed has no way out, as on CI machines: apt inside it fails at once
        # (a proxy nobody listens on) instead of reaching a mirror, so a role that would
        # download anything when the package is already there fails here too.
        _write(os.path.join(root, 'etc/apt/apt.conf.d/99onionlab-offline'),
               'Acquire::http::Proxy "http://127.0.0.1:9/";\n'
               'Acquire::https::Proxy "http://127.0.0.1:9/";\n'
               'Acquire::Retries "0";\n')

    def _boot(self, h):
        h['cgroups'] = own_cgroups(h['machine'])
        cmd = ['systemd-nspawn', '-q', '--keep-unit', '--register=no', '-D', h['root'], '-M', h['machine'],
               '--hostname=' + h['name'], '--resolv-conf=off', '--timezone=off', '--link-journal=no',
               '-b', '--console=passive']
        if h['suite'] in self.apt_repos:
            cmd.insert(-2, '--bind-ro=%s:%s' % (self.apt_repos[h['suite']], APT_REPO_MOUNT))
        with open(h['log'], 'wb') as lf:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT,
                                 start_new_session=True, close_fds=True,
                                 preexec_fn=lambda: enter_cgroups(h['cgroups']))
        self.procs[h['name']] = p
        h['pid'] = p.pid
        h['starttime'] = privnet.proc_starttime(p.pid)

    def ssh_cmd(self, h, *command):
        return ['ssh', '-q', '-i', self.key, '-p', str(h['ssh_port']), '-o', 'BatchMode=yes',
                '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
                '-o', 'ConnectTimeout=5', 'root@127.0.0.1'] + list(command)

    def _wait_ssh(self):
        deadline = time.monotonic() + self.boot_timeout
        pending = list(self.hosts)
        while pending:
            for h in list(pending):
                p = self.procs.get(h['name'])
                if p is not None and p.poll() is not None:
                    with open(h['log'], errors='replace') as f:
                        tail = f.read()[-1500:]
                    raise RuntimeError('systemd-nspawn for %s exited (rc %s):\n%s' % (h['name'], p.returncode, tail))
                if _ssh_banner(h['ssh_port']):
                    # Boot finished (tor started or failed): 'running' or 'degraded'.
                    r = subprocess.run(self.ssh_cmd(h, 'systemctl', 'is-system-running', '--wait'),
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                                       stdin=subprocess.DEVNULL)
                    status = r.stdout.decode().strip()
                    h['last_ssh'] = 'rc %d: %s %s' % (r.returncode, status, r.stderr.decode(errors='replace')[-300:])
                    if status in ('running', 'degraded'):
                        h['system_state'] = status
                        pending.remove(h)
            if pending and time.monotonic() > deadline:
                raise RuntimeError('hosts did not come up in %.0fs: %s' % (
                    self.boot_timeout, '; '.join('%s (port %d, last ssh: %s)' % (
                        h['name'], h['ssh_port'], h.get('last_ssh', 'no sshd yet')) for h in pending)))
            time.sleep(0.1)

    def _wait_control_socket(self, timeout=60.0):
        """A stock host is ready once tor's ControlSocket accepts a connection: systemd calls tor started when it
        signals readiness, and tor opens its unix listeners about a second later (after dropping
        privileges), so a module run right after boot finds no /run/tor/control."""
        script = wait_control_socket_script(int(timeout))
        for h in self.hosts:
            r = subprocess.run(self.ssh_cmd(h, script), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, timeout=timeout + 30)
            if r.returncode != 0:
                raise RuntimeError('%s: tor opened no /run/tor/control in %.0fs:\n%s'
                                   % (h['name'], timeout, r.stdout.decode(errors='replace')[-1500:]))

    def inventory(self):
        hosts = {}
        for h in self.hosts:
            hosts[h['name']] = {
                'ansible_host': '127.0.0.1', 'ansible_port': h['ssh_port'],
                'testbed_machine': h['machine'],
                'testbed_tor_socks_port': h['tor_socks_port'],
                'testbed_tor_or_port': h['tor_or_port'],
                # free loopback ports of this host's own for the services' backends (the hosts share
                # the machine's network, and other beds and runs share the machine)
                'testbed_app_ports': list(h.get('app_ports') or []),
                'testbed_stock': bool(h.get('stock')),
                'testbed_suite': h['suite'],
                'testbed_apt_packages': self.apt_packages if h['suite'] in self.apt_repos else [],
            }
            if h.get('stock'):
                hosts[h['name']]['testbed_tor_control_socket'] = '/run/tor/control'
            else:
                hosts[h['name']]['testbed_tor_control_port'] = h['tor_control_port']
        return {'all': {'children': {'testbed': {
            'hosts': hosts,
            'vars': {
                'ansible_user': 'root',
                'ansible_ssh_private_key_file': self.key,
                'ansible_host_key_checking': False,
                'ansible_ssh_common_args': '-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null',
                'ansible_python_interpreter': '/usr/bin/python3',
                'testbed_privnet_joined': bool(self.join_lines),
                'testbed_privnet_torrc_lines': self.join_lines,
                'testbed_privnet_dirauthority_lines': [x for x in self.join_lines
                                                       if x.startswith('DirAuthority ')],
            },
        }}}}

    def write_inventory(self, path=None):
        """The inventory to self.inventory_path (JSON, which YAML reads) and to path, in the format its
        name says: INI for .ini (inventory_ini), else JSON."""
        for p in filter(None, [self.inventory_path, path]):
            text = inventory_ini(self.inventory()) if p.endswith('.ini') else json.dumps(self.inventory(), indent=2) + '\n'
            with open(p, 'w') as f:
                f.write(text)

    def down(self):
        t0 = time.monotonic()
        teardown_state(self.state(), self.grace, procs=self.procs)
        self.timings['down'] = time.monotonic() - t0
        log('hosts down in %.1fs' % self.timings['down'])
        try:
            os.unlink(self.registry)
        except FileNotFoundError:
            pass

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        self.down()


def _ini_value(value):
    """A value of an INI inventory line: ansible's ini plugin reads a Python literal (lists,
    booleans, numbers) and else takes the text; text with a space or quote is quoted."""
    if isinstance(value, (list, tuple)):
        # the host line is split as a shell would (shlex): the list in single quotes, its elements in JSON's
        # double quotes, which the split keeps and the ini plugin's literal_eval reads (['a'] came back '[a]')
        text = json.dumps(list(value))
        if "'" in text:
            raise ValueError('an INI inventory list cannot hold a single quote: %r' % (value,))
        return "'%s'" % text
    if not isinstance(value, str):
        return repr(value)
    text = str(value)
    return repr(text) if re.search(r'[\s\'"#;=]', text) else text


def inventory_ini(inventory):
    """The inventory of HostBed.inventory() as an INI inventory: hosts of each group with their vars
    on one line, then [group:vars] (values as Python literals, which ansible's ini plugin reads)."""
    lines = []
    for group, data in inventory['all']['children'].items():
        lines.append('[%s]' % group)
        for name, hvars in data.get('hosts', {}).items():
            lines.append(' '.join([name] + ['%s=%s' % (k, _ini_value(v)) for k, v in hvars.items()]))
        lines.append('')
        if data.get('vars'):
            lines.append('[%s:vars]' % group)
            # a [group:vars] line is not split on spaces: a list is one Python literal ('TestingTorNetwork 1')
            lines += ['%s=%s' % (k, repr(list(v)) if isinstance(v, (list, tuple)) else _ini_value(v))
                      for k, v in data['vars'].items()]
            lines.append('')
    return '\n'.join(lines)


def overlay_supported():
    try:
        with open('/proc/filesystems') as f:
            return any(line.split()[-1] == 'overlay' for line in f if line.strip())
    except OSError:
        return False


# Every container's systemd (PID 1, journald, logind, ...) takes inotify instances of root's, whose
# kernel default limit is 128 (fs.inotify.max_user_instances): with ~25 containers at once (the docs
# bed's 15 hosts beside the other CI lanes' beds) a booting host's systemd failed with "Failed to
# create control group inotify object: Too many open files" and exited. Raised before a bed boots.
INOTIFY_INSTANCES = '/proc/sys/fs/inotify/max_user_instances'
INOTIFY_MINIMUM = 1024


def ensure_inotify_instances(minimum=INOTIFY_MINIMUM, path=INOTIFY_INSTANCES):
    """Raise the per-user inotify instance limit to at least minimum (never lower it); returns the
    limit in force (None when it cannot be read)."""
    try:
        with open(path) as f:
            current = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if current >= minimum:
        return current
    try:
        with open(path, 'w') as f:
            f.write('%d\n' % minimum)
    except OSError as exc:
        log('fs.inotify.max_user_instances is %d and cannot be raised (%s): many hosts at once may fail to boot'
            % (current, exc))
        return current
    log('fs.inotify.max_user_instances raised from %d to %d (each host\'s systemd takes some)' % (current, minimum))
    return minimum


def own_cgroups(machine):
    """Make one empty cgroup per hierarchy for a container (below ours).

    With --keep-unit --register=no and no systemd on the host, nspawn keeps
    the cgroup it was started in as the container's root; containers that
    share one then remove each other's unit cgroups at random ("Failed at
    step CGROUP").  Returns the created directories."""
    made = []
    try:
        with open('/proc/self/cgroup') as f:
            entries = [line.rstrip('\n').split(':', 2) for line in f]
    except OSError:
        return made
    for _, controllers, path in entries:
        if controllers == 'name=systemd':
            base = '/sys/fs/cgroup/systemd'
        elif controllers == '':
            base = '/sys/fs/cgroup/unified' if os.path.isdir('/sys/fs/cgroup/unified') else '/sys/fs/cgroup'
        else:
            continue
        if not os.path.exists(os.path.join(base, 'cgroup.procs')):
            continue
        d = os.path.join(base + path.rstrip('/'), 'onionlab-' + machine)
        try:
            os.makedirs(d, exist_ok=True)
            made.append(d)
        except OSError:
            pass
    return made


def enter_cgroups(dirs):
    """In the child before exec: move this process into dirs."""
    for d in dirs:
        try:
            with open(os.path.join(d, 'cgroup.procs'), 'w') as f:
                f.write(str(os.getpid()))
        except OSError:
            pass


def remove_cgroups(dirs):
    """rmdir the container's cgroups, deepest first (they must be empty)."""
    for d in dirs:
        for sub, _, _ in sorted(os.walk(d), key=lambda x: -len(x[0])):
            try:
                os.rmdir(sub)
            except OSError:
                pass


def _ssh_banner(port):
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=1) as s:
            s.settimeout(1)
            return s.recv(8).startswith(b'SSH-')
    except OSError:
        return False


def _mounts_under(path):
    out = []
    try:
        with open('/proc/self/mountinfo') as f:
            for line in f:
                mp = line.split()[4].replace('\\040', ' ')
                if mp == path or mp.startswith(path.rstrip('/') + '/'):
                    out.append(mp)
    except OSError:
        pass
    return sorted(out, key=len, reverse=True)


def teardown_state(state, grace=15.0, procs=None):
    """Stop every nspawn of a state (by PID + start time), unmount and remove its dir."""
    t0 = time.monotonic()
    pids = [(h['pid'], h['starttime']) for h in state.get('hosts', []) if h.get('pid')]
    left = privnet.kill_pids(pids, grace=grace, again=3.0)
    if left:
        log('SIGKILLed nspawn %s' % left)
    for p in (procs or {}).values():  # reap our own children
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    t1 = time.monotonic()
    for h in state.get('hosts', []):
        remove_cgroups(h.get('cgroups', []))
    d = state.get('dir')
    if d and os.path.isdir(d):
        for mp in _mounts_under(d):
            if subprocess.call(['umount', mp], stderr=subprocess.DEVNULL) != 0:
                subprocess.call(['umount', '-l', mp])
        doomed = [d] if state.get('created_dir', True) else [os.path.dirname(h['root'])
                                                             for h in state.get('hosts', [])]
        rms = [subprocess.Popen(['rm', '-rf', '--one-file-system', x]) for x in doomed if os.path.lexists(x)]
        for rm in rms:
            rm.wait()
    if pids:
        log('teardown: machines stopped in %.1fs, files removed in %.1fs' % (t1 - t0, time.monotonic() - t1))


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

def _load_state(d):
    with open(os.path.join(os.path.abspath(d), 'state.json')) as f:
        return json.load(f)


def _privnet_join_lines(pn_dir):
    st = privnet.read_state(os.path.abspath(pn_dir))
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
        if any(privnet.pid_alive(h['pid'], h['starttime']) for h in old.get('hosts', []) if h.get('pid')):
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
        os.unlink(reg)
    print('hosts down in %.1fs' % (time.monotonic() - t0))
    return 0


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
            os.unlink(reg)
            continue
        owner = state.get('owner_pid')
        if not args.all and owner and privnet.pid_alive(owner, state.get('owner_starttime')):
            continue  # an in-process bed (pytest) still running
        if not args.all and owner is None and any(
                privnet.pid_alive(h['pid'], h['starttime']) for h in state.get('hosts', []) if h.get('pid')):
            print('bed %s (%s) is up (CLI); use down --dir or cleanup --all' % (state['run_id'], state['dir']))
            continue
        log('cleaning up bed %s in %s' % (state.get('run_id'), state.get('dir')))
        teardown_state(state)
        os.unlink(reg)
        n += 1
    for partial in glob.glob(os.path.join(cache_dir(), 'rootfs-*.partial-*')) + glob.glob(
            os.path.join(cache_dir(), 'apt-*.partial-*')):
        pid = partial.rsplit('-', 1)[1]
        if pid.isdigit() and not privnet.pid_alive(int(pid)):
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
