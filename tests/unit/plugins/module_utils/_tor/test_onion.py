# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keys and addresses: RFC vectors, Stem as an oracle for addresses, tor's file formats."""

import base64
import os

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from harness.keys import new_expanded_key


def expand(seed):
    return new_expanded_key(seed)


@pytest.mark.parametrize("seed, public", [
    # RFC 8032, 7.1 TEST 1, 2 and 3
    ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"),
    ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
     "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"),
    ("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
     "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025"),
])
def test_ed25519_public_rfc8032(seed, public):
    assert onion.ed25519_public_from_expanded(expand(bytes.fromhex(seed))).hex() == public


def test_x25519_rfc7748():
    alice = bytes.fromhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
    bob = bytes.fromhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb")
    assert onion.x25519_public(alice).hex() == "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
    assert onion.x25519_public(bob).hex() == "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"
    shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
    assert onion._x25519(alice, onion.x25519_public(bob)).hex() == shared


def test_address_matches_stem():
    hidden_service = pytest.importorskip("stem.descriptor.hidden_service")
    for _ in range(20):
        public = onion.ed25519_public_from_expanded(expand(os.urandom(32)))
        ours = onion.onion_address(public)
        theirs = hidden_service.HiddenServiceDescriptorV3.address_from_identity_key(public, suffix=False)
        assert ours == theirs
        assert onion.parse_onion_address(ours + ".onion") == public
        assert hidden_service.HiddenServiceDescriptorV3.identity_key_from_address(ours) == public


@pytest.mark.parametrize("address, message", [
    ("1" * 56, "not a v3 onion address"),
    ("x" * 56, "version 3|checksum"),
    ("abc.onion", "not a v3 onion address"),
    (None, "must be a string"),
])
def test_bad_addresses(address, message):
    with pytest.raises(onion.OnionKeyError, match=message):
        onion.parse_onion_address(address)


def test_checksum_and_version_checked():
    good = onion.onion_address(onion.ed25519_public_from_expanded(expand(b"\x01" * 32)))
    flipped = ("b" if good[-5] != "b" else "c").join([good[:-5], good[-4:]])
    with pytest.raises(onion.OnionKeyError, match="checksum|version"):
        onion.parse_onion_address(flipped)
    assert not onion.is_service_id(flipped) and onion.is_service_id(good)


def test_key_blob_round_trip_and_errors():
    expanded = expand(b"\x02" * 32)
    blob = onion.key_blob(expanded)
    assert onion.parse_key_blob(blob) == expanded
    assert onion.parse_key_blob(blob.split(":", 1)[1]) == expanded
    assert onion.service_id_of_key(blob) == onion.onion_address(onion.ed25519_public_from_expanded(expanded))
    for bad, message in [("RSA1024:abcd", "ED25519-V3"), ("ED25519-V3:***", "not base64"),
                         ("ED25519-V3:" + base64.b64encode(b"x" * 10).decode(), "64-byte")]:
        with pytest.raises(onion.OnionKeyError, match=message) as info:
            onion.parse_key_blob(bad)
        assert bad.split(":")[-1] not in str(info.value) or len(bad.split(":")[-1]) < 5


def test_client_keys():
    private, public = onion.generate_client_keypair()
    assert len(private) == len(public) == 52
    assert onion.b32(onion.x25519_public(onion.unb32(private, 32, "k"))) == public
    assert onion.check_client_public_key("descriptor:x25519:" + public.lower()) == public
    with pytest.raises(onion.OnionKeyError, match="32 bytes"):
        onion.check_client_public_key("AAAA")


def test_key_files(tmp_path):
    expanded = expand(b"\x03" * 32)
    public = onion.ed25519_public_from_expanded(expanded)
    (tmp_path / "hs_ed25519_secret_key").write_bytes(onion.SECRET_HEADER + expanded)
    address = onion.service_dir_address(str(tmp_path))
    assert address == onion.onion_address(public) + ".onion"
    (tmp_path / "hs_ed25519_public_key").write_bytes(onion.PUBLIC_HEADER + public)
    (tmp_path / "hostname").write_text(address + "\n")
    assert onion.service_dir_address(str(tmp_path)) == address
    (tmp_path / "hostname").write_text("a" * 56 + ".onion\n")
    with pytest.raises(onion.OnionKeyError, match="key gives"):
        onion.service_dir_address(str(tmp_path))
    (tmp_path / "hs_ed25519_public_key").write_bytes(b"junk")
    with pytest.raises(onion.OnionKeyError, match="not a tor ed25519 public key file"):
        onion.service_dir_address(str(tmp_path))
    assert onion.service_dir_address(str(tmp_path / "missing")) is None


# -- import_key (issue 40: keys brought from a hand-made service or a vanity generator, verified first) -----------
def _vanity_dir():
    """What mkp224o and Onionmine write: the secret and public key files and hostname, of one key."""
    expanded = bytes(range(64))
    public = onion.ed25519_public_from_expanded(expanded)
    return (onion.SECRET_HEADER + expanded, onion.PUBLIC_HEADER + public,
            (onion.onion_address(public) + ".onion\n").encode())


def test_import_key_from_a_key_directory_and_from_a_blob():
    secret, public, hostname = _vanity_dir()
    expanded, address = onion.import_key(secret=secret, public=public, hostname=hostname)
    assert expanded == secret[len(onion.SECRET_HEADER):] and address == hostname.decode().strip()
    assert onion.import_key(blob=onion.key_blob(expanded), hostname=address[:-6]) == (expanded, address)


@pytest.mark.parametrize("change, message", [
    ("hostname of another key", "the hostname says .* but the secret key gives .*: the key of another address"),
    ("hostname with a wrong checksum", "the hostname is not a v3 onion address: .* has a wrong checksum"),
    ("public key of another key", "the public key file is not the secret key's"),
    ("torn secret", "not a tor ed25519 secret key file \\(50 bytes; one is 96"),
    ("torn public", "not a tor ed25519 public key file"),
    ("both", "one of the two"),
])
def test_import_key_refuses_what_disagrees_and_names_it(change, message):
    secret, public, hostname = _vanity_dir()
    other = onion.ed25519_public_from_expanded(bytes(range(1, 65)))
    kwargs = {"secret": secret, "public": public, "hostname": hostname}
    if change == "hostname of another key":
        kwargs["hostname"] = onion.onion_address(other) + ".onion"
    elif change == "hostname with a wrong checksum":
        text = hostname.decode().strip()
        kwargs["hostname"] = text[:53] + ("a" if text[53] != "a" else "b") + text[54:]
    elif change == "public key of another key":
        kwargs["public"] = onion.PUBLIC_HEADER + other
    elif change == "torn secret":
        kwargs["secret"] = secret[:50]
    elif change == "torn public":
        kwargs["public"] = public[:40]
    else:
        kwargs["blob"] = onion.key_blob(secret[len(onion.SECRET_HEADER):])
    with pytest.raises(onion.OnionKeyError, match=message) as info:
        onion.import_key(**kwargs)
    assert base64.b64encode(secret[len(onion.SECRET_HEADER):]).decode() not in str(info.value)
