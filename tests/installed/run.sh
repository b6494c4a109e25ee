#!/usr/bin/env bash
# Every module from the installed Galaxy artifact (ONIONLAB_INSTALLED_COLLECTIONS, set by
# tests/ci/50-galaxy.sh): a throwaway tor, then tests/installed/all_modules.yml with only the
# installed copy on the collections path.
set -euo pipefail
cd "$ONIONLAB_ROOT"
exec python tests/installed/run_installed.py "$ONIONLAB_INSTALLED_COLLECTIONS"
