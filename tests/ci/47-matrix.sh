#!/usr/bin/env bash
# The OS matrix (issue 21): one bed host of each release the roles claim (Debian 12 and 13,
# Ubuntu 24.04 and 22.04), joined to the private network; the roles converge, a second run changes
# nothing, every onion answers (tests/matrix/test_os_matrix.py). The release trees are built once
# per machine (debootstrap, about 6 minutes cold with the releases in parallel) and cached in
# ~/.cache/onionlab. Runs in the beds lane, after 15-beds (tests/ci/all.sh).
# lane: beds
set -euo pipefail
cd "$ONIONLAB_ROOT"
python tests/harness/hosts.py ensure-packages
python -m pytest -p no:cacheprovider -q -rfEs --durations=5 tests/matrix "$@" | tee .build/matrix.log
if grep -Eq '^SKIPPED|[0-9]+ skipped' .build/matrix.log; then
    echo "the OS matrix skipped (listed above): it must run in CI" >&2
    exit 1
fi
