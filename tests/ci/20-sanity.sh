#!/usr/bin/env bash
# ansible-test sanity for the collection, with three ansible-cores of the declared range
# (meta/runtime.yml: >=2.17.0), every sanity test each:
#   - newest: the ansible-core of .venv (requirements-dev.txt; 2.19.x is the newest for Python 3.11),
#     controller and target side on Python 3.11;
#   - oldest: a pinned 2.17.x in .build/venv-2.17 (tests/utils/core-venv.sh 2.17), only for its
#     ansible-test (see SANITY_OLDEST_TESTS to narrow it);
#   - latest: a pinned 2.21.x in .build/venv-2.21 on Python 3.12+ (tests/utils/core-venv.sh 2.21),
#     the newest release, whose controller needs 3.12. A machine without Python 3.12+ (a plain
#     Debian 12) cannot run it: the step then says NOT CHECKED in its closing line.
# Target-side tests (compile, import) also run on every further CPython 3.x interpreter found on
# the machine (on PATH or in pyenv; none on a plain Debian machine) that the ansible-test supports
# for targets: 3.8-3.13 with the newest, then only what the others add (3.7 with the oldest,
# 3.14 with the latest if present).
#
# ansible-test must run inside .../ansible_collections/onionlab/tor: the content of the collection
# artifact (see stage_collection) is unpacked into a temp tree of that shape.
# ansible-test bootstraps pip in its per-test virtualenvs with a get-pip script it downloads from
# a host unreachable here; tests/utils/get_pip_standin.py is put in its cache when missing.
#
# Environment: SANITY_ONLY=newest|oldest|latest runs one of the three; SANITY_ARGS adds ansible-test options
# (e.g. "--test validate-modules"); SANITY_OLDEST_TESTS="compile import ..." limits the oldest run.
set -euo pipefail
cd "$ONIONLAB_ROOT"

CONTROLLER_PYTHON=3.11
LOG_DIR=.build/sanity
PYTHONS_DIR=.build/pythons
mkdir -p "$LOG_DIR"

log() { printf '\n-- %s\n' "$*"; }

# place_get_pip PYTHON: put the stand-in where that ansible-test looks for its pinned pip's script.
place_get_pip() {
    local version cache
    version=$("$1" - "$CONTROLLER_PYTHON" <<'EOF'
import sys, types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version=sys.argv[1]))['pip'])
EOF
    )
    cache="$HOME/.ansible/test/cache/get_pip_${version//./_}.py"
    if [ ! -f "$cache" ]; then
        log "placing the get-pip stand-in at $cache"
        install -D -m 0644 tests/utils/get_pip_standin.py "$cache"
    fi
}

# stage_collection DIR: DIR/ansible_collections/onionlab/tor holding exactly what the Galaxy artifact
# holds (ansible-galaxy collection build, galaxy.yml build_ignore), i.e. what users install and
# what Galaxy's importer runs sanity on. The pytest suite and its harness are dev-only, not in it.
stage_collection() {
    local dest="$1/ansible_collections/onionlab/tor"
    mkdir -p "$dest" "$1/build"
    ansible-galaxy collection build --output-path "$1/build" . > /dev/null
    tar -xzf "$1"/build/onionlab-tor-*.tar.gz -C "$dest"
    echo "$dest"
}

# extra_target_pythons ANSIBLE_TEST_PYTHON: --python-interpreter options for further CPythons that
# this ansible-test supports for targets, skipping pyenv shims that do not resolve.
extra_target_pythons() {
    "$1" - "$CONTROLLER_PYTHON" <<'EOF'
import glob, os, shutil, subprocess, sys
from ansible_test._internal.constants import SUPPORTED_PYTHON_VERSIONS
controller = sys.argv[1]
pyenv_root = os.environ.get('PYENV_ROOT')
if not pyenv_root and shutil.which('pyenv'):
    pyenv_root = subprocess.run(['pyenv', 'root'], capture_output=True, text=True).stdout.strip()
pyenv_root = pyenv_root or os.path.expanduser('~/.pyenv')
for version in SUPPORTED_PYTHON_VERSIONS:
    if version == controller or tuple(map(int, version.split('.'))) < (3, 7):
        continue
    # On PATH, else pyenv's own install (its shims answer only for the selected version).
    path = shutil.which('python' + version)
    pyenv = sorted(glob.glob('%s/versions/%s.*/bin/python%s' % (pyenv_root, version, version)))
    candidates = [p for p in [path] + pyenv[-1:] if p]
    for path in candidates:
        try:
            real = subprocess.run([path, '-c', 'import sys; print(sys.executable)'], capture_output=True,
                                  text=True, timeout=120, check=True).stdout.strip()  # nice 19 (the idle lane)
        except Exception:
            continue
        if real:
            print(version + '=' + real)
            break
EOF
}

failures=()
CHECKED_PYTHONS="$CONTROLLER_PYTHON"

# run_sanity LABEL VENV_BIN [ansible-test args...]   (controller Python: $CONTROLLER_PYTHON)
run_sanity() {
    local label="$1" bin="$2"; shift 2
    local logfile="$LOG_DIR/$label.log" rc=0 start
    start=$(date +%s)
    log "ansible-test sanity, $label: ansible-core $("$bin/python" -c 'from ansible.release import __version__ as v; print(v)') $*"
    ( cd "$STAGED" && PATH="$bin:$PATH" ansible-test sanity --color no --python "$CONTROLLER_PYTHON" "$@" ) 2>&1 \
        | tee "$logfile" || rc=$?
    log "$label: exit $rc in $(( $(date +%s) - start ))s (log: $logfile)"
    if [ "$rc" != 0 ]; then failures+=("$label")
    fi
}

# run_target_pythons LABEL VENV_BIN: compile and import on the further target Pythons.
run_target_pythons() {
    local label="$1" bin="$2" entry version interp
    for entry in $(extra_target_pythons "$bin/python"); do
        version=${entry%%=*}; interp=${entry#*=}
        # A target Python already checked by the newest ansible-test is not checked again.
        case " $CHECKED_PYTHONS " in *" $version "*) continue ;; esac
        CHECKED_PYTHONS+=" $version"
        local logfile="$LOG_DIR/$label-py$version.log" rc=0
        # ansible-test also looks pythonX.Y up on PATH: let that find the real interpreter.
        mkdir -p "$PYTHONS_DIR"
        ln -sfn "$interp" "$PYTHONS_DIR/python$version"
        log "ansible-test sanity, $label, target Python $version ($interp): compile import"
        ( cd "$STAGED" && PATH="$bin:$ONIONLAB_ROOT/$PYTHONS_DIR:$PATH" ansible-test sanity --color no \
            --test compile --test import \
            --python "$version" --python-interpreter "$interp" ) 2>&1 | tee "$logfile" || rc=$?
        if [ "$rc" != 0 ]; then failures+=("$label-py$version"); fi
    done
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
STAGED=$(stage_collection "$tmp")
only="${SANITY_ONLY:-}"
# shellcheck disable=SC2206
extra_args=(${SANITY_ARGS:-})

if [ -z "$only" ] || [ "$only" = newest ]; then
    place_get_pip "$ONIONLAB_ROOT/.venv/bin/python"
    run_sanity newest "$ONIONLAB_ROOT/.venv/bin" "${extra_args[@]}"
    run_target_pythons newest "$ONIONLAB_ROOT/.venv/bin"
fi
if [ -z "$only" ] || [ "$only" = oldest ]; then
    oldest_bin=$(bash tests/utils/core-venv.sh 2.17)
    place_get_pip "$oldest_bin/python"
    oldest_tests=()
    for t in ${SANITY_OLDEST_TESTS:-}; do oldest_tests+=(--test "$t"); done
    run_sanity oldest "$oldest_bin" "${oldest_tests[@]}" "${extra_args[@]}"
    run_target_pythons oldest "$oldest_bin"
fi

not_checked=""
if [ -z "$only" ] || [ "$only" = latest ]; then
    rc=0
    latest_bin=$(bash tests/utils/core-venv.sh 2.21) || rc=$?
    if [ "$rc" = 3 ]; then
        not_checked="ansible-core 2.21 NOT CHECKED (no Python 3.12+ on this machine)"
    elif [ "$rc" != 0 ]; then
        failures+=("latest-venv")
    else
        CONTROLLER_PYTHON=$("$latest_bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
        CHECKED_PYTHONS+=" $CONTROLLER_PYTHON"
        place_get_pip "$latest_bin/python"
        run_sanity latest "$latest_bin" "${extra_args[@]}"
        run_target_pythons latest "$latest_bin"
    fi
fi

if [ ${#failures[@]} -gt 0 ]; then
    printf '\n==== ansible-test sanity FAILED: %s\n' "${failures[*]}"
    for label in "${failures[@]}"; do
        printf -- '---- %s (full log: %s)\n' "$label" "$LOG_DIR/$label.log"
        grep -E '^(ERROR|FATAL): ' "$LOG_DIR/$label.log" | sed "s|$STAGED/||" || true
    done
    printf '\nRerun one with: SANITY_ONLY=newest|oldest|latest SANITY_ARGS="--test NAME" ./run test 20-sanity\n'
    exit 1
fi
printf '\nansible-test sanity clean: %s%s\n' "${only:-newest, oldest and latest}" "${not_checked:+; $not_checked}"
