# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the onionbalance role's frontend key command said. The work is plugin_utils/onionbalance_frontend.py's
(key_result); this is its face for the role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onionbalance_key_result
short_description: The onionbalance role's frontend key command read (changed, usable, its message, the key's facts)
version_added: 0.2.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Takes the registered result of the task that runs the command of the P(onionlab.tor.onionbalance_key_command#filter)
    filter (C(rc), C(stdout), C(stderr_lines)) and returns C(changed) (the C(changed) of the JSON object the script
    prints), C(ok) (it exited 0 with that object, not a failure), C(msg) (the message when not C(ok),
    C(onionbalance:) then the script's C(msg), else that O(python) could not run it with stderr's last line) and
    C(key) (when C(ok), the P(onionlab.tor.onionbalance#role) role's fact C(onionbalance_key), else null)."
  - C(key) holds C(changed), C(generated), C(restored) and C(onion_address) (null in check mode when a new key would
    be made) and nothing else; the script never prints a key.
options:
  _input:
    description: The registered result of the frontend key command's task.
    type: dict
    required: true
  python:
    description: The python that ran the script (C(onionbalance_python)), for the message.
    type: path
    required: true
seealso:
  - plugin: onionlab.tor.onionbalance_key_command
    plugin_type: filter
"""

EXAMPLES = r"""
- name: The frontend key is usable
  ansible.builtin.assert:
    that: outcome.ok
    fail_msg: "{{ outcome.msg }}"
  vars:
    outcome: "{{ key_run | onionlab.tor.onionbalance_key_result(python='/usr/bin/python3') }}"
"""

RETURN = r"""
_value:
  description: C(changed), C(ok) (booleans), C(msg) (a string) and C(key) (a dict, or null when not C(ok)).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.plugin_utils import onionbalance_frontend as model


def onionbalance_key_result(result, python):
    """The filter's face of plugin_utils/onionbalance_frontend.key_result."""
    try:
        return model.key_result(result, python)
    except model.FrontendError as err:
        raise AnsibleFilterError("onionbalance_key_result: %s" % err)


class FilterModule(object):
    def filters(self):
        return {"onionbalance_key_result": onionbalance_key_result}
