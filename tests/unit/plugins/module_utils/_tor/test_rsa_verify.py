# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Signature verification (consensus.verify_signatures), key certificates (rsa_verify.py) and the
shipped directory-authority list (dirauths.py), with Stem as the oracle where it has one."""

import base64
import hashlib
import json

import pytest
from stem.descriptor.networkstatus import KeyCertificate, NetworkStatusDocumentV3

from ansible_collections.onionlab.tor.plugins.module_utils._tor import dirauths
from ansible_collections.onionlab.tor.plugins.module_utils._tor import rsa_verify as R
from ansible_collections.onionlab.tor.plugins.module_utils._tor.consensus import (
    ConsensusError,
    parse_consensus,
    verify_signatures,
)

from harness.data import CONSENSUS_DIR as CONS
from harness.data import STEM_DIR as STEM

NOW_2017 = "2017-03-10T10:30:00Z"


@pytest.fixture(scope="module")
def md2017():
    return (CONS / "2017-03-10-cached-microdesc-consensus").read_bytes()


@pytest.fixture(scope="module")
def certs2017():
    return (CONS / "2017-03-10-cached-certs").read_bytes()


# --------------------------------------------------------------------------- certificates

@pytest.mark.parametrize("path", [CONS / "2017-03-10-cached-certs", STEM / "cached-certs", STEM / "metrics_cert"],
                         ids=lambda p: p.name)
def test_certificates_equal_stem(path):
    data = path.read_bytes()
    ours = R.parse_certificates(data)
    text = data.decode("ascii")
    if text.startswith("@"):
        text = text.split("\n", 1)[1]
    chunks = ["dir-key-certificate-version" + c for c in text.split("dir-key-certificate-version")[1:]]
    theirs = [KeyCertificate(c.encode("ascii"), validate=True) for c in chunks]
    assert len(ours) == len(theirs) > 0
    for mine, stem in zip(ours, theirs):
        assert mine["fingerprint"] == stem.fingerprint
        assert mine["published"] == stem.published.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert mine["expires"] == stem.expires.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert mine.get("address") == stem.address and mine.get("dir_port") == stem.dir_port
        assert mine["_signing_der"] == R.pem_to_der(stem.signing_key, "RSA PUBLIC KEY")
        report = R.check_certificate(mine, now=mine["published"])
        assert report["fingerprint_matches"] and report["certification_valid"]
        if stem.crosscert is None:  # 2012 certificates had none; dir-spec now requires one
            assert not report["ok"] and report["problems"] == ["no dir-key-crosscert"]
        else:
            assert report["crosscert_valid"] and report["ok"], report["problems"]


def test_certificate_expiry_and_tampering(certs2017):
    certs = R.parse_certificates(certs2017)
    cert = certs[0]
    late = R.check_certificate(cert, now="2030-01-01T00:00:00Z")
    assert late["expired"] and not late["ok"] and "expired" in late["problems"][0]
    early = R.check_certificate(cert, now=0)
    assert early["not_yet_valid"] and not early["ok"]
    bad = dict(cert)
    bad["_signed_digest"] = hashlib.sha1(b"something else").digest()
    report = R.check_certificate(bad, now=NOW_2017)
    assert not report["certification_valid"] and not report["ok"]
    swapped = dict(cert)
    swapped["_crosscert"] = certs[1]["_crosscert"]
    assert not R.check_certificate(swapped, now=NOW_2017)["crosscert_valid"]


@pytest.mark.parametrize("old,new,message", [
    ("dir-key-certificate-version 3", "dir-key-certificate-version 4", "unsupported key certificate version"),
    ("fingerprint EFCBE720AB3A82B99F9E953CD5BF50F7EEFC7B97", "fingerprint EFCBE720", "40 hex"),
    ("dir-key-expires 2017-07-01 19:15:20", "dir-key-expires 2017-07-32 19:15:20", "dir-key-expires"),
    ("dir-key-published 2016-07-01 19:15:20\n", "", "dir-key-published"),
    ("-----END RSA PUBLIC KEY-----", "-----END RSA KEY-----", "not terminated"),
])
def test_malformed_certificates(certs2017, old, new, message):
    text = certs2017.decode("ascii")
    assert old in text
    with pytest.raises(R.CertificateError, match=message) as info:
        R.parse_certificates(text.replace(old, new, 1))
    assert info.value.line is not None


def test_der_and_padding():
    der = base64.b64decode(
        "MIGJAoGBANROlyEQEWJ20RC+DogV0Ww8mrUw9viscZ7eqAkyhDZKIt++2kVXszUIZd2NoWG025f3np4zlTuIkz2PShn1yAYmKBlRc"
        "wbexgR6dXBToL3Zxe1Mezig/UuLkX75imfneBiLdtCRzaZs/Fa5cwd3msUNPVsq5Zmk0R7rCmBqiLDbAgMBAAE=")
    n, e = R.rsa_public_key_from_der(der)
    assert e == 65537 and n.bit_length() == 1024
    with pytest.raises(R.CertificateError):
        R.rsa_public_key_from_der(der + b"\x00")
    with pytest.raises(R.CertificateError):
        R.rsa_public_key_from_der(der[:-3])
    # a "signature" that is not PKCS#1 type 1 padded, and one of the wrong length
    assert R.rsa_recover(b"\x01" * 128, (n, e)) is None
    assert R.rsa_recover(b"\x01" * 127, (n, e)) is None


def test_recover_payload(certs2017):
    cert = R.parse_certificates(certs2017)[0]
    payload = R.rsa_recover(cert["_crosscert"], cert["_signing_key"])
    assert payload == hashlib.sha1(cert["_identity_der"]).digest()  # bare digest, no DigestInfo
    flipped = bytearray(cert["_crosscert"])
    flipped[-1] ^= 1
    assert R.rsa_recover(bytes(flipped), cert["_signing_key"]) is None


# --------------------------------------------------------------------------- consensus signatures

def test_verify_2017(md2017, certs2017):
    result = verify_signatures(md2017, certs2017, now=NOW_2017)
    json.dumps(result)
    sigs = dict((s["nickname"], s) for s in result["signatures"])
    assert len(result["signatures"]) == 8
    # dannenberg's certificate is not in this cached-certs; all other signatures verify
    assert not sigs["dannenberg"]["verified"] and "no key certificate" in sigs["dannenberg"]["reason"]
    for name, sig in sigs.items():
        if name != "dannenberg":
            assert sig["verified"] and sig["signature_valid"] and sig["reason"] is None, name
            assert sig["algorithm"] == "sha256"
    # against tor 0.4.9's authorities only 5 of the 8 signers are still known (tor26, moria1 and
    # faravahar have new identities), and dannenberg cannot be checked: 4 < 5 needed of 9
    assert result["known_authorities"] == 9 and result["required"] == 5
    assert result["known_authorities_signed"] == 4 and result["majority"] is False
    # against the document's own authority list (the 2017 network) it has a majority
    own = verify_signatures(md2017, certs2017, now=NOW_2017, authorities="document")
    assert own["known_authorities_signed"] == 7 and own["majority"] is True


def test_verify_matches_stem():
    """Stem's validate_signatures() (SHA-1 signatures only) agrees on a private network's consensus."""
    data = (STEM / "cached-consensus").read_bytes()
    certs = (STEM / "cached-certs").read_bytes()
    doc = NetworkStatusDocumentV3(data, validate=False)
    text = certs.decode("ascii")
    chunks = ["dir-key-certificate-version" + c for c in text.split("dir-key-certificate-version")[1:]]
    doc.validate_signatures([KeyCertificate(c.encode("ascii")) for c in chunks])  # raises if not
    ours = verify_signatures(data, certs, now="2017-05-25T04:46:35Z", authorities="document")
    assert [s["signature_valid"] for s in ours["signatures"]] == [True, True]
    tampered = data.replace(b"Bandwidth=0", b"Bandwidth=1", 1)
    with pytest.raises(ValueError):
        NetworkStatusDocumentV3(tampered, validate=False).validate_signatures(
            [KeyCertificate(c.encode("ascii")) for c in chunks])
    ours = verify_signatures(tampered, certs, now="2017-05-25T04:46:35Z", authorities="document")
    assert [s["signature_valid"] for s in ours["signatures"]] == [False, False]


def test_verify_expired_certificates(md2017, certs2017):
    result = verify_signatures(md2017, certs2017, now="2019-01-01T00:00:00Z")
    assert not any(s["verified"] for s in result["signatures"])
    assert all(s["signature_valid"] for s in result["signatures"] if s["certificate"])
    assert all("expired" in s["reason"] for s in result["signatures"] if s["certificate"])


def test_tampered_document_fails(md2017, certs2017):
    text = md2017.decode("ascii").replace("Bandwidth=4130", "Bandwidth=4131", 1)
    assert text != md2017.decode("ascii")
    result = verify_signatures(text, certs2017, now=NOW_2017)
    assert not any(s["signature_valid"] for s in result["signatures"])
    assert all("does not match" in s["reason"] for s in result["signatures"] if s["certificate"])
    assert result["majority"] is False


def test_parse_with_certs(md2017, certs2017):
    result = parse_consensus(md2017, certs=certs2017, now=NOW_2017, summary_only=True)
    assert [s["verified"] for s in result["signatures"]] == [False] + [True] * 7
    assert result["verification"]["known_authorities_signed"] == 4


def test_private_network_consensus():
    """Stem's sample from a test network: two authorities, both signatures verify."""
    doc = (STEM / "cached-consensus").read_bytes()
    certs = (STEM / "cached-certs").read_bytes()
    result = verify_signatures(doc, certs, now="2017-05-25T04:46:35Z", authorities="document")
    assert result["majority"] and result["known_authorities_signed"] == 2
    sha1 = hashlib.sha1(doc[:doc.index(b"directory-signature ") + len(b"directory-signature ")]).hexdigest()
    assert result["digests"]["sha1"] == sha1.upper()


def test_unknown_algorithm_is_ignored(md2017, certs2017):
    text = md2017.decode("ascii").replace("directory-signature sha256 0232AF", "directory-signature sha3 0232AF")
    result = verify_signatures(text, certs2017, now=NOW_2017)
    first = result["signatures"][0]
    assert first["algorithm"] == "sha3" and "unrecognized" in first["reason"] and not first["verified"]


def test_bad_certs_argument(md2017):
    with pytest.raises(ConsensusError, match="key certificates"):
        verify_signatures(md2017, "dir-key-certificate-version 3\nfingerprint XYZ\n", now=NOW_2017)
    with pytest.raises(ValueError, match="v3ident"):
        verify_signatures(md2017, "", authorities=["nope"])


# --------------------------------------------------------------------------- authority list

def test_dirauths_shape():
    entries = dirauths.authorities()
    assert [a["nickname"] for a in entries] == [
        "moria1", "tor26", "dizum", "Serge", "gabelmoo", "dannenberg", "maatuska", "longclaw", "bastet",
        "faravahar"]
    assert len(dirauths.V3IDENTS) == 9 and [a for a in entries if a["bridge"]] == [entries[3]]
    for a in entries:
        assert len(a["fingerprint"]) == 40 and a["fingerprint"] == a["fingerprint"].upper()
        assert a["v3ident"] is None or (len(a["v3ident"]) == 40 and a["v3ident"] == a["v3ident"].upper())
    json.dumps(entries)
    assert dirauths.is_known_authority("ed03bb616eb2f60bec80151114bb25cef515b226")
    assert not dirauths.is_known_authority("14C131DFC5C6F93646BE72FA1401C02A8DF2E8B4")  # tor26's old identity
    assert dirauths.nickname_for("27102BC123E7AF1D4741AE047E160C91ADC76B21") == "bastet"


def test_dirauths_match_2022_consensus():
    """Authorities whose keys did not change since 2022 appear in that consensus with the same data."""
    result = parse_consensus((CONS / "2022-11-19-cached-consensus").read_bytes(), summary_only=True)
    by_ident = dict((a["v3ident"], a) for a in result["authorities"])
    for entry in dirauths.authorities(include_bridge=False):
        seen = by_ident.get(entry["v3ident"])
        if seen is not None and entry["nickname"] not in ("moria1", "dizum"):
            assert seen["nickname"].lower() == entry["nickname"].lower()
            assert (seen["address"], seen["dir_port"], seen["or_port"]) == (
                entry["address"], entry["dir_port"], entry["or_port"])
