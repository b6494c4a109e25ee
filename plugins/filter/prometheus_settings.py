# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prometheus role's own variables, checked. The work is plugin_utils/prometheus_settings.py's; this is its face
for the role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: prometheus_settings
short_description: The prometheus role's own variables, checked
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes a mapping of the P(onionlab.tor.prometheus#role) role's variables (their full names) and returns it unchanged
    when each is right; otherwise fails with one message naming every wrong variable, what it must be and what it was.
  - Checked - the listen addresses of Prometheus and Alertmanager (an address and a port), their extra flags
    (C(--name) or C(--name=value), one word, not the role's own C(--config.file), C(--web.listen-address) nor
    Alertmanager's C(--cluster.*)), every duration the role writes (a Prometheus duration, C(15s), C(1h30m)), the
    Alertmanager receiver (V(none), V(webhook) with an http(s) URL, V(email) with addresses and a C(host:port)
    smarthost) and its booleans.
  - That each value stays one word of the services' flags files is the filter P(onionlab.tor.config_values#filter)'s
    check; the scrape targets are P(onionlab.tor.prometheus_targets#filter)'s.
options:
  _input:
    description: The role's variables, name to value.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The role's variables, checked (fails naming prometheus_scrape_interval)
  ansible.builtin.debug:
    msg: "{{ {'prometheus_scrape_interval': '15 s'} | onionlab.tor.prometheus_settings }}"
"""

RETURN = r"""
_value:
  description: The variables, unchanged.
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.onionlab.tor.plugins.plugin_utils import prometheus_settings as model


def checked(role_vars, work, name="prometheus_settings"):
    """work(role_vars) with the role's message for a wrong variable (also the face of alertmanager_config)."""
    if not isinstance(role_vars, dict):
        raise AnsibleFilterError("prometheus: %s takes a mapping of the role's variables" % name)
    try:
        return work(role_vars)
    except model.SettingsError as exc:
        raise AnsibleFilterError("prometheus: %s" % to_native(exc))


def prometheus_settings(role_vars):
    """The filter's face of plugin_utils/prometheus_settings.check."""
    return checked(role_vars, model.check)


class FilterModule(object):
    def filters(self):
        return {"prometheus_settings": prometheus_settings}
