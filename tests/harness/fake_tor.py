# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A scripted fake controller over a real loopback socket, for what a real tor cannot be
made to do: wrong SAFECOOKIE hashes, interleaved events, malformed or truncated replies, a
peer that stops answering, oversized lines.

    with FakeTor([(b"PROTOCOLINFO", b"250-PROTOCOLINFO 1\\r\\n..."), ...]) as fake:
        connect(port=fake.port, ...)

Each step is (expected command prefix or None, bytes to send back or a callable(line) ->
bytes or None). A step whose reply is FakeTor.HANG sends nothing and keeps the socket open;
FakeTor.CLOSE closes it. Received lines are kept in .received.
"""

import socket
import threading
import time


class FakeTor(object):
    HANG = object()
    CLOSE = object()

    def __init__(self, script, greeting=b""):
        self.script = list(script)
        self.greeting = greeting
        self.received = []
        self.errors = []
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(1)
        self.port = self._server.getsockname()[1]
        # short accept timeouts, set before the thread starts: the thread never touches a socket that
        # __exit__ may already have closed (it joins the thread first, then closes the server)
        self._server.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self):
        # A connection may come late (a playbook's tasks reach their fakes one after the other: on a loaded
        # machine the third came after the old 10 s accept timeout, and its module waited for an answer in vain);
        # short accept timeouts until the test leaves the with block, or 120 s.
        deadline = time.monotonic() + 120
        while True:
            try:
                conn, _ = self._server.accept()
                break
            except socket.timeout:
                if self._stop.is_set() or time.monotonic() > deadline:
                    return
            except OSError:
                return
        conn.settimeout(0.5)
        buf = b""
        try:
            if self.greeting:
                conn.sendall(self.greeting)
            for expect, answer in self.script:
                while b"\r\n" not in buf:
                    chunk = self._recv(conn)
                    if not chunk:
                        return
                    buf += chunk
                line, buf = buf.split(b"\r\n", 1)
                self.received.append(line)
                if expect is not None and not line.startswith(expect):
                    self.errors.append("expected %r, got %r" % (expect, line))
                    return
                if callable(answer):
                    answer = answer(line)
                if answer is self.HANG:
                    self._stop.wait(30)
                    return
                if answer is self.CLOSE:
                    return
                if answer:
                    conn.sendall(answer)
            # script done: read what else comes (QUIT) until the peer closes. Once the test has left
            # the with block (stop set), what the peer already sent is still read (a short timeout
            # drains it): a QUIT sent just before the stop was lost otherwise (a flaky test_null).
            while True:
                if self._stop.is_set():
                    conn.settimeout(0.5)
                try:
                    chunk = conn.recv(65536)
                except socket.timeout:
                    if self._stop.is_set():
                        return
                    continue
                if not chunk:
                    return
                self.received.extend(chunk.split(b"\r\n")[:-1])
        except OSError:
            return
        finally:
            conn.close()

    def _recv(self, conn, idle=10.0):
        """The next bytes the peer sends; b"" when it closes, when it is silent for idle seconds or once the test
        has left the with block (polled every 0.5 s, so the thread ends within a second of __exit__)."""
        quiet = time.monotonic() + idle
        while not self._stop.is_set() and time.monotonic() < quiet:
            try:
                return conn.recv(65536)
            except socket.timeout:
                continue
        return b""

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)
        self._server.close()
        if self._thread.is_alive():
            raise RuntimeError("the fake tor's thread did not end within 10 s of the test leaving it")
