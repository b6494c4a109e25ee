# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prometheus role's scrape targets (issue 41: roles declare, Python decides): the tor hosts' MetricsPort, the
Onionprobe hosts' exporters and the watchdog hosts' node_exporters, each an address:port or, for a host whose location
is secret (prometheus_metrics_onion), its metrics onion service's port through tor; every host's port checked with one
message naming the host. The filter prometheus_targets is its face.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor import config_value
from ansible_collections.onionlab.tor.plugins.plugin_utils.prometheus_settings import HOST_PORT

ONIONPROBE_EXPORTER_PORT = 9935          # Onionprobe's own default, and the onionprobe role's
WILDCARDS = ("0.0.0.0", "::")
_METRICS_PORT_RE = re.compile(r"^([0-9]+|[0-9]{1,3}(\.[0-9]{1,3}){3}:[0-9]+|\[[0-9a-fA-F:.]+\]:[0-9]+)\Z")
_PORT_RE = re.compile(r"^[0-9]+\Z")
_PROXY_RE = re.compile(r"^socks5://%s\Z" % HOST_PORT)


class TargetsError(ValueError):
    """A host's port cannot be scraped; the message names the host and the variable."""


def _shown(value, width=40):
    text = str(value)
    return text if len(text) <= width + 5 else text[:width - 3] + "..."


def _bracketed(address):
    return "[%s]" % address if ":" in address else address


def _vars(hostvars, host):
    return hostvars[host] if host in hostvars else None


def _entry(host, hv, address, port):
    """{host, onion, target}: the metrics onion's port when the host names one (checked by targets first), else
    address:port."""
    onion = hv.get("prometheus_metrics_onion")
    if onion is not None:
        name = onion[:-len(".onion")] if onion.endswith(".onion") else onion
        return {"host": host, "onion": True, "target": "%s.onion:%d" % (name, port)}
    return {"host": host, "onion": False, "target": "%s:%d" % (_bracketed(address), port)}


def tor_targets(hosts, hostvars):
    """The tor hosts that set tor_metrics_port (as in torrc: a port, or an address and port)."""
    out = []
    for host in hosts:
        hv = _vars(hostvars, host)
        if hv is None or hv.get("tor_metrics_port") is None:
            continue
        spec = str(hv["tor_metrics_port"])
        port = int(spec.rpartition(":")[2]) if _METRICS_PORT_RE.match(spec) else 0
        if not 1 <= port <= 65535:
            raise TargetsError("host %s: tor_metrics_port must be its tor's MetricsPort, a port (9035) or an IP address "
                               "and port (10.0.0.5:9035, [fd00::5]:9035) as in torrc, got %s" % (host, _shown(spec)))
        listen = spec.rpartition(":")[0].strip("[]") if ":" in spec else ""
        address = hv.get("tor_metrics_address")
        if address is None:
            address = listen if listen not in ("",) + WILDCARDS else hv.get("ansible_host", host)
        out.append(_entry(host, hv, str(address), port))
    return out


def onionprobe_targets(hosts, hostvars):
    """The Onionprobe hosts' exporters (onionprobe_exporter_port, else Onionprobe's 9935)."""
    out = []
    for host in hosts:
        hv = _vars(hostvars, host)
        if hv is None:
            continue
        spec = str(hv.get("onionprobe_exporter_port", ONIONPROBE_EXPORTER_PORT))
        if not _PORT_RE.match(spec) or not 1 <= int(spec) <= 65535:
            raise TargetsError("host %s: onionprobe_exporter_port must be a port (1-65535), got %s" % (host, _shown(spec)))
        listen = str(hv.get("onionprobe_exporter_listen_address", "127.0.0.1"))
        address = hv.get("onionprobe_exporter_address")
        if address is None:
            address = listen if listen not in WILDCARDS else hv.get("ansible_host", host)
        out.append({"host": host, "target": "%s:%d" % (_bracketed(str(address)), int(spec))})
    return out


def watchdog_targets(hosts, hostvars, node_exporter_port):
    """The watchdog hosts' node_exporters (their prometheus_node_exporter_port, else the role's)."""
    out = []
    for host in hosts:
        hv = _vars(hostvars, host)
        if hv is None:
            continue
        port = hv.get("prometheus_node_exporter_port", node_exporter_port)
        try:
            port = int(port)
        except (TypeError, ValueError):
            port = 0
        if not 1 <= port <= 65535:
            raise TargetsError("host %s: prometheus_node_exporter_port must be a port (1-65535), got %s"
                               % (host, _shown(hv.get("prometheus_node_exporter_port", node_exporter_port))))
        out.append(_entry(host, hv, str(hv.get("ansible_host", host)), port))
    return out


UNCHECKED = object()   # targets' onion_proxy_url when the caller does not scrape through tor


def _metrics_onion_problems(hosts, hostvars):
    """One 'prometheus_metrics_onion of host H: the value "..." has a wrong checksum' per host whose metrics onion is
    not a v3 onion address (its version and checksum checked: config_value.onion_problem)."""
    out = []
    for host in hosts:
        hv = _vars(hostvars, host)
        value = None if hv is None else hv.get("prometheus_metrics_onion")
        said = None if value is None else config_value.onion_problem(value)
        if said:
            out.append("prometheus_metrics_onion of host %s: the value %s %s" % (host, config_value.shown(value), said))
    return out


def targets(tor_hosts, onionprobe_hosts, watchdog_hosts, hostvars, node_exporter_port, onion_proxy_url=UNCHECKED,
            jobs=None):
    """{'tor': [...], 'onionprobe': [...], 'watchdog': [...]}, and as the scrape config is written: 'tor_direct' and
    'watchdog_direct' (the targets scraped at their address), 'onion_jobs' ([{'job', 'targets'}]: one job per kind with
    targets at their metrics onion, named jobs[kind] + '_onion', where jobs is {'tor': ..., 'watchdog': ...}, the
    role's job names). TargetsError naming every host whose metrics onion is not a v3 onion address; then for the
    first host whose port is wrong; then, when a host is scraped at its metrics onion and onion_proxy_url is given,
    when that is not a SOCKS5 URL."""
    scraped = list(dict.fromkeys(list(tor_hosts or []) + list(watchdog_hosts or [])))
    problems = _metrics_onion_problems(scraped, hostvars)
    if problems:
        raise TargetsError("these variables must each name a v3 onion address (%s): %s. Nothing was changed."
                           % (config_value.ONION_FORM, "; ".join(problems)))
    out = {"tor": tor_targets(tor_hosts or [], hostvars),
           "onionprobe": onionprobe_targets(onionprobe_hosts or [], hostvars),
           "watchdog": watchdog_targets(watchdog_hosts or [], hostvars, node_exporter_port)}
    secret = list(dict.fromkeys(t["host"] for t in out["tor"] + out["watchdog"] if t["onion"]))
    m = _PROXY_RE.match(onion_proxy_url) if isinstance(onion_proxy_url, str) else None
    if secret and onion_proxy_url is not UNCHECKED and (not m or not 1 <= int(m.group(4)) <= 65535):
        raise TargetsError("prometheus_onion_proxy_url must be the SOCKS5 port of this host's tor, "
                           "socks5://ADDRESS:PORT (socks5://127.0.0.1:9050), to scrape %s at their "
                           "prometheus_metrics_onion; got %s" % (", ".join(secret), config_value.shown(onion_proxy_url)))
    jobs = dict({"tor": "tor", "watchdog": "onionlab_watchdog"}, **(jobs or {}))
    for kind in ("tor", "watchdog"):
        out[kind + "_direct"] = [t for t in out[kind] if not t["onion"]]
    out["onion_jobs"] = [{"job": "%s_onion" % jobs[kind], "label": jobs[kind],
                          "targets": [t for t in out[kind] if t["onion"]]}
                         for kind in ("tor", "watchdog") if any(t["onion"] for t in out[kind])]
    return out
