# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sealed boxes (seal.py): only the run's own key opens them, an altered box never opens, a bad key is refused."""

import base64

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion, seal


@pytest.mark.parametrize("size", [0, 1, 32, 96, 1000])
def test_a_box_opens_with_its_key_and_hides_the_secret(size):
    private, public = seal.new_key_pair()
    secret = bytes(range(256)) * 4
    secret = secret[:size]
    box = seal.seal(public, secret)
    assert seal.open_box(private, box) == secret
    raw = base64.b64decode(box)
    assert len(raw) == 32 + size + 32
    if size >= 16:
        assert secret not in raw
    assert seal.seal(public, secret) != box            # a fresh ephemeral key each time


def test_another_key_or_an_altered_box_does_not_open():
    private, public = seal.new_key_pair()
    box = seal.seal(public, b"k" * 96)
    with pytest.raises(seal.SealError, match="does not open"):
        seal.open_box(seal.new_key_pair()[0], box)
    raw = bytearray(base64.b64decode(box))
    for index in (0, 40, len(raw) - 1):          # the ephemeral key, the ciphertext, the tag
        altered = bytearray(raw)
        altered[index] ^= 1
        with pytest.raises(seal.SealError):
            seal.open_box(private, base64.b64encode(bytes(altered)).decode())
    with pytest.raises(seal.SealError, match="at least"):
        seal.open_box(private, "AAAA")
    with pytest.raises(seal.SealError, match="at least"):
        seal.open_box(private, "not base64!")


@pytest.mark.parametrize("public", ["", "AAAA", "x" * 44, base64.b64encode(b"\0" * 32).decode()])
def test_bad_sealing_keys_are_refused(public):
    with pytest.raises(seal.SealError, match="sealing key"):
        seal.seal(public, b"secret")


def test_the_box_is_x25519_to_the_recipient():
    """The recipient's public key is x25519 of its private one (RFC 7748's base point 9)."""
    private, public = seal.new_key_pair()
    assert base64.b64decode(public) == onion.x25519_public(private)
