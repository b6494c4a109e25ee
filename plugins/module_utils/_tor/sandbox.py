# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the running tor may write: the one check, before a directory is handed to tor, that tor
can create and write it.

This is a private module_utils file of onionlab.tor; its API may change at any time.

A tor that is told to use a directory it cannot write (SETCONF HiddenServiceDir, or the same line
in torrc at a reload) logs "Read-only file system", decides its configuration left it "in a broken
state" and exits: every ephemeral service goes with it. Debian's unit sandboxes tor
(ProtectSystem=full, ReadOnlyDirectories=/, ReadWriteDirectories=-/var/lib/tor ...) and its
AppArmor profile system_tor confines it further where AppArmor is active. Measured, not guessed
from unit files, so that any unit, drop-in (ReadWritePaths=), ProtectHome or container counts:

* tor's PID (GETINFO process/pid); only a process of this host whose /proc/PID/exe is a tor
  binary is looked at (over the network, or for a fake, nothing is known and nothing refused);
* /proc/PID/mountinfo: the mounts in tor's mount namespace; a directory (or, while it does not
  exist yet, its nearest existing parent) on a mount that is read-only there cannot be written
  by tor, nor can one on tor's private /tmp (PrivateTmp: not the /tmp this module sees);
* /proc/PID/attr/apparmor/current (or attr/current): tor's AppArmor profile and mode; in enforce
  mode the directories it may write are the `/DIR/** ...w...` rules of the profile's file and its
  local/ additions under /etc/apparmor.d (a profile whose file cannot be read refuses nothing).

Nothing here imports Ansible; the parsers take text, so they are tested with recorded files.
"""

from __future__ import annotations

import os
import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

# file systems that are not a place for a service directory, whatever their mount flags
_PSEUDO_FS = frozenset(["proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "hugetlbfs", "fusectl",
                        "debugfs", "tracefs", "securityfs", "pstore", "bpf", "configfs", "autofs",
                        "binfmt_misc", "efivarfs", "devtmpfs", "nsfs", "rpc_pipefs"])
_PSEUDO_DIRS = ("/proc", "/sys", "/dev")
_PRIVATE_TMP = "systemd-private-"
_ESCAPE_RE = re.compile(r"\\([0-7]{3})")
APPARMOR_DIR = "/etc/apparmor.d"


class Mount(object):
    """One line of /proc/PID/mountinfo: mount_point, root (the part of the file system mounted
    there), fstype, read_only (the mount's own flags, or the file system's)."""

    __slots__ = ("mount_point", "root", "fstype", "read_only")

    def __init__(self, mount_point, root, fstype, read_only):
        self.mount_point = mount_point
        self.root = root
        self.fstype = fstype
        self.read_only = read_only

    @property
    def private_tmp(self):
        return _PRIVATE_TMP in self.root

    def __repr__(self):
        return "Mount(%r, %s%s)" % (self.mount_point, "ro" if self.read_only else "rw",
                                    ", private tmp" if self.private_tmp else "")


def _unescape(field):
    return _ESCAPE_RE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text):
    """[Mount] in the file's order (a later mount on the same point hides an earlier one).
    Format (proc(5)): ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS.
    Malformed lines are skipped."""
    mounts = []
    for line in (text or "").splitlines():
        fields = line.split(" ")
        try:
            dash = fields.index("-", 6)
            root, mount_point, options = fields[3], fields[4], fields[5].split(",")
            fstype, super_options = fields[dash + 1], fields[dash + 3].split(",")
        except (ValueError, IndexError):
            continue
        mounts.append(Mount(_unescape(mount_point), _unescape(root), fstype,
                            "ro" in options or "ro" in super_options))
    return mounts


def _under(path, directory):
    directory = directory.rstrip("/") or "/"
    return directory == "/" or path == directory or path.startswith(directory + "/")


def mount_of(mounts, path):
    """The Mount that `path` (absolute, normalised) is on: the last one of the longest mount
    point that holds it; None when none does."""
    best = None
    for mount in mounts:
        if _under(path, mount.mount_point):
            if best is None or len(mount.mount_point.rstrip("/")) >= len(best.mount_point.rstrip("/")):
                best = mount
    return best


def writable_places(mounts):
    """The mount points tor may write under: read-write, real file systems, not tor's private
    /tmp; one that lies under another listed one is left out (/run/lock under /run)."""
    visible = {}
    for mount in mounts:
        visible[mount.mount_point] = mount   # the last mount on a point is the one seen
    places = sorted(m.mount_point for m in visible.values()
                    if not m.read_only and m.fstype not in _PSEUDO_FS and not m.private_tmp
                    and not any(_under(m.mount_point, d) for d in _PSEUDO_DIRS)
                    and mount_of(mounts, m.mount_point) is m)
    return [p for p in places if not any(q != p and _under(p, q) for q in places)]


def parse_apparmor_label(text):
    """(profile, mode) of /proc/PID/attr/current: 'system_tor (enforce)' -> ('system_tor',
    'enforce'); 'unconfined' -> ('unconfined', None); empty or unreadable -> (None, None)."""
    text = (text or "").replace("\0", "").strip()
    if not text:
        return None, None
    m = re.match(r"^(.*?)\s+\((\w+)\)$", text)
    if m:
        return m.group(1), m.group(2)
    return text, None


def _expand_braces(pattern):
    """AppArmor's {a,b} alternations expanded ('/{,var/}run' -> ['/run', '/var/run'])."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    out = []
    for choice in m.group(1).split(","):
        out.extend(_expand_braces(pattern[:m.start()] + choice + pattern[m.end():]))
    return out


_RULE_RE = re.compile(r"^\s*(?:(?:audit|allow|owner)\s+)*(/\S+)\s+([a-zA-Z]+)\s*,")


def apparmor_write_dirs(*texts):
    """The directories whose whole tree a profile lets its process write: its `/DIR/** PERMS,`
    rules with w (or a) in PERMS, from the profile's text and its local additions. Rules for
    single files or with other globs in the directory are not places for a service directory."""
    dirs = []
    for text in texts:
        for line in (text or "").splitlines():
            m = _RULE_RE.match(line)
            if not m or not set("wa") & set(m.group(2)):
                continue
            for path in _expand_braces(m.group(1)):
                if path.endswith("/**") and not set("*?[]{}") & set(path[:-3]):
                    directory = path[:-3] or "/"
                    if directory not in dirs:
                        dirs.append(directory)
    return dirs


class Sandbox(object):
    """What confines one tor process. pid; unit: its systemd unit (None: not known); mounts: its
    [Mount] (None: not known); profile, mode: its AppArmor label; apparmor_dirs: what that profile
    lets it write (None: unconfined, or not known)."""

    def __init__(self, pid, mounts=None, unit=None, profile=None, mode=None, apparmor_dirs=None):
        self.pid = pid
        self.mounts = mounts
        self.unit = unit
        self.profile = profile
        self.mode = mode
        self.apparmor_dirs = apparmor_dirs

    @classmethod
    def read(cls, pid, proc="/proc", apparmor_dir=APPARMOR_DIR):
        """The sandbox of tor process `pid` on this host, or None when that is not a tor binary
        here (a tor over the network, a PID of another namespace) or unreadable."""
        try:
            pid = int(pid)
            exe = os.readlink("%s/%d/exe" % (proc, pid))
        except (OSError, TypeError, ValueError):
            return None
        exe = exe[:-len(" (deleted)")] if exe.endswith(" (deleted)") else exe
        if not os.path.basename(exe).startswith("tor"):
            return None
        base = "%s/%d/" % (proc, pid)
        mountinfo = _read(base + "mountinfo")
        label = _read(base + "attr/apparmor/current") or _read(base + "attr/current")
        profile, mode = parse_apparmor_label(label)
        apparmor_dirs = None
        if profile not in (None, "unconfined") and mode == "enforce" and "/" not in profile:
            texts = [_read(os.path.join(apparmor_dir, profile)), _read(os.path.join(apparmor_dir, "local", profile))]
            if texts[0] is not None:
                apparmor_dirs = apparmor_write_dirs(*texts)
        return cls(pid, parse_mountinfo(mountinfo) if mountinfo else None, unit_of_cgroup(_read(base + "cgroup")),
                   profile, mode, apparmor_dirs)

    def refusal(self, path):
        """Why tor cannot write the directory `path` (absolute; it need not exist yet), as one
        message that names where it may write and the fix; None when nothing says it cannot."""
        path = resolve(path)
        who = "tor (PID %d%s)" % (self.pid, ", unit %s" % self.unit if self.unit else "")
        if self.mounts:
            mount = mount_of(self.mounts, path)
            if mount is not None and (mount.read_only or mount.private_tmp):
                places = writable_places(self.mounts)
                why = ("is on %s, which is read-only for %s" % (mount.mount_point, who) if mount.read_only else
                       "is on %s, a private /tmp of %s (PrivateTmp) that this module does not see"
                       % (mount.mount_point, who))
                return ("service directory %s %s: tor cannot write it, and would refuse the configuration or exit. "
                        "tor may write under: %s. "
                        "Use a directory under /var/lib/tor, or let tor write there with a drop-in for its "
                        "unit (systemctl edit %s: [Service] ReadWritePaths=%s), then restart tor; nothing was "
                        "sent to tor" % (path, why, ", ".join(places) or "nothing",
                                         self.unit or "tor@default", os.path.dirname(path) or path))
        if self.apparmor_dirs is not None and not any(_under(path, d) for d in self.apparmor_dirs):
            local = os.path.join(APPARMOR_DIR, "local", self.profile)
            return ("service directory %s is outside what %s may write under its AppArmor profile %s (%s): %s. "
                    "tor cannot write it, and would refuse the configuration or exit. Use a directory under "
                    "/var/lib/tor, or add the line 'owner %s/** rwk,' to %s and reload the profile "
                    "(apparmor_parser -r %s); nothing was sent to tor"
                    % (path, who, self.profile, self.mode, ", ".join(self.apparmor_dirs) or "nothing",
                       path, local, os.path.join(APPARMOR_DIR, self.profile)))
        return None


def unit_of_cgroup(text):
    """The systemd unit (name.service) of a /proc/PID/cgroup text, or None."""
    for line in (text or "").splitlines():
        path = line.split(":", 2)[-1]
        for part in reversed(path.split("/")):
            if part.endswith(".service") or part.endswith(".scope"):
                return part if part.endswith(".service") else None
    return None


def resolve(path):
    """`path` with the symbolic links of its existing part resolved (as tor will meet it)."""
    path = os.path.normpath(path)
    head, tail = path, []
    while head != "/" and not os.path.exists(head):
        head, name = os.path.split(head)
        tail.insert(0, name)
    return os.path.join(os.path.realpath(head), *tail) if tail else os.path.realpath(head)


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def read_sandbox(ctl):
    """The Sandbox of the tor behind a controller (GETINFO process/pid), or None when unknown."""
    try:
        pid = ctl.get_info("process/pid").get("process/pid")
    except TorError:
        return None
    return Sandbox.read(pid)


__all__ = ["Mount", "Sandbox", "parse_mountinfo", "mount_of", "writable_places", "parse_apparmor_label",
           "apparmor_write_dirs", "unit_of_cgroup", "resolve", "read_sandbox"]
