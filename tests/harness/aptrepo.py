"""A local apt repository for the bed hosts (a part of tests/harness/hosts.py; standard library only):
``AptRepo`` downloads once what ``apt-get install PACKAGES`` needs on top of a cached rootfs,
``give_apt_repo`` gives it to a host (source + index), read-only at ``APT_REPO_MOUNT``."""


from __future__ import annotations

import fcntl
import glob
import hashlib
import json
import os
import shutil
import subprocess
import time

try:  # imported as harness.* (pytest) or from this directory (hosts.py run as a script)
    from .rootfs import MARKER, _write, cache_dir, log
except ImportError:  # pragma: no cover
    from rootfs import MARKER, _write, cache_dir, log


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
