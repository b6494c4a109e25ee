# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prometheus role's own variables, checked (issue 41: roles declare, Python decides): the listen addresses and
flags of Prometheus and Alertmanager, the durations written into prometheus.yml, the rule file and alertmanager.yml,
and the Alertmanager receiver; and Alertmanager's configuration from them. Every wrong variable is named in one
message; what the role writes from them that is not written as given (the Alertmanagers Prometheus sends alerts to,
the services' flags, the directories, alertmanager.yml's group, the alert rules' numbers) is decided here too (plan).
The filters prometheus_settings and alertmanager_config are its faces; the filter config_values checks, before this,
that each value stays one word of the services' flags files; the scrape targets are prometheus_targets.py's.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import posixpath
import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor.torrc import role_bool

# every duration variable of the role, written as it is into prometheus.yml, the rule file or alertmanager.yml: a
# newline there would add keys to an alert or a scrape job
DURATIONS = (
    "prometheus_scrape_interval", "prometheus_evaluation_interval", "prometheus_scrape_timeout",
    "prometheus_onion_scrape_interval", "prometheus_onion_scrape_timeout",
    "prometheus_alert_tor_down_for", "prometheus_alert_no_intro_for", "prometheus_alert_pow_for",
    "prometheus_alert_pow_window", "prometheus_alert_onionprobe_down_for", "prometheus_alert_unreachable_for",
    "prometheus_alert_descriptor_unreachable_for", "prometheus_alert_unexpected_status_for",
    "prometheus_alert_certificate_for", "prometheus_alert_watchdog_unhealthy_for",
    "prometheus_alert_watchdog_repairs_window", "prometheus_alertmanager_group_wait",
    "prometheus_alertmanager_group_interval", "prometheus_alertmanager_repeat_interval",
)
LISTENERS = ("prometheus_listen_address", "prometheus_alertmanager_listen_address")
# flags the role writes itself (Alertmanager: no cluster either)
OWN_FLAGS = {"prometheus_extra_args": re.compile(r"^--(config\.file|web\.listen-address)\Z"),
             "prometheus_alertmanager_extra_args": re.compile(r"^--(config\.file|web\.listen-address|cluster\..*)\Z")}
RECEIVERS = ("none", "webhook", "email")
BOOLEANS = ("prometheus_alertmanager_send_resolved", "prometheus_alertmanager_email_require_tls",
            "prometheus_manage_service")
# whole numbers the rule file writes (seconds)
WHOLE_NUMBERS = ("prometheus_alert_certificate_expiry_days", "prometheus_alert_watchdog_stale_seconds")
# the files whose directory the role makes (Alertmanager's with a receiver only)
FILES = ("prometheus_rules_file", "prometheus_config_file", "prometheus_alertmanager_config_file")
_DURATION_RE = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+\Z")
# ADDRESS:PORT as Prometheus, Alertmanager and a proxy URL take it (a bracketed IPv6, an IPv4 or a host name); the
# port is group 4. prometheus_targets.py builds the SOCKS5 proxy URL's pattern from it.
HOST_PORT = r"(\[[0-9A-Fa-f:.]+\]|[0-9]{1,3}(\.[0-9]{1,3}){3}|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):([0-9]{1,5})"
_LISTEN_RE = re.compile(r"^%s\Z" % HOST_PORT)
_FLAG_RE = re.compile(r"^--[A-Za-z0-9][A-Za-z0-9._-]*(=[A-Za-z0-9_./:,=@+~?&\[\]-]*)?\Z")
_URL_RE = re.compile(r"^https?://\S+\Z")
_MAILBOX_RE = re.compile(r"^[^@\s]+@[^@\s]+\Z")
_SMARTHOST_RE = re.compile(r"^[^\s:]+:[0-9]+\Z")
_GROUP_BY = ["alertname", "host", "onion", "name"]


class SettingsError(ValueError):
    """One message naming every wrong variable."""


def _shown(value, width=60):
    text = repr(value) if not isinstance(value, str) else '"%s"' % value.encode("unicode_escape").decode("ascii")
    return text if len(text) <= width else text[:width - 3] + "..."


def _listener_problems(v):
    out = []
    for name in LISTENERS:
        value = v.get(name)
        m = _LISTEN_RE.match(value) if isinstance(value, str) else None
        if not m or not 1 <= int(m.group(4)) <= 65535:
            out.append("%s must be an address and a port (127.0.0.1:9090, [::1]:9090; 0.0.0.0:9090 for every "
                       "address, which shows every onion address beside its server's to whoever reaches it), got %s"
                       % (name, _shown(value)))
    return out


def _flag_problems(v):
    out = []
    for name, own in OWN_FLAGS.items():
        value = v.get(name)
        if not isinstance(value, list):
            out.append("%s must be a list of flags, got %s" % (name, _shown(value)))
            continue
        bad = [_shown(flag) for flag in value
               if not isinstance(flag, str) or not _FLAG_RE.match(flag) or own.match(flag.split("=", 1)[0])]
        if bad:
            out.append("%s must be flags (--name or --name=value, one word, no quote, $ or backtick) other than the "
                       "role's own (--config.file, --web.listen-address; Alertmanager's --cluster.*: no cluster), "
                       "got %s" % (name, ", ".join(bad)))
    return out


def _targets_problems(v):
    """prometheus_alertmanager_targets: null (the role decides) or a list of host:port."""
    value = v.get("prometheus_alertmanager_targets")
    if value is None or (isinstance(value, list) and all(isinstance(t, str) and _LISTEN_RE.match(t) for t in value)):
        return []
    return ["prometheus_alertmanager_targets must be null (this host's Alertmanager when it has a receiver) or a list "
            "of host:port, got %s" % _shown(value)]


def _whole(value):
    """value as a whole number of 0 or more (an int, or a string of digits as inventories write), or None."""
    if isinstance(value, str) and re.match(r"^\s*[0-9]{1,12}\s*\Z", value):
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _receiver_problems(v):
    receiver = v.get("prometheus_alertmanager_receiver")
    if receiver not in RECEIVERS:
        return ["prometheus_alertmanager_receiver must be one of %s, got %s" % (", ".join(RECEIVERS), _shown(receiver))]
    needs = {"webhook": (("prometheus_alertmanager_webhook_url", _URL_RE, "an http:// or https:// URL"),),
             "email": (("prometheus_alertmanager_email_to", _MAILBOX_RE, "an address"),
                       ("prometheus_alertmanager_email_from", _MAILBOX_RE, "an address"),
                       ("prometheus_alertmanager_email_smarthost", _SMARTHOST_RE, "host:port"))}.get(receiver, ())
    return ["the receiver %s needs %s, %s; got %s" % (receiver, name, what, _shown(v.get(name)))
            for name, pattern, what in needs
            if not isinstance(v.get(name), str) or not pattern.match(v[name])]


def check(role_vars):
    """role_vars ({variable: value}, the role's full names) checked; returns them as given. SettingsError names
    every wrong variable, what it must be and what it was."""
    wrong = _listener_problems(role_vars) + _flag_problems(role_vars)
    bad = ["%s got %s" % (name, _shown(role_vars.get(name))) for name in DURATIONS
           if not isinstance(role_vars.get(name), str) or not _DURATION_RE.match(role_vars[name])]
    if bad:
        wrong.append("these variables must each be a Prometheus duration (15s, 1h30m): %s" % ", ".join(bad))
    wrong += ["%s must be true or false, got %s" % (name, _shown(role_vars.get(name))) for name in BOOLEANS
              if role_bool(role_vars.get(name)) is None]
    wrong += ["%s must be a whole number of 0 or more, got %s" % (name, _shown(role_vars.get(name)))
              for name in WHOLE_NUMBERS if _whole(role_vars.get(name)) is None]
    wrong += ["%s must be a path, got %s" % (name, _shown(role_vars.get(name))) for name in FILES
              if not isinstance(role_vars.get(name), str) or not role_vars[name]]
    wrong += _receiver_problems(role_vars) + _targets_problems(role_vars)
    if wrong:
        raise SettingsError("; ".join(wrong))
    return role_vars


def plan(role_vars):
    """What the role writes from its variables (checked first), not as given: alertmanager_targets (the Alertmanagers
    Prometheus sends alerts to: prometheus_alertmanager_targets, or when null this host's Alertmanager when it has a
    receiver, else none), prometheus_args and alertmanager_args (ARGS= of the services' flags files), config_dirs (the
    directories of the files the role writes, each once), alertmanager_config_group (alertmanager.yml's group: the
    service's, prometheus, when the role runs it; else None, the file's group kept), certificate_expiry_seconds and
    watchdog_stale_seconds (the alert rules' thresholds). No secret: the SMTP password is not in it."""
    check(role_vars)
    v = role_vars
    receiver = v["prometheus_alertmanager_receiver"] != "none"
    targets = v.get("prometheus_alertmanager_targets")
    if targets is None:
        targets = [v["prometheus_alertmanager_listen_address"]] if receiver else []
    config_dirs = []
    for name in FILES if receiver else FILES[:2]:
        directory = posixpath.dirname(v[name])
        if directory not in config_dirs:
            config_dirs.append(directory)
    prometheus_args = ["--config.file=" + v["prometheus_config_file"],
                       "--web.listen-address=" + v["prometheus_listen_address"]] + v["prometheus_extra_args"]
    alertmanager_args = ["--config.file=" + v["prometheus_alertmanager_config_file"],
                         "--web.listen-address=" + v["prometheus_alertmanager_listen_address"],
                         "--cluster.listen-address="] + v["prometheus_alertmanager_extra_args"]
    return {"alertmanager_targets": list(targets),
            "prometheus_args": " ".join(prometheus_args),
            "alertmanager_args": " ".join(alertmanager_args),
            "config_dirs": config_dirs,
            "alertmanager_config_group": "prometheus" if role_bool(v["prometheus_manage_service"]) else None,
            "certificate_expiry_seconds": _whole(v["prometheus_alert_certificate_expiry_days"]) * 86400,
            "watchdog_stale_seconds": _whole(v["prometheus_alert_watchdog_stale_seconds"])}


def alertmanager_config(role_vars):
    """alertmanager.yml's object: every alert to the one receiver (webhook or email) the variables name, checked."""
    check(role_vars)
    v, receiver = role_vars, {"name": "onionlab"}
    kind = v["prometheus_alertmanager_receiver"]
    if kind == "webhook":
        receiver["webhook_configs"] = [{"url": v["prometheus_alertmanager_webhook_url"],
                                        "send_resolved": role_bool(v["prometheus_alertmanager_send_resolved"])}]
    elif kind == "email":
        email = {"to": v["prometheus_alertmanager_email_to"], "from": v["prometheus_alertmanager_email_from"],
                 "smarthost": v["prometheus_alertmanager_email_smarthost"],
                 "require_tls": role_bool(v["prometheus_alertmanager_email_require_tls"]),
                 "send_resolved": role_bool(v["prometheus_alertmanager_send_resolved"])}
        if v.get("prometheus_alertmanager_email_auth_username"):
            email.update(auth_username=v["prometheus_alertmanager_email_auth_username"],
                         auth_password=v.get("prometheus_alertmanager_email_auth_password"))
        receiver["email_configs"] = [email]
    return {"route": {"receiver": "onionlab", "group_by": list(_GROUP_BY),
                      "group_wait": v["prometheus_alertmanager_group_wait"],
                      "group_interval": v["prometheus_alertmanager_group_interval"],
                      "repeat_interval": v["prometheus_alertmanager_repeat_interval"]},
            "receivers": [receiver]}
