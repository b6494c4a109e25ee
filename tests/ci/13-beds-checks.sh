#!/usr/bin/env bash
# lane: checks
# The bed tests of tests/ci/beds.txt marked 'checks' (Onionprobe and Alertmanager watching the private network
# from outside, the watchdog, the upgrade rollout, ...), first in the checks lane: they mostly wait on the network
# (Onionprobe's rounds, an alert's way to its receiver), which overlaps the other lanes' CPU work; the lane's
# CPU-bound steps (sanity, molecule, lint) come after them. Like 10-pytest, a skip fails the step.
exec bash "$ONIONLAB_ROOT/tests/ci/beds.sh" checks "$@"
