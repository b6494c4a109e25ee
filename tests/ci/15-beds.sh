#!/usr/bin/env bash
# lane: beds
# The long bed tests listed in tests/ci/beds.txt (docs run as printed on stock hosts, Onionbalance on
# the private network, metrics with a real Prometheus, the tor role on stock hosts, the serving roles),
# in one pytest beside 10-pytest (tests/ci/all.sh runs the lanes at once); the lines marked 'checks' run in
# step 13-beds-checks instead. Like 10-pytest, a skip fails the step.
exec bash "$ONIONLAB_ROOT/tests/ci/beds.sh" beds "$@"
