# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Authentication: PROTOCOLINFO, then a method that fits what the user gave, never a downgrade.

This is a private module_utils file of onionlab.tor; its API may change at any time.

The peer is not trusted until it proves itself: whatever answers on the configured port may be a
local user who bound it while tor restarts. So the order is (issue 42):

1. SAFECOOKIE whenever it is offered and a cookie is readable (cookie_path, else the COOKIEFILE the
   peer names): the server proves it knows the cookie before we reveal anything, so a password given
   alongside is not sent. A peer that fails the proof is refused (the password is not tried after it).
   The proof is worth what the cookie's secrecy is worth: a peer that is not tor could name a file whose
   content it knows (one it wrote, one everyone may read), pass the proof and get the commands and keys
   that follow. So a COOKIEFILE the user did not name is used only when it looks like tor's cookie
   (named_cookie_problem): an absolute path to a regular file of 32 bytes, owned by root, this user or
   tor's user (TOR_USERS), that nobody else may read or write (tor makes it 0600, 0640 with
   CookieAuthFileGroupReadable). Any other file is a refusal before any AUTHENTICATE (its content is never
   read: a FIFO or a device the peer names is not opened either).
2. NULL (tor asks for nothing) only when the user gave no credentials: a user who gave
   control_password or cookie_path expects a tor that asks for them, and a tor that does never
   offers NULL, so such a peer is refused before any AUTHENTICATE (with credentials, a peer that
   offers NULL among other methods is no tor either: only SAFECOOKIE, a proof, is used with it).
3. HASHEDPASSWORD with the password given (the password goes to a peer that proved nothing: tor's
   password authentication has no proof).
4. COOKIE (plain: the cookie's bytes go to the peer) only with a cookie_path the user gave, never a
   file the peer names, however tor-like: sent to a peer that is not tor, tor's own cookie would let it
   control tor later (every tor since 0.2.3.13 offers SAFECOOKIE beside COOKIE; control-spec 3.5: plain
   COOKIE lets a peer that claims to be tor read any 32-byte file the controller can read).

When the address is only connect()'s fallback (127.0.0.1:9051 because the Debian socket is missing:
`fallback` says why), the peer must prove itself with SAFECOOKIE: NULL, a password or a plain cookie
to a guessed address are refused; the user names the port (control_port) to use such a tor there.

A refusal (AuthenticationFailed) names what the peer offered and what was expected. A password is
checked (no CR, LF, NUL) before anything else, used or not. References: control-spec 3.5
(AUTHENTICATE), 3.21 (PROTOCOLINFO) and 3.24 (AUTHCHALLENGE). Secrets (password, cookie, hashes)
never appear in an error message.
"""

from __future__ import annotations

import binascii
import errno
import hashlib
import hmac
import os
import stat

from ansible_collections.onionlab.tor.plugins.module_utils._tor import advice as _advice
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import (
    AuthenticationFailed,
    OperationFailed,
    ProtocolError,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.reply import (
    check_value,
    format_command,
    parse_mapping,
    quote,
)

COOKIE_LENGTH = 32
NONCE_LENGTH = 32
SERVER_HASH_KEY = b"Tor safe cookie authentication server-to-controller hash"
CLIENT_HASH_KEY = b"Tor safe cookie authentication controller-to-server hash"
# the user tor runs as: Debian and Ubuntu, Fedora and RHEL (EPEL), Arch, Alpine and Gentoo, the BSDs
TOR_USERS = ("debian-tor", "toranon", "tor", "_tor")


class ProtocolInfo(object):
    """What PROTOCOLINFO told us: auth methods, cookie file, tor version."""

    __slots__ = ("protocol_version", "methods", "cookie_file", "tor_version")

    def __init__(self, protocol_version, methods, cookie_file, tor_version):
        self.protocol_version = protocol_version
        self.methods = methods
        self.cookie_file = cookie_file
        self.tor_version = tor_version

    def as_dict(self):
        return {"protocol_version": self.protocol_version, "methods": list(self.methods),
                "cookie_file": self.cookie_file, "tor_version": self.tor_version}


def parse_protocolinfo(reply):
    reply.raise_for_status("PROTOCOLINFO")
    protocol_version = None
    methods = []
    cookie_file = None
    tor_version = None
    for line in reply.lines:
        keyword, _sep, rest = line.text.partition(" ")
        if keyword == "PROTOCOLINFO":
            protocol_version = rest.strip()
        elif keyword == "AUTH":
            _pos, mapping = parse_mapping(rest)
            if "METHODS" not in mapping:
                raise ProtocolError("PROTOCOLINFO AUTH line has no METHODS")
            methods = [m for m in mapping["METHODS"].split(",") if m]
            cookie_file = mapping.get("COOKIEFILE")
        elif keyword == "VERSION":
            _pos, mapping = parse_mapping(rest)
            tor_version = mapping.get("Tor")
    if protocol_version is None:
        raise ProtocolError("PROTOCOLINFO reply has no PROTOCOLINFO line")
    if protocol_version != "1":
        raise ProtocolError("tor speaks PROTOCOLINFO version %r; only 1 is known" % protocol_version)
    return ProtocolInfo(protocol_version, tuple(methods), cookie_file, tor_version)


def protocolinfo(sock):
    return parse_protocolinfo(sock.request(format_command("PROTOCOLINFO", ["1"])))


class UntrustedCookieFile(AuthenticationFailed):
    """The cookie file the peer named is not one that only tor (and we) can know: nothing is sent."""


def tor_uids():
    """The uids a cookie of tor's may belong to: root, this process's user, tor's user where it exists."""
    uids = set([0, os.geteuid()])
    try:
        import pwd
    except ImportError:   # pragma: no cover (not a POSIX host)
        return uids
    for name in TOR_USERS:
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            pass
    return uids


def named_cookie_problem(path, st, uids):
    """Why a COOKIEFILE the peer named (path; st: its stat) cannot be tor's cookie, which only tor and the users
    it lets read it know; None when it can. uids: tor_uids(). st is not looked at for a relative path."""
    if not os.path.isabs(path):
        return "is not an absolute path (tor names its cookie by one)"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file but %s" % _kind(st.st_mode)
    if st.st_size != COOKIE_LENGTH:
        return "is not %d bytes long" % COOKIE_LENGTH
    if st.st_uid not in uids:
        return ("belongs to uid %d, which is neither root, this user nor tor's user (%s): its owner may know "
                "its content" % (st.st_uid, ", ".join(TOR_USERS)))
    if st.st_mode & (stat.S_IROTH | stat.S_IWOTH | stat.S_IWGRP):
        return ("may be %s by others (mode %04o; tor makes its cookie 0600, or 0640 with "
                "CookieAuthFileGroupReadable): anyone may know its content"
                % ("read" if st.st_mode & stat.S_IROTH else "written", stat.S_IMODE(st.st_mode)))
    return None


def _kind(mode):
    for test, said in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return said
    return "no regular file"


def _untrusted(where, path, problem):
    return UntrustedCookieFile(
        "refusing to authenticate to the peer at %s: it names %s as its cookie file for SAFECOOKIE (PROTOCOLINFO's "
        "COOKIEFILE; no cookie_path was given), and %s %s. A peer that is not tor (a local user who holds the port "
        "while tor restarts) can name a file whose content it knows, pass SAFECOOKIE's proof and get the commands and "
        "keys that follow. No AUTHENTICATE was sent and the file was not read. If it is your tor's cookie, set "
        "cookie_path to it" % (where, path, path, problem))


def _cannot_read(path, exc):
    reason = getattr(exc, "strerror", None) or exc
    number = getattr(exc, "errno", None)
    return AuthenticationFailed("cannot read tor's authentication cookie %s: %s; %s"
                                % (path, reason, _advice.for_errno(number, path) if number in
                                   _advice.PERMISSION_ERRNOS else "set cookie_path to tor's cookie file"))


def read_cookie(path, named_by=None):
    """The 32-byte authentication cookie; a clear error when it is missing or wrong. A FIFO or a device is not
    read (nor opened, unless swapped in between: then the open does not wait and nothing is read).

    named_by: where the peer that named path is (PROTOCOLINFO's COOKIEFILE, the user gave no cookie_path):
    then the file must also pass named_cookie_problem, else UntrustedCookieFile, its content unread."""
    if named_by is not None and not os.path.isabs(path):
        raise _untrusted(named_by, path, named_cookie_problem(path, None, ()))
    try:
        before = os.stat(path)
        if stat.S_ISREG(before.st_mode):
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        else:
            fd = None
    except (OSError, ValueError) as exc:   # ValueError: a path with a NUL byte
        raise _cannot_read(path, exc)
    try:
        st = os.fstat(fd) if fd is not None else before
        if fd is not None and (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino):
            raise _cannot_read(path, OSError(errno.EAGAIN, "the file changed while it was opened"))
        if named_by is not None:
            problem = named_cookie_problem(path, st, tor_uids())
            if problem:
                raise _untrusted(named_by, path, problem)
        if not stat.S_ISREG(st.st_mode):
            raise AuthenticationFailed("cannot read tor's authentication cookie %s: it is not a regular file but %s; "
                                       "set cookie_path to tor's cookie file" % (path, _kind(st.st_mode)))
        try:
            cookie = os.read(fd, COOKIE_LENGTH + 1)
        except OSError as exc:
            raise _cannot_read(path, exc)
    finally:
        if fd is not None:
            os.close(fd)
    if len(cookie) != COOKIE_LENGTH:
        raise AuthenticationFailed("authentication cookie %s is not %d bytes long; it is not a tor cookie"
                                   % (path, COOKIE_LENGTH))
    return cookie


def safecookie_hashes(cookie, client_nonce, server_nonce):
    """(server hash we expect, client hash we send) per control-spec 3.24."""
    message = cookie + client_nonce + server_nonce
    server = hmac.new(SERVER_HASH_KEY, message, hashlib.sha256).digest()
    client = hmac.new(CLIENT_HASH_KEY, message, hashlib.sha256).digest()
    return server, client


def _authenticate(sock, token):
    args = [token] if token else []
    reply = sock.request(format_command("AUTHENTICATE", args))
    if not reply.ok:
        # tor closes the connection after a failed AUTHENTICATE
        sock.close()
        raise AuthenticationFailed("tor refused authentication: %s %s" % (reply.code, reply.lines[-1].text))


def _safecookie(sock, cookie):
    client_nonce = os.urandom(NONCE_LENGTH)
    reply = sock.request(format_command("AUTHCHALLENGE", ["SAFECOOKIE", binascii.hexlify(client_nonce).decode()]))
    try:
        reply.raise_for_status("AUTHCHALLENGE")
    except OperationFailed as exc:
        sock.close()
        raise AuthenticationFailed("tor refused the SAFECOOKIE challenge: %s %s" % (exc.code, exc.message))
    keyword, _sep, rest = reply.lines[-1].text.partition(" ")
    _pos, mapping = parse_mapping(rest)
    try:
        if keyword != "AUTHCHALLENGE":
            raise ValueError
        server_hash = binascii.unhexlify(mapping["SERVERHASH"])
        server_nonce = binascii.unhexlify(mapping["SERVERNONCE"])
        if len(server_hash) != 32 or len(server_nonce) != NONCE_LENGTH:
            raise ValueError
    except (KeyError, ValueError, TypeError, binascii.Error):
        sock.close()
        raise ProtocolError("malformed AUTHCHALLENGE reply")
    expected, client_hash = safecookie_hashes(cookie, client_nonce, server_nonce)
    if not hmac.compare_digest(expected, server_hash):
        sock.close()
        raise AuthenticationFailed("SAFECOOKIE: the server's hash does not match our cookie, so the peer at %s "
                                   "does not know it (a stale cookie, or not the tor you think); refusing to "
                                   "authenticate" % sock.where)
    _authenticate(sock, binascii.hexlify(client_hash).decode())


def _given(password, cookie_path):
    """The credentials the user gave, as the options are named (for messages; never their values)."""
    return " and ".join(name for name, value in (("control_password", password is not None),
                                                 ("cookie_path", bool(cookie_path))) if value)


def _expected(password, cookie_path):
    """What a tor that asks for the credentials given would offer."""
    if password is not None and cookie_path:
        return "SAFECOOKIE with cookie_path, or HASHEDPASSWORD"
    if password is not None:
        return "HASHEDPASSWORD (or SAFECOOKIE with a cookie this user can read)"
    return "SAFECOOKIE (or plain COOKIE) with cookie_path"


def authenticate(sock, info, password=None, cookie_path=None, fallback=None):
    """Authenticate on sock with the first method of the order above that fits; returns the method used.

    fallback: why the address is only a guess (connect()'s 127.0.0.1:9051 when the Debian socket is
    missing); then only SAFECOOKIE is accepted."""
    if password is not None:
        check_value(password, "control_password")
    methods = set(info.methods)
    offered = ", ".join(info.methods) or "nothing"
    given = _given(password, cookie_path)

    # 1. SAFECOOKIE: the peer proves it knows the cookie before we send anything that reveals a secret
    cookie_problem = None
    if "SAFECOOKIE" in methods:
        path = cookie_path or info.cookie_file
        if not path:
            cookie_problem = AuthenticationFailed("tor offers cookie authentication (%s) but names no cookie file; "
                                                  "set cookie_path" % offered)
        else:
            try:
                cookie = read_cookie(path, named_by=None if cookie_path else sock.where)
            except UntrustedCookieFile:
                sock.close()
                raise
            except AuthenticationFailed as exc:
                cookie_problem = exc
            else:
                _safecookie(sock, cookie)
                return "SAFECOOKIE"

    # From here on the peer proves nothing before we authenticate.
    if fallback:
        if cookie_problem is not None:
            raise AuthenticationFailed("%s (the peer at %s was reached only as the fallback (%s), where nothing but "
                                       "SAFECOOKIE is used)" % (cookie_problem, sock.where, fallback))
        raise AuthenticationFailed(
            "refusing to authenticate to the peer at %s: it was reached only as the fallback (%s) and offers %s, "
            "which does not prove it is tor before secrets (a password, the keys in later commands) reach it (a "
            "local user can listen there while tor restarts); expected SAFECOOKIE with a cookie this user can read. "
            "No AUTHENTICATE was sent. If your tor listens there, set control_port to use it"
            % (sock.where, fallback, offered))
    if "NULL" in methods:
        if given:
            note = "; the cookie: %s" % cookie_problem if cookie_problem is not None else ""
            raise AuthenticationFailed(
                "refusing to authenticate to the peer at %s: it offers %s, but %s was given and a tor that asks for "
                "it never offers NULL (no authentication); expected %s%s. No AUTHENTICATE was sent: this may not be "
                "your tor (a local user can listen on its port while tor restarts). If your tor really runs without "
                "authentication, do not give %s"
                % (sock.where, offered, given, _expected(password, cookie_path), note, given))
        _authenticate(sock, None)
        return "NULL"
    if password is not None and "HASHEDPASSWORD" in methods:
        _authenticate(sock, quote(password))
        return "HASHEDPASSWORD"
    if cookie_problem is None and "COOKIE" in methods:
        if not cookie_path:
            # Plain COOKIE sends the file's bytes to the peer, and the file is the one the peer
            # names: a listener that is not tor could have us read out any 32-byte file. Every tor
            # since 0.2.3 offers SAFECOOKIE with COOKIE, so only a cookie the user names is sent.
            raise AuthenticationFailed("the peer at %s offers only plain COOKIE authentication (it offers %s), "
                                       "which would reveal the file it names; real tors also offer SAFECOOKIE. "
                                       "Set cookie_path to the cookie to use it anyway" % (sock.where, offered))
        try:
            cookie = read_cookie(cookie_path)
        except AuthenticationFailed as exc:
            cookie_problem = exc
        else:
            _authenticate(sock, binascii.hexlify(cookie).decode())
            return "COOKIE"
    if cookie_problem is not None:
        if "HASHEDPASSWORD" in methods and password is None:
            raise AuthenticationFailed("%s; tor also accepts a password: set control_password" % cookie_problem)
        raise cookie_problem
    if "HASHEDPASSWORD" in methods:
        raise AuthenticationFailed("tor requires a password (it offers %s); set control_password" % offered)
    raise AuthenticationFailed("tor offers no authentication method we support (it offers %s)" % offered)
