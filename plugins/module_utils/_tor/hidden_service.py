# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Onion-service configuration as data (no file is read or written here): OPTIONS, ports, tor's
HiddenService* block <-> service dicts, the managed drop-in's and ob_config's text, torrc lines.
On disk: files.py (safe writes and reads), torrc_tree.py (torrc and its includes, the drop-in),
ephemeral.py (the ephemeral-service record).

This is a private module_utils file of onionlab.tor; its API may change at any time.

A persistent service dict has the shape that tor_hidden_service takes and
tor_hidden_service_info returns:

    {'path': '/var/lib/tor/web', 'ports': [{'port': 80, 'target_address': '127.0.0.1',
     'target_port': 8080}], 'version': 3, 'max_streams': 0, 'max_streams_close_circuit': False,
     'dir_group_readable': False, 'allow_unknown_ports': False, 'num_intro_points': 3,
     'extra_options': {}}

A unix-socket target is {'port': 80, 'target_address': 'unix:/run/web.sock', 'target_port': None}.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections import namedtuple

from ansible_collections.onionlab.tor.plugins.module_utils._tor import config_value, onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import ProtocolError, TorError
from ansible_collections.onionlab.tor.plugins.module_utils._tor.reply import check_value, unquote
from ansible_collections.onionlab.tor.plugins.module_utils._tor.torrc import TOR_WIDE_OPTIONS


class ServiceConfigError(TorError, ValueError):
    """A service parameter that tor would refuse or that is unsafe."""


INT32_MAX = 2147483647

# One row per service option: tor's name, our key ("group.key" for an option of a group such as
# pow: the service holds {"pow": {"enabled": ..., ...}}), kind (int, bool or choice), tor's
# default, limits ((min, max) of an int, the values of a choice; tor's, from hs_config.[ch]), the
# tor version that added it (None: every supported tor has it), and ADD_ONION's keyword for it with
# the tor version that added that (None: an ephemeral service cannot have it). The block, the
# drop-in, the diff, the info module, the range checks, the module's argument spec
# (_hidden_service_args.py), ADD_ONION and the capability check (capabilities.py) follow.
Option = namedtuple("Option", "tor_name key kind default limits since add_onion add_onion_since")
OPTIONS = tuple(Option(*row) for row in (
    ("HiddenServiceVersion", "version", "int", 3, (3, 3), None, None, None),
    ("HiddenServiceMaxStreams", "max_streams", "int", 0, (0, 65535), None, "MaxStreams", None),
    ("HiddenServiceMaxStreamsCloseCircuit", "max_streams_close_circuit", "bool", False, None, None, None, None),
    ("HiddenServiceDirGroupReadable", "dir_group_readable", "bool", False, None, None, None, None),
    ("HiddenServiceAllowUnknownPorts", "allow_unknown_ports", "bool", False, None, None, None, None),
    ("HiddenServiceNumIntroductionPoints", "num_intro_points", "int", 3, (3, 20), None, None, None),
    ("HiddenServiceExportCircuitID", "export_circuit_id", "choice", "none", ("none", "haproxy"), "0.4.0.1-alpha",
     None, None),
    ("HiddenServiceEnableIntroDoSDefense", "intro_dos.enabled", "bool", False, None, "0.4.2.1-alpha", None, None),
    ("HiddenServiceEnableIntroDoSRatePerSec", "intro_dos.rate_per_sec", "int", 25, (0, INT32_MAX), "0.4.2.1-alpha",
     None, None),
    ("HiddenServiceEnableIntroDoSBurstPerSec", "intro_dos.burst_per_sec", "int", 200, (0, INT32_MAX),
     "0.4.2.1-alpha", None, None),
    ("HiddenServicePoWDefensesEnabled", "pow.enabled", "bool", False, None, "0.4.8.1-alpha",
     "PoWDefensesEnabled", "0.4.9.2-alpha"),
    ("HiddenServicePoWQueueRate", "pow.queue_rate", "int", 250, (0, INT32_MAX), "0.4.8.1-alpha",
     "PoWQueueRate", "0.4.9.2-alpha"),
    ("HiddenServicePoWQueueBurst", "pow.queue_burst", "int", 2500, (0, INT32_MAX), "0.4.8.1-alpha",
     "PoWQueueBurst", "0.4.9.2-alpha"),
))
# the groups and their members, in OPTIONS' order: {"pow": ["enabled", "queue_rate", ...], ...}
GROUPS = {}
for _row in OPTIONS:
    _group, _dot, _member = _row[1].partition(".")
    if _dot:
        GROUPS.setdefault(_group, []).append(_member)
# the options that need tor's pow module (tor --list-modules), besides a version
NEEDS_MODULE = {"HiddenServicePoWDefensesEnabled": "pow"}
_BY_TOR_NAME = {o[0].lower(): o for o in OPTIONS}
_BY_KEY = {o[1]: o for o in OPTIONS}
_EXTRA_KEY_RE = re.compile(r"^HiddenService[A-Za-z0-9]+\Z")
_RESERVED = set(["hiddenservicedir", "hiddenserviceport"]) | set(_BY_TOR_NAME)
# HiddenService* options that are tor-wide, not per service (torrc.py's list): {lower-case name: name}
TOR_WIDE = {name.lower(): name for name in TOR_WIDE_OPTIONS}
DEFAULT_TARGET = "127.0.0.1"
# an Onionbalance backend: the flag in tor's block, the frontend's address in <HiddenServiceDir>/ob_config
# (tor 0.4.4+, hs_ob.c). A parsed block only knows the flag: its onionbalance_frontend is OB_FLAG until
# the file is read (service_manager); a desired service holds the address.
OB_OPTION = "HiddenServiceOnionbalanceInstance"
OB_CONFIG = "ob_config"
OB_FLAG = True


# -- ports ---------------------------------------------------------------------------------------
def _check_port(value, what):
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ServiceConfigError("%s must be a port number between 1 and 65535, got %r" % (what, value))
    return value


PORT_KEYS = ("port", "target_address", "target_port")
PORT_SHAPES = ('a port (80, to 127.0.0.1:80), "PORT:TARGET_PORT" ("80:8080"), "PORT:ADDRESS:TARGET_PORT" '
               '("80:127.0.0.1:8080", "443:[::1]:8443"), "PORT:unix:/path" ("80:unix:/run/web.sock"), or a dict '
               'with port and optionally target_address, target_port')


def _bad_port(entry, why=None):
    return ServiceConfigError("ports entry %r%s: expected %s" % (entry, " (%s)" % why if why else "", PORT_SHAPES))


def port_entry(entry):
    """One `ports` entry in any of its shapes (PORT_SHAPES) -> a dict with the keys of PORT_KEYS;
    what is none of them is refused naming the shapes."""
    if isinstance(entry, bool):
        raise _bad_port(entry)
    if isinstance(entry, int):
        return {"port": entry}
    if isinstance(entry, str):
        text = entry.strip()
        if text.isdigit():
            return {"port": text}
        port, sep, rest = text.partition(":")
        if not sep or not port.isdigit() or not rest:
            raise _bad_port(entry)
        if rest.startswith("unix:"):
            return {"port": port, "target_address": rest}
        if rest.isdigit():
            return {"port": port, "target_port": rest}
        address, sep, target_port = rest.rpartition(":")
        if not sep or not address or not target_port.isdigit():
            raise _bad_port(entry)
        return {"port": port, "target_address": address, "target_port": target_port}
    if isinstance(entry, dict):
        unknown = sorted(str(k) for k in entry if k not in PORT_KEYS)
        if unknown:
            raise _bad_port(entry, "unknown key %s" % ", ".join(unknown))
        if entry.get("port") is None:
            raise _bad_port(entry, "no port")
        if entry.get("target_address") is not None and not isinstance(entry["target_address"], str):
            raise _bad_port(entry, "target_address must be a string")
        return entry
    raise _bad_port(entry)


def normalize_port(entry):
    """A port mapping from the module's parameters (any shape of port_entry) -> the canonical dict."""
    entry = port_entry(entry)
    port = _check_port(entry.get("port"), "port")
    address = entry.get("target_address")
    address = DEFAULT_TARGET if address in (None, "") else address
    check_value(address, "target_address")
    target_port = entry.get("target_port")
    if address.startswith("unix:"):
        path = address[5:]
        # a # in the drop-in's HiddenServicePort line begins a comment when tor reads the file again (tor would
        # forward to the path cut there, unix:/run/a for unix:/run/a#b.sock); SETCONF carries it whole
        if not path.startswith("/") or any(c in path for c in ' \t"\\#') or config_value.problem(path, "torrc", "word"):
            raise ServiceConfigError("target_address %r: a unix target must be unix:/absolute/path without "
                                     "spaces, quotes, backslashes, control characters or # (tor reads the rest of "
                                     "the drop-in's line as a comment)" % address)
        if target_port is not None:
            raise ServiceConfigError("target_port makes no sense with the unix target %s" % address)
        return {"port": port, "target_address": address, "target_port": None}
    host = address[1:-1] if address.startswith("[") and address.endswith("]") else address
    if "%" in host:
        # Python's ipaddress takes fe80::1%lo; tor refuses it ("Unparseable address in hidden service
        # port configuration", tor 0.4.9.11), so it is refused here before anything is written
        raise ServiceConfigError("target_address %r: tor takes no IPv6 zone (the %%%s part); use an address "
                                 "without one, such as ::1" % (address, host.split("%", 1)[1]))
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ServiceConfigError("target_address %r is neither an IP address nor unix:/path" % address)
    target_port = port if target_port is None else _check_port(target_port, "target_port")
    return {"port": port, "target_address": host, "target_port": target_port}


def port_to_tor(entry):
    """Canonical port dict -> HiddenServicePort value."""
    if entry["target_port"] is None:
        return "%d %s" % (entry["port"], entry["target_address"])
    address = entry["target_address"]
    if ":" in address:
        address = "[%s]" % address
    return "%d %s:%d" % (entry["port"], address, entry["target_port"])


def port_to_add_onion(entry):
    return port_to_tor(entry).replace(" ", ",", 1)


def port_from_tor(value):
    """HiddenServicePort value as tor reports it -> canonical dict."""
    parts = value.split(None, 1)
    if not parts or (len(parts) == 2 and " " in parts[1] and not parts[1].startswith('unix:"')):
        raise ProtocolError("unexpected HiddenServicePort value %r" % value[:80])
    port = int(parts[0]) if parts[0].isdigit() else None
    if port is None:
        raise ProtocolError("unexpected HiddenServicePort value %r" % value[:80])
    if len(parts) == 1:
        return {"port": port, "target_address": DEFAULT_TARGET, "target_port": port}
    target = parts[1]
    if target.startswith("unix:"):
        path = target[5:]
        if path.startswith('"'):
            path = unquote(path)[0]
        return {"port": port, "target_address": "unix:" + path, "target_port": None}
    if target.isdigit():
        return {"port": port, "target_address": DEFAULT_TARGET, "target_port": int(target)}
    m = re.match(r"^\[([0-9A-Fa-f:.]+)\](?::(\d+))?\Z", target) or re.match(r"^([^:]+)(?::(\d+))?\Z", target)
    if not m:
        raise ProtocolError("unexpected HiddenServicePort target %r" % target[:80])
    return {"port": port, "target_address": m.group(1),
            "target_port": int(m.group(2)) if m.group(2) else port}


# -- services ------------------------------------------------------------------------------------
def _as_bool(value):
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes")


def option_value(service, key):
    """The value of an OPTIONS key ("max_streams", "pow.enabled") in a canonical service."""
    if "." in key:
        group, member = key.split(".")
        return service[group][member]
    return service[key]


def _set_option(service, key, value):
    if "." in key:
        group, member = key.split(".")
        service[group][member] = value
    else:
        service[key] = value


def default_service(path):
    service = {"path": path, "ports": []}
    for group in GROUPS:
        service[group] = {}
    for option in OPTIONS:
        _set_option(service, option.key, option.default)
    service["extra_options"] = {}
    service["onionbalance_frontend"] = None
    return service


def normalize_frontend(value):
    """onionbalance_frontend (an address with or without .onion; None or '': not balanced) ->
    'xxx.onion' or None; a malformed address or one with a wrong checksum is refused."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ServiceConfigError("onionbalance_frontend must be the frontend's v3 onion address, got %r" % (value,))
    text = value.strip()
    try:
        onion.parse_onion_address(text)
    except onion.OnionKeyError as exc:
        raise ServiceConfigError("onionbalance_frontend: %s; give the Onionbalance frontend's v3 address (56 "
                                 "base32 characters, with or without .onion)" % exc)
    return (text[:-6] if text.endswith(".onion") else text) + ".onion"


def render_ob_config(frontend):
    """The ob_config file of a backend of the frontend 'xxx.onion'."""
    return "MasterOnionAddress %s\n" % frontend


def parse_ob_config(text):
    """The frontend address ('xxx.onion') an ob_config text names, None when it names none
    (or not one tor accepts: tor 0.4.9 wants the .onion suffix)."""
    for key, value in parse_torrc_lines(text or ""):
        if key.lower() == "masteronionaddress":
            if not value.endswith(".onion"):
                return None
            try:
                return normalize_frontend(value)
            except ServiceConfigError:
                return None
    return None


def _typed(key, kind, limits, value):
    """A parameter of an OPTIONS row -> its canonical value, or ServiceConfigError."""
    if kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
            raise ServiceConfigError("%s must be a boolean, got %r" % (key, value))
        return text in ("1", "true", "yes", "on")
    if kind == "choice":
        if not isinstance(value, str) or value.lower() not in limits:
            raise ServiceConfigError("%s must be one of %s, got %r" % (key, ", ".join(limits), value))
        return value.lower()
    try:
        if isinstance(value, bool) or isinstance(value, float) and value != int(value):
            raise ValueError
        value = int(value)
    except (TypeError, ValueError, OverflowError):
        raise ServiceConfigError("%s must be an integer, got %r" % (key, value))
    if key == "version" and value != 3:
        raise ServiceConfigError("only version 3 onion services are supported (tor removed v2)")
    low, high = limits
    if not low <= value <= high:
        # a value of thousands of digits cannot even be formatted (Python's int_max_str_digits): not shown whole
        shown = "%d" % value if value.bit_length() < 64 else "a number of %d bits" % value.bit_length()
        raise ServiceConfigError("%s must be between %d and %d (tor's limits), got %s" % (key, low, high, shown))
    return value


def _group_params(params, group):
    value = params.get(group)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ServiceConfigError("%s must be a dict with the keys %s" % (group, ", ".join(GROUPS[group])))
    unknown = sorted(k for k in value if k not in GROUPS[group])
    if unknown:
        raise ServiceConfigError("%s has no option %s (it takes %s)"
                                 % (group, ", ".join(unknown), ", ".join(GROUPS[group])))
    return value


def normalize_group(group, value):
    """One option group's parameter (a dict, or None) -> the whole group, tor's defaults filled in."""
    params = _group_params({group: value}, group)
    out = dict(default_service("/")[group])
    for member in GROUPS[group]:
        if params.get(member) is not None:
            option = _BY_KEY[group + "." + member]
            out[member] = _typed(option.key, option.kind, option.limits, params[member])
    return out


def _extra_key_refusal(key):
    """Why an extra_options key is refused, or None."""
    lkey = key.lower()
    if lkey in TOR_WIDE:
        return ("extra_options key %r is refused: %s is a tor-wide option, not one of a service: it would make "
                "every onion service of this tor non-anonymous (single-hop circuits), and tor accepts it only "
                "with HiddenServiceNonAnonymousMode 1, HiddenServiceSingleHopMode 1 and SocksPort 0 together "
                "in torrc. Set it in torrc yourself if you mean it" % (key, TOR_WIDE[lkey])
                if lkey != "hiddenservicestatistics" else
                "extra_options key %r is refused: HiddenServiceStatistics is a tor-wide (relay) option, not one "
                "of a service" % key)
    if lkey == OB_OPTION.lower():
        return ("extra_options key %r is refused: give onionbalance_frontend (the frontend's address), which sets "
                "%s and writes the ob_config file tor needs with it" % (key, OB_OPTION))
    if lkey in _BY_TOR_NAME:
        return ("extra_options key %r must be another HiddenService* option: it has its own option, %s"
                % (key, _BY_TOR_NAME[lkey][1]))
    if not _EXTRA_KEY_RE.match(key) or lkey in _RESERVED:
        return ("extra_options key %r must be another HiddenService* option (the ones with their own parameter "
                "are not allowed here)" % key)
    return None


def normalize_service(params):
    """Module parameters of one persistent service -> canonical service dict."""
    path = params.get("path")
    if not path or not isinstance(path, str):
        raise ServiceConfigError("path (the HiddenServiceDir) is required")
    check_value(path, "path")
    if not os.path.isabs(path):
        raise ServiceConfigError("path must be absolute, got %r" % path)
    if any(c in path for c in '"\\') or path != path.strip():
        raise ServiceConfigError("path %r must not contain quotes or backslashes or surrounding spaces" % path)
    said = config_value.problem(path, "torrc", "line")
    if said:   # a vertical tab, a form feed, ESC...: a line break for the drop-in's readers, noise for tor
        raise ServiceConfigError("path %s %s (the drop-in's HiddenServiceDir line would not stay one line)"
                                 % (config_value.shown(path), said))
    path = os.path.normpath(path)
    service = default_service(path)
    ports = params.get("ports") or []
    service["ports"] = [normalize_port(p) for p in ports]
    groups = {group: _group_params(params, group) for group in GROUPS}
    for option in OPTIONS:
        if "." in option.key:
            group, member = option.key.split(".")
            value = groups[group].get(member)
        else:
            value = params.get(option.key)
        if value is None:
            continue
        _set_option(service, option.key, _typed(option.key, option.kind, option.limits, value))
    intro = service["intro_dos"]
    if intro["rate_per_sec"] > intro["burst_per_sec"]:
        raise ServiceConfigError("intro_dos.rate_per_sec (%d) must not be above intro_dos.burst_per_sec (%d): tor "
                                 "refuses that" % (intro["rate_per_sec"], intro["burst_per_sec"]))
    extra = params.get("extra_options") or {}
    for key, value in extra.items():
        refusal = _extra_key_refusal(key)
        if refusal:
            raise ServiceConfigError(refusal)
        values = value if isinstance(value, list) else [value]
        out = []
        for v in values:
            v = ("1" if v else "0") if isinstance(v, bool) else str(v)
            check_value(v, "extra_options %s" % key)
            if "#" in v or config_value.problem(v, "torrc", "value"):
                # written raw into the drop-in: tor would read a comment there, or the next line as more of it
                raise ServiceConfigError("extra_options %s: the value %r must not hold a # or a control character, "
                                         "begin with a double quote or end with a backslash (tor would read the "
                                         "drop-in's line otherwise when it reads the file again)" % (key, v))
            out.append(v)
        service["extra_options"][key] = out
    service["onionbalance_frontend"] = normalize_frontend(params.get("onionbalance_frontend"))
    if service["onionbalance_frontend"] and service["pow"]["enabled"]:
        raise ServiceConfigError(
            "pow.enabled is refused on the balanced service %s (onionbalance_frontend): Onionbalance 0.2.2 "
            "publishes the frontend's descriptor with an inner layer of only create2-formats and the backends' "
            "introduction points, without their pow-params line, so clients reaching the frontend's address never "
            "solve a puzzle and the defence does nothing; turn pow off for this service" % path)
    return service


def services_from_conf(pairs):
    """GETCONF HiddenServiceOptions pairs -> list of canonical service dicts (tor's order)."""
    services = []
    current = None
    for key, value in pairs:
        if value is None:
            continue
        lkey = key.lower()
        if lkey == "hiddenservicedir":
            current = default_service(os.path.normpath(value))
            services.append(current)
            continue
        if current is None:
            raise ProtocolError("tor reported %s before any HiddenServiceDir" % key)
        try:
            if lkey == "hiddenserviceport":
                current["ports"].append(port_from_tor(value))
                continue
            if lkey in _BY_TOR_NAME:
                option = _BY_TOR_NAME[lkey]
                _set_option(current, option.key, _from_tor(option.kind, value))
                continue
            if lkey == OB_OPTION.lower():
                current["onionbalance_frontend"] = OB_FLAG if _from_tor("bool", value) else None
                continue
        except ValueError:   # a value tor would never write ('', '\u00b2'): the peer is not tor
            raise ProtocolError("unexpected %s value %r" % (key, value[:80]))
        current["extra_options"].setdefault(key, []).append(value)
    return services


def _from_tor(kind, value):
    if kind == "int":
        return int(value)
    if kind == "choice":
        if not value or not value.isalnum():
            raise ValueError(value)
        return value.lower()
    return _as_bool(value)


def _to_tor(kind, value):
    return ("1" if value else "0") if kind == "bool" else str(value)


def service_to_conf(service):
    """Canonical service -> ordered (option, value) pairs; defaults are left out."""
    pairs = [("HiddenServiceDir", service["path"])]
    for port in service["ports"]:
        pairs.append(("HiddenServicePort", port_to_tor(port)))
    for option in OPTIONS:
        value = option_value(service, option.key)
        if value != option.default:
            pairs.append((option.tor_name, _to_tor(option.kind, value)))
    if service.get("onionbalance_frontend"):
        pairs.append((OB_OPTION, "1"))
    for key in sorted(service["extra_options"]):
        for value in service["extra_options"][key]:
            pairs.append((key, value))
    return pairs


def block_to_conf(services):
    """The whole HiddenService block for one SETCONF (a bare HiddenServiceDir clears it)."""
    if not services:
        return [("HiddenServiceDir", None)]
    pairs = []
    for service in services:
        pairs.extend(service_to_conf(service))
    return pairs


def config_view(service):
    """What to compare and show in a diff: the service without derived keys."""
    keys = (["path", "ports"] + [o[1] for o in OPTIONS if "." not in o[1]] + sorted(GROUPS) + ["extra_options"]
            + ["onionbalance_frontend"])
    return {k: dict(service[k]) if k in GROUPS else service[k] for k in keys if k in service}


# -- the managed drop-in file ------------------------------------------------------------------
DROP_IN_HEADER = ("# Managed by onionlab.tor (tor_hidden_service): the onion services it configures.\n"
                  "# Included from torrc so that they survive a restart. Edits here are overwritten.\n")


def _torrc_quote(value):
    return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"')


def render_drop_in(services):
    lines = [DROP_IN_HEADER]
    for service in services:
        lines.append("\n")
        for key, value in service_to_conf(service):
            if key == "HiddenServiceDir":
                value = _torrc_quote(value)
            lines.append("%s %s\n" % (key, value))
    return "".join(lines)


def parse_torrc_lines(text):
    """(keyword, value) pairs of a torrc text: comments, blanks and continuations handled."""
    pairs = []
    logical = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            logical.append(line[:-1])
            continue
        logical.append(line)
        joined = " ".join(logical).strip()
        logical = []
        if not joined or joined.startswith("#"):
            continue
        m = re.match(r"^(\S+)\s*(.*)\Z", joined)
        key, value = m.group(1), m.group(2).strip()
        if value.startswith('"'):
            try:
                value = unquote(value)[0]
            except ProtocolError:
                pass
        elif "#" in value:
            value = value.split("#", 1)[0].strip()
        pairs.append((key, value))
    return pairs


def parse_drop_in(text):
    """The services of a drop-in's text."""
    return services_from_conf(parse_torrc_lines(text))
