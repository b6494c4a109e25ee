#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tor_onion_probe
short_description: Reach onion services through a tor SocksPort, or wait until they answer
version_added: 0.1.0
description:
  - From the host it runs on, reaches each onion service of O(targets) through a tor C(SocksPort) (SOCKS5,
    the onion address resolved by tor) and reports, per target, whether it answered, the time to the first
    byte, how many attempts it took and, when it did not answer, why.
  - A target is reached either by a TCP connection (O(targets[].mode=tcp)), or by an HTTP C(GET) whose status
    must be one of O(targets[].status) (O(targets[].mode=http), the default).
  - A target that does not answer is tried again, O(delay) seconds after each failed attempt, until it answers or
    O(deadline) seconds have passed. All targets are probed at once.
  - Two ways to use it. As a report (O(wait=false), the default), every target is tried once (or until O(deadline)
    when set) and the task never fails for a target that does not answer; RV(targets[].reachable) says which did.
    To wait (O(wait=true)), every target is retried until it answers, and the task fails when one has not
    answered after O(deadline) seconds (120 unless set), listing those that did not.
  - Tor's reply codes are named in RV(targets[].error) and RV(targets[].reason). A C(SocksPort) with the
    C(ExtendedErrors) flag tells the onion-service failures apart (descriptor not found, introduction failed,
    missing or wrong client authorization, ...); without it tor answers most of them with C(host unreachable)
    or C(general failure).
  - Nothing is changed anywhere; C(changed) is always V(false). In check mode the targets are probed all the same.
  - Standard library Python only on the managed host (3.7 or later); nothing but tor's SocksPort is needed.
author:
  - onionlab.tor contributors (@onionlab)
options:
  targets:
    description:
      - The onion services to reach. Each is probed separately; the results come back in the same order.
    type: list
    elements: dict
    required: true
    suboptions:
      address:
        description:
          - The v3 onion address, 56 base32 characters, with or without C(.onion); upper case is accepted.
            A subdomain (C(www.<address>.onion)) is sent to tor as it is and used in the C(Host) header.
          - Its checksum, version and key are checked before anything is sent; a malformed address fails the
            task.
        type: str
        required: true
      port:
        description: The port of the onion service (its virtual port, C(HiddenServicePort)).
        type: int
        default: 80
      mode:
        description:
          - V(http) sends C(GET) O(targets[].path) (HTTP/1.0, closing the connection after the answer) and the target
            answers when the status is one of O(targets[].status) (and, with O(targets[].body_contains), the body contains it).
          - V(tcp) only connects; the target answers when tor reports the connection made, that is when the onion
            service has connected to what is behind its port.
        type: str
        choices: [http, tcp]
        default: http
      path:
        description:
          - The path of the C(GET), with its query string; it must start with C(/) and hold no space or control
            character (URL-encode them). V(/) when not set. Only for O(targets[].mode=http).
        type: str
      status:
        description: The HTTP status codes that count as an answer; V([200]) when not set. Only for O(targets[].mode=http).
        type: list
        elements: int
      host_header:
        description:
          - The value of the C(Host) header. When not set, the onion address (with C(:port) when O(targets[].port)
            is not 80), as a browser would send. Only for O(targets[].mode=http).
        type: str
      body_contains:
        description:
          - Text the body must contain (searched in its first MiB) for the target to count as answering. Only for
            O(targets[].mode=http).
        type: str
      timeout:
        description: Seconds one attempt at this target may take; O(timeout) when not set.
        type: float
  socks_host:
    description: The host of tor's C(SocksPort). Ignored with O(socks_socket).
    type: str
    default: 127.0.0.1
  socks_port:
    description:
      - The TCP port of tor's C(SocksPort); 9050 (tor's default) when neither this nor O(socks_socket) is set.
    type: int
  socks_socket:
    description:
      - The path of a unix-socket C(SocksPort) (C(SocksPort unix:/run/tor/socks) in the torrc), instead of
        O(socks_host) and O(socks_port).
    type: path
  timeout:
    description:
      - Seconds one attempt may take, from connecting to the C(SocksPort) to the first line of the HTTP answer
        (to the text of O(targets[].body_contains) when set; for V(tcp), to tor's report that the connection is
        made), unless the target sets its own O(targets[].timeout).
      - The first connection to an onion service fetches its descriptor and builds two circuits; on the public
        Tor network that takes a few seconds, sometimes tens of seconds.
    type: float
    default: 30
  deadline:
    description:
      - Seconds after the start during which a target that has not answered is tried again. No attempt starts
        after the deadline and none runs past it, except the first attempt of each target, which always has its
        full O(timeout).
      - When not set, V(0) (one attempt per target) with O(wait=false), V(120) with O(wait=true).
    type: float
  delay:
    description: Seconds between a failed attempt and the next attempt at the same target.
    type: float
    default: 1
  wait:
    description:
      - V(false) reports; a target that does not answer is only RV(targets[].reachable=false).
      - V(true) waits until every target answers, and fails the task when one has not answered at the
        O(deadline), naming each and why. The results are returned also then.
    type: bool
    default: false
extends_documentation_fragment:
  - onionlab.tor.attributes
  - onionlab.tor.attributes.INFO_MODULE
notes:
  - The module is not part of the action group C(onionlab.tor.tor), whose defaults are the control-port options
    this module does not take; set its defaults with its own name in C(module_defaults).
  - Tor remembers for 15 minutes which directories it asked for an onion service's descriptor
    (C(REND_HID_SERV_DIR_REQUERY_PERIOD); 5 seconds on a C(TestingTorNetwork)). On the public network, a wait
    that starts before a new service has published its descriptor may see it only after that time, unless the
    client tor is sent C(SIGNAL NEWNYM), which forgets them. Start the wait once the service runs.
  - Several attempts may reuse tor's circuits to the service, so after the first success
    RV(targets[].time_to_first_byte) is mostly the round trip through the circuits already built.
seealso:
  - module: onionlab.tor.tor_hidden_service
  - name: Tor manual, SocksPort and its ExtendedErrors flag
    description: The extended SOCKS reply codes 0xF0 to 0xF7 of onion-service failures.
    link: https://2019.www.torproject.org/docs/tor-manual.html.en#SocksPort
  - name: Tor proposal 304, extending SOCKS5 onion service error codes
    description: Where the codes 0xF0 to 0xF7 come from.
    link: https://spec.torproject.org/proposals/304-socks5-extending-hs-error-codes.html
  - name: RFC 1928, SOCKS Protocol Version 5
    description: The protocol spoken to tor's SocksPort.
    link: https://www.rfc-editor.org/rfc/rfc1928
"""

EXAMPLES = r"""
- name: Is the site up? (one GET of / through the local tor's SocksPort 9050; never fails for an unreachable onion)
  onionlab.tor.tor_onion_probe:
    targets:
      - address: 2gzyxa5ihm7nsggfxnu52rck2vv4rvmdlkiu3zzui5du4xyclen53wid.onion
  register: probe

- name: Report
  ansible.builtin.debug:
    msg: "{{ item.address }}: {{ item.reachable | ternary('up, ' ~ item.time_to_first_byte ~ ' s', item.error) }}"
  loop: "{{ probe.targets }}"

- name: Wait until every new service answers, at most 5 minutes (CI provisioning)
  onionlab.tor.tor_onion_probe:
    wait: true
    deadline: 300
    targets:
      - address: "{{ web.onion_address }}"
        path: /health
        status: [200, 204]
      - address: "{{ ssh.onion_address }}"
        port: 22
        mode: tcp

- name: Each service of a summary answers, through a unix SocksPort, with a page that names its host
  onionlab.tor.tor_onion_probe:
    socks_socket: /run/tor/socks
    wait: true
    deadline: 90
    targets:
      - address: "{{ item.onion_address }}"
        port: "{{ item.ports[0] }}"
        body_contains: "host {{ item.host }}"
  loop: "{{ onion_summary }}"

- name: A revoked client no longer gets in (tor answers 0xF4 on a SocksPort with ExtendedErrors)
  onionlab.tor.tor_onion_probe:
    socks_port: 9150
    targets:
      - address: "{{ private_service }}"
  register: revoked
  failed_when: revoked.targets[0].reachable or revoked.targets[0].reason != 'missing_client_auth'

- name: Defaults for every probe of a play
  module_defaults:
    onionlab.tor.tor_onion_probe:
      socks_port: 9150
      timeout: 60
  block:
    - name: The page names its host
      onionlab.tor.tor_onion_probe:
        wait: true
        targets:
          - address: "{{ web.onion_address }}"
            body_contains: "host {{ inventory_hostname }}"
"""

RETURN = r"""
targets:
  description: One result per entry of O(targets), in the same order.
  returned: always
  type: list
  elements: dict
  contains:
    address:
      description: The address as sent to tor, lower case, with C(.onion).
      type: str
      sample: 2gzyxa5ihm7nsggfxnu52rck2vv4rvmdlkiu3zzui5du4xyclen53wid.onion
    port:
      description: The port.
      type: int
      sample: 80
    mode:
      description: V(http) or V(tcp).
      type: str
      sample: http
    reachable:
      description:
        - Whether the last attempt succeeded - for V(tcp), tor connected; for V(http), the status was one of
          O(targets[].status) (and the body held O(targets[].body_contains)).
      type: bool
      sample: true
    time_to_first_byte:
      description:
        - Seconds from the start of the last attempt (its connection to the C(SocksPort)) to the first byte of the
          HTTP answer, as C(curl --socks5-hostname)'s C(time_starttransfer); for V(tcp), to tor's report that the
          connection is made.
        - Also given when the answer was not the expected one (an unexpected status); V(null) when no answer came.
      type: float
      sample: 0.213
    attempts:
      description: How many attempts were made.
      type: int
      sample: 3
    elapsed:
      description: Seconds from the first attempt to the end of the last.
      type: float
      sample: 2.48
    status:
      description: The HTTP status of the last answer; V(null) for V(tcp) or when no HTTP answer came.
      type: int
      sample: 200
    error:
      description:
        - Why the last attempt failed, in words, with tor's SOCKS reply code and its name when tor refused;
          V(null) when the target answered.
      type: str
      sample: >-
        tor answered 0xF0: onion service descriptor can not be found (the service is not running or has not
        published its descriptor yet, or the address is wrong)
    reason:
      description:
        - Why the last attempt failed, as a keyword; V(null) when the target answered.
        - "Tor's refusals: V(general_failure) (0x01), V(not_allowed), V(network_unreachable), V(host_unreachable)
          (0x04), V(connection_refused) (0x05), V(ttl_expired), V(command_not_supported),
          V(address_type_not_supported), and with C(ExtendedErrors) V(descriptor_not_found) (0xF0),
          V(descriptor_invalid), V(introduction_failed), V(rendezvous_failed), V(missing_client_auth) (0xF4),
          V(wrong_client_auth) (0xF5), V(invalid_address) (0xF6), V(introduction_timed_out) (0xF7)."
        - "The C(SocksPort): V(proxy_refused) (nothing listens), V(proxy_missing) (no such unix socket),
          V(proxy_timeout) (no connection or no SOCKS answer in time), V(proxy_unavailable), V(auth_required),
          V(protocol_error) (not a SOCKS5 proxy), V(connection_closed), V(connection_lost)."
        - "The service: V(timeout) (no connection or no answer in time), V(not_http), V(http_status) (another
          status), V(body_mismatch)."
      type: str
      sample: descriptor_not_found
    socks_reply:
      description: Tor's SOCKS reply code when it refused the connection (240 is 0xF0); else V(null).
      type: int
      sample: 240
unanswered:
  description:
    - C(address:port) of each target that did not answer, in the order of O(targets); empty when all answered.
    - Not called C(unreachable), which Ansible would take for the host being unreachable.
  returned: always
  type: list
  elements: str
  sample: ["2gzyxa5ihm7nsggfxnu52rck2vv4rvmdlkiu3zzui5du4xyclen53wid.onion:22"]
elapsed:
  description: Seconds the probing took.
  returned: always
  type: float
  sample: 2.51
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.onionlab.tor.plugins.module_utils._common import fail
from ansible_collections.onionlab.tor.plugins.module_utils._tor.probe import (
    ProbeInputError,
    check_seconds,
    parse_target,
    probe,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.socks import SocksProxy

WAIT_DEADLINE = 120.0


def argument_spec():
    return dict(
        targets=dict(type="list", elements="dict", required=True, options=dict(
            address=dict(type="str", required=True),
            port=dict(type="int", default=80),
            mode=dict(type="str", choices=["http", "tcp"], default="http"),
            path=dict(type="str"),
            status=dict(type="list", elements="int"),
            host_header=dict(type="str"),
            body_contains=dict(type="str"),
            timeout=dict(type="float"),
        )),
        socks_host=dict(type="str", default="127.0.0.1"),
        socks_port=dict(type="int"),
        socks_socket=dict(type="path"),
        timeout=dict(type="float", default=30.0),
        deadline=dict(type="float"),
        delay=dict(type="float", default=1.0),
        wait=dict(type="bool", default=False),
    )


class _ProbeModule(AnsibleModule):
    """An AnsibleModule whose message for a target that is not a mapping names the option:
    ansible-core (2.17 to 2.21) reports it, for example a list of bare addresses, by its first
    error, that of its no_log scan: 'dictionary requested, could not parse JSON or key=value'."""

    def fail_json(self, msg, **kwargs):
        checked = getattr(self, "validation_result", None)
        if checked is not None and not getattr(self, "_arguments_read", False):
            if any(str(e).startswith("Elements value for option 'targets'") for e in checked.errors.errors):
                msg = ("targets must be a list of mappings, each with at least an address "
                       "(targets: [{address: <onion address>}]), not of plain values")
        super(_ProbeModule, self).fail_json(msg=msg, **kwargs)


def _settings(module):
    """(proxy, targets, deadline, delay) from the parameters; ProbeInputError on bad input."""
    p = module.params
    if p["socks_socket"] is not None and not p["socks_socket"]:
        raise ProbeInputError("socks_socket must be the path of a unix socket")
    port = 9050 if p["socks_port"] is None else p["socks_port"]
    if not 1 <= port <= 65535:
        raise ProbeInputError("socks_port must be between 1 and 65535, got %d" % port)
    if not p["socks_host"] or not p["socks_host"].strip():
        raise ProbeInputError("socks_host must not be empty")
    timeout = check_seconds(p["timeout"], "timeout")
    deadline = p["deadline"]
    if deadline is None:
        deadline = WAIT_DEADLINE if p["wait"] else 0.0
    deadline = check_seconds(deadline, "deadline", allow_zero=True)
    delay = check_seconds(p["delay"], "delay", allow_zero=True)
    if not p["targets"]:
        raise ProbeInputError("targets must list at least one onion service")
    targets = [parse_target(raw, i, timeout) for i, raw in enumerate(p["targets"])]
    proxy = SocksProxy(p["socks_host"].strip(), port, p["socks_socket"])
    return proxy, targets, deadline, delay


def main():
    module = _ProbeModule(argument_spec=argument_spec(), mutually_exclusive=[("socks_port", "socks_socket")],
                          supports_check_mode=True)
    module._arguments_read = True
    try:
        proxy, targets, deadline, delay = _settings(module)
    except ProbeInputError as exc:
        fail(module, exc, changed=False)
    started = time.monotonic()
    results = probe(proxy, targets, deadline, delay)
    elapsed = round(time.monotonic() - started, 3)
    unanswered = ["%s:%d" % (r["address"], r["port"]) for r in results if not r["reachable"]]
    if module.params["wait"] and unanswered:
        missing = ["%s:%d (%s; %d attempt%s)" % (r["address"], r["port"], r["error"], r["attempts"],
                                                 "" if r["attempts"] == 1 else "s")
                   for r in results if not r["reachable"]]
        module.fail_json(msg="%d of %d onion services did not answer within %gs through %s: %s"
                         % (len(unanswered), len(results), deadline, proxy.where[len("the "):], "; ".join(missing)),
                         changed=False, targets=results, unanswered=unanswered, elapsed=elapsed)
    module.exit_json(changed=False, targets=results, unanswered=unanswered, elapsed=elapsed)


if __name__ == "__main__":
    main()
