# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/onion_services.authorized_clients (was the onion_authorized_clients filter, never released):
authorized_clients entries without a public key get theirs from the escrow (the role's issue 14 fix: the module
never generates, returns or prints a client key)."""

import pytest

from ansible_collections.onionlab.tor.plugins.filter.x25519_public_key import x25519_public_key
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils.onion_services import OnionServicesError
from ansible_collections.onionlab.tor.plugins.plugin_utils.onion_services import (
    authorized_clients as onion_authorized_clients,
)

PRIV_A, PUB_A = onion.generate_client_keypair()
PRIV_B, PUB_B = onion.generate_client_keypair()
PORTS = [{'port': 80}]


def _svc(clients, **kw):
    return dict({'name': 'admin', 'ports': PORTS, 'authorized_clients': clients}, **kw)


def test_entries_needing_a_key():
    services = [{'name': 'public', 'ports': PORTS}, _svc([{'name': 'alice'}, {'name': 'bob', 'public_key': PUB_B}]),
                _svc([{'name': 'carol'}], name='gone', state='absent')]
    assert onion_authorized_clients(services, server='web1', backup_dir='/esc') == [
        {'service': 'admin', 'name': 'alice', 'id': 'web1/admin/alice',
         'escrow': '/esc/web1/admin/clients/alice.1.x25519'}]


def test_public_keys_filled_from_private_keys():
    services = [_svc([{'name': 'alice'}, {'name': 'bob', 'public_key': PUB_B.lower()}])]
    out = onion_authorized_clients(services, server='web1', backup_dir='/esc',
                                   private_keys={'web1/admin/alice': PRIV_A})
    assert out == {'admin': [{'name': 'alice', 'public_key': x25519_public_key(PRIV_A)},
                             {'name': 'bob', 'public_key': PUB_B}]}


@pytest.mark.parametrize('clients, private_keys, message', [
    ('x', None, 'authorized_clients must be a list'),
    (['x'], None, 'each entry must be a dict'),
    ([{'name': 'a b'}], None, 'name must be 1 to 16'),
    ([{'name': 'a'}, {'name': 'a', 'public_key': PUB_A}], None, 'client a: the name is given twice'),
    ([{'name': 'a', 'public_key': 'nope'}], None, 'public_key is not an x25519 public key'),
    ([{'name': 'a'}], {}, 'client a: no private key'),
    ([{'name': 'a'}], {'web1/admin/a': 'secretsecret'}, 'is not an x25519 private key'),
])
def test_bad_input_one_message_no_key(clients, private_keys, message):
    with pytest.raises(OnionServicesError) as err:
        onion_authorized_clients([_svc(clients)], server='web1', backup_dir='/esc', private_keys=private_keys)
    assert message in str(err.value) and 'web1: ' in str(err.value)
    assert 'secretsecret' not in str(err.value)
