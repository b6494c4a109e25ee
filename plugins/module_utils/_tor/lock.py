# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One advisory lock per tor on this host, held by every run that changes tor's onion services.

This is a private module_utils file of onionlab.tor; its API may change at any time.

Changing tor's services is a read-modify-write (read the HiddenService block, SETCONF the whole
block, rewrite the drop-in; read, change and write the ephemeral record), so two runs at once
against one tor would lose each other's services. Every run takes this lock first, whatever
config_file or control endpoint it uses:

* the tor is named by its DataDirectory: where that directory is on this host and can be
  opened, the lock is an flock(2) on the directory itself (tor's own lock is the file "lock"
  inside it, so the two never meet), shared by every user who can open it;
* otherwise (a tor reached over TCP whose DataDirectory is not on this host or not readable),
  a lock file named after the DataDirectory and endpoint, in a directory private to this user.

flock is released by the kernel when its holder exits, however it exits: a run killed with
SIGKILL never wedges the next one. A holder that hangs (stopped, blocked) makes the next run
wait up to its timeout and then fail with the holder's PID and command line.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tempfile
import time

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX host
    fcntl = None

from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

DEFAULT_TIMEOUT = 120.0


class LockTimeout(TorError):
    """Another run kept the lock longer than we were willing to wait."""


def _private_dir():
    """A directory only this user can write: /run/onionlab-tor for root, else the user's
    runtime directory or a 0700 directory in the temp dir."""
    if os.geteuid() == 0 and os.path.isdir("/run"):
        base = "/run/onionlab-tor"
    elif os.environ.get("XDG_RUNTIME_DIR") and os.path.isdir(os.environ["XDG_RUNTIME_DIR"]):
        base = os.path.join(os.environ["XDG_RUNTIME_DIR"], "onionlab-tor")
    else:
        base = os.path.join(tempfile.gettempdir(), "onionlab-tor-%d" % os.geteuid())
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o022:
        raise TorError("the lock directory %s is not a directory owned by this user and closed to others; "
                       "remove it" % base)
    return base


def holders(fd):
    """PIDs that hold an flock on the file behind fd (from /proc/locks), without ours."""
    st = os.fstat(fd)
    wanted = "%02x:%02x:%d" % (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    pids = []
    try:
        with open("/proc/locks") as handle:
            for line in handle:
                fields = line.split()
                if "->" in fields:  # a waiter, not a holder
                    continue
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == wanted:
                    pid = int(fields[4])
                    if pid != os.getpid() and pid not in pids:
                        pids.append(pid)
    except (OSError, ValueError):
        pass
    return pids


def _describe(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            words = handle.read(4096).split(b"\0")
        return "%d (%s)" % (pid, " ".join(w.decode("utf-8", "replace") for w in words if w)[:200])
    except OSError:
        return str(pid)


# the locks this process holds, (st_dev, st_ino) -> how many TorLocks hold it: a TorLock taken again inside
# one that holds it (a run that holds the lock across several changes) nests instead of waiting for itself
_HELD = {}


class TorLock(object):
    """with TorLock(data_dir, endpoint, timeout): ... -- the lock of one tor (re-entrant within a process)."""

    def __init__(self, data_dir, endpoint="", timeout=DEFAULT_TIMEOUT):
        self.data_dir = data_dir
        self.endpoint = endpoint
        self.timeout = timeout
        self.fd = None
        self.where = None
        self._nested = None

    def _open(self):
        if self.data_dir and os.path.isabs(self.data_dir):
            try:
                fd = os.open(self.data_dir, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
                self.where = self.data_dir
                return fd
            except OSError:
                pass
        name = hashlib.sha256(("%s\0%s" % (self.data_dir or "", self.endpoint)).encode("utf-8")).hexdigest()[:24]
        self.where = os.path.join(_private_dir(), "tor-%s.lock" % name)
        return os.open(self.where, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) |
                       getattr(os, "O_CLOEXEC", 0), 0o600)

    def acquire(self):
        if fcntl is None:
            return self
        fd = self._open()
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino)
        if _HELD.get(key):
            os.close(fd)
            _HELD[key] += 1
            self._nested = key
            return self
        deadline = time.monotonic() + self.timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
            if time.monotonic() >= deadline:
                who = ", ".join(_describe(pid) for pid in holders(fd)) or "unknown"
                os.close(fd)
                raise LockTimeout(
                    "another run has been changing this tor's onion services for more than %g s (it holds the "
                    "lock on %s; process %s); nothing was changed. Wait for it to finish, or stop it if it is "
                    "stuck, then run again (lock_timeout sets how long a run waits)" % (self.timeout, self.where, who))
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
        self.fd = fd
        _HELD[key] = 1
        return self

    def release(self):
        if self._nested is not None:
            _HELD[self._nested] -= 1
            self._nested = None
            return
        if self.fd is not None:
            st = os.fstat(self.fd)
            _HELD.pop((st.st_dev, st.st_ino), None)
            try:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
