# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The x25519_public_key filter."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.x25519_public_key import FilterModule, x25519_public_key
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion

# RFC 7748 6.1
ALICE_PRIVATE = bytes.fromhex('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a')
ALICE_PUBLIC = bytes.fromhex('8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a')


def test_rfc7748_vector_and_forms():
    private = onion.b32(ALICE_PRIVATE)
    assert x25519_public_key(private) == onion.b32(ALICE_PUBLIC)
    assert x25519_public_key(private.lower() + '\n') == onion.b32(ALICE_PUBLIC)
    assert x25519_public_key('descriptor:x25519:' + private) == onion.b32(ALICE_PUBLIC)
    assert FilterModule().filters()['x25519_public_key'] is x25519_public_key


def test_matches_the_module_utils_keypair():
    private, public = onion.generate_client_keypair()
    assert x25519_public_key(private) == public


@pytest.mark.parametrize('value', ['', 'A' * 51, 'A' * 53, '1' * 52, 'AAAA:BBBB', 'A' * 52 + '\nB', None, 42,
                                   ['A' * 52], onion.b32(bytes(32))])
def test_malformed_is_one_message_without_the_value(value):
    with pytest.raises(AnsibleFilterError) as info:
        x25519_public_key(value)
    message = str(info.value)
    assert message.startswith('x25519_public_key: ')
    assert '\n' not in message
    if isinstance(value, str) and len(value) > 8:
        assert value[:8] not in message
