# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline stand-in for the get-pip bootstrap script that ansible-test downloads.

ansible-test bootstraps pip into each virtualenv it creates by running
``~/.ansible/test/cache/get_pip_<pip version>.py`` (downloaded from a host this project cannot
reach; a cached file is used as is). It calls it as

    python get_pip_X.py <pip options> <packages> [--no-setuptools] [--no-wheel]

This stand-in does the same job from what every CPython ships plus the normal package index:
``ensurepip`` puts a pip into the virtualenv, then that pip installs the requested packages
(the exact ``pip==X`` ansible-test pins). The two get-pip-only flags are dropped. Copied into
place by tests/ci/20-sanity.sh when the cache file is missing; never used on targets.
"""

import subprocess
import sys

GET_PIP_ONLY = ('--no-setuptools', '--no-wheel')


def main():
    args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY]
    subprocess.check_call([sys.executable, '-m', 'ensurepip', '--default-pip'])
    if args:
        subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)


if __name__ == '__main__':
    try:
        main()
    except subprocess.CalledProcessError as ex:
        sys.stderr.write('get-pip stand-in: %s\n' % ex)
        sys.exit(ex.returncode or 1)
