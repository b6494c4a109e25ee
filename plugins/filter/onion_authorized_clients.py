# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""onion_services[].authorized_clients entries without a public key: their private keys live in the
controller's escrow (made there by the onion_client_key lookup), so that the module never generates,
returns or prints one."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onion_authorized_clients
short_description: Public keys for onion_services[].authorized_clients entries given without one, from the escrow
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes the O(_input) list of the P(onionlab.tor.onion_service#role) role (C(onion_services)) and looks at the
    C(authorized_clients) of each present service. An entry without C(public_key) gets a key pair kept on the
    controller, like a C(clients) entry, in C(<backup_dir>/<server>/<service>/clients/<client>.1.x25519).
  - Without O(private_keys), returns one dict per such entry, C(service), C(name), C(id)
    (C(<server>/<service>/<client>), the key of O(private_keys) and of the role's C(onion_service_client_keys)) and
    C(escrow) (the file), for the P(onionlab.tor.onion_client_key#lookup) lookup to read or make.
  - With O(private_keys), returns service name to its C(authorized_clients), every entry with its C(public_key)
    (given, or the public half of its private key).
  - Fails with one message naming the server, service and client, never a key, on a malformed entry (not a dict, a
    name that is not 1 to 16 letters, digits, C(-), C(_) or C(.), a name given twice, a malformed C(public_key)) or a
    missing private key.
options:
  _input:
    description: The services, as the role's C(onion_services).
    type: list
    elements: dict
    required: true
  server:
    description: The inventory host the services run on.
    type: str
    required: true
  backup_dir:
    description: The controller's escrow directory (the role's C(onion_service_backup_dir)).
    type: path
    required: true
  private_keys:
    description: C(id) to the client's private key, for every entry without C(public_key).
    type: dict
seealso:
  - plugin: onionlab.tor.onion_client_key
    plugin_type: lookup
  - plugin: onionlab.tor.onion_clients
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Which authorized_clients entries need a key from the escrow
  ansible.builtin.debug:
    msg: "{{ onion_services | onionlab.tor.onion_authorized_clients(server='web1', backup_dir='/keys') }}"
  vars:
    onion_services:
      - name: admin
        ports: [{port: 80}]
        authorized_clients: [{name: alice}]
# -> [{service: admin, name: alice, id: web1/admin/alice, escrow: /keys/web1/admin/clients/alice.1.x25519}]
"""

RETURN = r"""
_value:
  description: The entries needing a key (a list of dicts), or with O(private_keys) service name to its
    C(authorized_clients).
  type: raw
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.onion_clients import CLIENT_NAME_RE, SERVICE_NAME_RE
from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow


def _fail(where, message):
    raise AnsibleFilterError("onion_authorized_clients: %s: %s" % (where, message))


def _entries(services, server, backup_dir):
    """Every authorized_clients entry of a present service: its service, the entry (public_key checked, or
    None), where it is (for messages), its id and its escrow file."""
    if services is None:
        return
    if not isinstance(services, list):
        raise AnsibleFilterError("onion_authorized_clients: onion_services must be a list")
    for index, service in enumerate(services):
        if not isinstance(service, dict) or service.get("authorized_clients") is None:
            continue
        if service.get("state", "present") != "present":
            continue
        name = service.get("name")
        where = "%s: onion_services[%d]" % (server, index)
        if not isinstance(name, str) or not SERVICE_NAME_RE.match(name):
            _fail(where, "a service with authorized_clients needs a name of letters, digits, '-', '_' and '.' "
                         "(not starting with '.' or '-'), at most 64")
        where = "%s: service %s" % (server, name)
        clients = service["authorized_clients"]
        if not isinstance(clients, list):
            _fail(where, "authorized_clients must be a list")
        seen = set()
        for number, client in enumerate(clients):
            cwhere = "%s: authorized_clients[%d]" % (where, number)
            if not isinstance(client, dict):
                _fail(cwhere, "each entry must be a dict with name and public_key")
            cname = client.get("name")
            if not isinstance(cname, str) or not CLIENT_NAME_RE.match(cname) or cname in (".", ".."):
                _fail(cwhere, "name must be 1 to 16 letters, digits, '-', '_' or '.'")
            cwhere = "%s: client %s" % (where, cname)
            if cname in seen:
                _fail(cwhere, "the name is given twice")
            seen.add(cname)
            public_key = client.get("public_key")
            if public_key not in (None, ""):
                if not isinstance(public_key, str):
                    _fail(cwhere, "public_key must be a string (52 base32 characters)")
                try:
                    public_key = onion.check_client_public_key(public_key)
                except (TorError, ValueError):
                    _fail(cwhere, "public_key is not an x25519 public key (52 base32 characters, optionally after "
                                  "descriptor:x25519:)")
            else:
                public_key = None
            yield {"service": name, "client": dict(client, public_key=public_key), "where": cwhere,
                   "id": "%s/%s/%s" % (server, name, cname),
                   "escrow": escrow.client_key_file(backup_dir, server, name, cname)}


def onion_authorized_clients(services, server=None, backup_dir=None, private_keys=None):
    if not isinstance(server, str) or not server:
        raise AnsibleFilterError("onion_authorized_clients: server (the inventory host) is required")
    if not isinstance(backup_dir, str) or not backup_dir:
        raise AnsibleFilterError("onion_authorized_clients: backup_dir (the controller's escrow directory) is required")
    entries = list(_entries(services, server, backup_dir))
    if private_keys is None:
        return [{"service": e["service"], "name": e["client"]["name"], "id": e["id"], "escrow": e["escrow"]}
                for e in entries if e["client"]["public_key"] is None]
    if not isinstance(private_keys, dict):
        raise AnsibleFilterError("onion_authorized_clients: private_keys must be a dict of client id to private key")
    out = {}
    for entry in entries:
        client = entry["client"]
        if client["public_key"] is None:
            if entry["id"] not in private_keys:
                _fail(entry["where"], "no private key (neither in the vault nor in the escrow)")
            secret = private_keys[entry["id"]]
            try:
                raw = client_auth.parse_private_key(secret if isinstance(secret, str) else "", what="the private key")
            except (TorError, ValueError):
                _fail(entry["where"], "its private key (from the vault or the escrow) is not an x25519 private key "
                                      "(52 base32 characters)")
            client = dict(client, public_key=onion.b32(onion.x25519_public(raw)))
        out.setdefault(entry["service"], []).append(client)
    return out


class FilterModule(object):
    def filters(self):
        return {"onion_authorized_clients": onion_authorized_clients}
