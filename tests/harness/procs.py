# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The harness's processes by PID, never by name (standard library only): stopping a process it started (stop), a
process's start time (so a recycled PID is never signalled), whether it lives, and stopping a list of them by PID and
start time (SIGTERM, SIGKILL after a grace period)."""

from __future__ import annotations

import os
import signal
import subprocess
import time


def stop(proc, grace=10.0):
    """SIGTERM to proc's PID, SIGKILL when it has not exited after grace seconds; reaped either way.
    Nothing when proc is None or has already exited."""
    if proc is None or proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)


def proc_starttime(pid):
    """Start time (clock ticks since boot) of pid, or None if it is gone."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            data = f.read()
    except OSError:
        return None
    fields = data.rsplit(')', 1)[1].split()
    if fields[0] == 'Z':  # zombie: as good as gone
        return None
    return int(fields[19])


def pid_alive(pid, starttime=None):
    st = proc_starttime(pid)
    if st is None:
        return False
    return starttime is None or st == starttime


def kill_pids(pids, grace=5.0, again=0.0):
    """SIGTERM each (pid, starttime), SIGKILL the ones left after grace.

    With again > 0, the ones left after grace get a second SIGTERM and
    again seconds more first (systemd-nspawn: the second SIGTERM means
    "terminate now").  Only processes whose start time still matches are
    signalled.  Children of this process are reaped by the caller
    (Popen.wait).  Returns the PIDs that needed SIGKILL."""
    live = [(p, st) for p, st in pids if pid_alive(p, st)]
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGTERM, again)):
        if not live or (sig, wait) == (signal.SIGTERM, 0.0):
            continue
        _signal_all(live, sig)
        deadline = time.monotonic() + wait
        while live and time.monotonic() < deadline:
            time.sleep(0.05)
            live = [(p, st) for p, st in live if pid_alive(p, st)]
    _signal_all(live, signal.SIGKILL)
    return [p for p, _ in live]


def _signal_all(pids, sig):
    for p, _ in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass
