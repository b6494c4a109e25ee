# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""probe.py: addresses and targets checked before anything is sent, one attempt (tcp, http)
against a scripted SOCKS peer that then plays the onion service (harness/fake_socks.py), and
the retry loop with its deadline."""

import os
import time

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion, probe, socks
from harness.fake_socks import FakeSocks, http_response
from harness.ports import free_port

ONION = "at7ze7u76lc7m5pmj4nxgkfp6526u54zpn7oxrxftdcyay6uhvteguad.onion"
SERVICE_ID = ONION[:-len(".onion")]


def valid_address():
    return onion.onion_address(onion.ed25519_public_from_expanded(os.urandom(64))) + ".onion"


def target(**kwargs):
    raw = dict(address=ONION)
    raw.update(kwargs)
    return probe.parse_target(raw, 0, 5.0)


def run_attempt(handler, timeout=None, **kwargs):
    with FakeSocks(handler) as fake:
        outcome = probe.attempt(socks.SocksProxy("127.0.0.1", fake.port), target(**kwargs), timeout)
    assert fake.errors == []
    return outcome, fake


# -- addresses ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text, name", [
    (ONION, ONION),
    (SERVICE_ID, ONION),
    (ONION.upper(), ONION),
    ("  %s.  " % ONION, ONION),
    ("www.%s" % ONION, "www." + ONION),
    ("a-b.c9.%s" % ONION.upper(), "a-b.c9." + ONION),
])
def test_accepted_addresses(text, name):
    assert probe.normalize_address(text) == (name, SERVICE_ID)


@pytest.mark.parametrize("text, words", [
    ("", "is empty"),
    (".onion", "has no service id before .onion"),
    ("example.com", "'example.com' is not an onion address"),
    ("abc.onion", "'abc.onion' is not a v3 onion address (56 base32 characters"),
    (SERVICE_ID[:-1] + "1", "is not a v3 onion address"),
    ("expyuzz4wqqyqhjn.onion", "is a version 2 address, which tor no longer supports"),
    (SERVICE_ID[:10] + ("b" if SERVICE_ID[10] != "b" else "c") + SERVICE_ID[11:], "wrong checksum"),  # a typo
    ("-www.%s" % ONION, "'-www' is not a valid host name label"),
    ("a..%s" % ONION, "'' is not a valid host name label"),
    ("%s.%s" % ("a" * 63, ONION) * 1, None),
    (".".join(["a" * 60] * 4) + "." + ONION, "longer than 255 characters"),
])
def test_refused_addresses(text, words):
    if words is None:
        probe.normalize_address(text)
        return
    with pytest.raises(probe.ProbeInputError) as info:
        probe.normalize_address(text)
    assert words in str(info.value)


def test_version_byte_is_checked():
    # a 56-character address with a good checksum for version 4: refused for its version
    import base64
    import hashlib
    key = onion.ed25519_public_from_expanded(os.urandom(64))
    checksum = hashlib.sha3_256(b".onion checksum" + key + b"\x04").digest()[:2]
    address = base64.b32encode(key + checksum + b"\x04").decode().lower()
    with pytest.raises(probe.ProbeInputError) as info:
        probe.normalize_address(address)
    assert "is not a version 3 onion address" in str(info.value)


def test_key_that_is_no_curve_point_is_refused():
    # most random 32 bytes are no ed25519 key tor accepts; their checksummed address is refused here
    # instead of tor answering 0xF6 (or 0x01 without ExtendedErrors)
    refused = 0
    for _ in range(64):
        raw = os.urandom(32)
        if not probe.ed25519_key_is_valid(raw):
            refused += 1
            with pytest.raises(probe.ProbeInputError) as info:
                probe.normalize_address(onion.onion_address(raw))
            assert "its key is not a valid ed25519 public key" in str(info.value)
    assert refused >= 40          # about 15 in 16


def test_real_keys_are_valid():
    for _ in range(20):
        assert probe.ed25519_key_is_valid(onion.ed25519_public_from_expanded(os.urandom(64)))


def test_small_order_and_non_canonical_keys_are_invalid():
    identity = (1).to_bytes(32, "little")
    assert not probe.ed25519_key_is_valid(identity)
    # (0, -1), of order 2: on the curve but outside the prime-order subgroup
    minus_one = (2 ** 255 - 19 - 1).to_bytes(32, "little")
    assert not probe.ed25519_key_is_valid(minus_one)
    # y >= p is not a canonical encoding
    assert not probe.ed25519_key_is_valid((2 ** 255 - 19 + 1).to_bytes(32, "little"))
    # x = 0 with the sign bit set
    assert not probe.ed25519_key_is_valid((1 | (1 << 255)).to_bytes(32, "little"))
    assert not probe.ed25519_key_is_valid(b"\x01" * 31)


# -- targets -----------------------------------------------------------------------------------
def test_target_defaults():
    t = target()
    assert (t.name, t.port, t.mode, t.path, t.statuses, t.host_header, t.body_contains, t.timeout) == \
        (ONION, 80, "http", "/", (200,), None, None, 5.0)
    assert t.request() == ("GET / HTTP/1.0\r\nHost: %s\r\nUser-Agent: onionlab.tor-probe\r\nAccept: */*\r\n"
                           "Connection: close\r\n\r\n" % ONION).encode()
    assert b"Host: %s:8080\r\n" % ONION.encode() in target(port=8080).request()
    assert b"Host: example.org\r\n" in target(host_header="example.org").request()


@pytest.mark.parametrize("raw, words", [
    (dict(address=None), "targets[0].address: must be a string"),
    (dict(address=42), "targets[0].address: must be a string"),
    (dict(port=0), "targets[0].port: must be between 1 and 65535, got 0"),
    (dict(port=65536), "targets[0].port: must be between 1 and 65535, got 65536"),
    (dict(port=True), "targets[0].port: must be between 1 and 65535, got True"),
    (dict(mode="udp"), "targets[0].mode: must be one of http, tcp, got 'udp'"),
    (dict(mode="tcp", path="/"), "targets[0].path: applies to mode http only (this target has mode tcp)"),
    (dict(mode="tcp", status=[200]), "targets[0].status: applies to mode http only"),
    (dict(mode="tcp", host_header="x"), "targets[0].host_header: applies to mode http only"),
    (dict(mode="tcp", body_contains="x"), "targets[0].body_contains: applies to mode http only"),
    (dict(path="index.html"), "targets[0].path: must start with /"),
    (dict(path="/a b"), "targets[0].path: must start with / and hold no space"),
    (dict(path="/a\r\nX-Injected: 1"), "targets[0].path: must start with /"),
    (dict(path="/" + "a" * 8000), "targets[0].path: must start with /"),
    (dict(status=[]), "targets[0].status: must be a list of HTTP status codes"),
    (dict(status=[99]), "targets[0].status: must hold HTTP status codes between 100 and 599, got 99"),
    (dict(status=[200, 600]), "got 600"),
    (dict(host_header=""), "targets[0].host_header: must be a non-empty header value"),
    (dict(host_header="a\r\nX: y"), "targets[0].host_header: must be a non-empty header value"),
    (dict(body_contains=""), "targets[0].body_contains: must be a non-empty string"),
    (dict(timeout=0), "targets[0].timeout: must be more than 0 and at most 604800 (a week), got 0"),
    (dict(timeout=-1.5), "targets[0].timeout: must be more than 0"),
    (dict(timeout=float("nan")), "targets[0].timeout: must be a number of seconds"),
    (dict(timeout=1e9), "at most 604800"),
])
def test_bad_targets(raw, words):
    full = dict(address=ONION)
    full.update(raw)
    with pytest.raises(probe.ProbeInputError) as info:
        probe.parse_target(full, 0, 5.0)
    assert words in str(info.value)


@pytest.mark.parametrize("value, allow_zero, words", [
    (0, False, "must be more than 0"),
    (-1, True, "must be 0 or more"),
    ("3", False, "must be a number of seconds"),
    (True, False, "must be a number of seconds"),
    (float("inf"), True, "at most 604800"),
])
def test_check_seconds(value, allow_zero, words):
    with pytest.raises(probe.ProbeInputError) as info:
        probe.check_seconds(value, "deadline", allow_zero)
    assert str(info.value).startswith("deadline ") and words in str(info.value)
    assert probe.check_seconds(0, "deadline", True) == 0.0


# -- one attempt -------------------------------------------------------------------------------
def test_tcp_attempt():
    outcome, fake = run_attempt(lambda peer: (peer.accept(), peer.hold(2)), mode="tcp", port=22)
    assert outcome.reachable and outcome.reason is None and outcome.error is None
    assert 0 < outcome.time_to_first_byte < 5
    assert outcome.status is None
    assert fake.requests == [(ONION, 22)]


def test_http_attempt():
    def handler(peer):
        peer.accept()
        peer.http(http_response(200, b"hello"))

    outcome, fake = run_attempt(handler, path="/health?x=1")
    assert outcome.reachable and outcome.status == 200
    assert 0 < outcome.time_to_first_byte < 5
    assert fake.http_requests[0].startswith(b"GET /health?x=1 HTTP/1.0\r\nHost: %s\r\n" % ONION.encode())


def test_time_to_first_byte_counts_from_the_socks_connection():
    # tor takes 0.3 s to connect, the service 0.2 s to answer: about 0.5 s
    def handler(peer):
        peer.greeting()
        peer.request()
        time.sleep(0.3)
        peer.reply(0)
        peer.recv_until(b"\r\n\r\n")
        time.sleep(0.2)
        peer.send(http_response())

    outcome, _fake = run_attempt(handler)
    assert outcome.reachable
    assert 0.45 <= outcome.time_to_first_byte < 3


@pytest.mark.parametrize("response, reason, words, status", [
    (http_response(404, reason=b"Not Found"), "http_status", "HTTP status 404, expected 200", 404),
    (b"SSH-2.0-OpenSSH_9.2\r\n", "not_http", "the answer is not HTTP/1.x: it starts with 'SSH-2.0-OpenSSH_9.2\\x0d\\x0a'",
     None),
    (b"\x16\x03\x01\x00", "not_http", "it starts with '\\x16\\x03\\x01\\x00'", None),
    (b"HTTP/2 200\r\n\r\n", "not_http", "not HTTP/1.x", None),
    (b"HTTP/1.1 2000 Odd\r\n\r\n", "not_http", "not HTTP/1.x", None),
])
def test_http_answers_that_do_not_count(response, reason, words, status):
    outcome, _fake = run_attempt(lambda peer: (peer.accept(), peer.http(response)))
    assert not outcome.reachable
    assert outcome.reason == reason and words in outcome.error, outcome.error
    assert outcome.status == status
    assert outcome.time_to_first_byte is not None   # the service did answer


def test_expected_statuses():
    outcome, _fake = run_attempt(lambda peer: (peer.accept(), peer.http(http_response(301, reason=b"Moved"))),
                                 status=[200, 301])
    assert outcome.reachable and outcome.status == 301
    outcome, _fake = run_attempt(lambda peer: (peer.accept(), peer.http(http_response(500))), status=[200, 301])
    assert outcome.error == "HTTP status 500, expected 200 or 301"


def test_status_line_split_over_reads():
    def handler(peer):
        peer.accept()
        peer.http(http_response(200), chunk=3, delay=0.01)

    outcome, _fake = run_attempt(handler)
    assert outcome.reachable and outcome.status == 200


def test_body_contains_found_across_reads():
    body = b"x" * 100000 + b"host alpha service web" + b"y" * 1000

    def handler(peer):
        peer.accept()
        peer.http(http_response(200, body), chunk=7000)

    outcome, _fake = run_attempt(handler, body_contains="host alpha service web")
    assert outcome.reachable and outcome.status == 200


def test_body_contains_missing():
    outcome, _fake = run_attempt(lambda peer: (peer.accept(), peer.http(http_response(200, b"host beta"))),
                                 body_contains="host alpha")
    assert not outcome.reachable
    assert outcome.reason == "body_mismatch"
    assert outcome.error == "HTTP status 200, but the body (9 bytes read) does not contain 'host alpha'"


def test_body_contains_stops_after_a_mebibyte():
    def handler(peer):
        peer.accept()
        peer.http(b"HTTP/1.0 200 OK\r\n\r\n")
        try:
            while True:
                peer.send(b"z" * 65536)
        except OSError:
            pass

    outcome, _fake = run_attempt(handler, body_contains="never")
    assert outcome.reason == "body_mismatch"
    assert "does not contain 'never'" in outcome.error


def test_service_closes_without_answer():
    outcome, _fake = run_attempt(lambda peer: (peer.accept(), peer.recv_until(b"\r\n\r\n")))
    assert outcome.reason == "connection_closed"
    assert outcome.error == "connected, but the service closed the connection without an HTTP answer"
    assert outcome.time_to_first_byte is None


def test_service_that_never_answers_times_out():
    started = time.monotonic()
    outcome, _fake = run_attempt(lambda peer: (peer.accept(), peer.hold(10)), timeout=0.6)
    assert outcome.reason == "timeout"
    assert outcome.error == "connected, but no HTTP answer came in time (timeout 0.6s)"
    assert time.monotonic() - started < 5


def test_head_that_never_ends_times_out():
    def handler(peer):
        peer.accept()
        peer.http(b"HTTP/1.0 200 OK\r\nX-Slow: ")
        peer.hold(10)

    outcome, _fake = run_attempt(handler, timeout=0.6, body_contains="x")
    assert outcome.reason == "timeout"
    assert outcome.error.startswith("the HTTP answer's head did not complete in time")


def test_refusal_is_reported_with_its_code():
    outcome, _fake = run_attempt(lambda peer: (peer.greeting(), peer.request(), peer.reply(0xF4)))
    assert not outcome.reachable
    assert outcome.reason == "missing_client_auth" and outcome.socks_reply == 0xF4
    assert outcome.error.startswith("tor answered 0xF4: onion service missing client authorization")


def test_tor_that_never_connects():
    outcome, _fake = run_attempt(lambda peer: (peer.greeting(), peer.request(), peer.hold(10)), timeout=0.5)
    assert outcome.reason == "timeout"
    assert outcome.error == "tor did not connect to %s:80 in time (timeout 0.5s)" % ONION


def test_no_socksport():
    t = target()
    outcome = probe.attempt(socks.SocksProxy("127.0.0.1", free_port()), t)
    assert outcome.reason == "proxy_refused"
    assert outcome.socks_reply is None


# -- retries and the deadline ------------------------------------------------------------------
def refuse_then_serve(refusals, code=0xF0):
    def handler(peer):
        peer.greeting()
        peer.request()
        if peer.index < refusals:
            peer.reply(code)
            return
        peer.reply(0)
        peer.http(http_response())
    return handler


def test_retries_until_it_answers():
    with FakeSocks(refuse_then_serve(2)) as fake:
        (result,) = probe.probe(socks.SocksProxy("127.0.0.1", fake.port), [target()], deadline=10, delay=0.05)
    assert result["reachable"] is True and result["attempts"] == 3
    assert result["error"] is None and result["reason"] is None and result["socks_reply"] is None
    assert result["status"] == 200 and result["address"] == ONION and result["port"] == 80
    assert fake.connections == 3


def test_deadline_zero_is_one_attempt():
    with FakeSocks(refuse_then_serve(5)) as fake:
        (result,) = probe.probe(socks.SocksProxy("127.0.0.1", fake.port), [target()], deadline=0, delay=0.05)
    assert result["reachable"] is False and result["attempts"] == 1
    assert result["reason"] == "descriptor_not_found" and result["socks_reply"] == 0xF0
    assert result["time_to_first_byte"] is None


def test_gives_up_at_the_deadline():
    started = time.monotonic()
    with FakeSocks(refuse_then_serve(10 ** 6)) as fake:
        (result,) = probe.probe(socks.SocksProxy("127.0.0.1", fake.port), [target()], deadline=1.0, delay=0.1)
    took = time.monotonic() - started
    assert result["reachable"] is False
    assert 3 <= result["attempts"] <= 11
    assert 0.9 <= took < 3


def test_no_attempt_runs_past_the_deadline():
    # every attempt would wait 5 s for tor; after the first, attempts end at the deadline
    with FakeSocks(lambda peer: (peer.greeting(), peer.request(), peer.hold(10))) as fake:
        started = time.monotonic()
        (result,) = probe.probe(socks.SocksProxy("127.0.0.1", fake.port), [target(timeout=0.5)], deadline=1.2,
                                delay=0.05)
        took = time.monotonic() - started
    assert result["reason"] == "timeout" and result["attempts"] >= 2
    assert took < 2.5


def test_targets_are_probed_at_once():
    def slow(peer):
        peer.accept()
        peer.recv_until(b"\r\n\r\n")
        time.sleep(0.5)
        peer.send(http_response())

    targets = [target(address=valid_address()) for _ in range(6)]
    with FakeSocks(slow) as fake:
        started = time.monotonic()
        results = probe.probe(socks.SocksProxy("127.0.0.1", fake.port), targets, deadline=0)
        took = time.monotonic() - started
    assert [r["address"] for r in results] == [t.name for t in targets]
    assert all(r["reachable"] for r in results)
    assert took < 2.5          # six half-second answers, not one after another (3 s)
    assert sorted(host for host, _port in fake.requests) == sorted(t.name for t in targets)


def test_http_over_tls_with_a_self_signed_certificate(tmp_path):
    """A target with tls (a service's port 443, onion_health's reach): TLS inside the SOCKS connection, the
    certificate not verified (the onion address authenticates the service), the HTTP status read."""
    import shutil
    import ssl
    import subprocess
    if not shutil.which("openssl"):
        pytest.skip("openssl makes the test's certificate")
    key, cert = str(tmp_path / "key.pem"), str(tmp_path / "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=test.onion"], check=True, capture_output=True)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)

    def handler(peer):
        peer.accept()
        peer.conn = server.wrap_socket(peer.conn, server_side=True)
        peer.http(http_response(204, b""))

    with FakeSocks(handler) as fake:
        target = probe.Target(ONION, ONION[:-6], 443, "http", statuses=range(100, 600), timeout=10, tls=True)
        outcome = probe.attempt(socks.SocksProxy("127.0.0.1", fake.port), target)
    assert outcome.reachable and outcome.status == 204, outcome.error
    assert fake.http_requests and fake.http_requests[0].startswith(b"GET / HTTP/1.0\r\n")
