# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""PROTOCOLINFO and authentication (auth.py) against a scripted peer over a real socket."""

import binascii
import hashlib
import hmac
import io
import os

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils import _onion_watchdog as watchdog
from ansible_collections.onionlab.tor.plugins.module_utils._tor import auth, client
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import (
    AuthenticationFailed,
    OperationFailed,
    ProtocolError,
    UnsafeValue,
)
from harness.fake_tor import FakeTor

OK = b"250 OK\r\n"
COOKIE = bytes(range(32))
SERVER_NONCE = bytes(range(100, 132))


def protocolinfo(methods, cookie_file=None, version=b"0.4.9.11", proto=b"1"):
    auth_line = b"250-AUTH METHODS=" + methods
    if cookie_file is not None:
        auth_line += b" COOKIEFILE=" + cookie_file
    return (b"250-PROTOCOLINFO " + proto + b"\r\n" + auth_line + b"\r\n"
            b"250-VERSION Tor=\"" + version + b"\"\r\n250 OK\r\n")


class _RecordingConn(object):
    """The fake's end of a connection: every byte it receives also goes to sink, as received."""

    def __init__(self, conn, sink):
        self._conn = conn
        self._sink = sink

    def recv(self, size, *flags):
        data = self._conn.recv(size, *flags)
        self._sink.append(data)
        return data

    def __getattr__(self, name):
        return getattr(self._conn, name)


class _RecordingServer(object):
    def __init__(self, server, sink):
        self._server = server
        self._sink = sink

    def accept(self):
        conn, address = self._server.accept()
        return _RecordingConn(conn, self._sink), address

    def __getattr__(self, name):
        return getattr(self._server, name)


class RecordingFakeTor(FakeTor):
    """FakeTor that keeps every byte it received, partial lines too (.raw): all that crossed the wire."""

    def __init__(self, script):
        super().__init__(script)
        self.chunks = []
        self._server = _RecordingServer(self._server, self.chunks)

    @property
    def raw(self):
        return b"".join(self.chunks)


def run(script, fallback=None, **kwargs):
    """connect() to a recording fake running script: at its port, or, with fallback=(monkeypatch, tmp_path), as
    connect()'s fallback after a missing Debian socket. Returns (controller or the exception, fake)."""
    with RecordingFakeTor(script) as fake:
        try:
            if fallback is not None:
                monkeypatch, tmp_path = fallback
                monkeypatch.setattr(client, "DEFAULT_SOCKET", str(tmp_path / "run-tor-control"))
                monkeypatch.setattr(client, "DEFAULT_PORT", fake.port)
                result = connect(timeout=5, **kwargs)
            else:
                result = connect(port=fake.port, timeout=5, **kwargs)
            result.close()
        except Exception as exc:  # pylint: disable=broad-except
            result = exc
    assert fake.errors == []
    return result, fake


def expect_failure(script, cls=AuthenticationFailed, **kwargs):
    result, fake = run(script, **kwargs)
    assert isinstance(result, cls), result
    return str(result), fake.received


def hmac256(key, message):
    return hmac.new(key, message, hashlib.sha256).digest()


def server_hash(cookie, client_nonce, server_nonce):
    return hmac256(b"Tor safe cookie authentication server-to-controller hash",
                   cookie + client_nonce + server_nonce)


def client_hash(cookie, client_nonce, server_nonce):
    return hmac256(b"Tor safe cookie authentication controller-to-server hash",
                   cookie + client_nonce + server_nonce)


def challenge(line):
    """The client nonce of an 'AUTHCHALLENGE SAFECOOKIE <hex>' line."""
    words = line.split(b" ")
    assert words[:2] == [b"AUTHCHALLENGE", b"SAFECOOKIE"] and len(words) == 3
    nonce = binascii.unhexlify(words[2])
    assert len(nonce) == 32
    return nonce


def challenge_reply(cookie=COOKIE, server_nonce=SERVER_NONCE, tamper=False):
    """A callable answering AUTHCHALLENGE as a tor that knows `cookie` would."""
    def answer(line):
        digest = server_hash(cookie, challenge(line), server_nonce)
        if tamper:
            digest = bytes([digest[0] ^ 1]) + digest[1:]
        return (b"250 AUTHCHALLENGE SERVERHASH=%s SERVERNONCE=%s\r\n"
                % (binascii.hexlify(digest).upper(), binascii.hexlify(server_nonce).upper()))
    return answer


@pytest.fixture
def cookie_file(tmp_path):
    """A cookie as tor writes it: 32 bytes, mode 0600, this user's (the tests' tors run as this user)."""
    path = tmp_path / "control_auth_cookie"
    path.write_bytes(COOKIE)
    path.chmod(0o600)
    return path


# -- PROTOCOLINFO ---------------------------------------------------------------------------

@pytest.mark.parametrize("wire, methods, cookie_file, version", [
    (protocolinfo(b"NULL"), ("NULL",), None, "0.4.9.11"),
    (protocolinfo(b"COOKIE,SAFECOOKIE", b'"/run/tor/control.authcookie"'), ("COOKIE", "SAFECOOKIE"),
     "/run/tor/control.authcookie", "0.4.9.11"),
    (protocolinfo(b"HASHEDPASSWORD"), ("HASHEDPASSWORD",), None, "0.4.9.11"),
    (protocolinfo(b"COOKIE,SAFECOOKIE,HASHEDPASSWORD", b'"/a b/\\"q\\"/caf\\303\\251\\\\x"'),
     ("COOKIE", "SAFECOOKIE", "HASHEDPASSWORD"), '/a b/"q"/caf\u00e9\\x', "0.4.9.11"),
    (protocolinfo(b"", version=b"0.5.0.1-alpha-dev"), (), None, "0.5.0.1-alpha-dev"),
    (b"250-PROTOCOLINFO 1\r\n250-AUTH METHODS=NULL\r\n250 OK\r\n", ("NULL",), None, None),
    (b"250-PROTOCOLINFO 1\r\n250-AUTH METHODS=NULL FUTURE=1\r\n250-FUTURELINE x\r\n"
     b"250-VERSION Tor=\"0.4.9.11\" OTHER=\"y\"\r\n250 OK\r\n", ("NULL",), None, "0.4.9.11"),
])
def test_protocolinfo_variants(wire, methods, cookie_file, version):
    controller, fake = run([(b"PROTOCOLINFO 1", wire)], authenticate=False)
    info = controller.protocol_info
    assert (info.methods, info.cookie_file, info.tor_version) == (methods, cookie_file, version)
    assert info.as_dict()["methods"] == list(methods)
    assert fake.received[0] == b"PROTOCOLINFO 1"


@pytest.mark.parametrize("wire, cls, message", [
    (b"250-PROTOCOLINFO 1\r\n250-AUTH COOKIEFILE=\"/x\"\r\n250 OK\r\n", ProtocolError, "has no METHODS"),
    (b"250-AUTH METHODS=NULL\r\n250 OK\r\n", ProtocolError, "no PROTOCOLINFO line"),
    (protocolinfo(b"NULL", proto=b"2"), ProtocolError, "version '2'"),
    (b"250-PROTOCOLINFO 1\r\n250-AUTH METHODS=COOKIE COOKIEFILE=\"/unterminated\r\n250 OK\r\n",
     ProtocolError, "unterminated"),
    (b"513 PROTOCOLINFO Unrecognized version\r\n", OperationFailed, "513"),
])
def test_protocolinfo_malformed(wire, cls, message):
    text, received = expect_failure([(b"PROTOCOLINFO 1", wire)], cls=cls)
    assert message in text
    assert received == [b"PROTOCOLINFO 1"]


# -- choosing the method --------------------------------------------------------------------

def test_null():
    controller, fake = run([(b"PROTOCOLINFO", protocolinfo(b"NULL")), (b"AUTHENTICATE", OK)])
    assert controller.auth_method == "NULL"
    assert fake.received[:3] == [b"PROTOCOLINFO 1", b"AUTHENTICATE", b"QUIT"]


def test_null_with_a_password_offered_too_is_refused():
    """Issue 42: NULL used to win even when a password was given. A tor never offers NULL with another
    method (tor's control_auth: NULL only without CookieAuthentication and HashedControlPassword)."""
    text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(b"NULL,HASHEDPASSWORD")), (b"AUTHENTICATE", OK)],
                                    password="secret")
    assert "it offers NULL, HASHEDPASSWORD, but control_password was given" in text and "secret" not in text
    assert received == [b"PROTOCOLINFO 1"]


@pytest.mark.parametrize("password, wire", [
    ("secret", b'AUTHENTICATE "secret"'),
    ('pa ss"wo\\rd', b'AUTHENTICATE "pa ss\\"wo\\\\rd"'),
    ("", b'AUTHENTICATE ""'),
    ("caf\u00e9", 'AUTHENTICATE "caf\u00e9"'.encode()),
])
def test_hashedpassword(password, wire):
    controller, fake = run([(b"PROTOCOLINFO", protocolinfo(b"HASHEDPASSWORD")), (b"AUTHENTICATE", OK)],
                           password=password)
    assert controller.auth_method == "HASHEDPASSWORD"
    assert fake.received[1] == wire


def test_safecookie_preferred_over_a_password_given(cookie_file):
    """Issue 42: the password used to go first; SAFECOOKIE proves the peer and reveals nothing."""
    controller, fake = run([(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE,HASHEDPASSWORD",
                                                           b'"%s"' % str(cookie_file).encode())),
                            (b"AUTHCHALLENGE", challenge_reply()), (b"AUTHENTICATE", OK)], password="secret")
    assert controller.auth_method == "SAFECOOKIE"
    assert [line.split(b" ")[0] for line in fake.received] == [b"PROTOCOLINFO", b"AUTHCHALLENGE", b"AUTHENTICATE",
                                                               b"QUIT"]
    assert not any(b"secret" in line for line in fake.received)


def test_password_required_but_not_given():
    text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(b"HASHEDPASSWORD"))])
    assert text == "tor requires a password (it offers HASHEDPASSWORD); set control_password"
    assert received == [b"PROTOCOLINFO 1"]


def test_wrong_password():
    answer = b"515 Authentication failed: Password did not match HashedControlPassword value from configuration\r\n"
    text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(b"HASHEDPASSWORD")), (b"AUTHENTICATE", answer)],
                                    password="not the password")
    assert text.startswith("tor refused authentication: 515 Authentication failed: Password did not match")
    assert "not the password" not in text
    assert b"QUIT" not in received                 # tor closes after a failed AUTHENTICATE; so do we


@pytest.mark.parametrize("password", ["a\r\nSIGNAL SHUTDOWN", "a\nb", "a\rb", "nul\x00"])
def test_unsafe_password_is_never_sent(password):
    text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(b"HASHEDPASSWORD")), (b"AUTHENTICATE", OK)],
                                    cls=UnsafeValue, password=password)
    assert text.startswith("control_password contains")
    assert password not in text
    assert received == [b"PROTOCOLINFO 1"]


@pytest.mark.parametrize("methods, offered", [
    (b"FOO,BAR", "FOO, BAR"),
    (b"", "nothing"),
    (b"HASHEDPASSWORD2", "HASHEDPASSWORD2"),
])
def test_unknown_methods(methods, offered):
    text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(methods))], password="secret")
    assert text == "tor offers no authentication method we support (it offers %s)" % offered
    assert received == [b"PROTOCOLINFO 1"]


# -- cookies --------------------------------------------------------------------------------

def test_cookie(cookie_file):
    controller, fake = run([(b"PROTOCOLINFO", protocolinfo(b"COOKIE", b'"%s"' % str(cookie_file).encode())),
                            (b"AUTHENTICATE", OK)], cookie_path=str(cookie_file))
    assert controller.auth_method == "COOKIE"
    assert fake.received[1] == b"AUTHENTICATE " + binascii.hexlify(COOKIE)


def test_plain_cookie_needs_a_cookie_path(cookie_file):
    """A peer offering COOKIE without SAFECOOKIE names a file whose bytes we would send it."""
    text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(b"COOKIE", b'"%s"' % str(cookie_file).encode()))])
    assert "offers only plain COOKIE" in text and "Set cookie_path" in text
    assert received == [b"PROTOCOLINFO 1"]


def test_cookiefile_with_escapes(tmp_path):
    directory = tmp_path / 'caf\u00e9 "dir"\\x'
    directory.mkdir()
    (directory / "cookie").write_bytes(COOKIE)
    (directory / "cookie").chmod(0o600)
    escaped = str(tmp_path).encode() + b'/caf\\303\\251 \\"dir\\"\\\\x/cookie'
    controller, fake = run([(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE", b'"' + escaped + b'"')),
                            (b"AUTHCHALLENGE", challenge_reply()),
                            (b"AUTHENTICATE", OK)])
    assert controller.protocol_info.cookie_file == str(directory / "cookie")
    assert controller.auth_method == "SAFECOOKIE"  # the cookie was read from the unescaped path


def test_cookie_path_overrides_cookiefile(cookie_file):
    controller, fake = run([(b"PROTOCOLINFO", protocolinfo(b"COOKIE", b'"/nonexistent/cookie"')),
                            (b"AUTHENTICATE", OK)], cookie_path=str(cookie_file))
    assert controller.auth_method == "COOKIE"
    assert fake.received[1] == b"AUTHENTICATE " + binascii.hexlify(COOKIE)


@pytest.mark.parametrize("length", [0, 16, 31, 33, 64])
@pytest.mark.parametrize("where", ["cookie_path", "COOKIEFILE"])
def test_cookie_file_wrong_length(tmp_path, length, where):
    path = tmp_path / "cookie"
    path.write_bytes(os.urandom(length))
    path.chmod(0o600)
    named = b'"%s"' % str(path).encode()
    if where == "cookie_path":
        text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE", b'"/elsewhere"'))],
                                        cookie_path=str(path))
        assert text == "authentication cookie %s is not 32 bytes long; it is not a tor cookie" % path
    else:
        text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE", named))])
        assert " and %s is not 32 bytes long. " % path in text and "No AUTHENTICATE was sent" in text, text
    assert received == [b"PROTOCOLINFO 1"]


def test_cookie_file_missing(tmp_path):
    path = tmp_path / "missing"
    text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE",
                                                                    b'"%s"' % str(path).encode()))])
    assert text.startswith("cannot read tor's authentication cookie %s: No such file" % path)
    assert "set cookie_path" in text
    assert received == [b"PROTOCOLINFO 1"]


@pytest.mark.parametrize("name, reason", [("dir-not-file", "not a regular file but a directory"),
                                          ("nul\x00byte", "embedded null")])
def test_cookie_path_unreadable(tmp_path, name, reason):
    path = tmp_path / "dir-not-file"
    path.mkdir()
    text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE"))],
                                    cookie_path=str(tmp_path / name))
    assert text.startswith("cannot read tor's authentication cookie ") and reason in text
    assert received == [b"PROTOCOLINFO 1"]


def test_cookie_file_missing_but_password_possible(tmp_path):
    path = tmp_path / "missing"
    text, _received = expect_failure([(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE,HASHEDPASSWORD",
                                                                     b'"%s"' % str(path).encode()))])
    assert text.endswith("; tor also accepts a password: set control_password")


def test_cookie_offered_without_a_file():
    text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE"))])
    assert text == ("tor offers cookie authentication (COOKIE, SAFECOOKIE) but names no cookie file; "
                    "set cookie_path")
    assert received == [b"PROTOCOLINFO 1"]


def test_cookie_rejected_by_tor(cookie_file):
    text, _received = expect_failure([
        (b"PROTOCOLINFO", protocolinfo(b"COOKIE", b'"%s"' % str(cookie_file).encode())),
        (b"AUTHENTICATE", b"515 Authentication failed: Authentication cookie did not match expected value.\r\n")],
        cookie_path=str(cookie_file))
    assert text.startswith("tor refused authentication: 515 Authentication failed: Authentication cookie")
    assert binascii.hexlify(COOKIE).decode() not in text.lower()


# -- SAFECOOKIE -----------------------------------------------------------------------------

def safecookie_script(cookie_path, answer, then=OK):
    return [(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE", b'"%s"' % str(cookie_path).encode())),
            (b"AUTHCHALLENGE", answer), (b"AUTHENTICATE", then)]


def test_safecookie(cookie_file):
    controller, fake = run(safecookie_script(cookie_file, challenge_reply()))
    assert controller.auth_method == "SAFECOOKIE"
    nonce = challenge(fake.received[1])
    expected = b"AUTHENTICATE " + binascii.hexlify(client_hash(COOKIE, nonce, SERVER_NONCE))
    assert fake.received[2].lower() == expected.lower()


def test_safecookie_nonce_is_fresh(cookie_file):
    nonces = set()
    for _ in range(3):
        _controller, fake = run(safecookie_script(cookie_file, challenge_reply()))
        nonces.add(challenge(fake.received[1]))
    assert len(nonces) == 3


@pytest.mark.parametrize("answer", [
    challenge_reply(tamper=True),                          # one bit off
    challenge_reply(cookie=bytes(32)),                     # a peer with another cookie (stale, or not our tor)
    challenge_reply(cookie=COOKIE[::-1]),
])
def test_safecookie_wrong_server_hash_is_refused(cookie_file, answer):
    text, received = expect_failure(safecookie_script(cookie_file, answer))
    assert "SAFECOOKIE: the server's hash does not match our cookie" in text
    assert "refusing to authenticate" in text
    # our hash (which would prove we know the cookie) was never sent, nor anything else
    assert len(received) == 2 and received[1].startswith(b"AUTHCHALLENGE SAFECOOKIE ")
    assert not any(line.startswith(b"AUTHENTICATE") for line in received)


def test_safecookie_compares_in_constant_time(cookie_file, monkeypatch):
    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    controller, _fake = run(safecookie_script(cookie_file, challenge_reply()))
    assert controller.auth_method == "SAFECOOKIE" and len(calls) == 1


def _hexs(n):
    return binascii.hexlify(bytes(range(n))).upper()


@pytest.mark.parametrize("answer", [
    b"250 AUTHCHALLENGE SERVERNONCE=%s\r\n" % _hexs(32),                               # no SERVERHASH
    b"250 AUTHCHALLENGE SERVERHASH=%s\r\n" % _hexs(32),                                # no SERVERNONCE
    b"250 AUTHCHALLENGE SERVERHASH=%s SERVERNONCE=%s\r\n" % (b"ZZ" * 32, _hexs(32)),   # not hex
    b"250 AUTHCHALLENGE SERVERHASH=%s SERVERNONCE=%s\r\n" % (_hexs(32)[:-1], _hexs(32)),  # odd length
    b"250 AUTHCHALLENGE SERVERHASH=%s SERVERNONCE=%s\r\n" % (_hexs(16), _hexs(32)),    # short hash
    b"250 AUTHCHALLENGE SERVERHASH=%s SERVERNONCE=%s\r\n" % (_hexs(32), _hexs(8)),     # short nonce
    b"250 AUTHCHALLENGE SERVERHASH=%s SERVERNONCE=%s\r\n" % (_hexs(33), _hexs(32)),    # long hash
    b"250 CHALLENGE SERVERHASH=%s SERVERNONCE=%s\r\n" % (_hexs(32), _hexs(32)),        # wrong keyword
    b"250 OK\r\n",
])
def test_malformed_authchallenge(cookie_file, answer):
    text, received = expect_failure(safecookie_script(cookie_file, answer), cls=ProtocolError)
    assert text == "malformed AUTHCHALLENGE reply"
    assert not any(line.startswith(b"AUTHENTICATE") for line in received)


def test_authchallenge_refused(cookie_file):
    text, received = expect_failure(safecookie_script(
        cookie_file, b"513 Invalid base16 client nonce\r\n"))
    assert text == "tor refused the SAFECOOKIE challenge: 513 Invalid base16 client nonce"
    assert len(received) == 2


def test_safecookie_authenticate_refused(cookie_file):
    text, _received = expect_failure(safecookie_script(
        cookie_file, challenge_reply(), then=b"515 Authentication failed: Safe cookie response did not match.\r\n"))
    assert text.startswith("tor refused authentication: 515 Authentication failed")


def test_safecookie_hashes_match_the_spec():
    nonce = os.urandom(32)
    assert auth.safecookie_hashes(COOKIE, nonce, SERVER_NONCE) == (server_hash(COOKIE, nonce, SERVER_NONCE),
                                                                   client_hash(COOKIE, nonce, SERVER_NONCE))


# -- no downgrade (issue 42) ----------------------------------------------------------------
# A user who gave credentials never authenticates with NULL; SAFECOOKIE (the peer proves it knows the
# cookie) goes before anything that reveals a secret; connect()'s fallback address must prove itself.
# The fake keeps every byte it received, so each test asserts that no secret crossed the wire.

SECRET = "correct horse battery staple"
COOKIE_HEX = binascii.hexlify(COOKIE)


def assert_no_secret(fake, *texts):
    """Neither the password nor the cookie crossed the wire or reached a message."""
    for secret in (SECRET.encode(), COOKIE_HEX, COOKIE_HEX.upper(), COOKIE):
        assert secret not in fake.raw
    for text in texts:
        assert SECRET not in text and COOKIE_HEX.decode() not in text.lower()


def credentials(kind, cookie):
    return {"password": {"password": SECRET}, "cookie": {"cookie_path": str(cookie)},
            "both": {"password": SECRET, "cookie_path": str(cookie)}}[kind]


@pytest.mark.parametrize("methods, kind, given, expected", [
    (b"NULL", "password", "control_password", "expected HASHEDPASSWORD (or SAFECOOKIE with a cookie"),
    (b"NULL", "cookie", "cookie_path", "expected SAFECOOKIE (or plain COOKIE) with cookie_path"),
    (b"NULL", "both", "control_password and cookie_path", "expected SAFECOOKIE with cookie_path, or HASHEDPASSWORD"),
    (b"NULL,HASHEDPASSWORD", "password", "control_password", "expected HASHEDPASSWORD"),
    (b"NULL,COOKIE", "cookie", "cookie_path", "expected SAFECOOKIE (or plain COOKIE)"),  # plain COOKIE: not to it
])
def test_credentials_given_null_offered_is_refused(cookie_file, methods, kind, given, expected):
    result, fake = run([(b"PROTOCOLINFO", protocolinfo(methods)), (b"AUTHENTICATE", OK)],
                       **credentials(kind, cookie_file))
    assert isinstance(result, AuthenticationFailed), result
    text = str(result)
    assert text.startswith("refusing to authenticate to the peer at port 127.0.0.1:%d: it offers %s, but %s was given"
                           % (fake.port, methods.decode().replace(",", ", "), given))
    assert expected in text and "No AUTHENTICATE was sent" in text
    assert fake.received == [b"PROTOCOLINFO 1"]          # no AUTHENTICATE, no QUIT: nothing after PROTOCOLINFO
    assert_no_secret(fake, text)


def test_credentials_given_null_and_safecookie_with_an_unreadable_cookie(tmp_path):
    """A peer offering NULL is no tor: only SAFECOOKIE could be used with it, and the cookie it names is missing."""
    missing = tmp_path / "missing"
    result, fake = run([(b"PROTOCOLINFO", protocolinfo(b"NULL,SAFECOOKIE,HASHEDPASSWORD",
                                                       b'"%s"' % str(missing).encode()))], password=SECRET)
    assert isinstance(result, AuthenticationFailed), result
    text = str(result)
    assert "it offers NULL, SAFECOOKIE, HASHEDPASSWORD, but control_password was given" in text
    assert "; the cookie: cannot read tor's authentication cookie %s" % missing in text
    assert fake.received == [b"PROTOCOLINFO 1"]
    assert_no_secret(fake, text)


@pytest.mark.parametrize("kind", ["cookie", "password", "both"])
def test_null_and_safecookie_offered_with_a_cookie_takes_safecookie(cookie_file, kind):
    # with only a password, the cookie is the file the peer names
    named = b'"%s"' % str(cookie_file).encode()
    controller, fake = run([(b"PROTOCOLINFO", protocolinfo(b"NULL,SAFECOOKIE", named)),
                            (b"AUTHCHALLENGE", challenge_reply()), (b"AUTHENTICATE", OK)],
                           **credentials(kind, cookie_file))
    assert controller.auth_method == "SAFECOOKIE"
    nonce = challenge(fake.received[1])
    assert fake.received[2].lower() == b"authenticate " + binascii.hexlify(client_hash(COOKIE, nonce, SERVER_NONCE))
    assert_no_secret(fake)


@pytest.mark.parametrize("methods", [b"SAFECOOKIE,HASHEDPASSWORD", b"COOKIE,SAFECOOKIE,HASHEDPASSWORD",
                                     b"HASHEDPASSWORD,SAFECOOKIE"])
@pytest.mark.parametrize("where", ["cookie_path", "COOKIEFILE"])
def test_safecookie_before_the_password(cookie_file, tmp_path, methods, where):
    named = cookie_file if where == "COOKIEFILE" else tmp_path / "not-read"
    kwargs = {"password": SECRET}
    if where == "cookie_path":
        kwargs["cookie_path"] = str(cookie_file)
    controller, fake = run([(b"PROTOCOLINFO", protocolinfo(methods, b'"%s"' % str(named).encode())),
                            (b"AUTHCHALLENGE", challenge_reply()), (b"AUTHENTICATE", OK)], **kwargs)
    assert controller.auth_method == "SAFECOOKIE"
    assert [line.split(b" ")[0] for line in fake.received] == [b"PROTOCOLINFO", b"AUTHCHALLENGE", b"AUTHENTICATE",
                                                               b"QUIT"]
    assert_no_secret(fake)


@pytest.mark.parametrize("methods", [b"COOKIE,SAFECOOKIE,HASHEDPASSWORD", b"SAFECOOKIE,HASHEDPASSWORD",
                                     b"NULL,SAFECOOKIE"])
@pytest.mark.parametrize("answer", [challenge_reply(tamper=True), challenge_reply(cookie=bytes(32))],
                         ids=["one-bit-off", "another-cookie"])
@pytest.mark.parametrize("kind", ["password", "both"])
def test_a_peer_failing_the_server_hash_never_gets_the_password(cookie_file, methods, answer, kind):
    result, fake = run([(b"PROTOCOLINFO", protocolinfo(methods, b'"%s"' % str(cookie_file).encode())),
                        (b"AUTHCHALLENGE", answer), (b"AUTHENTICATE", OK)], **credentials(kind, cookie_file))
    assert isinstance(result, AuthenticationFailed), result
    text = str(result)
    assert "SAFECOOKIE: the server's hash does not match our cookie" in text and "refusing to authenticate" in text
    assert [line.split(b" ")[0] for line in fake.received] == [b"PROTOCOLINFO", b"AUTHCHALLENGE"]
    assert_no_secret(fake, text)


@pytest.mark.parametrize("where", ["cookie_path", "COOKIEFILE"])
def test_an_unreadable_cookie_leaves_the_password(tmp_path, where):
    """No proof is possible without the cookie: the password the user gave is used (tor's password
    authentication proves nothing of the peer; that is the password's nature, not a downgrade)."""
    missing = str(tmp_path / "missing")
    kwargs = {"password": SECRET, "cookie_path": missing} if where == "cookie_path" else {"password": SECRET}
    controller, fake = run([(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE,HASHEDPASSWORD",
                                                           b'"%s"' % missing.encode())),
                            (b"AUTHENTICATE", OK)], **kwargs)
    assert controller.auth_method == "HASHEDPASSWORD"
    assert fake.received[1] == b'AUTHENTICATE "%s"' % SECRET.encode()
    assert SECRET.encode() in fake.raw                  # the recorder sees a secret that does cross


@pytest.mark.parametrize("password", ["a\r\nSIGNAL SHUTDOWN", "nul\x00"])
def test_an_unsafe_password_is_refused_even_when_safecookie_would_do(cookie_file, password):
    result, fake = run([(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE,HASHEDPASSWORD",
                                                       b'"%s"' % str(cookie_file).encode()))], password=password)
    assert isinstance(result, UnsafeValue) and password not in str(result)
    assert fake.received == [b"PROTOCOLINFO 1"]


def test_no_credentials_null_still_works():
    """A tor with no authentication at all, at a port the caller named (how test tors run)."""
    controller, fake = run([(b"PROTOCOLINFO", protocolinfo(b"NULL")), (b"AUTHENTICATE", OK)])
    assert controller.auth_method == "NULL"
    assert fake.received[:2] == [b"PROTOCOLINFO 1", b"AUTHENTICATE"]


# connect()'s fallback: no control options, no Debian socket, so 127.0.0.1:9051 is a guess (a local
# user may listen there while tor restarts): the peer there must prove itself with SAFECOOKIE.

@pytest.mark.parametrize("methods, kwargs", [
    (b"NULL", {}),
    (b"NULL", {"password": SECRET}),
    (b"HASHEDPASSWORD", {"password": SECRET}),
    (b"COOKIE", {"cookie_path": None}),               # the cookie_path the user gave: plain COOKIE would send it
])
def test_the_fallback_address_must_prove_itself(cookie_file, tmp_path, monkeypatch, methods, kwargs):
    if "cookie_path" in kwargs:
        kwargs = {"cookie_path": str(cookie_file)}
    result, fake = run([(b"PROTOCOLINFO", protocolinfo(methods)), (b"AUTHENTICATE", OK)],
                       fallback=(monkeypatch, tmp_path), **kwargs)
    assert isinstance(result, AuthenticationFailed), result
    text = str(result)
    assert text.startswith("refusing to authenticate to the peer at port 127.0.0.1:%d: it was reached only as the "
                           "fallback (no control socket at %s) and offers %s"
                           % (fake.port, tmp_path / "run-tor-control", methods.decode()))
    assert "expected SAFECOOKIE" in text and text.endswith("If your tor listens there, set control_port to use it")
    assert fake.received == [b"PROTOCOLINFO 1"]
    assert_no_secret(fake, text)


def test_the_fallback_address_with_an_unreadable_cookie(tmp_path, monkeypatch):
    missing = tmp_path / "missing"
    result, fake = run([(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE,HASHEDPASSWORD",
                                                       b'"%s"' % str(missing).encode()))],
                       fallback=(monkeypatch, tmp_path), password=SECRET)
    assert isinstance(result, AuthenticationFailed), result
    text = str(result)
    assert text.startswith("cannot read tor's authentication cookie %s" % missing)
    assert "was reached only as the fallback (no control socket at" in text and "nothing but SAFECOOKIE" in text
    assert fake.received == [b"PROTOCOLINFO 1"]
    assert_no_secret(fake, text)


@pytest.mark.parametrize("kwargs", [{}, {"password": SECRET}])
def test_the_fallback_address_proving_itself_is_used(cookie_file, tmp_path, monkeypatch, kwargs):
    controller, fake = run([(b"PROTOCOLINFO", protocolinfo(b"COOKIE,SAFECOOKIE,HASHEDPASSWORD",
                                                           b'"%s"' % str(cookie_file).encode())),
                            (b"AUTHCHALLENGE", challenge_reply()), (b"AUTHENTICATE", OK)],
                           fallback=(monkeypatch, tmp_path), **kwargs)
    assert controller.auth_method == "SAFECOOKIE"
    assert controller.where == "port 127.0.0.1:%d" % fake.port
    assert_no_secret(fake)


# -- every caller gets the rule: connect() is the one way in ----------------------------------

def test_the_watchdog_refuses_null_when_given_a_cookie(cookie_file, tmp_path):
    out = io.StringIO()
    with RecordingFakeTor([(b"PROTOCOLINFO", protocolinfo(b"NULL")), (b"AUTHENTICATE", OK)]) as fake:
        state = watchdog.Watchdog({"control_port": fake.port, "cookie_path": str(cookie_file), "timeout": 5,
                                   "state_file": str(tmp_path / "s.json"), "metrics_file": str(tmp_path / "m.prom")},
                                  restart=lambda: pytest.fail("restarted"), out=out).run()
    assert fake.errors == []
    assert state["tor_up"] == 0
    assert "tor=unreachable" in out.getvalue() and "refusing to authenticate" in out.getvalue()
    assert fake.received == [b"PROTOCOLINFO 1"]
    assert_no_secret(fake, out.getvalue())


# -- the cookie file the peer names (issue 42) ------------------------------------------------
# With no cookie_path, SAFECOOKIE reads PROTOCOLINFO's COOKIEFILE: the peer names it. Its proof (the server hash)
# shows only that the peer knows that file's content, so a peer that is not tor names a file it knows (one it
# wrote, one anybody may read) and passes. Such a file is refused before AUTHCHALLENGE: its content is never read,
# nothing derived from it is sent, no password follows. A fake that knows the file answers the challenge right, so
# each test would see AUTHENTICATE (and the commands after it) if the client went on.

KNOWN = b"0123456789abcdef0123456789ABCDEF"  # 32 bytes the peer wrote, or can read


def known_file(tmp_path, mode, name="cookie"):
    path = tmp_path / name
    path.write_bytes(KNOWN)
    path.chmod(mode)
    return path


def knowing_fake(path, methods=b"SAFECOOKIE"):
    """A peer that names path and knows its content: it passes SAFECOOKIE's proof."""
    return [(b"PROTOCOLINFO", protocolinfo(methods, b'"%s"' % str(path).encode())),
            (b"AUTHCHALLENGE", challenge_reply(cookie=KNOWN)), (b"AUTHENTICATE", OK), (b"GETINFO", OK)]


def assert_nothing_sent(fake, text):
    assert fake.received == [b"PROTOCOLINFO 1"], fake.received
    for leak in (KNOWN, binascii.hexlify(KNOWN), SECRET.encode()):
        assert leak not in fake.raw
    assert "No AUTHENTICATE was sent and the file was not read. If it is your tor's cookie, set cookie_path" in text
    assert KNOWN.decode() not in text and SECRET not in text


@pytest.mark.parametrize("mode, said", [
    (0o644, "may be read by others (mode 0644;"),
    (0o604, "may be read by others (mode 0604;"),
    (0o620, "may be written by others (mode 0620;"),
    (0o602, "may be written by others (mode 0602;"),
])
@pytest.mark.parametrize("kwargs", [{}, {"password": SECRET}])
@pytest.mark.parametrize("methods", [b"SAFECOOKIE", b"COOKIE,SAFECOOKIE,HASHEDPASSWORD", b"NULL,SAFECOOKIE"])
def test_a_named_cookie_others_may_know_gets_nothing(tmp_path, mode, said, kwargs, methods):
    """The 32-byte file anyone may read (a /etc file of the right length, one the peer wrote 0644) or write."""
    path = known_file(tmp_path, mode)
    result, fake = run(knowing_fake(path, methods), **kwargs)
    assert isinstance(result, auth.UntrustedCookieFile), result
    text = str(result)
    assert text.startswith("refusing to authenticate to the peer at port 127.0.0.1:%d: it names %s as its cookie "
                           "file for SAFECOOKIE (PROTOCOLINFO's COOKIEFILE; no cookie_path was given), and %s %s"
                           % (fake.port, path, path, said)), text
    assert_nothing_sent(fake, text)


def test_a_named_cookie_of_another_user_gets_nothing(tmp_path, monkeypatch):
    """A file the peer's own user wrote 0600: its owner is neither root, this user nor tor's user (here: this
    test's user is taken for the peer's, as if the module ran as root and the peer as a local user)."""
    path = known_file(tmp_path, 0o600)
    monkeypatch.setattr(auth, "tor_uids", lambda: set([os.geteuid() + 4242]))
    result, fake = run(knowing_fake(path), password=SECRET)
    text = str(result)
    assert isinstance(result, auth.UntrustedCookieFile) and "belongs to uid %d, which is neither root, this user nor " \
        "tor's user (debian-tor, toranon, tor, _tor)" % os.geteuid() in text, text
    assert_nothing_sent(fake, text)


def test_a_named_cookie_at_the_fallback_address_gets_nothing(tmp_path, monkeypatch):
    """The fallback (127.0.0.1:9051 when the Debian socket is missing) takes SAFECOOKIE only: a local user who
    listens there and names a file it wrote passed that proof and got every command after it."""
    path = known_file(tmp_path, 0o644)
    result, fake = run(knowing_fake(path), fallback=(monkeypatch, tmp_path))
    assert isinstance(result, auth.UntrustedCookieFile), result
    assert_nothing_sent(fake, str(result))


@pytest.mark.parametrize("make, said", [
    (lambda tmp: os.mkfifo(str(tmp / "fifo")) or tmp / "fifo", "is not a regular file but a FIFO"),
    (lambda tmp: (tmp / "d").mkdir() or tmp / "d", "is not a regular file but a directory"),
    (lambda tmp: "/dev/zero", "is not a regular file but a character device"),
    (lambda tmp: "relative/cookie", "is not an absolute path (tor names its cookie by one)"),
])
def test_a_named_cookie_that_is_no_file_is_not_opened(tmp_path, make, said):
    """A FIFO would block the read (the module hangs until the timeout of its task), a device be read from."""
    path = make(tmp_path)
    result, fake = run(knowing_fake(path))
    assert isinstance(result, auth.UntrustedCookieFile), result
    assert " and %s %s. " % (path, said) in str(result), str(result)
    assert_nothing_sent(fake, str(result))


def test_a_fifo_as_cookie_path_is_not_opened(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(b"SAFECOOKIE", b'"/elsewhere"'))],
                                    cookie_path=str(fifo))
    assert text == ("cannot read tor's authentication cookie %s: it is not a regular file but a FIFO; set cookie_path "
                    "to tor's cookie file" % fifo)
    assert received == [b"PROTOCOLINFO 1"]


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o400])
def test_a_named_cookie_as_tor_writes_it_is_used(tmp_path, mode):
    """tor's cookie: 0600, or 0640 with CookieAuthFileGroupReadable, this user's (the tests' tors), root's or tor's
    user's (debian-tor: the modules run as root; the watchdog too)."""
    path = known_file(tmp_path, mode)
    controller, fake = run(knowing_fake(path)[:3])
    assert controller.auth_method == "SAFECOOKIE"


@pytest.mark.parametrize("uid, mode, said", [
    (0, 0o100600, None), (0, 0o100640, None), (107, 0o100640, None), (1000, 0o100600, "belongs to uid 1000"),
    (0, 0o100644, "may be read by others"), (0, 0o100660, "may be written by others"),
    (0, 0o010600, "is not a regular file but a FIFO"), (0, 0o020600, "is not a regular file but a character device"),
])
def test_named_cookie_problem(uid, mode, said):
    st = os.stat_result((mode, 1, 1, 1, uid, 0, 32, 0, 0, 0))
    problem = auth.named_cookie_problem("/run/tor/control.authcookie", st, set([0, 107]))
    assert (problem is None) if said is None else (problem or "").startswith(said), problem
    assert auth.named_cookie_problem("/run/tor/control.authcookie", os.stat_result(
        (0o100600, 1, 1, 1, 0, 0, 33, 0, 0, 0)), set([0])) == "is not 32 bytes long"


@pytest.mark.parametrize("methods", [b"COOKIE", b"COOKIE,HASHEDPASSWORD"])
def test_plain_cookie_never_sends_a_named_file_however_tor_like(tmp_path, methods):
    """Plain COOKIE sends the file's bytes: a tor-like file the peer names (tor's own cookie, readable by the module)
    would give the peer control of tor. Only a cookie_path the user gave is sent."""
    path = known_file(tmp_path, 0o600)
    text, received = expect_failure([(b"PROTOCOLINFO", protocolinfo(methods, b'"%s"' % str(path).encode())),
                                     (b"AUTHENTICATE", OK)])
    assert "offers only plain COOKIE authentication" in text or "requires a password" in text, text
    assert received == [b"PROTOCOLINFO 1"]
