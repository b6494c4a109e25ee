#!/usr/bin/env bash
# The roles on several real hosts: molecule scenarios default, restore and remove on the
# systemd-nspawn bed (tests/harness/hosts.py) joined to the private Tor network
# (tests/harness/privnet.py). Each scenario's create and destroy are the delegated driver's shared
# playbooks (molecule/shared) over that harness. Onionbalance on several hosts is proved by the docs run
# (guide_onionbalance on four stock hosts) and tests/integration/privnet/test_privnet_onionbalance.py (failover,
# a frontend rebuilt from the escrow); the molecule scenario balanced did the same a third time (removed).
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
