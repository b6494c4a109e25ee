#!/usr/bin/env bash
# The test files of tests/ci/beds.txt for one lane, in one pytest: `bash tests/ci/beds.sh beds` (step 15-beds:
# the lines with no second word or 'beds') or `bash tests/ci/beds.sh checks` (step 13-beds-checks); further
# arguments go to pytest. Like 10-pytest, a skip fails the step.
set -euo pipefail
cd "$ONIONLAB_ROOT"
lane=$1
shift
python tests/harness/hosts.py ensure-packages
mapfile -t files < <(grep -v '^#' tests/ci/beds.txt | awk -v lane="$lane" 'NF && ($2 == lane || ($2 == "" && lane == "beds")) { print $1 }')
if [ ${#files[@]} -eq 0 ]; then
    echo "tests/ci/beds.txt names no file for lane $lane" >&2
    exit 1
fi
python -m pytest -p no:cacheprovider -q -rfEs --durations=10 "${files[@]}" "$@" | tee ".build/beds-$lane.log"
if grep -Eq '^SKIPPED|[0-9]+ skipped' ".build/beds-$lane.log"; then
    echo "pytest skipped tests (listed above): every check must run in CI" >&2
    exit 1
fi
