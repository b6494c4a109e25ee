# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The command that runs the onionbalance role's files/frontend_key.py on the frontend host. The work is
plugin_utils/onionbalance_frontend.py's (key_command); this is its face for the role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onionbalance_key_command
short_description: The onionbalance role's frontend key command (argv, stdin with the keys, whether to hide it)
version_added: 0.2.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Takes the text of the P(onionlab.tor.onionbalance#role) role's C(files/frontend_key.py) and returns C(argv), the
    command's words (O(python) C(-c) the script, O(key_file), C(check) or C(apply), O(user), O(group), O(host),
    O(escrow_key), C(restore) or C(no-restore), C(stdin) or C(no-stdin)), C(stdin), the JSON object of the keys
    (C(vault), O(private_key) when not empty; C(escrow), the escrowed key file's base64 when the escrow holds one),
    or an empty string when there is neither, and C(no_log), true when O(private_key) is set or an escrowed key
    exists."
  - C(stdin) holds the keys. Use the result only in the task that runs the command, with C(no_log) set from
    C(no_log) (the role passes it as that task's variable); never set it as a fact.
  - Pass C(stdin) through the C(string) filter before C(default) with C(omit) (see the example); ansible-core 2.17 and
    2.18 would otherwise read the JSON text back into a mapping and send its Python form.
options:
  _input:
    description: The text of C(files/frontend_key.py) (the role's file lookup).
    type: str
    required: true
  python:
    description: The python with Onionbalance's libraries (C(onionbalance_python)).
    type: path
    required: true
  key_file:
    description: The frontend's key file on the host (C(onionbalance_key_file)).
    type: path
    required: true
  check_mode:
    description: Whether the run is in check mode (C(ansible_check_mode)); the script then writes nothing.
    type: bool
    required: true
  user:
    description: The owner of a key file written (C(onionbalance_user)).
    type: str
    required: true
  group:
    description: The group of a key file written (C(onionbalance_group)).
    type: str
    required: true
  host:
    description: The host's name, for the messages (C(inventory_hostname)).
    type: str
    required: true
  escrow_key:
    description: The escrowed key file's path on the controller, for the messages (C(onionbalance_escrow_key)).
    type: path
    required: true
  restore:
    description: Whether the escrowed key is restored where the host has none (C(onionbalance_restore)), read as
      Ansible's C(bool) filter reads it.
    type: raw
    required: true
  private_key:
    description: The vault's frontend key, C(ED25519-V3:<base64>), or null (C(onionbalance_private_key)).
    type: str
    required: true
  escrow_read:
    description: The registered result of the role's C(onionlab.tor.onionbalance_escrow) read (C(exists), C(content)).
    type: dict
    required: true
seealso:
  - plugin: onionlab.tor.onionbalance_key_result
    plugin_type: filter
"""

EXAMPLES = r"""
- name: The frontend key, checked before anything is written
  ansible.builtin.command:
    argv: "{{ key_command.argv }}"
    stdin: "{{ key_command.stdin | string | default(omit, true) }}"
  vars:
    key_command: >-
      {{ lookup('ansible.builtin.file', 'frontend_key.py') | onionlab.tor.onionbalance_key_command(
         python='/usr/bin/python3', key_file='/etc/onionbalance/private_keys/frontend.key',
         check_mode=ansible_check_mode, user='onionbalance', group='onionbalance', host=inventory_hostname,
         escrow_key='/srv/keys/onionbalance/frontend/hs_ed25519_secret_key', restore=true,
         private_key=vault_frontend_key, escrow_read=escrow_read) }}
  register: key_run
  check_mode: false
  failed_when: false
  no_log: "{{ key_command.no_log }}"
"""

RETURN = r"""
_value:
  description: C(argv) (a list), C(stdin) (a string holding the keys, or empty) and C(no_log) (a boolean).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.plugin_utils import onionbalance_frontend as model


def onionbalance_key_command(script, python, key_file, check_mode, user, group, host, escrow_key, restore,
                             private_key, escrow_read):
    """The filter's face of plugin_utils/onionbalance_frontend.key_command (its messages never hold a value)."""
    if not isinstance(script, str) or not script:
        raise AnsibleFilterError("onionbalance_key_command: the input must be the text of files/frontend_key.py")
    try:
        return model.key_command(script, python, key_file, check_mode, user, group, host, escrow_key, restore,
                                 private_key, escrow_read)
    except model.FrontendError as err:
        raise AnsibleFilterError("onionbalance_key_command: %s" % err)


class FilterModule(object):
    def filters(self):
        return {"onionbalance_key_command": onionbalance_key_command}
