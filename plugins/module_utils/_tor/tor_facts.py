# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What we know of the tor we talk to (one GETINFO and one GETCONF), and the per-tor lock every
run that changes its services holds.

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import UnrecognizedKey
from ansible_collections.onionlab.tor.plugins.module_utils._tor.lock import DEFAULT_TIMEOUT, TorLock

DEFAULT_LOCK_TIMEOUT = DEFAULT_TIMEOUT


class TorFacts:
    """What we need to know about the tor we talk to, read in one GETINFO and one GETCONF."""

    def __init__(self, ctl):
        info = ctl.get_info("config-file", "process/pid", "process/uid", "process/user", "version")
        self.config_file = info.get("config-file") or None
        self.pid = info.get("process/pid") or None
        try:
            self.uid = int(info.get("process/uid"))
        except (TypeError, ValueError):
            self.uid = None
        if self.uid is not None and self.uid < 0:
            self.uid = None
        self.user = info.get("process/user") or None
        self.version = info.get("version")
        conf = ctl.get_conf_map("DataDirectory", "User", "HiddenServiceNonAnonymousMode")
        self.data_dir = (conf.get("DataDirectory") or [None])[0]
        # tor-wide: every onion service of this tor is non-anonymous (single-hop); reported, never set here
        self.non_anonymous = (conf.get("HiddenServiceNonAnonymousMode") or ["0"])[0] == "1"
        configured_user = (conf.get("User") or [None])[0]
        if configured_user:
            self.user = configured_user
            try:
                import pwd
                self.uid = pwd.getpwnam(configured_user).pw_uid
            except (ImportError, KeyError):
                pass
        if self.uid is not None:
            try:
                import pwd
                self.gid = pwd.getpwuid(self.uid).pw_gid
            except (ImportError, KeyError):
                self.gid = None
        else:
            self.gid = None

    def summary(self):
        """The module results' `tor`: what the services depend on tor-wide."""
        return {"version": self.version, "non_anonymous": self.non_anonymous}


def vanguards_lite(ctl):
    """VanguardsLiteEnabled ('0', '1' or 'auto'; tor 0.4.7 and later), None on a tor without it."""
    try:
        value = (ctl.get_conf_map("VanguardsLiteEnabled").get("VanguardsLiteEnabled") or [None])[0]
    except UnrecognizedKey:
        return None
    return value if value in ("0", "1", "auto") else None


def tor_lock(ctl, facts, timeout):
    """The lock every run that changes this tor's services holds (see lock.py)."""
    return TorLock(facts.data_dir, getattr(getattr(ctl, "sock", None), "where", "") or "", timeout)
