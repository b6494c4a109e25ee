# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_haproxy role's services checked, with the role's defaults filled in, and checked against the
onion_services entry (the onion_service role's variable) whose port points at each one."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onion_haproxy_plan
short_description: The onion_haproxy role's services checked and completed, and what tor must have for each
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Takes O(onionlab.tor.onion_haproxy#role:main:onion_haproxy_services) and returns one entry per service with every
    key filled in (the role-wide defaults for the limits), C(listen_bind) and C(backend_server) as HAProxy takes
    them, C(listen_socket_dir) (the directory of a unix socket, which must exist; null for a TCP port),
    C(table_expire) (seconds the stick table keeps a circuit's counters, the rate period and at least 60),
    C(beyond) (what a client gets beyond a limit, in words), C(tor)
    (what the onion_services entry must have: C(export_circuit_id), the C(max_streams) suggested, C(target) the
    port target that reaches this frontend, and C(has) and C(note), what it has now) and C(summary) (what the role
    prints)."
  - "Fails with one message naming the service and the fix on a bad entry: an unknown key, a name that is not
    1-32 letters, digits, C(_) or C(-), two services with one name or one listen port, neither or both of
    C(listen_port) and C(listen_socket), a port outside 1-65535, a listen address that is not a loopback address,
    a backend that is not C(HOST:PORT) or an absolute socket path (an IPv6 zone is refused in both), a limit below
    1, an action other than V(deny) or V(close), a C(extra_frontend_lines) line with a line break or another
    control character, a C(#) or a backslash at its end."
  - "With O(check_onion_services=true), a service naming C(onion_service) must be in O(onion_services), with
    C(export_circuit_id=haproxy) (in its C(options) or O(onion_service_defaults)) and a port whose target is this
    frontend; without the header HAProxy refuses every connection (C(accept-proxy)), so the role fails instead."
options:
  _input:
    description: The role's O(onionlab.tor.onion_haproxy#role:main:onion_haproxy_services).
    type: list
    elements: dict
    required: true
  defaults:
    description: C(rate_limit), C(rate_period), C(max_connections), C(limit_action) of the role (its variables).
    type: dict
    required: true
  onion_services:
    description: The host's C(onion_services) (the P(onionlab.tor.onion_service#role) role's variable).
    type: list
    elements: dict
  onion_service_defaults:
    description: The host's C(onion_service_defaults).
    type: dict
  check_onion_services:
    description: Check each service's C(onion_service) entry (above).
    type: bool
    default: true
  settings:
    description:
      - The role's other variables, by their full names, checked before the services (one message naming each wrong
        one) - C(onion_haproxy_circuit_header) (a header name, 1-64 letters, digits or C(-)),
        C(onion_haproxy_stats_socket) and C(onion_haproxy_config_file) (absolute paths of letters, digits, C(_), C(.),
        C(/), C(-)), C(onion_haproxy_table_size) and the timeouts C(onion_haproxy_timeout_connect),
        C(onion_haproxy_timeout_client), C(onion_haproxy_timeout_server), C(onion_haproxy_timeout_http_request)
        (whole numbers, at least 1).
    type: dict
"""

EXAMPLES = r"""
- name: The services, checked
  ansible.builtin.set_fact:
    plan: "{{ onion_haproxy_services | onionlab.tor.onion_haproxy_plan(defaults={'rate_limit': 30, 'rate_period': 10,
              'max_connections': 8, 'limit_action': 'deny'}, onion_services=onion_services) }}"
"""

RETURN = r"""
_value:
  description: One dict per service, as described above.
  type: list
  elements: dict
"""

import ipaddress
import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor import config_value
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

try:
    from ansible.errors import AnsibleFilterError
except ImportError:  # pragma: no cover (plain Python in unit tests)
    class AnsibleFilterError(Exception):
        pass

KEYS = ("name", "onion_service", "listen_port", "listen_address", "listen_socket", "listen_socket_mode",
        "listen_socket_group", "backend", "rate_limit", "rate_period", "max_connections", "limit_action",
        "extra_frontend_lines")
LIMITS = ("rate_limit", "rate_period", "max_connections", "limit_action")
ACTIONS = ("deny", "close")
# \Z, not $: $ also matches before a newline at the end, which would reach haproxy.cfg
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}\Z")
_PATH = re.compile(r"^/[A-Za-z0-9_./@+-]{1,200}\Z")
_GROUP = re.compile(r"^[a-z_][a-z0-9_-]{0,31}\Z")
_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?\Z")
_MODE = re.compile(r"^0?[0-7]{3}\Z")
_MAX = {"rate_limit": 1000000, "rate_period": 86400, "max_connections": 65535}


def _fail(msg):
    raise AnsibleFilterError("onion_haproxy: %s" % msg)


def _int(where, key, value, low, high):
    if isinstance(value, bool):
        value = None
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or str(number) != str(value).strip() or not low <= number <= high:
        _fail("%s: %s must be a whole number from %d to %d, got %r" % (where, key, low, high, value))
    return number


def _backend(where, value):
    """'HOST:PORT', '[v6]:PORT' or '/path.sock' -> HAProxy's server address."""
    text = str(value or "")
    if _PATH.match(text) and ".." not in text.split("/"):
        return "unix@" + text
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    ok = bool(sep) and port.isdigit() and 1 <= int(port) <= 65535 and "%" not in host
    if ok:
        try:
            ip = ipaddress.ip_address(host)
            host = "[%s]" % ip if ip.version == 6 else str(ip)
        except ValueError:
            ok = bool(_HOSTNAME.match(host))
    if not ok:
        _fail("%s: backend must be HOST:PORT (127.0.0.1:8080, [::1]:8080; no IPv6 zone) or the absolute path of a "
              "unix socket, got %r" % (where, value))
    return "%s:%d" % (host, int(port))


def _merged(defaults, options):
    out = dict(defaults or {})
    for key, value in (options or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            value = _merged(out[key], value)
        out[key] = value
    return out


def _tor_side(where, entry, target, onion_services, onion_service_defaults, max_connections):
    """What the onion_services entry has, checked: (its export_circuit_id, max_streams, close)."""
    name = entry["onion_service"]
    found = [s for s in onion_services or [] if isinstance(s, dict) and s.get("name") == name]
    if not found:
        _fail("%s: onion_service %r is not in this host's onion_services (%s); name the onion_services entry whose "
              "port points at this frontend, or set onion_haproxy_check_onion_services: false" % (
                  where, name, ", ".join(sorted(str(s.get("name")) for s in onion_services or [] if isinstance(s, dict)))
                  or "none"))
    service = found[0]
    options = _merged(onion_service_defaults, service.get("options"))
    fix = ("in its options: export_circuit_id: haproxy, max_streams: %d, max_streams_close_circuit: true, and a port "
           "%s" % (2 * max_connections, target["port_text"]))
    if options.get("export_circuit_id") != "haproxy":
        _fail("%s: onion_services entry %r has export_circuit_id %r, so tor sends no PROXY line and HAProxy "
              "(accept-proxy) would refuse every connection; put %s" % (
                  where, name, options.get("export_circuit_id", "none"), fix))
    targets = []
    for port in service.get("ports") or []:
        try:
            targets.append(hs.normalize_port(port))
        except TorError as exc:
            _fail("%s: onion_services entry %r: %s" % (where, name, exc))
    if not any(t["target_address"] == target["address"] and t["target_port"] == target["port"] for t in targets):
        _fail("%s: no port of onion_services entry %r points at this frontend (%s); its ports go to %s; put %s" % (
            where, name, target["text"], ", ".join(hs.port_to_tor(t) for t in targets) or "nowhere", fix))
    return options


def _base_limits(defaults):
    """The role-wide limits (onion_haproxy_*), checked."""
    base = {}
    for key in LIMITS:
        if key == "limit_action":
            continue
        base[key] = _int("onion_haproxy_%s" % key, "the value", (defaults or {}).get(key), 1, _MAX[key])
    base["limit_action"] = (defaults or {}).get("limit_action")
    if base["limit_action"] not in ACTIONS:
        _fail("onion_haproxy_limit_action must be deny (HTTP 429) or close, got %r" % (base["limit_action"],))
    return base


def _limits(where, entry, base):
    """One service's limits: its own, else the role-wide ones."""
    out = {}
    for key in LIMITS:
        value = entry.get(key)
        if value is None:
            out[key] = base[key]
        elif key == "limit_action":
            if value not in ACTIONS:
                _fail("%s: limit_action must be deny (HTTP 429) or close, got %r" % (where, value))
            out[key] = value
        else:
            out[key] = _int(where, key, value, 1, _MAX[key])
    return out


def _socket_listener(where, entry, socket):
    """(the plan's listen_* keys, the bind's identity, tor's target) of a unix socket frontend."""
    if not isinstance(socket, str) or not _PATH.match(socket) or ".." in socket.split("/"):
        _fail("%s: listen_socket must be an absolute path of letters, digits and ._@+-/, got %r" % (where, socket))
    mode = str(entry.get("listen_socket_mode") or "0660")
    if not _MODE.match(mode):
        _fail("%s: listen_socket_mode must be an octal mode such as 0660, got %r" % (where, mode))
    group = entry.get("listen_socket_group", "debian-tor")
    if group and not (isinstance(group, str) and _GROUP.match(group)):
        _fail("%s: listen_socket_group must be a group name, got %r" % (where, group))
    listen = dict(listen_socket=socket, listen_socket_mode=mode, listen_socket_group=group or None,
                  listen_socket_dir=socket.rstrip("/").rsplit("/", 1)[0] or "/",
                  listen_port=None, listen_address=None, listen_bind="unix@" + socket)
    target = {"address": "unix:" + socket, "port": None, "text": "unix:" + socket,
              "port_text": "{port: PORT, target_address: 'unix:%s'}" % socket}
    return listen, socket, target


def _tcp_listener(where, entry, port):
    """(the plan's listen_* keys, the bind's identity, tor's target) of a TCP frontend on a loopback address."""
    port = _int(where, "listen_port", port, 1, 65535)
    address = entry.get("listen_address") or "127.0.0.1"
    try:
        # no IPv6 zone: Python's ipaddress takes any text after the %, blanks and line breaks too
        ip = ipaddress.ip_address(str(address)) if "%" not in str(address) else None
    except ValueError:
        ip = None
    if ip is None or not ip.is_loopback:
        _fail("%s: listen_address must be a loopback address without an IPv6 zone (tor on this host is "
              "HAProxy's only client), got %r" % (where, address))
    bind = "[%s]" % ip if ip.version == 6 else str(ip)
    listen = dict(listen_socket=None, listen_socket_mode=None, listen_socket_group=None, listen_socket_dir=None,
                  listen_port=port, listen_address=str(ip), listen_bind="%s:%d" % (bind, port))
    target = {"address": str(ip), "port": port, "text": "%s:%d" % (bind, port),
              "port_text": "{port: PORT, target_port: %d%s}" % (
                  port, "" if str(ip) == "127.0.0.1" else ", target_address: '%s'" % ip)}
    return listen, "%s:%d" % (ip, port), target


def _tor_plan(where, out, target, onion_services, onion_service_defaults, check_onion_services):
    """What tor's side of the service should say (export_circuit_id, max_streams) and, when the onion_services
    entry is checked, what it says now."""
    tor = {"export_circuit_id": "haproxy", "max_streams": min(65535, 2 * out["max_connections"]),
           "max_streams_close_circuit": True, "target": target["text"], "checked": False}
    if not (out["onion_service"] and check_onion_services):
        return tor
    options = _tor_side(where, out, target, onion_services, onion_service_defaults, out["max_connections"])
    has = ("export_circuit_id", "max_streams", "max_streams_close_circuit")
    tor.update(checked=True, has=dict((k, options.get(k)) for k in has))
    has_max = options.get("max_streams") or 0
    if not has_max:
        tor["note"] = ("tor's max_streams is 0 (unlimited): no ceiling behind HAProxy's; suggested: "
                       "max_streams: %d, max_streams_close_circuit: true" % tor["max_streams"])
    elif int(has_max) < out["max_connections"]:
        tor["note"] = ("tor's max_streams %s is below max_connections %d: tor refuses a circuit's streams "
                       "before HAProxy's limit is reached; suggested: max_streams: %d" % (
                           has_max, out["max_connections"], tor["max_streams"]))
    else:
        tor["note"] = "ok"
    return tor


def _summary(out, tor, target):
    return {
        "listen": out["listen_bind"], "backend": out["backend_server"],
        "per circuit": "%d requests per %ds, %d connections open; beyond: %s" % (
            out["rate_limit"], out["rate_period"], out["max_connections"], out["beyond"]),
        "onion_services options": {"export_circuit_id": "haproxy", "max_streams": tor["max_streams"],
                                   "max_streams_close_circuit": True},
        "onion_services port target": target["port_text"],
        "tor now": tor.get("note", "not checked (no onion_service named)" if not out["onion_service"]
                           else "not checked (onion_haproxy_check_onion_services: false)")}


def _entry_name(index, entry, names):
    if not isinstance(entry, dict):
        _fail("onion_haproxy_services[%d] must be a dict, got %r" % (index, entry))
    name = entry.get("name")
    where = "onion_haproxy_services[%d] (%s)" % (index, name)
    unknown = sorted(str(k) for k in entry if k not in KEYS)
    if unknown:
        _fail("%s: unknown key %s (known: %s)" % (where, ", ".join(unknown), ", ".join(KEYS)))
    if not isinstance(name, str) or not _NAME.match(name):
        _fail("%s: name must be 1 to 32 letters, digits, _ or -" % where)
    if name in names:
        _fail("%s: two services are named %r" % (where, name))
    names.add(name)
    return name, where


_HEADER = re.compile(r"^[A-Za-z0-9-]{1,64}\Z")
_PATH = re.compile(r"^/[A-Za-z0-9_./-]+\Z")
SETTINGS_PATHS = ("onion_haproxy_stats_socket", "onion_haproxy_config_file")
SETTINGS_NUMBERS = ("onion_haproxy_table_size", "onion_haproxy_timeout_connect", "onion_haproxy_timeout_client",
                    "onion_haproxy_timeout_server", "onion_haproxy_timeout_http_request")


def _whole(value):
    """value as a whole number as the role reads it (an integer or its digits), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit() and len(value) <= 12:
        return int(value)
    return None


def _check_settings(settings):
    """The role's other variables checked, every wrong one named in one message."""
    v = dict(settings or {})
    problems = []
    header = v.get("onion_haproxy_circuit_header")
    if not isinstance(header, str) or not _HEADER.match(header):
        problems.append("onion_haproxy_circuit_header must be a header name (1-64 letters, digits, -), got %s"
                        % config_value.shown(header))
    for name in SETTINGS_PATHS:
        if not isinstance(v.get(name), str) or not _PATH.match(v[name]):
            problems.append("%s must be an absolute path of letters, digits, _, ., /, - (no space), got %s"
                            % (name, config_value.shown(v.get(name))))
    for name in SETTINGS_NUMBERS:
        number = _whole(v.get(name))
        if number is None or number < 1:
            problems.append("%s must be a whole number, at least 1%s, got %s" % (
                name, "" if name == "onion_haproxy_table_size" else " (seconds)", config_value.shown(v.get(name))))
    if problems:
        _fail("; ".join(problems))


def onion_haproxy_plan(services, defaults, onion_services=None, onion_service_defaults=None,
                       check_onion_services=True, settings=None):
    if settings is not None:
        _check_settings(settings)
    if not isinstance(services, list):
        _fail("onion_haproxy_services must be a list of services, got %s" % type(services).__name__)
    base = _base_limits(defaults)
    plan, names, binds = [], set(), {}
    for index, entry in enumerate(services):
        name, where = _entry_name(index, entry, names)
        out = {"name": name, "onion_service": entry.get("onion_service") or None}
        if out["onion_service"] is not None and not isinstance(out["onion_service"], str):
            _fail("%s: onion_service must be the name of an onion_services entry" % where)
        out.update(_limits(where, entry, base))
        # the stick table keeps a circuit's counters for the rate period, and at least a minute
        out["table_expire"] = max(out["rate_period"], 60)
        out["beyond"] = "HTTP 429" if out["limit_action"] == "deny" else "the connection closed"
        port, socket = entry.get("listen_port"), entry.get("listen_socket")
        if (port is None) == (socket is None):
            _fail("%s: give one of listen_port (HAProxy on 127.0.0.1:PORT) and listen_socket (a unix socket)" % where)
        listen, key, target = (_socket_listener(where, entry, socket) if socket is not None
                               else _tcp_listener(where, entry, port))
        out.update(listen)
        if key in binds:
            _fail("%s: listens where %s does (%s)" % (where, binds[key], key))
        binds[key] = name
        out["backend_server"] = _backend(where, entry.get("backend"))
        if out["backend_server"] in ("%s" % out["listen_bind"], "unix@%s" % (socket or "")):
            _fail("%s: backend is HAProxy's own frontend (%s)" % (where, entry.get("backend")))
        lines = entry.get("extra_frontend_lines") or []
        if not isinstance(lines, list) or any(not isinstance(x, str) or "#" in x
                                              or config_value.problem(x, "haproxy", "line") for x in lines):
            _fail("%s: extra_frontend_lines must be a list of single HAProxy lines (no line break or other control "
                  "character, no #, no backslash at the end)" % where)
        out["extra_frontend_lines"] = [x.strip() for x in lines if x.strip()]
        out["tor"] = _tor_plan(where, out, target, onion_services, onion_service_defaults, check_onion_services)
        out["summary"] = _summary(out, out["tor"], target)
        plan.append(out)
    return plan


class FilterModule(object):
    def filters(self):
        return {"onion_haproxy_plan": onion_haproxy_plan}
