# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files written and read where another user (tor's) can swap a name for a symbolic link: the one
way root writes into tor's directories (service directories, authorized_clients,
ClientOnionAuthDir, DataDirectory) and anywhere a half-written file must never be seen.

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile


def atomic_write(path, text, mode=0o644):
    """Write text (or bytes) via a uniquely named temp file in the same directory (O_EXCL: two
    writers never share one) and rename: never a half-written file. The mode is set on the open
    file (fchmod), never by path: in a directory another user can write, the temp file's name
    could be swapped for a symbolic link to a file of root's."""
    directory = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".onionlab.", dir=directory)
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# -- writing where another user (tor's) can swap a name for a symbolic link ---------------------
# Root writes into directories that tor's user owns (service directories, authorized_clients,
# ClientOnionAuthDir, DataDirectory). There, every name may be replaced by a symbolic link between
# two system calls, so nothing is done by path that follows one: directories are opened with
# O_DIRECTORY|O_NOFOLLOW and changed through the descriptor, files made with O_EXCL|O_NOFOLLOW
# and given their owner and mode on the descriptor, names inside resolved against the directory's
# descriptor (dir_fd).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
SWAPPED = ("not a plain directory (a symbolic link, or swapped for one while this run worked): root follows no "
           "link where another user can put one, so nothing was done through it")
NOT_A_FILE = ("not a regular file (a symbolic link, or swapped for one while this run worked): root follows no "
              "link where another user can put one, so nothing was done through it")


def _refusal(exc, path, message):
    """The OSError for a name that O_NOFOLLOW (ELOOP) or O_DIRECTORY (ENOTDIR) refused; another
    error named after path (the whole path where the call had a name in a dir_fd)."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return OSError(exc.errno, message, path)
    exc.filename = path
    return exc


def open_dir(path, dir_fd=None, shown=None):
    """A descriptor of the directory `path` (relative to dir_fd when given), never through a
    symbolic link at its last component (an OSError saying so instead, naming `shown` or path)."""
    try:
        return os.open(path, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise _refusal(exc, shown or path, SWAPPED)


def set_owner_mode(fd, mode, uid=-1, gid=-1):
    """fchown when uid/gid (-1: unchanged) differ from what the file has, then fchmod (after: a
    chown may clear set-id bits)."""
    st = os.fstat(fd)
    if uid not in (-1, st.st_uid) or gid not in (-1, st.st_gid):
        os.fchown(fd, uid, gid)
    os.fchmod(fd, mode)


def make_dir(path, mode=0o700, uid=-1, gid=-1, dir_fd=None, shown=None):
    """mkdir, then the new directory opened without following a link and given mode and owner
    through its descriptor, which is returned (the caller closes it). A name swapped between the
    two calls is refused: a symbolic link, or a directory that is no longer the one this call made
    (not owned by us)."""
    try:
        os.mkdir(path, mode, dir_fd=dir_fd)
    except OSError as exc:
        raise _refusal(exc, shown or path, SWAPPED)
    fd = open_dir(path, dir_fd, shown)
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            raise OSError(errno.EEXIST, "replaced by another directory while this run made it (by another user "
                          "who can write its parent): nothing was done in it", shown or path)
        set_owner_mode(fd, mode, uid, gid)
    except BaseException:
        os.close(fd)
        raise
    return fd


def fix_file(path, mode, uid=-1, gid=-1, dir_fd=None, shown=None):
    """Give a regular file mode and owner through its descriptor, never through a symbolic link."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise _refusal(exc, shown or path, NOT_A_FILE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, NOT_A_FILE, shown or path)
        set_owner_mode(fd, mode, uid, gid)
    finally:
        os.close(fd)


def read_regular(path, limit, dir_fd=None, shown=None):
    """(bytes, os.stat_result) of a regular file, at most limit bytes, never through a symbolic
    link and never blocking on a FIFO (an OSError instead)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        raise _refusal(exc, shown or path, NOT_A_FILE)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, NOT_A_FILE, shown or path)
        chunks, size = [], 0
        while size < limit:
            chunk = os.read(fd, limit - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def write_secret(path, data, tmp, uid=-1, gid=-1, mode=0o600, dir_fd=None):
    """Write bytes to path atomically for a secret: tmp (a fixed name beside path, so that a
    leftover of an interrupted run is known and removed first) is made with O_EXCL and
    O_NOFOLLOW, given mode (0600 unless told) and uid/gid (-1: unchanged) on its descriptor before
    it holds anything, fsynced and renamed. With dir_fd, path and tmp are names in that directory.
    A failure removes tmp."""
    try:
        os.unlink(tmp, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        try:
            set_owner_mode(fd, mode, uid, gid)
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def private_dir(path, create, what="the directory"):
    """A descriptor of a directory for secrets only this user reads (None when it is missing and not create): made
    0700 when missing (its parents 0755), never through a link, and refused when another user owns it or others may
    enter it."""
    try:
        fd = open_dir(path)
    except FileNotFoundError:
        if not create:
            return None
        parent = os.path.dirname(path.rstrip("/")) or "/"
        os.makedirs(parent, 0o755, exist_ok=True)
        fd = make_dir(path, 0o700)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        os.close(fd)
        raise OSError(errno.EPERM, "%s must be this user's own and mode 0700 (it is %04o, uid %d)"
                      % (what, st.st_mode & 0o7777, st.st_uid), path)
    return fd
