#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: onionbalance_escrow
short_description: The Onionbalance frontend key in the controller's escrow, sealed with ansible-vault
version_added: 0.2.0
description:
  - The P(onionlab.tor.onionbalance#role) role's frontend key in the controller's escrow,
    O(backup_dir)C(/onionbalance/)O(name)C(/hs_ed25519_secret_key) with its C(hostname) beside it (an action plugin;
    nothing runs on a host). The escrow's one layout and writer, shared with the
    P(onionlab.tor.onion_service#role) role (files 0600 in 0700 directories, nothing read or made through a link).
  - Whenever the run has a vault password the key is written sealed with ansible-vault (the vault id O(vault_id), else
    the run's first) and read back opened; an older plaintext key is sealed by the next run that reads it (not in
    check mode). Without a vault password, a write inside a git work tree whose git does not ignore O(backup_dir) is
    refused unless O(plaintext), as the onion_service role does.
  - With O(state=read) the result holds the key (RV(content)), so use C(no_log) on the task; a key that cannot be read
    (a wrong or missing vault password) is said in RV(problem), and the task does not fail, so that a task after it
    can show the message.
  - With O(state=write) the key is escrowed where none is, and never over another key (a different escrowed key fails
    the task, naming both addresses, never a key).
author:
  - onionlab.tor contributors (@onionlab)
extends_documentation_fragment:
  - onionlab.tor.attributes
  - onionlab.tor.attributes.ACTION
attributes:
  check_mode:
    support: full
    details:
      - Reads; writes nothing.
  diff_mode:
    support: none
options:
  backup_dir:
    description: The escrow (the role's C(onionbalance_backup_dir)).
    type: path
    required: true
  name:
    description: The frontend's name (C(onionbalance_name)), its directory in the escrow.
    type: str
    required: true
  state:
    description: V(read) the escrowed key, or V(write) O(key) to the escrow.
    type: str
    choices: [read, write]
    default: read
  key:
    description: For O(state=write), the key, as C(ED25519-V3:) and the base64 of the 64-byte expanded key, or the base64
      of a whole C(hs_ed25519_secret_key) file.
    type: str
  vault_id:
    description: The vault id to seal with (C(onion_service_backup_vault_id)); empty for the run's first vault secret.
    type: str
    default: ""
  plaintext:
    description: Write a plaintext key inside a git work tree that does not ignore the escrow
      (C(onion_service_backup_plaintext)).
    type: bool
    default: false
seealso:
  - ref: ansible_collections.onionlab.tor.docsite.guide_key_backup
    description: Back up and restore onion service keys.
"""

EXAMPLES = r"""
- name: The escrowed frontend key (never shown)
  onionlab.tor.onionbalance_escrow:
    backup_dir: "{{ onion_service_backup_dir }}"
    name: shop
  register: escrowed
  no_log: true
"""

RETURN = r"""
exists:
  description: Whether the escrow holds a key (null when it could not be read).
  returned: O(state=read)
  type: bool
content:
  description: The base64 of the key file, opened (a secret).
  returned: O(state=read) and the escrow holds a key
  type: str
sealed:
  description: Whether the escrowed key is sealed with ansible-vault.
  returned: O(state=read)
  type: bool
address:
  description: The address of the escrowed key.
  returned: success
  type: str
problem:
  description: Why the escrowed key could not be read; null when it could.
  returned: O(state=read)
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.onionlab.tor.plugins.module_utils._onionbalance_escrow_args import ARGUMENT_SPEC


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="onionlab.tor.onionbalance_escrow runs on the controller only (its action plugin)")


if __name__ == "__main__":
    main()
