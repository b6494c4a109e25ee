#!/usr/bin/env bash
# lane: checks
# The bed tests of tests/ci/beds.txt marked 'checks' (Onionprobe and Alertmanager watching the private network
# from outside), at the end of the checks lane: that lane has the most time to spare, so the beds lane stays
# shorter than the pytest lane. Like 10-pytest, a skip fails the step.
exec bash "$ONIONLAB_ROOT/tests/ci/beds.sh" checks "$@"
