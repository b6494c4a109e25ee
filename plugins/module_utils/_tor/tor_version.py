# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor's version on a host, as code (the tor role's tor_version): which package version is installed, which tor
binary is on disk and which one runs (a tor upgraded on disk but not restarted runs the old one), the apt pin that
keeps an exact version against an unattended upgrade, and the new version's binary reading the torrc before the
package is installed.

Standard library only; commands run through ``run(argv) -> (rc, stdout, stderr)`` (the module's run_command).
This is a private module_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import os
import re

PIN_FILE = "/etc/apt/preferences.d/onionlab-tor"
PIN_HEADER = "# Written by the onionlab.tor.tor role (tor_version); local changes are overwritten.\n"
KEYWORDS = ("present", "latest")
# Debian's version syntax (deb-version(7): [epoch:]upstream[-revision]) and RPM's version-release: one word
_VERSION = re.compile(r"[0-9][A-Za-z0-9.+~:_-]{0,99}\Z")
_TOR_VERSION = re.compile(r"^Tor version ([0-9]+(?:\.[0-9]+)+(?:-[0-9A-Za-z]+)?)", re.M)


def problem(value):
    """Why value is not a tor_version (present, latest, or one exact package version), else None."""
    if value in KEYWORDS:
        return None
    if not isinstance(value, str) or not _VERSION.match(value):
        return ("tor_version must be present, latest or an exact package version (as `apt-cache policy tor` or "
                "`dnf list --showduplicates tor` shows it, e.g. 0.4.9.11-1~deb12u1); got %r" % (value,))
    return None


def pin_text(package, version):
    """The apt preferences file that holds package at version (priority 1001: above every archive, so neither
    `apt-get upgrade` nor unattended-upgrades moves it, and apt installs it even when it is older)."""
    return "%sPackage: %s\nPin: version %s\nPin-Priority: 1001\n" % (PIN_HEADER, package, version)


def installed_version(run, family, package):
    """The installed package's version, None when it is not installed."""
    if family == "RedHat":
        rc, out, _err = run(["rpm", "-q", "--qf", "%{VERSION}-%{RELEASE}", package])
        return out.strip() if rc == 0 and out.strip() else None
    rc, out, _err = run(["dpkg-query", "-W", "-f=${Status} ${Version}", package])
    words = out.split()
    if rc != 0 or len(words) < 4 or words[2] != "installed":
        return None
    return words[3]


def binary_version(run, path):
    """tor's own version ("0.4.9.11") of the binary at path (`tor --version`), None when it does not say."""
    rc, out, _err = run([path, "--version"])
    match = _TOR_VERSION.search(out or "")
    return match.group(1) if rc == 0 and match else None


def running(run, unit, readlink=os.readlink):
    """What runs as the unit's main process: {pid, version, replaced}; replaced: its binary was replaced on disk
    since it started (a package upgraded, tor not restarted: /proc/PID/exe names a deleted file). The version is
    the running binary's own (/proc/PID/exe --version works for a deleted one too). None when nothing runs."""
    rc, out, _err = run(["systemctl", "show", "-p", "MainPID", "--value", unit])
    pid = int(out.strip()) if rc == 0 and out.strip().isdigit() else 0
    if not pid:
        return None
    exe = "/proc/%d/exe" % pid
    try:
        target = readlink(exe)
    except OSError:
        return {"pid": pid, "version": None, "replaced": None}
    return {"pid": pid, "version": binary_version(run, exe), "replaced": target.endswith(" (deleted)")}


def stale_message(installed_binary, now, package=None):
    """What the run says about a tor that runs another binary than the one installed, else None."""
    if not now or not installed_binary:
        return None
    if now.get("replaced") or (now.get("version") and now["version"] != installed_binary):
        return ("the running tor (PID %d, tor %s) started before its binary was replaced on disk (now tor %s%s): the "
                "package was upgraded and tor not restarted; the new binary runs from tor's next start"
                % (now["pid"], now.get("version") or "of an older binary", installed_binary,
                   ", package %s" % package if package else ""))
    return None


def verify_with_package(run, version, torrc_path, scratch, package="tor"):
    """The torrc at torrc_path as the tor of package=version reads it, before that version is installed (Debian):
    the package downloaded (`apt-get download`) and unpacked (`dpkg-deb -x`) in scratch, its tor binary run with
    --verify-config and its own service defaults torrc. Returns (problem, missing): problem None when it accepts
    the torrc, else what it said (or why it could not run); missing: the package could not be downloaded (not in
    the host's apt index: the caller may refresh the index and ask again)."""
    rc, out, err = run(["apt-get", "download", "-q", "%s=%s" % (package, version)], cwd=scratch)
    debs = [f for f in os.listdir(scratch) if f.endswith(".deb")]
    if rc != 0 or len(debs) != 1:
        return ("the package %s=%s could not be downloaded to check the torrc with its tor (is that version in the "
                "host's apt sources? `apt-cache policy %s`): %s" % (package, version, package,
                                                                    (err or out).strip()[-500:])), True
    root = os.path.join(scratch, "root")
    rc, out, err = run(["dpkg-deb", "-x", os.path.join(scratch, debs[0]), root])
    binary = os.path.join(root, "usr", "bin", "tor")
    if rc != 0 or not os.path.isfile(binary):
        return "the package %s=%s could not be unpacked: %s" % (package, version, (err or out).strip()[-500:]), False
    defaults = os.path.join(root, "usr", "share", "tor", "tor-service-defaults-torrc")
    argv = [binary, "--verify-config", "--hush", "-f", torrc_path,
            "--defaults-torrc", defaults if os.path.isfile(defaults) else "/dev/null"]
    rc, out, err = run(argv)
    if rc != 0:
        said = "\n".join(line for line in (out + err).splitlines() if line.strip())[-1500:]
        return "tor %s refuses the torrc (%s --verify-config):\n%s" % (version, package, said), False
    return None, False
