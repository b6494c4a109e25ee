# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onionprobe role's own variables, checked, and what the role decides from them (issue 41: roles declare, Python
decides): how Onionprobe is installed on the host's release, its command and Python, who writes the unit, and
Onionprobe's configuration object. Every wrong variable is named in one message. The filters onionprobe_settings and
onionprobe_config are its faces; the endpoints are onionprobe_endpoints'; that each value written into the unit stays
one word is the filter config_values' check.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor.torrc import role_bool

METHODS = ("auto", "debian", "pip")
PORTS = ("onionprobe_exporter_port", "onionprobe_control_port", "onionprobe_socks_port")
_VERSION_RE = re.compile(r"^[0-9]+(\.[0-9]+)*\Z")
_LISTEN_RE = re.compile(r"^([0-9]{1,3}(\.[0-9]{1,3}){3}|[0-9A-Fa-f]*:[0-9A-Fa-f:.]*)\Z")
# Debian's package: its command and the system's Python; else the virtualenv's
_DEBIAN_BINARY, _DEBIAN_PYTHON = "/usr/bin/onionprobe", "/usr/bin/python3"


class SettingsError(ValueError):
    """One message naming every wrong variable."""


def _shown(value, width=60):
    text = repr(value) if not isinstance(value, str) else '"%s"' % value.encode("unicode_escape").decode("ascii")
    return text if len(text) <= width else text[:width - 3] + "..."


def _port(value):
    """The port number of value as the role reads it (an integer or its digits), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 1 <= value <= 65535 else None
    if isinstance(value, str) and value.isdigit() and len(value) <= 5:
        number = int(value)
        return number if 1 <= number <= 65535 else None
    return None


def _problems(v):
    out = []
    version = v.get("onionprobe_version")
    if not isinstance(version, str) or not _VERSION_RE.match(version):
        out.append("onionprobe_version must be a version number (1.4.1), got %s" % _shown(version, 30))
    ports = dict((name, _port(v.get(name))) for name in PORTS)
    for name in PORTS:
        if ports[name] is None:
            out.append("%s must be a port (1-65535), got %s" % (name, _shown(v.get(name))))
    exporter = ports["onionprobe_exporter_port"]
    if exporter is not None and exporter in (ports["onionprobe_control_port"], ports["onionprobe_socks_port"]):
        out.append("onionprobe_exporter_port must be 1-65535 and the exporter's differ from tor's (ControlPort %s, "
                   "SocksPort %s), got %s" % (ports["onionprobe_control_port"], ports["onionprobe_socks_port"],
                                              exporter))
    venv = v.get("onionprobe_venv")
    if not isinstance(venv, str) or not venv.startswith("/"):
        out.append("onionprobe_venv must be an absolute path, got %s" % _shown(venv))
    listen = v.get("onionprobe_exporter_listen_address")
    if not isinstance(listen, str) or not _LISTEN_RE.match(listen):
        out.append("onionprobe_exporter_listen_address must be an IPv4 or IPv6 address (127.0.0.1, ::1; 0.0.0.0 for "
                   "every address), got %s" % _shown(listen))
    if v.get("onionprobe_install_method") not in METHODS:
        out.append("onionprobe_install_method must be one of %s, got %s"
                   % (", ".join(METHODS), _shown(v.get("onionprobe_install_method"))))
    releases = v.get("onionprobe_debian_releases")
    if not isinstance(releases, list) or not all(isinstance(r, str) for r in releases):
        out.append("onionprobe_debian_releases must be a list of release names, got %s" % _shown(releases))
    packages = v.get("onionprobe_venv_packages")
    if not isinstance(packages, list) or not all(isinstance(p, str) for p in packages):
        out.append("onionprobe_venv_packages must be a list of package names, got %s" % _shown(packages))
    for name in ("onionprobe_install", "onionprobe_manage_service"):
        if role_bool(v.get(name)) is None:
            out.append("%s must be a boolean, got %s" % (name, _shown(v.get(name))))
    return out


def settings(variables, release=""):
    """What the role decides from its variables (no secret): install ('debian', 'pip', or None when
    onionprobe_install is false), method, binary, python, writes_unit (the role writes the unit: it manages the
    service, or Debian's package is used, whose own unit would start a tor of its own), file_group (the group of the
    config directory and file: onionprobe_group when the role writes the unit, else None), user_groups, venv_packages
    (those to install: only for pip), has_password. Raises SettingsError naming every wrong variable."""
    v = dict(variables or {})
    problems = _problems(v)
    if problems:
        raise SettingsError("onionprobe: " + "; ".join(problems))
    method = v["onionprobe_install_method"]
    if method == "auto":
        method = "debian" if (release or "") in v["onionprobe_debian_releases"] else "pip"
    install = method if role_bool(v["onionprobe_install"]) else None
    venv = v["onionprobe_venv"]
    writes_unit = role_bool(v["onionprobe_manage_service"]) or method == "debian"
    password = v.get("onionprobe_control_password")
    return {
        "install": install,
        "method": method,
        "binary": _DEBIAN_BINARY if method == "debian" else venv + "/bin/onionprobe",
        "python": _DEBIAN_PYTHON if method == "debian" else venv + "/bin/python3",
        "writes_unit": writes_unit,
        "file_group": v.get("onionprobe_group") if writes_unit else None,
        "user_groups": [v["onionprobe_tor_group"]] if v.get("onionprobe_tor_group") else [],
        "venv_packages": list(v["onionprobe_venv_packages"]) if install == "pip" else [],
        "has_password": password is not None and len(password) > 0,
    }


def config(variables, endpoints):
    """Onionprobe's configuration object (onionprobe.yaml): launch_tor false (this host's tor), its ControlPort and
    SocksPort, the exporter, the probing pace and timeouts as the role's variables give them, the password when one
    is set, and endpoints (onionprobe_endpoints')."""
    v = dict(variables or {})
    out = {
        "log_level": v.get("onionprobe_log_level"),
        "launch_tor": False,
        "tor_address": v.get("onionprobe_tor_address"),
        "control_port": v.get("onionprobe_control_port"),
        "socks_port": v.get("onionprobe_socks_port"),
        "loop": True,
        "prometheus_exporter": True,
        "prometheus_exporter_port": v.get("onionprobe_exporter_port"),
        "new_circuit": False,
        "shuffle": True,
        "randomize": v.get("onionprobe_randomize"),
        "sleep": v.get("onionprobe_sleep"),
        "interval": v.get("onionprobe_interval"),
        "rounds": 0,
        "descriptor_timeout": v.get("onionprobe_descriptor_timeout"),
        "descriptor_max_retries": v.get("onionprobe_descriptor_max_retries"),
        "http_connect_timeout": v.get("onionprobe_http_connect_timeout"),
        "http_read_timeout": v.get("onionprobe_http_read_timeout"),
        "tls_verify": v.get("onionprobe_tls_verify"),
    }
    if v.get("onionprobe_control_password"):
        out["control_password"] = v["onionprobe_control_password"]
    out["endpoints"] = endpoints
    return out
