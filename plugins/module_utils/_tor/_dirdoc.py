# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, onionlab.tor contributors
"""Tor's directory-document grammar, read one way for every document we parse.

This is a private module_utils file of onionlab.tor; its API may change at any time.
Nothing here imports Ansible.

Used by consensus.py (network-status documents) and rsa_verify.py (key certificates):

* keyword lines and their objects (dir-spec 1.2): items();
* base64 object bodies: decode_base64();
* IPv4 addresses and ports: valid_ipv4(), valid_port(), and the same rules as regular-expression
  pieces (IPV4, PORT, PORT0) for patterns that match whole entries;
* tor's timestamps 'YYYY-MM-DD HH:MM:SS' (UTC): parse_timestamp(), iso(), to_epoch(), and the
  pieces DATE and TIME.

The address and port rules are dir-spec's: an IPv4 address in dotted-quad form, each number 0-255
written without leading zeros (tor itself refuses leading zeros, which could be read as octal);
a port 1-65535 without leading zeros, and "0" only where dir-spec gives it a meaning ("0" for
"none": the DirPort of 'r' and 'dir-source' lines).
"""

from __future__ import annotations

import binascii
import calendar
import re
import time

# --------------------------------------------------------------------------- keyword lines

LINE_RE = re.compile(r"(?:opt[ \t]+)?([A-Za-z0-9][A-Za-z0-9-]*)(?:[ \t]+(.*))?\Z")
BAD_CHAR = re.compile(r"[^\t\x20-\x7e]")
_BEGIN_RE = re.compile(r"-----BEGIN ([A-Za-z0-9]+(?: [A-Za-z0-9]+)*)-----\Z")
_BASE64_RE = re.compile(r"[A-Za-z0-9+/]*={0,2}\Z")


def items(text, start, end, lineno, error):
    """Tokenise text[start:end], whose first line is line lineno: [(lineno, keyword, args, obj, line_start)].

    obj is (object type, base64 text with its line breaks) when a PEM-style object follows the
    keyword line, else None; line_start is the offset of the keyword line in text.  Blank lines
    are skipped and an 'opt ' prefix dropped (as tor and Stem do).  A malformed line or object
    raises error(reason, line number).
    """
    result = []
    pos = start
    append = result.append
    while pos < end:
        nl = text.find("\n", pos, end)
        if nl < 0:
            nl = end
        line = text[pos:nl]
        line_start = pos
        pos = nl + 1
        if not line:
            lineno += 1
            continue
        match = LINE_RE.match(line)
        if not match or BAD_CHAR.search(line):
            if line.startswith("-----"):
                raise error("object without a keyword line before it", lineno)
            if BAD_CHAR.search(line):
                raise error("control character in line %r" % line[:80], lineno)
            raise error("malformed line %r (expected a keyword)" % line[:80], lineno)
        obj = None
        item_line = lineno
        lineno += 1
        if text.startswith("-----BEGIN ", pos):
            obj, pos, lineno = _object(text, pos, end, lineno, error)
        append((item_line, match.group(1), match.group(2) or "", obj, line_start))
    return result


def _object(text, pos, end, lineno, error):
    """The object whose BEGIN line starts at pos (line lineno): ((type, body), offset after it, next line)."""
    nl = text.find("\n", pos, end)
    if nl < 0:
        nl = end
    head = text[pos:nl]
    bmatch = _BEGIN_RE.match(head)
    if not bmatch:
        raise error("malformed object header %r" % head[:80], lineno)
    end_line = "-----END %s-----" % bmatch.group(1)
    body_start = nl + 1
    body_end = text.find("\n" + end_line, nl, end)
    if body_end < 0 or text[body_end + 1 + len(end_line):body_end + 2 + len(end_line)] not in ("\n", "") \
            or text.find("\n-----", nl, body_end) >= 0:
        raise error("object %r is not terminated by %r" % (bmatch.group(1), end_line), lineno)
    body = text[body_start:body_end] if body_end >= body_start else ""
    lineno += text.count("\n", pos, body_end + 1) + 1
    return (bmatch.group(1), body), body_end + 2 + len(end_line), lineno


def decode_base64(text):
    """Strict base64 of an object body (line breaks ignored, padding optional); ValueError if not."""
    body = text.replace("\n", "")
    if not _BASE64_RE.match(body):
        raise ValueError("invalid base64 data")
    body = body.rstrip("=")
    if len(body) % 4 == 1:
        raise ValueError("invalid base64 length")
    return binascii.a2b_base64(body + "=" * (-len(body) % 4))


# --------------------------------------------------------------------------- addresses and ports

_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
IPV4 = _OCTET + ("\\." + _OCTET) * 3
_PORT_BODY = "6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}"
PORT = "(?:" + _PORT_BODY + ")"
PORT0 = "(?:0|" + _PORT_BODY + ")"
_IPV4_RE = re.compile(IPV4 + r"\Z")


def valid_ipv4(text):
    """A dotted-quad IPv4 address, each number 0-255 without leading zeros."""
    return _IPV4_RE.match(text) is not None


def valid_port(text, allow_zero=False):
    """A port 1-65535 without leading zeros; "0" too with allow_zero (PORT / PORT0 as a function: the
    consensus parser checks many exit-policy ports, and this is faster than the pattern)."""
    if not (text.isdigit() and text.isascii()):
        return False
    if text == "0":
        return allow_zero
    return text[0] != "0" and int(text) <= 65535


# --------------------------------------------------------------------------- time

DATE = "[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"  # the day is checked against the month apart
TIME = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
_TIMESTAMP_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})\Z")


def parse_timestamp(value):
    """tor's 'YYYY-MM-DD HH:MM:SS' (UTC) -> POSIX seconds (int); ValueError when malformed."""
    match = _TIMESTAMP_RE.match(value)
    if not match:
        raise ValueError("expected a 'YYYY-MM-DD HH:MM:SS' timestamp, got %r" % value)
    y, mo, d, h, mi, s = (int(x) for x in match.groups())
    if not (1 <= mo <= 12 and y >= 1 and 1 <= d <= calendar.monthrange(y, mo)[1]
            and h < 24 and mi < 60 and s < 60):
        raise ValueError("%r is not a valid date and time" % value)
    return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))


def iso(value):
    """'YYYY-MM-DDTHH:MM:SSZ' (UTC, whole seconds) of tor's 'YYYY-MM-DD HH:MM:SS' or of POSIX seconds."""
    if isinstance(value, str):
        return value[:10] + "T" + value[11:] + "Z"
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(value)))


def to_epoch(now):
    """None (the current time), POSIX seconds, or a timestamp ('YYYY-MM-DDTHH:MM:SSZ' or tor's form) -> float."""
    if now is None:
        return time.time()
    if isinstance(now, (int, float)):
        return float(now)
    text = str(now).strip()
    if text.endswith("Z"):
        text = text[:-1]
    return float(parse_timestamp(text.replace("T", " ")))
