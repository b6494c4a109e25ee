# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service key rotation as data: each service of ``onion_services`` becomes the key generations
tor serves (the current one, and the previous one while its overlap lasts). The work is
plugin_utils/onion_services.py's; this is its face for playbooks."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onion_service_generations
short_description: The key generations of onion services that tor serves, for service key rotation
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Takes the O(_input) list of the P(onionlab.tor.onion_service#role) role (C(onion_services)) and returns one
    entry per key generation to apply, each a copy of its service with C(name) set to the generation's directory
    name and these keys added: C(service) (the service's own name), C(key) (the generation) and C(generation)
    (V(current) or V(previous))."
  - A service without C(key), or with C(key=1), has one generation, in the directory C(name).
    With C(key=N) (N of 2 or more) the current generation lives in C(name.kN), a new directory (a new key, so a
    new address); generation N-1 (C(name), or C(name.k<N-1>)) is the previous one.
  - The previous generation is served (state V(present)) while the time is before C(previous_until); from then
    on, or when C(previous_until) is not given, it is V(absent) with C(purge=false); tor stops serving it and its
    key stays on the host and in the escrow. Older generations are not listed (the role's pruning removes them
    from tor, keys kept).
  - A service with C(state=absent) has both generations absent.
  - Each entry of a service's C(ports), in any shape the role takes (a port, C("PORT"), C("PORT:TARGET_PORT"),
    C("PORT:ADDRESS:TARGET_PORT"), C("PORT:unix:/path") or a dict), is given as a dict with C(port) and, where
    the entry names them, C(target_address) and C(target_port) (a port alone goes to the same port on 127.0.0.1,
    as in P(onionlab.tor.tor_hidden_service#module)). An entry of none of these shapes is left as it is (the
    module refuses it, naming the shapes).
  - Fails, naming the service, on a malformed C(name), C(key) or C(previous_until), and when two entries would
    use one directory.
options:
  _input:
    description: The services, as the role's C(onion_services).
    type: list
    elements: dict
    required: true
  now:
    description:
      - The time to compare C(previous_until) with, C(YYYY-MM-DDTHH:MM:SSZ) in UTC. The current time when not given.
    type: str
"""

EXAMPLES = r"""
- name: What tor will serve
  ansible.builtin.debug:
    msg: "{{ onion_services | onionlab.tor.onion_service_generations }}"
  vars:
    onion_services:
      - name: shop
        ports: [{port: 80, target_port: 8080}]
        key: 2
        previous_until: "2027-01-31"
# -> [{name: shop.k2, service: shop, key: 2, generation: current, ...},
#     {name: shop, service: shop, key: 1, generation: previous, state: present, purge: false, ...}]
"""

RETURN = r"""
_value:
  description: One entry per generation, current before previous, services in their order.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.onionlab.tor.plugins.plugin_utils import onion_services as model


def generations(services, now=None):
    """The filter's face of plugin_utils/onion_services.generations."""
    try:
        return model.generations(services, now=now)
    except model.OnionServicesError as exc:
        raise AnsibleFilterError(to_native(exc))


class FilterModule(object):
    def filters(self):
        return {'onion_service_generations': generations}
