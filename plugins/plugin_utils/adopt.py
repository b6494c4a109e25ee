# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Adopting a host's own onion services (issue 40, 2), the controller's decisions: the services a tor runs
(tor_hidden_service_info's hidden_services) made into the onion_service role's entries, exactly as tor runs them;
keys brought from elsewhere (a vanity generator's directory, an ED25519-V3 blob) verified into entries of their
own; the host_vars file that declares them. Reads and writes nothing: plugins/action/onion_adopt.py does.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils.onion_services import (
    CLIENT_NAME_RE,
    GENERATION_SUFFIX_RE,
    NAME_RE,
)

HOST_VARS_HEADER = ("# Written by ansible-playbook onionlab.tor.adopt: the onion services this host ran before the\n"
                    "# collection managed them, as tor ran them (names are their directories). Keys are in the\n"
                    "# escrow, never here. Edit freely: the onion_service role applies what this file says.\n")
SINGLE = [o[1] for o in hs.OPTIONS if "." not in o[1]] + ["extra_options", "onionbalance_frontend"]
VANITY_FILES = ("hs_ed25519_secret_key", "hs_ed25519_public_key", "hostname")


class AdoptError(Exception):
    """Nothing can be adopted as asked; the message names the service and the fix."""


def _ports(ports):
    return [dict((k, v) for k, v in p.items() if v is not None) for p in ports or []]


def _options(service):
    """The service's options that differ from a service of the same ports with every default; pow stated even when
    off (the role turns it on where a service says nothing)."""
    base = hs.normalize_service({"path": service["path"], "ports": _ports(service["ports"])})
    options = {}
    for key in SINGLE:
        if service.get(key) not in (None, base.get(key)) and service.get(key) != {}:
            options[key] = service[key]
    for group, members in sorted(hs.GROUPS.items()):
        have = service.get(group) or {}
        changed = dict((m, have[m]) for m in members if have.get(m) is not None and have[m] != base[group][m])
        if changed:
            options[group] = changed
    if not (service.get("pow") or {}).get("enabled"):
        options.setdefault("pow", {})["enabled"] = False
    return options


def _clients(service, where):
    clients = service.get("authorized_clients")
    if clients is None:
        raise AdoptError("%s: its authorized_clients directory cannot be read, so its clients are not known; make it "
                         "readable to the run's user (become: true) and run again" % where)
    for client in clients:
        if not CLIENT_NAME_RE.match(client["name"]):
            raise AdoptError("%s: the client file %s.auth has a name the onion_service role cannot keep (1-16 letters, "
                             "digits, '-', '_' or '.'); rename the file (the name is only a label: the client keeps "
                             "its key) and run again" % (where, client["name"]))
    return [{"name": c["name"], "public_key": c["public_key"]} for c in sorted(clients, key=lambda c: c["name"])]


def entries(host, running):
    """(service_dir, [the role's entries], [(what, why) of services left out]) of the persistent services a tor runs
    (tor_hidden_service_info's hidden_services). Every service must live in one directory (the role's
    onion_service_dir) under a name the role keeps; an AdoptError names each that cannot, before anything is done."""
    persistent = [s for s in running if s.get("type") == "persistent"]
    left_out = [(s.get("onion_address") or s.get("service_id") or "?",
                 "ephemeral (ADD_ONION): its key is in tor's memory only; give it to tor_hidden_service with keep_key")
                for s in running if s.get("type") != "persistent"]
    parents = sorted(set(os.path.dirname(s["path"]) for s in persistent))
    if len(parents) > 1:
        raise AdoptError("%s: the onion services live in %d directories (%s); the onion_service role keeps every "
                         "service of a host in one (onion_service_dir). Move the services into one directory (stop "
                         "tor, move, change torrc, start tor: the keys move with them) and run again"
                         % (host, len(parents), ", ".join(parents)))
    out = []
    for service in persistent:
        name = os.path.basename(service["path"])
        where = "%s: the service %s" % (host, service["path"])
        if not NAME_RE.match(name) or GENERATION_SUFFIX_RE.search(name):
            raise AdoptError("%s: its directory's name is not one the onion_service role keeps (1-128 letters, digits, "
                             "'-', '_' or '.', not ending in .k<N>); rename the directory (stop tor, rename, change "
                             "torrc, start tor) and run again" % where)
        if not service.get("onion_address"):
            raise AdoptError("%s: its address cannot be read (no key or hostname in the directory, or not readable "
                             "to the run's user: become: true)" % where)
        entry = {"name": name, "ports": _ports(service["ports"])}
        clients = _clients(service, where)
        if clients:
            entry["clients"] = clients
        entry["options"] = _options(service)
        out.append(entry)
    return (parents[0] if parents else None), out, left_out


def imported(item, read_file):
    """(the 64-byte expanded key, its address, the role's entry) of one key brought from elsewhere: item has name,
    ports and either key_dir (a directory as mkp224o and Onionmine write: hs_ed25519_secret_key,
    hs_ed25519_public_key, hostname; read with read_file(path) -> bytes or None when absent) or private_key (an
    ED25519-V3 blob) with hostname. Verified first (onion.import_key): a key that does not give the hostname's
    address, or a public key that is not its own, is an AdoptError naming what disagrees, never the key."""
    name = item["name"]
    if not NAME_RE.match(name) or GENERATION_SUFFIX_RE.search(name):
        raise AdoptError("import %s: not a service name the onion_service role keeps" % name)
    try:
        if item.get("key_dir"):
            found = dict((f, read_file(os.path.join(item["key_dir"], f))) for f in VANITY_FILES)
            if found["hs_ed25519_secret_key"] is None or found["hostname"] is None:
                raise AdoptError("import %s: %s must hold hs_ed25519_secret_key and hostname (as a vanity generator "
                                 "writes them)" % (name, item["key_dir"]))
            expanded, address = onion.import_key(secret=found["hs_ed25519_secret_key"],
                                                 public=found["hs_ed25519_public_key"], hostname=found["hostname"])
        else:
            if not item.get("hostname"):
                raise AdoptError("import %s: a private_key needs its hostname (the address it must give)" % name)
            expanded, address = onion.import_key(blob=item["private_key"], hostname=item["hostname"])
    except onion.OnionKeyError as exc:
        raise AdoptError("import %s: %s; nothing was written" % (name, exc))
    entry = {"name": name, "ports": list(item["ports"])}
    return expanded, address, entry


def host_vars_text(service_dir, entries_, default_dir, dump):
    """The host_vars file declaring the adopted services (dump: a YAML dumper of plain data)."""
    data = {"onion_services": entries_}
    if service_dir and service_dir != default_dir:
        data["onion_service_dir"] = service_dir
    return HOST_VARS_HEADER + dump(data)
