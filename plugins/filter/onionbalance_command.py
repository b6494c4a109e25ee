# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Onionbalance's command line for the onionbalance role's unit drop-in. The work is
plugin_utils/onionbalance_frontend.py's (command_line); this is its face for the role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onionbalance_command
short_description: Onionbalance's command line (the onionbalance role's ExecStart=)
version_added: 0.2.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Takes Onionbalance's binary and returns its command line, one line: C(-c) O(config_file), then tor's control
    port on 127.0.0.1 when O(control_port) is not null (C(-i 127.0.0.1 -p) O(control_port), and C(-s) a socket under
    O(config_dir) that is never there, so that Onionbalance does not take a socket first) or tor's control socket
    (C(-s) O(control_socket)), then C(-v) O(log_level), and C(--is-testnet) when O(testnet) is true."
  - Every run of whitespace is one space and none is at the ends. The P(onionlab.tor.onionbalance#role) role's
    variables are checked to be one word each (P(onionlab.tor.config_values#filter)) before its unit is written.
options:
  _input:
    description: Onionbalance's binary (C(onionbalance_binary)).
    type: path
    required: true
  config_file:
    description: Onionbalance's configuration file (C(onionbalance_config_file)).
    type: path
    required: true
  config_dir:
    description: Onionbalance's configuration directory (C(onionbalance_config_dir)).
    type: path
    required: true
  control_socket:
    description: Tor's control socket (C(onionbalance_control_socket)), used when O(control_port) is null.
    type: path
    required: true
  control_port:
    description: Tor's control port on 127.0.0.1, or null (C(onionbalance_control_port)).
    type: raw
    required: true
  log_level:
    description: Onionbalance's log level (C(onionbalance_log_level)).
    type: str
    required: true
  testnet:
    description: Whether tor is on a test network (C(onionbalance_testnet)); any true value.
    type: raw
    required: true
seealso:
  - plugin: onionlab.tor.config_values
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Onionbalance's unit drop-in
  ansible.builtin.copy:
    content: |
      [Service]
      ExecStart=
      ExecStart={{ '/usr/sbin/onionbalance' | onionlab.tor.onionbalance_command(config_file='/etc/onionbalance/config.yaml',
        config_dir='/etc/onionbalance', control_socket='/run/tor/control', control_port=none, log_level='warning',
        testnet=false) }}
    dest: /etc/systemd/system/onionbalance.service.d/onionlab.conf
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The command line, e.g. C(/usr/sbin/onionbalance -c /etc/onionbalance/config.yaml -s /run/tor/control -v warning).
  type: str
"""

from ansible_collections.onionlab.tor.plugins.plugin_utils import onionbalance_frontend as model


def onionbalance_command(binary, config_file, config_dir, control_socket, control_port, log_level, testnet):
    """The filter's face of plugin_utils/onionbalance_frontend.command_line."""
    return model.command_line(binary, config_file, config_dir, control_socket, control_port, log_level, testnet)


class FilterModule(object):
    def filters(self):
        return {"onionbalance_command": onionbalance_command}
