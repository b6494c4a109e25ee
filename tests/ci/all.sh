#!/usr/bin/env bash
# Runs every test step in tests/ci/NN-*.sh in order, timing each; stops at the first failure.
# Called by `./run test` (which has set up .venv and PATH). One step: `bash tests/ci/all.sh 10-pytest`,
# with arguments for that step after its name (`./run test 10-pytest -k consensus`).
# The steps run where the clone's parent directory holds nothing but the clone (a private mount
# namespace, tests/utils/isolated.sh; its first line says whether): no step may read beside the clone,
# since a user's clone has nothing there.
set -euo pipefail
cd "$ONIONLAB_ROOT"
if [ -z "${ONIONLAB_ISOLATED:-}" ]; then
    exec bash tests/utils/isolated.sh bash tests/ci/all.sh "$@"
fi
only="${1:-}"
total_start=$(date +%s)
passed=0
for step in tests/ci/[0-9][0-9]-*.sh; do
    name=$(basename "$step" .sh)
    if [ -n "$only" ] && [ "$name" != "$only" ]; then continue; fi
    printf '\n==== %s\n' "$name"
    start=$(date +%s)
    if ! bash "$step" "${@:2}"; then
        printf '==== %s FAILED after %ss\n' "$name" "$(( $(date +%s) - start ))"
        printf 'steps: %d passed, 1 failed\n' "$passed"
        exit 1
    fi
    passed=$((passed + 1))
    printf '==== %s passed in %ss\n' "$name" "$(( $(date +%s) - start ))"
done
if [ "$passed" -eq 0 ]; then
    echo "no step matched '$only'" >&2
    exit 1
fi
printf '\n==== all steps passed in %ss\n' "$(( $(date +%s) - total_start ))"
printf 'steps: %d passed, 0 failed\n' "$passed"
