#!/usr/bin/env bash
# lane: checks
# The bed tests of tests/ci/beds.txt marked 'checks' (Onionprobe and Alertmanager watching the private network
# from outside), first in the checks lane: they mostly wait on the network (Onionprobe's rounds, an alert's way to
# its receiver), which overlaps the other lanes' CPU work while all four run; the lane's CPU-bound steps (sanity,
# molecule, lint) come after them and use the cores the lanes that end first leave free. Like 10-pytest, a skip
# fails the step.
exec bash "$ONIONLAB_ROOT/tests/ci/beds.sh" checks "$@"
