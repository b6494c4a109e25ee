#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tor_accounting_facts
short_description: Accounting, traffic, bandwidth, uptime and state of a running tor as facts
version_added: 0.1.0
description:
  - Reads from a running tor, over its control port or socket, the figures of its bandwidth accounting
    (C(AccountingMax)), its traffic since start, its effective bandwidth rate, its uptime and its
    bootstrap and network state, and returns them as RV(ansible_facts.tor).
  - All the tor state the asked groups need is fetched with one C(GETINFO) command; the
    V(accounting) and V(bandwidth) groups add one C(GETCONF) command for the options they report.
  - The figures follow those of Stem's C(get_accounting_stats), C(get_effective_rate) and
    C(get_start_time).
  - A value that tor does not report, reports in an unexpected form, or reports as unknown is returned
    as V(null); the module never fails on a value. A tor too old to know a C(GETINFO) key or option
    answers C(552 Unrecognized key); the module then asks again without that key, its facts are
    V(null), and the key is listed in RV(missing_keys).
  - Nothing is changed on tor; C(changed) is always V(false) and check mode returns the same facts.
  - Each run sets RV(ansible_facts.tor) as a whole; after a run with a narrower O(include), the groups it left
    out are absent even if an earlier run had set them. Register the results to keep several.
author:
  - onionlab.tor contributors (@onionlab)
options:
  include:
    description:
      - The groups of facts to fetch. Only the C(GETINFO) keys and options of these groups are asked.
      - V(process) gives RV(ansible_facts.tor.version), RV(ansible_facts.tor.pid), RV(ansible_facts.tor.uptime)
        and RV(ansible_facts.tor.started_at).
      - V(status) gives RV(ansible_facts.tor.bootstrap), RV(ansible_facts.tor.network_liveness),
        RV(ansible_facts.tor.dormant) and RV(ansible_facts.tor.circuit_established).
      - V(accounting) gives RV(ansible_facts.tor.accounting).
      - V(traffic) gives RV(ansible_facts.tor.traffic).
      - V(bandwidth) gives RV(ansible_facts.tor.effective_rate), RV(ansible_facts.tor.effective_burst) and
        RV(ansible_facts.tor.bandwidth).
      - The facts of a group that is not included are absent, not V(null).
    type: list
    elements: str
    choices: [process, status, accounting, traffic, bandwidth]
    default: [process, status, accounting, traffic, bandwidth]
extends_documentation_fragment:
  - onionlab.tor.control
  - onionlab.tor.attributes
  - onionlab.tor.attributes.FACTS
  - onionlab.tor.attributes.INFO_MODULE
  - onionlab.tor.attributes.ACTIONGROUP_TOR
notes:
  - Accounting (C(AccountingMax)) also works on a tor that is not a relay; its counters then only count
    relayed and directory traffic, which a client tor has little of.
  - Every time is in UTC, written as ISO 8601 C(YYYY-MM-DDTHH:MM:SSZ) to the second.
  - Sizes are in bytes and rates in bytes per second, whatever unit the torrc used.
seealso:
  - name: Tor control protocol, GETINFO
    description: The keys this module reads.
    link: https://spec.torproject.org/control-spec/commands.html#getinfo
  - name: Tor manual, accounting options
    description: AccountingMax, AccountingRule and AccountingStart.
    link: https://2019.www.torproject.org/docs/tor-manual.html.en#AccountingMax
"""

EXAMPLES = r"""
- name: Read everything from the Debian tor (control socket /run/tor/control, cookie authentication)
  onionlab.tor.tor_accounting_facts:

- name: Report the rate tor may relay at
  ansible.builtin.debug:
    msg: >-
      {{ ansible_facts.tor.effective_rate | human_readable }}/s,
      burst {{ ansible_facts.tor.effective_burst | human_readable }}

- name: Read only the accounting figures from a tor's ControlPort
  onionlab.tor.tor_accounting_facts:
    control_port: 9051
    include:
      - accounting

- name: Fail when less than 10% of the accounting period's bytes are left
  ansible.builtin.assert:
    that:
      - not ansible_facts.tor.accounting.enabled or ansible_facts.tor.accounting.fraction_left >= 0.10
    fail_msg: >-
      only {{ ansible_facts.tor.accounting.bytes_left }} of {{ ansible_facts.tor.accounting.max }} bytes
      left until {{ ansible_facts.tor.accounting.interval_end }}

- name: Wait until tor has bootstrapped
  onionlab.tor.tor_accounting_facts:
    include: [status]
  register: tor_state
  until: (tor_state.ansible_facts.tor.bootstrap.progress | default(0)) == 100
  retries: 30
  delay: 2
"""

RETURN = r"""
missing_keys:
  description:
    - The C(GETINFO) keys and configuration options this tor did not recognize (an older tor); the facts made
      from them are V(null).
  returned: always
  type: list
  elements: str
  sample: []
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    tor:
      description: What tor reported. Groups not in O(include) are absent.
      returned: always
      type: dict
      contains:
        connection_time:
          description: When this module's control connection was made and authenticated (UTC).
          returned: always
          type: str
          sample: "2026-12-03T07:52:10Z"
        retrieved_at:
          description:
            - When tor's C(GETINFO) answer arrived (UTC); RV(ansible_facts.tor.uptime) and
              RV(ansible_facts.tor.accounting.time_until_reset) are relative to it.
          returned: always
          type: str
          sample: "2026-12-03T07:52:10Z"
        version:
          description: Tor's version (C(GETINFO version)), as tor writes it.
          returned: when V(process) is included
          type: str
          sample: 0.4.9.11
        pid:
          description: Tor's process id (C(GETINFO process/pid)); V(null) if unknown.
          returned: when V(process) is included
          type: int
          sample: 4242
        uptime:
          description: Seconds tor has been running (C(GETINFO uptime), tor 0.3.5 and later); V(null) if unknown.
          returned: when V(process) is included
          type: int
          sample: 86400
        started_at:
          description: When tor started (UTC), RV(ansible_facts.tor.retrieved_at) minus RV(ansible_facts.tor.uptime).
          returned: when V(process) is included
          type: str
          sample: "2026-12-02T07:52:10Z"
        bootstrap:
          description:
            - Tor's bootstrap status (C(GETINFO status/bootstrap-phase)); V(null) when tor's answer is not one.
            - Fields tor did not send are V(null).
          returned: when V(status) is included
          type: dict
          contains:
            severity:
              description: V(NOTICE), V(WARN) when tor has trouble bootstrapping, or V(ERR).
              type: str
              sample: NOTICE
            progress:
              description: Percent done, 0 to 100; V(100) once tor is bootstrapped.
              type: int
              sample: 100
            tag:
              description: Tor's name for the phase, for example V(done) or V(conn_done).
              type: str
              sample: done
            summary:
              description: Tor's description of the phase.
              type: str
              sample: Done
            warning:
              description: What went wrong, when RV(ansible_facts.tor.bootstrap.severity) is V(WARN); else V(null).
              type: str
              sample: Connection refused
            reason:
              description: Tor's reason code for the warning, for example V(CONNECTREFUSED); else V(null).
              type: str
              sample: CONNECTREFUSED
            count:
              description: How many times this problem happened; V(null) without a warning.
              type: int
              sample: 3
            recommendation:
              description: Tor's advice, V(ignore) or V(warn); V(null) without a warning.
              type: str
              sample: warn
            host:
              description: The relay address the warning concerns (C(HOSTADDR)); else V(null).
              type: str
              sample: 192.0.2.1:9001
        network_liveness:
          description: V(up) or V(down) (C(GETINFO network-liveness)); V(null) if unknown.
          returned: when V(status) is included
          type: str
          sample: up
        dormant:
          description: Whether tor is dormant, idle from lack of use (C(GETINFO dormant), tor 0.4.0 and later).
          returned: when V(status) is included
          type: bool
          sample: false
        circuit_established:
          description: Whether tor has built a circuit (C(GETINFO status/circuit-established)).
          returned: when V(status) is included
          type: bool
          sample: true
        accounting:
          description:
            - Bandwidth accounting (C(GETINFO accounting/*) and the C(Accounting*) options).
            - Every field but RV(ansible_facts.tor.accounting.enabled) is V(null) when accounting is off.
          returned: when V(accounting) is included
          type: dict
          contains:
            enabled:
              description: Whether C(AccountingMax) is set; V(null) if tor did not say.
              type: bool
              sample: true
            hibernating:
              description:
                - V(awake); V(soft) when tor accepts no new connections because the limit is near; V(hard)
                  when the limit is reached and tor relays nothing until the next period.
              type: str
              sample: awake
            bytes_read:
              description: Bytes read in this accounting period.
              type: int
              sample: 123456789
            bytes_written:
              description: Bytes written in this accounting period.
              type: int
              sample: 98765432
            bytes_left_read:
              description:
                - Bytes left to read, as tor reports it (C(accounting/bytes-left)); with C(AccountingRule sum)
                  both directions report the bytes left in total, with V(in) or V(out) the other direction
                  reports RV(ansible_facts.tor.accounting.max).
              type: int
              sample: 950285035
            bytes_left_written:
              description: Bytes left to write, as tor reports it; see RV(ansible_facts.tor.accounting.bytes_left_read).
              type: int
              sample: 974976392
            interval_start:
              description: When this accounting period began (UTC).
              type: str
              sample: "2026-12-01T00:00:00Z"
            interval_wake:
              description: When tor woke, or will wake, from hibernation in this period (UTC).
              type: str
              sample: "2026-12-01T00:00:00Z"
            interval_end:
              description: When this accounting period ends and the counters restart (UTC).
              type: str
              sample: "2027-01-01T00:00:00Z"
            time_until_reset:
              description: Seconds from RV(ansible_facts.tor.retrieved_at) to RV(ansible_facts.tor.accounting.interval_end), at least 0.
              type: int
              sample: 2477229
            max:
              description: C(AccountingMax) in bytes.
              type: int
              sample: 1073741824
            rule:
              description:
                - C(AccountingRule), V(max), V(sum), V(in) or V(out); V(null) on a tor older than the option
                  (which counts as V(max)).
              type: str
              sample: max
            start:
              description: C(AccountingStart) as tor reports it; V(null) when unset (tor then starts a period each month).
              type: str
              sample: month 1 00:00
            bytes_used:
              description:
                - The bytes C(AccountingMax) limits under C(AccountingRule) - the larger of
                  RV(ansible_facts.tor.accounting.bytes_read) and RV(ansible_facts.tor.accounting.bytes_written) for
                  V(max), their sum for V(sum), the read bytes for V(in), the written bytes for V(out).
              type: int
              sample: 123456789
            bytes_left:
              description: RV(ansible_facts.tor.accounting.max) minus RV(ansible_facts.tor.accounting.bytes_used), at least 0.
              type: int
              sample: 950285035
            fraction_used:
              description:
                - RV(ansible_facts.tor.accounting.bytes_used) divided by RV(ansible_facts.tor.accounting.max), to 6
                  decimals; slightly above 1 when tor overshot its limit.
              type: float
              sample: 0.114978
            fraction_left:
              description:
                - RV(ansible_facts.tor.accounting.bytes_left) divided by RV(ansible_facts.tor.accounting.max), 0 to 1,
                  to 6 decimals.
              type: float
              sample: 0.885022
        traffic:
          description: Traffic since tor started (C(GETINFO traffic/read) and C(traffic/written)), in bytes.
          returned: when V(traffic) is included
          type: dict
          contains:
            read:
              description: Bytes read; V(null) if unknown.
              type: int
              sample: 5242880
            written:
              description: Bytes written; V(null) if unknown.
              type: int
              sample: 1048576
        effective_rate:
          description:
            - The rate tor may relay at, in bytes per second, as Stem's C(get_effective_rate) computes it - the smallest
              of C(BandwidthRate), C(RelayBandwidthRate) and C(MaxAdvertisedBandwidth), C(RelayBandwidthRate) ignored
              when 0 (unset).
            - V(null) when one of them is unknown.
          returned: when V(bandwidth) is included
          type: int
          sample: 1073741824
        effective_burst:
          description:
            - The burst, as Stem's C(get_effective_rate) with C(burst=True) - the smaller of C(BandwidthBurst) and
              C(RelayBandwidthBurst), the latter ignored when 0 (unset).
          returned: when V(bandwidth) is included
          type: int
          sample: 1073741824
        bandwidth:
          description: The options the effective rate and burst come from, in bytes (per second); V(null) if unknown.
          returned: when V(bandwidth) is included
          type: dict
          contains:
            rate:
              description: C(BandwidthRate).
              type: int
              sample: 1073741824
            burst:
              description: C(BandwidthBurst).
              type: int
              sample: 1073741824
            relay_rate:
              description: C(RelayBandwidthRate), 0 when unset.
              type: int
              sample: 0
            relay_burst:
              description: C(RelayBandwidthBurst), 0 when unset.
              type: int
              sample: 0
            max_advertised:
              description: C(MaxAdvertisedBandwidth).
              type: int
              sample: 1073741824
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.onionlab.tor.plugins.module_utils._common import (
    MODULE_ERRORS,
    connect_module,
    control_argument_spec,
    fail,
    module_kwargs,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.accounting import GROUPS, collect


def main():
    spec = control_argument_spec(include=dict(type="list", elements="str", choices=list(GROUPS),
                                              default=list(GROUPS)))
    module = AnsibleModule(**module_kwargs(spec, supports_check_mode=True))
    try:
        with connect_module(module) as tor:
            facts, missing = collect(tor, module.params["include"], connected=time.time())
    except MODULE_ERRORS as exc:
        fail(module, exc, changed=False)
    module.exit_json(changed=False, missing_keys=missing, ansible_facts={"tor": facts})


if __name__ == "__main__":
    main()
