# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_hidden_service's DoS defences (pow, intro_dos, export_circuit_id; issue 16) against the
stateful fake control port: what reaches tor, idempotence, the info round trip, ADD_ONION's PoW
keywords, and a tor too old (0.4.7, 0.4.8 for ADD_ONION) refused before anything is sent."""

import os

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.modules import tor_hidden_service as module
from ansible_collections.onionlab.tor.plugins.modules import tor_hidden_service_info as info_module
from harness.keys import new_expanded_key

WEB_PORTS = [{"port": 80, "target_port": 8080}]
KEY_BLOB = onion.key_blob(new_expanded_key(b"onionlab dos unit test key"))
KEY_SID = onion.service_id_of_key(KEY_BLOB)
DEFAULT_POW = {"enabled": False, "queue_rate": 250, "queue_burst": 2500}
DEFAULT_INTRO = {"enabled": False, "rate_per_sec": 25, "burst_per_sec": 200}


def args(fake, tmp_path, **params):
    params.setdefault("config_file", str(tmp_path / "torrc.d" / "onionlab.conf"))
    return dict(control_port=fake.port, **params)


def svc(fake, tmp_path, name="web", **params):
    params.setdefault("ports", WEB_PORTS)
    return args(fake, tmp_path, path=str(tmp_path / name), **params)


def changing(fake):
    return [c for c in fake.received if c.split(" ", 1)[0] in ("SETCONF", "RESETCONF", "ADD_ONION", "DEL_ONION")]


def test_defences_reach_tor_idempotent_and_round_trip(runner, fake, tmp_path):
    path = str(tmp_path / "web")
    params = dict(pow={"enabled": True, "queue_rate": 50}, intro_dos={"enabled": True, "rate_per_sec": 10},
                  export_circuit_id="haproxy")
    first = runner.ok(module, diff=True, **svc(fake, tmp_path, **params))
    assert first["changed"] is True
    assert fake.hs_block[2:] == [("HiddenServiceExportCircuitID", "haproxy"),
                                 ("HiddenServiceEnableIntroDoSDefense", "1"),
                                 ("HiddenServiceEnableIntroDoSRatePerSec", "10"),
                                 ("HiddenServicePoWDefensesEnabled", "1"), ("HiddenServicePoWQueueRate", "50")]
    service = first["service"]
    assert service["pow"] == {"enabled": True, "queue_rate": 50, "queue_burst": 2500}
    assert service["intro_dos"] == {"enabled": True, "rate_per_sec": 10, "burst_per_sec": 200}
    assert service["export_circuit_id"] == "haproxy"
    assert first["diff"]["before"]["services"] == []
    assert first["diff"]["after"]["services"][0]["pow"]["queue_rate"] == 50
    assert first["tor"] == {"version": "0.4.9.11", "non_anonymous": False}
    drop_in = (tmp_path / "torrc.d" / "onionlab.conf").read_text()
    assert "HiddenServicePoWDefensesEnabled 1\nHiddenServicePoWQueueRate 50\n" in drop_in
    sent = len(changing(fake))
    assert runner.ok(module, **svc(fake, tmp_path, **params))["changed"] is False
    # the same with every default spelled out
    spelled = dict(pow={"enabled": True, "queue_rate": 50, "queue_burst": 2500},
                   intro_dos={"enabled": True, "rate_per_sec": 10, "burst_per_sec": 200}, export_circuit_id="haproxy")
    assert runner.ok(module, **svc(fake, tmp_path, **spelled))["changed"] is False
    assert len(changing(fake)) == sent
    # info returns the same shape; fed back through services + exclusive: nothing changes
    listed = runner.ok(info_module, control_port=fake.port)["hidden_services"]
    assert listed[0]["pow"] == service["pow"] and listed[0]["intro_dos"] == service["intro_dos"]
    back = runner.ok(module, **args(fake, tmp_path, services=listed, exclusive=True))
    assert back["changed"] is False and len(changing(fake)) == sent
    assert os.path.isdir(path)


def test_change_and_turn_off(runner, fake, tmp_path):
    runner.ok(module, **svc(fake, tmp_path, pow={"enabled": True}))
    changed = runner.ok(module, diff=True, **svc(fake, tmp_path, pow={"enabled": True, "queue_rate": 100}))
    assert changed["changed"] is True and ("HiddenServicePoWQueueRate", "100") in fake.hs_block
    assert changed["diff"]["before"]["services"][0]["pow"]["queue_rate"] == 250
    off = runner.ok(module, **svc(fake, tmp_path))   # absent = tor's defaults: PoW off
    assert off["changed"] is True and off["service"]["pow"] == DEFAULT_POW
    assert not [k for k, _v in fake.hs_block if "PoW" in k]


def test_check_mode_sends_nothing(runner, fake, tmp_path):
    result = runner.ok(module, check_mode=True, diff=True, **svc(fake, tmp_path, pow={"enabled": True}))
    assert result["changed"] is True and fake.hs_block == [] and changing(fake) == []
    assert result["diff"]["after"]["services"][0]["pow"]["enabled"] is True


def test_old_tor_refused_before_anything(runner, fake, tmp_path):
    fake.pretend_version("0.4.7.16")
    path = str(tmp_path / "web")
    for check_mode in (True, False):
        result = runner.fails(module, check_mode=check_mode,
                              **svc(fake, tmp_path, pow={"enabled": True}, intro_dos={"enabled": True}))
        assert result["msg"] == ("pow.enabled (HiddenServicePoWDefensesEnabled) of %s needs tor 0.4.8.1-alpha or "
                                 "later; this tor is 0.4.7.16; nothing was changed" % path)
    assert changing(fake) == [] and not os.path.exists(path)
    assert not (tmp_path / "torrc.d").exists()
    # what that tor has works; PoW at tor's defaults is not sent, so it works too
    ok = runner.ok(module, **svc(fake, tmp_path, pow={"enabled": False}, intro_dos={"enabled": True}))
    assert ok["changed"] is True and ("HiddenServiceEnableIntroDoSDefense", "1") in fake.hs_block


def test_old_tor_in_a_services_list_nothing_half_applied(runner, fake, tmp_path):
    fake.pretend_version("0.4.7.16")
    services = [{"path": str(tmp_path / "a"), "ports": WEB_PORTS},
                {"path": str(tmp_path / "b"), "ports": WEB_PORTS, "pow": {"enabled": True}}]
    result = runner.fails(module, **args(fake, tmp_path, services=services))
    assert "of %s needs tor 0.4.8.1-alpha" % services[1]["path"] in result["msg"]
    assert changing(fake) == [] and fake.hs_block == [] and not os.path.exists(services[0]["path"])


@pytest.mark.parametrize("params, message", [
    ({"pow": {"queue_rate": -1}}, "pow.queue_rate must be between 0 and 2147483647 (tor's limits), got -1"),
    ({"pow": {"queue_burst": 2147483648}}, "pow.queue_burst must be between 0 and 2147483647"),
    ({"pow": {"queue_rate": "fast"}}, "queue_rate"),
    ({"pow": {"enabled": "maybe"}}, "enabled"),
    ({"pow": {"effort": 3}}, "effort"),
    ({"pow": "on"}, "dictionary requested"),   # ansible-core's own message for a dict option
    ({"intro_dos": {"rate_per_sec": 500}}, "intro_dos.rate_per_sec (500) must not be above intro_dos.burst_per_sec"),
    ({"intro_dos": {"burst_per_sec": -3}}, "intro_dos.burst_per_sec must be between 0 and 2147483647"),
    ({"export_circuit_id": "proxy"}, "export_circuit_id"),
    ({"extra_options": {"HiddenServicePoWDefensesEnabled": 1}}, "it has its own option, pow.enabled"),
    ({"extra_options": {"HiddenServiceSingleHopMode": 1}}, "tor-wide option"),
    ({"extra_options": {"HiddenServiceNonAnonymousMode": 1}}, "tor-wide option"),
])
def test_bad_input_one_message_nothing_sent(runner, fake, tmp_path, params, message):
    result = runner.fails(module, **svc(fake, tmp_path, **params))
    assert message in result["msg"], result["msg"]
    assert changing(fake) == []


def test_non_anonymous_tor_reported(runner, fake, tmp_path):
    fake.hs_block = []
    fake.conf["HiddenServiceNonAnonymousMode"] = ["1"]
    # the fake keeps HiddenService* options in its block; answer this tor-wide one from conf
    fake.info["version"] = "0.4.9.11"
    original = fake._cmd_getconf

    def getconf(rest, state):
        lines = original(rest, state)
        return [l.replace("HiddenServiceNonAnonymousMode", "HiddenServiceNonAnonymousMode=1", 1)
                if l.endswith("HiddenServiceNonAnonymousMode") else l for l in lines]
    fake._cmd_getconf = getconf
    result = runner.ok(module, **svc(fake, tmp_path))
    assert result["tor"]["non_anonymous"] is True
    eph = runner.ok(module, **args(fake, tmp_path, ephemeral=True, ports=WEB_PORTS))
    assert eph["tor"]["non_anonymous"] is True


# -- ephemeral ----------------------------------------------------------------------------------
def test_ephemeral_pow_keywords_recorded_and_idempotent(runner, fake, tmp_path):
    params = args(fake, tmp_path, ephemeral=True, private_key=KEY_BLOB, ports=WEB_PORTS,
                  pow={"enabled": True, "queue_rate": 10, "queue_burst": 100})
    first = runner.ok(module, **params)
    assert first["changed"] is True
    (line,) = [c for c in fake.received if c.startswith("ADD_ONION")]
    assert " PoWDefensesEnabled=1 PoWQueueRate=10 PoWQueueBurst=100 " in line
    assert fake.onions[KEY_SID]["pow"] == {"PoWDefensesEnabled": 1, "PoWQueueRate": 10, "PoWQueueBurst": 100}
    assert first["service"]["pow"] == {"enabled": True, "queue_rate": 10, "queue_burst": 100}
    assert runner.ok(module, **params)["changed"] is False
    listed = runner.ok(info_module, control_port=fake.port)["hidden_services"]
    assert [s["pow"] for s in listed if s.get("service_id") == KEY_SID] == [first["service"]["pow"]]
    # a new rate: the service is added again with it (tor cannot change it in place)
    params["pow"]["queue_rate"] = 20
    again = runner.ok(module, **params)
    assert again["changed"] is True and fake.onions[KEY_SID]["pow"]["PoWQueueRate"] == 20
    # no pow: no keyword at all (an older tor refuses them)
    plain = runner.ok(module, **args(fake, tmp_path, ephemeral=True, ports=WEB_PORTS))
    assert "PoW" not in [c for c in fake.received if c.startswith("ADD_ONION")][-1]
    assert plain["service"]["pow"] == DEFAULT_POW


def test_ephemeral_pow_on_a_tor_without_the_keywords(runner, fake, tmp_path):
    fake.pretend_version("0.4.8.16")
    params = args(fake, tmp_path, ephemeral=True, private_key=KEY_BLOB, ports=WEB_PORTS, pow={"enabled": True})
    result = runner.fails(module, **params)
    assert result["msg"] == ("pow of an ephemeral service (ADD_ONION PoWDefensesEnabled=) needs tor 0.4.9.2-alpha "
                             "or later; this tor is 0.4.8.16; nothing was changed")
    assert changing(fake) == [] and fake.onions == {}
    # without pow the same service is created on that tor
    del params["pow"]
    assert runner.ok(module, **params)["changed"] is True


@pytest.mark.parametrize("name, value", [("intro_dos", {"enabled": True}), ("export_circuit_id", "haproxy")])
def test_ephemeral_refuses_persistent_only_options(runner, fake, tmp_path, name, value):
    result = runner.fails(module, **args(fake, tmp_path, ephemeral=True, ports=WEB_PORTS, **{name: value}))
    assert result["msg"].startswith("%s is not available for an ephemeral service" % name)
    assert changing(fake) == []


# -- the info module: effective defences, suggested effort, tor-wide state ---------------------------
class _Metrics(object):
    """A MetricsPort on loopback serving one page."""

    def __init__(self, page):
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = page().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/metrics" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_info_suggested_effort_and_tor_state(runner, fake, tmp_path):
    made = runner.ok(module, **svc(fake, tmp_path, pow={"enabled": True}))
    runner.ok(module, **svc(fake, tmp_path, name="plain"))
    sid = made["onion_address"][:-len(".onion")]
    port = _Metrics(lambda: 'tor_hs_pow_suggested_effort{onion="%s"} 17\n' % sid)
    try:
        result = runner.ok(info_module, control_port=fake.port, metrics_url=port.url)
    finally:
        port.close()
    efforts = dict((s["path"], s["pow_suggested_effort"]) for s in result["hidden_services"])
    assert efforts == {str(tmp_path / "web"): 17, str(tmp_path / "plain"): None}
    assert result["tor"] == {"version": "0.4.9.11", "non_anonymous": False, "vanguards_lite": None}
    # the output with the effort goes back into services: nothing changes
    back = runner.ok(module, **args(fake, tmp_path, services=result["hidden_services"], exclusive=True))
    assert back["changed"] is False
    # without metrics_url: no such key
    assert "pow_suggested_effort" not in runner.ok(info_module, control_port=fake.port)["hidden_services"][0]


def test_info_metrics_port_unreachable_fails(runner, fake, tmp_path):
    result = runner.fails(info_module, control_port=fake.port, metrics_url="http://127.0.0.1:1/metrics")
    assert result["msg"].startswith("cannot read tor's MetricsPort at http://127.0.0.1:1/metrics")
    bad = runner.fails(info_module, control_port=fake.port, metrics_url="127.0.0.1:9035")
    assert "metrics_url must be an http:// URL" in bad["msg"]


def test_tor_without_the_pow_module_refused(runner, fake, tmp_path, monkeypatch):
    """The module hands its run_command to the capability check; a tor binary whose
    --list-modules says 'pow: no' is refused before anything is sent."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import capabilities

    asked = []

    def local_modules(pid, run):
        asked.append((pid, run is not None))
        return {"relay": True, "pow": False}
    monkeypatch.setattr(capabilities, "local_modules", local_modules)
    result = runner.fails(module, **svc(fake, tmp_path, pow={"enabled": True}))
    assert "needs tor's pow module; this tor (0.4.9.11) was built without it" in result["msg"]
    assert asked == [(fake.info["process/pid"], True)] and changing(fake) == []
    eph = runner.fails(module, **args(fake, tmp_path, ephemeral=True, ports=WEB_PORTS, pow={"enabled": True}))
    assert "built without it" in eph["msg"] and changing(fake) == []
