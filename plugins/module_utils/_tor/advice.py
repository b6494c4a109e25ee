# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What to do when tor cannot be reached: the one place for the advice that ends a connection or
authentication error (client.connect and auth.read_cookie use it).

This is a private module_utils file of onionlab.tor; its API may change at any time.

Two causes cover nearly every failure on a host with a packaged tor:
* the module is not root and may not open tor's control socket or read its cookie (Debian: both
  are debian-tor's, group debian-tor, no access for others): use become: true;
* tor is not running (no socket, nothing listening, a stale socket): systemctl status tor.
"""

from __future__ import annotations

import errno
import os

PERMISSION_ERRNOS = frozenset([errno.EACCES, errno.EPERM])
NOT_RUNNING_ERRNOS = frozenset([errno.ENOENT, errno.ECONNREFUSED])
NOT_RUNNING = "is tor running? (systemctl status tor)"


def _user():
    try:
        import pwd
        return pwd.getpwuid(os.geteuid()).pw_name
    except (ImportError, KeyError):
        return "uid %d" % os.geteuid()


def _group_of(path):
    try:
        import grp
        return grp.getgrgid(os.stat(path).st_gid).gr_name
    except (ImportError, KeyError, OSError):
        return None


def permission(path):
    """The advice for a file of tor's (control socket, cookie) this process may not open."""
    if os.geteuid() == 0:
        return "the module runs as root and still may not open %s (a security module? check its log)" % path
    group = _group_of(path)
    return ("the module runs as %s, who may not open %s: use become: true (or run it as a member of %s)"
            % (_user(), path, "tor's group %s" % group if group else "tor's group"))


def for_errno(number, path=None):
    """The advice for a failure with this errno on `path` (None when there is nothing to say)."""
    if number in PERMISSION_ERRNOS and path:
        return permission(path)
    if number in NOT_RUNNING_ERRNOS:
        return NOT_RUNNING
    return None


def explain(message, number, path=None):
    """message with the advice for (number, path) appended, when there is one."""
    hint = for_errno(number, path)
    return "%s; %s" % (message, hint) if hint else message


__all__ = ["permission", "for_errno", "explain", "NOT_RUNNING"]
