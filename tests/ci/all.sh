#!/usr/bin/env bash
# Runs every test step in tests/ci/NN-*.sh in order, timing each; stops at the first failure.
# Called by `./run test` (which has set up .venv and PATH). One step: `bash tests/ci/all.sh 10-pytest`.
set -euo pipefail
cd "$ONIONLAB_ROOT"
only="${1:-}"
total_start=$(date +%s)
for step in tests/ci/[0-9][0-9]-*.sh; do
    name=$(basename "$step" .sh)
    if [ -n "$only" ] && [ "$name" != "$only" ]; then continue; fi
    printf '\n==== %s\n' "$name"
    start=$(date +%s)
    bash "$step"
    printf '==== %s passed in %ss\n' "$name" "$(( $(date +%s) - start ))"
done
printf '\n==== all steps passed in %ss\n' "$(( $(date +%s) - total_start ))"
