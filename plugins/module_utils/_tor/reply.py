# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Control-protocol grammar: reply model, QuotedString, keyword checks, command framing.

This is a private module_utils file of onionlab.tor; its API may change at any time.

Pure functions over text, no sockets (see transport.py). References: Tor's control-spec,
sections "Replies" (2.3), "Commands from controller" (2.4) and "General-use tokens" (2.1).
"""

from __future__ import annotations

import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import (
    OperationFailed,
    ProtocolError,
    UnrecognizedKey,
    UnsafeValue,
)

# A keyword (command, GETINFO key, config option, signal, flag): printable ASCII with
# no space, no quote and no backslash. GETINFO keys use '/', '-', '.', '@', '=' ('md/id/$FP').
_KEYWORD_RE = re.compile(r"^[A-Za-z0-9_./:@$=~+,\-]+\Z")
_CONFIG_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_FORBIDDEN = ("\r", "\n", "\x00")
_TOKEN_RE = re.compile(r"([^ =\"]+)(=?)")
_HEX2_RE = re.compile(r"[0-9A-Fa-f]{2}")


def check_value(value, what="value"):
    """Refuse a value containing CR, LF or NUL (control-protocol injection)."""
    if not isinstance(value, str):
        raise UnsafeValue("%s must be a string, not %s" % (what, type(value).__name__))
    for char in _FORBIDDEN:
        if char in value:
            raise UnsafeValue("%s contains %s, which the control protocol cannot carry safely"
                              % (what, {"\r": "a carriage return", "\n": "a line feed",
                                        "\x00": "a NUL byte"}[char]))
    return value


def check_keyword(keyword, what="keyword"):
    """A keyword must match the spec's charset: no spaces, quotes or control characters."""
    check_value(keyword, what)
    if not _KEYWORD_RE.match(keyword):
        raise UnsafeValue("%s %r is not a valid control-protocol keyword" % (what, keyword))
    return keyword


def check_config_key(key):
    check_value(key, "configuration option")
    if not _CONFIG_KEY_RE.match(key):
        raise UnsafeValue("configuration option %r is not a valid option name" % (key,))
    return key


def check_token(value, what="argument"):
    """An unquoted argument (e.g. an ADD_ONION Port=): no whitespace, quote or control char."""
    check_value(value, what)
    if not value or any(c in value for c in ' \t"\\') or not value.isprintable():
        raise UnsafeValue("%s %r must be non-empty printable text without spaces, quotes or "
                          "backslashes" % (what, value))
    return value


def quote(value):
    """QuotedString per control-spec 2.1: wrap in double quotes, escape backslash and quote."""
    check_value(value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'"}


def unquote(text, start=0):
    """Parse a QuotedString beginning at text[start] (a '"').

    Returns (value, index just past the closing quote). Understands the C escapes that tor
    writes (esc_for_log): \\n \\t \\r \\\\ \\" \\' and octal \\NNN / hex \\xNN as bytes (UTF-8 decoded).
    """
    if start >= len(text) or text[start] != '"':
        raise ProtocolError("expected a quoted string")
    out = bytearray()
    i = start + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return out.decode("utf-8", "replace"), i + 1
        if c == "\\":
            i += 1
            if i >= n:
                break
            c = text[i]
            if c in _ESCAPES:
                out += _ESCAPES[c].encode()
                i += 1
            elif c in "01234567":
                j = i
                while j < n and j < i + 3 and text[j] in "01234567":
                    j += 1
                out.append(int(text[i:j], 8) & 0xFF)
                i = j
            elif c == "x" and _HEX2_RE.match(text[i + 1:i + 3]):
                out.append(int(text[i + 1:i + 3], 16))
                i += 3
            else:
                raise ProtocolError("unknown escape \\%s in quoted string" % c)
            continue
        out += c.encode("utf-8")
        i += 1
    raise ProtocolError("unterminated quoted string")


def parse_mapping(text):
    """Parse 'KEY=VALUE KEY2="quoted" FLAG' (PROTOCOLINFO, AUTHCHALLENGE, ...).

    Returns (positional tokens, {KEY: value}). Later duplicates overwrite earlier ones.
    """
    positional = []
    mapping = {}
    i = 0
    n = len(text)
    while i < n:
        if text[i] == " ":
            i += 1
            continue
        m = _TOKEN_RE.match(text, i)
        if not m:
            raise ProtocolError("malformed reply token at %r" % text[i:i + 20])
        key, eq = m.group(1), m.group(2)
        i = m.end()
        if not eq:
            positional.append(key)
            continue
        if i < n and text[i] == '"':
            value, i = unquote(text, i)
        else:
            j = text.find(" ", i)
            j = n if j < 0 else j
            value, i = text[i:j], j
        mapping[key] = value
    return positional, mapping


class ReplyLine(object):
    """One line of a reply: status code, separator ('-', '+' or ' '), text, data block."""

    __slots__ = ("code", "sep", "text", "data")

    def __init__(self, code, sep, text, data=None):
        self.code = code
        self.sep = sep
        self.text = text
        self.data = data

    def __repr__(self):
        return "ReplyLine(%r, %r, %r%s)" % (self.code, self.sep, self.text,
                                            ", data=<%d chars>" % len(self.data) if self.data is not None else "")


class Reply(object):
    """A complete reply (or asynchronous event): its lines in order; the last has sep ' '."""

    __slots__ = ("lines",)

    def __init__(self, lines):
        if not lines:
            raise ProtocolError("empty reply")
        self.lines = lines

    @property
    def code(self):
        return self.lines[-1].code

    @property
    def ok(self):
        return self.lines[-1].code.startswith("2")

    @property
    def is_event(self):
        return self.lines[-1].code == "650"

    def __iter__(self):
        return iter(self.lines)

    def __repr__(self):
        return "Reply(%r)" % (self.lines,)

    def raise_for_status(self, command=None):
        """Raise OperationFailed with tor's own code and message unless the status is 2xx."""
        if self.ok:
            return self
        # Error replies are one line, but use the first error line's text when there are more.
        for line in self.lines:
            if not line.code.startswith("2"):
                code, message = line.code, line.text
                break
        cls = UnrecognizedKey if code == "552" else OperationFailed
        raise cls(code, message, command)


def parse_key_values(reply, unquote_values=True):
    """Lines 'key=value' (or '+key=' with a data block, or a bare 'key') in order.

    GETINFO and GETCONF use this form. A final bare 'OK' line is not a key. Values that tor
    quoted (GETCONF escapes some) are unquoted. GETINFO values are tor's text as is
    (unquote_values=False): 'net/listeners/control' is '"127.0.0.1:9051" "unix:/x"', a list.
    Returns a list of (key, value or None).
    """
    items = []
    lines = reply.lines
    for index, line in enumerate(lines):
        text = line.text
        if line.sep == "+":
            key, eq, rest = text.partition("=")
            if not eq or rest:
                raise ProtocolError("data line without 'key=': %r" % text[:80])
            items.append((key, line.data))
            continue
        if index == len(lines) - 1 and text == "OK":
            continue
        key, eq, value = text.partition("=")
        if not key:
            raise ProtocolError("reply line without a key: %r" % text[:80])
        if not eq:
            items.append((key, None))
        elif unquote_values and value.startswith('"'):
            unq, end = unquote(value)
            if end != len(value):
                raise ProtocolError("junk after quoted value for %s" % key)
            items.append((key, unq))
        else:
            items.append((key, value))
    return items


def format_command(keyword, args=(), data=None):
    """Frame one command as bytes. Every argument must already be checked/quoted.

    With data, the command is a multi-line '+KEYWORD ...' command whose body is dot-stuffed
    and ends with a lone '.' (control-spec 2.2).
    """
    check_keyword(keyword, "command")
    parts = [keyword]
    for arg in args:
        check_value(arg, "argument")
        parts.append(arg)
    line = " ".join(parts)
    if data is None:
        return (line + "\r\n").encode("utf-8")
    if "\x00" in data:
        raise UnsafeValue("data block contains a NUL byte")
    body = []
    for dline in data.replace("\r\n", "\n").split("\n"):
        if "\r" in dline:
            raise UnsafeValue("data block contains a bare carriage return")
        body.append("." + dline if dline.startswith(".") else dline)
    if body and body[-1] == "":
        body.pop()
    return ("+" + line + "\r\n" + "".join(b + "\r\n" for b in body) + ".\r\n").encode("utf-8")
