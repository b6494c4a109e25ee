# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stopping a process the harness started, by its PID (never by name)."""

import os
import signal
import subprocess


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
