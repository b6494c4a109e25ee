# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_hidden_service's DoS defences (issue 16: pow, intro_dos, export_circuit_id) and what
tor_hidden_service_info reports of them, run by real ansible-playbook against a real tor 0.4.9
(DisableNetwork 1 unless said), with GETCONF as the second opinion. The descriptor proof (the
client's decrypted descriptor carries the PoW parameters) is the private network's
(test_privnet_dos.py); a tor too old is the fake controller's (a real 0.4.7 is not installed)."""

import json
import os
import subprocess
import time

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import capabilities as caps
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import ephemeral as _ephemeral
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import run_playbook
from harness.fake_controller import FakeController
from harness.ports import free_port
from harness.tor_instance import TorInstance
from harness.keys import new_expanded_key

HS = "onionlab.tor.tor_hidden_service"
INFO = "onionlab.tor.tor_hidden_service_info"
PORTS = [{"port": 80, "target_port": 8080}]
DEFAULT_POW = {"enabled": False, "queue_rate": 250, "queue_burst": 2500}
DEFAULT_INTRO = {"enabled": False, "rate_per_sec": 25, "burst_per_sec": 200}


def hs_task(port, tmp_path, register=None, **params):
    task = {HS: dict({"control_port": port, "config_file": str(tmp_path / "torrc.d" / "onionlab.conf")}, **params)}
    if register:
        task["register"] = register
    return task


def info_task(port, **params):
    return {INFO: dict({"control_port": port}, **params)}


def results(run, name=HS):
    return [t["result"] for t in run.results(name)]


def live_conf(tor):
    with connect(port=tor.control_port) as ctl:
        return ctl.get_conf("HiddenServiceOptions")


def key_blob(seed):
    return onion.key_blob(new_expanded_key(seed))


def test_create_check_diff_idempotent_change_off(tor, tmp_path):
    path = str(tmp_path / "web")
    defences = dict(pow={"enabled": True, "queue_rate": 100}, intro_dos={"enabled": True, "rate_per_sec": 10,
                                                                          "burst_per_sec": 100},
                    export_circuit_id="haproxy")
    check = dict(hs_task(tor.control_port, tmp_path, path=path, ports=PORTS, **defences), check_mode=True)
    create = hs_task(tor.control_port, tmp_path, path=path, ports=PORTS, **defences)
    run = run_playbook([check, create, create], tmp_path, diff=True)
    assert run.rc == 0, run.output
    checked, first, second = results(run)
    assert [checked["changed"], first["changed"], second["changed"]] == [True, True, False]
    assert checked["diff"]["after"]["services"][0]["pow"] == {"enabled": True, "queue_rate": 100, "queue_burst": 2500}
    assert first["diff"]["before"]["services"] == []
    assert first["service"]["intro_dos"] == {"enabled": True, "rate_per_sec": 10, "burst_per_sec": 100}
    assert first["service"]["export_circuit_id"] == "haproxy"
    assert first["tor"]["non_anonymous"] is False and first["tor"]["version"].startswith("0.4.9")
    assert live_conf(tor) == [
        ("HiddenServiceDir", path), ("HiddenServicePort", "80 127.0.0.1:8080"),
        ("HiddenServiceExportCircuitID", "haproxy"), ("HiddenServiceEnableIntroDoSDefense", "1"),
        ("HiddenServiceEnableIntroDoSRatePerSec", "10"), ("HiddenServiceEnableIntroDoSBurstPerSec", "100"),
        ("HiddenServicePoWDefensesEnabled", "1"), ("HiddenServicePoWQueueRate", "100")]
    drop_in = (tmp_path / "torrc.d" / "onionlab.conf").read_text()
    assert "HiddenServicePoWDefensesEnabled 1\nHiddenServicePoWQueueRate 100\n" in drop_in

    # a new queue rate and burst: GETCONF shows them; then everything off (absent options = tor's defaults)
    rate = hs_task(tor.control_port, tmp_path, path=path, ports=PORTS,
                   **dict(defences, pow={"enabled": True, "queue_rate": 300, "queue_burst": 3000}))
    off = hs_task(tor.control_port, tmp_path, path=path, ports=PORTS)
    run = run_playbook([rate], tmp_path, diff=True)
    assert run.rc == 0, run.output
    (changed,) = results(run)
    assert changed["changed"] is True
    assert changed["diff"]["before"]["services"][0]["pow"]["queue_rate"] == 100
    conf = live_conf(tor)
    assert ("HiddenServicePoWQueueRate", "300") in conf and ("HiddenServicePoWQueueBurst", "3000") in conf
    run = run_playbook([off, off], tmp_path)
    assert run.rc == 0, run.output
    assert [r["changed"] for r in results(run)] == [True, False]
    assert results(run)[0]["service"]["pow"] == DEFAULT_POW
    assert results(run)[0]["service"]["intro_dos"] == DEFAULT_INTRO
    assert live_conf(tor) == [("HiddenServiceDir", path), ("HiddenServicePort", "80 127.0.0.1:8080")]


def test_info_round_trip_through_services_exclusive(tor, tmp_path):
    services = [{"path": str(tmp_path / "a"), "ports": PORTS, "pow": {"enabled": True}},
                {"path": str(tmp_path / "b"), "ports": [{"port": 22}], "intro_dos": {"enabled": True},
                 "export_circuit_id": "haproxy"},
                {"path": str(tmp_path / "c"), "ports": [{"port": 443}]}]
    run = run_playbook([hs_task(tor.control_port, tmp_path, services=services),
                        dict(info_task(tor.control_port), register="info"),
                        hs_task(tor.control_port, tmp_path, exclusive=True,
                                services="{{ info.hidden_services | selectattr('type', 'equalto', 'persistent') "
                                         "| list }}"),
                        info_task(tor.control_port)], tmp_path)
    assert run.rc == 0, run.output
    made, again = results(run)
    before, after = results(run, INFO)
    assert made["changed"] is True and again["changed"] is False
    assert before["hidden_services"] == after["hidden_services"]
    listed = dict((s["path"], s) for s in before["hidden_services"])
    assert listed[services[0]["path"]]["pow"] == dict(DEFAULT_POW, enabled=True)
    assert listed[services[1]["path"]]["intro_dos"] == dict(DEFAULT_INTRO, enabled=True)
    assert listed[services[1]["path"]]["export_circuit_id"] == "haproxy"
    assert listed[services[2]["path"]]["pow"] == DEFAULT_POW
    assert before["tor"]["non_anonymous"] is False and before["tor"]["vanguards_lite"] == "auto"


def test_ephemeral_with_pow(tor, tmp_path):
    blob = key_blob(b"onionlab dos ephemeral")
    sid = onion.service_id_of_key(blob)
    params = dict(ephemeral=True, private_key=blob, ports=PORTS, pow={"enabled": True, "queue_rate": 10,
                                                                      "queue_burst": 100})
    create = hs_task(tor.control_port, tmp_path, **params)
    check = dict(hs_task(tor.control_port, tmp_path, **dict(params, pow={"enabled": True, "queue_rate": 20})),
                 check_mode=True)
    run = run_playbook([create, create, check, dict(info_task(tor.control_port), register="info")], tmp_path,
                       diff=True)
    assert run.rc == 0, run.output
    first, second, checked = results(run)
    assert [first["changed"], second["changed"], checked["changed"]] == [True, False, True]
    assert first["service"]["pow"] == {"enabled": True, "queue_rate": 10, "queue_burst": 100}
    assert checked["diff"]["after"]["pow"]["queue_rate"] == 20
    (listed,) = [s for s in results(run, INFO)[0]["hidden_services"] if s.get("service_id") == sid]
    assert listed["pow"] == first["service"]["pow"]
    # tor runs it (GETCONF cannot show an ephemeral service's options: the record holds what was asked)
    with connect(port=tor.control_port) as ctl:
        assert sid in ctl.list_onions()["detached"]
    record = json.loads((tor.data_dir / _ephemeral.EPHEMERAL_RECORD).read_text())
    assert record[sid]["pow"] == first["service"]["pow"]
    # a new rate: added again with it; no pow: without the keywords
    run = run_playbook([hs_task(tor.control_port, tmp_path, **dict(params, pow={"enabled": True, "queue_rate": 20})),
                        hs_task(tor.control_port, tmp_path, **dict(params, pow=None))], tmp_path)
    assert run.rc == 0, run.output
    assert [r["changed"] for r in results(run)] == [True, True]
    assert results(run)[1]["service"]["pow"] == DEFAULT_POW
    with connect(port=tor.control_port) as ctl:
        assert sid in ctl.list_onions()["detached"]


def test_add_onion_pow_keywords_against_tor(tor):
    with connect(port=tor.control_port) as ctl:
        made = ctl.add_onion([(80, "127.0.0.1:8080")], flags=["DiscardPK"], pow_defenses_enabled=True,
                             pow_queue_rate=10, pow_queue_burst=100)
        assert made["service_id"] in ctl.list_onions()["current"]
        with pytest.raises(Exception) as err:
            ctl.request("ADD_ONION", ["NEW:ED25519-V3", "Flags=DiscardPK", "PoWDefensesEnabled=2", "Port=80"])
        assert "Invalid PoWDefensesEnabled" in str(err.value)


def test_capabilities_of_the_real_tor(tor):
    with connect(port=tor.control_port) as ctl:
        found = caps.Capabilities.read(ctl, run=lambda argv: subprocess.run(
            argv, stdout=subprocess.PIPE, check=True, timeout=30).stdout.decode())
        assert caps.Capabilities.read(ctl).modules is None   # nothing to run it with: unknown
    assert found.version >= (0, 4, 9, 2)
    assert {"hiddenservicepowdefensesenabled", "hiddenservicepowqueuerate",
            "hiddenserviceenableintrodosratepersec", "hiddenserviceexportcircuitid"} <= found.config_names
    # the tor binary of that process, asked with --list-modules (this host's tor has pow)
    assert found.modules is not None and found.modules.get("pow") is True
    service = hs.normalize_service({"path": "/x", "pow": {"enabled": True}, "intro_dos": {"enabled": True}})
    assert found.service_refusals(service) == []
    found.check_add_onion_pow(service["pow"])


BAD = [
    ({"pow": {"queue_rate": -1}}, "pow.queue_rate must be between 0 and 2147483647 (tor's limits), got -1"),
    ({"pow": {"queue_burst": 2147483648}}, "pow.queue_burst must be between 0 and 2147483647"),
    ({"pow": {"queue_rate": "fast"}}, "queue_rate"),
    ({"pow": {"enabled": "maybe"}}, "enabled"),
    ({"pow": {"effort": 3}}, "effort"),
    ({"intro_dos": {"rate_per_sec": 300}}, "intro_dos.rate_per_sec (300) must not be above intro_dos.burst_per_sec"),
    ({"intro_dos": {"rate_per_sec": 2147483648}}, "intro_dos.rate_per_sec must be between 0 and 2147483647"),
    ({"intro_dos": {"burst_per_sec": "lots"}}, "burst_per_sec"),
    ({"export_circuit_id": "proxy"}, "export_circuit_id"),
    ({"extra_options": {"HiddenServicePoWQueueRate": 5}}, "it has its own option, pow.queue_rate"),
    ({"extra_options": {"HiddenServiceEnableIntroDoSDefense": 1}}, "it has its own option, intro_dos.enabled"),
    ({"extra_options": {"HiddenServiceExportCircuitID": "haproxy"}}, "it has its own option, export_circuit_id"),
    ({"extra_options": {"HiddenServiceSingleHopMode": 1}}, "HiddenServiceSingleHopMode is a tor-wide option"),
    ({"extra_options": {"HiddenServiceNonAnonymousMode": 1}}, "HiddenServiceNonAnonymousMode is a tor-wide option"),
    ({"ephemeral": True, "intro_dos": {"enabled": True}}, "intro_dos is not available for an ephemeral service"),
    ({"ephemeral": True, "pow": {"queue_burst": -5}}, "pow.queue_burst must be between 0 and 2147483647"),
]


def test_bad_input_one_message_each_nothing_changed(tor, tmp_path):
    tasks = []
    for params, _message in BAD:
        params = dict({"path": str(tmp_path / "web")}, ports=PORTS, **params)
        if params.get("ephemeral"):
            del params["path"]
        tasks.append(dict(hs_task(tor.control_port, tmp_path, **params), ignore_errors=True))
    run = run_playbook(tasks, tmp_path)
    got = run.results(HS)
    assert len(got) == len(BAD), run.output
    for (params, message), record in zip(BAD, got):
        result = record["result"]
        assert record["status"] == "failed", (params, result)
        assert message in result["msg"], (params, result["msg"])
        assert "Traceback" not in result["msg"]
    assert "Traceback" not in run.output
    assert live_conf(tor) == [("HiddenServiceOptions", None)]
    with connect(port=tor.control_port) as ctl:
        assert ctl.list_onions() == {"current": [], "detached": []}
    assert not os.path.exists(str(tmp_path / "web"))


def test_tor_too_old_refused_before_anything(tmp_path):
    """The fake control port as a tor 0.4.7 (no HiddenServicePoW*) and 0.4.8 (no ADD_ONION PoW)."""
    torrc = tmp_path / "torrc"
    torrc.write_text("SocksPort 0\n")
    with FakeController(tmp_path / "tordata", torrc) as fake:
        fake.pretend_version("0.4.7.16")
        path = str(tmp_path / "web")
        run = run_playbook([dict(hs_task(fake.port, tmp_path, path=path, ports=PORTS, pow={"enabled": True}),
                                 ignore_errors=True),
                            dict(hs_task(fake.port, tmp_path, ephemeral=True, ports=PORTS, pow={"enabled": True}),
                                 ignore_errors=True),
                            hs_task(fake.port, tmp_path, path=path, ports=PORTS, intro_dos={"enabled": True})],
                           tmp_path)
        persistent, ephemeral, older_option = results(run)
        assert persistent["msg"] == ("pow.enabled (HiddenServicePoWDefensesEnabled) of %s needs tor 0.4.8.1-alpha or "
                                     "later; this tor is 0.4.7.16; nothing was changed" % path)
        assert ephemeral["msg"] == ("pow of an ephemeral service (ADD_ONION PoWDefensesEnabled=) needs tor "
                                    "0.4.9.2-alpha or later; this tor is 0.4.7.16; nothing was changed")
        assert older_option["changed"] is True   # what 0.4.7 has works
        sent = [c for c in fake.received if c.split(" ", 1)[0] in ("SETCONF", "ADD_ONION")]
        assert len(sent) == 1 and "PoW" not in sent[0]
        assert fake.errors == []


def test_non_anonymous_tor_is_reported(tmp_path):
    extra = ["HiddenServiceSingleHopMode 1", "HiddenServiceNonAnonymousMode 1"]
    with TorInstance(tmp_path / "tor", extra=extra) as tor:
        run = run_playbook([hs_task(tor.control_port, tmp_path, path=str(tmp_path / "web"), ports=PORTS),
                            info_task(tor.control_port)], tmp_path)
        assert run.rc == 0, run.output
        assert results(run)[0]["tor"]["non_anonymous"] is True
        assert results(run, INFO)[0]["tor"]["non_anonymous"] is True


def test_suggested_effort_from_the_metrics_port(tmp_path):
    """tor opens its MetricsPort only with the network on: a bridge on a closed loopback port keeps
    it from reaching anything."""
    metrics_port = free_port()
    extra = ["MetricsPort 127.0.0.1:%d" % metrics_port, "MetricsPortPolicy accept 127.0.0.1",
             "UseBridges 1", "Bridge 127.0.0.1:1"]
    with TorInstance(tmp_path / "tor", extra=extra) as tor:
        with connect(port=tor.control_port) as ctl:
            ctl.set_conf([("DisableNetwork", "0")])
        url = "http://127.0.0.1:%d/metrics" % metrics_port
        pow_dir, plain_dir = str(tmp_path / "pow"), str(tmp_path / "plain")
        run = run_playbook([hs_task(tor.control_port, tmp_path, path=pow_dir, ports=PORTS, pow={"enabled": True}),
                            hs_task(tor.control_port, tmp_path, path=plain_dir, ports=PORTS)], tmp_path)
        assert run.rc == 0, run.output
        deadline = time.monotonic() + 20
        while True:
            run = run_playbook([info_task(tor.control_port, metrics_url=url)], tmp_path)
            assert run.rc == 0, run.output
            efforts = dict((s["path"], s["pow_suggested_effort"]) for s in results(run, INFO)[0]["hidden_services"])
            if efforts[pow_dir] is not None or time.monotonic() > deadline:
                break
            time.sleep(1)
        # tor 0.4.9 has the gauge for every service, 0 where PoW is off
        assert efforts == {pow_dir: 0, plain_dir: 0}
