# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Onionprobe's configuration object from the onionprobe role's variables and endpoints. The work is
plugin_utils/onionprobe_settings.py's; this is its face for the role's template."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onionprobe_config
short_description: Onionprobe's configuration from the onionprobe role's variables and its endpoints
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes a mapping of the P(onionlab.tor.onionprobe#role) role's variables (their full names, checked first by
    P(onionlab.tor.onionprobe_settings#filter)) and returns the object the role writes into Onionprobe's
    configuration file - C(launch_tor) false (Onionprobe uses this host's tor and never starts its own), tor's
    address, ControlPort and SocksPort, the exporter's port, the probing pace and timeouts, C(control_password) only
    when one is set, and O(endpoints).
options:
  _input:
    description: The role's variables, name to value.
    type: dict
    required: true
  endpoints:
    description: Onionprobe's endpoints (P(onionlab.tor.onionprobe_endpoints#filter)'s C(endpoints)).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Onionprobe's configuration file
  ansible.builtin.copy:
    content: "{{ onionprobe_role_vars | onionlab.tor.onionprobe_config(plan.endpoints) | to_nice_yaml(indent=2) }}"
    dest: /etc/onionprobe/onionlab.yaml
    mode: "0640"
  no_log: true
"""

RETURN = r"""
_value:
  description: The configuration object; it holds C(control_password) when one is set (keep its task C(no_log)).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.plugin_utils import onionprobe_settings as _settings


def onionprobe_config(variables, endpoints):
    if not isinstance(variables, dict) or not isinstance(endpoints, dict):
        raise AnsibleFilterError('onionprobe_config: the input must be a mapping of the role\'s variables and '
                                 'endpoints a mapping, got %s and %s'
                                 % (type(variables).__name__, type(endpoints).__name__))
    return _settings.config(variables, endpoints)


class FilterModule(object):
    def filters(self):
        return {'onionprobe_config': onionprobe_config}
