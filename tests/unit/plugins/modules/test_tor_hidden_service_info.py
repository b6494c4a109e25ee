# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_hidden_service_info main() against the stateful fake control port (conftest.py): the
persistent and ephemeral services tor runs, in the shape tor_hidden_service takes back."""

import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.modules import tor_hidden_service as hs_module
from ansible_collections.onionlab.tor.plugins.modules import tor_hidden_service_info as module
from harness.fake_controller import write_service_keys
from harness.keys import new_expanded_key

KEY = new_expanded_key(b"info module test key")
KEY_BLOB = onion.key_blob(KEY)
KEY_SID = onion.service_id_of_key(KEY_BLOB)
CLIENT_PUBLIC = onion.generate_client_keypair()[1]
PERSISTENT_KEYS = {"type", "path", "ports", "onion_address", "authorized_clients", "version", "max_streams",
                   "max_streams_close_circuit", "dir_group_readable", "allow_unknown_ports", "num_intro_points",
                   "export_circuit_id", "pow", "intro_dos", "extra_options", "onionbalance_frontend"}
EPHEMERAL_KEYS = {"type", "service_id", "onion_address", "detached", "ports", "max_streams", "client_auth_v3",
                  "pow"}


def hostname(path):
    with open(os.path.join(path, "hostname")) as handle:
        return handle.read().strip()


def test_nothing_running(runner, fake):
    result = runner.ok(module, control_port=fake.port)
    assert result["changed"] is False
    assert result["hidden_services"] == []
    assert fake.commands() == ["PROTOCOLINFO", "AUTHENTICATE", "GETINFO", "GETCONF", "GETCONF", "GETINFO", "GETCONF",
                               "QUIT"]


def test_persistent_and_ephemeral(runner, fake, tmp_path):
    web, foreign = str(tmp_path / "web"), str(tmp_path / "foreign")
    runner.ok(hs_module, control_port=fake.port, config_file=str(tmp_path / "onionlab.conf"), path=web,
              ports=[{"port": 80, "target_port": 8080}], max_streams=7,
              authorized_clients=[{"name": "alice", "public_key": CLIENT_PUBLIC}])
    runner.ok(hs_module, control_port=fake.port, ephemeral=True, private_key=KEY_BLOB,
              ports=[{"port": 443, "target_address": "unix:/run/web.sock"}])
    # a service tor had before (torrc) with no key in its directory yet, and an ephemeral service
    # another controller added (tor does not say its ports)
    os.mkdir(foreign, 0o700)
    fake.hs_block = [("HiddenServiceDir", foreign), ("HiddenServicePort", "22")] + fake.hs_block
    stranger = fake.add_onion_direct()
    result = runner.ok(module, control_port=fake.port)
    assert result["changed"] is False
    listed = result["hidden_services"]
    assert [s["type"] for s in listed] == ["persistent", "persistent", "ephemeral", "ephemeral"]
    for service in listed:
        assert set(service) == (PERSISTENT_KEYS if service["type"] == "persistent" else EPHEMERAL_KEYS)
    other, mine = listed[0], listed[1]
    assert other["path"] == foreign and other["onion_address"] is None and other["authorized_clients"] is None
    assert other["ports"] == [{"port": 22, "target_address": "127.0.0.1", "target_port": 22}]
    assert mine["path"] == web and mine["max_streams"] == 7
    assert mine["onion_address"] == hostname(web)
    assert mine["ports"] == [{"port": 80, "target_address": "127.0.0.1", "target_port": 8080}]
    # alice, and the health check's probe client the module added (probe_client.py)
    assert [c["name"] for c in mine["authorized_clients"]] == ["alice", "probe"]
    assert mine["authorized_clients"][0] == {"name": "alice", "public_key": CLIENT_PUBLIC}
    ours = [s for s in listed if s.get("service_id") == KEY_SID][0]
    assert ours == {"type": "ephemeral", "service_id": KEY_SID, "onion_address": KEY_SID + ".onion",
                    "detached": True, "max_streams": None, "client_auth_v3": [],
                    "ports": [{"port": 443, "target_address": "unix:/run/web.sock", "target_port": None}],
                    "pow": {"enabled": False, "queue_rate": 250, "queue_burst": 2500}}
    theirs = [s for s in listed if s.get("service_id") == stranger][0]
    assert theirs["detached"] is True and theirs["ports"] is None and theirs["pow"] is None
    # once the foreign key exists, its address is read like any other
    write_service_keys(foreign)
    again = runner.ok(module, control_port=fake.port)["hidden_services"]
    assert again[0]["onion_address"] == hostname(foreign)


def test_check_mode_reports_the_same(runner, fake, tmp_path):
    runner.ok(hs_module, control_port=fake.port, config_file=str(tmp_path / "onionlab.conf"),
              path=str(tmp_path / "web"), ports=[{"port": 80}])
    normal = runner.ok(module, control_port=fake.port)
    checked = runner.ok(module, control_port=fake.port, check_mode=True)
    assert checked["changed"] is False
    assert checked["hidden_services"] == normal["hidden_services"] and len(normal["hidden_services"]) == 1
    assert [c for c in fake.commands() if c in ("SETCONF", "ADD_ONION", "DEL_ONION")] == ["SETCONF"]


def test_connection_failure(runner, fake):
    fake.refuse("GETCONF", "551", "Internal error")
    result = runner.fails(module, control_port=fake.port)
    assert result["msg"] == "tor refused GETCONF: 551 Internal error"
    assert result["error"] == "OperationFailed"
    refused = runner.fails(module, control_port=70000)
    assert refused["msg"] == "control_port must be between 1 and 65535, got 70000"
    both = runner.fails(module, control_port=fake.port, control_socket="/run/tor/control")
    assert both["msg"] == "parameters are mutually exclusive: control_port|control_socket"
