# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onionbalance role's backends (issue 41: roles declare, Python decides): each entry of onionbalance_backends
(an onion address, an inventory host, {host, service} or {address}) resolved to its address (the host's
onion_service_addresses fact, else its escrowed hostname file), and every rule of the list checked with one message
each: an address for every backend, a v3 address with its checksum, none twice, at most max_backends, and no backend
service with client authorization or proof of work (Onionbalance cannot carry them). The filter
onionbalance_backends is its face.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow as escrows


class BackendsError(ValueError):
    """The backend list cannot be used; the message names the backend and the fix."""


def _is_address(text):
    try:
        onion.parse_onion_address(text if text.endswith(".onion") else text + ".onion")
        return True
    except onion.OnionKeyError:
        return False


def _bare(address):
    address = (address or "").strip()
    return address[:-len(".onion")] if address.endswith(".onion") else address


def _service_entry(hostvars, host, service):
    for entry in (hostvars.get(host) or {}).get("onion_services") or []:
        if isinstance(entry, dict) and entry.get("name") == service:
            return entry
    return {}


def resolve(backends, backend_service, backup_dir, hostvars):
    """[{host, service, escrow_file, name, address}] in the order given (address without .onion; '' when none is
    known yet)."""
    out = []
    for item in backends or []:
        if isinstance(item, dict):
            raw = dict(item)
        elif onion.SERVICE_ID_RE.match(str(item)[:-len(".onion")] if str(item).endswith(".onion") else str(item)):
            raw = {"address": str(item)}   # the shape of an address; its checksum is check()'s
        else:
            raw = {"host": str(item)}
        host = raw.get("host")
        service = raw.get("service") or backend_service if host is not None else None
        entry = {"host": host, "service": service, "escrow_file": None,
                 "name": "%s-%s" % (host, service) if host is not None else "backend%d" % (len(out) + 1),
                 "address": _bare(raw.get("address"))}
        if host is not None:
            entry["escrow_file"] = escrows.hostname_file(backup_dir, host, service or "")
            if not entry["address"] and service:
                fact = ((hostvars.get(host) or {}).get("onion_service_addresses") or {}).get(service)
                entry["address"] = _bare(fact) if fact else _bare(_escrowed(backup_dir, host, service))
        out.append(entry)
    return out


def _escrowed(backup_dir, host, service):
    try:
        return escrows.read_hostname(backup_dir, host, service)[0]
    except (escrows.EscrowError, OSError):
        return None


def check(resolved, hostvars, max_backends):
    """A BackendsError with the first problem of the resolved list, in the order the role always checked them."""
    for b in resolved:
        if b["host"] is not None and not b["address"]:
            raise BackendsError(
                "onionbalance: backend host %s has no address for service %s: %s" % (
                    b["host"], b["service"] or "?",
                    "set onionbalance_backend_service (or service: in the backend entry) to the name of its "
                    "onion_services entry" if not b["service"] else
                    "run onionlab.tor.onion_service on that host in this play, or keep its escrowed %s"
                    % b["escrow_file"]))
    for b in resolved:
        if not _is_address(b["address"]):
            raise BackendsError("onionbalance: backend %s is not a v3 onion address (56 base32 characters, optionally "
                                ".onion, and its checksum)" % b["address"])
    addresses = []
    for b in resolved:
        if b["address"] not in addresses:
            addresses.append(b["address"])
    if not addresses:
        raise BackendsError("onionbalance: onionbalance_backends is empty; list the backends (onion addresses, or "
                            "inventory hosts that run onionlab.tor.onion_service)")
    if len(addresses) != len(resolved):
        raise BackendsError("onionbalance: a backend address is listed twice in onionbalance_backends (as an address "
                            "or through its host): %s" % ", ".join(b["address"] for b in resolved))
    if len(addresses) > max_backends:
        raise BackendsError("onionbalance: %d backends, more than %d (onionbalance_max_backends): Onionbalance copies "
                            "2 introduction points of each backend into one frontend descriptor, and tor caps a "
                            "descriptor at 20 introduction points and 50000 bytes; split the backends over several "
                            "frontend addresses" % (len(addresses), max_backends))
    for b in resolved:
        if b["host"] is None or b["host"] not in hostvars:
            continue
        svc = _service_entry(hostvars, b["host"], b["service"])
        clients = bool(svc.get("clients") or svc.get("authorized_clients"))
        pow_on = bool(((svc.get("options") or {}).get("pow") or {}).get("enabled"))
        if clients or pow_on:
            raise BackendsError(
                "onionbalance: %s's service %s has %s; Onionbalance 0.2.x reads each backend's descriptor with the "
                "address alone and publishes the frontend descriptor without client authorization or pow-params, so "
                "%s" % (b["host"], b["service"],
                        "client authorization (clients/authorized_clients)" if clients else
                        "proof of work turned on (options.pow.enabled)",
                        "the frontend could never list this backend: remove its clients" if clients else
                        "clients of the frontend address never solve a puzzle: set options.pow.enabled: false on it"))
    return resolved


def check_frontend(resolved, hostvars, frontend):
    """A BackendsError when the frontend's address (frontend, with or without .onion; None: not known yet) is one of
    its backends, or a backend host's service does not name this frontend (onionbalance_frontend in its
    onion_services entry): its tor would run it without HiddenServiceOnionbalanceInstance 1 and refuse every client
    the frontend sends."""
    here = _bare(frontend)
    if here and here in [b["address"] for b in resolved]:
        raise BackendsError("onionbalance: the frontend address %s is also listed as a backend; a backend needs its "
                            "own key (onionlab.tor.onion_service makes one) and names the frontend in its ob_config"
                            % frontend)
    for b in resolved:
        if b["host"] is None or b["host"] not in hostvars:
            continue
        svc = _service_entry(hostvars, b["host"], b["service"])
        if "name" not in svc:
            continue
        names = _bare(svc.get("onionbalance_frontend"))
        if names and (not here or names == here):
            continue
        raise BackendsError(
            "onionbalance: backend host %s's service %s %s in its onion_services entry, so its tor runs it without "
            "HiddenServiceOnionbalanceInstance 1 and an ob_config naming %s, and refuses every client that the frontend "
            "address sends to it. Fix: set onionbalance_frontend: %s on the entry %s of onion_services for %s, and run "
            "onionlab.tor.onion_service there before this role" % (
                b["host"], b["service"],
                "has no onionbalance_frontend" if not names else "names another frontend, %s.onion," % names,
                here + ".onion" if here else "this frontend", here + ".onion" if here else "this frontend's address",
                b["service"], b["host"]))
    return resolved


def frontend_config(resolved, key_file):
    """Onionbalance's config.yaml object (the frontend key file and each backend's address and name) and the
    backends' addresses with .onion (the role's onionbalance_backend_addresses fact), from resolve()'s entries."""
    return {"config": {"services": [{"key": str(key_file),
                                     "instances": [{"address": e["address"], "name": e["name"]} for e in resolved]}]},
            "addresses": [e["address"] + ".onion" for e in resolved]}
