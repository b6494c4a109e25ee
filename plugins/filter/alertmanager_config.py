# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Alertmanager's configuration from the prometheus role's variables. The work is plugin_utils/prometheus_settings.py's;
this is its face for the role's template."""

from __future__ import annotations

DOCUMENTATION = r"""
name: alertmanager_config
short_description: Alertmanager's configuration from the prometheus role's variables
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes a mapping of the P(onionlab.tor.prometheus#role) role's variables (their full names) and returns the object
    of C(alertmanager.yml) - one route sending every alert, grouped by C(alertname), C(host), C(onion) and C(name), to
    one receiver, its webhook or email (with SMTP authentication when C(prometheus_alertmanager_email_auth_username) is
    set).
  - The variables are checked first as P(onionlab.tor.prometheus_settings#filter) checks them; a wrong one fails
    with its message.
options:
  _input:
    description: The role's variables, name to value.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Alertmanager's configuration as YAML
  ansible.builtin.debug:
    msg: "{{ prometheus_role_vars | onionlab.tor.alertmanager_config | to_nice_yaml(indent=2, sort_keys=false) }}"
"""

RETURN = r"""
_value:
  description: C(alertmanager.yml)'s object, C({route, receivers}).
  type: dict
"""

from ansible_collections.onionlab.tor.plugins.filter.prometheus_settings import checked
from ansible_collections.onionlab.tor.plugins.plugin_utils import prometheus_settings as model


def alertmanager_config(role_vars):
    """The filter's face of plugin_utils/prometheus_settings.alertmanager_config."""
    return checked(role_vars, model.alertmanager_config, "alertmanager_config")


class FilterModule(object):
    def filters(self):
        return {"alertmanager_config": alertmanager_config}
