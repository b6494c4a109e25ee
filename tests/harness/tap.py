# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A recording man-in-the-middle between the modules and a real tor's ControlPort (loopback only).

    with ControlTap(tor.control_port) as tap:            # modules get control_port=tap.port
        ...
    tap.lines        # every line a client sent, as bytes without CRLF, in order
    tap.keywords()   # the first word of each command line (data-block lines excluded)

on_line(line) is called for every client line before it is forwarded; it may act (kill tor, wait)
and return "close" to cut the connection instead of forwarding the line.
on_reply(data, last_line) is called for every chunk tor sends, before it is forwarded, with the
last command line the client sent on that connection; it may act likewise and return "close" to
cut the connection instead of forwarding the chunk (tor applied the command, the client never
hears so).
"""

import socket
import threading


def _shutdown(*socks):
    for sock in socks:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class ControlTap(object):
    def __init__(self, upstream_port, on_line=None, host="127.0.0.1", on_reply=None):
        self.upstream = (host, upstream_port)
        self.on_line = on_line
        self.on_reply = on_reply
        self.lines = []
        self.connections = 0
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind((host, 0))
        self._server.listen(16)
        self.port = self._server.getsockname()[1]
        self._stop = False
        self._threads = []
        self._conns = []
        self._lock = threading.Lock()

    def keywords(self):
        out, in_data = [], False
        for line in self.lines:
            if in_data:
                in_data = line != b"."
                continue
            word = line.split(b" ", 1)[0]
            if word.startswith(b"+"):
                in_data = True
                word = word[1:]
            out.append(word)
        return out

    def _accept(self):
        while not self._stop:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
            last = [b""]  # this connection's last command line
            for target, args in ((self._up, (client, upstream, last)), (self._down, (upstream, client, last))):
                thread = threading.Thread(target=target, args=args, daemon=True)
                thread.start()
                self._threads.append(thread)

    def _up(self, client, upstream, last):
        buf = b""
        try:
            while True:
                chunk = client.recv(65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    line = line[:-1] if line.endswith(b"\r") else line
                    with self._lock:
                        self.lines.append(line)
                    last[0] = line
                    if self.on_line and self.on_line(line) == "close":
                        return
                    upstream.sendall(line + b"\r\n")
            if buf:
                self.lines.append(buf)
                upstream.sendall(buf)
        except OSError:
            pass
        finally:
            _shutdown(client, upstream)

    def _down(self, upstream, client, last):
        try:
            while True:
                chunk = upstream.recv(65536)
                if not chunk:
                    break
                if self.on_reply and self.on_reply(chunk, last[0]) == "close":
                    break
                client.sendall(chunk)
        except OSError:
            pass
        finally:
            _shutdown(client, upstream)
            client.close()
            upstream.close()

    def __enter__(self):
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()
        return self

    def __exit__(self, *exc):
        # shutdown() wakes the accept() and recv() calls blocked on these sockets (a close() alone does not: the
        # thread stays blocked for good, one leaked thread per tap); the acceptor first, so that no connection is
        # added after the others are cut; then every thread of the tap is joined
        self._stop = True
        _shutdown(self._server)
        self._acceptor.join(10)
        with self._lock:
            conns = list(self._conns)
        _shutdown(*conns)
        for thread in [self._acceptor] + self._threads:
            thread.join(10)
        self._server.close()
        for sock in conns:
            sock.close()
        alive = [t.name for t in [self._acceptor] + self._threads if t.is_alive()]
        if alive and exc[0] is None:
            raise AssertionError("ControlTap: threads %s did not end within 10 s of the tap's close" % alive)
