# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-wide setup: make the repository importable as ansible_collections.onionlab.tor.

The repository root is the collection root; Ansible code imports it by its collection name,
so a symlink .build/collections/ansible_collections/onionlab/tor -> repo is made and put on
sys.path (and ANSIBLE_COLLECTIONS_PATH for ansible-playbook runs started by tests).
"""

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COLLECTIONS = REPO / ".build" / "collections"


def _link():
    parent = COLLECTIONS / "ansible_collections" / "onionlab"
    parent.mkdir(parents=True, exist_ok=True)
    link = parent / "tor"
    if not (link.is_symlink() and link.resolve() == REPO):
        tmp = parent / ("tor.%d" % os.getpid())
        if tmp.is_symlink():
            tmp.unlink()
        tmp.symlink_to(REPO)
        os.replace(str(tmp), str(link))


_link()
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
os.environ["ANSIBLE_COLLECTIONS_PATH"] = str(COLLECTIONS)
sys.path.insert(0, str(REPO / "tests"))

from harness.tor_fixtures import *  # noqa: E402,F401,F403  (fixtures)
from harness.fixtures import *  # noqa: E402,F401,F403  (privnet, hostbed)
