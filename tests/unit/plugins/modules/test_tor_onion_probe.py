# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_onion_probe main() in-process (conftest.py's runner) against a scripted SOCKS peer
(harness/fake_socks.py): the result's shape, report and wait modes, check mode, and every bad
option ending in one clear message with nothing sent."""

import os
import time

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion, socks
from ansible_collections.onionlab.tor.plugins.module_utils._tor import probe as backend
from ansible_collections.onionlab.tor.plugins.modules import tor_onion_probe as module
from harness.fake_socks import FakeSocks, http_response
from harness.ports import free_port

ONION = "at7ze7u76lc7m5pmj4nxgkfp6526u54zpn7oxrxftdcyay6uhvteguad.onion"
OTHER = onion.onion_address(onion.ed25519_public_from_expanded(b"\x09" * 64)) + ".onion"


def serve(peer):
    host, port = peer.accept()
    if port == 22:
        peer.hold(2)
        return
    peer.http(http_response(200, b"host alpha"))


def refuse_other(peer):
    peer.greeting()
    host, port = peer.request()
    if host == OTHER:
        peer.reply(0xF0)
        return
    peer.reply(0)
    peer.http(http_response(200, b"host alpha"))


@pytest.fixture
def socks_peer():
    with FakeSocks(serve) as fake:
        yield fake
    assert fake.errors == []


def test_http_and_tcp_targets(runner, socks_peer):
    result = runner.ok(module, socks_port=socks_peer.port, targets=[
        {"address": ONION, "body_contains": "alpha"},
        {"address": ONION[:-len(".onion")].upper(), "port": 22, "mode": "tcp"},
    ])
    assert result["changed"] is False
    assert result["unanswered"] == []
    web, ssh = result["targets"]
    assert web["address"] == ssh["address"] == ONION
    assert (web["port"], web["mode"], web["reachable"], web["status"], web["attempts"]) == (80, "http", True, 200, 1)
    assert (ssh["port"], ssh["mode"], ssh["reachable"], ssh["status"]) == (22, "tcp", True, None)
    for entry in (web, ssh):
        assert entry["error"] is None and entry["reason"] is None and entry["socks_reply"] is None
        assert 0 < entry["time_to_first_byte"] < 5
    assert sorted(socks_peer.requests) == [(ONION, 22), (ONION, 80)]
    assert 0 <= result["elapsed"] < 5


def test_report_mode_never_fails_for_an_unreachable_onion(runner):
    with FakeSocks(refuse_other) as fake:
        result = runner.ok(module, socks_port=fake.port, targets=[{"address": ONION}, {"address": OTHER}])
    assert result["changed"] is False
    ok, missing = result["targets"]
    assert ok["reachable"] is True
    assert missing["reachable"] is False and missing["attempts"] == 1
    assert missing["reason"] == "descriptor_not_found" and missing["socks_reply"] == 0xF0
    assert missing["error"].startswith("tor answered 0xF0: onion service descriptor can not be found")
    assert result["unanswered"] == [OTHER + ":80"]


def test_report_mode_retries_until_a_set_deadline(runner):
    with FakeSocks(refuse_other) as fake:
        result = runner.ok(module, socks_port=fake.port, deadline=0.5, delay=0.1, targets=[{"address": OTHER}])
    assert result["targets"][0]["attempts"] >= 3
    assert result["targets"][0]["reachable"] is False


def test_wait_mode_fails_naming_what_did_not_answer(runner):
    with FakeSocks(refuse_other) as fake:
        started = time.monotonic()
        result = runner.fails(module, socks_port=fake.port, wait=True, deadline=0.6, delay=0.1,
                              targets=[{"address": ONION}, {"address": OTHER, "port": 8080}])
        took = time.monotonic() - started
    assert result["msg"].startswith("1 of 2 onion services did not answer within 0.6s through SocksPort "
                                    "127.0.0.1:%d: %s:8080 (tor answered 0xF0: onion service descriptor can not be "
                                    "found" % (fake.port, OTHER))
    assert result["msg"].endswith(" attempts)")
    assert result["unanswered"] == [OTHER + ":8080"]
    assert [t["reachable"] for t in result["targets"]] == [True, False]
    assert result["changed"] is False
    assert took < 3


def test_wait_mode_goes_on_once_everything_answers(runner):
    # refused 3 times, then served: the task succeeds after the 4th attempt
    def handler(peer):
        peer.greeting()
        peer.request()
        if peer.index < 3:
            peer.reply(0xF2)
            return
        peer.reply(0)
        peer.http(http_response())

    with FakeSocks(handler) as fake:
        result = runner.ok(module, socks_port=fake.port, wait=True, delay=0.05, targets=[{"address": ONION}])
    assert result["targets"][0]["attempts"] == 4
    assert result["targets"][0]["reachable"] is True


def test_check_mode_probes_all_the_same(runner, socks_peer):
    result = runner.ok(module, check_mode=True, socks_port=socks_peer.port, targets=[{"address": ONION}])
    assert result["changed"] is False
    assert result["targets"][0]["reachable"] is True
    assert socks_peer.requests == [(ONION, 80)]


def test_unix_socks_port(runner, tmp_path):
    path = str(tmp_path / "socks")
    with FakeSocks(serve, unix_path=path) as fake:
        result = runner.ok(module, socks_socket=path, targets=[{"address": ONION}])
    assert result["targets"][0]["reachable"] is True
    assert fake.requests == [(ONION, 80)]


def test_stopped_socks_port_is_a_result_not_a_failure(runner):
    port = free_port()
    result = runner.ok(module, socks_port=port, targets=[{"address": ONION}])
    (entry,) = result["targets"]
    assert entry["reachable"] is False and entry["reason"] == "proxy_refused"
    assert entry["error"] == ("connection refused by the SocksPort 127.0.0.1:%d: nothing listens there (is tor "
                              "running, with this SocksPort?)" % port)


def test_default_socks_port_is_9050(runner, monkeypatch):
    seen = []

    class Recorder(module.SocksProxy):
        def __init__(self, *args):
            seen.append(args)
            super(Recorder, self).__init__(*args)

        def open(self, deadline):
            raise socks.ProxyUnavailable("not here", "proxy_refused")

    monkeypatch.setattr(module, "SocksProxy", Recorder)
    runner.ok(module, targets=[{"address": ONION}])
    assert seen == [("127.0.0.1", 9050, None)]


A_KEY = onion.onion_address(onion.ed25519_public_from_expanded(b"\x07" * 64))


@pytest.mark.parametrize("args, words", [
    ({"targets": None}, "missing required arguments: targets"),
    ({"targets": []}, "targets must list at least one onion service"),
    ({"targets": [{"port": 80}]}, "missing required arguments: address"),
    ({"targets": [{"address": ONION, "prot": 80}]}, "prot"),
    ({"targets": [{"address": "not-an-onion"}]}, "targets[0].address: 'not-an-onion' is not a v3 onion address"),
    ({"targets": [{"address": ONION}, {"address": ONION[:-7] + "b.onion"}]}, "targets[1].address: "),
    ({"targets": [{"address": ONION, "port": "eighty"}]}, "port"),
    ({"targets": [{"address": ONION, "port": 0}]}, "targets[0].port: must be between 1 and 65535, got 0"),
    ({"targets": [{"address": ONION, "mode": "udp"}]}, "mode"),
    ({"targets": [{"address": ONION, "mode": "tcp", "path": "/x"}]}, "targets[0].path: applies to mode http only"),
    ({"targets": [{"address": ONION, "status": ["ok"]}]}, "status"),
    ({"targets": [{"address": ONION, "status": [700]}]}, "targets[0].status: must hold HTTP status codes"),
    ({"targets": [{"address": ONION, "path": "no-slash"}]}, "targets[0].path: must start with /"),
    ({"targets": [{"address": ONION, "timeout": -3}]}, "targets[0].timeout: must be more than 0"),
    ({"targets": "just a string"}, "targets must be a list of mappings, each with at least an address"),
    ({"targets": [ONION]}, "targets must be a list of mappings, each with at least an address"),
    ({"targets": [42]}, "targets must be a list of mappings"),
    ({"socks_port": 0}, "socks_port must be between 1 and 65535, got 0"),
    ({"socks_port": 70000}, "socks_port must be between 1 and 65535, got 70000"),
    ({"socks_port": "x"}, "socks_port"),
    ({"socks_socket": "/run/tor/socks"}, "mutually exclusive"),
    ({"socks_host": " "}, "socks_host must not be empty"),
    ({"timeout": 0}, "timeout must be more than 0 and at most 604800 (a week), got 0.0"),
    ({"timeout": "soon"}, "timeout"),
    ({"deadline": -1}, "deadline must be 0 or more"),
    ({"deadline": 10 ** 7}, "deadline must be 0 or more and at most 604800"),
    ({"delay": -0.5}, "delay must be 0 or more"),
    ({"wait": "perhaps"}, "wait"),
])
def test_bad_input_is_one_message_and_nothing_is_sent(runner, socks_peer, args, words):
    full = {"socks_port": socks_peer.port, "targets": [{"address": A_KEY}]}
    full.update(args)
    full = dict((k, v) for k, v in full.items() if v is not None)   # None: the option left out
    result = runner.fails(module, **full)
    assert words in result["msg"], result["msg"]
    assert "\n" not in result["msg"]
    assert "exception" not in result
    assert result.get("changed", False) is False
    assert socks_peer.connections == 0


def test_no_traceback_for_a_huge_address(runner, socks_peer):
    result = runner.fails(module, socks_port=socks_peer.port, targets=[{"address": "a" * 100000}])
    assert len(result["msg"]) < 300
    assert socks_peer.connections == 0


def test_every_option_is_documented():
    import yaml
    doc = yaml.safe_load(module.DOCUMENTATION)
    spec = module.argument_spec()
    assert set(doc["options"]) == set(spec)
    assert set(doc["options"]["targets"]["suboptions"]) == set(spec["targets"]["options"])
    returned = yaml.safe_load(module.RETURN)
    assert set(returned["targets"]["contains"]) == set(backend.result_dict(
        backend.parse_target({"address": ONION}, 0, 1.0), backend.Outcome(True), 1, 0.0))
    assert os.path.basename(module.__file__) == "tor_onion_probe.py"
