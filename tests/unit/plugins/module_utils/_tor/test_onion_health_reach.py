# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""onion_health.reach() (issue 38.1) against a scripted control connection and a scripted SocksPort
(harness/fake_socks.py): the SocksPort found in net/listeners/socks (127.0.0.1 only), one NEWNYM before the
attempts, a fresh SOCKS username and password per attempt (RFC 1929), attempts until one answers, the HTTP status
reported, the service's HS_DESC REQUESTED events counted; not checked without a SocksPort or without known ports."""

import threading

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion, onion_health
from harness.fake_socks import FakeSocks, http_response

ADDRESS = onion.onion_address(onion.ed25519_public_from_expanded(bytes(range(64)))) + ".onion"
SID = ADDRESS[:-len(".onion")]


class _Event(object):
    def __init__(self, text):
        self.lines = [type("Line", (), {"text": text, "data": None})()]


class FakeCtl(object):
    def __init__(self, listeners):
        self.listeners = listeners
        self.events = []
        self.calls = []
        self.pending = []
        self.sock = self

    def get_info(self, key):
        self.calls.append(("GETINFO", key))
        return {key: self.listeners}

    def event_mark(self):
        return len(self.events)

    def events_since(self, mark):
        return self.events[mark:]

    def request(self, keyword, args):
        self.calls.append((keyword, tuple(args)))

    def signal(self, name):
        self.calls.append(("SIGNAL", name))
        self.pending.append(_Event("HS_DESC REQUESTED %s NO_AUTH $%s~relay0 KEY" % (SID, "A" * 40)))

    def wait_event(self, timeout):
        if self.pending:
            self.events.append(self.pending.pop(0))
            return self.events[-1]
        return None


def _service(ports):
    return onion_health._Service({"address": ADDRESS, "type": "persistent", "ports": ports})


def _login(peer):
    _version, length = peer.recv_exact(2)
    user = peer.recv_exact(length).decode()
    (length,) = peer.recv_exact(1)
    peer.recv_exact(length)
    with lock:
        peer.fake.users = getattr(peer.fake, "users", []) + [user]
    peer.send(bytes([1, 0]))


def _connects(peer):
    """A SOCKS server that logs the probe in and connects it (reply 0), then holds the stream a second."""
    peer.greeting(0x02)
    _login(peer)
    peer.request()
    peer.reply(0)
    peer.hold(1)


lock = threading.Lock()


def test_newnym_then_fresh_credentials_per_attempt_until_one_answers():
    def handler(peer):
        peer.greeting(0x02)
        _login(peer)
        peer.request()
        if peer.index == 0:
            peer.reply(0xF2)         # introduction failed
            return
        peer.reply(0)
        peer.http(http_response(503, b"busy"))

    with FakeSocks(handler) as fake:
        ctl = FakeCtl('"[::1]:9050" "127.0.0.1:%d"' % fake.port)
        service = _service([{"port": 22}, {"port": 80, "target_address": "127.0.0.1", "target_port": 8080}])
        onion_health.reach(ctl, [service], timeout=20, attempts=3)
    layer = service.layers["reach"]
    assert ctl.calls[:3] == [("GETINFO", "net/listeners/socks"), ("SETEVENTS", ("HS_DESC",)), ("SIGNAL", "NEWNYM")]
    assert ctl.calls[-1] == ("SETEVENTS", ())
    assert fake.requests == [(ADDRESS, 80)] * 2 and len(set(fake.users)) == 2
    assert all(u.startswith("onionlab-health-") for u in fake.users)
    assert layer["ok"] is True and layer["port"] == 80 and layer["socks_port"] == "127.0.0.1:%d" % fake.port
    assert [a["socks_reply"] for a in layer["attempts"]] == [0xF2, None]
    assert layer["attempts"][1]["status"] == 503 and layer["descriptor_fetches"] == 1
    assert layer["evidence"].startswith("1 of 2 fresh connections to port 80 answered (HTTP 503 in ")


def test_every_attempt_failing_names_the_socks_error():
    def handler(peer):
        peer.greeting(0x02)
        _login(peer)
        peer.request()
        peer.reply(0x01)

    with FakeSocks(handler) as fake:
        ctl = FakeCtl('"127.0.0.1:%d"' % fake.port)
        service = _service([{"port": 8333}])
        onion_health.reach(ctl, [service], timeout=3, attempts=2)
    layer = service.layers["reach"]
    assert layer["ok"] is False and fake.requests == [(ADDRESS, 8333)] * 2
    assert layer["evidence"].startswith("0 of 2 fresh connections to port 8333 in ")
    assert "SOCKS error 0x01 general failure" in layer["evidence"]


def test_not_checked_without_a_loopback_socksport_or_known_ports():
    ctl = FakeCtl('"0.0.0.0:9050" "unix:/run/tor/socks"')
    service = _service([{"port": 80}])
    onion_health.reach(ctl, [service])
    assert service.layers["reach"]["ok"] is None and "no SocksPort on 127.0.0.1" in service.layers["reach"]["evidence"]
    assert ("SIGNAL", "NEWNYM") not in ctl.calls
    ctl = FakeCtl('"127.0.0.1:9050"')
    unknown = _service(None)
    onion_health.reach(ctl, [unknown])
    assert unknown.layers["reach"]["ok"] is None and "ports are not known" in unknown.layers["reach"]["evidence"]


def test_reach_ports_names_a_configured_port_only():
    listed = [{"address": ADDRESS, "ports": [{"port": 80}, {"port": 8443}]}]
    assert onion_health._reach_ports({SID: 8443}, listed) == {ADDRESS: 8443}
    with pytest.raises(onion_health.HealthError, match="does not configure port 22 .its ports: 80, 8443."):
        onion_health._reach_ports({ADDRESS: 22}, listed)
    with pytest.raises(onion_health.HealthError, match="is not a service this check covers"):
        onion_health._reach_ports({"b" * 56: 80}, listed)

    with FakeSocks(_connects) as fake:
        service = _service([{"port": 80}, {"port": 8443}])
        onion_health.reach(FakeCtl('"127.0.0.1:%d"' % fake.port), [service], timeout=5, reach_ports={ADDRESS: 8443})
    assert fake.requests == [(ADDRESS, 8443)] and service.layers["reach"]["ok"] is True
    assert "TCP connected" in service.layers["reach"]["evidence"]


def test_a_service_with_client_authorization_is_probed_only_with_a_key(monkeypatch):
    """No key on tor's client side (ONION_CLIENT_AUTH_VIEW lists none): reach not checked, nothing sent; with one,
    probed like any service."""
    held = {"creds": []}
    monkeypatch.setattr(onion_health._client_auth, "view", lambda ctl, sid: held["creds"])

    with FakeSocks(_connects) as fake:
        service = onion_health._Service({"address": ADDRESS, "type": "persistent", "ports": [{"port": 22}],
                                         "client_auth": True})
        ctl = FakeCtl('"127.0.0.1:%d"' % fake.port)
        onion_health.reach(ctl, [service], timeout=5)
        assert service.layers["reach"]["ok"] is None and fake.requests == []
        assert "admits authorized clients only" in service.layers["reach"]["evidence"]
        held["creds"] = ["a credential"]
        onion_health.reach(ctl, [service], timeout=5)
    assert service.layers["reach"]["ok"] is True and fake.requests == [(ADDRESS, 22)]
