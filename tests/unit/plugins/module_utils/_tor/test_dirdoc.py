# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, onionlab.tor contributors
"""_dirdoc: the directory-document grammar shared by consensus.py and rsa_verify.py."""

from __future__ import annotations

import calendar
import datetime
import re

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import _dirdoc as D
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import DocumentError


# -- addresses and ports: the functions and the pattern pieces are one rule ------------------------

def _reference_port(text, allow_zero):
    """dir-spec's port, written independently: ASCII digits, no leading zero, 1-65535 (or 0)."""
    if not text or not all("0" <= c <= "9" for c in text):
        return False
    if text == "0":
        return allow_zero
    return text[0] != "0" and int(text) <= 65535


def _reference_ipv4(text):
    parts = text.split(".")
    return len(parts) == 4 and all(_reference_port(p, True) and int(p) <= 255 for p in parts)


PORT_SAMPLES = [str(n) for n in range(0, 70001)] + [
    "", "00", "01", "080", "0080", "65536", "99999", "123456", "-1", "+1", " 1", "1 ", "1a", "\u0661", "\u00b2"]
IPV4_SAMPLES = ["0.0.0.0", "1.2.3.4", "255.255.255.255", "10.0.0.1", "86.59.21.38", "256.1.1.1", "1.2.3",
                "1.2.3.4.5", "01.2.3.4", "1.02.3.4", "1.2.3.00", "1..3.4", ".1.2.3", "1.2.3.4.", "1.2.3.-4",
                "1.2.3.4 ", " 1.2.3.4", "a.b.c.d", "1.2.3.\u0664", "300.2.3.4", "199.255.249.250",
                "249.250.251.252", "1.2.3.255", "1.2.3.260", ""]


@pytest.mark.parametrize("allow_zero", [False, True])
def test_valid_port_is_dir_spec(allow_zero):
    pattern = re.compile((D.PORT0 if allow_zero else D.PORT) + r"\Z")
    for text in PORT_SAMPLES:
        expected = _reference_port(text, allow_zero)
        assert D.valid_port(text, allow_zero=allow_zero) is expected, text
        assert (pattern.match(text) is not None) is expected, text


def test_valid_ipv4_is_dir_spec():
    pattern = re.compile(D.IPV4 + r"\Z")
    samples = IPV4_SAMPLES + ["%d.%d.%d.%d" % (a, b, 7, 0) for a in range(0, 300, 7) for b in (0, 9, 10, 99, 100, 255, 256)]
    for text in samples:
        expected = _reference_ipv4(text)
        assert D.valid_ipv4(text) is expected, text
        assert (pattern.match(text) is not None) is expected, text


# -- timestamps ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["2012-07-12 04:01:55", "1970-01-01 00:00:00", "2024-02-29 23:59:59",
                                  "0001-01-01 00:00:00", "9999-12-31 23:59:59"])
def test_parse_timestamp(text):
    moment = datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
    assert D.parse_timestamp(text) == calendar.timegm(moment.timetuple())
    assert D.iso(text) == text.replace(" ", "T") + "Z"


@pytest.mark.parametrize("text, message", [
    ("2012-07-12T04:01:55", "expected a 'YYYY-MM-DD HH:MM:SS' timestamp"),
    ("2012-07-12 04:01", "expected a 'YYYY-MM-DD HH:MM:SS' timestamp"),
    ("2012-07-12 04:01:55 ", "expected a 'YYYY-MM-DD HH:MM:SS' timestamp"),
    ("2012-7-12 04:01:55", "expected a 'YYYY-MM-DD HH:MM:SS' timestamp"),
    ("2012-13-12 04:01:55", "not a valid date and time"),
    ("2012-00-12 04:01:55", "not a valid date and time"),
    ("2023-02-29 04:01:55", "not a valid date and time"),
    ("2012-07-00 04:01:55", "not a valid date and time"),
    ("0000-01-01 00:00:00", "not a valid date and time"),
    ("2012-07-12 24:00:00", "not a valid date and time"),
    ("2012-07-12 23:60:00", "not a valid date and time"),
    ("2012-07-12 23:59:60", "not a valid date and time"),
])
def test_parse_timestamp_refuses(text, message):
    with pytest.raises(ValueError, match=message):
        D.parse_timestamp(text)


def test_date_and_time_pieces_agree_with_parse_timestamp():
    """DATE and TIME accept no more than parse_timestamp (DATE leaves the day of the month to it)."""
    pattern = re.compile("(%s) (%s)\\Z" % (D.DATE, D.TIME))
    for text in ("2012-07-12 04:01:55", "2012-13-12 04:01:55", "2012-07-32 04:01:55", "2012-07-12 24:00:00",
                 "2012-07-12 23:60:00", "2012-07-12 23:59:60", "2012-00-12 04:01:55", "2012-07-00 04:01:55"):
        if pattern.match(text):
            D.parse_timestamp(text)
    assert pattern.match("2023-02-30 00:00:00")  # the day against its month: parse_timestamp's part
    with pytest.raises(ValueError):
        D.parse_timestamp("2023-02-30 00:00:00")


def test_iso_and_to_epoch():
    assert D.iso(0) == "1970-01-01T00:00:00Z"
    assert D.iso(1796283775.9) == "2026-12-03T07:42:55Z"
    assert D.to_epoch("2026-12-03T07:42:55Z") == 1796283775.0
    assert D.to_epoch("2026-12-03 07:42:55") == 1796283775.0
    assert D.to_epoch(12) == 12.0 and isinstance(D.to_epoch(12), float)
    assert abs(D.to_epoch(None) - datetime.datetime.now(datetime.timezone.utc).timestamp()) < 60
    with pytest.raises(ValueError):
        D.to_epoch("yesterday")


# -- keyword lines and objects ----------------------------------------------------------------------

class _Err(DocumentError):
    pass


def test_items():
    text = ("alpha 1 2\n\nopt beta\tx  y\ngamma\n-----BEGIN SOME THING-----\nQUJD\nREVG\n-----END SOME THING-----\n"
            "delta-4\n")
    result = D.items(text, 0, len(text), 10, _Err)
    assert result == [
        (10, "alpha", "1 2", None, 0),
        (12, "beta", "x  y", None, 11),
        (13, "gamma", "", ("SOME THING", "QUJD\nREVG"), 25),
        (18, "delta-4", "", None, text.index("delta-4")),
    ]
    assert D.decode_base64(result[2][3][1]) == b"ABCDEF"
    # a slice of a longer text, with no final newline
    assert D.items("xx\nkw a\nzz", 3, 7, 2, _Err) == [(2, "kw", "a", None, 3)]


def test_items_empty_object():
    text = "sig\n-----BEGIN SIGNATURE-----\n-----END SIGNATURE-----\nnext\n"
    assert D.items(text, 0, len(text), 1, _Err) == [(1, "sig", "", ("SIGNATURE", ""), 0), (4, "next", "", None, 54)]


@pytest.mark.parametrize("text, line, message", [
    ("a\n-----BEGIN X-----\nQUJD\n", 2, "not terminated"),
    ("a\n-----BEGIN X-----\nQUJD\n-----END Y-----\n", 2, "not terminated"),
    ("a\n-----BEGIN X-----\nQUJD\n-----END X-----x\n", 2, "not terminated"),
    ("a\n-----BEGIN X-----\n-----BEGIN X-----\n-----END X-----\n", 2, "not terminated"),
    ("a\n-----BEGIN x_y-----\nQUJD\n-----END x_y-----\n", 2, "malformed object header"),
    ("a\n\n-----BEGIN X-----\nQUJD\n-----END X-----\n", 3, "object without a keyword line"),
    ("a\n-b\n", 2, "expected a keyword"),
    ("a\n b\n", 2, "expected a keyword"),
    ("a\nb\x01c\n", 2, "control character"),
    ("a\nb\rc\n", 2, "control character"),
])
def test_items_refuses(text, line, message):
    with pytest.raises(_Err, match=message) as info:
        D.items(text, 0, len(text), 1, _Err)
    assert info.value.line == line


@pytest.mark.parametrize("body, expected", [("QUJD", b"ABC"), ("QUI=", b"AB"), ("QUI", b"AB"), ("QQ==", b"A"),
                                            ("QQ", b"A"), ("QU\nJD", b"ABC"), ("", b"")])
def test_decode_base64(body, expected):
    assert D.decode_base64(body) == expected


@pytest.mark.parametrize("body", ["Q", "QUJD=A", "QU JD", "QUJD===", "Q!JD"])
def test_decode_base64_refuses(body):
    with pytest.raises(ValueError):
        D.decode_base64(body)
