# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the test documents are: tests/data/ of this repository (origins and sha256 in
tests/data/README.md). Every test, fuzz target and benchmark takes the paths from here; nothing
reads beside the clone (tests/conftest.py fails a pytest run that does, tests/utils/isolated.sh
hides the clone's parent directory from the CI steps)."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA_DIR = REPO / "tests" / "data"
CONSENSUS_DIR = DATA_DIR / "consensus"  # real network consensuses (2017, 2022) and the 2017 key certificates
STEM_DIR = DATA_DIR / "stem-conformance"  # samples of Stem's own unit tests
