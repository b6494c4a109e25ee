# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Transport and reply framing (transport.py) against a scripted peer over a real socket."""

import contextlib
import errno
import os
import socket
import threading
import time

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import transport
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import (
    ConnectionFailed,
    ControlTimeout,
    ProtocolError,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.transport import ControlSocket
from harness.fake_tor import FakeTor
from harness.ports import free_port

GETINFO = b"GETINFO version\r\n"
VERSION_REPLY = b"250-version=0.4.9.11\r\n250 OK\r\n"


@contextlib.contextmanager
def fake_socket(script, greeting=b"", timeout=5.0, **options):
    """(fake, ControlSocket connected to it); the fake must not have logged an error."""
    with FakeTor(script, greeting) as fake:
        sock = ControlSocket.tcp("127.0.0.1", fake.port, timeout=timeout, **options)
        try:
            yield fake, sock
        finally:
            sock.close()
    assert fake.errors == []


def one_reply(answer, greeting=b"", **options):
    """Send GETINFO version to a fake that answers with `answer`; return the reply and the socket."""
    with fake_socket([(b"GETINFO", answer)], greeting, **options) as (_fake, sock):
        return sock.request(GETINFO), sock


class Trickler(object):
    """A peer that reads one command, then writes `payload` in `chunk`-byte pieces `delay`
    seconds apart (forever when `repeat`), for chunked delivery and slow peers."""

    def __init__(self, payload, chunk=1, delay=0.0, repeat=False):
        self.payload = payload
        self.chunk = chunk
        self.delay = delay
        self.repeat = repeat
        self.stop = threading.Event()
        self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(1)
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self):
        self.server.settimeout(10)
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.settimeout(10)
            try:
                buf = b""
                while b"\r\n" not in buf:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    buf += chunk
                while not self.stop.is_set():
                    for i in range(0, len(self.payload), self.chunk):
                        conn.sendall(self.payload[i:i + self.chunk])
                        if self.delay and self.stop.wait(self.delay):
                            return
                    if not self.repeat:
                        break
                self.stop.wait(10)
            except OSError:
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.server.close()
        self.thread.join(5)


# -- replies --------------------------------------------------------------------------------

def test_single_line_reply():
    reply, _sock = one_reply(b"250 OK\r\n")
    assert reply.ok and [(line.code, line.sep, line.text) for line in reply] == [("250", " ", "OK")]


def test_multi_line_reply():
    reply, _sock = one_reply(b"250-version=0.4.9.11\r\n250-onions/current=\r\n250 OK\r\n")
    assert [(line.sep, line.text) for line in reply] == [("-", "version=0.4.9.11"), ("-", "onions/current="),
                                                        (" ", "OK")]


@pytest.mark.parametrize("wire, data", [
    (b"SocksPort 0\r\nDisableNetwork 1\r\n.\r\n", "SocksPort 0\nDisableNetwork 1"),
    (b".\r\n", ""),
    (b"..leading dot\r\n...\r\n..\r\nmid.dot.\r\n.\r\n", ".leading dot\n..\n.\nmid.dot."),
    (b"\r\n\r\nafter blanks\r\n.\r\n", "\n\nafter blanks"),
    (b"caf\xc3\xa9\r\n.\r\n", "caf\u00e9"),
    (b"latin \xe9\r\n.\r\n", "latin \u00e9"),
])
def test_data_reply(wire, data):
    reply, _sock = one_reply(b"250+config-text=\r\n" + wire + b"250 OK\r\n")
    assert len(reply.lines) == 2
    assert reply.lines[0].sep == "+" and reply.lines[0].text == "config-text="
    assert reply.lines[0].data == data
    assert reply.lines[1].text == "OK" and reply.lines[1].data is None


def test_two_data_blocks_and_lines_in_one_reply():
    wire = (b"250+a=\r\none\r\n.\r\n250-b=2\r\n250+c=\r\nthree\r\nfour\r\n.\r\n250 OK\r\n")
    reply, _sock = one_reply(wire)
    assert [(line.text, line.data) for line in reply] == [("a=", "one"), ("b=2", None), ("c=", "three\nfour"),
                                                         ("OK", None)]


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7])
def test_reply_in_small_chunks(chunk):
    """Every split point of lines, CRLFs and the data terminator is handled."""
    payload = (b"650 BW 1 2\r\n250-version=0.4.9.11\r\n250+config-text=\r\nline one\r\n..dot\r\n.\r\n"
               b"250 OK\r\n")
    with Trickler(payload, chunk=chunk) as peer:
        sock = ControlSocket.tcp("127.0.0.1", peer.port, timeout=5)
        try:
            reply = sock.request(GETINFO)
        finally:
            sock.close()
    assert [(line.text, line.data) for line in reply] == [("version=0.4.9.11", None),
                                                         ("config-text=", "line one\n.dot"), ("OK", None)]
    assert [e.lines[0].text for e in sock.events] == ["BW 1 2"]


def test_large_data_block():
    body = b"".join(b"r relay%05d AAAA BBBB 2026-01-01 00:00:00 10.0.0.1 9001 0\r\n" % i for i in range(20000))
    reply, _sock = one_reply(b"250+ns/all=\r\n" + body + b".\r\n250 OK\r\n")
    lines = reply.lines[0].data.split("\n")
    assert len(lines) == 20000 and lines[-1].startswith("r relay19999 ")


def test_several_requests_on_one_connection():
    script = [(b"GETINFO", VERSION_REPLY), (b"GETCONF", b"250 SocksPort=0\r\n"), (b"SIGNAL", b"250 OK\r\n")]
    with fake_socket(script) as (fake, sock):
        assert sock.request(GETINFO).lines[0].text == "version=0.4.9.11"
        assert sock.request(b"GETCONF SocksPort\r\n").lines[0].text == "SocksPort=0"
        assert sock.request(b"SIGNAL NEWNYM\r\n").ok
    assert fake.received[:3] == [b"GETINFO version", b"GETCONF SocksPort", b"SIGNAL NEWNYM"]


def test_error_reply_is_a_reply():
    with fake_socket([(b"GETINFO", b'552 Unrecognized key "nosuch"\r\n'), (b"GETINFO", VERSION_REPLY)]) \
            as (_fake, sock):
        reply = sock.request(GETINFO)
        assert not reply.ok and reply.code == "552" and not sock.closed
        assert sock.request(GETINFO).ok


# -- asynchronous events --------------------------------------------------------------------

EVENTS = (b"650 BW 10 20\r\n"
          b"650-CIRC 1 EXTENDED\r\n650 OK\r\n"
          b"650+NS\r\nr moria1 AAAA BBBB\r\ns Running\r\n.\r\n650 OK\r\n")


def _event_summary(events):
    return [[(line.sep, line.text, line.data) for line in event] for event in events]


EXPECTED_EVENTS = [[(" ", "BW 10 20", None)],
                   [("-", "CIRC 1 EXTENDED", None), (" ", "OK", None)],
                   [("+", "NS", "r moria1 AAAA BBBB\ns Running"), (" ", "OK", None)]]


def test_events_before_the_reply_are_kept_apart():
    reply, sock = one_reply(EVENTS + VERSION_REPLY)
    assert reply.code == "250" and reply.lines[0].text == "version=0.4.9.11"
    assert _event_summary(sock.events) == EXPECTED_EVENTS
    assert all(e.is_event for e in sock.events)


def test_events_sent_before_any_command():
    reply, sock = one_reply(VERSION_REPLY, greeting=EVENTS)
    assert reply.lines[0].text == "version=0.4.9.11"
    assert _event_summary(sock.events) == EXPECTED_EVENTS


def test_events_between_replies():
    script = [(b"GETINFO", VERSION_REPLY + b"650 BW 1 1\r\n"),
              (b"GETINFO", b"650 BW 2 2\r\n250-version=again\r\n250 OK\r\n650 BW 3 3\r\n"),
              (b"SIGNAL", b"250 OK\r\n")]
    with fake_socket(script) as (_fake, sock):
        assert sock.request(GETINFO).lines[0].text == "version=0.4.9.11"
        assert sock.request(GETINFO).lines[0].text == "version=again"
        assert [e.lines[0].text for e in sock.events] == ["BW 1 1", "BW 2 2"]
        assert sock.request(b"SIGNAL NEWNYM\r\n").ok      # the trailing event is skipped, not the reply
        assert [e.lines[0].text for e in sock.events] == ["BW 1 1", "BW 2 2", "BW 3 3"]


def test_events_are_bounded():
    many = b"".join(b"650 BW %d 0\r\n" % i for i in range(transport.MAX_EVENTS + 5))
    _reply, sock = one_reply(many + VERSION_REPLY)
    assert len(sock.events) == transport.MAX_EVENTS
    assert sock.events[0].lines[0].text == "BW 5 0"
    assert sock.events[-1].lines[0].text == "BW %d 0" % (transport.MAX_EVENTS + 4)


def test_a_mark_is_not_moved_by_events_dropped_after_it():
    """A reader that remembered len(events) skipped what came next once MAX_EVENTS were kept (the health check of 30
    services lost the HSDirs' answers it waited for); a mark counts every event that came."""
    first = b"".join(b"650 BW %d 0\r\n" % i for i in range(transport.MAX_EVENTS - 2))
    more = b"".join(b"650 BW %d 0\r\n" % i for i in range(transport.MAX_EVENTS - 2, transport.MAX_EVENTS + 8))
    script = [(b"GETINFO", first + VERSION_REPLY), (b"GETINFO", more + VERSION_REPLY)]
    with fake_socket(script) as (_fake, sock):
        sock.request(GETINFO)
        mark = sock.event_mark()
        assert mark == transport.MAX_EVENTS - 2 and sock.dropped_events == 0
        sock.request(GETINFO)
        assert sock.dropped_events == 8 and sock.event_mark() == transport.MAX_EVENTS + 8
        assert [e.lines[0].text for e in sock.events_since(mark)] == [
            "BW %d 0" % i for i in range(transport.MAX_EVENTS - 2, transport.MAX_EVENTS + 8)]
        # what the position read: the 10 new events start 8 places earlier now
        assert sock.events[mark].lines[0].text == "BW %d 0" % (transport.MAX_EVENTS + 6)


def test_endless_events_do_not_hold_us_past_the_timeout():
    timeout = 0.5
    with Trickler(b"650 BW 1 1\r\n", chunk=1000, delay=0.02, repeat=True) as peer:
        sock = ControlSocket.tcp("127.0.0.1", peer.port, timeout=timeout)
        start = time.monotonic()
        with pytest.raises(ControlTimeout):
            sock.request(GETINFO)
        elapsed = time.monotonic() - start
    assert timeout * 0.5 <= elapsed < timeout + 2
    assert sock.events and sock.closed


# -- malformed and truncated ----------------------------------------------------------------

@pytest.mark.parametrize("wire, message", [
    (b"250 OK\n", "does not end with CRLF"),
    (b"250-version=1\n250 OK\r\n", "does not end with CRLF"),
    (b"25 OK\r\n", "malformed reply line"),
    (b"2500 OK\r\n", "malformed reply line"),
    (b"abc OK\r\n", "malformed reply line"),
    (b"250OK\r\n", "malformed reply line"),
    (b"250*OK\r\n", "malformed reply line"),
    (b"250\r\n", "malformed reply line"),
    (b"\r\n", "malformed reply line"),
    (b" 250 OK\r\n", "malformed reply line"),
    (b"250-version=1\r\n251 OK\r\n", "mixes status codes 250 and 251"),
    (b"650-CIRC 1 BUILT\r\n250 OK\r\n", "mixes status codes 650 and 250"),
    (b"250-a=1\r\n552 Unrecognized\r\n", "mixes status codes 250 and 552"),
])
def test_malformed_reply(wire, message):
    with fake_socket([(b"GETINFO", wire)]) as (_fake, sock):
        with pytest.raises(ProtocolError, match=message):
            sock.request(GETINFO)
        assert sock.closed
        with pytest.raises(ConnectionFailed, match="is closed"):
            sock.request(GETINFO)


@pytest.mark.parametrize("partial", [
    b"",
    b"250",
    b"250-version=0.4.9.11\r\n",
    b"250-version=0.4.9.11\r\n250 O",
    b"250+config-text=\r\nSocksPort 0\r\n",
    b"250+config-text=\r\nSocksPort 0\r\n.",
])
def test_truncated_reply_then_close(partial):
    # the greeting is the partial reply; the fake closes when it reads our command
    with fake_socket([(b"GETINFO", FakeTor.CLOSE)], greeting=partial, timeout=5) as (_fake, sock):
        start = time.monotonic()
        with pytest.raises(ConnectionFailed, match="closed the control connection") as info:
            sock.request(GETINFO)
        assert not isinstance(info.value, ControlTimeout)
        assert time.monotonic() - start < 2
        assert sock.closed


@pytest.mark.parametrize("greeting", [b"", b"250-version=0.4.9.11\r\n", b"250+config-text=\r\nSocksPort 0\r\n"])
def test_peer_that_stops_answering(greeting):
    timeout = 0.5
    with fake_socket([(b"GETINFO", FakeTor.HANG)], greeting=greeting, timeout=timeout) as (_fake, sock):
        start = time.monotonic()
        with pytest.raises(ControlTimeout, match="did not answer within 0.5s"):
            sock.request(GETINFO)
        elapsed = time.monotonic() - start
        assert sock.closed
    assert timeout * 0.5 <= elapsed < timeout + 2


@pytest.mark.parametrize("payload", [
    b"250-version=" + b"9" * 10000 + b"\r\n250 OK\r\n",                         # slow but complete
    b"250-version=0.4.9.11\r\n250+config-text=\r\n" + b"x" * 10000,             # slow data block
])
def test_peer_trickling_slower_than_the_deadline(payload):
    """One byte every 20 ms: each recv succeeds, but the whole reply has one deadline."""
    timeout = 0.5
    with Trickler(payload, chunk=1, delay=0.02) as peer:
        sock = ControlSocket.tcp("127.0.0.1", peer.port, timeout=timeout)
        start = time.monotonic()
        with pytest.raises(ControlTimeout):
            sock.request(GETINFO)
        elapsed = time.monotonic() - start
        sock.close()
    assert timeout * 0.5 <= elapsed < timeout + 2


# -- limits ---------------------------------------------------------------------------------

LINE_LIMIT = {"max_line": 100}
REPLY_LIMIT = {"max_reply": 1000}


@pytest.mark.parametrize("limit, wire", [
    (LINE_LIMIT, b"250 " + b"a" * 200 + b"\r\n"),                     # a complete but long line
    (LINE_LIMIT, b"250-" + b"a" * 5000),                              # never ends: no waiting for its end
    (LINE_LIMIT, b"250-ok=1\r\n250-" + b"a" * 200 + b"\r\n250 OK\r\n"),
    (REPLY_LIMIT, b"".join(b"250-key%02d=%s\r\n" % (i, b"v" * 80) for i in range(20)) + b"250 OK\r\n"),
    (REPLY_LIMIT, b"250+config-text=\r\n" + b"x" * 80 + b"\r\n" + b"y" * 2000 + b"\r\n.\r\n250 OK\r\n"),
    (REPLY_LIMIT, b"250+config-text=\r\n" + b"x" * 5000),              # a data block that never ends
    (REPLY_LIMIT, b"250+config-text=\r\n" + b"line\r\n" * 1000),      # many short data lines, no end
    (REPLY_LIMIT, b"650 " + b"e" * 1500 + b"\r\n" + VERSION_REPLY),     # an oversized event
    (REPLY_LIMIT, b"650+NS\r\n" + b"r x\r\n" * 300 + b".\r\n650 OK\r\n" + VERSION_REPLY),
])
def test_oversized_line_or_reply(limit, wire):
    with fake_socket([(b"GETINFO", wire)], timeout=5, **limit) as (_fake, sock):
        start = time.monotonic()
        with pytest.raises(ProtocolError, match="exceeds %d bytes" % list(limit.values())[0]):
            sock.request(GETINFO)
        assert time.monotonic() - start < 2
        assert sock.closed


def test_line_at_the_limit_is_accepted():
    line = b"250 " + b"a" * 96            # 100 bytes without CRLF
    reply, _sock = one_reply(line + b"\r\n", max_line=100)
    assert reply.lines[0].text == "a" * 96


def test_events_count_against_their_own_budget():
    # each event is a message of its own: several events below max_reply do not add up
    events = b"650 " + b"e" * 500 + b"\r\n"
    reply, sock = one_reply(events * 5 + VERSION_REPLY, max_reply=1000)
    assert reply.ok and len(sock.events) == 5


# -- connecting -----------------------------------------------------------------------------

def test_connection_refused_names_the_port():
    port = free_port()
    with pytest.raises(ConnectionFailed, match=r"control port 127\.0\.0\.1:%d: .*refused" % port):
        ControlSocket.tcp("127.0.0.1", port, timeout=2)


def test_missing_unix_socket_names_the_path(tmp_path):
    path = str(tmp_path / "nothing.sock")
    with pytest.raises(ConnectionFailed, match="control socket %s: No such file" % path):
        ControlSocket.unix(path, timeout=2)


def test_unix_socket_that_is_not_a_socket(tmp_path):
    path = tmp_path / "plain-file"
    path.write_text("x")
    with pytest.raises(ConnectionFailed, match="control socket %s" % path):
        ControlSocket.unix(str(path), timeout=2)


def test_unix_socket_cannot_be_created(monkeypatch, tmp_path):
    """Out of descriptors: socket() itself fails -- a ConnectionFailed naming the path, not a bare OSError."""
    def no_socket(*args, **kwargs):
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    monkeypatch.setattr(transport.socket, "socket", no_socket)
    path = str(tmp_path / "control")
    with pytest.raises(ConnectionFailed, match="control socket %s: Too many open files" % path):
        ControlSocket.unix(path, timeout=2)


class _FailingSocket(object):
    """A socket whose settimeout or connect fails with `error`; records whether it was closed."""

    def __init__(self, fail_in, error):
        self.fail_in = fail_in
        self.error = error
        self.closed = False

    def _maybe_fail(self, name):
        if self.fail_in == name:
            raise self.error

    def settimeout(self, timeout):
        self._maybe_fail("settimeout")

    def connect(self, address):
        self._maybe_fail("connect")

    def close(self):
        self.closed = True


@pytest.mark.parametrize("fail_in", ["settimeout", "connect"])
def test_unix_socket_closed_when_setup_fails(monkeypatch, tmp_path, fail_in):
    """An OSError after the socket exists is a ConnectionFailed and the socket is closed (no leak)."""
    made = []

    def failing_socket(*args, **kwargs):
        made.append(_FailingSocket(fail_in, OSError(errno.ENOBUFS, os.strerror(errno.ENOBUFS))))
        return made[-1]

    monkeypatch.setattr(transport.socket, "socket", failing_socket)
    path = str(tmp_path / "control")
    with pytest.raises(ConnectionFailed, match="control socket %s: No buffer space" % path):
        ControlSocket.unix(path, timeout=2)
    assert len(made) == 1 and made[0].closed


def test_unix_socket_closed_on_other_errors(monkeypatch, tmp_path):
    """Not an OSError (here a ValueError, as for a path with a NUL byte): raised as it is, the socket closed."""
    made = []

    def failing_socket(*args, **kwargs):
        made.append(_FailingSocket("connect", ValueError("embedded null byte")))
        return made[-1]

    monkeypatch.setattr(transport.socket, "socket", failing_socket)
    with pytest.raises(ValueError, match="embedded null byte"):
        ControlSocket.unix(str(tmp_path / "control"), timeout=2)
    assert len(made) == 1 and made[0].closed


@pytest.mark.parametrize("port", ["abc", "", None, 0, -1, 65536, 70000, "80\r\n81"])
def test_invalid_port(port):
    with pytest.raises(ConnectionFailed, match="invalid control port"):
        ControlSocket.tcp("127.0.0.1", port, timeout=2)


def test_unix_socket_transport(tmp_path):
    path = str(tmp_path / "fake.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)

    def serve():
        conn, _ = server.accept()
        with conn:
            assert conn.recv(100) == GETINFO
            conn.sendall(b"650 BW 1 1\r\n" + VERSION_REPLY)
            conn.recv(100)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        sock = ControlSocket.unix(path, timeout=5)
        assert sock.where == "socket %s" % path
        assert sock.request(GETINFO).lines[0].text == "version=0.4.9.11"
        assert len(sock.events) == 1
        sock.close()
        thread.join(5)
    finally:
        server.close()
        os.unlink(path)


def test_send_on_closed_socket():
    with fake_socket([(b"GETINFO", VERSION_REPLY)]) as (_fake, sock):
        assert sock.request(GETINFO).ok
        sock.close()
        sock.close()                                  # idempotent
        with pytest.raises(ConnectionFailed, match="is closed"):
            sock.send(GETINFO)
