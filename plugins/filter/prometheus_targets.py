# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prometheus role's scrape targets, checked. The work is plugin_utils/prometheus_targets.py's; this is its face
for the role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: prometheus_targets
short_description: The scrape targets of the prometheus role, each host's port checked
version_added: 0.2.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Takes the P(onionlab.tor.prometheus#role) role's C(prometheus_tor_hosts) and returns C({tor, onionprobe,
    watchdog}), each a list of C({host, target}) (C(onion) too for tor and watchdog hosts): a tor host's MetricsPort
    (C(tor_metrics_port) as in torrc; the address from C(tor_metrics_address), else the port's own address when it is
    not a wildcard, else C(ansible_host)), an Onionprobe host's exporter (C(onionprobe_exporter_port), else 9935;
    C(onionprobe_exporter_address), else its listen address when not a wildcard, else C(ansible_host)), a watchdog
    host's node_exporter (C(prometheus_node_exporter_port), else O(node_exporter_port)). A host that names
    C(prometheus_metrics_onion) is scraped at that onion address's port of the same number, through tor."
  - Hosts not in the inventory are left out, and tor hosts without C(tor_metrics_port).
  - Fails with one message naming the host and the variable when a port is not a port.
options:
  _input:
    description: The tor hosts (C(prometheus_tor_hosts)).
    type: list
    elements: str
    required: true
  onionprobe_hosts:
    description: The Onionprobe hosts (C(prometheus_onionprobe_hosts)).
    type: list
    elements: str
    default: []
  watchdog_hosts:
    description: The watchdog hosts (C(prometheus_watchdog_hosts)).
    type: list
    elements: str
    default: []
  hostvars:
    description: The play's C(hostvars).
    type: dict
    required: true
  node_exporter_port:
    description: The node_exporter port of a watchdog host that does not set its own (C(prometheus_node_exporter_port)).
    type: int
    default: 9100
  onion_proxy_url:
    description:
      - C(prometheus_onion_proxy_url), the SOCKS5 port of the monitoring host's tor (C(socks5://127.0.0.1:9050)).
      - Checked, when given, if a host is scraped at its C(prometheus_metrics_onion). Every host's
        C(prometheus_metrics_onion) is checked to be a v3 onion address (its version and checksum) in any case.
    type: str
  tor_job:
    description: The job name of the tor hosts (C(prometheus_tor_job)); the job of those scraped at their metrics onion
      is this name with C(_onion).
    type: str
    default: tor
  watchdog_job:
    description: The job name of the watchdog hosts (C(prometheus_watchdog_job)), as O(tor_job).
    type: str
    default: onionlab_watchdog
"""

EXAMPLES = r"""
- name: The scrape targets
  ansible.builtin.set_fact:
    targets: "{{ prometheus_tor_hosts | onionlab.tor.prometheus_targets(onionprobe_hosts=prometheus_onionprobe_hosts,
                 watchdog_hosts=prometheus_watchdog_hosts, hostvars=hostvars) }}"
"""

RETURN = r"""
_value:
  description:
    - "C({tor: [...], onionprobe: [...], watchdog: [...]}), each entry C({host, target}) (and C(onion))."
    - "As the scrape config is written: C(tor_direct) and C(watchdog_direct), the targets scraped at their address;
      C(onion_jobs), a list of C({job, label, targets}), one per kind with hosts scraped at their metrics onion (C(job)
      is O(tor_job) or O(watchdog_job) with C(_onion), C(label) the job label its series keep)."
  type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.onionlab.tor.plugins.plugin_utils import prometheus_targets as model


def prometheus_targets(tor_hosts, hostvars, onionprobe_hosts=None, watchdog_hosts=None, node_exporter_port=9100,
                       onion_proxy_url=model.UNCHECKED, tor_job="tor", watchdog_job="onionlab_watchdog"):
    """The filter's face of plugin_utils/prometheus_targets."""
    try:
        return model.targets(tor_hosts, onionprobe_hosts, watchdog_hosts, hostvars, node_exporter_port,
                             onion_proxy_url, jobs={"tor": tor_job, "watchdog": watchdog_job})
    except model.TargetsError as exc:
        raise AnsibleFilterError("prometheus: %s" % to_native(exc))


class FilterModule(object):
    def filters(self):
        return {"prometheus_targets": prometheus_targets}
