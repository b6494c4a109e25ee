# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_vanguards role's variables, checked (issue 41: roles declare, Python decides): what the addon's
configuration and unit are written from, every wrong variable named in one message; and what the templates write
that is not a variable as given (plan: the unit's StateDirectory= and the addon's arguments, the control lines, the
extra settings' lines). The filter vanguards_settings is its face; the filter config_values checks, before this, that
each value stays one value of its file.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor.torrc import role_bool

# the addon's sections the role lets onion_vanguards_extra_config add to, and the keys the role writes itself there
EXTRA_SECTIONS = ("Vanguards", "Bandguards", "Rendguard")
OWN_KEYS = ("num_layer2_guards", "num_layer3_guards", "circ_max_hsdesc_kilobytes", "circ_max_megabytes")
_INSTANCE_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}\Z")
_UNIT_RE = re.compile(r"^[A-Za-z0-9@_.:-]+\.service\Z")
_IP_RE = re.compile(r"^[0-9A-Fa-f:.]+\Z")
_VERSION_RE = re.compile(r"^[0-9]+(\.[0-9]+)*\Z")
_KEY_RE = re.compile(r"^[a-z0-9_]{1,60}\Z")
_VALUE_BAD_RE = re.compile(r"[\r\n\[\]]")
_PREFIX = "onion_vanguards_"
# systemd's StateDirectory= is relative to this
_STATE_ROOT = "/var/lib/"
METHODS = ("auto", "debian", "pip")
# Debian's package's command; else the virtualenv's bin/vanguards
_DEBIAN_BINARY = "/usr/bin/vanguards"


class SettingsError(ValueError):
    """One message naming every refused variable."""


def _short(value, size=60):
    text = str(value)
    return text if len(text) <= size else text[:size - 3] + "..."


def _whole(value, least):
    """value as a whole number of at least least (an int, or a string of digits as inventories write), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and re.match(r"^\s*[0-9]{1,9}\s*\Z", value):
        value = int(value)
    return value if isinstance(value, int) and value >= least else None


def _extra_refused(extra):
    """The entries of onion_vanguards_extra_config the addon's file cannot take: a section the role does not write, a
    section that is not a mapping, a key that is not a configparser key of the addon or is one the role sets itself, a
    value that is not one line of text (a list, a mapping, a line break or a bracket)."""
    refused = []
    for section, items in extra.items():
        if section not in EXTRA_SECTIONS or not isinstance(items, dict):
            refused.append(_short(section))
            continue
        for key, value in items.items():
            if not isinstance(key, str) or not _KEY_RE.match(key) or key in OWN_KEYS \
                    or isinstance(value, (dict, list, tuple)) or value is None \
                    or _VALUE_BAD_RE.search(str(value)):
                refused.append("%s.%s" % (section, _short(key)))
    return refused


def check(role_vars):
    """role_vars ({name without the onion_vanguards_ prefix: value}) checked; returns them as given. SettingsError
    names each wrong variable with what it must be and what it was."""
    v, wrong = role_vars, []

    def refuse(name, must, got):
        wrong.append("%s%s must be %s (got %s)" % (_PREFIX, name, must, _short(got)))

    if not isinstance(v.get("instance"), str) or not _INSTANCE_RE.match(v["instance"]):
        refuse("instance", "1-40 letters, digits, _ or -", v.get("instance"))
    if not isinstance(v.get("tor_unit"), str) or not _UNIT_RE.match(v["tor_unit"]):
        refuse("tor_unit", "a systemd service name (NAME.service)", v.get("tor_unit"))
    for name in ("num_layer2_guards", "num_layer3_guards"):
        if _whole(v.get(name), 1) is None:
            refuse(name, "a whole number of at least 1", v.get(name))
    for name in ("circ_max_hsdesc_kilobytes", "circ_max_megabytes"):
        if _whole(v.get(name), 0) is None:
            refuse(name, "a whole number of at least 0", v.get(name))
    port, socket_path = v.get("control_port"), v.get("control_socket")
    port = None if port in (None, "") else port
    if (port is None) == (not socket_path):
        wrong.append("give tor's control socket (%scontrol_socket) or its control port (%scontrol_port), not both "
                     "and not neither (got socket %s, port %s)" % (_PREFIX, _PREFIX, _short(socket_path), _short(port)))
    elif port is not None:
        if _whole(port, 1) is None or _whole(port, 1) > 65535:
            refuse("control_port", "a port number from 1 to 65535", port)
        if not isinstance(v.get("control_ip"), str) or not _IP_RE.match(v["control_ip"]):
            refuse("control_ip", "an IP address", v.get("control_ip"))
    elif not isinstance(socket_path, str) or not re.match(r"^/\S*\Z", socket_path):
        refuse("control_socket", "an absolute path without blanks", socket_path)
    for name in ("state_dir", "config_file"):
        if name in v and (not isinstance(v[name], str) or not v[name].startswith("/")):
            refuse(name, "an absolute path", v[name])
    if "bandguards" in v and role_bool(v["bandguards"]) is None:
        refuse("bandguards", "true or false", v["bandguards"])
    if not isinstance(v.get("venv"), str) or not v["venv"].startswith("/"):
        refuse("venv", "an absolute path", v.get("venv"))
    for name in ("version", "stem_version"):
        if not isinstance(v.get(name), str) or not _VERSION_RE.match(v[name]):
            refuse(name, "a version number (digits and dots)", v.get(name))
    extra = v.get("extra_config")
    if not isinstance(extra, dict):
        refuse("extra_config", "a mapping of section to settings", extra)
    else:
        refused = _extra_refused(extra)
        if refused:
            wrong.append("%sextra_config must name sections among %s, each a mapping of keys of lower-case letters, "
                         "digits and _ other than the role's own (%s) to one-line values; refused: %s"
                         % (_PREFIX, ", ".join(EXTRA_SECTIONS), ", ".join(OWN_KEYS), ", ".join(refused)))
    if "install_method" in v and v["install_method"] not in METHODS:
        refuse("install_method", "one of %s" % ", ".join(METHODS), v["install_method"])
    if "debian_releases" in v and (not isinstance(v["debian_releases"], list)
                                   or not all(isinstance(r, str) for r in v["debian_releases"])):
        refuse("debian_releases", "a list of release names", v["debian_releases"])
    if "install" in v and role_bool(v["install"]) is None:
        refuse("install", "true or false", v["install"])
    if wrong:
        raise SettingsError("; ".join(wrong))
    return role_vars


def _installed(v):
    """How the addon is installed (install_method, auto: Debian's package on the releases of debian_releases, else
    PyPI in the virtualenv) and its command: method, install (method, or None when the role installs nothing), binary."""
    method = v["install_method"]
    if method == "auto":
        method = "debian" if (v.get("release") or "") in v["debian_releases"] else "pip"
    return {"method": method, "install": method if role_bool(v["install"]) else None,
            "binary": _DEBIAN_BINARY if method == "debian" else v["venv"] + "/bin/vanguards"}


def _control_lines(v):
    """The [Global] lines of tor's control port (with its address, the socket emptied) or of its socket."""
    port = v.get("control_port")
    if port in (None, ""):
        return ["control_socket = %s" % v["control_socket"]]
    return ["control_ip = %s" % v["control_ip"], "control_port = %d" % _whole(port, 1), "control_socket ="]


def plan(role_vars):
    """What the addon's configuration and unit write that is not a variable as given (role_vars checked first, as
    check() does; with state_dir, config_file and bandguards): state_directory (StateDirectory=, state_dir below
    /var/lib/), exec_args (the addon's arguments: its configuration file, --disable_bandguards without bandguards),
    control_lines ([Global]'s lines of tor's control port or socket) and extra_lines (section to its
    'key = value' lines of extra_config, sorted by key; every section of EXTRA_SECTIONS, [] when it adds none); with
    install, install_method, debian_releases and release (the host's) also method, install and binary (_installed)."""
    check(role_vars)
    missing = [_PREFIX + name for name in ("state_dir", "config_file", "bandguards") if name not in role_vars]
    if missing:
        raise SettingsError("the role's variables lack %s" % ", ".join(missing))
    v = role_vars
    state_dir = v["state_dir"]
    extra = v["extra_config"]
    out = _installed(v) if all(k in v for k in ("install", "install_method", "debian_releases")) else {}
    out.update({
        "state_directory": state_dir[len(_STATE_ROOT):] if state_dir.startswith(_STATE_ROOT) else state_dir,
        "exec_args": "--config %s%s" % (v["config_file"], "" if role_bool(v["bandguards"]) else " --disable_bandguards"),
        "control_lines": _control_lines(v),
        "extra_lines": dict((section, ["%s = %s" % (key, value)
                                       for key, value in sorted((extra.get(section) or {}).items(),
                                                                key=lambda item: item[0].lower())])
                            for section in EXTRA_SECTIONS),
    })
    return out
