#!/usr/bin/env bash
# Unit and integration tests (pytest over tests/unit and tests/integration, real tor).
# pytest's exit code 5 (no tests collected) is a failure like any other non-zero code.
set -euo pipefail
cd "$ONIONLAB_ROOT"
python -m pytest -p no:cacheprovider -q tests/unit tests/integration "$@"
