# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An x25519 client key for v3 client authorization, kept in a file on the controller (escrow):
read when the file exists, generated and written once (no overwrite) when it does not. The work is
plugin_utils/escrow.py's; this is its face for playbooks."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onion_client_key
short_description: A client authorization key from the controller's escrow, generated when missing
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Returns the x25519 private key (52 base32 characters, as in tor's C(.auth_private) files) held in each file
    given, for v3 onion service client authorization, in the manner of the C(ansible.builtin.password) lookup.
  - When a file does not exist, a new key is generated (32 random bytes from C(os.urandom), clamped as
    RFC 7748 does), written to the file, mode C(0600), and returned. Missing directories are created with mode
    C(0700). The file appears complete or not at all (written under a temporary name, then linked into place
    without replacing anything), so that evaluations running at the same time, in several forks or several
    runs, all return the one key that got there first.
  - An existing file never gets another key. A file that does not hold a key is an error naming the file, never
    its content.
  - When the run has a vault password (C(--ask-vault-pass), C(--vault-password-file), C(--vault-id)), a new key
    file is written encrypted with ansible-vault, an encrypted one is read with the run's vault secrets, and a
    plaintext one (an older run's) is encrypted in place, holding the same key. An encrypted file in a run without
    the vault password is an error that says how to give it.
  - Runs on the controller, also in check mode (generating a key there is not a change of a managed host).
  - The public half, for the service's C(authorized_clients), is P(onionlab.tor.x25519_public_key#filter).
  - The P(onionlab.tor.onion_service#role) and P(onionlab.tor.onion_client#role) roles keep client keys as
    C(<onion_service_backup_dir>/<server>/<service>/clients/<client>.<key>.x25519).
  - A term may also be a credential of a client host, an entry of the P(onionlab.tor.onion_clients#filter) filter
    with its option C(host) - its key is then the one of O(vault_keys) under its C(id), else the one of its
    C(escrow) file (made there when missing), and a credential to remove (C(state=absent)) has none (no file read or
    made; the lookup gives an empty list, V(omit) with C(default(omit, true))). The
    P(onionlab.tor.onion_client#role) role gives each credential's key so.
options:
  _terms:
    description:
      - The key files. An absolute path, or one relative to the playbook's directory (C(~) is expanded).
      - Or credentials of the P(onionlab.tor.onion_clients#filter) filter (dicts with C(id), C(state), C(escrow)).
    type: list
    elements: raw
    required: true
  vault_keys:
    description:
      - For credentials only - client keys from a vault, C(<server>/<service>/<client>) to the x25519 private key; a
        dict, or a list of them merged in order, a later one winning (the P(onionlab.tor.onion_client#role) role's
        C(onion_service_client_keys), then C(onion_client_keys)).
    type: raw
  vault_id:
    description:
      - The vault id to encrypt new key files with, one of the run's; empty for the run's first vault secret
        (the P(onionlab.tor.onion_service#role) role's O(onionlab.tor.onion_service#role:main:onion_service_backup_vault_id)).
    type: str
    default: ""
seealso:
  - plugin: onionlab.tor.x25519_public_key
    plugin_type: filter
  - module: onionlab.tor.tor_onion_client_auth
  - ref: ansible_collections.onionlab.tor.docsite.guide_client_rotation
    description: Clients and key rotation.
notes:
  - Use C(no_log=true) on every task that handles the key.
"""

EXAMPLES = r"""
- name: Give this host's tor alice's key to the admin service (generated on the controller on the first run)
  onionlab.tor.tor_onion_client_auth:
    address: "{{ admin_address }}"
    private_key: "{{ lookup('onionlab.tor.onion_client_key', playbook_dir ~ '/onion-keys/web1/admin/clients/alice.1.x25519') }}"
    client_name: alice
  no_log: true

- name: Each credential of this host's tor, its key from the vault or the escrow (none for a removal)
  onionlab.tor.tor_onion_client_auth:
    address: "{{ item.address }}"
    state: "{{ item.state }}"
    client_name: "{{ item.client_name | default(omit, true) }}"
    private_key: "{{ lookup('onionlab.tor.onion_client_key', item, vault_keys=vault_client_keys) | default(omit, true) }}"
  loop: "{{ groups['all'] | onionlab.tor.onion_clients(hostvars=hostvars, host=inventory_hostname,
                                                        backup_dir=playbook_dir ~ '/onion-keys') }}"
  no_log: true

- name: The public half, for the service
  ansible.builtin.set_fact:
    alice_public: "{{ lookup('onionlab.tor.onion_client_key', 'onion-keys/web1/admin/clients/alice.1.x25519')
                      | onionlab.tor.x25519_public_key }}"
  no_log: true
"""

RETURN = r"""
_raw:
  description: One x25519 private key per file, 52 base32 characters (upper case); per credential, its key (none
    for a credential to remove).
  type: list
  elements: str
"""

import os
from collections.abc import Mapping

from ansible.errors import AnsibleLookupError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.lookup import LookupBase

from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow
from ansible_collections.onionlab.tor.plugins.plugin_utils.onion_services import OnionServicesError, credential_key


def read_key(path, vault=escrow.NO_VAULT):
    """The key in path (checked), or None when the file does not exist (plugin_utils/escrow.py)."""
    try:
        return escrow.read_client_key(path, vault)
    except escrow.EscrowError as exc:
        raise AnsibleLookupError("onion_client_key: %s" % exc)


def get_or_create(path, vault=escrow.NO_VAULT):
    """The key in path, made there when missing (plugin_utils/escrow.py: of two runs, the first one's wins)."""
    try:
        return escrow.client_key(path, vault)
    except escrow.EscrowError as exc:
        raise AnsibleLookupError("onion_client_key: %s" % exc)


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        try:
            vault_id = self.get_option("vault_id")
        except KeyError:   # made without its documentation (not through the plugin loader: unit tests)
            vault_id = kwargs.get("vault_id")
        try:
            vault_keys = self.get_option("vault_keys")
        except KeyError:
            vault_keys = kwargs.get("vault_keys")
        vault = escrow.Vault(getattr(self._loader, "_vault", None), vault_id)
        keys = []
        for term in terms:
            if isinstance(term, Mapping):   # a credential of the onion_clients filter (host=)
                try:
                    source, found = credential_key(dict(term), vault_keys)
                except OnionServicesError as exc:
                    raise AnsibleLookupError(to_native(exc))
                if source == "vault":
                    keys.append(found)
                elif source == "escrow":
                    keys.append(get_or_create(self._key_path(found), vault))
                continue
            keys.append(get_or_create(self._key_path(term), vault))
        return keys

    def _key_path(self, term):
        """A key file's path: absolute, or relative to the playbook's directory (~ expanded); checked."""
        if not isinstance(term, str) or not term.strip():
            raise AnsibleLookupError("onion_client_key: each term must be a non-empty path, not %s"
                                     % type(term).__name__)
        if "\n" in term or "\x00" in term:
            raise AnsibleLookupError("onion_client_key: a path must not contain a line break or a NUL byte")
        path = os.path.expanduser(to_native(term))
        if not os.path.isabs(path):
            path = os.path.join(self._loader.get_basedir(), path)
        path = os.path.normpath(path)
        if os.path.isdir(path):
            raise AnsibleLookupError("onion_client_key: %s is a directory, not a key file" % path)
        return path
