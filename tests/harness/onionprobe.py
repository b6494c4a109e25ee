# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Onionprobe for the bed's hosts: a wheelhouse built on this machine.

A host of the bed cannot reach PyPI (its /etc/resolv.conf names only 127.0.0.1, where no resolver listens:
pip fails with 'Temporary failure in name resolution', by design: nothing a host runs may reach another
address). This machine can: ``wheelhouse()`` runs ``pip wheel onionprobe==1.4.1`` once (stem 1.8.2 comes as
an sdist: built here into a wheel, so the host needs no setuptools) into ``~/.cache/onionlab/wheels-...``
(an flock, a completion marker), and the test gives it to a host (``give(root)``: copied into its tree at
``/srv/onionlab-wheels``), where the onionprobe role installs with ``onionprobe_pip_environment:
{PIP_NO_INDEX: '1', PIP_FIND_LINKS: /srv/onionlab-wheels}``: the role's PyPI way, offline.
The wheels are for this machine's Python, which is the hosts' (the bed's release is this machine's).
"""

import fcntl
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

try:  # imported as harness.onionprobe (pytest) or from this directory
    from .privnet import cache_dir
except ImportError:  # pragma: no cover
    from privnet import cache_dir

REQUIREMENT = 'onionprobe==1.4.1'
HOST_DIR = '/srv/onionlab-wheels'
MARKER = '.onionlab-wheels.json'


def _say(msg):
    sys.stderr.write('[onionprobe] %s\n' % msg)
    sys.stderr.flush()


def wheelhouse(requirement=REQUIREMENT):
    """The directory of requirement's wheels and its dependencies' (built once); (path, seconds, built)."""
    key = hashlib.sha256(json.dumps([requirement, sys.version_info[:2]]).encode()).hexdigest()[:10]
    path = os.path.join(cache_dir(), 'wheels-%s' % key)
    t0 = time.monotonic()
    with open(os.path.join(cache_dir(), 'wheels.lock'), 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(path, MARKER)):
            return path, time.monotonic() - t0, False
        tmp = '%s.partial-%d' % (path, os.getpid())
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(path, ignore_errors=True)
        _say('pip wheel %s (once; cached in %s)' % (requirement, path))
        r = subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--no-cache-dir', '-q', '-w', tmp, requirement],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise RuntimeError('pip wheel %s failed (rc %d):\n%s' % (requirement, r.returncode,
                                                                     r.stdout.decode(errors='replace')[-2000:]))
        wheels = sorted(os.path.basename(w) for w in glob.glob(os.path.join(tmp, '*.whl')))
        with open(os.path.join(tmp, MARKER), 'w') as f:
            json.dump({'requirement': requirement, 'python': list(sys.version_info[:3]), 'wheels': wheels,
                       'built': time.time()}, f)
        os.rename(tmp, path)
    return path, time.monotonic() - t0, True


def give(root, path):
    """Copy the wheelhouse into a host's tree (its HOST_DIR)."""
    dest = os.path.join(root, HOST_DIR.lstrip('/'))
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(path, dest)
    return HOST_DIR
