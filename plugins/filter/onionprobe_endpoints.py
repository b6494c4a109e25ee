# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Onionprobe's endpoints from the inventory: every host's onion_services (each web port, the paths and
statuses of onionprobe_checks) and the Onionbalance frontends, for the onionprobe role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onionprobe_endpoints
short_description: Onionprobe's endpoints made from every host's onion_services and the Onionbalance frontends
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Takes a dict of inventory host to what the P(onionlab.tor.onionprobe#role) role reads of it (C(onion_services),
    C(onion_service_addresses), C(onionprobe_checks), C(onionbalance_address), C(onionbalance_backends),
    C(onionbalance_name), C(onionprobe_frontend_checks)) and returns C(endpoints) (Onionprobe's C(endpoints)
    dict, one entry per service and port, named C(HOST/SERVICE:PORT)), C(probed) (one entry per endpoint:
    C(name), C(host), C(service), C(address), C(port), C(kind) V(service) or V(frontend)) and C(skipped)
    (C(host), C(service), C(reason)): services with client authorization (Onionprobe 1.4 decrypts a descriptor
    without client keys, so it cannot probe them), services without a web port, services whose address is not
    known yet."
  - "A service is probed on each of its ports 80 (C(http)) and 443 (C(https)), or on the ports its host's
    C(onionprobe_checks[SERVICE].ports) names, at C(/) expecting status 200 unless C(onionprobe_checks[SERVICE].paths)
    says otherwise; C(onionprobe_checks[SERVICE].probe=false) leaves it out."
  - A service's address is its host's C(onion_service_addresses) (set by the P(onionlab.tor.onion_service#role)
    role in this run), else the file C(<backup_dir>/<host>/<service directory>/hostname) of the escrow. A frontend's
    is the host's C(onionbalance_address) (set by the P(onionlab.tor.onionbalance#role) role), else
    C(<onionbalance_backup_dir>/onionbalance/<onionbalance_name>/hostname) for a host with C(onionbalance_backends).
  - Fails with one message naming the host and service on a malformed C(onionprobe_checks) entry (an unknown key,
    a service the host does not have, a port the service does not have, a protocol other than V(http) or
    V(https), a path not starting with C(/), a status that is not 100-599).
  - "With O(extra_endpoints), those endpoints are added to C(endpoints) (an entry of the same name replaces the
    inventory's) and named in C(report), which is C({probed, not probed}): what the role prints."
options:
  _input:
    description:
      - Inventory host name to its variables (those listed above; missing ones are taken as unset).
      - With O(hostvars), the list of inventory host names to read (hosts not in O(hostvars) are left out).
    type: raw
    required: true
  hostvars:
    description: The play's C(hostvars), for a list of host names as the input.
    type: dict
  extra_endpoints:
    description: Onionprobe endpoints to add as they are (C(onionprobe_extra_endpoints) of the role).
    type: dict
  backup_dir:
    description: The onion_service role's escrow directory (C(onion_service_backup_dir)).
    type: path
    required: true
  onionbalance_backup_dir:
    description: The onionbalance role's escrow directory; O(backup_dir) when not given.
    type: path
"""

EXAMPLES = r"""
- name: Onionprobe's endpoints
  ansible.builtin.set_fact:
    probe: "{{ groups['all'] | onionlab.tor.onionprobe_endpoints(hostvars=hostvars,
                                                                 backup_dir=playbook_dir ~ '/onion-keys') }}"
"""

RETURN = r"""
_value:
  description: C(endpoints), C(probed), C(skipped) and C(report), as described above.
  type: dict
"""

import os
import re

try:
    from ansible.errors import AnsibleFilterError
except ImportError:  # pragma: no cover (plain Python in unit tests)
    class AnsibleFilterError(Exception):
        pass

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow

_WEB_PORTS = {80: "http", 443: "https"}
_CHECK_KEYS = ("ports", "protocol", "paths", "probe")
_PATH_KEYS = ("path", "allowed_statuses", "pattern")


def _fail(msg):
    raise AnsibleFilterError("onionprobe: %s" % msg)


def _virtual_port(spec):
    """The onion port of one entry of a service's ports (80, "80:8080", "80 127.0.0.1:8080", {port: 80})."""
    if isinstance(spec, dict):
        spec = spec.get("port")
    if isinstance(spec, bool):
        return None
    if isinstance(spec, int):
        return spec
    m = re.match(r"^\s*(\d+)", str(spec or ""))
    return int(m.group(1)) if m else None


def _read(path):
    try:
        with open(path) as f:
            text = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if onion.is_address(text) else None


def _address(value):
    value = str(value or "").strip()
    if value and not value.endswith(".onion"):
        value += ".onion"
    return value if onion.is_address(value) else None


def _paths(where, paths):
    if paths is None:
        return [{"path": "/", "allowed_statuses": [200]}]
    if not isinstance(paths, list) or not paths:
        _fail("%s: paths must be a non-empty list of {path, allowed_statuses, pattern}" % where)
    out = []
    for p in paths:
        if isinstance(p, str):
            p = {"path": p}
        if not isinstance(p, dict):
            _fail("%s: each of paths must be a path or a dict {path, allowed_statuses, pattern}" % where)
        unknown = sorted(set(p) - set(_PATH_KEYS))
        if unknown:
            _fail("%s: unknown key(s) %s in paths (known: %s)" % (where, ", ".join(unknown), ", ".join(_PATH_KEYS)))
        path = p.get("path", "/")
        if not isinstance(path, str) or not path.startswith("/") or any(c in path for c in "\r\n"):
            _fail("%s: path must start with / and be one line, got %r" % (where, str(path)[:40]))
        statuses = p.get("allowed_statuses", [200])
        if isinstance(statuses, int):
            statuses = [statuses]
        if (not isinstance(statuses, list) or not statuses
                or not all(isinstance(s, int) and not isinstance(s, bool) and 100 <= s <= 599 for s in statuses)):
            _fail("%s: allowed_statuses of %s must be HTTP statuses (100-599), got %r" % (where, path, statuses))
        entry = {"path": path, "allowed_statuses": list(statuses)}
        if p.get("pattern") is not None:
            try:
                re.compile(str(p["pattern"]))
            except re.error as exc:
                _fail("%s: pattern of %s is not a regular expression: %s" % (where, path, exc))
            entry["pattern"] = str(p["pattern"])
        out.append(entry)
    return out


def _check(where, check, ports):
    """(enabled, [(port, protocol)], paths) of one onionprobe_checks entry against the service's ports."""
    if check is None:
        check = {}
    if not isinstance(check, dict):
        _fail("%s: onionprobe_checks entries must be dicts with %s" % (where, ", ".join(_CHECK_KEYS)))
    unknown = sorted(set(check) - set(_CHECK_KEYS))
    if unknown:
        _fail("%s: unknown key(s) %s in onionprobe_checks (known: %s)"
              % (where, ", ".join(unknown), ", ".join(_CHECK_KEYS)))
    probe = check.get("probe", True)
    if not isinstance(probe, bool):
        _fail("%s: probe must be true or false" % where)
    protocol = check.get("protocol")
    if protocol is not None and protocol not in ("http", "https"):
        _fail("%s: protocol must be http or https (Onionprobe probes nothing else), got %r" % (where, str(protocol)[:20]))
    if "ports" in check:
        wanted = check["ports"]
        if isinstance(wanted, int):
            wanted = [wanted]
        if not isinstance(wanted, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in wanted):
            _fail("%s: ports must be a list of the service's ports" % where)
        missing = [p for p in wanted if p not in ports]
        if missing:
            _fail("%s: port(s) %s are not ports of the service (it has %s)" % (
                where, ", ".join(map(str, missing)), ", ".join(map(str, ports)) or "none"))
        chosen = [(p, protocol or _WEB_PORTS.get(p, "http")) for p in wanted]
    else:
        chosen = [(p, protocol or _WEB_PORTS[p]) for p in ports if p in _WEB_PORTS]
    return probe, chosen, _paths(where, check.get("paths"))


def _endpoint(address, port, protocol, paths):
    return {"address": address, "protocol": protocol, "port": port, "paths": paths}


_READ = ("onion_services", "onion_service_addresses", "onionprobe_checks", "onionbalance_address",
         "onionbalance_backends", "onionbalance_name", "onionprobe_frontend_checks")


def _from_hostvars(names, hostvars):
    """{host: the variables the role reads of it} for the hosts named that are in hostvars."""
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        _fail("with hostvars, the input must be a list of inventory host names, got %s" % type(names).__name__)
    out = {}
    for host in names:
        if host in hostvars:
            hv = hostvars[host]
            out[host] = dict((key, hv.get(key)) for key in _READ)
    return out


def onionprobe_endpoints(hosts, backup_dir, onionbalance_backup_dir=None, hostvars=None, extra_endpoints=None):
    if hostvars is not None:
        hosts = _from_hostvars(hosts, hostvars)
    if not isinstance(hosts, dict):
        _fail("the input must be a dict of host to its variables")
    if extra_endpoints is not None and not isinstance(extra_endpoints, dict):
        _fail("extra_endpoints must be a dict of endpoint name to Onionprobe's endpoint")
    ob_dir = onionbalance_backup_dir or backup_dir
    endpoints, probed, skipped = {}, [], []

    def add(name, host, service, address, port, protocol, paths, kind):
        endpoints[name] = _endpoint(address, port, protocol, paths)
        probed.append({"name": name, "host": host, "service": service, "address": address, "port": port,
                       "protocol": protocol, "kind": kind})

    for host in hosts:
        hv = hosts[host] or {}
        services = hv.get("onion_services") or []
        checks = hv.get("onionprobe_checks") or {}
        if not isinstance(checks, dict):
            _fail("host %s: onionprobe_checks must be a dict of service name to its check" % host)
        names = [s.get("name") for s in services if isinstance(s, dict)]
        for name in checks:
            if name not in names:
                _fail("host %s: onionprobe_checks names %s, which is not one of its onion_services (%s)" % (
                    host, name, ", ".join(map(str, names)) or "none"))
        facts = hv.get("onion_service_addresses") or {}
        for svc in services:
            if not isinstance(svc, dict) or svc.get("state", "present") != "present":
                continue
            name = svc.get("name")
            where = "host %s, service %s" % (host, name)
            ports = [p for p in (_virtual_port(x) for x in svc.get("ports") or []) if p is not None]
            probe, chosen, paths = _check(where, checks.get(name), ports)
            if not probe:
                skipped.append({"host": host, "service": name, "reason": "onionprobe_checks says probe: false"})
                continue
            if svc.get("clients") or svc.get("authorized_clients"):
                skipped.append({"host": host, "service": name, "reason": (
                    "client authorization: Onionprobe decrypts the descriptor without client keys (stem has no "
                    "descriptor cookie), so it cannot probe this service (1.4.1 stops on it with UnboundLocalError, "
                    "every other probe with it); tor_onion_probe on a host with the key can")})
                continue
            if not chosen:
                skipped.append({"host": host, "service": name, "reason": (
                    "no web port (80 or 443): Onionprobe probes HTTP(S) only; name the port in "
                    "onionprobe_checks.%s.ports" % name)})
                continue
            key = svc.get("key", 1) or 1
            directory = name if key == 1 else "%s.k%s" % (name, key)
            address = _address(facts.get(name)) or _read(escrow.hostname_file(backup_dir, host, directory))
            if not address:
                skipped.append({"host": host, "service": name, "reason": (
                    "address not known yet (run onionlab.tor.onion_service on %s first)" % host)})
                continue
            for port, protocol in chosen:
                add("%s/%s:%d" % (host, name, port), host, name, address, port, protocol, paths, "service")
        # an Onionbalance frontend
        frontend = _address(hv.get("onionbalance_address"))
        fname = hv.get("onionbalance_name") or "frontend"
        if not frontend and hv.get("onionbalance_backends"):
            frontend = _read(os.path.join(ob_dir, "onionbalance", str(fname), "hostname"))
            if not frontend:
                skipped.append({"host": host, "service": fname, "reason": (
                    "Onionbalance frontend address not known yet (run onionlab.tor.onionbalance on %s first)" % host)})
        if frontend:
            where = "host %s, Onionbalance frontend %s" % (host, fname)
            fcheck = dict(hv.get("onionprobe_frontend_checks") or {})
            fports = fcheck.get("ports", [80])
            fports = [fports] if isinstance(fports, int) else fports
            probe, chosen, paths = _check(where, fcheck, fports if isinstance(fports, list) else [])
            if probe:
                for port, protocol in chosen:
                    add("%s/%s:%d" % (host, fname, port), host, fname, frontend, port, protocol, paths, "frontend")
    extra = dict(extra_endpoints or {})
    endpoints.update(extra)
    report = {"probed": [p["name"] for p in probed if p["name"] not in extra] + list(extra), "not probed": skipped}
    return {"endpoints": endpoints, "probed": probed, "skipped": skipped, "report": report}


class FilterModule(object):
    def filters(self):
        return {"onionprobe_endpoints": onionprobe_endpoints}
