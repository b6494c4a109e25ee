#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tor_onion_health
short_description: The onion services of a tor as the network sees them, one verdict each
version_added: 0.2.0
description:
  - For each onion service of the local tor (all of them, or those in O(addresses)), through its control port or
    socket, reads the service's own side and asks the network for it.
  - "The service's own side: the descriptor tor built (C(GETINFO hs/service/desc/id/<id>)): its revision counter,
    lifetime, and the time period its blinded key is for."
  - "The network's side: the HSDirs responsible for the service in the current time period, computed as tor does
    (rend-spec-v3's hash ring from the consensus and the microdescriptors tor holds: time period, shared random
    value, each HSDir's index, the service's key blinded for the period), each asked for the descriptor with one
    C(HSFETCH ... SERVER=); their answers come from C(HS_DESC) and C(HS_DESC_CONTENT) events: the revision each
    serves, C(NOT_FOUND), another failure with tor's reason, or no answer within O(fetch_timeout); and how long each
    took."
  - "One verdict per service: V(healthy), V(unhealthy) with the reasons in words (C(2 of 6 responsible HSDirs hold
    the current descriptor ...)), or V(pending) when there is nothing to judge yet: tor has not built the
    service's descriptor (just started), has no live consensus, or is bootstrapping."
  - The current revision is tor's own descriptor's when it is the one clients fetch now; around a change of time
    period, when tor's current descriptor is still the previous period's, it is the newest an HSDir serves
    (C(compared_with) in RV(services[].descriptor) says which).
  - "Beside the verdict, which stays about reachability: whether a service port's backend can also be found from
    the clearnet. The classic way an onion site is located is its backend answering on the host's public address
    too (a scanner matches the page, the TLS certificate or the SSH key; OnionScan checks exactly this). A port
    whose target is a unix socket is never exposed; one whose target is on a loopback address (127.0.0.0/8, C(::1))
    is exposed when its target port also listens on C(0.0.0.0), C(::) or a non-loopback address of tor's host
    (C(/proc/PID/net/tcp) and C(tcp6) of tor's process, so tor's network namespace); a target that is not a loopback
    address is exposed itself. Each exposed port is one module warning and an entry of RV(services[].exposed); the
    fix is to bind the backend to 127.0.0.1 or a unix socket."
  - "That check runs whatever tor's bootstrap (a V(pending) service is checked too). It is only possible on tor's
    host: when tor is reached over the network (its process is not on this host) RV(exposure) says so and no
    service is checked. tor does not give an ephemeral service's targets: one made by
    M(onionlab.tor.tor_hidden_service) is checked from the collection's record, others are not
    (RV(services[].exposure_problem))."
  - "The verdict has layers, each in RV(services[].layers) with its evidence and the seconds it took, and a service
    is V(healthy) only when every layer checked is: C(tor) (the control port answered), C(backend) (each port's
    target accepts a connection on this host), C(descriptor) (the HSDirs, as above), C(introduction) (the service
    side's established introduction circuits from C(GETINFO circuit-status), their count, age, and relays in the
    consensus and Running) and C(reach) (a client got through: below). The reasons name the failed layers first,
    then the others (C(reach: 0 of 3 fresh connections to port 80 in 60 s, SOCKS error 0xF2 introduction failed;
    backend: 127.0.0.1:8080 accepts; descriptor: 6 of 6 ...)); RV(services[].failed_layer) is the first that
    failed, in the order tor, backend, descriptor, introduction, reach."
  - "Reach: up to O(reach_attempts) connections within O(reach_timeout) seconds, as a fresh client through a
    SocksPort of the same tor on 127.0.0.1 (C(GETINFO net/listeners/socks)): tor's client side fetches the
    descriptor from the HSDirs and introduces itself like any client. Each attempt has a fresh random SOCKS
    username and password (IsolateSOCKSAuth: new circuits), and one C(SIGNAL NEWNYM) before them empties tor's
    client-side descriptor cache, so that the descriptor is fetched anew (new SOCKS credentials alone reuse the
    cached one; tor delays a NEWNYM within 10 seconds of the last, then the cached descriptor is used:
    C(descriptor_fetches) says which). The port probed is one the service configures: the first of O(web_ports)
    it has, with an HTTP GET of C(/) (any HTTP status is an answer and is reported; 443 over TLS, the certificate
    not verified), else its lowest port, a TCP connection. Without such a SocksPort the reach layer says it was not
    checked (C(ok) V(null)) and the verdict rests on the other layers; so it does for a service with client
    authorization when the tor's client side holds no key for it (C(ONION_CLIENT_AUTH_VIEW)). NEWNYM also moves this tor's other clients
    to new circuits."
  - "When the control port does not answer within O(timeout), the module fails with RV(tor): C(state) V(hung) when
    tor's process lives (found as the owner of the control port's listening socket in C(/proc), which takes root
    for another user's process), else V(unreachable)."
  - Nothing is changed on tor (its client cache holds the fetched descriptors afterwards, and the reach layer sends
    NEWNYM); C(changed) is always V(false) and check mode runs the same check.
author:
  - onionlab.tor contributors (@onionlab)
options:
  addresses:
    description:
      - The services to check (v3 onion addresses, with or without C(.onion)); each must be a service of this tor.
      - Not given, every service of this tor whose address is known.
    type: list
    elements: str
  fetch_timeout:
    description:
      - Seconds to wait for the HSDirs' answers to one service, counted from the moment it is asked.
      - At most 24 HSDirs are asked at a time (three services' worth); each fetch is a circuit of tor's client side,
        which holds at most 32 pending.
    type: float
    default: 30.0
  min_hsdirs:
    description:
      - How many of the HSDirs clients ask (the first C(hsdir_spread_fetch) of each replica) must hold the current
        descriptor for the service to be healthy.
      - Not given, half of them, rounded up.
    type: int
  layers:
    description:
      - The layers to check beside C(tor) and C(descriptor), which always are.
    type: list
    elements: str
    choices: [backend, introduction, reach]
    default: [backend, introduction, reach]
  reach_timeout:
    description: Seconds for the reach layer's attempts at each service, counted from its turn (4 services are probed
      at a time).
    type: float
    default: 60.0
  reach_attempts:
    description: How many fresh connections the reach layer tries at most, until one answers.
    type: int
    default: 3
  web_ports:
    description:
      - The service ports probed with HTTP (443 over TLS), in the order of preference; a service with none of them
        is probed with a TCP connection to its lowest port.
    type: list
    elements: int
    default: [80, 443]
  reach_ports:
    description:
      - The port the reach layer probes for a service, by its address (with or without C(.onion)), instead of its
        choice from O(web_ports); it must be a port the service configures. HTTP when it is one of O(web_ports),
        else a TCP connection.
    type: dict
extends_documentation_fragment:
  - onionlab.tor.control
  - onionlab.tor.attributes
  - onionlab.tor.attributes.INFO_MODULE
  - onionlab.tor.attributes.ACTIONGROUP_TOR
notes:
  - "The service's own tor asks the HSDirs, over its own circuits: an HSDir it cannot reach shows as V(failed) or
    V(no_answer), which says as much about this tor's circuits as about the service."
  - "Services with client authorization are checked like the others: the outer layer of a descriptor, which holds
    the revision counter, is readable without a client key."
seealso:
  - module: onionlab.tor.tor_onion_probe
    description: Reach the services through a SocksPort, as a client does.
  - name: rend-spec-v3, the hash ring
    description: How the HSDirs of a descriptor are chosen.
    link: https://spec.torproject.org/rend-spec/deriving-keys.html
"""

EXAMPLES = r"""
- name: How the network sees this host's onion services
  onionlab.tor.tor_onion_health:
  become: true
  register: health

- name: Stop when a service is unreachable from the network
  ansible.builtin.assert:
    that: health.healthy
    fail_msg: "{{ health.services | selectattr('state', 'eq', 'unhealthy') | map(attribute='reasons') | list }}"

- name: Stop when a backend answers on a non-loopback address too (a scan of the host finds it)
  ansible.builtin.assert:
    that: health.exposed | length == 0
    fail_msg: "{{ health.services | map(attribute='exposed') | select | flatten }}"

- name: Say which layer failed (backend, descriptor, introduction, reach)
  ansible.builtin.debug:
    msg: "{{ item.address }}: {{ item.failed_layer }}: {{ item.reasons[0] }}"
  loop: "{{ health.services | selectattr('state', 'eq', 'unhealthy') }}"

- name: One service, at least 4 of the HSDirs clients ask holding its descriptor
  onionlab.tor.tor_onion_health:
    control_port: 9051
    addresses: [pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscryd.onion]
    min_hsdirs: 4
"""

RETURN = r"""
healthy:
  description: No service is unhealthy (pending ones aside).
  returned: success
  type: bool
unhealthy:
  description: The addresses of the unhealthy services.
  returned: success
  type: list
  elements: str
pending:
  description: The addresses of the services with nothing to judge yet.
  returned: success
  type: list
  elements: str
exposed:
  description: The addresses of the services with a port whose backend also listens on a non-loopback address
    (each port is a warning too).
  returned: success
  type: list
  elements: str
exposure:
  description: Whether the listening sockets of tor's host could be read (C(checked)), and why not (C(problem),
    for instance tor reached over the network).
  returned: success
  type: dict
  sample: {"checked": true, "problem": null}
period:
  description: The time period of tor's consensus (V(null) without a live consensus).
  returned: success
  type: dict
  contains:
    number:
      description: The time period number.
      type: int
    length_minutes:
      description: Its length in minutes (a day on the Tor network; one SRV run on a testing network).
      type: int
    srv:
      description: The shared random value of the ring, V(current), V(previous) or V(disaster) (none in the consensus).
      type: str
network:
  description: What the ring was made of, or C(problem) when there is none.
  returned: success
  type: dict
  sample: {"valid_after": "2026-12-04T16:46:45Z", "hsdirs": 6, "replicas": 2, "spread_fetch": 3, "spread_store": 4}
services:
  description: One entry per service checked.
  returned: success
  type: list
  elements: dict
  contains:
    address:
      description: The onion address.
      type: str
    path:
      description: Its directory (V(null) for an ephemeral service).
      type: str
    type:
      description: V(persistent) or V(ephemeral).
      type: str
    state:
      description: V(healthy), V(unhealthy) or V(pending).
      type: str
    healthy:
      description: V(true), V(false), or V(null) when pending.
      type: bool
    reasons:
      description: The verdict in words.
      type: list
      elements: str
    descriptor:
      description: Tor's own descriptor (C(built), C(revision), C(lifetime_minutes), C(for_period)) and the revision
        the HSDirs were compared with (C(current_revision), C(compared_with)).
      type: dict
    counts:
      description: How many responsible HSDirs hold the current revision, an older, a newer one, answer NOT_FOUND
        (C(missing)), failed otherwise, or gave no answer in time.
      type: dict
      sample: {"responsible": 6, "current": 2, "older": 0, "newer": 0, "missing": 4, "failed": 0, "no_answer": 0}
    hsdirs:
      description: Each responsible HSDir (C(fingerprint), C(nickname), C(replica), C(client_fetches)) and its
        answer (C(result), C(revision), tor's C(reason), C(seconds) since the fetch began).
      type: list
      elements: dict
    exposed:
      description:
        - Each port whose backend can also be found from the clearnet; V([]) when none, V(null) when not checked
          (see C(exposure_problem)).
        - C(port) is the service's port, C(target) where tor forwards it (C(ADDRESS:PORT)), C(listening_on) the
          non-loopback addresses the target port also listens on (or the target itself when it is not a loopback
          address).
      type: list
      elements: dict
      sample: [{"port": 80, "target": "127.0.0.1:8080", "listening_on": ["0.0.0.0:8080"]}]
    exposure_problem:
      description: Why the service's ports were not checked (V(null) when they were).
      type: str
    failed_layer:
      description: The first layer that failed (V(tor), V(backend), V(descriptor), V(introduction), V(reach)); V(null)
        when none did (or the service is pending).
      type: str
    layers:
      description:
        - Each layer checked, with C(ok) (V(true), V(false), or V(null) when it was not checked, C(evidence) saying
          why), C(evidence) in words and C(seconds) it took. A pending service has C(tor), C(backend) and
          C(descriptor) only.
      type: dict
      contains:
        tor:
          description: The control port answered (C(state) V(answering)).
          type: dict
        backend:
          description: C(ports), each with C(port), C(target) (C(HOST:PORT) or C(unix:PATH)), C(ok) and C(error).
          type: dict
        descriptor:
          description: The HSDirs' verdict (the counts are in RV(services[].counts)).
          type: dict
        introduction:
          description: C(established) introduction circuits against C(configured) (per descriptor; tor keeps a set
            for its current and its next descriptor), and C(circuits), each with C(id), C(relay) (fingerprint),
            C(nickname), C(age_seconds), C(in_consensus) and C(running) (V(null) when tor has no consensus).
          type: dict
        reach:
          description: C(port) probed, C(socks_port), C(attempts) (each with C(reachable), C(status) (HTTP),
            C(reason), C(error), C(socks_reply), C(seconds)) and C(descriptor_fetches) (HS_DESC REQUESTED events of
            the service while they ran).
          type: dict
      sample:
        tor: {"ok": true, "evidence": "the control port answered in 0.002 s", "seconds": 0.002, "state": "answering"}
        backend: {"ok": false, "evidence": "127.0.0.1:8080 refuses (Connection refused; port 80)", "seconds": 0.0,
                  "ports": [{"port": 80, "target": "127.0.0.1:8080", "ok": false, "error": "Connection refused"}]}
        reach: {"ok": false, "evidence": "0 of 3 fresh connections to port 80 in 4 s, SOCKS error 0x01 general
          failure; the descriptor fetched anew from the HSDirs 1 time", "seconds": 4.1, "port": 80}
tor:
  description: Only when the control port did not answer (the module failed); C(state) V(hung) (tor's process, C(pid),
    lives) or V(unreachable), C(evidence), C(process_state) (V(T) stopped, ...), C(found_by).
  returned: failure
  type: dict
  sample: {"ok": false, "state": "hung", "pid": 4242, "process_state": "T", "evidence": "tor's process 4242 (tor,
    stopped by a signal) lives but its control port does not answer: tor at 127.0.0.1:9051 did not answer within
    10.0s"}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.onionlab.tor.plugins.module_utils._common import (
    MODULE_ERRORS,
    connect_module,
    control_argument_spec,
    fail,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor import health_layers, onion, onion_health
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import DEFAULT_SOCKET
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import ConnectionFailed, ControlTimeout


def main():
    module = AnsibleModule(argument_spec=control_argument_spec(
        addresses=dict(type="list", elements="str"),
        fetch_timeout=dict(type="float", default=onion_health.DEFAULT_TIMEOUT),
        min_hsdirs=dict(type="int"),
        layers=dict(type="list", elements="str", choices=list(health_layers.OPTIONAL_LAYERS),
                    default=list(health_layers.OPTIONAL_LAYERS)),
        reach_timeout=dict(type="float", default=onion_health.REACH_TIMEOUT),
        reach_attempts=dict(type="int", default=onion_health.REACH_ATTEMPTS),
        web_ports=dict(type="list", elements="int", default=list(onion_health.WEB_PORTS)),
        reach_ports=dict(type="dict"),
    ), mutually_exclusive=[("control_port", "control_socket")], supports_check_mode=True)
    p = module.params
    if p["fetch_timeout"] <= 0:
        module.fail_json(msg="fetch_timeout must be a positive number of seconds, got %s" % p["fetch_timeout"])
    if p["min_hsdirs"] is not None and p["min_hsdirs"] < 1:
        module.fail_json(msg="min_hsdirs must be at least 1, got %d" % p["min_hsdirs"])
    if p["reach_timeout"] <= 0:
        module.fail_json(msg="reach_timeout must be a positive number of seconds, got %s" % p["reach_timeout"])
    if not 1 <= p["reach_attempts"] <= 20:
        module.fail_json(msg="reach_attempts must be between 1 and 20, got %d" % p["reach_attempts"])
    bad = [port for port in p["web_ports"] if not 1 <= port <= 65535]
    if bad:
        module.fail_json(msg="web_ports must be ports between 1 and 65535, got %s" % bad[0])
    reach_ports = {}
    for address, port in (p["reach_ports"] or {}).items():
        try:
            onion.parse_onion_address(address)
        except ValueError as exc:
            module.fail_json(msg="reach_ports: %s" % exc)
        if isinstance(port, str) and port.isdigit():
            port = int(port)
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            module.fail_json(msg="reach_ports: the port of %s must be a number between 1 and 65535, got %r"
                                 % (address, port))
        reach_ports[address] = port
    for address in p["addresses"] or []:
        try:
            onion.parse_onion_address(address)
        except ValueError as exc:
            module.fail_json(msg="addresses: %s" % exc)
    try:
        with connect_module(module) as ctl:
            result = onion_health.check(ctl, addresses=p["addresses"], timeout=p["fetch_timeout"],
                                        min_hsdirs=p["min_hsdirs"], layers=p["layers"],
                                        reach_timeout=p["reach_timeout"], reach_attempts=p["reach_attempts"],
                                        web_ports=p["web_ports"], reach_ports=reach_ports)
    except ConnectionFailed as exc:
        # the control port did not answer (or not in time): is tor's process alive (hung) or gone?
        tor = health_layers.tor_unanswered(str(exc), control_port=p["control_port"],
                                           control_socket=p["control_socket"] or (
                                               None if p["control_port"] else DEFAULT_SOCKET),
                                           pid_file=None if p["control_port"] else "/run/tor/tor.pid",
                                           timed_out=isinstance(exc, ControlTimeout))
        fail(module, exc, msg="tor %s: %s" % (tor["state"], tor["evidence"]), changed=False, tor=tor)
    except MODULE_ERRORS as exc:
        fail(module, exc, changed=False)
    for warning in onion_health.exposure_warnings(result):
        module.warn(warning)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
