#!/usr/bin/env bash
# Runs every test step in tests/ci/NN-*.sh, timing each; a failed step fails the run.
# Called by `./run test` (which has set up .venv and PATH). One step: `bash tests/ci/all.sh 10-pytest`,
# with arguments for that step after its name (`./run test 10-pytest -k consensus`).
#
# Lanes at once (ONIONLAB_CI_LANES=1 for one step after the other): a step's lane is named by a
# '# lane: NAME' line in it (10-pytest: pytest; 15-beds and 47-matrix: beds; the others: checks), the
# steps of a lane run in order, the lanes side by side; each line of a step's output is prefixed with
# its name and also kept in .build/ci/<step>.log. A lane stops at its first failed step; the others
# run to their end. What several lanes use is made before they start (the ansible-core 2.17 venv).
#
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
mkdir -p .build/ci

# run_step NAME [ARGS...]: one step, timed; returns its status.
run_step() {
    local name=$1 start rc=0
    shift
    printf '\n==== %s\n' "$name"
    start=$(date +%s)
    bash "tests/ci/$name.sh" "$@" || rc=$?
    if [ "$rc" -ne 0 ]; then
        printf '==== %s FAILED after %ss\n' "$name" "$(( $(date +%s) - start ))"
    else
        printf '==== %s passed in %ss\n' "$name" "$(( $(date +%s) - start ))"
    fi
    return "$rc"
}

# lane RESULT_FILE STEP...: the steps in order, output prefixed; stops at the first failure.
lane() {
    local result=$1 name passed=0
    shift
    for name in "$@"; do
        if run_step "$name" 2>&1 | tee ".build/ci/$name.log" | sed -u "s/^/[$name] /"; then
            passed=$((passed + 1))
        else
            echo "$passed passed, failed: $name" > "$result"
            return 1
        fi
    done
    echo "$passed passed" > "$result"
}

steps=()
for step in tests/ci/[0-9][0-9]-*.sh; do
    steps+=("$(basename "$step" .sh)")
done

if [ -n "$only" ]; then
    for name in "${steps[@]}"; do
        if [ "$name" = "$only" ]; then
            if run_step "$name" "${@:2}"; then
                printf 'steps: 1 passed, 0 failed\n'
                exit 0
            fi
            printf 'steps: 0 passed, 1 failed\n'
            exit 1
        fi
    done
    echo "no step matched '$only'" >&2
    exit 1
fi

if [ "${ONIONLAB_CI_LANES:-2}" = 1 ]; then
    passed=0
    for name in "${steps[@]}"; do
        if ! run_step "$name"; then
            printf 'steps: %d passed, 1 failed\n' "$passed"
            exit 1
        fi
        passed=$((passed + 1))
    done
    printf '\n==== all steps passed in %ss\n' "$(( $(date +%s) - total_start ))"
    printf 'steps: %d passed, 0 failed\n' "$passed"
    exit 0
fi

# The ansible-core 2.17 venv (10-pytest, 20-sanity): made once, before the lanes start.
bash tests/utils/core-venv.sh 2.17 > /dev/null
lane_of() { sed -n 's/^# lane: *\([a-z0-9-]*\).*/\1/p' "tests/ci/$1.sh" | head -1; }
lanes=()
declare -A lane_steps=()
for name in "${steps[@]}"; do
    l=$(lane_of "$name")
    l=${l:-checks}
    if [ -z "${lane_steps[$l]+x}" ]; then
        lanes+=("$l")
        lane_steps[$l]=""
    fi
    lane_steps[$l]+="$name "
done
rm -f .build/ci/lane-*.result .build/ci/*.log
pids=()
for l in "${lanes[@]}"; do
    # shellcheck disable=SC2086  # the step names have no spaces
    lane ".build/ci/lane-$l.result" ${lane_steps[$l]} &
    pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do
    wait "$pid" || rc=1
done
summary=""
for l in "${lanes[@]}"; do
    summary+="$l ($(echo ${lane_steps[$l]})): $(cat ".build/ci/lane-$l.result" 2>/dev/null || echo 'no result'); "
done
printf '\n==== lanes: %s%ss in all\n' "$summary" "$(( $(date +%s) - total_start ))"
grep -h '^==== .* \(passed in\|FAILED after\)' .build/ci/*.log | sed 's/^==== /  /' || true
passed=$(cat .build/ci/*.log | grep -c '^==== .* passed in' || true)
failed=$(cat .build/ci/*.log | grep -c '^==== .* FAILED after' || true)
if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ]; then
    printf 'steps: %d passed, %d failed\n' "$passed" "$((failed > 0 ? failed : 1))"
    exit 1
fi
printf '\n==== all steps passed in %ss\n' "$(( $(date +%s) - total_start ))"
printf 'steps: %d passed, 0 failed\n' "$passed"
