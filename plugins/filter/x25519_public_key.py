# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The x25519 public key of a client authorization private key (pure Python, module_utils/_tor)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: x25519_public_key
short_description: The public half of a v3 client authorization key
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes a client's x25519 private key (52 base32 characters, as in tor's C(.auth_private) files and as
    P(onionlab.tor.onion_client_key#lookup) returns it; a C(descriptor:x25519:) prefix is accepted) and returns its
    public key, 52 base32 characters, which is what the service's
    O(onionlab.tor.tor_hidden_service#module:authorized_clients[].public_key) takes.
  - Computed in pure Python on the controller (RFC 7748 X25519 with the base point).
  - A value that is not such a key fails with one message that never contains the value.
options:
  _input:
    description: The private key.
    type: str
    required: true
seealso:
  - plugin: onionlab.tor.onion_client_key
    plugin_type: lookup
  - ref: ansible_collections.onionlab.tor.docsite.guide_client_rotation
    description: Clients and key rotation.
"""

EXAMPLES = r"""
- name: alice's public key, for the service
  ansible.builtin.set_fact:
    alice_public: "{{ vault_alice_private_key | onionlab.tor.x25519_public_key }}"
  no_log: true
"""

RETURN = r"""
_value:
  description: The public key, 52 base32 characters (upper case).
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError


def x25519_public_key(private_key):
    if not isinstance(private_key, str):
        raise AnsibleFilterError("x25519_public_key: the input must be a string (a base32 x25519 private key), not %s"
                                 % type(private_key).__name__)
    try:
        raw = client_auth.parse_private_key(private_key, what="the private key")
    except (TorError, ValueError):
        raise AnsibleFilterError("x25519_public_key: the input is not an x25519 private key "
                                 "(52 base32 characters, optionally after descriptor:x25519:)")
    return onion.b32(onion.x25519_public(raw))


class FilterModule(object):
    def filters(self):
        return {"x25519_public_key": x25519_public_key}
