#!/usr/bin/env bash
# Makes .build/venv-X.Y for another ansible-core of meta/runtime.yml's range, pinned in
# tests/utils/requirements-ansible-X.Y.txt, remade when that pin changes:
#   2.17  the oldest declared, on the system python3 (3.11 on Debian 12);
#   2.21  the newest released, whose controller needs Python 3.12+: the first python3.12 or
#         python3.13 on PATH or in pyenv (this machine's image carries both; a plain Debian 12
#         has neither, and then this exits 3 saying so).
# Only for running that ansible-test / ansible-playbook; the modules' own code runs from the
# main .venv. Usage: bash tests/utils/core-venv.sh 2.17|2.21   (prints the venv's bin directory)
set -euo pipefail
cd "${ONIONLAB_ROOT:-$(dirname "$(readlink -f "$0")")/../..}"
version="${1:?usage: core-venv.sh 2.17|2.21}"
req="tests/utils/requirements-ansible-$version.txt"
[ -f "$req" ] || { echo "core-venv.sh: no pin file $req" >&2; exit 2; }
venv=".build/venv-$version"

# find_python MIN_MINOR: a real CPython 3.MIN_MINOR+ (not a pyenv shim that does not resolve).
find_python() {
    local minor candidate root
    root="${PYENV_ROOT:-$HOME/.pyenv}"
    for minor in 12 13 14; do
        [ "$minor" -ge "$1" ] || continue
        for candidate in "$(command -v "python3.$minor" || true)" \
                         $(ls -d "$root"/versions/3."$minor".*/bin/python3."$minor" 2>/dev/null | sort -V | tail -1); do
            [ -n "$candidate" ] || continue
            "$candidate" -c 'import sys, venv; print(sys.executable)' 2>/dev/null && return 0
        done
    done
    return 1
}

case "$version" in
    2.17) python=python3 ;;
    2.21) python=$(find_python 12) || {
              echo "core-venv.sh: ansible-core $version needs Python 3.12+ for its controller, and none" \
                   "is on PATH or in pyenv" >&2
              exit 3; } ;;
    *) echo "core-venv.sh: unknown ansible-core $version" >&2; exit 2 ;;
esac

# one maker at a time: the lanes of ./run test ask for the same venv at once on a fresh clone, and two makers
# racing (rm -rf, venv, pip) leave a broken pip ("cannot import name 'importlib' from pip._internal.metadata")
mkdir -p .build
exec 9>".build/venv-$version.lock"
flock 9
stamp="$venv/.requirements.sha256"
want=$( (cat "$req"; "$python" -c 'import sys; print(sys.version)') | sha256sum | cut -d' ' -f1)
if [ ! -x "$venv/bin/ansible-test" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    printf -- '-- creating %s from %s with %s\n' "$venv" "$req" "$python" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >&2
    echo "$want" > "$stamp"
fi
echo "$PWD/$venv/bin"
