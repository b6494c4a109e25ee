# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""client_auth.py: ONION_CLIENT_AUTH_ADD/REMOVE/VIEW as sent and read against a scripted peer over
a real socket (replies as tor 0.4.9.11 gives them), the checks of what a user gives, and the
ClientOnionAuthDir file format as tor writes and reads it."""

import base64
import os
import stat

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth as ca
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import Controller
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import (
    OperationFailed,
    ProtocolError,
    UnsafeValue,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.transport import ControlSocket
from harness.fake_tor import FakeTor

SID = onion.onion_address(onion.ed25519_public_from_expanded(b"\x11" * 64))
SID2 = onion.onion_address(onion.ed25519_public_from_expanded(b"\x22" * 64))
KEY = bytes(range(1, 33))
B64 = base64.b64encode(KEY).decode()                       # 44 characters, one '='
B32 = base64.b32encode(KEY).decode().rstrip("=")           # 52 characters
OK = b"250 OK\r\n"


def wire(*lines):
    return "".join(line + "\r\n" for line in lines).encode()


def scripted(script):
    """(controller, fake) for a script of (command prefix, reply) steps; no authentication."""
    fake = FakeTor(script).__enter__()
    return Controller(ControlSocket.tcp("127.0.0.1", fake.port, 5.0)), fake


@pytest.fixture
def peer():
    made = []

    def run(script):
        controller, fake = scripted(script)
        made.append((controller, fake))
        return controller, fake
    yield run
    for controller, fake in made:
        controller.close()
        fake.__exit__()
        assert fake.errors == []


# -- ONION_CLIENT_AUTH_ADD -------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, sent", [
    ({}, "ONION_CLIENT_AUTH_ADD %s x25519:%s" % (SID, B64)),
    ({"permanent": True}, "ONION_CLIENT_AUTH_ADD %s x25519:%s Flags=Permanent" % (SID, B64)),
    ({"client_name": "alice", "permanent": True},
     "ONION_CLIENT_AUTH_ADD %s x25519:%s ClientName=alice Flags=Permanent" % (SID, B64)),
    ({"client_name": "a.b+c_d-0123456"}, "ONION_CLIENT_AUTH_ADD %s x25519:%s ClientName=a.b+c_d-0123456" % (SID, B64)),
])
def test_add_sends_the_spec_grammar(peer, kwargs, sent):
    ctl, fake = peer([(b"ONION_CLIENT_AUTH_ADD", OK)])
    assert ca.add(ctl, SID, KEY, **kwargs) == "250"
    assert fake.received[0] == sent.encode()


@pytest.mark.parametrize("reply, code", [
    (b"251 Client for onion existed and replaced\r\n", "251"),
    (b"252 Registered client and decrypted desc\r\n", "252"),
])
def test_add_success_codes(peer, reply, code):
    ctl, _fake = peer([(b"ONION_CLIENT_AUTH_ADD", reply)])
    assert ca.add(ctl, SID, KEY) == code


def test_add_refusal_never_carries_the_key(peer):
    # tor 0.4.9 quotes the key blob in this refusal (an all-zero key)
    ctl, _fake = peer([(b"ONION_CLIENT_AUTH_ADD", ('553 Invalid private key "%s"\r\n' % B64).encode())])
    with pytest.raises(OperationFailed) as err:
        ca.add(ctl, SID, KEY)
    assert err.value.code == "553"
    assert B64 not in str(err.value) and B64 not in err.value.message
    assert str(err.value) == 'tor refused ONION_CLIENT_AUTH_ADD: 553 Invalid private key "<private key>"'


def test_add_unable_to_store(peer):
    ctl, _fake = peer([(b"ONION_CLIENT_AUTH_ADD", ('553 Unable to store creds for "%s"\r\n' % SID).encode())])
    with pytest.raises(OperationFailed, match="553 Unable to store creds"):
        ca.add(ctl, SID, KEY, permanent=True)


def test_old_tor_says_what_is_needed(peer):
    ctl, _fake = peer([(b"ONION_CLIENT_AUTH_VIEW", b'510 Unrecognized command "ONION_CLIENT_AUTH_VIEW"\r\n')])
    with pytest.raises(OperationFailed, match="needs tor 0.4.3 or later") as err:
        ca.view(ctl)
    assert err.value.code == "510"


@pytest.mark.parametrize("name", ["a" * 17, "", "a b", 'a"b', "a=b", "a\nb", "a\rb", "a\x00b", "é", "a,b", "a:b"])
def test_add_refuses_a_name_before_sending(peer, name):
    # 17 characters would get two replies from tor 0.4.9 (512, then it registers anyway)
    ctl, fake = peer([])
    with pytest.raises(UnsafeValue):
        ca.add(ctl, SID, KEY, client_name=name)
    ctl.close()
    fake.__exit__()
    assert not any(line.startswith(b"ONION_CLIENT_AUTH") for line in fake.received)


def test_add_refuses_a_bad_id_or_key_before_sending(peer):
    ctl, fake = peer([])
    with pytest.raises(UnsafeValue):
        ca.add(ctl, SID + "\r\nSIGNAL HALT", KEY)
    with pytest.raises(UnsafeValue):
        ca.add(ctl, SID, KEY[:31])
    ctl.close()
    fake.__exit__()
    assert not any(line.startswith(b"ONION_CLIENT_AUTH") for line in fake.received)


# -- ONION_CLIENT_AUTH_REMOVE ----------------------------------------------------------------------
def test_remove(peer):
    ctl, fake = peer([(b"ONION_CLIENT_AUTH_REMOVE", OK),
                      (b"ONION_CLIENT_AUTH_REMOVE", ('251 No credentials for "%s"\r\n' % SID).encode())])
    assert ca.remove(ctl, SID) is True
    assert ca.remove(ctl, SID) is False
    assert fake.received[:2] == [("ONION_CLIENT_AUTH_REMOVE " + SID).encode()] * 2


def test_remove_refused(peer):
    ctl, _fake = peer([(b"ONION_CLIENT_AUTH_REMOVE", ('512 Invalid v3 address "%s"\r\n' % SID).encode())])
    with pytest.raises(OperationFailed, match="512 Invalid v3 address"):
        ca.remove(ctl, SID)


# -- ONION_CLIENT_AUTH_VIEW ------------------------------------------------------------------------
def test_view_as_tor_049_answers(peer):
    # tor's order: Flags before ClientName (the spec says the other way round); lines sorted
    ctl, fake = peer([(b"ONION_CLIENT_AUTH_VIEW", wire(
        "250-ONION_CLIENT_AUTH_VIEW",
        "250-CLIENT %s x25519:%s" % (SID2, B64),
        "250-CLIENT %s x25519:%s Flags=Permanent ClientName=alice" % (SID, B64),
        "250 OK"))])
    creds = ca.view(ctl)
    assert fake.received[0] == b"ONION_CLIENT_AUTH_VIEW"
    assert [(c.service_id, c.client_name, c.flags, c.permanent) for c in creds] == [
        (SID2, None, [], False), (SID, "alice", ["Permanent"], True)]
    assert all(c.private_key == KEY for c in creds)
    assert B64 not in repr(creds) and B32 not in repr(creds)
    entry = creds[1].as_entry()
    assert entry == {"address": SID + ".onion", "service_id": SID, "client_name": "alice", "permanent": True,
                     "flags": ["Permanent"], "public_key": onion.b32(onion.x25519_public(KEY))}


def test_view_of_one_service_and_the_spec_order(peer):
    ctl, fake = peer([(b"ONION_CLIENT_AUTH_VIEW", wire(
        "250-ONION_CLIENT_AUTH_VIEW " + SID,
        "250-CLIENT %s x25519:%s ClientName=bob Flags=Permanent,Future" % (SID, B64.rstrip("=")),
        "250 OK"))])
    (cred,) = ca.view(ctl, SID)
    assert fake.received[0] == ("ONION_CLIENT_AUTH_VIEW " + SID).encode()
    assert (cred.client_name, cred.flags, cred.private_key) == ("bob", ["Permanent", "Future"], KEY)


def test_view_empty(peer):
    ctl, _fake = peer([(b"ONION_CLIENT_AUTH_VIEW", wire("250-ONION_CLIENT_AUTH_VIEW", "250 OK"))])
    assert ca.view(ctl) == []


@pytest.mark.parametrize("lines, message", [
    (["250 OK"], "does not end with OK|does not begin"),
    (["250-SOMETHING", "250 OK"], "does not begin"),
    (["250-ONION_CLIENT_AUTH_VIEW " + SID2, "250 OK"], "does not begin"),
    (["250-ONION_CLIENT_AUTH_VIEW", "250-CLIENT %s x25519:%s" % (SID, B64), "250 DONE"], "does not end with OK"),
    (["250-ONION_CLIENT_AUTH_VIEW", "250-SERVER %s x25519:%s" % (SID, B64), "250 OK"], "line 2 is not"),
    (["250-ONION_CLIENT_AUTH_VIEW", "250-CLIENT %s" % SID, "250 OK"], "line 2 is not"),
    (["250-ONION_CLIENT_AUTH_VIEW", "250-CLIENT %s.onion x25519:%s" % (SID, B64), "250 OK"], "no valid v3"),
    (["250-ONION_CLIENT_AUTH_VIEW", "250-CLIENT %s x25519:%s" % (SID[:-1] + "a", B64), "250 OK"], "no valid v3"),
    (["250-ONION_CLIENT_AUTH_VIEW", "250-CLIENT %s ed25519:%s" % (SID, B64), "250 OK"], "no x25519"),
    (["250-ONION_CLIENT_AUTH_VIEW", "250-CLIENT %s x25519:%s" % (SID, B64[:-6] + "=="), "250 OK"], "no x25519"),
    (["250-ONION_CLIENT_AUTH_VIEW", "250-CLIENT %s x25519:%s Flags" % (SID, B64), "250 OK"], "unexpected words"),
    (["250-ONION_CLIENT_AUTH_VIEW", '250-CLIENT %s x25519:%s ClientName="x' % (SID, B64), "250 OK"], "malformed"),
])
def test_view_malformed_never_quotes_the_key(peer, lines, message):
    sid = SID if "ONION_CLIENT_AUTH_VIEW " + SID2 in lines else None
    ctl, _fake = peer([(b"ONION_CLIENT_AUTH_VIEW", wire(*lines))])
    with pytest.raises(ProtocolError, match=message) as err:
        ca.view(ctl, sid)
    assert B64[:20] not in str(err.value)


def test_view_of_one_service_returning_another(peer):
    ctl, _fake = peer([(b"ONION_CLIENT_AUTH_VIEW", wire(
        "250-ONION_CLIENT_AUTH_VIEW " + SID, "250-CLIENT %s x25519:%s" % (SID2, B64), "250 OK"))])
    with pytest.raises(ProtocolError, match="another service"):
        ca.view(ctl, SID)


def test_auth_dir(peer):
    ctl, _fake = peer([(b"GETCONF ClientOnionAuthDir", b"250 ClientOnionAuthDir=/var/lib/tor/onion_auth\r\n"),
                       (b"GETCONF ClientOnionAuthDir", b"250 ClientOnionAuthDir\r\n")])
    assert ca.auth_dir(ctl) == "/var/lib/tor/onion_auth"
    assert ca.auth_dir(ctl) is None


# -- what a user gives -----------------------------------------------------------------------------
def test_service_ids():
    assert ca.check_service_id(SID) == SID
    assert ca.check_service_id(SID + ".onion") == SID
    assert ca.check_service_id(" %s.ONION " % SID.upper()) == SID


@pytest.mark.parametrize("address, message", [
    ("", "not a v3 onion address"),
    (SID[:-1], "not a v3 onion address"),
    (SID[:-2] + "aa", "checksum|not a version 3"),
    ("expyuzz4wqqyqhjn.onion", "not a v3 onion address"),
    (SID + "\r\nSIGNAL HALT", "line feed|carriage return"),
    (SID + ".onion.onion", "not a v3"),
    (12, "must be a string"),
])
def test_bad_service_ids(address, message):
    with pytest.raises(UnsafeValue, match=message):
        ca.check_service_id(address)


@pytest.mark.parametrize("text", [
    B32, B32.lower(), " %s\n" % B32, "descriptor:x25519:" + B32, "%s:descriptor:x25519:%s" % (SID, B32.lower()),
    "%s.onion:descriptor:x25519:%s" % (SID, B32),
])
def test_private_key_forms(text):
    assert ca.parse_private_key(text, SID) == KEY


@pytest.mark.parametrize("text, message", [
    ("", "52 base32"),
    (B32[:-1], "52 base32"),
    (B32 + "A", "52 base32"),
    (B32[:-1] + "1", "52 base32"),
    (B64, "52 base32"),
    ("A" * 52, "all zeros"),
    ("ed25519:descriptor:" + B32, "x25519 key"),
    ("%s:descriptor:x25519:%s" % (SID2, B32), "another service"),
    ("a:b:" + B32, "x25519 key"),
    ("a:" + B32, "52 characters"),
    (B32 + "\n" + B32, "line break"),
    (None, "must be a string"),
])
def test_bad_private_keys_never_echoed(text, message):
    with pytest.raises(UnsafeValue, match=message) as err:
        ca.parse_private_key(text, SID)
    if text:
        assert B32 not in str(err.value) and B32[:40] not in str(err.value)


def test_key_bits_beyond_32_bytes():
    # the 52nd base32 character carries 4 spare bits: tor's base32_decode ignores them, a key
    # whose spare bits are set is not the canonical text of any key
    spare = B32[:-1] + ("B" if B32[-1] == "A" else "A")
    with pytest.raises(UnsafeValue, match="exactly 32 bytes"):
        ca.parse_private_key(spare)


@pytest.mark.parametrize("name", ["a", "alice", "A-b_c.d+e", "x" * 16])
def test_names(name):
    assert ca.check_client_name(name) == name


@pytest.mark.parametrize("name, message", [
    ("x" * 17, "1 to 16"), ("", "1 to 16"), ("a b", "only letters"), ("a/b", "only letters"), ("é", "only letters"),
    ("a\nb", "line feed"), (3, "must be a string"),
])
def test_bad_names(name, message):
    with pytest.raises(UnsafeValue, match=message):
        ca.check_client_name(name)


# -- ClientOnionAuthDir files ----------------------------------------------------------------------
def test_file_line_as_tor_writes_it():
    # tor 0.4.9.11 wrote this for ONION_CLIENT_AUTH_ADD <SID> x25519:<B64> Flags=Permanent: base32
    # lower case, no newline, in <SID>.auth_private
    assert ca.format_line(SID, KEY) == "%s:descriptor:x25519:%s" % (SID, B32.lower())
    assert ca.file_name(SID) == SID + ".auth_private"
    assert ca.parse_line(ca.format_line(SID, KEY)) == (SID, KEY)
    assert ca.parse_line(" %s : descriptor : x25519 : %s \n" % (SID, B32)) == (SID, KEY)


@pytest.mark.parametrize("text", [
    "", ":descriptor:x25519:" + B32, "%s:descriptor:x25519:%s:x" % (SID, B32), "%s:basic:x25519:%s" % (SID, B32),
    "%s:descriptor:ed25519:%s" % (SID, B32), "%s:descriptor:x25519:%s" % (SID, B32[:-1]),
    "%s:descriptor:x25519:%s" % (SID, "A" * 52), "%s.onion:descriptor:x25519:%s" % (SID, B32),
    "%s:descriptor:x25519:%s" % (SID[:-1] + "a", B32),
])
def test_file_lines_tor_ignores(text):
    assert ca.parse_line(text) is None


def test_read_dir(tmp_path):
    d = tmp_path / "auth"
    d.mkdir(mode=0o700)
    (d / (SID + ".auth_private")).write_text(ca.format_line(SID, KEY))
    (d / "alice.auth_private").write_text(ca.format_line(SID2, KEY) + "\n")
    (d / "broken.auth_private").write_text(":descriptor:x25519:" + B32)
    (d / "README").write_text("not a credential")
    (d / ".auth_private").write_text(ca.format_line(SID, KEY))             # tor skips the bare suffix
    (d / "sub.auth_private").mkdir()
    (d / "link.auth_private").symlink_to(d / "alice.auth_private")
    (d / "big.auth_private").write_text(ca.format_line(SID, KEY) + " " * 5000)
    creds, ignored = ca.read_dir(str(d))
    assert [(c.service_id, os.path.basename(c.path), c.flags, c.client_name) for c in creds] == [
        (SID2, "alice.auth_private", ["Permanent"], None), (SID, SID + ".auth_private", ["Permanent"], None)]
    assert ignored == ["big.auth_private", "broken.auth_private", "link.auth_private", "sub.auth_private"]
    assert ca.read_dir(str(tmp_path / "missing")) == ([], [])


def test_write_file(tmp_path):
    path = str(tmp_path / (SID + ".auth_private"))
    (tmp_path / (".%s.auth_private.onionlab-new" % SID)).write_text("leftover")
    old = os.umask(0)
    try:
        ca.write_file(path, ca.format_line(SID, KEY))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as handle:
        assert handle.read() == ca.format_line(SID, KEY)
    assert os.listdir(str(tmp_path)) == [SID + ".auth_private"]


# -- the control-port plan (plan_control): tor_onion_client_auth's decisions as data ---------------------------------
_SID = "b" * 56
_KEY, _OTHER = onion.generate_client_keypair()[0], onion.generate_client_keypair()[0]
_OWN = "/var/lib/tor/onion_auth/%s.auth_private" % _SID


def _cred(key=_KEY, name=None, permanent=False, path=None):
    return ca.Credential(_SID, key, name, [ca.PERMANENT] if permanent else [], path=path)


@pytest.mark.parametrize("present, permanent, current, mine, expected", [
    (True, False, None, None, (True, False, [], True)),                                   # new, in memory
    (True, False, _cred(), None, (False, False, [], False)),                              # the same: nothing
    (True, False, _cred(_OTHER), None, (True, False, [], True)),                          # another key: add over it
    (True, False, _cred(name="x"), None, (True, False, [], True)),                        # another name
    (True, False, _cred(permanent=True), [_cred(permanent=True, path=_OWN)],
     (True, True, [_OWN], True)),                                                         # permanent -> in memory
    (True, True, _cred(permanent=True), [], (True, False, [], True)),                     # tor's file is missing
    (True, True, _cred(permanent=True), [_cred(permanent=True, path=_OWN)], (False, False, [], False)),
    (True, True, _cred(permanent=True), None, (False, False, [], False)),                 # files unseen: trust tor
    (True, True, _cred(permanent=True), [_cred(permanent=True, path=_OWN), _cred(path="/x/stray.auth_private")],
     (False, False, ["/x/stray.auth_private"], True)),
    (False, False, None, None, (False, False, [], False)),                                # absent and gone
    (False, False, _cred(permanent=True), [_cred(permanent=True, path=_OWN)], (False, True, [_OWN], True)),
])
def test_plan_control(present, permanent, current, mine, expected):
    assert ca.plan_control(_SID, _KEY, None, present, permanent, current, _OWN, mine) == expected


# -- the files plan (plan_files): tor_onion_client_auth's decisions in a ClientOnionAuthDir, as data ----------------
_STRAY = "/var/lib/tor/onion_auth/old.auth_private"


@pytest.mark.parametrize("present, creds, expected", [
    (True, [], (None, [], True, [])),                                                     # no file: write it
    (True, [_cred(path=_OWN)], ("own", ["own"], False, [])),                               # the same key: keep it
    (True, [_cred(_OTHER, path=_OWN)], ("own", ["own"], True, [])),                        # another key: rewrite
    (True, [_cred(path=_OWN), _cred(path=_STRAY)], ("own", ["own", "stray"], False, [_STRAY])),
    (False, [_cred(path=_OWN), _cred(path=_STRAY)], ("own", ["own", "stray"], False, [_OWN, _STRAY])),
    (False, [ca.Credential("c" * 56, _KEY, path="/x/c.auth_private")], (None, [], False, [])),  # another service's
])
def test_plan_files(present, creds, expected):
    current, mine, write, strays = ca.plan_files(_SID, _KEY, present, creds, _OWN)
    names = {_OWN: "own", _STRAY: "stray"}
    assert (names[current.path] if current else None, [names[c.path] for c in mine], write, strays) == expected
