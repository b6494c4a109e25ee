#!/usr/bin/env bash
# The roles on several real hosts: molecule scenarios default, restore, remove and balanced on the
# systemd-nspawn bed (tests/harness/hosts.py) joined to the private Tor network
# (tests/harness/privnet.py). Each scenario's create and destroy are the delegated driver's shared
# playbooks (molecule/shared) over that harness.
# balanced: Onionbalance on a 4th host in front of 3 backends; its verify prints FAILOVER lines
# (time until every request succeeds again after a backend's tor stops).
set -euo pipefail
cd "$ONIONLAB_ROOT"
python tests/harness/hosts.py ensure-packages
export ANSIBLE_COLLECTIONS_PATH="$ONIONLAB_ROOT/.build/collections"
cd extensions
for scenario in default restore remove balanced; do
    start=$(date +%s)
    molecule test -s "$scenario"
    echo "molecule scenario $scenario passed in $(( $(date +%s) - start ))s"
done
