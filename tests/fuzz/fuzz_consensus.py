# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""atheris (libFuzzer) target: the consensus parser (plugins/module_utils/_tor/consensus.py).

Input: byte 0 picks the parse path (the bulk matcher, the per-router iterator, the general line
parser) and bytes or text; the rest is the document. Seeds: the real documents of
tests/data/consensus/, cut to a few routers. Only ConsensusError may escape; anything
else, or a hang (libFuzzer's -timeout), is a crash. Run (see tests/fuzz/README.md):

    .venv/bin/python tests/fuzz/fuzz_consensus.py -max_total_time=60 -timeout=10 -max_len=65536 CORPUS_DIR
"""

import sys

import atheris

from _setup import CONSENSUS_DIR, link_collection, small_consensus, write_seeds

link_collection()

with atheris.instrument_imports(include=["ansible_collections.onionlab.tor"]):
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.consensus import ConsensusError, parse_consensus

MODES = (None, "iter", "general")


def TestOneInput(data):
    if not data:
        return
    mode = MODES[data[0] % 3]
    doc = data[1:]
    if data[0] & 4:
        doc = doc.decode("latin-1")
    try:
        parse_consensus(doc, _mode=mode, now=1500000000)
    except ConsensusError:
        pass


def main():
    corpus = [a for a in sys.argv[1:] if not a.startswith("-")]
    if corpus:
        seeds = []
        for path in sorted(CONSENSUS_DIR.glob("*consensus")):
            small = small_consensus(path.read_bytes())
            seeds += [b"\x00" + small, b"\x01" + small, b"\x06" + small]
        write_seeds(corpus[0], seeds)
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
