#!/usr/bin/env bash
# Every module from the installed Galaxy artifact (ONIONLAB_INSTALLED_COLLECTIONS, set by
# tests/ci/50-galaxy.sh): a throwaway tor, then tests/installed/all_modules.yml with only the
# installed copy on the collections path, once with each ansible-core we test:
# .venv's (2.19), the oldest declared (2.17) and the newest released (2.21, Python 3.12+;
# NOT CHECKED, said so, on a machine without Python 3.12+).
set -euo pipefail
cd "$ONIONLAB_ROOT"
python tests/installed/run_installed.py "$ONIONLAB_INSTALLED_COLLECTIONS" "$ONIONLAB_ROOT/.venv/bin"
python tests/installed/run_installed.py "$ONIONLAB_INSTALLED_COLLECTIONS" "$(bash tests/utils/core-venv.sh 2.17)"
rc=0
latest_bin=$(bash tests/utils/core-venv.sh 2.21) || rc=$?
if [ "$rc" = 3 ]; then
    echo "-- ansible-core 2.21 NOT CHECKED against the installed copy (no Python 3.12+ on this machine)"
elif [ "$rc" != 0 ]; then
    exit "$rc"
else
    python tests/installed/run_installed.py "$ONIONLAB_INSTALLED_COLLECTIONS" "$latest_bin"
fi
