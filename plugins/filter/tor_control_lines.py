# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tor role's control lines of the torrc (the rule: _tor/torrc.py's control_lines)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: tor_control_lines
short_description: The tor role's ControlPort, ControlSocket and CookieAuthentication lines
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes the role variable C(tor_control_port) and returns the torrc's control lines.
  - C(ControlPort 127.0.0.1:PORT) when O(_input) is set (tor listens on loopback only).
  - C(ControlSocket PATH GroupWritable RelaxDirModeCheck) when O(control_socket) is set and is not C(/run/tor/control)
    (the packaged tor's own, in Debian's defaults torrc, not repeated).
  - C(CookieAuthentication 1) when O(cookie_authentication) is true as Ansible reads a boolean (V(true), V(yes),
    V(on), V(1), any case), else C(CookieAuthentication 0). M(onionlab.tor.tor_setup)'s action refuses, naming it, a
    value that is not a boolean.
options:
  _input:
    description: C(tor_control_port) (null or empty for none).
    type: raw
    required: true
  control_socket:
    description: C(tor_control_socket).
    type: str
  cookie_authentication:
    description: C(tor_cookie_authentication).
    type: raw
    default: true
"""

EXAMPLES = r"""
- name: The control lines of a tor with a control port and the packaged control socket
  ansible.builtin.debug:
    msg: "{{ 9051 | onionlab.tor.tor_control_lines('/run/tor/control', true) }}"
  # ['ControlPort 127.0.0.1:9051', 'CookieAuthentication 1']
"""

RETURN = r"""
_value:
  description: The torrc lines, in order.
  type: list
  elements: str
"""

from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import DEFAULT_SOCKET


def tor_control_lines(control_port, control_socket=None, cookie_authentication=True):
    return torrc.control_lines(control_port, control_socket, cookie_authentication, DEFAULT_SOCKET)


class FilterModule(object):
    def filters(self):
        return {'tor_control_lines': tor_control_lines}
