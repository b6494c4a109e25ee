# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, onionlab.tor contributors
"""Pure-Python RSA signature checks as Tor uses them, and directory key certificates.

Tor signs directory documents with RSA and PKCS#1 v1.5 *type 1* padding around the bare
digest, without the ASN.1 DigestInfo that RFC 8017 puts there (dir-spec section 1.3: "The
signature does not include the algorithmIdentifier specified in PKCS #1").  So verifying is:
``m = s^e mod n``, written as k bytes, must be ``00 01 FF..FF 00 || digest``.

Key certificates (dir-spec 3.1, the authorities' ``cached-certs``) bind an authority's
long-term identity key to its medium-term signing key:

* ``fingerprint`` must be the SHA-1 of the DER identity key;
* ``dir-key-crosscert`` is the SHA-1 of the DER identity key, signed with the signing key;
* ``dir-key-certification`` is the SHA-1 of the certificate from ``dir-key-certificate-version``
  through the newline after ``dir-key-certification``, signed with the identity key;
* the certificate is usable between ``dir-key-published`` and ``dir-key-expires``.
"""

from __future__ import annotations

import hashlib
import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor import _dirdoc
from ansible_collections.onionlab.tor.plugins.module_utils._tor._dirdoc import iso, parse_timestamp, to_epoch
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import DocumentError


class CertificateError(DocumentError):
    """A key certificate or key that cannot be parsed."""


# --------------------------------------------------------------------------- DER / PEM

def _der_read(data, pos, expected_tag):
    """One DER TLV at pos: (content_start, content_end). Strict minimal lengths."""
    if pos + 2 > len(data):
        raise CertificateError("truncated DER data")
    tag = data[pos]
    if tag != expected_tag:
        raise CertificateError("DER tag 0x%02x where 0x%02x was expected" % (tag, expected_tag))
    length = data[pos + 1]
    pos += 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or pos + count > len(data):
            raise CertificateError("bad DER length")
        length = int.from_bytes(data[pos:pos + count], "big")
        if length < 0x80 or data[pos] == 0:
            raise CertificateError("non-minimal DER length")
        pos += count
    if pos + length > len(data):
        raise CertificateError("truncated DER data")
    return pos, pos + length


def _der_uint(data, pos):
    start, end = _der_read(data, pos, 0x02)
    if start == end:
        raise CertificateError("empty DER integer")
    if data[start] & 0x80:
        raise CertificateError("negative RSA key component")
    if end - start > 1 and data[start] == 0 and not data[start + 1] & 0x80:
        raise CertificateError("non-minimal DER integer")
    return int.from_bytes(data[start:end], "big"), end


def rsa_public_key_from_der(der):
    """(n, e) from a PKCS#1 RSAPublicKey (what tor's "RSA PUBLIC KEY" blocks hold).

    A SubjectPublicKeyInfo ("PUBLIC KEY") wrapping an rsaEncryption key is accepted too.
    """
    der = bytes(der)
    start, end = _der_read(der, 0, 0x30)
    if end != len(der):
        raise CertificateError("trailing data after the RSA key")
    if start < end and der[start] == 0x30:  # SubjectPublicKeyInfo
        alg_start, alg_end = _der_read(der, start, 0x30)
        oid_start, oid_end = _der_read(der, alg_start, 0x06)
        if der[oid_start:oid_end] != b"\x2a\x86\x48\x86\xf7\x0d\x01\x01\x01":
            raise CertificateError("public key is not an RSA key")
        bit_start, bit_end = _der_read(der, alg_end, 0x03)
        if bit_end != end or bit_start == bit_end or der[bit_start] != 0:
            raise CertificateError("malformed public key bit string")
        return rsa_public_key_from_der(der[bit_start + 1:bit_end])
    n, pos = _der_uint(der, start)
    e, pos = _der_uint(der, pos)
    if pos != end:
        raise CertificateError("unexpected data in the RSA key")
    if n < 3 or e < 3 or not n & 1 or not e & 1:
        raise CertificateError("implausible RSA key")
    return n, e


_PEM_RE = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----\n([A-Za-z0-9+/=\n]*?)\n?-----END \1-----\n?\Z")


def pem_to_der(pem, expected_type=None):
    """DER bytes of a PEM-style block ("-----BEGIN X-----" ... "-----END X-----")."""
    match = _PEM_RE.match(pem.strip() + "\n")
    if not match:
        raise CertificateError("malformed PEM block")
    if expected_type and match.group(1) != expected_type:
        raise CertificateError("PEM block is %r, expected %r" % (match.group(1), expected_type))
    return b64decode(match.group(2))


def b64decode(text):
    """Strict base64 (line breaks ignored, padding optional)."""
    try:
        return _dirdoc.decode_base64(text)
    except ValueError as exc:
        raise CertificateError(str(exc))


# --------------------------------------------------------------------------- RSA

def rsa_recover(signature, key):
    """The PKCS#1 v1.5 type-1 payload of a signature, or None if the padding is wrong."""
    n, e = key
    k = (n.bit_length() + 7) // 8
    if len(signature) != k:
        return None
    s = int.from_bytes(signature, "big")
    if s >= n:
        return None
    em = pow(s, e, n).to_bytes(k, "big")
    if em[0] != 0 or em[1] != 1:
        return None
    sep = em.find(b"\x00", 2)
    if sep < 10 or em[2:sep].strip(b"\xff"):
        return None  # at least 8 bytes of 0xFF, and only 0xFF, before the separator
    return em[sep + 1:]


def rsa_verify_digest(signature, key, digest):
    """True if signature is tor's PKCS#1 v1.5 signature of digest (no DigestInfo)."""
    return rsa_recover(signature, key) == digest


def key_digest(der):
    """Upper-case hex SHA-1 of a DER public key (fingerprints, signing-key digests)."""
    return hashlib.sha1(der).hexdigest().upper()


# --------------------------------------------------------------------------- certificates

_CERT_FIELDS = (
    # keyword, mandatory, object type(s)
    ("dir-key-certificate-version", True, None),
    ("dir-address", False, None),
    ("fingerprint", True, None),
    ("dir-identity-key", True, ("RSA PUBLIC KEY",)),
    ("dir-key-published", True, None),
    ("dir-key-expires", True, None),
    ("dir-signing-key", True, ("RSA PUBLIC KEY",)),
    ("dir-key-crosscert", False, ("ID SIGNATURE", "SIGNATURE")),
    ("dir-key-certification", True, ("SIGNATURE",)),
)
_CERT_KNOWN = dict((kw, (mand, obj)) for kw, mand, obj in _CERT_FIELDS)


def parse_certificates(text):
    """Parse a ``cached-certs`` style concatenation of v3 key certificates.

    Returns a list of dicts with the parsed fields and private ``_identity_key`` /
    ``_signing_key`` (n, e) tuples and ``_signed_digest`` for check_certificate().
    Raises CertificateError naming the line for malformed certificates.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("ascii")
        except UnicodeDecodeError as exc:
            line = bytes(text)[:exc.start].count(b"\n") + 1
            raise CertificateError("non-ASCII byte in key certificates", line)
    certs = []
    starts = [m.start() for m in re.finditer(r"(?m)^dir-key-certificate-version\b", text)]
    head = text[:starts[0]] if starts else text
    for lineno, line in enumerate(head.split("\n"), 1):
        if line.strip() and not line.startswith("@"):  # "@type" annotations (CollecTor)
            raise CertificateError("expected 'dir-key-certificate-version', got %r" % line[:80], lineno)
    for idx, start in enumerate(starts):
        end = starts[idx + 1] if idx + 1 < len(starts) else len(text)
        first_line = text.count("\n", 0, start) + 1
        certs.append(_parse_one_certificate(text[start:end], first_line))
    return certs


def _parse_one_certificate(text, first_line):
    items = _dirdoc.items(text, 0, len(text), first_line, CertificateError)
    seen = {}
    cert = {"line": first_line}
    signed_end = None
    for lineno, keyword, args, obj, _start in items:
        if signed_end is not None:
            raise CertificateError("%r after dir-key-certification" % keyword, lineno)
        if keyword not in _CERT_KNOWN:
            continue
        if keyword in seen:
            raise CertificateError("duplicate %r line" % keyword, lineno)
        seen[keyword] = lineno
        want_obj = _CERT_KNOWN[keyword][1]
        if want_obj:
            if obj is None or obj[0] not in want_obj:
                raise CertificateError("%r must be followed by a %s object" % (keyword, want_obj[0]), lineno)
            if args:
                raise CertificateError("%r takes no arguments" % keyword, lineno)
            data = b64decode(obj[1])
        elif obj is not None:
            raise CertificateError("unexpected object after %r" % keyword, lineno)
        try:
            if keyword == "dir-key-certificate-version":
                if args != "3":
                    raise CertificateError("unsupported key certificate version %r" % args, lineno)
                cert["version"] = 3
            elif keyword == "dir-address":
                match = re.match(r"\A([0-9.]+):([0-9]+)\Z", args)
                if not match or not _dirdoc.valid_ipv4(match.group(1)) or not _dirdoc.valid_port(match.group(2)):
                    raise CertificateError("dir-address must be IPv4:port, got %r" % args, lineno)
                cert["address"] = match.group(1)
                cert["dir_port"] = int(match.group(2))
            elif keyword == "fingerprint":
                if not re.match(r"\A[0-9A-Fa-f]{40}\Z", args):
                    raise CertificateError("fingerprint must be 40 hex digits, got %r" % args, lineno)
                cert["fingerprint"] = args.upper()
            elif keyword in ("dir-key-published", "dir-key-expires"):
                epoch = parse_timestamp(args)
                name = "published" if keyword == "dir-key-published" else "expires"
                cert[name] = iso(args)
                cert["_" + name] = epoch
            elif keyword == "dir-identity-key":
                cert["_identity_der"] = data
                cert["_identity_key"] = rsa_public_key_from_der(data)
                cert["identity_key_bits"] = cert["_identity_key"][0].bit_length()
            elif keyword == "dir-signing-key":
                cert["_signing_der"] = data
                cert["_signing_key"] = rsa_public_key_from_der(data)
                cert["signing_key_bits"] = cert["_signing_key"][0].bit_length()
                cert["signing_key_digest"] = key_digest(data)
            elif keyword == "dir-key-crosscert":
                cert["_crosscert"] = data
            elif keyword == "dir-key-certification":
                cert["_certification"] = data
                # signed part: from the first keyword through the newline after this keyword
                line_end = text.index("\n", _start) + 1
                signed_end = line_end
                cert["_signed_digest"] = hashlib.sha1(text[:line_end].encode("ascii")).digest()
        except CertificateError as exc:
            if exc.line is None:
                raise CertificateError(exc.reason, lineno)
            raise
        except ValueError as exc:
            raise CertificateError("%s: %s" % (keyword, exc), lineno)
    if items and items[0][1] != "dir-key-certificate-version":
        raise CertificateError("key certificates start with dir-key-certificate-version", first_line)
    for keyword, mandatory, _obj in _CERT_FIELDS:
        if mandatory and keyword not in seen:
            raise CertificateError("key certificate lacks a %r line" % keyword, first_line)
    return cert


def check_certificate(cert, now=None):
    """Check one parsed certificate; returns a JSON-serialisable report.

    ``ok`` is True when the fingerprint matches the identity key, the cross-certificate and the
    certification verify, and ``now`` lies between published and expires.
    """
    epoch = to_epoch(now)
    report = {
        "fingerprint": cert.get("fingerprint"),
        "published": cert.get("published"),
        "expires": cert.get("expires"),
        "signing_key_digest": cert.get("signing_key_digest"),
        "fingerprint_matches": key_digest(cert["_identity_der"]) == cert.get("fingerprint"),
        "crosscert_valid": False,
        "certification_valid": False,
        "expired": epoch > cert["_expires"],
        "not_yet_valid": epoch < cert["_published"],
    }
    if "_crosscert" in cert:
        # the signing key signs the SHA-1 of the DER identity key
        report["crosscert_valid"] = rsa_verify_digest(
            cert["_crosscert"], cert["_signing_key"], hashlib.sha1(cert["_identity_der"]).digest())
    report["certification_valid"] = rsa_verify_digest(
        cert["_certification"], cert["_identity_key"], cert["_signed_digest"])
    problems = []
    if not report["fingerprint_matches"]:
        problems.append("fingerprint does not match the identity key")
    if "_crosscert" not in cert:
        problems.append("no dir-key-crosscert")
    elif not report["crosscert_valid"]:
        problems.append("dir-key-crosscert does not verify")
    if not report["certification_valid"]:
        problems.append("dir-key-certification does not verify")
    if report["expired"]:
        problems.append("certificate expired %s" % cert["expires"])
    if report["not_yet_valid"]:
        problems.append("certificate not valid before %s" % cert["published"])
    report["ok"] = not problems
    report["problems"] = problems
    return report
