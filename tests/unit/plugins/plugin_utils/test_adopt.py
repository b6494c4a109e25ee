# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/adopt.py: what tor runs made into the onion_service role's entries exactly as it runs them, each
refusal before anything is written, vanity keys verified (issue 40, 2). The whole adoption over ssh on a bed host:
tests/integration/beds/test_adopt_bed.py."""

import os

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils import adopt
from harness.keys import new_expanded_key

CLIENT = onion.generate_client_keypair()[1]


def running(path, address="x" * 56 + ".onion", clients=(), **options):
    """A service as tor_hidden_service_info returns it."""
    service = hs.normalize_service(dict({"path": path, "ports": [{"port": 80, "target_port": 8080}]}, **options))
    service.update(type="persistent", onion_address=address, authorized_clients=list(clients))
    return service


def test_a_service_becomes_an_entry_with_only_what_differs_and_pow_stated():
    service_dir, entries, left_out = adopt.entries("web1", [
        running("/var/lib/tor/hidden_service", max_streams=7, intro_dos={"enabled": True}),
        running("/var/lib/tor/private", clients=[{"name": "bob", "public_key": CLIENT},
                                                 {"name": "alice", "public_key": CLIENT}]),
        {"type": "ephemeral", "service_id": "y" * 56, "onion_address": "y" * 56 + ".onion"}])
    assert service_dir == "/var/lib/tor"
    assert entries[0] == {"name": "hidden_service", "ports": [{"port": 80, "target_address": "127.0.0.1",
                                                              "target_port": 8080}],
                          "options": {"max_streams": 7, "intro_dos": {"enabled": True}, "pow": {"enabled": False}}}
    assert [c["name"] for c in entries[1]["clients"]] == ["alice", "bob"]
    assert entries[1]["options"] == {"pow": {"enabled": False}}
    assert left_out[0][0] == "y" * 56 + ".onion" and "ephemeral" in left_out[0][1]


def test_pow_on_is_kept_as_it_is():
    entries = adopt.entries("web1", [running("/var/lib/tor/a", pow={"enabled": True, "queue_rate": 10})])[1]
    assert entries[0]["options"] == {"pow": {"enabled": True, "queue_rate": 10}}


@pytest.mark.parametrize("services, message", [
    ([running("/var/lib/tor/a"), running("/srv/onion/b")], "live in 2 directories (/srv/onion, /var/lib/tor)"),
    ([running("/var/lib/tor/web.k2")], "its directory's name is not one the onion_service role keeps"),
    ([running("/var/lib/tor/" + "a" * 129)], "its directory's name is not one"),
    ([running("/var/lib/tor/a", address=None)], "its address cannot be read"),
    ([running("/var/lib/tor/a", clients=[{"name": "a" * 17, "public_key": CLIENT}])],
     "the client file %s.auth has a name the onion_service role cannot keep" % ("a" * 17)),
])
def test_refusals_name_the_service_and_the_fix(services, message):
    with pytest.raises(adopt.AdoptError) as err:
        adopt.entries("web1", services)
    assert message in str(err.value)


def test_unreadable_clients_refused():
    service = running("/var/lib/tor/a")
    service["authorized_clients"] = None
    with pytest.raises(adopt.AdoptError, match="authorized_clients directory cannot be read"):
        adopt.entries("web1", [service])


def _vanity(tmp_path):
    expanded = new_expanded_key()
    public = onion.ed25519_public_from_expanded(expanded)
    files = {"hs_ed25519_secret_key": onion.SECRET_HEADER + expanded, "hs_ed25519_public_key": onion.PUBLIC_HEADER + public,
             "hostname": (onion.onion_address(public) + ".onion\n").encode()}
    return expanded, onion.onion_address(public) + ".onion", files


def test_a_vanity_directory_is_verified_then_imported(tmp_path):
    expanded, address, files = _vanity(tmp_path)
    read = lambda path: files.get(os.path.basename(path))   # noqa: E731
    key, got, entry = adopt.imported({"name": "shop", "ports": [80], "key_dir": "/keys/shop"}, read)
    assert (key, got, entry) == (expanded, address, {"name": "shop", "ports": [80]})
    other = _vanity(tmp_path)[2]
    files["hostname"] = other["hostname"]
    with pytest.raises(adopt.AdoptError, match="the hostname says .* but the secret key gives %s" % address):
        adopt.imported({"name": "shop", "ports": [80], "key_dir": "/keys/shop"}, read)
    files["hostname"] = (address + "\n").encode()
    files["hs_ed25519_public_key"] = other["hs_ed25519_public_key"]
    with pytest.raises(adopt.AdoptError, match="the public key file is not the secret key's"):
        adopt.imported({"name": "shop", "ports": [80], "key_dir": "/keys/shop"}, read)
    del files["hs_ed25519_secret_key"]
    with pytest.raises(adopt.AdoptError, match="must hold hs_ed25519_secret_key and hostname"):
        adopt.imported({"name": "shop", "ports": [80], "key_dir": "/keys/shop"}, read)


def test_a_blob_needs_its_hostname_and_must_give_it(tmp_path):
    import base64
    expanded, address, _files = _vanity(tmp_path)
    blob = "ED25519-V3:" + base64.b64encode(expanded).decode()
    assert adopt.imported({"name": "a", "ports": [80], "private_key": blob, "hostname": address}, None)[1] == address
    with pytest.raises(adopt.AdoptError, match="a private_key needs its hostname"):
        adopt.imported({"name": "a", "ports": [80], "private_key": blob}, None)
    with pytest.raises(adopt.AdoptError) as err:
        adopt.imported({"name": "a", "ports": [80], "private_key": blob, "hostname": "b" * 56}, None)
    assert blob[11:] not in str(err.value) and "nothing was written" in str(err.value)


def test_host_vars_text_names_the_directory_only_when_not_the_default():
    dump = lambda data: repr(sorted(data))   # noqa: E731
    assert adopt.host_vars_text("/var/lib/tor", [{"name": "a"}], "/var/lib/tor", dump).endswith("['onion_services']")
    assert "onion_service_dir" in adopt.host_vars_text("/srv/tor", [{"name": "a"}], "/var/lib/tor", dump)
    assert adopt.host_vars_text("/srv/tor", [], "/var/lib/tor", dump).startswith(adopt.HOST_VARS_HEADER)
