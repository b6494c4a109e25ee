# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The torrc lines of tor's MetricsPort and its policy, checked (the tor role's tor_metrics_port)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: tor_metrics_lines
short_description: The torrc lines of a MetricsPort and a strict MetricsPortPolicy
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes the role variable C(tor_metrics_port) and returns the torrc lines C(MetricsPort ADDRESS:PORT), one
    C(MetricsPortPolicy accept NETWORK) per entry of O(policy), and C(MetricsPortPolicy reject *).
  - The port is a number (then on C(127.0.0.1)), or an IP address and port as in torrc (C(10.0.0.5:9035),
    C([fd00::5]:9035)). Host names are refused (tor binds an address).
  - Refused, each with one message naming the fix - a policy entry that is not an IP address or network; one that
    opens the port to everyone (C(*), C(0.0.0.0/0), C(::/0)) unless O(allow_everyone); a MetricsPort on an address
    other than loopback whose policy admits only loopback (no other host could read it).
  - An empty, null or C(0) port gives no lines (no MetricsPort).
options:
  _input:
    description: The MetricsPort, as C(tor_metrics_port).
    type: raw
    required: true
  policy:
    description: The addresses or networks that may read the port (C(tor_metrics_port_policy)).
    type: list
    elements: str
    default: ['127.0.0.1']
  allow_everyone:
    description: Allow a policy entry that admits every address (C(tor_metrics_port_allow_everyone)).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: torrc lines for a MetricsPort read by Prometheus on 10.0.0.2
  ansible.builtin.debug:
    msg: "{{ '10.0.0.5:9035' | onionlab.tor.tor_metrics_lines(['10.0.0.2']) }}"
  # ['MetricsPort 10.0.0.5:9035', 'MetricsPortPolicy accept 10.0.0.2/32', 'MetricsPortPolicy reject *']
"""

RETURN = r"""
_value:
  description: The torrc lines, in order.
  type: list
  elements: str
"""

import ipaddress
import re

from ansible.errors import AnsibleFilterError

_PORT = re.compile(r'^(?:(\d{1,3}(?:\.\d{1,3}){3})|\[([0-9A-Fa-f:.]+)\])?:?(\d{1,5})\Z')
_EVERYONE = ('*', '*4', '*6')


def _fail(msg):
    raise AnsibleFilterError('tor_metrics_port: ' + msg)


def _address(port):
    """(ipaddress, port) of tor_metrics_port."""
    if isinstance(port, bool):
        _fail('must be a port (9035) or an IP address and port (10.0.0.5:9035, [fd00::5]:9035), got %r' % (port,))
    text = str(port).strip()
    match = _PORT.match(text)
    if not match or (':' in text) != bool(match.group(1) or match.group(2)):
        _fail('must be a port (9035) or an IP address and port (10.0.0.5:9035, [fd00::5]:9035) as in torrc; '
              'a host name is not accepted (tor binds an address), got %r' % (port,))
    try:
        addr = ipaddress.ip_address(match.group(1) or match.group(2) or '127.0.0.1')
    except ValueError:
        _fail('%r is not an IP address' % (match.group(1) or match.group(2)))
    number = int(match.group(3))
    if not 1 <= number <= 65535:
        _fail('the port must be between 1 and 65535, got %d' % number)
    return addr, number


def _network(entry, allow_everyone):
    if not isinstance(entry, str) or not entry.strip():
        _fail('tor_metrics_port_policy entries are IP addresses or networks (127.0.0.1, 10.0.0.0/24, fd00::/64), '
              'got %r' % (entry,))
    text = entry.strip()
    if '%' in text:
        # Python's ipaddress takes an IPv6 zone (fe80::%eth0/64) with any text in it, a newline or a # too, and
        # writes it back into the MetricsPortPolicy line; tor takes none
        _fail('tor_metrics_port_policy entries are IP addresses or networks without an IPv6 zone (the %%... part), '
              'got %r' % (entry,))
    if text in _EVERYONE:
        if not allow_everyone:
            _fail('tor_metrics_port_policy %r lets every address read the MetricsPort (what your onion services '
                  'do, their circuits and PoW effort); list the addresses of your Prometheus instead, or set '
                  'tor_metrics_port_allow_everyone: true' % text)
        return text
    try:
        net = ipaddress.ip_network(text.strip('[]') if '/' not in text else
                                   text.replace('[', '').replace(']', ''), strict=False)
    except ValueError:
        _fail('tor_metrics_port_policy entries are IP addresses or networks without accept/reject or ports '
              '(127.0.0.1, 10.0.0.0/24, fd00::/64), got %r' % (entry,))
    if net.prefixlen == 0 and not allow_everyone:
        _fail('tor_metrics_port_policy %r lets every address read the MetricsPort (what your onion services do, '
              'their circuits and PoW effort); list the addresses of your Prometheus instead, or set '
              'tor_metrics_port_allow_everyone: true' % text)
    return net


def tor_metrics_lines(port, policy=None, allow_everyone=False):
    if port is None or (isinstance(port, str) and not port.strip()) or (port == 0 and not isinstance(port, bool)):
        return []
    addr, number = _address(port)
    if policy is None:
        policy = ['127.0.0.1']
    if isinstance(policy, str) or not isinstance(policy, (list, tuple)):
        _fail('tor_metrics_port_policy must be a list of addresses or networks, got %r' % (policy,))
    if not policy:
        _fail('tor_metrics_port_policy is empty: nobody could read the MetricsPort; list the addresses of your '
              'Prometheus (127.0.0.1 when it runs on this host)')
    nets = [_network(entry, allow_everyone) for entry in policy]
    if not addr.is_loopback and all(not isinstance(n, str) and n.subnet_of(
            ipaddress.ip_network('127.0.0.0/8' if n.version == 4 else '::1/128')) for n in nets):
        _fail('the MetricsPort listens on %s but tor_metrics_port_policy admits only loopback, so no other host '
              'could read it; add your Prometheus address to tor_metrics_port_policy, or use port %d alone '
              '(127.0.0.1)' % (addr, number))
    host = '[%s]' % addr if addr.version == 6 else str(addr)
    lines = ['MetricsPort %s:%d' % (host, number)]
    for n in nets:
        if isinstance(n, str):
            lines.append('MetricsPortPolicy accept %s' % n)
        elif n.version == 6:
            lines.append('MetricsPortPolicy accept [%s]/%d' % (n.network_address, n.prefixlen))
        else:
            lines.append('MetricsPortPolicy accept %s' % n)
    lines.append('MetricsPortPolicy reject *')
    return lines


class FilterModule(object):
    def filters(self):
        return {'tor_metrics_lines': tor_metrics_lines}
