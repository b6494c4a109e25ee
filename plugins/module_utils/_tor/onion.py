# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""v3 onion keys and addresses, in pure Python: ed25519 public keys from tor's expanded
secret keys, the .onion address with its checksum (rend-spec-v3 6), x25519 key pairs for
client authorization, and tor's key file formats.

This is a private module_utils file of onionlab.tor; its API may change at any time.
Nothing here puts key material into an exception message.
"""

from __future__ import annotations

import base64
import binascii
import errno
import hashlib
import os
import re
import stat

from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError


class OnionKeyError(TorError, ValueError):
    """A key, address or key file that is not what it should be (never echoes the key)."""


# -- ed25519 (RFC 8032), only what deriving a public key needs --------------------------------
_P = 2 ** 255 - 19
_D = (-121665 * pow(121666, _P - 2, _P)) % _P
_BY = (4 * pow(5, _P - 2, _P)) % _P
_BX = None


def _recover_x(y, sign):
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P)
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P != 0:
        x = (x * pow(2, (_P - 1) // 4, _P)) % _P
    if x & 1 != sign:
        x = _P - x
    return x


_BX = _recover_x(_BY, 0)
_B = (_BX, _BY, 1, (_BX * _BY) % _P)


def _add(p1, p2):
    x1, y1, z1, t1 = p1
    x2, y2, z2, t2 = p2
    a = (y1 - x1) * (y2 - x2) % _P
    b = (y1 + x1) * (y2 + x2) % _P
    c = 2 * t1 * t2 * _D % _P
    d = 2 * z1 * z2 % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _double(p1):
    x1, y1, z1, _t1 = p1
    a = x1 * x1 % _P
    b = y1 * y1 % _P
    c = 2 * z1 * z1 % _P
    h = a + b
    e = h - (x1 + y1) * (x1 + y1)
    g = a - b
    f = c + g
    return (e * f % _P, g * h % _P, f * g % _P, e * h % _P)


def _scalarmult_base(scalar):
    return _scalarmult(_B, scalar)


def _scalarmult(point, scalar):
    q = (0, 1, 1, 0)
    p = point
    while scalar:
        if scalar & 1:
            q = _add(q, p)
        p = _double(p)
        scalar >>= 1
    return q


def _encode_point(point):
    x, y, z, _t = point
    zi = pow(z, _P - 2, _P)
    x, y = x * zi % _P, y * zi % _P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def ed25519_public_from_expanded(expanded):
    """The 32-byte public key of a 64-byte expanded secret key (scalar || prefix), as tor keeps it."""
    if len(expanded) != 64:
        raise OnionKeyError("an ed25519 expanded secret key is 64 bytes")
    return _encode_point(_scalarmult_base(int.from_bytes(expanded[:32], "little")))


# -- key blinding (rend-spec-v3 appendix A.2): the key a descriptor of one time period is signed for --
_BLIND_STRING = b"Derive temporary signing key\0"
_BASEPOINT_STRING = (b"(15112221349535400772501151409588531511454012693041857206046113283949847762202, "
                     b"46316835694926478169428394003475163141307993866256225615783033603165251855960)")


def blinded_public_key(public_key, period_num, period_length):
    """The service's blinded public key for time period `period_num` of `period_length` minutes:
    h = SHA3-256(BLIND_STRING | A | B | "key-blind" | INT_8(period_num) | INT_8(period_length)), clamped; h*A."""
    if len(public_key) != 32:
        raise OnionKeyError("an ed25519 public key is 32 bytes")
    nonce = b"key-blind" + period_num.to_bytes(8, "big") + period_length.to_bytes(8, "big")
    h = bytearray(hashlib.sha3_256(_BLIND_STRING + public_key + _BASEPOINT_STRING + nonce).digest())
    h[0] &= 248
    h[31] &= 63
    h[31] |= 64
    y = int.from_bytes(public_key, "little")
    sign, y = y >> 255, y & ((1 << 255) - 1)
    if y >= _P:
        raise OnionKeyError("not an ed25519 public key")
    x = _recover_x(y, sign)
    if (x * x * -1 + y * y - 1 - _D * x * x * y * y) % _P != 0:
        raise OnionKeyError("not an ed25519 public key (not on the curve)")
    return _encode_point(_scalarmult((x, y, 1, x * y % _P), int.from_bytes(bytes(h), "little")))


_SQRT_M1 = pow(2, (_P - 1) // 4, _P)
_L = 2 ** 252 + 27742317777372353535851937790883648493
_IDENTITY = (1).to_bytes(32, "little")


def ed25519_key_is_valid(public_key):
    """Whether 32 bytes are an ed25519 public key tor accepts in an onion address (as its
    ed25519_validate_pubkey): a point of the curve, not the identity, of the prime-order
    subgroup (l * P is the identity)."""
    if len(public_key) != 32 or public_key == _IDENTITY:
        return False
    y = int.from_bytes(public_key, "little")
    sign, y = y >> 255, y & ((1 << 255) - 1)
    if y >= _P:
        return False
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P) % _P
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P:
        x = x * _SQRT_M1 % _P
        if (x * x - x2) % _P:
            return False            # no square root: not on the curve
    if x == 0 and sign:
        return False
    if x & 1 != sign:
        x = _P - x
    point, acc = (x, y, 1, x * y % _P), (0, 1, 1, 0)
    scalar = _L
    while scalar:
        if scalar & 1:
            acc = _add(acc, point)
        point = _add(point, point)
        scalar >>= 1
    return acc[0] % _P == 0 and (acc[1] - acc[2]) % _P == 0


# -- x25519 (RFC 7748) -----------------------------------------------------------------------
def _x25519(k_bytes, u_bytes):
    k = bytearray(k_bytes)
    k[0] &= 248
    k[31] &= 127
    k[31] |= 64
    k = int.from_bytes(bytes(k), "little")
    u = int.from_bytes(u_bytes, "little") & ((1 << 255) - 1)
    x1, x2, z2, x3, z3, swap = u, 1, 0, u, 1, 0
    a24 = 121665
    for t in range(254, -1, -1):
        bit = (k >> t) & 1
        swap ^= bit
        if swap:
            x2, x3, z2, z3 = x3, x2, z3, z2
        swap = bit
        a = x2 + z2
        aa = a * a % _P
        b = x2 - z2
        bb = b * b % _P
        e = aa - bb
        c = x3 + z3
        d = x3 - z3
        da = d * a % _P
        cb = c * b % _P
        x3 = (da + cb) * (da + cb) % _P
        z3 = x1 * (da - cb) * (da - cb) % _P
        x2 = aa * bb % _P
        z2 = e * (aa + a24 * e) % _P
    if swap:
        x2, z2 = x3, z3
    return (x2 * pow(z2, _P - 2, _P) % _P).to_bytes(32, "little")


def x25519_public(private):
    if len(private) != 32:
        raise OnionKeyError("an x25519 private key is 32 bytes")
    return _x25519(private, (9).to_bytes(32, "little"))


def b32(data):
    return base64.b32encode(data).decode("ascii").rstrip("=")


def unb32(text, length, what):
    text = text.strip().upper()
    if not re.match(r"^[A-Z2-7]+\Z", text):
        raise OnionKeyError("%s is not base32" % what)
    try:
        raw = base64.b32decode(text + "=" * (-len(text) % 8))
    except (binascii.Error, ValueError):
        raise OnionKeyError("%s is not base32" % what)
    if len(raw) != length:
        raise OnionKeyError("%s must decode to %d bytes" % (what, length))
    return raw


def generate_client_keypair():
    """A new x25519 key pair for v3 client authorization, as base32 (private, public)."""
    private = os.urandom(32)
    return b32(private), b32(x25519_public(private))


def check_client_public_key(text):
    """A client's x25519 public key in base32 (52 characters); returns it upper-case."""
    if not isinstance(text, str):
        raise OnionKeyError("a client public key must be a string")
    key = text.strip()
    if key.lower().startswith("descriptor:x25519:"):
        key = key[len("descriptor:x25519:"):]
    unb32(key, 32, "the client public key")
    return key.upper()


# -- onion addresses ---------------------------------------------------------------------------
# the form of a v3 service id (an address without '.onion'); parse_onion_address() checks the rest
SERVICE_ID_RE = re.compile(r"[a-z2-7]{56}\Z")


def onion_address(public_key):
    """The v3 address (56 base32 characters, no '.onion') of a 32-byte ed25519 public key."""
    if len(public_key) != 32:
        raise OnionKeyError("an ed25519 public key is 32 bytes")
    version = b"\x03"
    checksum = hashlib.sha3_256(b".onion checksum" + public_key + version).digest()[:2]
    return b32(public_key + checksum + version).lower()


def parse_onion_address(address):
    """The public key of a v3 address (with or without '.onion'); checks checksum and version."""
    if not isinstance(address, str):
        raise OnionKeyError("an onion address must be a string")
    sid = address[:-6] if address.endswith(".onion") else address
    if not SERVICE_ID_RE.match(sid):
        raise OnionKeyError("%r is not a v3 onion address (56 base32 characters)" % address[:80])
    raw = base64.b32decode(sid.upper())
    public_key, checksum, version = raw[:32], raw[32:34], raw[34:]
    if version != b"\x03":
        raise OnionKeyError("%s is not a version 3 onion address" % address)
    if onion_address(public_key) != sid:
        raise OnionKeyError("%s has a wrong checksum" % address)
    return public_key


def is_address(text):
    """A v3 onion address with its .onion, checksum and version right (what a filter accepts from a file or a
    variable as an address)."""
    if not isinstance(text, str) or not text.endswith(".onion"):
        return False
    try:
        parse_onion_address(text)
    except OnionKeyError:
        return False
    return True


def is_service_id(text):
    try:
        parse_onion_address(text)
    except OnionKeyError:
        return False
    return not text.endswith(".onion")


# -- ADD_ONION key blobs -----------------------------------------------------------------------
def parse_key_blob(blob):
    """'ED25519-V3:<base64 of 64 bytes>' (or just the base64) -> the 64-byte expanded key."""
    if not isinstance(blob, str):
        raise OnionKeyError("private_key must be a string")
    text = blob.strip()
    if text.startswith("ED25519-V3:"):
        text = text[len("ED25519-V3:"):]
    elif ":" in text:
        raise OnionKeyError("private_key must be an ED25519-V3 key (only v3 onion services are supported)")
    if not re.match(r"^[A-Za-z0-9+/]+={0,2}\Z", text):
        raise OnionKeyError("private_key is not base64")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise OnionKeyError("private_key is not base64")
    if len(raw) != 64:
        raise OnionKeyError("private_key must decode to a 64-byte expanded ed25519 key")
    return raw


def key_blob(expanded):
    return "ED25519-V3:" + base64.b64encode(expanded).decode("ascii")


def service_id_of_key(blob):
    """The service id (address without .onion) that tor will give the key blob."""
    return onion_address(ed25519_public_from_expanded(parse_key_blob(blob)))


# -- tor's key files ---------------------------------------------------------------------------
SECRET_HEADER = b"== ed25519v1-secret: type0 ==\x00\x00\x00"
PUBLIC_HEADER = b"== ed25519v1-public: type0 ==\x00\x00\x00"


def _read_head(path, size=200):
    """The first bytes of a file in a service directory (tor's user owns it): no symbolic link
    followed and no FIFO waited on (an OSError instead)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return handle.read(size)


def _read_key_file(path, header, size, what):
    data = _read_head(path)
    if len(data) != len(header) + size or not data.startswith(header):
        raise OnionKeyError("%s is not a tor ed25519 %s key file" % (path, what))
    return data[len(header):]


def read_public_key_file(path):
    return _read_key_file(path, PUBLIC_HEADER, 32, "public")


def read_secret_key_file(path):
    return _read_key_file(path, SECRET_HEADER, 64, "secret")


def service_dir_address(path):
    """The address of a service directory: from hs_ed25519_public_key (or the secret key),
    checked against hostname when present. Returns None when no key exists yet."""
    pub_path = os.path.join(path, "hs_ed25519_public_key")
    sec_path = os.path.join(path, "hs_ed25519_secret_key")
    host_path = os.path.join(path, "hostname")
    if os.path.exists(pub_path):
        address = onion_address(read_public_key_file(pub_path))
    elif os.path.exists(sec_path):
        address = onion_address(ed25519_public_from_expanded(read_secret_key_file(sec_path)))
    else:
        return None
    if os.path.exists(host_path):
        # bytes: a hostname file of junk is an error, not a crash
        hostname = _read_head(host_path).decode("ascii", "replace").strip()
        if hostname != address + ".onion":
            raise OnionKeyError("%s says %s but the service's key gives %s.onion" % (host_path, hostname[:80], address))
    return address + ".onion"


def import_key(secret=None, blob=None, public=None, hostname=None):
    """A service key brought from elsewhere (a hand-made service directory, a vanity generator such as mkp224o or
    Onionmine, an ``ED25519-V3:`` blob), verified before anything is done with it: (the 64-byte expanded key, the
    address with .onion). secret: the bytes of an hs_ed25519_secret_key file; blob: an ED25519-V3 blob (one of the
    two); public: the bytes of its hs_ed25519_public_key file, hostname: its hostname file's text, each checked when
    given: the address the secret key gives must be the hostname's (a v3 address, its checksum and version right)
    and the public key must be the secret key's. A wrong import would silently make a new address: every mismatch
    is an OnionKeyError naming what disagrees, never a key."""
    if (secret is None) == (blob is None):
        raise OnionKeyError("give the key as the bytes of an hs_ed25519_secret_key file or as an ED25519-V3 blob, "
                            "one of the two")
    if secret is not None:
        if len(secret) != len(SECRET_HEADER) + 64 or not secret.startswith(SECRET_HEADER):
            raise OnionKeyError("the secret key file is not a tor ed25519 secret key file (%d bytes; one is %d: the "
                                "header and the 64-byte expanded key)" % (len(secret), len(SECRET_HEADER) + 64))
        expanded = secret[len(SECRET_HEADER):]
    else:
        expanded = parse_key_blob(blob)
    derived = ed25519_public_from_expanded(expanded)
    address = onion_address(derived) + ".onion"
    if public is not None:
        if len(public) != len(PUBLIC_HEADER) + 32 or not public.startswith(PUBLIC_HEADER):
            raise OnionKeyError("the public key file is not a tor ed25519 public key file (%d bytes; one is %d)"
                                % (len(public), len(PUBLIC_HEADER) + 32))
        if public[len(PUBLIC_HEADER):] != derived:
            raise OnionKeyError("the public key file is not the secret key's: it gives %s.onion, the secret key %s"
                                % (onion_address(public[len(PUBLIC_HEADER):]), address))
    if hostname is not None:
        given = hostname.decode("ascii", "replace") if isinstance(hostname, bytes) else str(hostname)
        given = given.strip()
        if not given.endswith(".onion"):
            given += ".onion"
        try:
            parse_onion_address(given)
        except OnionKeyError as exc:
            raise OnionKeyError("the hostname is not a v3 onion address: %s" % exc)
        if given != address:
            raise OnionKeyError("the hostname says %s but the secret key gives %s: the key of another address"
                                % (given, address))
    return expanded, address
