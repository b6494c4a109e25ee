#!/usr/bin/env bash
# Unit and integration tests (pytest over tests/unit and tests/integration, real tor, the
# private Tor network and the nspawn host bed). pytest's exit code 5 (no tests collected) is a
# failure like any other non-zero code. Tests that run the oldest declared ansible-core need
# .build/venv-2.17, made first; no test is allowed to skip here (a skip fails the step).
# lane: pytest
set -euo pipefail
cd "$ONIONLAB_ROOT"
bash tests/utils/core-venv.sh 2.17 >/dev/null
python tests/harness/hosts.py ensure-packages
# the long bed tests run in steps 15-beds (a lane of their own) and 13-beds-checks (tests/ci/beds.txt)
mapfile -t ignore < <(grep -v '^#' tests/ci/beds.txt | awk 'NF { print "--ignore=" $1 }')
python -m pytest -p no:cacheprovider -q -rfEs --durations=25 "${ignore[@]}" tests/unit tests/integration "$@" \
    | tee .build/pytest.log
if grep -Eq '^SKIPPED|[0-9]+ skipped' .build/pytest.log; then
    echo "pytest skipped tests (listed above): every check must run in CI" >&2
    exit 1
fi
