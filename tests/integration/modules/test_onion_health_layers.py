# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layers of tor_onion_health's verdict on the private network (issue 38.1), on a tor of the network with a
SocksPort on 127.0.0.1 (privnet.add_tor(socks=True)) serving two persistent services, each with an HTTP backend of its
own. Both are published first (harness.reach waits for tor's HS_DESC UPLOADED to the HSDirs the client asks, never a
fixed sleep).

- healthy: every layer ok, reach answered (HTTP 200) through the tor's own SocksPort, the descriptor fetched anew
  (HS_DESC REQUESTED during the attempt, after NEWNYM); the same through ansible-playbook, `layers` in the result.
- backend down (its HTTP server stopped): unhealthy at layer backend, reach failing too, the descriptor fine; the
  watchdog names the layer and does not repost, reload or restart; its textfile has the layer gauges.
- tor hung (SIGSTOP of its PID): the module fails with tor state hung, the watchdog's line says tor=hung; SIGCONT
  after (by PID), and the check answers again.
"""

import json
import os
import signal
import time

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils import _onion_watchdog as watchdog
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion_health
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from ansible_collections.onionlab.tor.plugins.module_utils._tor.onion import service_dir_address
from harness.ansible_run import run_playbook
from harness.http_backend import HttpBackend, Ok
from harness.reach import Reach


def _server():
    return HttpBackend(Ok)


@pytest.fixture(scope="module")
def bed(privnet, tmp_path_factory):
    """A tor with a SocksPort on 127.0.0.1 and two published persistent services (their ports from tor's
    configuration): 'good' and 'broken' (whose backend the test stops)."""
    tor = privnet.add_tor("h38layers", socks=True)
    servers = {"good": _server(), "broken": _server()}
    base = tmp_path_factory.mktemp("h38services")
    ctl = connect(port=tor.control_port, cookie_path=tor.cookie_path, timeout=30)
    try:
        with Reach(tor, tor) as reach:
            conf = []
            for name, server in servers.items():
                conf += [("HiddenServiceDir", str(base / name)),
                         ("HiddenServicePort", "80 127.0.0.1:%d" % server.server_address[1])]
            ctl.set_conf(conf)
            addresses = dict((name, service_dir_address(str(base / name))) for name in servers)
            published = reach.wait_published(list(addresses.values()))
            print("published: %s" % published)
        yield {"tor": tor, "ctl": ctl, "addresses": addresses, "servers": servers}
    finally:
        ctl.close()
        for server in servers.values():
            server.stop()


@pytest.fixture(autouse=True)
def backends_kept(bed):
    """After each test, the bed's backends still listen on the sockets they made (a test that closed a descriptor
    it did not own is named, not found later as a teardown that hangs)."""
    yield
    problems = [server.problem() for server in bed["servers"].values() if not server.stopped]
    assert not any(problems), problems


def _check(bed, name, **options):
    started = time.monotonic()
    result = onion_health.check(bed["ctl"], addresses=[bed["addresses"][name]], timeout=20, **options)
    entry = result["services"][0]
    shown = "\n  ".join(entry["reasons"])
    print("%s: %.1f s: %s %s\n  %s" % (name, time.monotonic() - started, entry["state"], entry["failed_layer"], shown))
    return entry


def _watchdog(bed, tmp_path, name, **config):
    tor = bed["tor"]
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = dict({"control_port": tor.control_port, "cookie_path": tor.cookie_path,
                   "addresses": [bed["addresses"][name]], "state_file": str(tmp_path / "wd.json"),
                   "metrics_file": str(tmp_path / "wd.prom"), "restart_command": ["false"], "confirm_checks": 1,
                   "fetch_timeout": 20}, **config)
    dog = watchdog.Watchdog(config)
    dog.run()
    print("\n".join(dog.lines))
    return dog.lines, (tmp_path / "wd.prom").read_text()


def test_healthy_service_every_layer_ok_and_a_client_got_through(bed, tmp_path):
    entry = _check(bed, "good")
    layers = entry["layers"]
    assert entry["state"] == "healthy" and entry["failed_layer"] is None, entry
    assert sorted(layers) == ["backend", "descriptor", "introduction", "reach", "tor"]
    assert all(layer["ok"] is True for layer in layers.values()), layers
    reach = layers["reach"]
    assert reach["port"] == 80 and reach["attempts"][-1]["status"] == 200, reach
    assert reach["socks_port"] == "127.0.0.1:%d" % bed["tor"].socks_port
    # the descriptor fetched anew from the HSDirs by tor's client side (NEWNYM emptied its cache)
    assert reach["descriptor_fetches"] >= 1, reach
    assert layers["introduction"]["established"] >= 1 and layers["backend"]["ports"][0]["ok"] is True
    assert entry["reasons"][0].startswith("backend: 127.0.0.1:")

    tor = bed["tor"]
    run = run_playbook([{"onionlab.tor.tor_onion_health": {
        "control_port": tor.control_port, "cookie_path": tor.cookie_path, "addresses": [bed["addresses"]["good"]],
        "fetch_timeout": 20}, "register": "health"}], tmp_path)
    assert run.rc == 0, run.output
    result = run.results("onionlab.tor.tor_onion_health")[0]["result"]
    service = result["services"][0]
    print(json.dumps(service["layers"]["reach"], indent=1))
    assert result["healthy"] is True and service["layers"]["reach"]["ok"] is True, service


def test_backend_down_is_unhealthy_at_backend_not_repaired_as_a_descriptor(bed, tmp_path):
    server = bed["servers"]["broken"]
    assert _check(bed, "broken", layers=["backend"])["state"] == "healthy"
    server.stop()
    entry = _check(bed, "broken", reach_timeout=30)
    layers = entry["layers"]
    assert entry["state"] == "unhealthy" and entry["failed_layer"] == "backend", entry
    assert layers["backend"]["ok"] is False and "refuses" in layers["backend"]["evidence"]
    assert layers["descriptor"]["ok"] is True and layers["reach"]["ok"] is False, layers
    assert entry["reasons"][0].startswith("backend: ") and entry["reasons"][1].startswith("reach: 0 of ")

    address = bed["addresses"]["broken"]
    # the watchdog's check once the HSDirs hold the service's current descriptor (tor's own view: the tor asks them);
    # a time period that turns during the check (every 4 min here) fails its descriptor layer for a moment, and the
    # watchdog rightly reposts it: then the gate and the check again, at most 3 times
    for attempt in range(3):
        with Reach(bed["tor"], bed["tor"]) as reach:
            reach.wait_published([address], since=None)
        lines, metrics = _watchdog(bed, tmp_path / ("wd%d" % attempt), "broken", reach_timeout=20)
        if "descriptor:fail" not in " ".join(lines):
            break
    assert len(lines) == 1 and "layer=backend" in lines[0] and "action=none" in lines[0], lines
    assert "no descriptor repair" in lines[0]
    onion = address[:-len(".onion")]
    assert 'onionlab_watchdog_layer_ok{onion="%s",layer="backend"} 0' % onion in metrics
    assert 'onionlab_watchdog_layer_ok{onion="%s",layer="descriptor"} 1' % onion in metrics
    assert 'onionlab_watchdog_layer_ok{onion="%s",layer="reach"} 0' % onion in metrics
    assert 'onionlab_watchdog_repairs_total{onion="%s",step="repost"} 0' % onion in metrics


def test_a_stopped_tor_is_hung_not_unreachable(bed, tmp_path):
    tor = bed["tor"]
    os.kill(tor.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        run = run_playbook([{"onionlab.tor.tor_onion_health": {
            "control_port": tor.control_port, "cookie_path": tor.cookie_path, "timeout": 3},
            "register": "health", "ignore_errors": True}], tmp_path)
        result = run.results("onionlab.tor.tor_onion_health")[0]["result"]
        print("module: %.1f s: %s" % (time.monotonic() - started, result["msg"]))
        assert result["error"] == "ControlTimeout" and result["tor"]["state"] == "hung" and result["tor"]["pid"] == tor.pid, result
        assert result["tor"]["process_state"] == "T" and result["msg"].startswith("tor hung: ")

        lines, metrics = _watchdog(bed, tmp_path, "good", timeout=3)
        assert len(lines) == 1 and "tor=hung pid=%d" % tor.pid in lines[0] and "action=none" in lines[0], lines
        assert "onionlab_watchdog_tor_hung 1" in metrics and "onionlab_watchdog_tor_up 0" in metrics
    finally:
        os.kill(tor.pid, signal.SIGCONT)
    with connect(port=tor.control_port, cookie_path=tor.cookie_path, timeout=30) as ctl:
        assert ctl.get_info("version")
    lines, metrics = _watchdog(bed, tmp_path, "good", layers=["backend"])
    assert "onionlab_watchdog_tor_hung 0" in metrics and "onionlab_watchdog_tor_up 1" in metrics


def test_a_service_with_client_authorization_is_reached_with_its_probe_client(bed, tmp_path):
    """Issue 38: tor_hidden_service with authorized_clients adds the health check's probe client (its key kept in
    tor's DataDirectory, 0600); the reach layer lends that key to tor's client side, gets an answer (HTTP 200) and
    takes the key back (ONION_CLIENT_AUTH_VIEW empty after). Without the kept key the reach layer says it was not
    checked, and why."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth, probe_client
    import stat
    tor, server = bed["tor"], _server()
    path = str(tmp_path / "private")
    try:
        run = run_playbook([{"onionlab.tor.tor_hidden_service": {
            "control_port": tor.control_port, "cookie_path": tor.cookie_path,
            "config_file": str(tmp_path / "torrc.d" / "onionlab.conf"), "path": path,
            "ports": [{"port": 80, "target_port": server.server_address[1]}],
            "authorized_clients": [{"name": "alice"}]}, "register": "made", "no_log": True}], tmp_path)
        assert run.rc == 0, run.output
        assert sorted(os.listdir(os.path.join(path, "authorized_clients"))) == ["alice.auth", "probe.auth"]
        key_dir = probe_client.directory(tor.datadir)
        assert stat.S_IMODE(os.stat(key_dir).st_mode) == 0o700
        key = probe_client.private_key(key_dir, path)
        assert key is not None and key.hex() not in run.output
        address = service_dir_address(path)
        with Reach(tor, tor) as reach:
            print("published: %s" % reach.wait_published([address]))
        entry = onion_health.check(bed["ctl"], addresses=[address], timeout=20)["services"][0]
        reach_layer = entry["layers"]["reach"]
        print(json.dumps(reach_layer, indent=1))
        assert entry["state"] == "healthy" and reach_layer["ok"] is True, entry["reasons"]
        assert reach_layer["attempts"][-1]["status"] == 200
        assert client_auth.view(bed["ctl"], address[:-6]) == []      # the probe's key was taken back
        for name in os.listdir(key_dir):
            os.unlink(os.path.join(key_dir, name))
        entry = onion_health.check(bed["ctl"], addresses=[address], timeout=20, layers=["reach"])["services"][0]
        assert entry["layers"]["reach"]["ok"] is None, entry["layers"]["reach"]
        assert "no probe client of ours" in entry["layers"]["reach"]["evidence"]
    finally:
        server.stop()
