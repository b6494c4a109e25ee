# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A SOCKS5 client (RFC 1928) for tor's SocksPort, standard library only.

This is a private module_utils file of onionlab.tor; its API may change at any time.

Only what reaching an onion service needs: the "no authentication" method (or RFC 1929's username and
password, which tor takes for stream isolation, IsolateSOCKSAuth: a fresh pair gets circuits of its own), one CONNECT with
the host name as a domain name (ATYP 3), so that tor itself resolves it (an onion address
cannot be resolved anywhere else), over TCP or a unix SocksPort. Every read has an absolute
deadline (time.monotonic()), so a proxy that trickles bytes cannot hold a caller past it.

Tor's reply codes, with the extended ones of proposal 304 that a SocksPort with the
``ExtendedErrors`` flag sends for onion services (``man tor``, SocksPort flags; tor's
socks5_status.h), are mapped to a stable keyword (``SocksRefused.reason``) and a clear text.

    SocksError               anything that stopped a SOCKS connection (.reason, .code)
     +- ProxyUnavailable     the SocksPort could not be reached (refused, no socket, timeout)
     +- SocksTimeout         the proxy or tor did not answer within the deadline
     +- SocksProtocolError   the peer does not speak SOCKS5 as RFC 1928 writes it
     +- SocksRefused         tor answered the CONNECT with an error code (.code)
"""

from __future__ import annotations

import errno
import socket
import struct
import time

from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

SOCKS_VERSION = 5
NO_AUTH = 0x00
USERNAME_PASSWORD = 0x02
NO_ACCEPTABLE_METHOD = 0xFF
CMD_CONNECT = 0x01
ATYP_IPV4 = 0x01
ATYP_DOMAIN = 0x03
ATYP_IPV6 = 0x04

# reply code -> (reason keyword, what tor says, what it usually means for an onion service).
# 0x01-0x08 are RFC 1928's; 0xF0-0xF7 tor's extended onion-service codes (proposal 304), sent
# only by a SocksPort with the ExtendedErrors flag ("man tor": SocksPort, ExtendedErrors).
REPLIES = {
    0x01: ("general_failure", "general SOCKS server failure",
           "for an onion service: its own connection to the address behind the port failed; without the "
           "ExtendedErrors flag on the SocksPort also an invalid address"),
    0x02: ("not_allowed", "connection not allowed by ruleset", None),
    0x03: ("network_unreachable", "network unreachable", None),
    0x04: ("host_unreachable", "host unreachable",
           "for an onion service: tor could not find or reach it; the ExtendedErrors flag on the SocksPort says why"),
    0x05: ("connection_refused", "connection refused",
           "for an onion service: it does not serve this port, or has just stopped"),
    0x06: ("ttl_expired", "TTL expired",
           "for an onion service: tor gave up waiting for it; the ExtendedErrors flag on the SocksPort says why"),
    0x07: ("command_not_supported", "command not supported", None),
    0x08: ("address_type_not_supported", "address type not supported", None),
    0xF0: ("descriptor_not_found", "onion service descriptor can not be found",
           "the service is not running or has not published its descriptor yet, or the address is wrong"),
    0xF1: ("descriptor_invalid", "onion service descriptor is invalid",
           "it cannot be parsed or its signature does not verify"),
    0xF2: ("introduction_failed", "onion service introduction failed",
           "the service is no longer at the introduction points of its descriptor: stopped or restarted"),
    0xF3: ("rendezvous_failed", "onion service rendezvous failed",
           "every rendezvous circuit timed out"),
    0xF4: ("missing_client_auth", "onion service missing client authorization",
           "the service admits authorized clients only and this tor holds no key for it"),
    0xF5: ("wrong_client_auth", "onion service wrong client authorization",
           "this tor's key for the service does not open its descriptor: a wrong or revoked key"),
    0xF6: ("invalid_address", "onion service invalid address",
           "bad checksum, key or encoding"),
    0xF7: ("introduction_timed_out", "onion service introduction timed out",
           "every introduction attempt timed out"),
}


def reply_reason(code):
    """The keyword of a reply code; 'socks_error_0xNN' for a code tor does not define."""
    return REPLIES[code][0] if code in REPLIES else "socks_error_0x%02x" % code


def reply_text(code):
    """'tor answered 0xF0: onion service descriptor can not be found (the service ...)'."""
    if code in REPLIES:
        _reason, text, hint = REPLIES[code]
        return "tor answered 0x%02X: %s%s" % (code, text, " (%s)" % hint if hint else "")
    return "tor answered 0x%02X, a SOCKS5 reply code that neither RFC 1928 nor tor defines" % code


class SocksError(TorError):
    """What stopped a SOCKS connection: .reason is a stable keyword, .code the SOCKS reply
    code when tor sent one (else None)."""

    reason = "socks_error"

    def __init__(self, message, reason=None, code=None):
        super(SocksError, self).__init__(message)
        if reason is not None:
            self.reason = reason
        self.code = code


class ProxyUnavailable(SocksError):
    """The SocksPort could not be reached: reason 'proxy_refused', 'proxy_missing' (no unix
    socket there), 'proxy_timeout' (no connection in time) or 'proxy_unavailable'."""

    reason = "proxy_unavailable"


class SocksTimeout(SocksError):
    """The proxy or tor did not answer within the deadline: reason 'proxy_timeout' when the
    SocksPort did not answer the greeting, 'timeout' when tor did not connect in time."""

    reason = "timeout"


class SocksProtocolError(SocksError):
    """The peer does not follow RFC 1928 (or closed the connection in the middle of a reply)."""

    reason = "protocol_error"


class SocksRefused(SocksError):
    """Tor answered the CONNECT with an error code (.code); .reason is its keyword."""

    def __init__(self, code):
        super(SocksRefused, self).__init__(reply_text(code), reply_reason(code), code)


class SocksProxy(object):
    """Where tor's SocksPort is: host and port, or the path of a unix SocksPort."""

    def __init__(self, host="127.0.0.1", port=9050, socket_path=None, username=None, password=None):
        self.host = host
        self.port = port
        self.socket_path = socket_path
        self.auth = None if username is None else (username, password or "")

    @property
    def where(self):
        if self.socket_path:
            return "the SocksPort unix:%s" % self.socket_path
        if ":" in self.host:
            return "the SocksPort [%s]:%s" % (self.host, self.port)
        return "the SocksPort %s:%s" % (self.host, self.port)

    def open(self, deadline):
        """A socket connected to the proxy (not yet spoken to), or ProxyUnavailable."""
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            raise SocksTimeout("no time left to connect to %s" % self.where, "proxy_timeout")
        sock = None
        try:
            if self.socket_path:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(timeout)
                sock.connect(self.socket_path)
            else:
                sock = socket.create_connection((self.host, self.port), timeout=timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except BaseException as exc:
            if sock is not None:
                sock.close()
            if isinstance(exc, socket.timeout):
                raise ProxyUnavailable("%s did not accept a connection within %.3gs" % (self.where, timeout),
                                       "proxy_timeout")
            if isinstance(exc, OSError):
                raise self._unavailable(exc)
            raise
        return sock

    def _unavailable(self, exc):
        if exc.errno == errno.ECONNREFUSED:
            return ProxyUnavailable("connection refused by %s: nothing listens there (is tor running, "
                                    "with this SocksPort?)" % self.where, "proxy_refused")
        if exc.errno == errno.ENOENT and self.socket_path:
            return ProxyUnavailable("%s does not exist (is tor running, with this SocksPort?)" % self.where,
                                    "proxy_missing")
        if isinstance(exc, socket.gaierror):
            return ProxyUnavailable("cannot resolve the SocksPort's host %s: %s" % (self.host, exc.strerror or exc))
        return ProxyUnavailable("cannot connect to %s: %s" % (self.where, exc.strerror or exc))


def recv_exact(sock, n, deadline, what, where):
    """Exactly n bytes, or SocksTimeout at the deadline / SocksProtocolError on a short read."""
    data = b""
    while len(data) < n:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise SocksTimeout("%s: no %s within the time allowed" % (where, what))
        try:
            sock.settimeout(remaining)
            chunk = sock.recv(n - len(data))
        except socket.timeout:
            raise SocksTimeout("%s: no %s within the time allowed" % (where, what))
        except OSError as exc:
            raise SocksProtocolError("%s: connection lost while reading %s: %s" % (where, what, exc.strerror or exc),
                                     "connection_lost")
        if not chunk:
            if data:
                raise SocksProtocolError("%s closed the connection in the middle of %s (%d of %d bytes)"
                                         % (where, what, len(data), n), "connection_closed")
            raise SocksProtocolError("%s closed the connection instead of sending %s" % (where, what),
                                     "connection_closed")
        data += chunk
    return data


def _send(sock, data, deadline, what, where):
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise SocksTimeout("%s: no time left to send %s" % (where, what))
    try:
        sock.settimeout(remaining)
        sock.sendall(data)
    except socket.timeout:
        raise SocksTimeout("%s did not take %s within the time allowed" % (where, what))
    except OSError as exc:
        raise SocksProtocolError("%s: connection lost while sending %s: %s" % (where, what, exc.strerror or exc),
                                 "connection_lost")


def connect_request(host, port):
    """The CONNECT request for host (a domain name, ATYP 3) and port."""
    try:
        name = host.encode("ascii")
    except UnicodeError:
        raise SocksError("the host name %r is not ASCII" % host[:80], "invalid_address")
    if not 1 <= len(name) <= 255:
        raise SocksError("a SOCKS5 host name is 1 to 255 bytes, not %d" % len(name), "invalid_address")
    if not 1 <= port <= 65535:
        raise SocksError("port %d is not between 1 and 65535" % port, "invalid_address")
    return struct.pack("!BBBBB", SOCKS_VERSION, CMD_CONNECT, 0, ATYP_DOMAIN, len(name)) + name \
        + struct.pack("!H", port)


def handshake(sock, host, port, deadline, where="the SocksPort", auth=None):
    """Greeting (no authentication, or auth = (username, password) of RFC 1929) and CONNECT host:port on a
    socket connected to the proxy. Returns the bound address tor reported, as (host, port). Raises SocksError."""
    request = connect_request(host, port)
    offered = NO_AUTH if auth is None else USERNAME_PASSWORD
    _send(sock, struct.pack("!BBB", SOCKS_VERSION, 1, offered), deadline, "the SOCKS5 greeting", where)
    try:
        version, method = recv_exact(sock, 2, deadline, "answer to the SOCKS5 greeting", where)
    except SocksTimeout:
        raise SocksTimeout("%s accepted the connection but did not answer the SOCKS5 greeting in time (is it "
                           "a SocksPort?)" % where, "proxy_timeout")
    if version != SOCKS_VERSION:
        raise SocksProtocolError("%s is not a SOCKS5 proxy: its answer to the greeting starts with 0x%02x, not 0x05%s"
                                 % (where, version, _looks_like(version)))
    if method == NO_ACCEPTABLE_METHOD:
        raise SocksProtocolError("%s accepts none of the methods offered (%s)" % (
            where, "no authentication" if auth is None else "username and password"), "auth_required")
    if method != offered:
        raise SocksProtocolError("%s chose authentication method 0x%02x, which was not offered" % (where, method))
    if auth is not None:
        _userpass(sock, auth, deadline, where)
    _send(sock, request, deadline, "the SOCKS5 CONNECT request", where)
    try:
        version, code, _reserved, atyp = recv_exact(sock, 4, deadline, "reply to CONNECT %s:%d" % (host, port),
                                                    where)
    except SocksTimeout:
        raise SocksTimeout("tor did not connect to %s:%d in time" % (host, port))
    if version != SOCKS_VERSION:
        raise SocksProtocolError("%s: the reply to CONNECT starts with 0x%02x, not 0x05" % (where, version))
    if code != 0:
        raise SocksRefused(code)
    if atyp == ATYP_IPV4:
        raw = recv_exact(sock, 6, deadline, "bound address of the reply", where)
        bound = (socket.inet_ntop(socket.AF_INET, raw[:4]), struct.unpack("!H", raw[4:])[0])
    elif atyp == ATYP_IPV6:
        raw = recv_exact(sock, 18, deadline, "bound address of the reply", where)
        bound = (socket.inet_ntop(socket.AF_INET6, raw[:16]), struct.unpack("!H", raw[16:])[0])
    elif atyp == ATYP_DOMAIN:
        (length,) = recv_exact(sock, 1, deadline, "bound address of the reply", where)
        raw = recv_exact(sock, length + 2, deadline, "bound address of the reply", where)
        bound = (raw[:length].decode("ascii", "replace"), struct.unpack("!H", raw[length:])[0])
    else:
        raise SocksProtocolError("%s: the reply to CONNECT has address type 0x%02x (SOCKS5 knows 1, 3 and 4)"
                                 % (where, atyp))
    return bound


def _userpass(sock, auth, deadline, where):
    """RFC 1929's subnegotiation: a username and a password (1 to 255 bytes each; tor accepts any)."""
    user, password = (part.encode("utf-8") for part in auth)
    if not 1 <= len(user) <= 255 or not 1 <= len(password) <= 255:
        raise SocksError("a SOCKS5 username and password are 1 to 255 bytes each", "invalid_auth")
    _send(sock, struct.pack("!BB", 1, len(user)) + user + struct.pack("!B", len(password)) + password, deadline,
          "the SOCKS5 username and password", where)
    _version, status = recv_exact(sock, 2, deadline, "answer to the username and password", where)
    if status != 0:
        raise SocksProtocolError("%s refused the username and password (status 0x%02x)" % (where, status),
                                 "auth_refused")


def _looks_like(first):
    if first == 0x00:
        return " (a SOCKS4 reply?)"
    if first == ord("H"):
        return " (an HTTP server: tor's HTTPTunnelPort, or not tor at all?)"
    if first == ord("5"):
        return " (tor's control port?)"
    return ""


def connect(proxy, host, port, deadline):
    """A socket connected to host:port through proxy (a SocksProxy), the host name resolved
    by tor; at the absolute deadline (time.monotonic()) at the latest. Raises SocksError."""
    sock = proxy.open(deadline)
    try:
        handshake(sock, host, port, deadline, proxy.where, getattr(proxy, "auth", None))
    except BaseException:
        sock.close()
        raise
    return sock
