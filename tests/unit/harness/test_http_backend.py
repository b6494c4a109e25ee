# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""harness.http_backend and harness.tap: a test's server never outlives its test and never hangs its teardown.

The hang of stop 51's CI (test_onion_health_layers' teardown, 296 s, its serve_forever thread found in accept()):
a connection poll() announced and someone else accepted. Made here on purpose with a second accept on the same open
file (os.dup of the listening socket): http.server's blocking accept() would wait for the next connection for good;
HttpBackend's stop() returns. A descriptor closed behind the server's back and reused is named by problem().
"""

import os
import select
import socket
import threading
import time
import urllib.request

import pytest

from harness.http_backend import BackendError, HttpBackend, Ok
from harness.tap import ControlTap


def test_serves_and_stops():
    with HttpBackend(Ok) as backend:
        with urllib.request.urlopen("http://127.0.0.1:%d/" % backend.port, timeout=5) as answer:
            assert answer.status == 200 and answer.read() == b"ok"
        assert backend.problem() is None
    assert not backend._thread.is_alive()


def test_a_connection_taken_by_another_accept_does_not_hang_stop():
    backend = HttpBackend(Ok)
    # the same open file, a second accept on it (its flags are the backend's: non-blocking, so the thief polls)
    thief = socket.socket(fileno=os.dup(backend.socket.fileno()))
    taken, stop = [], threading.Event()

    def steal():
        while not stop.is_set() and not taken:
            select.select([thief], [], [], 0.05)
            try:
                taken.append(thief.accept()[0])
            except BlockingIOError:
                pass

    stealer = threading.Thread(target=steal, daemon=True)
    stealer.start()
    clients = []
    try:
        deadline = time.monotonic() + 10
        while not taken and time.monotonic() < deadline:   # until the thief has won one race
            clients.append(socket.create_connection(("127.0.0.1", backend.port), timeout=5))
            stealer.join(0.01)
        assert taken, "the second accept never took a connection"
        started = time.monotonic()
        backend.stop()
        assert time.monotonic() - started < 5 and not backend._thread.is_alive()
    finally:
        stop.set()
        stealer.join(5)
        for sock in clients + taken:
            sock.close()
        thief.close()


def test_a_descriptor_closed_behind_its_back_is_named():
    backend = HttpBackend(Ok)
    fd = backend.socket.fileno()
    os.close(fd)                                   # what a stale close by number elsewhere does
    other = socket.socket()                        # the lowest free number: most likely the same one
    try:
        assert "no longer its listening socket" in (backend.problem() or "")
        if other.fileno() == fd:                   # a readiness on the new file is not waited on: serving stops
            other.bind(("127.0.0.1", 0))
            other.listen(1)
            socket.create_connection(other.getsockname(), timeout=5).close()
            backend._thread.join(5)
            assert not backend._thread.is_alive() and "no longer its listening socket" in backend.lost
        with pytest.raises(BackendError, match="no longer its listening socket"):
            backend.stop()
    finally:
        if other.fileno() == fd:
            other.detach()                         # its number was closed by the backend's stop() already
        else:
            other.close()


def test_tap_joins_its_threads_at_close():
    upstream = socket.socket()
    upstream.bind(("127.0.0.1", 0))
    upstream.listen(4)
    before = set(threading.enumerate())
    with ControlTap(upstream.getsockname()[1]) as tap:
        client = socket.create_connection(("127.0.0.1", tap.port), timeout=5)
        peer, _ = upstream.accept()
        client.sendall(b"PROTOCOLINFO 1\r\n")
        assert peer.recv(100) == b"PROTOCOLINFO 1\r\n"
    # the client and tor's side still open: the tap's close cut them and joined every thread it started
    left = [t.name for t in set(threading.enumerate()) - before if t.is_alive()]
    client.close()
    peer.close()
    upstream.close()
    assert left == [], left
