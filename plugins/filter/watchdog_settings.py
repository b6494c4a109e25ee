# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_watchdog role's settings file from its variables, checked in Python (module_utils/_onion_watchdog.py's
settings_from_role): the role declares, this decides."""

from __future__ import annotations

DOCUMENTATION = r"""
name: watchdog_settings
short_description: The onion watchdog's settings from the onion_watchdog role's variables, checked
version_added: 0.3.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes the P(onionlab.tor.onion_watchdog#role) role's variables (a mapping of their names without the
    C(onion_watchdog_) prefix) and returns the object the role writes to C(/etc/onionlab-watchdog.json).
  - Every value is checked here, with one message naming the variable when one is wrong (a whole number below its
    least value, an onion address with a wrong checksum, a layer that does not exist, a backend unit name with
    characters a systemd unit name cannot have).
options:
  _input:
    description: The role's variables without the prefix (C(interval_minutes) is not a setting and is ignored).
    type: dict
    required: true
  metrics_dir:
    description: C(onion_watchdog_metrics_dir), where the metrics textfile is written.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The settings of a watchdog that restarts nginx when the service's backend refuses
  ansible.builtin.debug:
    msg: "{{ {'backend_units': {'127.0.0.1:8080': 'nginx.service'}}
             | onionlab.tor.watchdog_settings('/var/lib/prometheus/node-exporter') }}"
"""

RETURN = r"""
_value:
  description: The settings (JSON object) of the watchdog.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.module_utils import _onion_watchdog as watchdog


def watchdog_settings(role_vars, metrics_dir):
    if not isinstance(role_vars, dict):
        raise AnsibleFilterError("watchdog_settings takes a mapping of the role's variables")
    try:
        return watchdog.settings_from_role(role_vars, metrics_dir)
    except ValueError as e:
        raise AnsibleFilterError("onion_watchdog: %s" % e)


class FilterModule(object):
    def filters(self):
        return {'watchdog_settings': watchdog_settings}
