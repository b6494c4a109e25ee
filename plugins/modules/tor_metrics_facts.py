#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tor_metrics_facts
short_description: The onion-service metrics of tor's MetricsPort, per service, as facts
version_added: 0.1.0
description:
  - Reads tor's C(MetricsPort) over HTTP (the Python standard library, one connection, nothing installed on the
    target), parses the Prometheus text exposition format it writes, and returns the metrics of every onion
    service, keyed by the service's address as tor labels it (the 56 characters without C(.onion)), their totals
    over all services, and the other metrics the filter keeps, as RV(ansible_facts.tor_metrics).
  - Metric names are those tor writes (for example C(tor_hs_intro_num_total), C(tor_hs_rdv_num_total),
    C(tor_hs_pow_suggested_effort), the C(_bucket), C(_sum) and C(_count) samples of the histograms
    C(tor_hs_intro_circ_build_time) and C(tor_hs_rend_circ_build_time)); nothing is renamed, so a name in these
    facts is the name to query in Prometheus.
  - The module does not use tor's control port. It reads the same page a Prometheus server scrapes, so the
    facts and Prometheus agree up to what changed between the two reads.
  - Nothing is changed; C(changed) is always V(false) and check mode returns the same facts.
author:
  - onionlab.tor contributors (@onionlab)
options:
  metrics_url:
    description:
      - The URL of tor's MetricsPort, such as C(http://127.0.0.1:9035/metrics).
      - Mutually exclusive with O(metrics_port); one of the two is required.
    type: str
  metrics_host:
    description:
      - The address of tor's MetricsPort, used with O(metrics_port).
    type: str
    default: 127.0.0.1
  metrics_port:
    description:
      - The TCP port of tor's MetricsPort (the URL is then C(http://METRICS_HOST:METRICS_PORT/metrics)).
    type: int
  timeout:
    description:
      - Seconds for the whole read (connecting, sending the request and receiving every byte of the page).
        A port that answers slower fails with a message that says so.
    type: float
    default: 10
  prefix:
    description:
      - Return the samples whose name starts with this prefix. V("") returns every sample tor writes.
      - Without O(prefix) and O(names), the prefix is C(tor_hs_), tor's onion-service metrics.
      - Mutually exclusive with O(names).
    type: str
  names:
    description:
      - Return only the samples with these exact names (as tor writes them, for example
        C(tor_hs_intro_circ_build_time_count)).
      - Mutually exclusive with O(prefix).
    type: list
    elements: str
  max_bytes:
    description:
      - The largest page read, in bytes; a larger one fails and is not read further.
      - A page is about 12 KB per onion service plus 30 KB for the rest.
    type: int
    default: 16777216
extends_documentation_fragment:
  - onionlab.tor.attributes
  - onionlab.tor.attributes.FACTS
  - onionlab.tor.attributes.INFO_MODULE
notes:
  - tor needs C(MetricsPort 127.0.0.1:PORT) and C(MetricsPortPolicy accept 127.0.0.1) in its torrc (the policy
    rejects every address by default). The port serves unauthenticated HTTP; keep it on a loopback or private
    address and list in C(MetricsPortPolicy) only the hosts that scrape it.
  - A tor with C(DisableNetwork 1) does not open its MetricsPort (tor 0.4.9).
  - The module is not in the C(group/onionlab.tor.tor) action group, whose defaults are the control-port options
    this module does not take.
seealso:
  - name: tor's manual, MetricsPort
    description: The port and its policy.
    link: https://2019.www.torproject.org/docs/tor-manual.html.en#MetricsPort
  - name: Prometheus text exposition format
    description: The format parsed.
    link: https://prometheus.io/docs/instrumenting/exposition_formats/
  - module: onionlab.tor.tor_hidden_service_info
    description: The services tor runs, with the PoW suggested effort of each (O(onionlab.tor.tor_hidden_service_info#module:metrics_url)).
"""

EXAMPLES = r"""
- name: Read the onion-service metrics of the local tor
  onionlab.tor.tor_metrics_facts:
    metrics_port: 9035

- name: Fail when a service has no introduction point established
  ansible.builtin.assert:
    that: item.value.tor_hs_intro_established_count > 0
    fail_msg: "{{ item.key }}.onion has no introduction circuit"
  loop: "{{ ansible_facts.tor_metrics.services | dict2items }}"

- name: Only two metrics, from another address
  onionlab.tor.tor_metrics_facts:
    metrics_url: http://10.0.0.5:9035/metrics
    names:
      - tor_hs_rdv_num_total
      - tor_hs_pow_suggested_effort
  register: rendezvous

- name: Every metric tor writes (relay, connections, DoS defences, ...)
  onionlab.tor.tor_metrics_facts:
    metrics_port: 9035
    prefix: ""
"""

RETURN = r"""
ansible_facts:
  description: The facts.
  returned: success
  type: dict
  contains:
    tor_metrics:
      description: What the MetricsPort said, filtered by O(prefix) or O(names).
      returned: success
      type: dict
      contains:
        url:
          description: The URL read.
          type: str
          returned: success
          sample: http://127.0.0.1:9035/metrics
        services:
          description:
            - One entry per onion service, keyed by its C(onion) label as tor writes it (the address without
              C(.onion)), of the samples that carry that label.
            - Each sample name maps to its value when the sample has no label but C(onion); else to a list of
              C({labels, value}) with its other labels (C(port), C(reason), C(le) of a histogram bucket).
            - Values are numbers; V(NaN), V(+Inf) and V(-Inf) are returned as those strings.
          type: dict
          returned: success
          sample:
            zs7bgfoxd7tj5athygvu6xqkklwfd26uabmmjwdild72aalz7fttisyd:
              tor_hs_intro_num_total: 1
              tor_hs_rdv_num_total: 1
              tor_hs_intro_established_count: 6
              tor_hs_pow_suggested_effort: 0
              tor_hs_app_read_bytes_total: [{labels: {port: "80"}, value: 194}]
              tor_hs_rdv_error_count: [{labels: {reason: retry}, value: 0}]
              tor_hs_rend_circ_build_time_bucket: [{labels: {le: "1000.00"}, value: 1}, {labels: {le: "+Inf"}, value: 1}]
              tor_hs_rend_circ_build_time_sum: 40
              tor_hs_rend_circ_build_time_count: 1
        totals:
          description:
            - The sum over every service of each sample name of RV(ansible_facts.tor_metrics.services), with the
              same other labels (for a gauge such as C(tor_hs_pow_suggested_effort) that is a sum, not a maximum).
          type: dict
          returned: success
          sample: {tor_hs_intro_num_total: 3, tor_hs_app_read_bytes_total: [{labels: {port: "80"}, value: 485}]}
        other:
          description: The kept samples without an C(onion) label, in the same shape (empty with the default prefix).
          type: dict
          returned: success
          sample: {tor_relay_circuits_total: [{labels: {state: opened}, value: 12}]}
        types:
          description: The C(# TYPE) of each metric family returned (counter, gauge, histogram, summary, untyped).
          type: dict
          returned: success
          sample: {tor_hs_intro_num_total: counter, tor_hs_rend_circ_build_time: histogram}
        samples:
          description: How many samples the page had (all of them, before the filter).
          type: int
          returned: success
          sample: 377
        seconds:
          description: How long the read and the parse took.
          type: float
          returned: success
          sample: 0.004
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.onionlab.tor.plugins.module_utils._common import MODULE_ERRORS, fail
from ansible_collections.onionlab.tor.plugins.module_utils._tor import metrics


def main():
    module = AnsibleModule(
        argument_spec=dict(
            metrics_url=dict(type="str"),
            metrics_host=dict(type="str", default="127.0.0.1"),
            metrics_port=dict(type="int"),
            timeout=dict(type="float", default=10.0),
            prefix=dict(type="str"),
            names=dict(type="list", elements="str"),
            max_bytes=dict(type="int", default=metrics.MAX_BYTES),
        ),
        mutually_exclusive=[("metrics_url", "metrics_port"), ("prefix", "names")],
        required_one_of=[("metrics_url", "metrics_port")],
        supports_check_mode=True,
    )
    p = module.params
    if p["metrics_port"] is not None and not 1 <= p["metrics_port"] <= 65535:
        module.fail_json(msg="metrics_port must be between 1 and 65535, got %d" % p["metrics_port"])
    if p["timeout"] <= 0:
        module.fail_json(msg="timeout must be a positive number of seconds, got %g" % p["timeout"])
    if p["max_bytes"] < 1:
        module.fail_json(msg="max_bytes must be a positive number of bytes, got %d" % p["max_bytes"])
    if p["names"] is not None and not [n for n in p["names"] if n]:
        module.fail_json(msg="names must list at least one metric name, such as tor_hs_rdv_num_total")
    url = p["metrics_url"]
    if url is None:
        host = p["metrics_host"]
        url = "http://%s:%d/metrics" % ("[%s]" % host if ":" in host else host, p["metrics_port"])
    prefix = p["prefix"]
    if prefix is None and not p["names"]:
        prefix = "tor_hs_"
    t0 = time.monotonic()
    try:
        page = metrics.scrape(metrics.check_url(url), p["timeout"], p["max_bytes"])
    except MODULE_ERRORS as exc:
        fail(module, exc)
    facts = metrics.onion_services(page, prefix=prefix, names=p["names"])
    facts.update(url=url, samples=len(page.samples), seconds=round(time.monotonic() - t0, 3))
    module.exit_json(changed=False, ansible_facts=dict(tor_metrics=facts))


if __name__ == "__main__":
    main()
