"""The cached base tree of every bed host (a part of tests/harness/hosts.py; standard library only).

``RootfsCache(suite)`` makes a release's tree once with ``debootstrap`` (``PACKAGES``, and what the
release needs besides: ``SUITES``) from the mirror apt already uses (``apt_mirror``) and keeps it in
``~/.cache/onionlab/`` under an flock, with the changes every host shares (``mask_units``, an offline
torrc, Debian's packaged torrc kept as ``STOCK_TORRC``). ``ubuntu_keyring()``: Ubuntu's archive
keyring for the Ubuntu releases. ``log``: the line every part of the bed prints."""


from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

try:  # imported as harness.* (pytest) or from this directory (hosts.py run as a script)
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
# Debian's packaged /etc/tor/torrc, kept in the cached tree (every line a comment)
STOCK_TORRC = '/etc/tor/torrc.onionlab-stock'


def log(msg):
    print('[hosts %7.2f] %s' % (time.monotonic() % 10000, msg), file=sys.stderr, flush=True)


cache_dir = privnet.cache_dir


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
