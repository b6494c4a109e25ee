# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/onion_services.escrow_dir and credential_key: the onion_client role's escrow directory and where a
credential's key comes from (issue 41: decided here, not in the role's Jinja)."""

from __future__ import annotations

import pytest

from ansible_collections.onionlab.tor.plugins.plugin_utils.onion_services import (
    OnionServicesError,
    credential_key,
    escrow_dir,
)

KEY_A, KEY_B = "A" * 52, "B" * 52
CREDENTIAL = {"id": "web1/admin/alice", "state": "present", "escrow": "/e/web1/admin/clients/alice.1.x25519"}


@pytest.mark.parametrize("backup_dir, playbook_dir, expected", [
    ("/srv/keys", "/play", "/srv/keys"),
    (["/c", "/s"], "/play", "/c"),
    ([None, "/s"], "/play", "/s"),
    (["", ""], "/play", "/play/onion-keys"),
    ([None, None], None, None),
    (None, "", None),
])
def test_escrow_dir(backup_dir, playbook_dir, expected):
    assert escrow_dir(backup_dir, playbook_dir) == expected


def test_a_present_credential_from_the_escrow_unless_the_vault_has_it():
    assert credential_key(CREDENTIAL) == ("escrow", CREDENTIAL["escrow"])
    assert credential_key(CREDENTIAL, {"web1/admin/bob": KEY_A}) == ("escrow", CREDENTIAL["escrow"])
    assert credential_key(CREDENTIAL, {"web1/admin/alice": KEY_A}) == ("vault", KEY_A)
    # onion_service_client_keys, then onion_client_keys: the later one wins (Ansible's combine)
    assert credential_key(CREDENTIAL, [{"web1/admin/alice": KEY_A}, {"web1/admin/alice": KEY_B}]) == ("vault", KEY_B)
    assert credential_key(CREDENTIAL, [None, {}]) == ("escrow", CREDENTIAL["escrow"])


def test_a_credential_to_remove_has_no_key():
    assert credential_key(dict(CREDENTIAL, state="absent"), {"web1/admin/alice": KEY_A}) == ("none", None)


@pytest.mark.parametrize("credential, vault_keys, said", [
    ("web1/admin/alice", None, "a credential must be an entry of the onion_clients filter"),
    ({"state": "present"}, None, "a credential must be"),
    (dict(CREDENTIAL, state="gone"), None, "a credential must be"),
    (dict(CREDENTIAL, escrow=None), None, "web1/admin/alice: the credential has no escrow file"),
    (CREDENTIAL, [KEY_A], "vault_keys must be a dict"),
])
def test_wrong_input_is_named_never_a_key(credential, vault_keys, said):
    with pytest.raises(OnionServicesError, match=said) as info:
        credential_key(credential, vault_keys)
    assert KEY_A not in str(info.value)
