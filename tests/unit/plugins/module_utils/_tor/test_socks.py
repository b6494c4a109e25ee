# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SOCKS5 client (socks.py) against a scripted peer over a real loopback socket
(harness/fake_socks.py): the bytes it sends, every reply code, malformed replies, short reads,
timeouts, and a SocksPort that is not there."""

import json
import os
import socket
import struct
import time

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import socks
from harness.fake_socks import FakeSocks
from harness.ports import free_port

ONION = "at7ze7u76lc7m5pmj4nxgkfp6526u54zpn7oxrxftdcyay6uhvteguad.onion"


def connect(fake, host=ONION, port=80, timeout=5.0):
    proxy = socks.SocksProxy("127.0.0.1", fake.port)
    return socks.connect(proxy, host, port, time.monotonic() + timeout)


def refused_with(handler, **kwargs):
    """The SocksError a connection through a fake with handler ends in."""
    with FakeSocks(handler) as fake:
        with pytest.raises(socks.SocksError) as info:
            connect(fake, **kwargs).close()
    assert fake.errors == []
    return info.value


def test_sends_greeting_and_domain_name_request():
    with FakeSocks(lambda peer: (peer.accept(), peer.hold(2))) as fake:
        sock = connect(fake, port=8080)
        sock.close()
    assert fake.greetings == [b"\x05\x01\x00"]
    name = ONION.encode()
    assert fake.raw_requests == [b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack("!H", 8080)]
    assert fake.requests == [(ONION, 8080)]
    assert fake.errors == []


def test_connected_socket_carries_data():
    def handler(peer):
        peer.accept()
        peer.send(peer.recv_exact(5)[::-1])

    with FakeSocks(handler) as fake:
        sock = connect(fake)
        with sock:
            sock.sendall(b"hello")
            assert socks.recv_exact(sock, 5, time.monotonic() + 5, "echo", "fake") == b"olleh"
    assert fake.errors == []


@pytest.mark.parametrize("atyp, address, expected", [
    (1, b"\x7f\x00\x00\x01", "127.0.0.1"),
    (4, socket.inet_pton(socket.AF_INET6, "::1"), "::1"),
    (3, b"bound.example", "bound.example"),
    (3, b"", ""),
])
def test_bound_address_of_every_type(atyp, address, expected):
    def handler(peer):
        peer.greeting()
        peer.request()
        peer.reply(0, atyp, address, 4242)
        peer.hold(2)

    with FakeSocks(handler) as fake:
        proxy = socks.SocksProxy("127.0.0.1", fake.port)
        sock = proxy.open(time.monotonic() + 5)
        with sock:
            assert socks.handshake(sock, ONION, 80, time.monotonic() + 5) == (expected, 4242)
    assert fake.errors == []


@pytest.mark.parametrize("code", sorted(socks.REPLIES))
def test_every_reply_code_is_named(code):
    reason, text, _hint = socks.REPLIES[code]
    error = refused_with(lambda peer: (peer.greeting(), peer.request(), peer.reply(code)))
    assert isinstance(error, socks.SocksRefused)
    assert error.code == code and error.reason == reason
    assert str(error).startswith("tor answered 0x%02X: %s" % (code, text))


def test_extended_codes_read_clearly():
    # the onion-service codes of tor's ExtendedErrors (proposal 304), as a user reads them
    assert socks.reply_text(0xF0).startswith("tor answered 0xF0: onion service descriptor can not be found")
    assert socks.reply_reason(0xF4) == "missing_client_auth"
    assert socks.reply_reason(0xF5) == "wrong_client_auth"
    assert socks.reply_reason(0xF6) == "invalid_address"
    assert socks.reply_reason(0xF7) == "introduction_timed_out"
    assert [c for c in socks.REPLIES if c >= 0xF0] == list(range(0xF0, 0xF8))


@pytest.mark.parametrize("code", [0x09, 0x42, 0xEF, 0xF8, 0xFF])
def test_unknown_reply_code(code):
    error = refused_with(lambda peer: (peer.greeting(), peer.request(), peer.reply(code)))
    assert error.code == code
    assert error.reason == "socks_error_0x%02x" % code
    assert "neither RFC 1928 nor tor defines" in str(error)


def test_refusal_needs_only_the_first_bytes():
    # a peer that closes right after the code: the refusal is still the code, not a short read
    error = refused_with(lambda peer: (peer.greeting(), peer.request(), peer.send(b"\x05\xf0\x00\x01")))
    assert error.reason == "descriptor_not_found"


@pytest.mark.parametrize("answer, reason, words", [
    (b"\x04\x00", "protocol_error", "is not a SOCKS5 proxy: its answer to the greeting starts with 0x04"),
    (b"\x00\x5a", "protocol_error", "a SOCKS4 reply?"),
    (b"HTTP/1.0 400 Bad Request\r\n\r\n", "protocol_error", "an HTTP server"),
    (b"514 Authentication required.\r\n", "protocol_error", "tor's control port?"),
    (b"\x05\xff", "auth_required", "accepts none of the methods offered"),
    (b"\x05\x02", "protocol_error", "chose authentication method 0x02, which was not offered"),
])
def test_bad_greeting_answer(answer, reason, words):
    def handler(peer):
        peer.recv_exact(3)
        peer.send(answer)
        peer.hold(2)

    error = refused_with(handler)
    assert isinstance(error, socks.SocksProtocolError)
    assert error.reason == reason
    assert words in str(error)


@pytest.mark.parametrize("reply, reason, words", [
    (b"\x04\x00\x00\x01\0\0\0\0\0\0", "protocol_error", "the reply to CONNECT starts with 0x04, not 0x05"),
    (b"\x05\x00\x00\x05\0\0\0\0\0\0", "protocol_error", "address type 0x05"),
    (b"\x05\x00\x00\x00", "protocol_error", "address type 0x00"),
    (b"\x05\x00\x00\x01\x7f\x00", "connection_closed", "in the middle of bound address of the reply (2 of 6 bytes)"),
    (b"\x05\x00\x00\x04" + b"\0" * 10, "connection_closed", "(10 of 18 bytes)"),
    (b"\x05\x00\x00\x03\x10abc", "connection_closed", "(3 of 18 bytes)"),
    (b"\x05\x00", "connection_closed", "in the middle of reply to CONNECT"),
    (b"", "connection_closed", "closed the connection instead of sending reply to CONNECT"),
])
def test_malformed_or_short_connect_reply(reply, reason, words):
    def handler(peer):
        peer.greeting()
        peer.request()
        peer.send(reply)

    error = refused_with(handler)
    assert isinstance(error, socks.SocksProtocolError)
    assert error.reason == reason
    assert words in str(error)


def test_short_greeting_answer():
    error = refused_with(lambda peer: (peer.recv_exact(3), peer.send(b"\x05")))
    assert error.reason == "connection_closed"
    assert "in the middle of answer to the SOCKS5 greeting (1 of 2 bytes)" in str(error)


def test_closed_before_greeting_answer():
    error = refused_with(lambda peer: peer.recv_exact(3))
    assert error.reason == "connection_closed"
    assert "closed the connection instead of sending answer to the SOCKS5 greeting" in str(error)


def test_reply_trickled_byte_by_byte_is_read_whole():
    def handler(peer):
        peer.recv_exact(3)
        peer.send(b"\x05\x00", chunk=1, delay=0.01)
        peer.request()
        peer.reply(0, 3, b"trickle.example", 9, chunk=1, delay=0.01)
        peer.hold(2)

    with FakeSocks(handler) as fake:
        proxy = socks.SocksProxy("127.0.0.1", fake.port)
        sock = proxy.open(time.monotonic() + 5)
        with sock:
            assert socks.handshake(sock, ONION, 80, time.monotonic() + 5) == ("trickle.example", 9)
    assert fake.errors == []


def test_silent_proxy_times_out_at_the_deadline():
    started = time.monotonic()
    error = refused_with(lambda peer: peer.hold(10), timeout=0.5)
    took = time.monotonic() - started
    assert isinstance(error, socks.SocksTimeout)
    assert error.reason == "proxy_timeout"
    assert "did not answer the SOCKS5 greeting in time (is it a SocksPort?)" in str(error)
    assert took < 5


def test_tor_that_never_connects_times_out():
    error = refused_with(lambda peer: (peer.greeting(), peer.request(), peer.hold(10)), timeout=0.5)
    assert isinstance(error, socks.SocksTimeout)
    assert error.reason == "timeout"
    assert str(error) == "tor did not connect to %s:80 in time" % ONION


def test_trickle_past_the_deadline_times_out():
    # one byte every 0.2 s: the deadline is for the whole handshake, not per read
    def handler(peer):
        peer.recv_exact(3)
        peer.send(b"\x05\x00")
        peer.request()
        peer.reply(0, 3, b"a-long-name.example", 1, chunk=1, delay=0.2)

    started = time.monotonic()
    error = refused_with(handler, timeout=0.8)
    assert isinstance(error, socks.SocksTimeout)
    assert time.monotonic() - started < 3


def test_nothing_listening():
    proxy = socks.SocksProxy("127.0.0.1", free_port())
    with pytest.raises(socks.ProxyUnavailable) as info:
        socks.connect(proxy, ONION, 80, time.monotonic() + 5)
    assert info.value.reason == "proxy_refused"
    assert str(info.value) == ("connection refused by the SocksPort 127.0.0.1:%d: nothing listens there "
                               "(is tor running, with this SocksPort?)" % proxy.port)


def test_unix_socket(tmp_path):
    path = str(tmp_path / "socks")
    with FakeSocks(lambda peer: (peer.accept(), peer.hold(2)), unix_path=path) as fake:
        proxy = socks.SocksProxy(socket_path=path)
        assert proxy.where == "the SocksPort unix:%s" % path
        socks.connect(proxy, ONION, 443, time.monotonic() + 5).close()
    assert fake.requests == [(ONION, 443)]
    assert fake.errors == []


def test_unix_socket_missing(tmp_path):
    proxy = socks.SocksProxy(socket_path=str(tmp_path / "nothing"))
    with pytest.raises(socks.ProxyUnavailable) as info:
        socks.connect(proxy, ONION, 80, time.monotonic() + 5)
    assert info.value.reason == "proxy_missing"
    assert "does not exist" in str(info.value)


def test_stale_unix_socket(tmp_path):
    # what a stopped tor leaves behind: a socket file nobody listens on (a plain file reads the same)
    path = str(tmp_path / "socks")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.close()
    proxy = socks.SocksProxy(socket_path=path)
    with pytest.raises(socks.ProxyUnavailable) as info:
        socks.connect(proxy, ONION, 80, time.monotonic() + 5)
    assert info.value.reason == "proxy_refused"
    assert str(info.value).startswith("connection refused by the SocksPort unix:%s: nothing listens there" % path)


def _connect_error(path):
    """(reason, message) of connecting to the unix SocksPort at path; as root, from a child that
    has dropped to nobody (root enters every directory, so the check would not bite)."""
    def attempt():
        try:
            socks.connect(socks.SocksProxy(socket_path=path), ONION, 80, time.monotonic() + 5)
        except socks.ProxyUnavailable as exc:
            return [exc.reason, str(exc)]
        return ["connected", ""]
    if os.geteuid() != 0:
        return tuple(attempt())
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, try, report, leave without pytest's atexit work
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(write_end, json.dumps(attempt()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as handle:
        data = handle.read()
    _pid, status = os.waitpid(pid, 0)
    assert status == 0 and data, "the unprivileged child failed"
    return tuple(json.loads(data))


def test_unix_path_in_a_directory_we_cannot_enter(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o000)
    try:
        reason, message = _connect_error(str(locked / "socks"))
    finally:
        locked.chmod(0o700)
    assert reason == "proxy_unavailable"
    assert message == "cannot connect to the SocksPort unix:%s: Permission denied" % (locked / "socks")


def test_unresolvable_proxy_host():
    proxy = socks.SocksProxy("no-such-host.invalid", 9050)
    with pytest.raises(socks.ProxyUnavailable) as info:
        socks.connect(proxy, ONION, 80, time.monotonic() + 5)
    assert "cannot resolve the SocksPort's host no-such-host.invalid" in str(info.value)


def test_deadline_already_passed():
    with FakeSocks(lambda peer: peer.hold(1)) as fake:
        proxy = socks.SocksProxy("127.0.0.1", fake.port)
        with pytest.raises(socks.SocksTimeout):
            socks.connect(proxy, ONION, 80, time.monotonic() - 1)


@pytest.mark.parametrize("host, port, words", [
    ("\u00e9t\u00e9.onion", 80, "is not ASCII"),
    ("a" * 256, 80, "1 to 255 bytes, not 256"),
    ("", 80, "1 to 255 bytes, not 0"),
    (ONION, 0, "port 0 is not between 1 and 65535"),
    (ONION, 65536, "port 65536"),
])
def test_request_refuses_what_socks5_cannot_carry(host, port, words):
    with pytest.raises(socks.SocksError) as info:
        socks.connect_request(host, port)
    assert words in str(info.value)
    assert info.value.reason == "invalid_address"


def test_nothing_leaks_when_refused():
    # every failing connect closes its socket: many refusals do not use up descriptors
    before = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else None
    with FakeSocks(lambda peer: (peer.greeting(), peer.request(), peer.reply(0xF0))) as fake:
        for _ in range(50):
            with pytest.raises(socks.SocksRefused):
                connect(fake)
    if before is not None:
        assert len(os.listdir("/proc/self/fd")) <= before + 2


def _userpass(peer, status=0):
    """Read RFC 1929's subnegotiation, answer status; returns (username, password)."""
    version, length = peer.recv_exact(2)
    user = peer.recv_exact(length)
    (length,) = peer.recv_exact(1)
    password = peer.recv_exact(length)
    peer.fake.logins = getattr(peer.fake, "logins", []) + [(version, user.decode(), password.decode())]
    peer.send(bytes([1, status]))


def test_username_and_password_for_stream_isolation():
    """RFC 1929 (tor's IsolateSOCKSAuth): only method 02 offered, then 01 ulen user plen password."""
    def handler(peer):
        peer.greeting(0x02)
        _userpass(peer)
        peer.request()
        peer.reply(0)
        peer.hold(2)

    with FakeSocks(handler) as fake:
        proxy = socks.SocksProxy("127.0.0.1", fake.port, username="probe-1f", password="s3")
        socks.connect(proxy, ONION, 80, time.monotonic() + 5).close()
    assert fake.greetings == [b"\x05\x01\x02"] and fake.logins == [(1, "probe-1f", "s3")]
    assert fake.requests == [(ONION, 80)] and fake.errors == []


@pytest.mark.parametrize("method, status, reason", [(0x00, 0, "protocol_error"), (0xFF, 0, "auth_required"),
                                                    (0x02, 1, "auth_refused")])
def test_username_and_password_refused(method, status, reason):
    def handler(peer):
        peer.greeting(method)
        if method == 0x02:
            _userpass(peer, status)
        peer.hold(2)

    with FakeSocks(handler) as fake:
        proxy = socks.SocksProxy("127.0.0.1", fake.port, username="u", password="p")
        with pytest.raises(socks.SocksError) as info:
            socks.connect(proxy, ONION, 80, time.monotonic() + 5).close()
    assert info.value.reason == reason, info.value
