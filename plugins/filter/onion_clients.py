# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who may reach what: the clients of onion_services (the onion_service role's variable), checked
and flattened for the onion_service role (the server's authorized_clients) and the onion_client
role (the credentials each client host gets)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onion_clients
short_description: The clients of onion services (onion_services[].clients), checked and flattened
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes a dict of server (inventory host) to its C(onion_services) list, as the
    P(onionlab.tor.onion_service#role) role takes it, and returns one entry per client of every service that has
    C(clients), in the order given.
  - Each entry has C(server), C(service), C(name), C(key) (the key generation, 1 when not given), C(hosts) (the
    inventory hosts that get the client's private key), C(state) (V(absent) also when the service itself is
    absent), C(public_key) (given, else null), C(id) (C(<server>/<service>/<client>), the key of a vault dict),
    C(escrow) (the private key's file on the controller,
    C(<backup_dir>/<server>/<service>/clients/<client>.<key>.x25519)) and C(needs_key) (present and without
    C(public_key), so that its private key comes from the vault or the escrow).
  - With O(private_keys), returns instead what each service's C(authorized_clients) must be, a dict of service name
    to a list of C({name, public_key}) of its present clients (the public key given, or derived from the private
    key of O(private_keys)).
  - Fails with one message naming the server, service and client, never a key, on a malformed entry, that is a client name
    that is not 1 to 16 letters, digits, C(-), C(_) or C(.); a name given twice in a service; a key generation that
    is not a whole number of 1 or more; C(hosts) that is not a list of inventory host names; a malformed
    C(public_key), or one given together with C(hosts) or C(key); a service with both C(clients) and
    C(authorized_clients); a present service whose clients are all absent (that would make it public); an
    unknown key (a typo); a missing private key.
options:
  _input:
    description: Server (inventory host name) to its list of services.
    type: dict
    required: true
  backup_dir:
    description: The controller's escrow directory (the role's C(onion_service_backup_dir)).
    type: path
    required: true
  inventory:
    description: The inventory's host names (C(groups['all'])); when given, every name in C(hosts) must be one.
    type: list
    elements: str
  private_keys:
    description: C(id) to the client's private key, for every present client without C(public_key).
    type: dict
  host:
    description:
      - Only the clients whose C(hosts) name this inventory host (the credentials it gets or loses), each with
        C(address), the service's onion address (with C(.onion)), from O(addresses), else from the file
        C(<backup_dir>/<server>/<service>/hostname) that the P(onionlab.tor.onion_service#role) role writes.
        Fails, naming the service and the file, when neither has it.
    type: str
  addresses:
    description: Server to its C(onion_service_addresses) (service name to address), as set in this run.
    type: dict
  pending:
    description:
      - With O(host), a credential whose service's address is not known yet is returned with C(address) null
        instead of failing. The P(onionlab.tor.onion_client#role) role sets it in check mode, where a service that
        a real run would create on the server has no address yet.
    type: bool
    default: false
seealso:
  - plugin: onionlab.tor.onion_client_key
    plugin_type: lookup
  - plugin: onionlab.tor.x25519_public_key
    plugin_type: filter
  - ref: ansible_collections.onionlab.tor.docsite.guide_client_rotation
    description: Clients and key rotation.
"""

EXAMPLES = r"""
- name: Every client of web1's services
  ansible.builtin.debug:
    msg: "{{ {'web1': onion_services} | onionlab.tor.onion_clients(backup_dir=playbook_dir ~ '/onion-keys') }}"
  vars:
    onion_services:
      - name: admin
        ports: [{port: 80, target_port: 8080}]
        clients:
          - {name: alice, hosts: [laptop-a], key: 2}
          - {name: carol, public_key: N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ}
# -> [{server: web1, service: admin, name: alice, key: 2, hosts: [laptop-a], state: present, public_key: null,
#      id: web1/admin/alice, escrow: .../onion-keys/web1/admin/clients/alice.2.x25519, needs_key: true},
#     {server: web1, service: admin, name: carol, key: 1, hosts: [], state: present, public_key: N2NU..., ...}]
"""

RETURN = r"""
_value:
  description: The clients (a list of dicts), or with O(private_keys) service name to its C(authorized_clients).
  type: raw
"""

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.onion_service_generations import generations
from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow
from ansible_collections.onionlab.tor.plugins.plugin_utils.escrow import name_problem

CLIENT_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,16}\Z")
# a service name is a directory name on the server and in the escrow
SERVICE_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\Z")
CLIENT_KEYS = frozenset(("name", "hosts", "key", "state", "public_key"))


def _fail(where, message):
    raise AnsibleFilterError("onion_clients: %s: %s" % (where, message))


def _key_generation(value, where):
    if isinstance(value, bool):
        _fail(where, "key must be a whole number of 1 or more (the key generation)")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or value < 1:
        _fail(where, "key must be a whole number of 1 or more (the key generation)")
    return value


def _public_key(value, where):
    if not isinstance(value, str):
        _fail(where, "public_key must be a string (52 base32 characters)")
    try:
        return onion.check_client_public_key(value)
    except (TorError, ValueError):
        _fail(where, "public_key is not an x25519 public key (52 base32 characters, optionally after "
                     "descriptor:x25519:)")


def _public_of(private_key, where):
    if not isinstance(private_key, str):
        _fail(where, "its private key (from the vault or the escrow) is not a string")
    try:
        raw = client_auth.parse_private_key(private_key, what="the private key")
    except (TorError, ValueError):
        _fail(where, "its private key (from the vault or the escrow) is not an x25519 private key "
                     "(52 base32 characters)")
    return onion.b32(onion.x25519_public(raw))


def _clients_of(server, service, index, backup_dir, inventory):
    where = "%s: onion_services[%d]" % (server, index)
    if not isinstance(service, dict):
        _fail(where, "each service must be a dict")
    if "clients" not in service or service["clients"] is None:
        return []
    if name_problem(server, "inventory host name"):
        _fail(where, name_problem(server, "inventory host name"))
    name = service.get("name")
    if not isinstance(name, str) or not SERVICE_NAME_RE.match(name):
        _fail(where, "a service with clients needs a name of letters, digits, '-', '_' and '.' "
                     "(not starting with '.' or '-'), at most 64")
    where = "%s: service %s" % (server, name)
    if service.get("authorized_clients") is not None:
        _fail(where, "clients and authorized_clients are mutually exclusive; use clients")
    clients = service["clients"]
    if not isinstance(clients, list):
        _fail(where, "clients must be a list")
    service_absent = service.get("state", "present") == "absent"
    # the service's key generations (service key rotation): the directory each lives in, and whether
    # tor serves it; a client gets a credential for each address served, and loses the old one after
    served = [(g["name"], g["generation"], g.get("state", "present"))
              for g in generations([dict((k, v) for k, v in service.items() if k != "clients")])]
    out, seen = [], set()
    for number, client in enumerate(clients):
        cwhere = "%s: clients[%d]" % (where, number)
        if not isinstance(client, dict):
            _fail(cwhere, "each client must be a dict")
        cname = client.get("name")
        if not isinstance(cname, str) or not CLIENT_NAME_RE.match(cname) or cname in (".", ".."):
            _fail(cwhere, "name must be 1 to 16 letters, digits, '-', '_' or '.'")
        cwhere = "%s: client %s" % (where, cname)
        unknown = sorted(str(k) for k in client if k not in CLIENT_KEYS)
        if unknown:
            _fail(cwhere, "unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(CLIENT_KEYS))))
        if cname in seen:
            _fail(cwhere, "the name is given twice")
        seen.add(cname)
        state = client.get("state", "present")
        if state not in ("present", "absent"):
            _fail(cwhere, "state must be present or absent")
        hosts = client.get("hosts", [])
        if hosts is None:
            hosts = []
        if not isinstance(hosts, list) or not all(isinstance(h, str) and h.strip() for h in hosts):
            _fail(cwhere, "hosts must be a list of inventory host names")
        if inventory is not None:
            missing = [h for h in hosts if h not in inventory]
            if missing:
                _fail(cwhere, "hosts not in the inventory: %s" % ", ".join(missing))
        public_key = None
        if client.get("public_key") is not None:
            public_key = _public_key(client["public_key"], cwhere)
            if hosts:
                _fail(cwhere, "public_key and hosts are mutually exclusive (a client with its own key pair "
                              "gets no key from the controller)")
            if client.get("key") is not None:
                _fail(cwhere, "public_key and key are mutually exclusive (key generations are for keys the "
                              "controller makes)")
        key = _key_generation(client["key"] if client.get("key") is not None else 1, cwhere)
        if service_absent:
            state = "absent"
        out.append({
            "server": server, "service": name, "name": cname, "key": key, "hosts": list(hosts),
            "generations": served,
            "state": state, "public_key": public_key,
            "id": "%s/%s/%s" % (server, name, cname),
            "escrow": escrow.client_key_file(backup_dir, server, name, cname, key),
            "needs_key": state == "present" and public_key is None,
        })
    if not service_absent and clients and not any(c["state"] == "present" for c in out):
        _fail(where, "every client is absent, which would make the service public; keep one client present, "
                     "or remove clients from the service to make it public")
    return out


def _read_address(entry, backup_dir, directory=None):
    return escrow.read_hostname(backup_dir, entry["server"], directory or entry["service"])


def _per_generation(entry, backup_dir, addresses, previous, pending=False):
    """The credentials of one client entry: one per address of the service that tor serves (the
    current key generation, and the previous one during a rotation's overlap), and the removal of
    the previous generation's once its overlap is over (when its address is known)."""
    out = []
    for directory, generation, state in entry.get("generations") or [(entry["service"], "current", "present")]:
        if generation == "current":
            out.append(_with_address(entry, backup_dir, addresses, directory, pending))
            continue
        address = (previous.get(entry["server"]) or {}).get(entry["service"]) if state == "present" else None
        if not address:
            address = _read_address(entry, backup_dir, directory)[0]
        if not address:
            if state == "present" and entry["state"] == "present":
                _fail("%s: service %s: client %s" % (entry["server"], entry["service"], entry["name"]),
                      "the address of the previous key generation (%s) is not known" % directory)
            continue
        old = dict(entry, state=entry["state"] if state == "present" else "absent")
        out.append(_with_address(old, backup_dir, {old["server"]: {old["service"]: address}}, directory))
    for item in out:
        item.pop("generations", None)
    return out


def _with_address(entry, backup_dir, addresses, directory=None, pending=False):
    where = "%s: service %s: client %s" % (entry["server"], entry["service"], entry["name"])
    address = (addresses.get(entry["server"]) or {}).get(entry["service"])
    origin = "onion_service_addresses of %s" % entry["server"]
    if not address:
        address, origin = _read_address(entry, backup_dir, directory)
    if not address and pending:
        entry = dict(entry)
        entry["address"] = None
        return entry
    if not address:
        _fail(where, "the service's address is not known: %s sets no onion_service_addresses in this play and "
                     "the escrow has no %s (run the onion_service role on %s first)"
                     % (entry["server"], origin, entry["server"]))
    address = str(address).strip().lower()
    try:
        onion.parse_onion_address(address if address.endswith(".onion") else address + ".onion")
    except (TorError, ValueError):
        _fail(where, "the service's address from %s is not a v3 onion address" % origin)
    entry = dict(entry)
    entry["address"] = address if address.endswith(".onion") else address + ".onion"
    return entry


def onion_clients(services_by_server, backup_dir=None, inventory=None, private_keys=None, host=None,
                  addresses=None, previous_addresses=None, pending=False):
    if not isinstance(services_by_server, dict):
        raise AnsibleFilterError("onion_clients: the input must be a dict of server to its onion_services list")
    if not isinstance(backup_dir, str) or not backup_dir:
        raise AnsibleFilterError("onion_clients: backup_dir (the controller's escrow directory) is required")
    if inventory is not None:
        inventory = set(inventory)
    out = []
    for server, services in services_by_server.items():
        if services is None:
            continue
        if not isinstance(services, list):
            raise AnsibleFilterError("onion_clients: %s: onion_services must be a list" % server)
        for index, service in enumerate(services):
            out.extend(_clients_of(str(server), service, index, backup_dir, inventory))
    if host is not None:
        if not isinstance(addresses or {}, dict):
            raise AnsibleFilterError("onion_clients: addresses must be a dict of server to its onion_service_addresses")
        if not isinstance(previous_addresses or {}, dict):
            raise AnsibleFilterError("onion_clients: previous_addresses must be a dict of server to its "
                                     "onion_service_previous_addresses")
        return [c for e in out if host in e["hosts"]
                for c in _per_generation(e, backup_dir, addresses or {}, previous_addresses or {}, bool(pending))]
    if private_keys is None:
        return out
    if not isinstance(private_keys, dict):
        raise AnsibleFilterError("onion_clients: private_keys must be a dict of client id to private key")
    authorized = {}
    for entry in out:
        if entry["state"] != "present":
            authorized.setdefault(entry["service"], [])
            continue
        public_key = entry["public_key"]
        if public_key is None:
            where = "%s: service %s: client %s" % (entry["server"], entry["service"], entry["name"])
            if entry["id"] not in private_keys:
                _fail(where, "no private key (neither in the vault nor in the escrow)")
            public_key = _public_of(private_keys[entry["id"]], where)
        authorized.setdefault(entry["service"], []).append({"name": entry["name"], "public_key": public_key})
    return authorized


class FilterModule(object):
    def filters(self):
        return {"onion_clients": onion_clients}
