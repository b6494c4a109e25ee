# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Transport: a blocking socket to tor's control port, and reading whole replies off it.

This is a private module_utils file of onionlab.tor; its API may change at any time.

No threads and no event loop: a module is a short-lived process that sends a command and
reads its reply in place. Asynchronous events (650) that arrive between replies are kept in
``ControlSocket.events`` and never taken for a reply.

Limits protect against a hostile or broken peer: every read has a deadline (the timeout is
for a whole reply, so a peer that trickles bytes cannot hold us), a line may not exceed
``max_line`` bytes and a reply ``max_reply`` bytes.
"""

from __future__ import annotations

import errno
import re
import select
import socket
import time

from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import (
    ConnectionFailed,
    ControlTimeout,
    ProtocolError,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.reply import Reply, ReplyLine

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_LINE = 1024 * 1024          # 1 MiB: far beyond any line tor writes
DEFAULT_MAX_REPLY = 64 * 1024 * 1024    # 64 MiB: a full consensus is ~3 MiB
MAX_EVENTS = 1000                       # asynchronous events kept; older ones dropped

_STATUS_RE = re.compile(r"^([0-9]{3})([ +-])(.*)\Z", re.S)


def _connect_error(exc, where, path=None):
    """A ConnectionFailed for a failed connect; .errno and .path (of a unix socket) are kept for
    the advice client.connect adds (advice.py)."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, socket.timeout):
        reason = "timed out"
    error = ConnectionFailed("cannot connect to tor's control %s: %s" % (where, reason))
    error.errno = getattr(exc, "errno", None)
    error.path = path
    return error


class ControlSocket(object):
    """A connected control socket with reply framing."""

    def __init__(self, sock, where, timeout=DEFAULT_TIMEOUT, max_line=DEFAULT_MAX_LINE,
                 max_reply=DEFAULT_MAX_REPLY):
        self._sock = sock
        self.where = where
        self.timeout = float(timeout)
        self.max_line = max_line
        self.max_reply = max_reply
        self._buf = bytearray()
        self._pos = 0
        self.events = []
        self.dropped_events = 0      # how many were dropped from the front of .events (MAX_EVENTS)
        self.closed = False
        quickack = getattr(socket, "TCP_QUICKACK", None)
        family = getattr(sock, "family", None)
        self._quickack = quickack if family in (socket.AF_INET, socket.AF_INET6) else None

    # -- opening ---------------------------------------------------------------------------
    @classmethod
    def tcp(cls, host, port, timeout=DEFAULT_TIMEOUT, **kwargs):
        where = "port %s:%s" % (host, port)
        try:
            number = int(port)
        except (TypeError, ValueError):
            number = 0
        if not 1 <= number <= 65535:
            # getaddrinfo takes 70000 as 70000 % 65536: refuse, do not connect elsewhere
            raise ConnectionFailed("invalid control port %r" % (port,))
        try:
            sock = socket.create_connection((host, number), timeout=timeout)
        except OSError as exc:
            raise _connect_error(exc, where)
        return cls(sock, where, timeout, **kwargs)

    @classmethod
    def unix(cls, path, timeout=DEFAULT_TIMEOUT, **kwargs):
        where = "socket %s" % path
        sock = None
        try:
            # socket() fails too (EMFILE, ENOBUFS): inside the try, so every OSError is a
            # ConnectionFailed, and a socket that was made is closed whatever goes wrong
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(path)
        except BaseException as exc:
            if sock is not None:
                sock.close()
            if isinstance(exc, OSError):
                raise _connect_error(exc, where, path)
            raise
        return cls(sock, where, timeout, **kwargs)

    # -- writing ---------------------------------------------------------------------------
    def send(self, data):
        """Send framed bytes (see reply.format_command)."""
        if self.closed:
            raise ConnectionFailed("the control connection to %s is closed" % self.where)
        try:
            self._sock.settimeout(self.timeout)
            self._sock.sendall(data)
        except socket.timeout:
            self.close()
            raise ControlTimeout("tor at %s did not accept our command within %ss" % (self.where, self.timeout))
        except OSError as exc:
            self.close()
            raise ConnectionFailed("lost the control connection to %s: %s" % (self.where, exc.strerror or exc))

    # -- reading ---------------------------------------------------------------------------
    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            self.close()
            raise ControlTimeout("tor at %s did not answer within %ss" % (self.where, self.timeout))
        try:
            self._sock.settimeout(remaining)
            if self._quickack:
                # Linux: acknowledge at once, or a multi-segment reply (a consensus) stalls ~40 ms
                # per round on delayed ACKs against tor's send buffering.
                self._sock.setsockopt(socket.IPPROTO_TCP, self._quickack, 1)
            chunk = self._sock.recv(65536)
        except socket.timeout:
            self.close()
            raise ControlTimeout("tor at %s did not answer within %ss" % (self.where, self.timeout))
        except OSError as exc:
            self.close()
            if exc.errno in (errno.ECONNRESET, errno.EPIPE):
                raise ConnectionFailed("tor at %s closed the control connection" % self.where)
            raise ConnectionFailed("lost the control connection to %s: %s" % (self.where, exc.strerror or exc))
        if not chunk:
            self.close()
            raise ConnectionFailed("tor at %s closed the control connection" % self.where)
        if self._pos:
            del self._buf[:self._pos]
            self._pos = 0
        self._buf += chunk

    def _readline(self, deadline, budget):
        """One line without its CRLF, as str. budget: bytes the reply may still use."""
        while True:
            end = self._buf.find(b"\n", self._pos)
            if end >= 0:
                break
            if len(self._buf) - self._pos > min(self.max_line, budget):
                self.close()
                raise ProtocolError("reply line from %s exceeds %d bytes" % (self.where, min(self.max_line, budget)))
            self._fill(deadline)
        raw = bytes(self._buf[self._pos:end + 1])
        self._pos = end + 1
        if len(raw) > self.max_line + 2:
            self.close()
            raise ProtocolError("reply line from %s exceeds %d bytes" % (self.where, self.max_line))
        if not raw.endswith(b"\r\n"):
            self.close()
            raise ProtocolError("reply line from %s does not end with CRLF" % self.where)
        try:
            return raw[:-2].decode("utf-8"), len(raw)
        except UnicodeDecodeError:
            return raw[:-2].decode("latin-1"), len(raw)

    def _read_data(self, deadline, budget):
        """A dot-encoded data block up to its lone '.' line, found in bulk (a consensus is
        ~50,000 lines). Returns (text with LF line ends and dots unstuffed, bytes used)."""
        scanned = 0
        while True:
            pos = self._pos
            if self._buf.startswith(b".\r\n", pos):
                self._pos = pos + 3
                return "", 3
            end = self._buf.find(b"\r\n.\r\n", pos + scanned)
            if end >= 0:
                break
            available = len(self._buf) - pos
            if available > budget:
                self.close()
                raise ProtocolError("reply from %s exceeds %d bytes" % (self.where, self.max_reply))
            scanned = max(0, available - 4)
            self._fill(deadline)
        raw = bytes(self._buf[pos:end])
        self._pos = end + 5
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("latin-1")
        text = ("\n" + text.replace("\r\n", "\n")).replace("\n.", "\n")[1:]
        return text, end + 5 - pos

    def _read_message(self, deadline):
        lines = []
        used = 0
        code0 = None
        while True:
            text, size = self._readline(deadline, self.max_reply - used)
            used += size
            m = _STATUS_RE.match(text)
            if not m:
                self.close()
                raise ProtocolError("malformed reply line from %s: %r" % (self.where, text[:80]))
            code, sep, rest = m.groups()
            if code0 is None:
                code0 = code
            elif code != code0:
                self.close()
                raise ProtocolError("reply from %s mixes status codes %s and %s" % (self.where, code0, code))
            data = None
            if sep == "+":
                data, size = self._read_data(deadline, self.max_reply - used)
                used += size
            if used > self.max_reply:
                self.close()
                raise ProtocolError("reply from %s exceeds %d bytes" % (self.where, self.max_reply))
            lines.append(ReplyLine(code, sep, rest, data))
            if sep == " ":
                return Reply(lines)

    def recv_reply(self):
        """The next reply that is not an asynchronous event; events are kept in .events."""
        if self.closed:
            raise ConnectionFailed("the control connection to %s is closed" % self.where)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._read_message(deadline)
            if message.is_event:
                self._keep(message)
                continue
            return message

    def request(self, data):
        self.send(data)
        return self.recv_reply()

    def wait_event(self, timeout):
        """The next asynchronous event to arrive within `timeout` seconds, also kept in .events; None when
        none came (the connection stays open). A reply that is not an event is a ProtocolError."""
        if self.closed:
            raise ConnectionFailed("the control connection to %s is closed" % self.where)
        deadline = time.monotonic() + max(0.0, timeout)
        while self._buf.find(b"\n", self._pos) < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                readable = select.select([self._sock], [], [], remaining)[0]
            except (OSError, ValueError) as exc:
                self.close()
                raise ConnectionFailed("lost the control connection to %s: %s" % (self.where, exc))
            if not readable:
                return None
            self._fill(time.monotonic() + self.timeout)
        message = self._read_message(time.monotonic() + self.timeout)
        if not message.is_event:
            self.close()
            raise ProtocolError("tor at %s sent a reply nobody asked for: %r" % (self.where, message.lines[0].text[:80]))
        self._keep(message)
        return message

    def _keep(self, message):
        self.events.append(message)
        if len(self.events) > MAX_EVENTS:
            del self.events[0]
            self.dropped_events += 1

    def event_mark(self):
        """A place in the stream of events (how many came so far): events_since(mark) gives the ones after it. A
        position in .events is not one: once MAX_EVENTS are kept, every new event drops the oldest and moves the
        others (a check of 30 services saw 1,000 events and skipped the HSDirs' answers it waited for)."""
        return self.dropped_events + len(self.events)

    def events_since(self, mark):
        """The events kept that came after mark (event_mark()), oldest first."""
        return self.events[max(0, mark - self.dropped_events):]

    def close(self):
        if not self.closed:
            self.closed = True
            try:
                self._sock.close()
            except OSError:
                pass
