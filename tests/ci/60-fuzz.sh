#!/usr/bin/env bash
# Coverage-guided fuzzing (atheris/libFuzzer) of the control-reply framing and the consensus parser,
# each for a bounded time: ONIONLAB_FUZZ_SECONDS (default 20) per target. The corpora are kept in
# .build/fuzz/<target>/ so that later runs start from what earlier ones found; a crash (any exception
# but the documented ones, or an input running over 10 s) fails the step and leaves its input in
# .build/fuzz/crash-*. Long runs: see tests/fuzz/README.md.
# lane: pytest
# (after 10-pytest: pure CPU for a fixed time, it evens the lanes' ends; in the checks lane it ran alone at the end
# of the run, one core idle, for a minute: docs/maintaining.md, Lanes)
set -euo pipefail
cd "$ONIONLAB_ROOT"
seconds="${ONIONLAB_FUZZ_SECONDS:-20}"
mkdir -p .build/fuzz
for target in reply consensus metrics; do
    corpus=".build/fuzz/$target"
    mkdir -p "$corpus"
    log=".build/fuzz/$target.log"
    extra=()
    [ "$target" = consensus ] && extra=(-max_len=65536)
    if ! python "tests/fuzz/fuzz_$target.py" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 \
            -print_final_stats=1 -artifact_prefix=.build/fuzz/crash-"$target"- "${extra[@]}" "$corpus" \
            >"$log" 2>&1; then
        tail -60 "$log"
        echo "fuzz_$target: crash; input kept as .build/fuzz/crash-$target-*" >&2
        exit 1
    fi
    runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
    echo "fuzz_$target: ${runs:-?} in ${seconds}s, $cov, corpus $(ls "$corpus" | wc -l) inputs"
done
