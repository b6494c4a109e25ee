#!/usr/bin/env bash
# The roles on several real hosts: molecule scenarios default, restore and remove on the
# systemd-nspawn bed (tests/harness/hosts.py) joined to the private Tor network
# (tests/harness/privnet.py). The smoke scenario of the bed itself runs in the pytest step.
set -euo pipefail
cd "$ONIONLAB_ROOT"
python tests/harness/hosts.py ensure-packages
export ANSIBLE_COLLECTIONS_PATH="$ONIONLAB_ROOT/.build/collections"
cd extensions
for scenario in default restore remove; do
    start=$(date +%s)
    molecule test -s "$scenario"
    echo "molecule scenario $scenario passed in $(( $(date +%s) - start ))s"
done
