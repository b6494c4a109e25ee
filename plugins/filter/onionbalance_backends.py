# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onionbalance role's backends resolved and checked. The work is plugin_utils/onionbalance_backends.py's; this is
its face for the role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onionbalance_backends
short_description: The backends of an Onionbalance frontend, each resolved to its onion address and checked
version_added: 0.2.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Takes the P(onionlab.tor.onionbalance#role) role's C(onionbalance_backends) (each an onion address, an inventory
    host, C({host: HOST, service: SERVICE}) or C({address: ADDRESS})) and returns one entry per backend: C(host),
    C(service), C(escrow_file) (its escrowed C(hostname)), C(name) (its name in Onionbalance's C(config.yaml)) and
    C(address) (without C(.onion)): as given, else the host's C(onion_service_addresses) fact, else its escrowed
    C(hostname) file."
  - Fails with one message naming the backend and the fix when a backend host has no address yet, an address is not
    a v3 onion address (its checksum included), an address is listed twice, there are none or more than
    O(max_backends), or a backend host's service has client authorization or proof of work (Onionbalance 0.2.x
    cannot carry them).
options:
  _input:
    description: The role's C(onionbalance_backends).
    type: list
    elements: raw
    required: true
  backend_service:
    description: The service of a backend given as a host alone (C(onionbalance_backend_service)).
    type: str
  backup_dir:
    description: The escrow (C(onionbalance_backup_dir)).
    type: path
    required: true
  hostvars:
    description: The play's C(hostvars), for each backend host's C(onion_services) and C(onion_service_addresses).
    type: dict
    required: true
  max_backends:
    description: The most backends allowed (C(onionbalance_max_backends)).
    type: int
    default: 8
  frontend:
    description:
      - The frontend's address (an empty string while it is not known yet). Given, it also fails when that address
        is one of the backends, or when a backend host's service does not name this frontend (C(onionbalance_frontend)
        in its C(onion_services) entry), since its tor would run it without C(HiddenServiceOnionbalanceInstance 1)
        and refuse the clients the frontend sends.
    type: str
"""

EXAMPLES = r"""
- name: The backends as addresses
  ansible.builtin.set_fact:
    resolved: "{{ onionbalance_backends | onionlab.tor.onionbalance_backends(backend_service='www',
                  backup_dir=onionbalance_backup_dir, hostvars=hostvars) }}"
"""

RETURN = r"""
_value:
  description: One entry per backend, in the order given.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.onionlab.tor.plugins.plugin_utils import onionbalance_backends as model


def onionbalance_backends(backends, backup_dir, hostvars, backend_service=None, max_backends=8, frontend=None):
    """The filter's face of plugin_utils/onionbalance_backends."""
    try:
        resolved = model.resolve(backends, backend_service, backup_dir, hostvars)
        model.check(resolved, hostvars, int(max_backends))
        return model.check_frontend(resolved, hostvars, frontend) if frontend is not None else resolved
    except model.BackendsError as exc:
        raise AnsibleFilterError(to_native(exc))


class FilterModule(object):
    def filters(self):
        return {"onionbalance_backends": onionbalance_backends}
