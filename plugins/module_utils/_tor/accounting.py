# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Accounting, traffic, bandwidth, uptime and state of a running tor, as plain facts.

This is a private module_utils file of onionlab.tor; its API may change at any time.

    with connect(port=9051) as tor:
        facts, missing = collect(tor, ["accounting", "bandwidth"])

collect() sends one GETINFO for every key the asked groups need and, for the accounting and
bandwidth groups, one GETCONF; build_facts() turns those answers into the facts dict and
never raises on a value: anything missing, malformed or reported by tor as unknown becomes
None. The figures follow Stem's (stem.control.Controller.get_accounting_stats,
get_effective_rate, get_start_time) so the two can be compared.

References: tor's control-spec, GETINFO (section 3.9) keys accounting/*, traffic/*, uptime,
process/pid, status/bootstrap-phase, status/circuit-established, network-liveness, dormant;
tor's hibernate.c for what accounting/bytes-left means under each AccountingRule.
Nothing here imports Ansible.
"""

from __future__ import annotations

import re
import time

from ansible_collections.onionlab.tor.plugins.module_utils._tor import _dirdoc
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError, UnrecognizedKey
from ansible_collections.onionlab.tor.plugins.module_utils._tor.reply import parse_mapping

GROUPS = ("process", "status", "accounting", "traffic", "bandwidth")

GETINFO_KEYS = {
    "process": ("version", "process/pid", "uptime"),
    "status": ("status/bootstrap-phase", "network-liveness", "dormant", "status/circuit-established"),
    "accounting": ("accounting/enabled", "accounting/hibernating", "accounting/bytes", "accounting/bytes-left",
                   "accounting/interval-start", "accounting/interval-wake", "accounting/interval-end"),
    "traffic": ("traffic/read", "traffic/written"),
    "bandwidth": (),
}

GETCONF_OPTIONS = {
    "accounting": ("AccountingMax", "AccountingRule", "AccountingStart"),
    "bandwidth": ("BandwidthRate", "BandwidthBurst", "RelayBandwidthRate", "RelayBandwidthBurst",
                  "MaxAdvertisedBandwidth"),
}

ACCOUNTING_FIELDS = ("enabled", "hibernating", "bytes_read", "bytes_written", "bytes_left_read",
                     "bytes_left_written", "interval_start", "interval_wake", "interval_end", "time_until_reset",
                     "max", "rule", "start", "bytes_used", "bytes_left", "fraction_used", "fraction_left")

BANDWIDTH_OPTIONS = (("rate", "BandwidthRate"), ("burst", "BandwidthBurst"), ("relay_rate", "RelayBandwidthRate"),
                     ("relay_burst", "RelayBandwidthBurst"), ("max_advertised", "MaxAdvertisedBandwidth"))

HIBERNATION_STATES = ("awake", "soft", "hard")
ACCOUNTING_RULES = ("max", "sum", "in", "out")
LIVENESS = ("up", "down")
BOOTSTRAP_SEVERITIES = ("NOTICE", "WARN", "ERR")

_UINT_RE = re.compile(r"[0-9]{1,20}\Z")
_QUOTED_RE = re.compile(r'"([^"]*)"')


# -- value parsers: text (or None) -> value or None, never an exception -------------------------
def parse_uint(value):
    """A non-negative decimal integer ('123'), else None (no sign, spaces or non-ASCII digits)."""
    if isinstance(value, str) and _UINT_RE.match(value):
        return int(value)
    return None


def parse_flag(value):
    """tor's booleans '1'/'0' -> True/False, else None."""
    return {"1": True, "0": False}.get(value) if isinstance(value, str) else None


def parse_choice(value, choices):
    """value when it is one of choices (exactly), else None."""
    return value if isinstance(value, str) and value in choices else None


def parse_pair(value):
    """'READ WRITTEN' (accounting/bytes, accounting/bytes-left) -> (int, int); (None, None) if odd."""
    if isinstance(value, str):
        parts = value.split(" ")
        if len(parts) == 2:
            first, second = parse_uint(parts[0]), parse_uint(parts[1])
            if first is not None and second is not None:
                return first, second
    return None, None


def parse_time(value):
    """tor's 'YYYY-MM-DD HH:MM:SS' (UTC) -> seconds since the epoch (int), else None."""
    if not isinstance(value, str):
        return None
    try:
        return _dirdoc.parse_timestamp(value)
    except ValueError:  # 2026-02-30 and the like
        return None


def iso_time(epoch):
    """Seconds since the epoch -> 'YYYY-MM-DDTHH:MM:SSZ' (UTC, whole seconds); None stays None."""
    return None if epoch is None else _dirdoc.iso(epoch)


def parse_text(value):
    """A non-empty single-line string, else None."""
    if isinstance(value, str) and value.strip() and "\n" not in value:
        return value.strip()
    return None


def parse_bootstrap(value):
    """status/bootstrap-phase, e.g. 'NOTICE BOOTSTRAP PROGRESS=100 TAG=done SUMMARY="Done"' or
    'WARN BOOTSTRAP PROGRESS=10 TAG=conn_done SUMMARY="..." WARNING="..." REASON=... COUNT=3
    RECOMMENDATION=warn HOSTID=... HOSTADDR=...', -> a dict (every field None when absent), or
    None when the value is not a bootstrap status at all."""
    if not isinstance(value, str):
        return None
    try:
        positional, fields = parse_mapping(value)
    except TorError:
        return None
    if len(positional) < 2 or positional[1] != "BOOTSTRAP":
        return None
    progress = parse_uint(fields.get("PROGRESS"))
    return {
        "severity": parse_choice(positional[0], BOOTSTRAP_SEVERITIES),
        "progress": progress if progress is not None and progress <= 100 else None,
        "tag": fields.get("TAG"),
        "summary": fields.get("SUMMARY"),
        "warning": fields.get("WARNING"),
        "reason": fields.get("REASON"),
        "count": parse_uint(fields.get("COUNT")),
        "recommendation": fields.get("RECOMMENDATION"),
        "host": fields.get("HOSTADDR"),
    }


# -- bandwidth: Stem's get_effective_rate ----------------------------------------------------
def stem_minimum(values):
    """Stem's get_effective_rate() loop over [(option, bytes)]: the smallest value, a zero
    Relay* option skipped (it means 'same as BandwidthRate'), and - as Stem does - a running
    minimum of 0 replaced by the next value. None when any value is unknown."""
    result = None
    for option, value in values:
        if value is None:
            return None
        if value == 0 and option.startswith("Relay"):
            continue
        result = min(result, value) if result else value
    return result


def effective_rate(rate, relay_rate, max_advertised):
    """min(BandwidthRate, RelayBandwidthRate unless 0, MaxAdvertisedBandwidth), as Stem."""
    return stem_minimum([("BandwidthRate", rate), ("RelayBandwidthRate", relay_rate),
                         ("MaxAdvertisedBandwidth", max_advertised)])


def effective_burst(burst, relay_burst):
    """min(BandwidthBurst, RelayBandwidthBurst unless 0), as Stem."""
    return stem_minimum([("BandwidthBurst", burst), ("RelayBandwidthBurst", relay_burst)])


# -- groups ----------------------------------------------------------------------------------
def accounting_used(rule, bytes_read, bytes_written):
    """The bytes AccountingMax limits under AccountingRule (tor's get_accounting_bytes()):
    max -> the larger direction, sum -> both, in -> read, out -> written. An unknown rule
    (a tor older than AccountingRule) counts as max, tor's behaviour before the option."""
    if bytes_read is None or bytes_written is None:
        return None
    if rule == "sum":
        return bytes_read + bytes_written
    if rule == "in":
        return bytes_read
    if rule == "out":
        return bytes_written
    return max(bytes_read, bytes_written)


def accounting_facts(info, conf, retrieved):
    """The accounting group. Everything but 'enabled' is None unless accounting is enabled."""
    facts = dict.fromkeys(ACCOUNTING_FIELDS)
    facts["enabled"] = parse_flag(info.get("accounting/enabled"))
    if not facts["enabled"]:
        return facts
    facts["hibernating"] = parse_choice(info.get("accounting/hibernating"), HIBERNATION_STATES)
    facts["bytes_read"], facts["bytes_written"] = parse_pair(info.get("accounting/bytes"))
    facts["bytes_left_read"], facts["bytes_left_written"] = parse_pair(info.get("accounting/bytes-left"))
    start, wake, end = [parse_time(info.get("accounting/interval-" + k)) for k in ("start", "wake", "end")]
    facts["interval_start"], facts["interval_wake"], facts["interval_end"] = [iso_time(t) for t in (start, wake, end)]
    if end is not None and retrieved is not None:
        facts["time_until_reset"] = max(0, end - int(retrieved))  # as Stem
    limit = parse_uint(conf.get("AccountingMax"))
    facts["max"] = limit
    facts["rule"] = parse_choice(conf.get("AccountingRule"), ACCOUNTING_RULES)
    facts["start"] = parse_text(conf.get("AccountingStart"))
    used = accounting_used(facts["rule"], facts["bytes_read"], facts["bytes_written"])
    facts["bytes_used"] = used
    if used is not None and limit:
        left = max(0, limit - used)
        facts["bytes_left"] = left
        facts["fraction_used"] = round(float(used) / limit, 6)
        facts["fraction_left"] = round(float(left) / limit, 6)
    return facts


def process_facts(info, retrieved):
    uptime = parse_uint(info.get("uptime"))
    return {
        "version": parse_text(info.get("version")),
        "pid": parse_uint(info.get("process/pid")),
        "uptime": uptime,
        "started_at": iso_time(retrieved - uptime) if uptime is not None and retrieved is not None else None,
    }


def status_facts(info):
    return {
        "bootstrap": parse_bootstrap(info.get("status/bootstrap-phase")),
        "network_liveness": parse_choice(info.get("network-liveness"), LIVENESS),
        "dormant": parse_flag(info.get("dormant")),
        "circuit_established": parse_flag(info.get("status/circuit-established")),
    }


def traffic_facts(info):
    return {"traffic": {"read": parse_uint(info.get("traffic/read")),
                        "written": parse_uint(info.get("traffic/written"))}}


def bandwidth_facts(conf):
    raw = dict((name, parse_uint(conf.get(option))) for name, option in BANDWIDTH_OPTIONS)
    return {
        "effective_rate": effective_rate(raw["rate"], raw["relay_rate"], raw["max_advertised"]),
        "effective_burst": effective_burst(raw["burst"], raw["relay_burst"]),
        "bandwidth": raw,
    }


def build_facts(info, conf, groups=GROUPS, retrieved=None, connected=None):
    """The facts dict from GETINFO answers {key: text} and GETCONF values {option: text or None}
    (keys absent when tor lacked them). retrieved/connected are epoch seconds (floats)."""
    facts = {"connection_time": iso_time(connected), "retrieved_at": iso_time(retrieved)}
    for group in GROUPS:
        if group not in groups:
            continue
        if group == "process":
            facts.update(process_facts(info, retrieved))
        elif group == "status":
            facts.update(status_facts(info))
        elif group == "accounting":
            facts["accounting"] = accounting_facts(info, conf, retrieved)
        elif group == "traffic":
            facts.update(traffic_facts(info))
        else:
            facts.update(bandwidth_facts(conf))
    return facts


# -- querying ----------------------------------------------------------------------------------
def keys_for(groups):
    """(GETINFO keys, GETCONF options) the groups need, in a stable order."""
    keys, options = [], []
    for group in GROUPS:
        if group in groups:
            keys.extend(GETINFO_KEYS[group])
            options.extend(GETCONF_OPTIONS.get(group, ()))
    return keys, options


def offending_name(exc, names):
    """The name of names that tor's 552 message quotes ('Unrecognized key "uptime"'), or None."""
    for quoted in _QUOTED_RE.findall(exc.message or ""):
        for name in names:
            if name.lower() == quoted.lower():
                return name
    return None


def query_tolerant(fetch, names):
    """fetch(list of names) -> {name: value}, tolerating names this tor does not know: on an
    UnrecognizedKey the name tor quotes is dropped and the rest asked again; when tor does not
    say which, each name is asked on its own. Returns ({name: value}, [dropped names])."""
    names = list(names)
    missing = []
    while names:
        try:
            return fetch(names), missing
        except UnrecognizedKey as exc:
            bad = offending_name(exc, names)
            if bad is None:
                break
            names.remove(bad)
            missing.append(bad)
    result = {}
    for name in names:
        try:
            result.update(fetch([name]))
        except UnrecognizedKey:
            missing.append(name)
    return result, missing


def _get_conf(controller, options):
    values = {}
    wanted = dict((option.lower(), option) for option in options)
    for option, value in controller.get_conf(*options):
        values[wanted.get(option.lower(), option)] = value
    return values


def collect(controller, groups=GROUPS, connected=None, clock=time.time):
    """One GETINFO (plus one GETCONF for accounting/bandwidth) -> (facts, [names tor lacked])."""
    keys, options = keys_for(groups)
    info, missing = query_tolerant(lambda names: controller.get_info(*names), keys) if keys else ({}, [])
    retrieved = clock()
    conf = {}
    if options:
        conf, conf_missing = query_tolerant(lambda names: _get_conf(controller, names), options)
        missing.extend(conf_missing)
    return build_facts(info, conf, groups, retrieved, connected), missing
