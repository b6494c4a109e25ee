#!/usr/bin/env bash
# Makes .build/venv-2.17: the oldest ansible-core of meta/runtime.yml's range, pinned in
# tests/utils/requirements-ansible-2.17.txt, remade when that pin changes. Only for running
# ansible-test / ansible-playbook of that version; the modules' own code runs from the main .venv.
# Usage: bash tests/utils/oldest-venv.sh   (prints the venv's bin directory)
set -euo pipefail
cd "${ONIONLAB_ROOT:-$(dirname "$(readlink -f "$0")")/../..}"
req=tests/utils/requirements-ansible-2.17.txt
venv=.build/venv-2.17
stamp="$venv/.requirements.sha256"
want=$(sha256sum < "$req" | cut -d' ' -f1)
if [ ! -x "$venv/bin/ansible-test" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    printf -- '-- creating %s from %s\n' "$venv" "$req" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >&2
    echo "$want" > "$stamp"
fi
echo "$PWD/$venv/bin"
