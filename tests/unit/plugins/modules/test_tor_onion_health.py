# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_onion_health main() against the stateful fake control port (conftest.py), tor bootstrapping (every verdict
pending): the backend check all the same, each exposed port a warning and an entry of the service's `exposed`
(listeners read from a /proc of recorded text for the fake's PID); none when tor is not a process of this host."""

import os
import socket

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import listeners
from ansible_collections.onionlab.tor.plugins.modules import tor_hidden_service as hs_module
from ansible_collections.onionlab.tor.plugins.modules import tor_onion_health as module

# 0.0.0.0:8080 and 127.0.0.1:8081 listening (hex ports 1F90, 1F91); [::]:8443 (20FB)
TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 651134 1 00000000e146df54 100 0 0 10 0
   1: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 651135 1 00000000eb69cd7c 100 0 0 10 0
"""
TCP6 = """\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:20FB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 651137 1 00000000f96239b0 100 0 0 10 0
"""
ADDRESS = "pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscryd.onion"
BOOTSTRAPPING = 'NOTICE BOOTSTRAP PROGRESS=5 TAG=conn SUMMARY="Connecting to a relay"'


@pytest.fixture
def proc(tmp_path, monkeypatch):
    """A /proc where the fake's process (its GETINFO process/pid) is named tor."""
    base = tmp_path / "proc" / str(os.getpid())
    (base / "net").mkdir(parents=True)
    (base / "comm").write_text("tor\n")
    (base / "net" / "tcp").write_text(TCP)
    (base / "net" / "tcp6").write_text(TCP6)
    monkeypatch.setattr(listeners, "PROC", str(tmp_path / "proc"))
    return base


def _services(runner, fake, tmp_path):
    conf = str(tmp_path / "onionlab.conf")
    exposed = runner.ok(hs_module, control_port=fake.port, config_file=conf, path=str(tmp_path / "web"),
                        ports=[{"port": 80, "target_port": 8080}, {"port": 81, "target_port": 8081},
                               {"port": 443, "target_address": "::1", "target_port": 8443}])["onion_address"]
    quiet = runner.ok(hs_module, control_port=fake.port, config_file=conf, path=str(tmp_path / "quiet"),
                      ports=[{"port": 80, "target_address": "unix:/run/quiet.sock"},
                             {"port": 22, "target_port": 8081}])["onion_address"]
    recorded = runner.ok(hs_module, control_port=fake.port, ephemeral=True,
                         ports=[{"port": 80, "target_address": "192.0.2.7", "target_port": 80}])["onion_address"]
    stranger = fake.add_onion_direct() + ".onion"
    fake.info["status/bootstrap-phase"] = BOOTSTRAPPING
    return exposed, quiet, recorded, stranger


def test_exposed_backends_warned_while_tor_bootstraps(runner, fake, tmp_path, proc):
    exposed, quiet, recorded, stranger = _services(runner, fake, tmp_path)
    result = runner.ok(module, control_port=fake.port)
    assert result["changed"] is False and result["healthy"] is True
    by_address = {s["address"]: s for s in result["services"]}
    assert set(result["pending"]) == set(by_address) == {exposed, quiet, recorded, stranger}
    assert all(s["state"] == "pending" and s["healthy"] is None for s in result["services"])
    assert result["exposure"] == {"checked": True, "problem": None}
    assert sorted(result["exposed"]) == sorted([exposed, recorded])
    assert by_address[exposed]["exposed"] == [
        {"port": 80, "target": "127.0.0.1:8080", "listening_on": ["0.0.0.0:8080"]},
        {"port": 443, "target": "[::1]:8443", "listening_on": ["[::]:8443"]}]
    assert by_address[recorded]["exposed"] == [
        {"port": 80, "target": "192.0.2.7:80", "listening_on": ["192.0.2.7:80"]}]
    assert by_address[quiet]["exposed"] == [] and by_address[quiet]["exposure_problem"] is None
    assert by_address[stranger]["exposed"] is None
    assert "made by another controller" in by_address[stranger]["exposure_problem"]
    assert len(result["warnings"]) == 3, result["warnings"]
    assert ("onion service %s port 80 forwards to 127.0.0.1:8080, and that port also listens on 0.0.0.0:8080: "
            % exposed) in result["warnings"][0]
    assert all(w.endswith("bind the backend to 127.0.0.1 or a unix socket") for w in result["warnings"])


def test_not_checked_when_tor_is_not_a_process_of_this_host(runner, fake, tmp_path, proc):
    (proc / "comm").write_text("python3\n")      # the PID tor gives is another program here
    exposed = _services(runner, fake, tmp_path)[0]
    result = runner.ok(module, control_port=fake.port, addresses=[exposed])
    assert result["exposure"]["checked"] is False
    assert result["exposure"]["problem"].startswith("process %d of this host is python3, not tor" % os.getpid())
    assert result["exposed"] == [] and not result.get("warnings")
    entry = result["services"][0]
    assert entry["exposed"] is None and entry["exposure_problem"] == result["exposure"]["problem"]


@pytest.mark.parametrize("args, message", [
    ({"reach_timeout": 0}, "reach_timeout must be a positive number of seconds, got 0"),
    ({"reach_attempts": 0}, "reach_attempts must be between 1 and 20, got 0"),
    ({"web_ports": [80, 70000]}, "web_ports must be ports between 1 and 65535, got 70000"),
    ({"layers": ["reach", "dns"]}, "layers"),
])
def test_bad_layer_options_one_message_each(runner, fake, args, message):
    assert message in runner.fails(module, control_port=fake.port, **args)["msg"]


def test_layers_of_a_pending_service(runner, fake, tmp_path, proc):
    exposed = _services(runner, fake, tmp_path)[0]
    entry = runner.ok(module, control_port=fake.port, addresses=[exposed])["services"][0]
    assert sorted(entry["layers"]) == ["backend", "descriptor", "tor"] and entry["failed_layer"] is None
    assert entry["layers"]["tor"]["ok"] is True and entry["layers"]["descriptor"]["ok"] is None
    assert [p["port"] for p in entry["layers"]["backend"]["ports"]] == [80, 81, 443]
    only = runner.ok(module, control_port=fake.port, addresses=[exposed], layers=[])["services"][0]
    assert sorted(only["layers"]) == ["descriptor", "tor"]


def test_a_control_port_that_accepts_but_never_answers_is_a_hung_tor(runner):
    """The listening socket's owner (this process) lives: hung, with its PID; one fail_json, no traceback."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    try:
        result = runner.fails(module, control_port=silent.getsockname()[1], timeout=0.5)
    finally:
        silent.close()
    assert result["msg"].startswith("tor hung: tor's process %d (" % os.getpid()), result["msg"]
    assert result["tor"]["state"] == "hung" and result["tor"]["pid"] == os.getpid()
    assert result["error"] == "ControlTimeout"


@pytest.mark.parametrize("ports, message", [
    ({"nope": 80}, "reach_ports: 'nope' is not a v3 onion address"),
    ({ADDRESS: 70000}, "the port of %s must be a number between 1 and 65535, got 70000" % ADDRESS),
])
def test_bad_reach_ports_one_message(runner, fake, ports, message):
    assert message in runner.fails(module, control_port=fake.port, reach_ports=ports)["msg"]


def test_reach_ports_naming_a_port_the_service_lacks_is_refused(runner, fake, tmp_path, proc):
    exposed = _services(runner, fake, tmp_path)[0]
    msg = runner.fails(module, control_port=fake.port, addresses=[exposed], reach_ports={exposed: "22"})["msg"]
    assert "reach_ports: %s does not configure port 22 (its ports: 80, 81, 443)" % exposed in msg
