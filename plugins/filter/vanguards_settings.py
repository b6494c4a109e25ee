# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_vanguards role's variables, checked, and what its templates write from them. The work is
plugin_utils/vanguards.py's; this is its face for the role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: vanguards_settings
short_description: The onion_vanguards role's variables, checked, and what its templates write from them
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes the P(onionlab.tor.onion_vanguards#role) role's variables (a mapping of their names without the
    C(onion_vanguards_) prefix, with the role's C(state_dir), C(config_file) and C(bandguards)) and, when each is one
    the addon's configuration and unit can be written from, returns what they write that is not a variable as given
    (see RV(_value)); otherwise fails with one message naming every wrong variable, what it must be and what it was.
  - Checked - the instance name (1-40 letters, digits, C(_), C(-)), tor's unit (a systemd service name), the guard
    counts (at least 1) and circuit limits (at least 0), tor's control socket or control port (exactly one; a port
    1-65535 with an IP address), the virtualenv (an absolute path), the versions, and C(extra_config) (sections
    C(Vanguards), C(Bandguards), C(Rendguard); keys of lower-case letters, digits and C(_) other than the ones the
    role sets itself; one-line values), C(state_dir) and C(config_file) (absolute paths), C(bandguards) (a
    boolean).
  - That each value stays one value of its file is the filter P(onionlab.tor.config_values#filter)'s check.
options:
  _input:
    description: The role's variables without the prefix.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The role's variables, checked (fails naming onion_vanguards_num_layer2_guards)
  ansible.builtin.debug:
    msg: "{{ {'instance': 'default', 'tor_unit': 'tor@default.service', 'num_layer2_guards': 0}
             | onionlab.tor.vanguards_settings }}"
"""

RETURN = r"""
_value:
  description: What the addon's configuration and unit write from the variables.
  type: dict
  contains:
    state_directory:
      description: The unit's C(StateDirectory=), C(state_dir) without its leading C(/var/lib/).
      type: str
    exec_args:
      description: The addon's arguments in the unit's C(ExecStart=), C(--config) with C(config_file), and
        C(--disable_bandguards) when C(bandguards) is false.
      type: str
    control_lines:
      description: The C([Global]) lines of tor's control port (C(control_ip), C(control_port), an empty
        C(control_socket)) when C(control_port) is set, else of its C(control_socket).
      type: list
      elements: str
    extra_lines:
      description: Section (C(Vanguards), C(Bandguards), C(Rendguard)) to the C(key = value) lines of
        C(extra_config), sorted by key; an empty list for a section it does not add to.
      type: dict
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.onionlab.tor.plugins.plugin_utils import vanguards


def vanguards_settings(role_vars):
    """The filter's face of plugin_utils/vanguards."""
    if not isinstance(role_vars, dict):
        raise AnsibleFilterError("onion_vanguards: vanguards_settings takes a mapping of the role's variables")
    try:
        return vanguards.plan(role_vars)
    except vanguards.SettingsError as exc:
        raise AnsibleFilterError("onion_vanguards: %s" % to_native(exc))


class FilterModule(object):
    def filters(self):
        return {"vanguards_settings": vanguards_settings}
