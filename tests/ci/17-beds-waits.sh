#!/usr/bin/env bash
# lane: waits
# The bed tests of tests/ci/beds.txt marked 'waits', in a lane of their own: tests whose minutes are mostly waits on
# tor's own events (a rolling upgrade's gates and soak, the vanguards addon choosing its layers, the watchdog's
# repair), little CPU, so that their waits overlap the CPU work of the three other lanes instead of lengthening one
# of them (docs/maintaining.md, Lanes). Like 10-pytest, a skip fails the step.
exec bash "$ONIONLAB_ROOT/tests/ci/beds.sh" waits "$@"
