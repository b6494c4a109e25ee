# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who may reach what: the clients of onion_services (the onion_service role's variable), checked
and flattened for the onion_service role (the server's authorized_clients) and the onion_client
role (the credentials each client host gets). The work is plugin_utils/onion_services.py's; this
is its face for playbooks."""

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
  - With O(host), each credential also has C(client_name) (the name tor gets with the key, null for a removal) and
    C(label) (its id, address and state, as the P(onionlab.tor.onion_client#role) role prints it); its key comes
    from the lookup P(onionlab.tor.onion_client_key#lookup) given the credential.
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
    description:
      - The controller's escrow directory (the role's C(onion_service_backup_dir)).
      - Or a list of them, the first that is set (not null or empty) used, as the
        P(onionlab.tor.onion_client#role) role passes C(onion_client_backup_dir) and C(onion_service_backup_dir);
        none set, C(<playbook_dir>/onion-keys) (O(playbook_dir)).
    type: raw
    required: true
  playbook_dir:
    description: The play's C(playbook_dir), for the escrow directory when O(backup_dir) sets none.
    type: path
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
  previous_addresses:
    description:
      - Server to its C(onion_service_previous_addresses) (service name to the address of the key generation
        before, as set in this run), where a credential of a rotated service is removed.
    type: dict
  hostvars:
    description:
      - The play's C(hostvars). The input is then a list of inventory host names (C(groups['all'])), and each
        host's C(onion_services), C(onion_service_addresses) and C(onion_service_previous_addresses) are read from
        it (O(addresses), O(previous_addresses) and O(inventory) default to them), as the
        P(onionlab.tor.onion_client#role) role passes them.
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

- name: The credentials this host gets, read from every inventory host's variables
  ansible.builtin.debug:
    msg: >-
      {{ groups['all'] | onionlab.tor.onion_clients(hostvars=hostvars, host=inventory_hostname,
                                                     backup_dir=playbook_dir ~ '/onion-keys') }}
# -> [{..., id: web1/admin/alice, address: ....onion, client_name: alice, label: web1/admin/alice ....onion (present)}]

- name: The same, the escrow being the first directory set, else the onion_service role's default
  ansible.builtin.debug:
    msg: >-
      {{ groups['all'] | onionlab.tor.onion_clients(hostvars=hostvars, host=inventory_hostname,
                                                     backup_dir=[onion_client_backup_dir, onion_service_backup_dir],
                                                     playbook_dir=playbook_dir) }}
"""

RETURN = r"""
_value:
  description: The clients (a list of dicts), or with O(private_keys) service name to its C(authorized_clients).
  type: raw
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.onionlab.tor.plugins.plugin_utils import onion_services as model


def _read(hosts, hostvars, name, default):
    return dict((h, hostvars[h].get(name) or default) for h in hosts)


def onion_clients(services_by_server, backup_dir=None, inventory=None, private_keys=None, host=None,
                  addresses=None, previous_addresses=None, pending=False, hostvars=None, playbook_dir=None):
    """The filter's face of plugin_utils/onion_services.clients (with hostvars: the input is the host names; backup_dir
    may be a list, the first set one used: onion_services.escrow_dir)."""
    backup_dir = model.escrow_dir(backup_dir, playbook_dir)
    if hostvars is not None:
        if isinstance(services_by_server, str) or not isinstance(services_by_server, (list, tuple)):
            raise AnsibleFilterError("onion_clients: with hostvars, the input must be a list of inventory host "
                                     "names, got %s" % type(services_by_server).__name__)
        hosts = [h for h in services_by_server if h in hostvars]
        inventory = list(hosts) if inventory is None else inventory
        addresses = _read(hosts, hostvars, "onion_service_addresses", {}) if addresses is None else addresses
        if previous_addresses is None:
            previous_addresses = _read(hosts, hostvars, "onion_service_previous_addresses", {})
        services_by_server = _read(hosts, hostvars, "onion_services", [])
    try:
        return model.clients(services_by_server, backup_dir=backup_dir, inventory=inventory,
                             private_keys=private_keys, host=host, addresses=addresses,
                             previous_addresses=previous_addresses, pending=pending)
    except model.OnionServicesError as exc:
        raise AnsibleFilterError(to_native(exc))


class FilterModule(object):
    def filters(self):
        return {"onion_clients": onion_clients}
