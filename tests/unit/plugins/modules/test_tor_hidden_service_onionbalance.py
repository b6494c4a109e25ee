# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_hidden_service's onionbalance_frontend: each refusal (one fail_json, nothing sent or
written), against the fake control port; what tor does with the files is
tests/integration/modules/test_tor_hidden_service_onionbalance.py, against a real tor."""

import os

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.modules import tor_hidden_service as module
from harness.keys import new_expanded_key

WEB_PORTS = [{"port": 80, "target_port": 8080}]
FRONTEND_SID = onion.onion_address(onion.ed25519_public_from_expanded(new_expanded_key(b"ob frontend")))
FRONTEND = FRONTEND_SID + ".onion"
KEY = new_expanded_key(b"ob backend")
KEY_BLOB = onion.key_blob(KEY)
_, CLIENT_PUBLIC = onion.generate_client_keypair()


def args(fake, tmp_path, **params):
    params.setdefault("config_file", str(tmp_path / "torrc.d" / "onionlab.conf"))
    params.setdefault("path", str(tmp_path / "web"))
    params.setdefault("ports", WEB_PORTS)
    return dict(control_port=fake.port, **params)


def nothing_done(fake, tmp_path):
    assert not [line for line in fake.received if line.startswith("SETCONF")]
    assert not os.path.exists(str(tmp_path / "web" / hs.OB_CONFIG))
    assert not (tmp_path / "torrc.d" / "onionlab.conf").exists()


@pytest.mark.parametrize("address, message", [
    ("not-an-address", "is not a v3 onion address (56 base32 characters)"),
    (FRONTEND_SID[:10] + ("a" if FRONTEND_SID[10] != "a" else "b") + FRONTEND_SID[11:], "has a wrong checksum"),
    (FRONTEND_SID.upper(), "is not a v3 onion address"),
])
def test_bad_address(runner, fake, tmp_path, address, message):
    msg = runner.fails(module, **args(fake, tmp_path, onionbalance_frontend=address))["msg"]
    assert msg.startswith("onionbalance_frontend: ") and message in msg
    assert "give the Onionbalance frontend's v3 address" in msg
    nothing_done(fake, tmp_path)


def test_own_address(runner, fake, tmp_path):
    own = onion.service_id_of_key(KEY_BLOB) + ".onion"
    msg = runner.fails(module, **args(fake, tmp_path, private_key=KEY_BLOB, onionbalance_frontend=own))["msg"]
    assert msg == ("onionbalance_frontend of %s is the service's own address %s: give the address of the "
                   "Onionbalance frontend (its own key), not the backend's" % (tmp_path / "web", own))
    nothing_done(fake, tmp_path)
    assert not os.path.exists(str(tmp_path / "web"))


def test_authorized_clients(runner, fake, tmp_path):
    msg = runner.fails(module, **args(fake, tmp_path, onionbalance_frontend=FRONTEND,
                                      authorized_clients=[{"name": "alice", "public_key": CLIENT_PUBLIC}]))["msg"]
    assert msg.startswith("authorized_clients on the balanced service %s (onionbalance_frontend) is refused: "
                          "Onionbalance 0.2.2 cannot carry client authorization" % (tmp_path / "web"))
    assert msg.endswith("; remove authorized_clients")
    nothing_done(fake, tmp_path)


def test_client_files_on_disk(runner, fake, tmp_path):
    """Clients not managed (authorized_clients omitted) but in the directory: tor would use them."""
    path = tmp_path / "web"
    os.makedirs(str(path / "authorized_clients"), 0o700)
    os.chmod(str(path), 0o700)
    (path / "authorized_clients" / "bob.auth").write_text("descriptor:x25519:%s\n" % CLIENT_PUBLIC)
    msg = runner.fails(module, **args(fake, tmp_path, onionbalance_frontend=FRONTEND))["msg"]
    assert msg.endswith("its directory has client files (bob); give authorized_clients: [] to remove them")
    nothing_done(fake, tmp_path)


def test_pow(runner, fake, tmp_path):
    msg = runner.fails(module, **args(fake, tmp_path, onionbalance_frontend=FRONTEND, pow={"enabled": True}))["msg"]
    assert msg.startswith("pow.enabled is refused on the balanced service %s (onionbalance_frontend): Onionbalance "
                          "0.2.2 publishes the frontend's descriptor" % (tmp_path / "web"))
    assert "without their pow-params line" in msg
    nothing_done(fake, tmp_path)


def test_ephemeral(runner, fake, tmp_path):
    msg = runner.fails(module, control_port=fake.port, ephemeral=True, ports=WEB_PORTS,
                       onionbalance_frontend=FRONTEND)["msg"]
    assert msg.startswith("onionbalance_frontend is not available for an ephemeral service: ADD_ONION has no flag "
                          "or keyword for HiddenServiceOnionbalanceInstance")
    assert not [line for line in fake.received if line.startswith("ADD_ONION")]


def test_extra_options_flag(runner, fake, tmp_path):
    msg = runner.fails(module, **args(fake, tmp_path, extra_options={"HiddenServiceOnionbalanceInstance": 1}))["msg"]
    assert msg.startswith("extra_options key 'HiddenServiceOnionbalanceInstance' is refused: give "
                          "onionbalance_frontend")
    nothing_done(fake, tmp_path)


@pytest.mark.parametrize("text", [None, "", "# nothing\n", "Foo bar\n", "MasterOnionAddress %s\n" % FRONTEND_SID])
def test_block_service_without_valid_ob_config(runner, fake, tmp_path, text):
    """A balanced service of tor's block whose ob_config tor would refuse (or crash on): any
    change re-reads it, so nothing is sent."""
    other = tmp_path / "other"
    os.mkdir(str(other), 0o700)
    if text is not None:
        (other / hs.OB_CONFIG).write_text(text)
    fake.hs_block = [("HiddenServiceDir", str(other)), ("HiddenServicePort", "22"),
                     ("HiddenServiceOnionbalanceInstance", "1")]
    msg = runner.fails(module, **args(fake, tmp_path))["msg"]
    assert msg.startswith("the balanced service %s (HiddenServiceOnionbalanceInstance 1) has no valid ob_config"
                          % other)
    assert "SIGSEGV in hs_ob_parse_config_file" in msg and "nothing was changed" in msg
    nothing_done(fake, tmp_path)


def test_parse_and_render():
    assert hs.normalize_frontend(FRONTEND_SID) == FRONTEND == hs.normalize_frontend(" %s " % FRONTEND)
    assert hs.normalize_frontend(None) is None and hs.normalize_frontend("") is None
    assert hs.render_ob_config(FRONTEND) == "MasterOnionAddress %s\n" % FRONTEND
    assert hs.parse_ob_config(hs.render_ob_config(FRONTEND)) == FRONTEND
    assert hs.parse_ob_config("MasterOnionAddress %s\n" % FRONTEND_SID) is None   # tor wants .onion
    assert hs.parse_ob_config(None) is None
    service = hs.normalize_service({"path": "/var/lib/tor/web", "ports": [80], "onionbalance_frontend": FRONTEND_SID})
    conf = hs.service_to_conf(service)
    assert conf[-1] == ("HiddenServiceOnionbalanceInstance", "1")
    assert hs.services_from_conf(conf)[0]["onionbalance_frontend"] is hs.OB_FLAG
