# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The torrc's SocksPort lines of the tor role: tor_socks_port's, and a loopback one for the health check's reach
probe when it needs one (tor_health_socks_port); the decision is _tor/torrc.py's socks_lines."""

from __future__ import annotations

DOCUMENTATION = r"""
name: tor_socks_lines
short_description: The tor role's SocksPort lines, with a loopback SocksPort for the health check when it needs one
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes the role variable C(tor_socks_port) and returns the torrc's C(SocksPort) lines.
  - With O(health=auto) a line C(SocksPort 127.0.0.1:auto ExtendedErrors) is added only when no other SocksPort
    (C(tor_socks_port), or one in O(options) or O(config_lines); tor's default 9050 when none is set) listens on
    127.0.0.1 (TCP), and the tor is not in non-anonymous mode (tor refuses a SocksPort there). tor picks a free port;
    the reach probe of M(onionlab.tor.tor_onion_health) and the watchdog finds it with C(GETINFO net/listeners/socks).
  - With a port number, C(SocksPort 127.0.0.1:PORT ExtendedErrors) is added (unless a SocksPort already is that
    port); with V(false) none is added.
  - A C(SocksPort 0) of C(tor_socks_port) is not written when the health line is (tor would read the two together
    as one list of ports).
options:
  _input:
    description: The SocksPort, as C(tor_socks_port) (null for the platform's default).
    type: raw
    required: true
  health:
    description: C(tor_health_socks_port) (V(auto), V(false) or a port number).
    type: raw
    default: auto
  options:
    description: C(tor_options).
    type: dict
    default: {}
  config_lines:
    description: C(tor_config_lines).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: The SocksPort lines of a host that keeps no SocksPort for applications
  ansible.builtin.debug:
    msg: "{{ 0 | onionlab.tor.tor_socks_lines('auto') }}"
  # ['SocksPort 127.0.0.1:auto ExtendedErrors']
"""

RETURN = r"""
_value:
  description: The torrc lines, in order.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc


def tor_socks_lines(socks_port, health='auto', options=None, config_lines=None):
    try:
        return torrc.socks_lines(socks_port, health, options or {}, config_lines or [])[0]
    except ValueError as e:
        raise AnsibleFilterError(str(e))


class FilterModule(object):
    def filters(self):
        return {'tor_socks_lines': tor_socks_lines}
