# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Onionbalance's configuration from the backends resolved by onionbalance_backends. The work is
plugin_utils/onionbalance_backends.py's; this is its face for the role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onionbalance_config
short_description: Onionbalance's config.yaml and the backends' addresses, from the resolved backends
version_added: 0.2.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Takes the entries of the P(onionlab.tor.onionbalance_backends#filter) filter and returns C(config), the object
    Onionbalance's C(config.yaml) holds (one service: the frontend's O(key_file) and its C(instances), each backend's
    C(address) and C(name)), and C(addresses), each backend's address with C(.onion), in the order given."
  - The P(onionlab.tor.onionbalance#role) role writes C(config) with C(to_nice_yaml) and sets C(addresses) as the
    fact C(onionbalance_backend_addresses).
options:
  _input:
    description: The backends as the P(onionlab.tor.onionbalance_backends#filter) filter returns them.
    type: list
    elements: dict
    required: true
  key_file:
    description: The frontend's key file on the Onionbalance host (C(onionbalance_key_file)).
    type: path
    required: true
seealso:
  - plugin: onionlab.tor.onionbalance_backends
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Onionbalance's configuration
  ansible.builtin.copy:
    content: "{{ (resolved | onionlab.tor.onionbalance_config(key_file='/etc/onionbalance/key')).config | to_nice_yaml }}"
    dest: /etc/onionbalance/config.yaml
    mode: "0640"
"""

RETURN = r"""
_value:
  description: C(config) (Onionbalance's configuration object) and C(addresses) (each backend's, with C(.onion)).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.plugin_utils import onionbalance_backends as model


def onionbalance_config(resolved, key_file):
    """The filter's face of plugin_utils/onionbalance_backends.frontend_config."""
    if not isinstance(resolved, list) or not all(isinstance(e, dict) and "address" in e and "name" in e
                                                 for e in resolved):
        raise AnsibleFilterError("onionbalance_config: the input must be the list the onionbalance_backends filter "
                                 "returns")
    return model.frontend_config(resolved, key_file)


class FilterModule(object):
    def filters(self):
        return {"onionbalance_config": onionbalance_config}
