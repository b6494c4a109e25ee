# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Typed control-protocol commands over an authenticated connection.

This is a private module_utils file of onionlab.tor; its API may change at any time.

    with connect(port=9051) as tor:                      # or socket_path=..., password=...
        tor.get_info("version", "config-text")          # {'version': '0.4.9.11', ...}
        tor.get_conf("HiddenServiceOptions")            # [('HiddenServiceDir', '/x'), ...]
        tor.set_conf([("HiddenServiceDir", "/x"), ("HiddenServicePort", "80 127.0.0.1:8080")])

Every value is checked (no CR, LF, NUL) and quoted per the spec before anything is sent.
Nothing here imports Ansible.
"""

from __future__ import annotations

import os
import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor import advice as _advice
from ansible_collections.onionlab.tor.plugins.module_utils._tor import auth as _auth
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion as _onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import (
    ConnectionFailed,
    OperationFailed,
    ProtocolError,
    UnsafeValue,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.onion import SERVICE_ID_RE as _SERVICE_ID_RE
from ansible_collections.onionlab.tor.plugins.module_utils._tor.reply import (
    check_config_key,
    check_keyword,
    check_token,
    check_value,
    format_command,
    parse_key_values,
    parse_mapping,
    quote,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.transport import DEFAULT_TIMEOUT, ControlSocket

DEFAULT_SOCKET = "/run/tor/control"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9051

SIGNALS = frozenset(["RELOAD", "HUP", "SHUTDOWN", "INT", "DUMP", "USR1", "DEBUG", "USR2", "HALT", "TERM",
                     "NEWNYM", "CLEARDNSCACHE", "HEARTBEAT", "ACTIVE", "DORMANT"])
ONION_FLAGS = frozenset(["DiscardPK", "Detach", "BasicAuth", "V3Auth", "NonAnonymous", "MaxStreamsCloseCircuit"])


class Controller:
    """An authenticated control connection. Use connect() to make one."""

    def __init__(self, sock, protocol_info=None, auth_method=None):
        self.sock = sock
        self.protocol_info = protocol_info
        self.auth_method = auth_method

    # -- plumbing --------------------------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    @property
    def events(self):
        return self.sock.events

    def event_mark(self):
        """transport.ControlSocket.event_mark: a place in the stream of events that dropping old ones does not move."""
        return self.sock.event_mark()

    def events_since(self, mark):
        return self.sock.events_since(mark)

    @property
    def where(self):
        return self.sock.where

    def request(self, keyword, args=(), data=None):
        """Send one command and return its Reply, raising OperationFailed on an error status."""
        return self.sock.request(format_command(keyword, args, data)).raise_for_status(keyword)

    def close(self):
        """Send QUIT (best effort) and close the socket."""
        if not self.sock.closed:
            try:
                self.sock.send(format_command("QUIT"))
            except ConnectionFailed:
                pass
            self.sock.close()

    quit = close

    # -- GETINFO ---------------------------------------------------------------------------
    def get_info(self, *keys):
        """Many keys in one GETINFO. Returns {key: value} with tor's text as is (quotes kept);
        multi-line values joined by LF."""
        if not keys:
            return {}
        for key in keys:
            check_keyword(key, "GETINFO key")
        reply = self.request("GETINFO", keys)
        result = {}
        for key, value in parse_key_values(reply, unquote_values=False):
            result[key] = value if value is not None else ""
        missing = [k for k in keys if k not in result]
        if missing:
            raise ProtocolError("GETINFO reply lacks %s" % ", ".join(missing))
        return result

    # -- configuration ---------------------------------------------------------------------
    def get_conf(self, *keys):
        """GETCONF: a list of (option, value or None for unset) in tor's order, repeats kept."""
        for key in keys:
            check_config_key(key)
        return parse_key_values(self.request("GETCONF", keys))

    def get_conf_map(self, *keys):
        """GETCONF as {option: [values]} (empty list when unset)."""
        result = {}
        for key, value in self.get_conf(*keys):
            result.setdefault(key, [])
            if value is not None:
                result[key].append(value)
        return result

    @staticmethod
    def _conf_args(pairs):
        args = []
        for key, value in pairs:
            check_config_key(key)
            if value is None:
                args.append(key)
            else:
                if isinstance(value, bool):
                    value = "1" if value else "0"      # tor's booleans; str(True) is refused
                args.append("%s=%s" % (key, quote(check_value(str(value), "value of %s" % key))))
        return args

    def set_conf(self, pairs):
        """SETCONF with an ordered list of (option, value or None); one atomic command."""
        pairs = list(pairs.items()) if isinstance(pairs, dict) else list(pairs)
        if not pairs:
            return
        self.request("SETCONF", self._conf_args(pairs))

    def reset_conf(self, pairs):
        """RESETCONF: like set_conf; a bare option (value None) goes back to its default."""
        pairs = list(pairs.items()) if isinstance(pairs, dict) else pairs
        pairs = [(p, None) if isinstance(p, str) else p for p in pairs]
        if not pairs:
            return
        self.request("RESETCONF", self._conf_args(pairs))

    def save_conf(self, force=False):
        self.request("SAVECONF", ["FORCE"] if force else [])

    def signal(self, name):
        if name not in SIGNALS:
            raise UnsafeValue("unknown signal %r" % (name,))
        self.request("SIGNAL", [name])

    def take_ownership(self):
        self.request("TAKEOWNERSHIP")

    # -- onion services --------------------------------------------------------------------
    def add_onion(self, ports, key_type="NEW", key_blob="ED25519-V3", flags=(), max_streams=None,
                  client_auth_v3=(), pow_defenses_enabled=None, pow_queue_rate=None, pow_queue_burst=None,
                  keywords=()):
        """ADD_ONION. ports: list of (virtual port, target or None). Returns
        {'service_id': ..., 'private_key': 'ED25519-V3:...' or None}. The key blob is a secret:
        it is never put into an error message. pow_*: PoWDefensesEnabled=, PoWQueueRate=,
        PoWQueueBurst= (tor 0.4.9.2-alpha and later), each sent only when not None. keywords:
        further (Keyword, value) pairs (an int, or a bool sent as 1 or 0), after MaxStreams= and
        in their order (hidden_service.OPTIONS' add_onion column)."""
        check_token(key_type, "key type")
        try:
            check_token(key_blob, "key")
        except UnsafeValue:
            raise UnsafeValue("the private key is not a valid key blob (no spaces or control characters allowed)")
        args = ["%s:%s" % (key_type, key_blob)]
        flags = list(flags)
        if client_auth_v3 and "V3Auth" not in flags:
            flags.append("V3Auth")                     # tor refuses ClientAuthV3 without it
        for flag in flags:
            if flag not in ONION_FLAGS:
                raise UnsafeValue("unknown ADD_ONION flag %r" % (flag,))
        if flags:
            args.append("Flags=" + ",".join(flags))
        if max_streams is not None:
            args.append("MaxStreams=%d" % _integer(max_streams, "MaxStreams"))
        for keyword, value in keywords:
            check_keyword(keyword)
            number = (1 if value else 0) if isinstance(value, bool) else _integer(value, keyword)
            args.append("%s=%d" % (keyword, number))
        if pow_defenses_enabled is not None:
            args.append("PoWDefensesEnabled=%d" % (1 if pow_defenses_enabled else 0))
        if pow_queue_rate is not None:
            args.append("PoWQueueRate=%d" % _integer(pow_queue_rate, "PoWQueueRate"))
        if pow_queue_burst is not None:
            args.append("PoWQueueBurst=%d" % _integer(pow_queue_burst, "PoWQueueBurst"))
        if not ports:
            raise UnsafeValue("ADD_ONION needs at least one port")
        for virt, target in ports:
            port = "%d" % _integer(virt, "virtual port")
            if target is not None:
                port += "," + check_token(str(target), "port target")
            args.append("Port=" + port)
        for key in client_auth_v3:
            args.append("ClientAuthV3=" + check_token(key, "client auth key"))
        reply = self.sock.request(format_command("ADD_ONION", args))
        if not reply.ok:
            # never echo our own command (it may carry the key); tor's message does not
            raise OperationFailed(reply.code, reply.lines[-1].text, "ADD_ONION")
        result = {"service_id": None, "private_key": None, "client_auth": []}
        for key, value in parse_key_values(reply):
            if key == "ServiceID":
                result["service_id"] = value
            elif key == "PrivateKey":
                result["private_key"] = value
            elif key == "ClientAuth":
                result["client_auth"].append(value)
        if not result["service_id"] or not _SERVICE_ID_RE.match(result["service_id"]):
            raise ProtocolError("ADD_ONION reply has no valid v3 ServiceID")
        return result

    def del_onion(self, service_id):
        """DEL_ONION; returns False when tor did not have that service (552), True when removed."""
        check_token(service_id, "service id")
        reply = self.sock.request(format_command("DEL_ONION", [service_id]))
        if reply.ok:
            return True
        if reply.code == "552":
            return False
        raise OperationFailed(reply.code, reply.lines[-1].text, "DEL_ONION")

    def hs_fetch(self, address, servers=()):
        """HSFETCH: tor fetches the descriptor of a v3 address (with or without .onion) from each HSDir in
        servers ($ + 40 hex digits), or from one it chooses; the outcome comes as HS_DESC / HS_DESC_CONTENT
        events."""
        args = [_service_id(address)] + ["SERVER=" + _server(s) for s in servers]
        self.request("HSFETCH", args)

    def hs_post(self, descriptor, servers=(), address=None):
        """+HSPOST: tor uploads a descriptor (its text) to each HSDir in servers, or to those responsible
        for it; HSADDRESS= (a v3 address) is needed for a v3 descriptor. The outcome comes as HS_DESC
        events (UPLOAD, UPLOADED or FAILED)."""
        args = ["SERVER=" + _server(s) for s in servers]
        if address is not None:
            args.append("HSADDRESS=" + _service_id(address))
        self.request("HSPOST", args, data=descriptor)

    def list_onions(self):
        """{'current': [service ids of this connection], 'detached': [...]}."""
        info = self.get_info("onions/current", "onions/detached")
        return {"current": _id_list(info["onions/current"]), "detached": _id_list(info["onions/detached"])}


def _integer(value, what):
    """int(value), or UnsafeValue (not a bare ValueError) for what is not a whole number."""
    try:
        if isinstance(value, bool) or int(value) != float(value):
            raise ValueError
        return int(value)
    except (TypeError, ValueError, OverflowError):
        raise UnsafeValue("%s must be a whole number, not %r" % (what, value))


_SERVER_RE = re.compile(r"\$?[0-9A-Fa-f]{40}\Z")


def _service_id(address):
    """The service id of a v3 address (checked: checksum and version), without .onion."""
    try:
        _onion.parse_onion_address(address)
    except ValueError as exc:
        raise UnsafeValue(str(exc))
    return address[:-len(".onion")] if address.endswith(".onion") else address


def _server(value):
    """An HSDir for SERVER=: $ and 40 hex digits (its identity fingerprint)."""
    text = str(value)
    if not _SERVER_RE.match(text):
        raise UnsafeValue("an HSDir must be given as $ and its 40 hex digit fingerprint, got %r" % text[:60])
    return "$" + text.lstrip("$").upper()


def _id_list(value):
    ids = [v.strip() for v in (value or "").split("\n") if v.strip()]
    for sid in ids:
        if not _SERVICE_ID_RE.match(sid):
            raise ProtocolError("tor listed an onion service id that is not a v3 id")
    return ids


def connect(host=None, port=None, socket_path=None, password=None, cookie_path=None,
            timeout=DEFAULT_TIMEOUT, authenticate=True, **socket_options):
    """Open, PROTOCOLINFO and authenticate. With neither port nor socket_path: the Debian
    socket /run/tor/control when it exists, else 127.0.0.1:9051 (the error names both). That port is
    only a guess (any local user can listen there while tor restarts): a peer found there must prove
    itself with SAFECOOKIE (auth.authenticate's fallback); the caller names the port to use another method."""
    if port is not None and socket_path is not None:
        raise ConnectionFailed("give either a control port or a control socket, not both")
    fallback = None
    if socket_path is not None:
        try:
            sock = ControlSocket.unix(socket_path, timeout, **socket_options)
        except ConnectionFailed as exc:
            raise ConnectionFailed(_advice.explain(str(exc), getattr(exc, "errno", None), socket_path))
    elif port is not None:
        sock = ControlSocket.tcp(host or DEFAULT_HOST, port, timeout, **socket_options)
    else:
        tried, hint = [], None
        if os.path.exists(DEFAULT_SOCKET):
            try:
                sock = ControlSocket.unix(DEFAULT_SOCKET, timeout, **socket_options)
            except ConnectionFailed as exc:
                tried.append(str(exc))
                hint = _advice.for_errno(getattr(exc, "errno", None), DEFAULT_SOCKET)
                sock = None
        else:
            tried.append("no control socket at %s" % DEFAULT_SOCKET)
            sock = None
        if sock is None:
            try:
                sock = ControlSocket.tcp(host or DEFAULT_HOST, DEFAULT_PORT, timeout, **socket_options)
            except ConnectionFailed as exc:
                tried.append(str(exc))
                raise ConnectionFailed("could not find tor's control interface: %s; %s. If tor listens elsewhere, "
                                       "set control_port or control_socket"
                                       % ("; ".join(tried), hint or _advice.NOT_RUNNING))
            fallback = "; ".join(tried)
    try:
        info = _auth.protocolinfo(sock)
        method = _auth.authenticate(sock, info, password, cookie_path, fallback) if authenticate else None
    except BaseException:
        sock.close()
        raise
    return Controller(sock, info, method)


__all__ = ["Controller", "connect", "parse_mapping", "DEFAULT_SOCKET", "DEFAULT_PORT"]
