# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prometheus role's own variables, checked, and what the role writes from them. The work is
plugin_utils/prometheus_settings.py's; this is its face for the role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: prometheus_settings
short_description: The prometheus role's own variables, checked, and what the role writes from them
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes a mapping of the P(onionlab.tor.prometheus#role) role's variables (their full names) and, when each is
    right, returns what the role writes from them that is not written as given (see RV(_value)); otherwise fails
    with one message naming every wrong variable, what it must be and what it was.
  - Checked - the listen addresses of Prometheus and Alertmanager (an address and a port), their extra flags
    (C(--name) or C(--name=value), one word, not the role's own C(--config.file), C(--web.listen-address) nor
    Alertmanager's C(--cluster.*)), every duration the role writes (a Prometheus duration, C(15s), C(1h30m)), the
    Alertmanager receiver (V(none), V(webhook) with an http(s) URL, V(email) with addresses and a C(host:port)
    smarthost) and its booleans, C(prometheus_manage_service), the alert rules' whole numbers
    (C(prometheus_alert_certificate_expiry_days), C(prometheus_alert_watchdog_stale_seconds)), the paths of the
    files the role writes, and C(prometheus_alertmanager_targets) (null, or a list of C(host:port)).
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

- name: Where Prometheus sends its alerts (the role's variables as one mapping, as the role passes them)
  ansible.builtin.debug:
    msg: "{{ (prometheus_role_vars | onionlab.tor.prometheus_settings).alertmanager_targets }}"
"""

RETURN = r"""
_value:
  description: What the role writes from the variables; no secret (not the SMTP password).
  type: dict
  contains:
    alertmanager_targets:
      description:
        - The Alertmanagers Prometheus sends its alerts to (C(alerting) of C(prometheus.yml)),
          C(prometheus_alertmanager_targets); when it is null, this host's Alertmanager
          (C(prometheus_alertmanager_listen_address)) when C(prometheus_alertmanager_receiver) is not V(none), else
          none.
      type: list
      elements: str
    prometheus_args:
      description: Prometheus's flags (C(ARGS=) of C(prometheus_defaults_file)), C(--config.file),
        C(--web.listen-address) and C(prometheus_extra_args), blank-separated.
      type: str
    alertmanager_args:
      description: Alertmanager's flags (C(ARGS=) of C(prometheus_alertmanager_defaults_file)), C(--config.file),
        C(--web.listen-address), an empty C(--cluster.listen-address=) and C(prometheus_alertmanager_extra_args).
      type: str
    config_dirs:
      description: The directories of the rule file, C(prometheus.yml) and (with a receiver) C(alertmanager.yml),
        each once.
      type: list
      elements: str
    alertmanager_config_group:
      description: The group of C(alertmanager.yml), V(prometheus) when C(prometheus_manage_service), else null (the
        file's group is left as it is).
      type: str
    certificate_expiry_seconds:
      description: C(prometheus_alert_certificate_expiry_days) in seconds (the rule C(OnionServiceCertificateExpiring)).
      type: int
    watchdog_stale_seconds:
      description: C(prometheus_alert_watchdog_stale_seconds) as a number (the rule C(OnionWatchdogStale)).
      type: int
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
    """The filter's face of plugin_utils/prometheus_settings.plan (its check first)."""
    return checked(role_vars, model.plan)


class FilterModule(object):
    def filters(self):
        return {"prometheus_settings": prometheus_settings}
