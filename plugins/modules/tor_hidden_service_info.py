#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: tor_hidden_service_info
short_description: List every onion service a running tor has
version_added: 0.1.0
description:
  - Returns the persistent onion services of tor's configuration (C(GETCONF HiddenServiceOptions)), in the shape
    that M(onionlab.tor.tor_hidden_service) takes, with each address read from the service's keys when readable,
    and the ephemeral ones (C(GETINFO onions/current) and C(onions/detached)).
  - The persistent entries can be fed back to M(onionlab.tor.tor_hidden_service) (its O(onionlab.tor.tor_hidden_service#module:services)
    option, with O(onionlab.tor.tor_hidden_service#module:exclusive=true) to make tor's configuration exactly that list).
author:
  - onionlab.tor contributors (@onionlab)
extends_documentation_fragment:
  - onionlab.tor.control
  - onionlab.tor.attributes
  - onionlab.tor.attributes.INFO_MODULE
  - onionlab.tor.attributes.ACTIONGROUP_TOR
options:
  metrics_url:
    description:
      - The URL of tor's MetricsPort (C(http://127.0.0.1:PORT/metrics); torrc needs C(MetricsPort 127.0.0.1:PORT) and
        C(MetricsPortPolicy accept 127.0.0.1)), read with a plain HTTP GET to add each service's
        RV(hidden_services[].pow_suggested_effort). tor reports that effort there, not on the control port.
      - An unreadable URL fails the task.
    type: str
seealso:
  - module: onionlab.tor.tor_hidden_service
"""

EXAMPLES = r"""
- name: What does tor run?
  onionlab.tor.tor_hidden_service_info:
  register: info

- name: Print every address
  ansible.builtin.debug:
    msg: "{{ info.hidden_services | map(attribute='onion_address') | list }}"

- name: Recreate the same persistent services elsewhere
  onionlab.tor.tor_hidden_service:
    services: "{{ info.hidden_services | selectattr('type', 'equalto', 'persistent') | list }}"
    exclusive: true
"""

RETURN = r"""
hidden_services:
  description: Every onion service tor runs, persistent ones first in tor's configuration order.
  returned: success
  type: list
  elements: dict
  contains:
    type:
      description: V(persistent) (a C(HiddenServiceDir)) or V(ephemeral) (C(ADD_ONION)).
      type: str
    onion_address:
      description: The address, or null when a persistent service's keys cannot be read.
      type: str
    path:
      description: The service directory (persistent services).
      type: str
    ports:
      description: The port mappings (C(port), C(target_address), C(target_port)). For an ephemeral service, what
        M(onionlab.tor.tor_hidden_service) asked for, or null when another controller created it (tor does not
        report them).
      type: list
      elements: dict
    version:
      description: The onion-service version (persistent services).
      type: int
    max_streams:
      description: C(HiddenServiceMaxStreams) / C(MaxStreams).
      type: int
    max_streams_close_circuit:
      description: C(HiddenServiceMaxStreamsCloseCircuit) (persistent services).
      type: bool
    dir_group_readable:
      description: C(HiddenServiceDirGroupReadable) (persistent services).
      type: bool
    allow_unknown_ports:
      description: C(HiddenServiceAllowUnknownPorts) (persistent services).
      type: bool
    num_intro_points:
      description: C(HiddenServiceNumIntroductionPoints) (persistent services).
      type: int
    extra_options:
      description: Other C(HiddenService*) options, each a list of values (persistent services).
      type: dict
    authorized_clients:
      description: The clients in the service's C(authorized_clients) directory (C(name), C(public_key)), or null
        when it cannot be read (persistent services).
      type: list
      elements: dict
    service_id:
      description: The address without C(.onion) (ephemeral services).
      type: str
    detached:
      description: Whether the ephemeral service outlives its control connection (always true for those listed by
        another connection).
      type: bool
    client_auth_v3:
      description: Client keys recorded for an ephemeral service, or null (ephemeral services).
      type: list
      elements: str
    export_circuit_id:
      description: C(HiddenServiceExportCircuitID), V(none) or V(haproxy) (persistent services).
      type: str
    pow:
      description:
        - The proof-of-work defence (C(enabled), C(queue_rate), C(queue_burst)), with tor's defaults where the
          configuration does not set it.
        - For an ephemeral service, what M(onionlab.tor.tor_hidden_service) asked for, or null when another
          controller created it.
      type: dict
    intro_dos:
      description: The introduction-point DoS defence (C(enabled), C(rate_per_sec), C(burst_per_sec)) (persistent
        services).
      type: dict
    onionbalance_frontend:
      description:
        - For a persistent service with C(HiddenServiceOnionbalanceInstance 1) (an Onionbalance backend), the frontend
          address its C(ob_config) names (C(MasterOnionAddress)); null when the service is not balanced, or when its
          C(ob_config) is missing or names no valid address. Absent for ephemeral services.
      type: str
      sample: 3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd.onion
    pow_suggested_effort:
      description:
        - The effort the service currently suggests to its clients (0 while it is not under load), from tor's
          MetricsPort; null when tor reports none for it (a tor before 0.4.8, a service tor has not set up yet).
          tor 0.4.9 reports 0 for a service without PoW too; RV(hidden_services[].pow) tells them apart.
      returned: when O(metrics_url) is given
      type: int
tor:
  description: Tor-wide settings that matter to every onion service of this tor.
  returned: success
  type: dict
  contains:
    version:
      description: tor's version.
      type: str
    non_anonymous:
      description: Whether tor runs with C(HiddenServiceNonAnonymousMode 1) (single-hop services, B(not anonymous)).
      type: bool
    vanguards_lite:
      description:
        - C(VanguardsLiteEnabled) (tor 0.4.7 and later), V(0), V(1) or V(auto) (the consensus decides, on unless it
          says otherwise); vanguards-lite protects a service's guard from discovery. Null on an older tor.
      type: str
  sample:
    - type: persistent
      path: /var/lib/tor/web
      onion_address: 3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd.onion
      ports: [{port: 80, target_address: 127.0.0.1, target_port: 8080}]
      version: 3
      max_streams: 0
      max_streams_close_circuit: false
      dir_group_readable: false
      allow_unknown_ports: false
      num_intro_points: 3
      export_circuit_id: none
      pow: {enabled: true, queue_rate: 250, queue_burst: 2500}
      intro_dos: {enabled: false, rate_per_sec: 25, burst_per_sec: 200}
      extra_options: {}
      authorized_clients: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.onionlab.tor.plugins.module_utils._common import (
    MODULE_ERRORS,
    connect_module,
    control_argument_spec,
    fail,
    module_kwargs,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor import metrics
from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_list
from ansible_collections.onionlab.tor.plugins.module_utils._tor import tor_facts


def main():
    module = AnsibleModule(**module_kwargs(control_argument_spec(metrics_url=dict(type="str")),
                                           supports_check_mode=True))
    url = module.params["metrics_url"]
    try:
        if url is not None:
            metrics.check_url(url)
        with connect_module(module) as ctl:
            facts = tor_facts.TorFacts(ctl)
            services = service_list.list_services(ctl, facts)
            tor = dict(facts.summary(), vanguards_lite=tor_facts.vanguards_lite(ctl))
        if url is not None:
            efforts = metrics.read_suggested_efforts(url, module.params["timeout"])
            for service in services:
                address = service.get("onion_address") or ""
                service["pow_suggested_effort"] = efforts.get(address[:-len(".onion")])
    except MODULE_ERRORS as exc:
        fail(module, exc)
    module.exit_json(changed=False, hidden_services=services, tor=tor)


if __name__ == "__main__":
    main()
