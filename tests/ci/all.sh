#!/usr/bin/env bash
# Runs every test step in tests/ci/NN-*.sh, timing each; a failed step fails the run.
# Called by `./run test` (which has set up .venv and PATH). One step: `bash tests/ci/all.sh 10-pytest`,
# with arguments for that step after its name (`./run test 10-pytest -k consensus`).
#
# Lanes at once (ONIONLAB_CI_LANES=1 for one step after the other): a step's lane is named by a
# '# lane: NAME' line in it (10-pytest and 60-fuzz: pytest; 15-beds and 47-matrix: beds; the others: checks), the
# steps of a lane run in order, the lanes side by side; each line of a step's output is prefixed with
# its name and also kept in .build/ci/<step>.log. A failed step does not stop its lane (or, with
# ONIONLAB_CI_LANES=1, the run): the next step runs all the same, and the closing lines list every
# step with its result and time (.build/ci/<step>.result); the run fails when any step failed.
# What several lanes use is made before they start: the Debian packages of every step
# (tests/harness/hosts.py ensure-packages: apt allows one install at a time) and the ansible-core
# 2.17 venv.
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

# run_step NAME [ARGS...]: one step, timed; its result in .build/ci/NAME.result; returns its status.
run_step() {
    local name=$1 start rc=0 took
    shift
    printf '\n==== %s\n' "$name"
    start=$(date +%s)
    bash "tests/ci/$name.sh" "$@" || rc=$?
    took=$(( $(date +%s) - start ))
    if [ "$rc" -ne 0 ]; then
        printf '==== %s FAILED after %ss\n' "$name" "$took"
        echo "FAILED after ${took}s (exit $rc)" > ".build/ci/$name.result"
    else
        printf '==== %s passed in %ss\n' "$name" "$took"
        echo "passed in ${took}s" > ".build/ci/$name.result"
    fi
    return "$rc"
}

# lane STEP...: the steps in order, output prefixed; a failed step does not stop the lane.
lane() {
    local name rc=0
    for name in "$@"; do
        run_step "$name" 2>&1 | tee ".build/ci/$name.log" | sed -u "s/^/[$name] /" || rc=1
    done
    return "$rc"
}

# why_failed STEP: what a failed step's log says of its failures, repeated at the end of the run, since CI
# keeps only the tail of the output: pytest's short summary (each failed test with its first error line), or
# the log's last lines when the step is not a pytest; then pytest's first 25 'E' lines; lines cut at 400 characters.
why_failed() {
    local log=".build/ci/$1.log"
    printf '\n==== why %s failed (its log, .build/ci/%s.log):\n' "$1" "$1"
    [ -f "$log" ] || { echo "  (no log)"; return 0; }
    if grep -q '^=* short test summary info =*$' "$log"; then
        sed -n -E '/^=+ short test summary info =+$/,/^(=+ )?[0-9]+ [a-z]+.* in [0-9.]+s/p' "$log" | head -30
        echo "the first error lines (E):"
        grep -E '^E ' "$log" | head -25
    else
        tail -n 30 "$log"
    fi | cut -c1-400 | sed 's/^/  /'
}

# summary STEP...: every step's result and time, then the closing count; fails when a step failed
# or has no result (it never ran to its end).
summary() {
    local name result passed=0 failed=0
    printf '\n==== steps (%ss in all):\n' "$(( $(date +%s) - total_start ))"
    for name in "$@"; do
        result=$(cat ".build/ci/$name.result" 2>/dev/null || echo "FAILED: no result (it did not run to its end)")
        printf '  %-14s %s\n' "$name" "$result"
        case "$result" in
            passed*) passed=$((passed + 1)) ;;
            *) failed=$((failed + 1)) ;;
        esac
    done
    if [ "$failed" -eq 0 ]; then
        printf '\n==== all steps passed in %ss\n' "$(( $(date +%s) - total_start ))"
    else
        for name in "$@"; do
            case "$(cat ".build/ci/$name.result" 2>/dev/null)" in
                passed*) ;;
                *) why_failed "$name" ;;
            esac
        done
    fi
    printf 'steps: %d passed, %d failed\n' "$passed" "$failed"
    [ "$failed" -eq 0 ]
}

steps=()
for step in tests/ci/[0-9][0-9]-*.sh; do
    steps+=("$(basename "$step" .sh)")
done

if [ -n "$only" ]; then
    for name in "${steps[@]}"; do
        if [ "$name" = "$only" ]; then
            rm -f ".build/ci/$name.result"
            run_step "$name" "${@:2}" || true
            summary "$name"
            exit
        fi
    done
    echo "no step matched '$only'" >&2
    exit 1
fi

rm -f .build/ci/*.result .build/ci/*.log
# Before any step: every Debian package a step needs, installed once (the steps call it again: a
# no-op then). A failure here is reported and the steps still run (each fails on what it lacks).
python tests/harness/hosts.py ensure-packages || echo "==== installing the Debian packages the steps need FAILED (above)"

if [ "${ONIONLAB_CI_LANES:-2}" = 1 ]; then
    for name in "${steps[@]}"; do
        run_step "$name" 2>&1 | tee ".build/ci/$name.log" || true
    done
    summary "${steps[@]}"
    exit
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
pids=()
for l in "${lanes[@]}"; do
    # shellcheck disable=SC2086  # the step names have no spaces
    lane ${lane_steps[$l]} &
    pids+=($!)
done
for pid in "${pids[@]}"; do
    wait "$pid" || true
done
printf '\n==== lanes:'
for l in "${lanes[@]}"; do
    printf ' %s (%s);' "$l" "$(echo ${lane_steps[$l]})"
done
printf '\n'
summary "${steps[@]}"
