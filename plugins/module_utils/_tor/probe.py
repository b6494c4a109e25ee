# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reaching onion services through tor's SocksPort: one attempt (a TCP connect, or an HTTP GET
with the expected status), and attempts retried until a deadline, every target at once.

This is a private module_utils file of onionlab.tor (the backend of tor_onion_probe); its API
may change at any time. Standard library only; nothing is written anywhere.

An attempt never raises for what the network or the far end does: it returns an Outcome with
a stable ``reason`` keyword and a clear ``error`` text. Only bad input raises (ProbeInputError).
"""

from __future__ import annotations

import math
import re
import socket
import ssl
import threading
import time

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor import socks
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

MODES = ("http", "tcp")
MAX_HEAD = 64 * 1024            # status line and headers
MAX_BODY = 1024 * 1024          # what body_contains searches
USER_AGENT = "onionlab.tor-probe"
MAX_WORKERS = 32                # targets probed at once


class ProbeInputError(TorError, ValueError):
    """A target or option that cannot be probed (nothing was sent)."""


# -- addresses ---------------------------------------------------------------------------------
# tor refuses, with SOCKS reply 0xF6 (ExtendedErrors) or 0x01, an address whose key is not a point
# of the curve's prime-order subgroup; about 15 of 16 random 56-character addresses with a good
# checksum are such. Checked here (onion.ed25519_key_is_valid), so a mistyped-but-checksummed
# address is an input error and not a wait until the deadline.
ed25519_key_is_valid = onion.ed25519_key_is_valid


_LABEL_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z")


def normalize_address(text):
    """'<56 chars>[.onion]' or 'sub.<56 chars>.onion' -> (name sent to tor, service id).
    Lower-cased; v3 only; checksum, version and key checked. Raises ProbeInputError."""
    if not isinstance(text, str):
        raise ProbeInputError("must be a string")
    name = text.strip().lower().rstrip(".")
    if not name:
        raise ProbeInputError("is empty")
    labels = name.split(".")
    if labels[-1] == "onion":
        labels = labels[:-1]
    elif len(labels) > 1:
        raise ProbeInputError("%r is not an onion address (a v3 address is 56 base32 characters, with or "
                              "without .onion)" % text[:80])
    if not labels or not labels[-1]:
        raise ProbeInputError("%r has no service id before .onion" % text[:80])
    service_id, subdomains = labels[-1], labels[:-1]
    if len(service_id) == 16 and re.match(r"^[a-z2-7]{16}\Z", service_id):
        raise ProbeInputError("%s.onion is a version 2 address, which tor no longer supports (a v3 address "
                              "is 56 characters)" % service_id)
    if not onion.SERVICE_ID_RE.match(service_id):
        raise ProbeInputError("%r is not a v3 onion address (56 base32 characters, a-z and 2-7, with or without "
                              ".onion)" % text[:80])
    try:
        public_key = onion.parse_onion_address(service_id)
    except onion.OnionKeyError as exc:
        raise ProbeInputError(str(exc))
    if not ed25519_key_is_valid(public_key):
        raise ProbeInputError("%s.onion has a good checksum but its key is not a valid ed25519 public key "
                              "(mistyped?); tor would refuse it" % service_id)
    for label in subdomains:
        if not _LABEL_RE.match(label):
            raise ProbeInputError("%r: %r is not a valid host name label" % (text[:80], label[:80]))
    full = ".".join(subdomains + [service_id, "onion"])
    if len(full) > 255:
        raise ProbeInputError("%r is longer than 255 characters" % text[:80])
    return full, service_id


# -- targets -----------------------------------------------------------------------------------
_PATH_RE = re.compile(r"^/[\x21-\x7e]*\Z")
_HEADER_RE = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?\Z")


class Target(object):
    """One thing to reach: name (sent to tor), port, mode and the HTTP expectations."""

    def __init__(self, name, service_id, port, mode="http", path="/", statuses=(200,), host_header=None,
                 body_contains=None, timeout=30.0, tls=False):
        self.name = name
        self.tls = tls          # HTTP over TLS (a service's port 443); the certificate is not verified
        self.service_id = service_id
        self.port = port
        self.mode = mode
        self.path = path
        self.statuses = tuple(statuses)
        self.host_header = host_header
        self.body_contains = body_contains
        self.timeout = timeout

    @property
    def label(self):
        return "%s:%d" % (self.name, self.port)

    def request(self):
        host = self.host_header
        if host is None:
            host = self.name if self.port == 80 else "%s:%d" % (self.name, self.port)
        return ("GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: %s\r\nAccept: */*\r\nConnection: close\r\n\r\n"
                % (self.path, host, USER_AGENT)).encode("ascii")


MAX_SECONDS = 7 * 86400


def check_seconds(value, what, allow_zero=False):
    """A duration option: a number of seconds, more than 0 (or 0 when allowed), at most a week.
    Returns it as a float; ProbeInputError 'what must be ...' otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ProbeInputError("%s must be a number of seconds, got %r" % (what, value))
    if value < 0 or (value == 0 and not allow_zero) or value > MAX_SECONDS:
        raise ProbeInputError("%s must be %s and at most %d (a week), got %s"
                              % (what, "0 or more" if allow_zero else "more than 0", MAX_SECONDS, value))
    return float(value)


def parse_target(raw, index, default_timeout):
    """A Target from one element of the targets option (a dict as AnsibleModule checked its
    types); every problem is one ProbeInputError naming targets[index].field."""
    where = "targets[%d]" % index

    def bad(field, message):
        return ProbeInputError("%s.%s: %s" % (where, field, message))

    try:
        name, service_id = normalize_address(raw.get("address"))
    except ProbeInputError as exc:
        raise bad("address", str(exc))
    port = raw.get("port", 80)
    if port is None:
        port = 80
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise bad("port", "must be between 1 and 65535, got %r" % (port,))
    mode = raw.get("mode") or "http"
    if mode not in MODES:
        raise bad("mode", "must be one of %s, got %r" % (", ".join(MODES), mode))
    http_only = [k for k in ("path", "status", "host_header", "body_contains") if raw.get(k) is not None]
    if mode == "tcp" and http_only:
        raise bad(http_only[0], "applies to mode http only (this target has mode tcp)")
    path = raw.get("path")
    if path is None:
        path = "/"
    if not isinstance(path, str) or not _PATH_RE.match(path) or len(path) > 8000:
        raise bad("path", "must start with / and hold no space or control character (URL-encode them), got %r"
                  % (path if not isinstance(path, str) else path[:80],))
    statuses = raw.get("status")
    if statuses is None:
        statuses = [200]
    if not isinstance(statuses, (list, tuple)) or not statuses:
        raise bad("status", "must be a list of HTTP status codes")
    for code in statuses:
        if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
            raise bad("status", "must hold HTTP status codes between 100 and 599, got %r" % (code,))
    host_header = raw.get("host_header")
    if host_header is not None and (not isinstance(host_header, str) or not _HEADER_RE.match(host_header)
                                    or len(host_header) > 1000):
        raise bad("host_header", "must be a non-empty header value without control characters, got %r"
                  % (host_header if not isinstance(host_header, str) else host_header[:80],))
    body = raw.get("body_contains")
    if body is not None and (not isinstance(body, str) or not body):
        raise bad("body_contains", "must be a non-empty string")
    if body is not None and len(body.encode("utf-8")) > MAX_BODY:
        raise bad("body_contains", "must be shorter than %d bytes" % MAX_BODY)
    timeout = raw.get("timeout")
    try:
        timeout = default_timeout if timeout is None else check_seconds(timeout, "it")
    except ProbeInputError as exc:
        raise bad("timeout", str(exc)[len("it "):])
    return Target(name, service_id, port, mode, path, statuses, host_header, body, timeout)


# -- one attempt -------------------------------------------------------------------------------
class Outcome(object):
    """What one attempt found."""

    def __init__(self, reachable, reason=None, error=None, time_to_first_byte=None, status=None,
                 socks_reply=None):
        self.reachable = reachable
        self.reason = reason
        self.error = error
        self.time_to_first_byte = time_to_first_byte
        self.status = status
        self.socks_reply = socks_reply


def _printable(data, limit=40):
    text = data[:limit].decode("latin-1")
    return "".join(c if " " <= c <= "~" else "\\x%02x" % ord(c) for c in text)


class _Reader(object):
    """Reads the far end's answer against the attempt's deadline."""

    def __init__(self, sock, deadline):
        self.sock = sock
        self.deadline = deadline
        self.data = bytearray()
        self.eof = False

    def more(self):
        """Read what has come (or note the end of the stream in .eof); False at the deadline."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return False
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            return False
        if not chunk:
            self.eof = True
        self.data += chunk
        return True


def _http(sock, target, started, deadline):
    try:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        sock.sendall(target.request())
    except socket.timeout:
        return Outcome(False, "timeout", "connected, but the request could not be sent in time")
    reader = _Reader(sock, deadline)
    if not reader.more():
        return Outcome(False, "timeout", "connected, but no HTTP answer came in time")
    if reader.eof:
        return Outcome(False, "connection_closed",
                       "connected, but the service closed the connection without an HTTP answer")
    first_byte = time.monotonic() - started
    # the status line (all of the head when the body is searched)
    end_of_head = (b"\n",) if target.body_contains is None else (b"\r\n\r\n", b"\n\n")
    while not any(mark in reader.data for mark in end_of_head) and not reader.eof:
        if len(reader.data) > MAX_HEAD or not reader.data[:5] == b"HTTP/"[:len(reader.data[:5])]:
            break
        if not reader.more():
            return Outcome(False, "timeout", "the HTTP answer's head did not complete in time", first_byte)
    line = bytes(reader.data.split(b"\n", 1)[0]).rstrip(b"\r")
    match = re.match(br"^HTTP/1\.[01] ([0-9]{3})(?: |\Z)", line)
    if not match:
        return Outcome(False, "not_http", "the answer is not HTTP/1.x: it starts with '%s'"
                       % _printable(bytes(reader.data)), first_byte)
    status = int(match.group(1))
    if status not in target.statuses:
        return Outcome(False, "http_status", "HTTP status %d, expected %s"
                       % (status, " or ".join(str(s) for s in target.statuses)), first_byte, status)
    if target.body_contains is None:
        return Outcome(True, time_to_first_byte=first_byte, status=status)
    needle = target.body_contains.encode("utf-8")
    crlf, lf = reader.data.find(b"\r\n\r\n"), reader.data.find(b"\n\n")
    if crlf < 0 and lf < 0:
        return Outcome(False, "not_http", "the HTTP answer's head has no end", first_byte, status)
    head_end = crlf + 4 if crlf >= 0 and (lf < 0 or crlf < lf) else lf + 2
    while True:
        body = reader.data[head_end:]
        if needle in body:
            return Outcome(True, time_to_first_byte=first_byte, status=status)
        if reader.eof or len(body) >= MAX_BODY:
            return Outcome(False, "body_mismatch", "HTTP status %d, but the body (%d bytes read) does not contain %r"
                           % (status, len(body), target.body_contains[:80]), first_byte, status)
        if not reader.more():
            return Outcome(False, "timeout", "HTTP status %d, but %r was not in the body that came in time"
                           % (status, target.body_contains[:80]), first_byte, status)


def attempt(proxy, target, timeout=None):
    """One attempt at target through proxy (a socks.SocksProxy) within timeout seconds (the
    target's own by default). Returns an Outcome; never raises for a network failure."""
    timeout = target.timeout if timeout is None else timeout
    started = time.monotonic()
    deadline = started + timeout
    try:
        sock = socks.connect(proxy, target.name, target.port, deadline)
    except socks.SocksTimeout as exc:
        return Outcome(False, exc.reason, "%s (timeout %.3gs)" % (exc, timeout))
    except socks.SocksError as exc:
        return Outcome(False, exc.reason, str(exc), socks_reply=exc.code)
    try:
        if target.mode == "tcp":
            return Outcome(True, time_to_first_byte=time.monotonic() - started)
        if target.tls:
            sock = _tls(sock, target, deadline)
        outcome = _http(sock, target, started, deadline)
        if outcome.reason == "timeout":
            outcome.error += " (timeout %.3gs)" % timeout
        return outcome
    except ssl.SSLError as exc:
        return Outcome(False, "tls_failed", "connected, but the TLS handshake failed: %s" % (exc.reason or exc))
    except OSError as exc:
        return Outcome(False, "connection_lost", "the connection broke: %s" % (exc.strerror or exc))
    finally:
        sock.close()


def _tls(sock, target, deadline):
    """The connection wrapped in TLS (an onion service's certificate is often self-signed: the onion address
    authenticates the service, so the certificate is not verified)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    sock.settimeout(max(0.001, deadline - time.monotonic()))
    return context.wrap_socket(sock, server_hostname=target.name)


# -- retried until a deadline, every target at once --------------------------------------------
def probe(proxy, targets, deadline=0.0, delay=1.0):
    """Each target is tried, and tried again delay seconds after a failed attempt until it
    answers or `deadline` seconds from now have passed: no attempt starts after that, and none
    runs past it, except the first of each target, which always has its full timeout. All
    targets are probed at once. Returns one result dict per target, in order."""
    started = time.monotonic()
    end = started + deadline
    results = [None] * len(targets)

    def run(index):
        target = targets[index]
        attempts, outcome, telling = 0, None, None
        t0 = time.monotonic()
        while True:
            timeout = target.timeout if attempts == 0 else min(target.timeout, end - time.monotonic())
            attempts += 1
            outcome = attempt(proxy, target, timeout)
            if outcome.reason != "timeout" or timeout >= target.timeout:
                telling = outcome
            if outcome.reachable or time.monotonic() + delay >= end - 0.001:
                break
            time.sleep(delay)
        if not outcome.reachable and outcome.reason == "timeout" and telling is not None:
            # the last attempt only had what was left of the deadline: an earlier attempt's answer
            # (tor's SOCKS reply, an HTTP status) says more about why the target did not answer
            outcome = telling
        results[index] = result_dict(target, outcome, attempts, time.monotonic() - t0)

    pending = list(range(len(targets)))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                if not pending:
                    return
                index = pending.pop(0)
            run(index)

    threads = [threading.Thread(target=worker, name="onion-probe-%d" % i)
               for i in range(min(MAX_WORKERS, len(targets)))]
    for thread in threads:
        thread.daemon = True
        thread.start()
    for thread in threads:
        thread.join()
    return results


def result_dict(target, outcome, attempts, elapsed):
    return {
        "address": target.name,
        "port": target.port,
        "mode": target.mode,
        "reachable": outcome.reachable,
        "time_to_first_byte": None if outcome.time_to_first_byte is None else round(outcome.time_to_first_byte, 6),
        "attempts": attempts,
        "elapsed": round(elapsed, 3),
        "status": outcome.status,
        "error": None if outcome.reachable else outcome.error,
        "reason": None if outcome.reachable else outcome.reason,
        "socks_reply": outcome.socks_reply,
    }
