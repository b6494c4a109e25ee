# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A scripted SOCKS5 peer over a real socket (loopback TCP or a unix socket), for the unit
tests of plugins/module_utils/_tor/socks.py, probe.py and the tor_onion_probe module.

    def handler(peer):
        peer.greeting()                    # reads 05 01 00, answers 05 00
        host, port = peer.request()        # reads the CONNECT request (ATYP 3)
        peer.reply(0xF0)                   # 05 F0 00 01 0.0.0.0:0
    with FakeSocks(handler) as fake:
        ... connect to 127.0.0.1:fake.port ...
    assert fake.errors == []

Each accepted connection runs handler(peer) in its own thread; peer is a Peer. What the client
sent is kept: fake.greetings (raw greeting bytes), fake.requests ((host, port) of each CONNECT,
plus the raw bytes in fake.raw_requests) and fake.http_requests (raw HTTP requests read by
Peer.http). An exception in a handler other than the client going away is in fake.errors.
fake.connections counts accepted connections. Stopping closes every socket.
"""

import os
import socket
import struct
import threading
import time


class ClientGone(Exception):
    pass


class Peer(object):
    def __init__(self, conn, fake, index):
        self.conn = conn
        self.fake = fake
        self.index = index          # 0 for the first connection

    def recv_exact(self, n, timeout=10.0):
        data = b""
        self.conn.settimeout(timeout)
        while len(data) < n:
            chunk = self.conn.recv(n - len(data))
            if not chunk:
                raise ClientGone("client closed after %r" % data)
            data += chunk
        return data

    def recv_until(self, marker, limit=65536, timeout=10.0):
        data = b""
        self.conn.settimeout(timeout)
        while marker not in data:
            chunk = self.conn.recv(4096)
            if not chunk:
                raise ClientGone("client closed after %r" % data)
            data += chunk
            if len(data) > limit:
                raise AssertionError("no %r in %d bytes" % (marker, len(data)))
        return data

    def send(self, data, chunk=None, delay=0.0):
        """Send data, in chunk-byte pieces delay seconds apart when chunk is given."""
        if chunk is None:
            self.conn.sendall(data)
            return
        for i in range(0, len(data), chunk):
            self.conn.sendall(data[i:i + chunk])
            if delay:
                time.sleep(delay)

    def greeting(self, method=0x00):
        """Read a greeting (version, methods) and answer with method."""
        head = self.recv_exact(2)
        raw = head + self.recv_exact(head[1])
        self.fake.greetings.append(raw)
        self.send(bytes([5, method]))
        return raw

    def request(self):
        """Read a CONNECT request; returns (host, port) (host as str for ATYP 3)."""
        head = self.recv_exact(4)
        if head[3] == 3:
            (length,) = self.recv_exact(1)
            rest = bytes([length]) + self.recv_exact(length + 2)
            host = rest[1:1 + length].decode("ascii", "replace")
        elif head[3] == 1:
            rest = self.recv_exact(6)
            host = socket.inet_ntoa(rest[:4])
        else:
            rest = self.recv_exact(18)
            host = socket.inet_ntop(socket.AF_INET6, rest[:16])
        port = struct.unpack("!H", rest[-2:])[0]
        self.fake.raw_requests.append(head + rest)
        self.fake.requests.append((host, port))
        return host, port

    def reply(self, code=0, atyp=1, address=b"\0\0\0\0", port=0, **send):
        """A CONNECT reply: 05 code 00 atyp address port (address raw bytes, or the name for atyp 3)."""
        body = bytes([len(address)]) + address if atyp == 3 else address
        self.send(bytes([5, code, 0, atyp]) + body + struct.pack("!H", port), **send)

    def accept(self):
        """The usual success: greeting, request, reply 0. Returns (host, port)."""
        self.greeting()
        target = self.request()
        self.reply(0)
        return target

    def http(self, response, **send):
        """Read an HTTP request (up to its blank line) and send response (bytes)."""
        raw = self.recv_until(b"\r\n\r\n")
        self.fake.http_requests.append(raw)
        self.send(response, **send)
        return raw

    def hold(self, seconds=30.0):
        """Keep the connection open, reading and dropping what comes, until the client closes it
        or the fake stops (a peer that never answers)."""
        end = time.monotonic() + seconds
        self.conn.settimeout(0.1)
        while time.monotonic() < end and not self.fake.stopping.is_set():
            try:
                if not self.conn.recv(4096):
                    return
            except socket.timeout:
                continue


def http_response(status=200, body=b"ok", reason=b"OK", headers=()):
    head = b"HTTP/1.0 %d %s\r\nContent-Length: %d\r\n" % (status, reason, len(body))
    for header in headers:
        head += header + b"\r\n"
    return head + b"\r\n" + body


class FakeSocks(object):
    def __init__(self, handler, unix_path=None):
        self.handler = handler
        self.unix_path = unix_path
        self.greetings = []
        self.requests = []
        self.raw_requests = []
        self.http_requests = []
        self.errors = []
        self.connections = 0
        self.stopping = threading.Event()
        self._conns = []
        self._threads = []
        self._lock = threading.Lock()
        if unix_path:
            self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.server.bind(unix_path)
            self.port = None
        else:
            self.server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.server.bind(("127.0.0.1", 0))
            self.port = self.server.getsockname()[1]
        self.server.listen(32)
        self._accepter = threading.Thread(target=self._accept, daemon=True)

    def _accept(self):
        while not self.stopping.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with self._lock:
                index = self.connections
                self.connections += 1
                self._conns.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn, index), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn, index):
        try:
            if hasattr(socket, "TCP_NODELAY") and conn.family == socket.AF_INET:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.handler(Peer(conn, self, index))
        except (ClientGone, ConnectionResetError, BrokenPipeError):
            pass
        except OSError as exc:
            if not self.stopping.is_set():
                self.errors.append(repr(exc))
        except Exception as exc:  # a test's handler failed: the test must see it
            self.errors.append(repr(exc))
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def __enter__(self):
        self._accepter.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self.stopping.set()
        try:
            # shutdown wakes the accepting thread (close alone leaves it blocked in accept on Linux)
            self.server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if self._accepter.is_alive():
            self._accepter.join(timeout=5)
        try:
            self.server.close()
        except OSError:
            pass
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in self._threads:
            thread.join(timeout=5)
        if self.unix_path and os.path.exists(self.unix_path):
            os.unlink(self.unix_path)
