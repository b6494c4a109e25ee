#!/usr/bin/env bash
# lane: net
# The tests on the session's private network, host bed and stock bed (tests/ci/beds.txt lines marked 'net'), in
# one pytest beside 10-pytest, 15-beds and the checks lane (tests/ci/all.sh runs the lanes at once): most of their
# time is spent waiting on the network (bootstrap, descriptor uploads, a fresh client's fetch), which overlaps the
# CPU work of the other lanes. Like 10-pytest, a skip fails the step.
exec bash "$ONIONLAB_ROOT/tests/ci/beds.sh" net "$@"
