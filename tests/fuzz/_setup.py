# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared by the atheris targets and the hypothesis properties (tests/unit/.../test_properties.py):
make the repository importable as ansible_collections.onionlab.tor (as tests/conftest.py does),
cut consensus seeds, stand in for tor's socket, and write seed corpora."""

import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:  # a fuzz target run as a script: tests/ for harness.data
    sys.path.append(str(TESTS))
from harness.data import CONSENSUS_DIR, REPO  # noqa: E402  (the seeds: tests/data/consensus/)

COLLECTIONS = REPO / ".build" / "collections"


def link_collection():
    parent = COLLECTIONS / "ansible_collections" / "onionlab"
    parent.mkdir(parents=True, exist_ok=True)
    link = parent / "tor"
    if not link.exists():
        link.symlink_to(REPO)
    if str(COLLECTIONS) not in sys.path:
        sys.path.insert(0, str(COLLECTIONS))


def small_consensus(raw, routers=4):
    """A real document cut to its header, its first routers and its footer (a fast seed)."""
    start = raw.index(b"\nr ") + 1
    footer = raw.index(b"\ndirectory-footer") + 1
    body = raw[start:footer]
    pos = 0
    for _ in range(routers):
        nxt = body.find(b"\nr ", pos + 1)
        if nxt < 0:
            break
        pos = nxt
    return raw[:start] + body[:pos + 1] + raw[footer:]


def write_seeds(directory, seeds):
    os.makedirs(directory, exist_ok=True)
    for index, seed in enumerate(seeds):
        path = os.path.join(directory, "seed-%02d" % index)
        if not os.path.exists(path):
            with open(path, "wb") as handle:
                handle.write(seed)


class ChunkSocket(object):
    """Stands in for a socket: recv() hands out the data in the given chunk sizes (cycled), then EOF."""

    def __init__(self, data, sizes):
        self.data = data
        self.sizes = list(sizes) or [65536]
        self.pos = 0
        self.calls = 0

    def settimeout(self, _timeout):
        pass

    def recv(self, limit):
        size = min(limit, self.sizes[self.calls % len(self.sizes)])
        self.calls += 1
        chunk = self.data[self.pos:self.pos + max(1, size)]
        self.pos += len(chunk)
        return chunk

    def sendall(self, _data):
        pass

    def close(self):
        pass
