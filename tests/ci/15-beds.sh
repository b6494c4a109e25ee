#!/usr/bin/env bash
# lane: beds
# The long bed tests listed in tests/ci/beds.txt (docs run as printed on stock hosts, Onionbalance on
# the private network, metrics with a real Prometheus, the tor role on stock hosts), in one pytest
# beside 10-pytest (tests/ci/all.sh runs the lanes at once); like 10-pytest, a skip fails the step.
set -euo pipefail
cd "$ONIONLAB_ROOT"
python tests/harness/hosts.py ensure-packages
mapfile -t files < <(grep -v '^#' tests/ci/beds.txt | sed '/^$/d')
python -m pytest -p no:cacheprovider -q -rs --durations=10 "${files[@]}" "$@" | tee .build/beds.log
if grep -Eq '^SKIPPED|[0-9]+ skipped' .build/beds.log; then
    echo "pytest skipped tests (listed above): every check must run in CI" >&2
    exit 1
fi
