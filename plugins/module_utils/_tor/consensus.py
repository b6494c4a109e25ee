# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, onionlab.tor contributors
"""Fast, validating parser for Tor v3 network-status documents (dir-spec section 3.4.1).

Supports ``ns`` and ``microdesc`` consensuses (every consensus method real documents use) and
``ns`` votes.  Pure standard library, Python 3.7+.

Validation follows what Stem's ``validate=True`` checks (section structure, keyword counts,
value formats, base64 identities, ports, timestamps, ...) and fails with one
:class:`ConsensusError` naming the line.  Where Stem refuses what tor itself writes, tor and
dir-spec win:

* an empty ``client-versions`` / ``server-versions`` line (tor writes one when nothing is
  recommended) is accepted as an empty list;
* ``params`` values are checked as Int32 in sorted order, as dir-spec says, but not against
  Stem's per-parameter ranges: authorities vote those values and tor clamps them when used,
  so a consensus carrying an out-of-range value is still one tor writes and accepts.

A few checks are stricter than Stem, following tor: protocol versions must lie in 0-63 with
low <= high, port ranges in exit policies must have low <= high, valid-after must precede
fresh-until and valid-until, and nothing but signatures may follow the first
``directory-signature``.

Speed: router entries in tor's canonical line order are matched by one compiled pattern per
entry (validated inside the regular-expression engine), values that repeat across routers
(flags, versions, protocols, policies) are parsed and validated once per distinct string,
and base64 identities are decoded only for routers that are returned.  Entries in any other
shape (``opt`` prefixes, unknown lines, a different line order, votes) go through a general
line-by-line path producing identical results.

Where things are: the document's grammar (keyword lines, objects, addresses, ports, timestamps)
is _dirdoc.py's; each header line's reader is in _HEADER_FIELDS; each router field, and how it
is made from an entry's values, is one line of _ROUTER_TABLE, which every path builds from.

Output is JSON-serialisable.  Times are ``YYYY-MM-DDTHH:MM:SSZ`` strings (UTC).  Routers
that share an identical ``s``/``pr`` line share the same ``flags`` list / ``protocols`` dict
object: treat router values as read-only.
"""

from __future__ import annotations

import binascii
import hashlib
import operator
import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor import _dirdoc
from ansible_collections.onionlab.tor.plugins.module_utils._tor import dirauths as _dirauths
from ansible_collections.onionlab.tor.plugins.module_utils._tor import rsa_verify as _rsa
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import DocumentError


class ConsensusError(DocumentError):
    """A network-status document that is malformed; ``line`` is its 1-based line number."""


class _FieldError(Exception):
    """Internal: a value is malformed; converted to ConsensusError with the line number (``line``
    when the raiser knows it)."""

    def __init__(self, message, line=None):
        super(_FieldError, self).__init__(message)
        self.line = line


# --------------------------------------------------------------------------- patterns

_B64 = "[A-Za-z0-9+/]"
_IPV4, _PORT, _PORT0 = _dirdoc.IPV4, _dirdoc.PORT, _dirdoc.PORT0
_H16 = "[0-9a-fA-F]{1,4}"
# sound (never accepts an invalid address) but not complete: embedded-IPv4 forms and
# anything else it does not match are decided by _is_ipv6()
_IPV6 = "(?:" + "|".join([
    "(?:%s:){7}%s" % (_H16, _H16),
    "(?:%s:){1,7}:" % _H16,
    "(?:%s:){1,6}:%s" % (_H16, _H16),
    "(?:%s:){1,5}(?::%s){1,2}" % (_H16, _H16),
    "(?:%s:){1,4}(?::%s){1,3}" % (_H16, _H16),
    "(?:%s:){1,3}(?::%s){1,4}" % (_H16, _H16),
    "(?:%s:){1,2}(?::%s){1,5}" % (_H16, _H16),
    "%s:(?::%s){1,6}" % (_H16, _H16),
    ":(?::%s){1,7}" % _H16,
    "::",
]) + ")"
_DATE, _TIME = _dirdoc.DATE, _dirdoc.TIME
_NICK = "[A-Za-z0-9]{1,19}"

_R_TAIL = (" (?P<date>%s) (?P<time>%s) (?P<address>%s) (?P<or_port>%s) (?P<dir_port>%s)\n"
           % (_DATE, _TIME, _IPV4, _PORT, _PORT0))
_ALINE = "a (?:\\[%s\\]|%s):%s\n" % (_IPV6, _IPV4, _PORT)
_ROUTER_TAIL = (
    "s(?P<s>(?:[ ][^\n]*)?)\n"
    "(?:v(?P<v> [^\n]*)\n)?"
    "(?:pr(?P<pr> [^\n]*)\n)?"
    "(?:w Bandwidth=(?P<bw>[0-9]+)(?P<unmeasured> Unmeasured=1)?\n)?"
)
_NEXT = "(?=r[ \t\n]|\\Z)"
# One router entry in tor's canonical line order; every group is named after the entry value it
# holds (see _ROUTER_TABLE).  v / pr / p values are captured with their leading space, so that a
# present but empty line (tor writes "pr " for a relay that lists no protocols) differs from an
# absent one ('' / None).
_NS_ENTRY = ("r (?P<nick>" + _NICK + ") (?P<ident>" + _B64 + "{27}) (?P<digest>" + _B64 + "{27})" + _R_TAIL
             + "(?P<alines>(?:" + _ALINE + ")*)" + _ROUTER_TAIL + "(?:p(?P<p> [^\n]*)\n)?" + _NEXT)
_MD_ENTRY = ("r (?P<nick>" + _NICK + ") (?P<ident>" + _B64 + "{27})" + _R_TAIL
             + "(?P<alines>(?:" + _ALINE + ")*)m (?P<digest>" + _B64 + "{43})\n" + _ROUTER_TAIL + _NEXT)
# any other entry: its r line and every following line up to the next r line
_OTHER_ENTRY = "(?P<other>r[ \t\n][^\n]*\n(?:(?!r[ \t\n])[^\n]*\n)*)"
_NS_FAST = re.compile("^" + _NS_ENTRY, re.M)
_MD_FAST = re.compile("^" + _MD_ENTRY, re.M)
_NS_BULK = re.compile("^(?:" + _NS_ENTRY + "|" + _OTHER_ENTRY + ")", re.M)
_MD_BULK = re.compile("^(?:" + _MD_ENTRY + "|" + _OTHER_ENTRY + ")", re.M)
_CHUNK = 96 * 1024  # characters of router entries handled per bulk step

_HEX40 = re.compile(r"[0-9A-Fa-f]{40}\Z")
_NICKNAME_RE = re.compile(_NICK + r"\Z")
_DIGEST20_RE = re.compile(_B64 + r"{27}=?\Z")  # base64 of a 20-byte digest, '=' optional
_DIGEST32_RE = re.compile(_B64 + r"{43}=?\Z")  # base64 of a 32-byte digest
_VERSION_RE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+(?:\.[0-9]+)?(?:-\S*)?(?: \(\S*\))*\Z")
_PROTO_NAME = re.compile(r"[A-Za-z0-9-]+\Z")
_INT = re.compile(r"-?[0-9]+\Z")
_B64_VALUE = re.compile(r"[A-Za-z0-9+/]+={0,2}\Z")

_MAX_PROTOCOL_VERSION = 63
_INT32 = (-2147483648, 2147483647)

_AUTHORITY_KEYWORDS = ("dir-source", "contact", "vote-digest", "legacy-dir-key")
_ROUTER_KEYWORDS = ("r", "a", "s", "v", "pr", "w", "p", "m", "id")
_FOOTER_KEYWORDS = ("directory-footer", "bandwidth-weights", "directory-signature")


# --------------------------------------------------------------------------- small helpers

def _timestamp(value):
    try:
        _dirdoc.parse_timestamp(value)
    except ValueError as exc:
        raise _FieldError(str(exc))
    return _dirdoc.iso(value)


def _check_date(date):
    """A date the entry patterns matched (YYYY-MM-DD, month and day in range): a day of its month."""
    try:
        _dirdoc.parse_timestamp(date + " 00:00:00")
    except ValueError:
        raise _FieldError("%r is not a valid date" % date)


def _is_ipv6(addr):
    """RFC 4291 text form (no zone index); brackets not allowed here."""
    if not addr or "%" in addr:
        return False
    if "." in addr:
        head, sep, tail = addr.rpartition(":")
        if not sep or not _dirdoc.valid_ipv4(tail):
            return False
        addr = head + (":0:0" if not head.endswith(":") or head.endswith("::") else "0:0")
        if head.endswith(":") and not head.endswith("::"):
            return False
    if addr.count("::") > 1:
        return False
    if "::" in addr:
        left, right = addr.split("::")
        groups = (left.split(":") if left else []) + (right.split(":") if right else [])
        if len(groups) > 7:
            return False
    else:
        groups = addr.split(":")
        if len(groups) != 8:
            return False
    for group in groups:
        if not 1 <= len(group) <= 4:
            return False
        try:
            int(group, 16)
        except ValueError:
            return False
        if not all(c in "0123456789abcdefABCDEF" for c in group):
            return False
    return True


def _check_chars(value):
    if _dirdoc.BAD_CHAR.search(value):
        raise _FieldError("control character in %r" % value[:80])


def _flags(value):
    """'s' line value -> list of flags (Stem: no duplicates, no empty entries)."""
    _check_chars(value)
    if value == "":
        return []
    flags = value.split(" ")
    if "" in flags:
        raise _FieldError("extra whitespace in the flags %r" % value)
    if len(set(flags)) != len(flags):
        raise _FieldError("duplicate flags in %r" % value)
    return flags


def _version(value):
    """'v' line value -> version string after 'Tor ', or None for other platforms."""
    _check_chars(value)
    if value.startswith("Tor "):
        if not _VERSION_RE.match(value[4:]):
            raise _FieldError("malformed tor version %r" % value)
        return value[4:]
    return None


def _protocols(value):
    """'Cons=1-2 Desc=1,3' -> {'Cons': [1, 2], 'Desc': [1, 3]} (empty values skipped, as Stem)."""
    _check_chars(value)
    result = {}
    if value == "":
        return result
    for entry in value.split(" "):
        name, eq, versions = entry.partition("=")
        if not eq or not _PROTO_NAME.match(name):
            raise _FieldError("protocol entries must be Name=versions, got %r" % entry)
        if not versions:
            continue
        numbers = []
        for item in versions.split(","):
            low, dash, high = item.partition("-")
            if not dash:
                high = low
            if not (low.isdigit() and high.isdigit() and low.isascii() and high.isascii()):
                raise _FieldError("protocol versions must be numbers or ranges, got %r" % entry)
            low_i, high_i = int(low), int(high)
            if high_i > _MAX_PROTOCOL_VERSION or low_i > high_i:
                raise _FieldError("protocol version range %r is outside 0-%d or reversed"
                                  % (item, _MAX_PROTOCOL_VERSION))
            numbers.extend(range(low_i, high_i + 1))
        result[name] = numbers
    return result


def _policy(value):
    """'accept 80,443' / 'reject 1-65535' -> the same string, validated."""
    _check_chars(value)
    if value.startswith("accept"):
        rest = value[6:]
    elif value.startswith("reject"):
        rest = value[6:]
    else:
        raise _FieldError("exit policy must start with 'accept' or 'reject', got %r" % value)
    if not rest.startswith(" "):
        raise _FieldError("exit policy needs a space after accept/reject: %r" % value)
    valid_port = _dirdoc.valid_port
    for item in rest.lstrip().split(","):
        low, dash, high = item.partition("-")
        if not (valid_port(low) if not dash else valid_port(low) and valid_port(high) and int(low) <= int(high)):
            raise _FieldError("invalid port range %r in exit policy" % item)
    return value


def _or_address(value):
    """'a' line value -> {'address', 'port', 'ipv6'} (Stem's rules: IPv4, or IPv6 in brackets or not)."""
    address, colon, port = value.rpartition(":")
    if not colon:
        raise _FieldError("'a' line must be address:port, got %r" % value)
    bare = address[1:-1] if address.startswith("[") and address.endswith("]") else address
    ipv6 = _is_ipv6(bare)
    if not ipv6 and (bare != address or not _dirdoc.valid_ipv4(address)):
        raise _FieldError("'a' line has an invalid address %r" % address)
    if not _dirdoc.valid_port(port):
        raise _FieldError("'a' line has an invalid port %r" % port)
    return {"address": bare, "port": int(port), "ipv6": ipv6}


def _or_addresses_fast(alines):
    """Checked 'a' lines ("a address:port\n" each) -> [{'address', 'port', 'ipv6'}], as _or_address()."""
    result = []
    for line in alines[:-1].split("\n"):
        address, _colon, port = line[2:].rpartition(":")
        if address[0] == "[":
            result.append({"address": address[1:-1], "port": int(port), "ipv6": True})
        else:  # an IPv4 address, or (general path only) an IPv6 address without brackets
            result.append({"address": address, "port": int(port), "ipv6": ":" in address})
    return result


def _mappings(value, keyword):
    if value == "":
        return []
    pairs = []
    for entry in value.split(" "):
        key, eq, val = entry.partition("=")
        if not eq:
            raise _FieldError("'%s' must be a series of key=value pairs, got %r" % (keyword, entry))
        pairs.append((key, val))
    return pairs


def _int_mappings(value, keyword):
    """Sorted Keyword=Int32 pairs (params, bandwidth-weights)."""
    result = {}
    previous = None
    for key, val in _mappings(value, keyword):
        if not _INT.match(val):
            raise _FieldError("'%s' value for %r is not an integer: %r" % (keyword, key, val))
        number = int(val)
        if not _INT32[0] <= number <= _INT32[1]:
            raise _FieldError("'%s' value for %r is outside the Int32 range: %s" % (keyword, key, val))
        if previous is not None and key < previous:
            raise _FieldError("'%s' entries must be sorted by key (%r after %r)" % (keyword, key, previous))
        if key in result:
            raise _FieldError("'%s' repeats %r" % (keyword, key))
        previous = key
        result[key] = number
    return result


def _decode_object(obj, lineno):
    try:
        if obj[1].replace("\n", "").rstrip("="):
            return _dirdoc.decode_base64(obj[1])
    except ValueError:
        pass
    raise ConsensusError("object is not valid base64", lineno)


# --------------------------------------------------------------------------- document

class _Doc(object):
    """Parsing state for one document.

    Bytes input is decoded piece by piece (the preamble, each chunk of router entries, the
    footer) rather than as a whole, so the document's text is not held twice; ``text`` (the
    whole document as str) is decoded only when a slow path or an error message needs it.
    """

    def __init__(self, text, raw):
        self._text = text
        self.raw = raw
        self.is_vote = False
        self.microdesc = False
        self.header = {}
        self.authorities = []
        self.signatures = []
        self.footer = {}
        self.method = 1
        self.methods = []

    @property
    def text(self):
        if self._text is None:
            self._text = _decode(self.raw, 0, len(self.raw))
        return self._text

    def piece(self, start, end):
        """text[start:end] without decoding the whole document."""
        if self._text is not None:
            return self._text[start:end]
        return _decode(self.raw, start, end)

    def find(self, needle, start, end=None):
        src = self._text if self._text is not None else self.raw
        if src is self.raw:
            needle = needle.encode("ascii")
        return src.find(needle, start, len(src) if end is None else end)


def _decode(raw, start, end):
    try:
        return raw[start:end].decode("ascii")
    except UnicodeDecodeError as exc:
        at = start + exc.start
        raise ConsensusError("non-ASCII byte 0x%02x (network-status documents are ASCII)" % raw[at],
                             raw.count(b"\n", 0, at) + 1)


def _prepare(text_or_bytes):
    """-> (doc, offset of the first document line, its line number)."""
    if isinstance(text_or_bytes, (bytes, bytearray, memoryview)):
        raw = bytes(text_or_bytes)
        # the preamble (header and authorities) ends before the first router or footer line
        cut = raw.find(b"\nr ")
        if cut < 0:
            cut = len(raw)
        footer = raw.find(b"\ndirectory-", 0, cut)
        if footer >= 0:
            cut = footer
        cut += 64  # and a little of the line there, to recognise it
        doc = _Doc(None, raw)
        text = _decode(raw, 0, cut)
        doc.prefix = text
    elif isinstance(text_or_bytes, str):
        text = text_or_bytes
        if not text.isascii():
            pos = re.search(r"[^\x00-\x7f]", text).start()
            raise ConsensusError("non-ASCII character %r (network-status documents are ASCII)"
                                 % text[pos], text.count("\n", 0, pos) + 1)
        doc = _Doc(text, None)
        doc.prefix = text
    else:
        raise TypeError("consensus must be str or bytes, not %s" % type(text_or_bytes).__name__)
    pos = 0
    lineno = 1
    # CollecTor '@type' annotations and leading blank lines
    while pos < len(text) and (text.startswith("@", pos) or text.startswith("\n", pos)):
        nl = text.find("\n", pos)
        pos = len(text) if nl < 0 else nl + 1
        lineno += 1
    if not text.startswith("network-status-version", pos):
        raise ConsensusError("a network-status document starts with 'network-status-version'", lineno)
    return doc, pos, lineno


def _preamble_end(text, pos, lineno):
    """Offset and line of the first router ('r') line, or of the footer if there are none."""
    n = len(text)
    while pos < n:
        if text.startswith("r", pos) and text[pos + 1:pos + 2] in (" ", "\t", "\n", ""):
            return pos, lineno
        if text.startswith("directory-", pos) and _footer_keyword_at(text, pos):
            return pos, lineno
        nl = text.find("\n", pos)
        if nl < 0:
            break
        pos = nl + 1
        lineno += 1
    return n, lineno


def _footer_keyword_at(text, pos):
    nl = text.find("\n", pos)
    keyword = text[pos:nl if nl >= 0 else len(text)].split(" ", 1)[0].split("\t", 1)[0]
    return keyword in ("directory-footer", "directory-signature")


def _find_footer(doc, pos):
    """Offset of the first footer line at or after pos (the document's end if none)."""
    size = len(doc.raw) if doc.raw is not None else len(doc.text)
    while True:
        if doc.piece(pos, pos + 10) == "directory-" and _footer_keyword_at(doc.piece(pos, pos + 25), 0):
            return pos
        hit = doc.find("\ndirectory-", pos)
        if hit < 0:
            return size
        pos = hit + 1


# --------------------------------------------------------------------------- header

def _parse_header_items(doc, items):
    seen = {}
    header = doc.header
    for lineno, keyword, args, obj, _start in items:
        spec = _HEADER_FIELDS.get(keyword)
        if spec is None:
            if keyword in _ROUTER_KEYWORDS or keyword in _FOOTER_KEYWORDS:
                raise ConsensusError("'%s' line is out of place in the header" % keyword, lineno)
            continue  # unknown keywords are ignored (dir-spec 1.2)
        if keyword in seen and not spec[3]:
            raise ConsensusError("network-status documents have at most one '%s' line (first on line %d)"
                                 % (keyword, seen[keyword]), lineno)
        seen.setdefault(keyword, lineno)
        if obj is not None:
            raise ConsensusError("'%s' takes no object" % keyword, lineno)
        try:
            spec[4](doc, args, header)
        except _FieldError as exc:
            raise ConsensusError("%s: %s" % (keyword, exc), lineno)
    first = items[0] if items else None
    if not first or first[1] != "network-status-version":
        raise ConsensusError("a network-status document starts with 'network-status-version'",
                             first[0] if first else None)
    if len(items) < 2 or items[1][1] != "vote-status":
        raise ConsensusError("'vote-status' must follow 'network-status-version'",
                             items[1][0] if len(items) > 1 else items[0][0])
    missing = []
    for keyword, (in_vote, in_consensus, mandatory, _multiple, _read) in _HEADER_FIELDS.items():
        applies = in_vote if doc.is_vote else in_consensus
        if keyword in seen and not applies:
            raise ConsensusError("'%s' does not belong in a %s" % (keyword, "vote" if doc.is_vote else "consensus"),
                                 seen[keyword])
        if mandatory and applies and keyword not in seen:
            missing.append(keyword)
    if missing:
        raise ConsensusError("the header lacks mandatory line(s): %s" % ", ".join(missing),
                             items[-1][0])
    if "params" in seen and not _meets_method(doc, 7):
        raise ConsensusError("'params' appears only with consensus-method 7 or later", seen["params"])
    va, fu, vu = (_dirdoc.to_epoch(header[k]) for k in ("valid_after", "fresh_until", "valid_until"))
    if not va < fu:
        raise ConsensusError("fresh-until must be later than valid-after", seen["fresh-until"])
    if not va < vu:
        raise ConsensusError("valid-until must be later than valid-after", seen["valid-until"])


def _meets_method(doc, method):
    if doc.is_vote:
        return any(m >= method for m in (doc.methods or [1]))
    return doc.method >= method


# How each header line is read: a function (doc, args, header) that fills header (and doc); see
# _HEADER_FIELDS.  Most are _set(key, read) or _add(key, read): header[key] = read(args), or read(args)
# appended to the list header[key].

def _set(key, read):
    def parse(_doc, args, header):
        header[key] = read(args)
    return parse


def _add(key, read):
    def parse(_doc, args, header):
        header.setdefault(key, []).append(read(args))
    return parse


def _network_status_version(doc, args, header):
    version, _sep, flavor = args.partition(" ")
    if not version.isdigit():
        raise _FieldError("version must be a number, got %r" % args)
    if int(version) != 3:
        raise _FieldError("only version 3 documents are supported, got %r" % version)
    flavor = flavor.strip() or "ns"
    if flavor not in ("ns", "microdesc"):
        raise _FieldError("unsupported flavor %r (supported: ns, microdesc)" % flavor)
    doc.microdesc = flavor == "microdesc"
    header["flavor"] = flavor


def _vote_status(doc, args, header):
    if args not in ("consensus", "vote"):
        raise _FieldError("must be 'consensus' or 'vote', got %r" % args)
    doc.is_vote = args == "vote"
    header["vote_status"] = args
    header["is_vote"] = doc.is_vote


def _consensus_method(doc, args, header):
    if not (args.isdigit() and args.isascii()):
        raise _FieldError("must be an integer, got %r" % args)
    doc.method = int(args)
    header["consensus_method"] = doc.method


def _consensus_methods(doc, args, header):
    methods = []
    for entry in args.split(" "):
        if not (entry.isdigit() and entry.isascii()):
            raise _FieldError("must be a list of integers, got %r" % args)
        methods.append(int(entry))
    doc.methods = methods
    header["consensus_methods"] = methods


def _voting_delay(args):
    parts = args.split(" ")
    if len(parts) != 2 or not all(p.isdigit() and p.isascii() for p in parts):
        raise _FieldError("must be two integers (VoteSeconds DistSeconds), got %r" % args)
    return {"vote_seconds": int(parts[0]), "dist_seconds": int(parts[1])}


def _recommended_versions(args):
    versions = []
    if args:  # tor writes an empty line when it recommends nothing
        for entry in args.split(","):
            if not _VERSION_RE.match(entry):
                raise _FieldError("%r is not a tor version" % entry)
            versions.append(entry)
    return versions


def _package(args):
    parts = args.split(" ", 3)
    if len(parts) < 3:
        raise _FieldError("must be 'PackageName Version URL [digests]', got %r" % args)
    digests = dict(_mappings(parts[3], "package")) if len(parts) == 4 else {}
    return {"name": parts[0], "version": parts[1], "url": parts[2], "digests": digests}


def _known_flags(args):
    return [flag for flag in args.split(" ") if flag]


def _flag_thresholds(args):
    thresholds = {}
    for key, val in _mappings(args.strip(), "flag-thresholds"):
        try:
            if val.endswith("%"):
                thresholds[key] = float(val[:-1]) / 100.0
            elif "." in val:
                thresholds[key] = float(val)
            else:
                thresholds[key] = int(val)
        except ValueError:
            raise _FieldError("value for %r is not a number: %r" % (key, val))
    return thresholds


def _key_values(keyword):
    return lambda args: dict(_mappings(args, keyword))


def _participate(_args):
    return True


def _sr_value(args):
    parts = args.split(" ")
    if len(parts) != 2 or not (parts[0].isdigit() and parts[0].isascii()) or not _B64_VALUE.match(parts[1]):
        raise _FieldError("must be 'NumReveals Value' (an integer and base64), got %r" % args)
    return {"num_reveals": int(parts[0]), "value": parts[1]}


def _sr_commit(args):
    parts = args.split()
    if len(parts) < 4 or not parts[0].isdigit():
        raise _FieldError("must be 'Version AlgName Identity Commit [Reveal]', got %r" % args)
    return {"version": int(parts[0]), "algorithm": parts[1], "identity": parts[2],
            "commit": parts[3], "reveal": parts[4] if len(parts) > 4 else None}


# header keywords: (in votes, in consensuses, mandatory, may repeat, how the line is read)
_HEADER_FIELDS = {
    "network-status-version": (True, True, True, False, _network_status_version),
    "vote-status": (True, True, True, False, _vote_status),
    "consensus-methods": (True, False, False, False, _consensus_methods),
    "consensus-method": (False, True, False, False, _consensus_method),
    "published": (True, False, True, False, _set("published", _timestamp)),
    "valid-after": (True, True, True, False, _set("valid_after", _timestamp)),
    "fresh-until": (True, True, True, False, _set("fresh_until", _timestamp)),
    "valid-until": (True, True, True, False, _set("valid_until", _timestamp)),
    "voting-delay": (True, True, True, False, _set("voting_delay", _voting_delay)),
    "client-versions": (True, True, False, False, _set("client_versions", _recommended_versions)),
    "server-versions": (True, True, False, False, _set("server_versions", _recommended_versions)),
    "package": (True, True, False, True, _add("packages", _package)),
    "known-flags": (True, True, True, False, _set("known_flags", _known_flags)),
    "flag-thresholds": (True, False, False, False, _set("flag_thresholds", _flag_thresholds)),
    "shared-rand-participate": (True, False, False, False, _set("shared_rand_participate", _participate)),
    "shared-rand-commit": (True, False, False, True, _add("shared_rand_commits", _sr_commit)),
    "shared-rand-previous-value": (True, True, False, False, _set("shared_rand_previous", _sr_value)),
    "shared-rand-current-value": (True, True, False, False, _set("shared_rand_current", _sr_value)),
    "bandwidth-file-headers": (True, False, False, False,
                               _set("bandwidth_file_headers", _key_values("bandwidth-file-headers"))),
    "bandwidth-file-digest": (True, False, False, False,
                              _set("bandwidth_file_digest", _key_values("bandwidth-file-digest"))),
    "recommended-client-protocols": (True, True, False, False, _set("recommended_client_protocols", _protocols)),
    "recommended-relay-protocols": (True, True, False, False, _set("recommended_relay_protocols", _protocols)),
    "required-client-protocols": (True, True, False, False, _set("required_client_protocols", _protocols)),
    "required-relay-protocols": (True, True, False, False, _set("required_relay_protocols", _protocols)),
    "params": (True, True, False, False, _set("params", lambda args: _int_mappings(args, "params"))),
}


# --------------------------------------------------------------------------- authorities

_SHARED_RAND_KEYWORDS = ("shared-rand-participate", "shared-rand-commit", "shared-rand-previous-value",
                         "shared-rand-current-value")


def _parse_authority_items(doc, items, text):
    entries = []
    current = None
    for item in items:
        lineno, keyword, args, obj, start = item
        if keyword == "dir-source":
            current = {"items": [], "cert_start": None, "line": lineno}
            entries.append(current)
        elif current is None:
            raise ConsensusError("authority entries start with 'dir-source', got '%s'" % keyword, lineno)
        if keyword in _HEADER_FIELDS and keyword not in _SHARED_RAND_KEYWORDS:
            raise ConsensusError("'%s' belongs in the header, not among authority entries" % keyword, lineno)
        if keyword in _FOOTER_KEYWORDS:
            raise ConsensusError("'%s' line is out of place among authority entries" % keyword, lineno)
        if keyword == "dir-key-certificate-version":
            current["cert_start"] = (start, lineno, len(current["items"]))
        current["items"].append(item)
    if doc.is_vote and len(entries) != 1:
        raise ConsensusError("a vote has exactly one authority entry, got %d" % len(entries),
                             entries[1]["line"] if len(entries) > 1 else None)
    for entry in entries:
        doc.authorities.append(_authority(doc, entry, text))


def _authority(doc, entry, text):
    items, cert = _authority_certificate(doc, entry, text)
    result, seen = _authority_lines(doc, items)
    required = ["dir-source"]
    if not result["is_legacy"]:
        required.append("contact")
        if not doc.is_vote:
            required.append("vote-digest")
    for keyword in required:
        if keyword not in seen:
            raise ConsensusError("authority entry for %s lacks a '%s' line" % (result.get("nickname"), keyword),
                                 entry["line"])
    if doc.is_vote and "vote-digest" in seen:
        raise ConsensusError("a vote's authority entry has no 'vote-digest'", seen["vote-digest"])
    if not doc.is_vote and "legacy-dir-key" in seen:
        raise ConsensusError("consensus authority entries have no 'legacy-dir-key'", seen["legacy-dir-key"])
    result.setdefault("contact", None)
    result.setdefault("vote_digest", None)
    if doc.is_vote:
        result["key_certificate"] = cert
        result.setdefault("legacy_dir_key", None)
    result["is_known_authority"] = _dirauths.is_known_authority(result["v3ident"])
    return result


def _authority_certificate(doc, entry, text):
    """An authority entry's items -> (its items before the key certificate, the certificate or None)."""
    items = entry["items"]
    if entry["cert_start"] is None:
        if doc.is_vote:
            raise ConsensusError("a vote's authority entry must include its key certificate", entry["line"])
        return items, None
    start, cert_line, index = entry["cert_start"]
    last = items[-1]
    if doc.is_vote is False:
        raise ConsensusError("consensus authority entries carry no key certificate", cert_line)
    if last[1] != "dir-key-certification":
        raise ConsensusError("key certificate must end with 'dir-key-certification'", last[0])
    end = text.find("\n-----END SIGNATURE-----", last[4])
    end = len(text) if end < 0 else end + len("\n-----END SIGNATURE-----") + 1
    try:
        parsed = _rsa._parse_one_certificate(text[start:end], cert_line)
    except _rsa.CertificateError as exc:
        raise ConsensusError("key certificate: %s" % exc.reason, exc.line)
    cert = dict((k, v) for k, v in parsed.items() if not k.startswith("_") and k != "line")
    cert.setdefault("address", None)
    cert.setdefault("dir_port", None)
    return items[:index], cert


def _authority_lines(doc, items):
    """An authority entry's lines (without its certificate) -> (values, {keyword: line number})."""
    seen = {}
    result = {}
    for lineno, keyword, args, _obj, _start in items:
        if keyword in _AUTHORITY_KEYWORDS:
            if keyword in seen:
                raise ConsensusError("authority entries have at most one '%s' line" % keyword, lineno)
            seen[keyword] = lineno
        try:
            if keyword == "dir-source":
                result.update(_dir_source(args))
            elif keyword == "contact":
                result["contact"] = args
            elif keyword in ("vote-digest", "legacy-dir-key"):
                if not _HEX40.match(args):
                    raise _FieldError("must be 40 hex digits, got %r" % args)
                result[keyword.replace("-", "_")] = args.upper()
            elif keyword in _SHARED_RAND_KEYWORDS and doc.is_vote:
                _HEADER_FIELDS[keyword][4](doc, args, result)  # read as in the header
        except _FieldError as exc:
            raise ConsensusError("%s: %s" % (keyword, exc), lineno)
    return result, seen


def _dir_source(args):
    parts = args.split(" ")
    if len(parts) < 6:
        raise _FieldError("must have six values (nickname identity hostname address dirport orport), got %r" % args)
    nickname, v3ident, hostname, address, dir_port, or_port = parts[:6]
    is_legacy = nickname.endswith("-legacy")
    base = nickname[:-7] if is_legacy else nickname
    if not _NICKNAME_RE.match(base):
        raise _FieldError("invalid authority nickname %r" % nickname)
    if not _HEX40.match(v3ident):
        raise _FieldError("authority identity must be 40 hex digits, got %r" % v3ident)
    if not hostname:
        raise _FieldError("authority hostname is blank")
    if not _dirdoc.valid_ipv4(address):
        raise _FieldError("authority address %r is not an IPv4 address" % address)
    if not _dirdoc.valid_port(dir_port, allow_zero=True):
        raise _FieldError("authority DirPort %r is invalid" % dir_port)
    if not _dirdoc.valid_port(or_port):
        raise _FieldError("authority ORPort %r is invalid" % or_port)
    return {"nickname": nickname, "v3ident": v3ident.upper(), "hostname": hostname, "address": address,
            "dir_port": None if dir_port == "0" else int(dir_port), "or_port": int(or_port),
            "is_legacy": is_legacy}


# --------------------------------------------------------------------------- footer

def _parse_footer_items(doc, items, offset):
    footer = doc.footer
    if not items:
        raise ConsensusError("the document has no 'directory-signature'", None)
    first = items[0]
    if _meets_method(doc, 9):
        if first[1] != "directory-footer":
            raise ConsensusError("with consensus-method 9 or later the footer starts with 'directory-footer'",
                                 first[0])
    elif first[1] != "directory-signature":
        raise ConsensusError("before consensus-method 9 the footer starts with 'directory-signature'", first[0])
    seen = {}
    in_signatures = False
    for lineno, keyword, args, obj, start in items:
        if in_signatures and keyword != "directory-signature":
            raise ConsensusError("only signatures may follow 'directory-signature', got '%s'" % keyword, lineno)
        if keyword in _ROUTER_KEYWORDS or keyword in _HEADER_FIELDS or keyword in _AUTHORITY_KEYWORDS:
            raise ConsensusError("'%s' line is out of place in the footer" % keyword, lineno)
        if keyword in ("directory-footer", "bandwidth-weights"):
            if keyword in seen:
                raise ConsensusError("at most one '%s' line" % keyword, lineno)
            seen[keyword] = lineno
            if obj is not None:
                raise ConsensusError("'%s' takes no object" % keyword, lineno)
        if keyword == "directory-footer":
            if args:
                raise ConsensusError("'directory-footer' takes no arguments, got %r" % args, lineno)
        elif keyword == "bandwidth-weights":
            if doc.is_vote:
                raise ConsensusError("votes have no 'bandwidth-weights'", lineno)
            try:
                footer["bandwidth_weights"] = _int_mappings(args, keyword)
            except _FieldError as exc:
                raise ConsensusError("%s: %s" % (keyword, exc), lineno)
        elif keyword == "directory-signature":
            if not in_signatures:
                doc.signed_end = offset + start + len("directory-signature ")
            in_signatures = True
            doc.signatures.append(_signature(args, obj, lineno))
    if not doc.signatures:
        raise ConsensusError("the document has no 'directory-signature'", items[-1][0])
    if doc.is_vote and len(doc.signatures) != 1:
        raise ConsensusError("a vote has exactly one 'directory-signature'", doc.signatures[1]["line"])


def _signature(args, obj, lineno):
    parts = args.split(" ")
    if len(parts) == 2:
        algorithm, identity, key_digest = "sha1", parts[0], parts[1]
    elif len(parts) == 3:
        algorithm, identity, key_digest = parts
    else:
        raise ConsensusError("'directory-signature' must be [Algorithm] identity signing-key-digest, got %r"
                             % args, lineno)
    if not _HEX40.match(identity):
        raise ConsensusError("signature identity must be 40 hex digits, got %r" % identity, lineno)
    if not _HEX40.match(key_digest):
        raise ConsensusError("signing-key digest must be 40 hex digits, got %r" % key_digest, lineno)
    if obj is None or obj[0] != "SIGNATURE":
        raise ConsensusError("'directory-signature' must be followed by a SIGNATURE object", lineno)
    return {"identity": identity.upper(), "signing_key_digest": key_digest.upper(), "algorithm": algorithm,
            "line": lineno, "_signature": _decode_object(obj, lineno + 1)}


# --------------------------------------------------------------------------- routers

# The router fields, in the order of a router's keys: the field, the documents it belongs to (the
# flavours ns and md, or "vote": votes of either flavour) and how its value is made, a Python
# expression over
#   * the entry's values, named as the groups of the entry patterns: nick ident digest date time
#     address or_port dir_port alines s v pr bw unmeasured p (strings as matched; '' or None for an
#     absent line; bw is the Bandwidth as an int), and measured id_type identifier m_hashes, which only
#     the general path reads (None elsewhere);
#   * the lookups of _Routers (ports, flags, versions, version_lines, protocols, policies) and the
#     helpers in _BUILD_GLOBALS.
# Every path builds its routers from this table, with functions compiled from it once (_builder):
# a new field is one line here, plus where its value is read.
_ROUTER_TABLE = (
    ("nickname", "ns md", "nick"),
    ("fingerprint", "ns md", "a2b(ident + '=').hex().upper()"),
    ("digest", "ns", "a2b(digest + '=').hex().upper()"),
    ("microdescriptor_digest", "md", "digest"),
    ("published", "ns md", "date + 'T' + time + 'Z'"),  # _dirdoc.iso(), inline
    ("address", "ns md", "address"),
    ("or_port", "ns md", "ports[or_port]"),
    ("dir_port", "ns md", "ports[dir_port]"),
    ("or_addresses", "ns md", "or_addresses(alines) if alines else []"),
    ("flags", "ns md", "flags[s]"),
    ("version", "ns md", "versions[v]"),
    ("version_line", "ns md", "version_lines[v]"),
    ("protocols", "ns md", "protocols[pr]"),
    ("bandwidth", "ns md", "bw"),
    ("measured", "ns md", "measured"),
    ("unmeasured", "ns md", "bool(unmeasured)"),
    ("exit_policy", "ns", "policies[p]"),
    ("identifier_type", "vote", "id_type"),
    ("identifier", "vote", "identifier"),
    ("microdescriptor_hashes", "vote", "m_hashes"),
)
ROUTER_FIELDS_NS = tuple(f for f, docs, _expr in _ROUTER_TABLE if "ns" in docs.split())
ROUTER_FIELDS_MICRODESC = tuple(f for f, docs, _expr in _ROUTER_TABLE if "md" in docs.split())
ROUTER_FIELDS_VOTE_EXTRA = tuple(f for f, docs, _expr in _ROUTER_TABLE if docs == "vote")
ROUTER_FIELDS = tuple(sorted(set(ROUTER_FIELDS_NS + ROUTER_FIELDS_MICRODESC + ROUTER_FIELDS_VOTE_EXTRA)))

# An entry's values, in the order the per-router builders take them.
_ENTRY_VALUES = ("nick", "ident", "digest", "date", "time", "address", "or_port", "dir_port", "alines", "s",
                 "v", "pr", "unmeasured", "p", "bw", "measured", "id_type", "identifier", "m_hashes")
_LOOKUPS = ("ports", "flags", "versions", "version_lines", "protocols", "policies")
_BUILD_GLOBALS = {"a2b": binascii.a2b_base64, "or_addresses": _or_addresses_fast, "bool": bool}
_BUILDERS = {}


def _builder(fields, given, per_router):
    """A maker of router dicts with the keys `fields`, compiled from _ROUTER_TABLE once per shape.

    Returns (make, names): make(**lookups) gives the function.  per_router: it takes one entry's
    values, a tuple in the order of `given` (names), and returns its dict.  Otherwise it takes the
    columns of the values `names` (the part of `given` that the fields use, in that order) and
    returns the list of dicts.  Values the fields use that are not given are None.
    """
    key = (fields, given, per_router)
    if key not in _BUILDERS:
        if len(_BUILDERS) > 64:
            _BUILDERS.clear()
        exprs = dict((f, expr) for f, _docs, expr in _ROUTER_TABLE)
        used = set()
        for field in fields:
            used.update(compile(exprs[field], field, "eval").co_names)
        names = tuple(n for n in given if n in used) or given[:1]  # one column at least: one dict a router
        display = "{%s}" % ", ".join("%r: %s" % (f, exprs[f]) for f in fields)
        lines = ["def make(%s):" % ", ".join(_LOOKUPS),
                 "    def build(%s):" % ("values" if per_router else "columns")]
        lines += ["        %s = None" % n for n in _ENTRY_VALUES if n in used and n not in given]
        if per_router:
            lines += ["        (%s,) = values" % ", ".join(n if n in used else "_" for n in given),
                      "        return %s" % display]
        else:
            lines += ["        return [%s for (%s,) in zip(*columns)]" % (display, ", ".join(names))]
        lines += ["    return build", ""]
        namespace = dict(_BUILD_GLOBALS)
        # the source is made of _ROUTER_TABLE's expressions and names only (fields are checked against it)
        exec(compile("\n".join(lines), "<router builder>", "exec"), namespace)  # pylint: disable=exec-used
        _BUILDERS[key] = (namespace["make"], names)
    return _BUILDERS[key]


class _Routers(object):
    """Router-section state shared by the fast and the general path."""

    def __init__(self, doc, flags, fingerprints, nicknames, min_bandwidth, limit, summary_only):
        self.doc = doc
        self.count = 0
        self.kept = []
        self.matched = 0
        self.scache = {}  # s value -> [flags, count, weight, passes flag filter]
        self.vcache = {}  # v value -> [version, version_line, count]
        self.pcache = {None: {}, "": {}}  # pr value -> protocols dict
        self.polcache = {None: None, "": None}  # p value -> policy string
        self.dates = set()
        self.cacc = {}  # s value -> routers
        self.wacc = {}  # s value -> consensus weight
        self.lookups = {"ports": {}, "flags": {}, "versions": {None: None, "": None},
                        "version_lines": {None: None, "": None}, "protocols": self.pcache,
                        "policies": self.polcache}
        self.fields = None
        self.builders = {}
        self.build_row = None
        self.no_version = 0
        self.weight = 0
        self.want_flags = frozenset(flags) if flags else None
        self.want_fp = None
        if fingerprints:
            self.want_fp = set()
            for fp in fingerprints:
                fp = fp.strip().lstrip("$").upper()
                if not _HEX40.match(fp):
                    raise ValueError("fingerprint filter %r is not 40 hex digits" % fp)
                self.want_fp.add(binascii.b2a_base64(binascii.a2b_hex(fp)).decode("ascii")[:27])
        self.want_nick = set(n.lower() for n in nicknames) if nicknames else None
        self.min_bw = min_bandwidth
        self.limit = limit
        self.collect = not summary_only and (limit is None or limit > 0)
        self.filtering = (self.want_flags is not None or self.want_fp is not None
                          or self.want_nick is not None or min_bandwidth is not None)

    def router_fields(self):
        """The keys of the routers returned: the fields asked for, or every field of this document."""
        if self.fields is not None:
            return tuple(dict.fromkeys(self.fields))
        doc = self.doc
        flavour = "md" if doc.microdesc else "ns"
        return tuple(f for f, docs, _expr in _ROUTER_TABLE
                     if flavour in docs.split() or (docs == "vote" and doc.is_vote))

    def builder(self, given, per_router):
        """The function building this document's routers from entry values (see _builder)."""
        key = (given, per_router)
        if key not in self.builders:
            make, names = _builder(self.router_fields(), given, per_router)
            self.builders[key] = (make(**self.lookups), names)
        return self.builders[key]

    def add_ports(self, values):
        """Port strings (as matched) into the lookup ports: int, None for DirPort 0."""
        ports = self.lookups["ports"]
        for value in values:
            if value not in ports:
                ports[value] = None if value == "0" else int(value)

    def row_builder(self):
        """The function building one router from its values in _ENTRY_VALUES order."""
        if self.build_row is None:
            self.build_row = self.builder(_ENTRY_VALUES, True)[0]
        return self.build_row

    def flag_entry(self, key):
        flags = _flags(key.lstrip(" \t"))
        passes = self.want_flags is None or self.want_flags.issubset(flags)
        entry = [flags, 0, 0, passes]  # counts live in cacc / wacc
        self.scache[key] = entry
        self.lookups["flags"][key] = flags
        return entry

    def version_entry(self, key):
        entry = [_version(key.lstrip(" \t")), key.lstrip(" \t"), 0]
        self.vcache[key] = entry
        self.lookups["versions"][key] = entry[0]
        self.lookups["version_lines"][key] = entry[1]
        return entry

    def protocols(self, key):
        value = _protocols(key.lstrip(" \t"))
        self.pcache[key] = value
        return value

    def policy(self, key):
        value = _policy(key.lstrip(" \t"))
        self.polcache[key] = value
        return value


def _line_of(doc, pos):
    """Line number of offset pos in the router section (incremental newline counting)."""
    base_pos, base_line = doc.line_mark
    if pos < base_pos:
        base_pos, base_line = doc.router_start, doc.router_line
    line = base_line + doc.text.count("\n", base_pos, pos)
    doc.line_mark = (pos, line)
    return line


def _group_names(pattern):
    """The names of a pattern's groups, in the order of its findall() and groups() tuples."""
    return tuple(sorted(pattern.groupindex, key=pattern.groupindex.get))


def _routers_bulk(doc, st, start):
    """Router section from start; returns the footer offset.

    Works in chunks of about _CHUNK characters: one findall() gives every entry of the chunk
    as a tuple of strings (validated by the regular-expression engine), the distinct values
    are validated once, and the output is built column by column.  A chunk holding any entry
    the canonical pattern does not cover (or any invalid value) is redone entry by entry by
    _routers_iter(), which reports errors with their line numbers.
    """
    bulk = _MD_BULK if doc.microdesc else _NS_BULK
    names = _group_names(bulk)
    cs = start
    while True:
        nxt = doc.find("\nr ", cs + _CHUNK)
        if nxt < 0:
            ce = _find_footer(doc, cs)
        else:
            ce = nxt + 1
        if cs < ce and not _bulk_chunk(st, names, bulk.findall(doc.piece(cs, ce))):
            _routers_iter(doc, st, cs, ce)
        if nxt < 0:
            return ce
        cs = ce


def _bulk_chunk(st, names, rows):
    """One chunk's findall() rows: checked, counted, selected and built.  False (nothing done) when
    the chunk is to be redone entry by entry."""
    if not rows:
        return False
    cols = dict(zip(names, zip(*rows)))
    if any(cols["other"]) or not _bulk_check(st, cols):
        return False  # some entry is not in the canonical shape, or some value is invalid
    _bulk_count(st, cols)
    selected = _bulk_select(st, cols)
    if selected is None or selected:
        _bulk_build(st, cols, selected)
    return True


def _bulk_check(st, cols):
    """Validate the chunk's distinct dates, flags, versions, protocols and policies (cached)."""
    scache, vcache, pcache, polcache, dates = st.scache, st.vcache, st.pcache, st.polcache, st.dates
    try:
        for value in set(cols["date"]).difference(dates):
            _check_date(value)
            dates.add(value)
        for value in set(cols["s"]).difference(scache):
            st.flag_entry(value)
        for value in set(cols["v"]).difference(vcache):
            if value:
                st.version_entry(value)
        for value in set(cols["pr"]).difference(pcache):
            st.protocols(value)
        for value in set(cols.get("p", ())).difference(polcache):
            st.policy(value)
    except _FieldError:
        return False
    return True


def _bulk_count(st, cols):
    """Count the chunk's routers, weights, flags and versions; cols["bw"] becomes ints (None if absent)."""
    sg, vg, bwg = cols["s"], cols["v"], cols["bw"]
    st.count += len(sg)
    if "" in bwg:
        bw = [int(b) if b else None for b in bwg]
        pairs = [(s, b) for s, b in zip(sg, bw) if b]
    else:
        bw = list(map(int, bwg))
        pairs = zip(sg, bw)
    cols["bw"] = bw
    wacc = st.wacc
    wget = wacc.get
    total = 0
    for s, b in pairs:
        wacc[s] = wget(s, 0) + b
        total += b
    st.weight += total
    cacc = st.cacc
    for s, c in _counter(sg).items():
        cacc[s] = cacc.get(s, 0) + c
    vcache = st.vcache
    for v, c in _counter(vg).items():
        if v:
            vcache[v][2] += c
        else:
            st.no_version += c


def _bulk_select(st, cols):
    """Indexes of the chunk's routers to return (None: all of them); counts the matches."""
    n = len(cols["nick"])
    sel = None
    if st.filtering:
        scache, want_fp, want_nick, min_bw = st.scache, st.want_fp, st.want_nick, st.min_bw
        sg, ident, nick, bw = cols["s"], cols["ident"], cols["nick"], cols["bw"]
        sel = [i for i in range(n)
               if scache[sg[i]][3]
               and (want_fp is None or ident[i] in want_fp)
               and (want_nick is None or nick[i].lower() in want_nick)
               and (min_bw is None or (bw[i] or 0) >= min_bw)]
        st.matched += len(sel)
    else:
        st.matched += n
    if not st.collect:
        return []
    if st.limit is not None:
        room = st.limit - len(st.kept)
        if room <= 0:
            return []
        if sel is None:
            if room < n:
                sel = list(range(room))
        else:
            sel = sel[:room]
    return sel


def _bulk_build(st, cols, selected):
    """The routers of the chunk (those selected), column by column."""
    build, names = st.builder(tuple(cols), False)
    columns = [cols[name] for name in names]
    if selected is not None:
        columns = [[col[i] for i in selected] for col in columns]
    if "or_port" in names or "dir_port" in names:
        st.add_ports(set(cols["or_port"]).union(cols["dir_port"]))
    st.kept.extend(build(columns))


def _counter(values):
    counts = {}
    get = counts.get
    for value in values:
        counts[value] = get(value, 0) + 1
    return counts


def _entry_picker(pattern):
    """m.groups() + (None,) -> the entry's values in _ENTRY_VALUES order, through 'bw' (None where the
    pattern has no such group)."""
    names = _group_names(pattern)
    last = _ENTRY_VALUES.index("bw") + 1
    return operator.itemgetter(*[names.index(n) if n in names else len(names) for n in _ENTRY_VALUES[:last]])


_PICK = {_NS_FAST: _entry_picker(_NS_FAST), _MD_FAST: _entry_picker(_MD_FAST)}
_GENERAL_ONLY = (None,) * (len(_ENTRY_VALUES) - _ENTRY_VALUES.index("bw") - 1)


def _routers_iter(doc, st, start, end):
    """Entry by entry: canonical entries by regex, any others through _routers_general()."""
    text = doc.text
    pattern = _MD_FAST if doc.microdesc else _NS_FAST
    pick = _PICK[pattern]
    build = st.row_builder()
    scache, vcache, pcache, polcache, dates = st.scache, st.vcache, st.pcache, st.polcache, st.dates
    ports = st.lookups["ports"]
    pos = start
    m = None
    field = None
    try:
        for m in pattern.finditer(text, start, end):
            if m.start() != pos:
                _routers_general(doc, st, pos, m.start())
            pos = m.end()
            values = pick(m.groups() + (None,))
            nick, ident, _dig, date, _tm, _addr, orp, dirp, _alines, sg, vg, prg, _unm, polg, bwg = values
            if date not in dates:
                field = "date"
                _check_date(date)
                dates.add(date)
            field = "s"
            se = scache.get(sg) or st.flag_entry(sg)
            ve = None
            if vg is not None:
                field = "v"
                ve = vcache.get(vg) or st.version_entry(vg)
            if prg not in pcache:
                field = "pr"
                st.protocols(prg)
            if polg not in polcache:
                field = "p"
                st.policy(polg)
            field = None
            bw = None if bwg is None else int(bwg)
            _account(st, sg, ve, bw)
            if _wanted(st, se, bw, ident, nick):
                if orp not in ports or dirp not in ports:
                    st.add_ports((orp, dirp))
                st.kept.append(build(values[:-1] + (bw,) + _GENERAL_ONLY))
    except _FieldError as exc:
        where = m.start(field) if field is not None and m.start(field) >= 0 else m.start()
        raise ConsensusError("router %s: %s" % (m.group("nick"), exc), _line_of(doc, where))
    if pos != end:
        _routers_general(doc, st, pos, end)


def _account(st, skey, ve, bw):
    st.count += 1
    st.cacc[skey] = st.cacc.get(skey, 0) + 1
    if bw:
        st.wacc[skey] = st.wacc.get(skey, 0) + bw
        st.weight += bw
    if ve is None:
        st.no_version += 1
    else:
        ve[2] += 1


def _wanted(st, se, bw, ident, nick):
    if not se[3] or (st.want_fp is not None and ident not in st.want_fp) \
            or (st.want_nick is not None and nick.lower() not in st.want_nick) \
            or (st.min_bw is not None and (bw or 0) < st.min_bw):
        return False
    st.matched += 1
    return st.collect and (st.limit is None or len(st.kept) < st.limit)


def _routers_general(doc, st, start, end):
    """Any router entries: line by line, Stem's rules, same results as the fast path."""
    text = doc.text
    items = _dirdoc.items(text, start, end, _line_of(doc, start), ConsensusError)
    entry = []
    for item in items:
        if item[1] == "r" and entry:
            _router_entry(doc, st, entry)
            entry = []
        entry.append(item)
    if entry:
        _router_entry(doc, st, entry)


def _router_entry(doc, st, items):
    """One router entry, any shape: its lines checked and read into the entry's values, then built."""
    lines = _entry_lines(doc, items)
    values = _entry_r_line(doc, lines)
    se, ve = _entry_other_lines(doc, st, lines, values)
    _account(st, values["s"], ve, values["bw"])
    if _wanted(st, se, values["bw"], values["ident"], values["nick"]):
        st.add_ports((values["or_port"], values["dir_port"]))
        st.kept.append(st.row_builder()(tuple(map(values.get, _ENTRY_VALUES))))


def _entry_lines(doc, items):
    """An entry's items -> {keyword: [(line number, args)]}, its structure checked."""
    md = doc.microdesc
    first = items[0]
    if first[1] != "r":
        raise ConsensusError("router entries start with an 'r' line, got '%s'" % first[1], first[0])
    lines = {}
    for lineno, keyword, args, obj, _start in items:
        if obj is not None and keyword in _ROUTER_KEYWORDS:
            raise ConsensusError("'%s' takes no object" % keyword, lineno)
        if keyword in _HEADER_FIELDS or keyword in _AUTHORITY_KEYWORDS:
            raise ConsensusError("'%s' line is out of place among router entries" % keyword, lineno)
        if keyword in _FOOTER_KEYWORDS:
            raise ConsensusError("router entries follow the footer's '%s' line" % keyword, lineno)
        lines.setdefault(keyword, []).append((lineno, args))
    single = ("r", "s", "v", "w", "pr") + (("m",) if md else ("p",))
    for keyword in single:
        if len(lines.get(keyword, ())) > 1:
            raise ConsensusError("router entries have at most one '%s' line" % keyword, lines[keyword][1][0])
    for keyword in ("s", "m") if md else ("s",):
        if keyword not in lines:
            raise ConsensusError("router entry lacks its '%s' line" % keyword, first[0])
    return lines


def _entry_r_line(doc, lines):
    """The 'r' line -> the entry's values nick, ident, digest (ns), date, time, address, or_port, dir_port."""
    md = doc.microdesc
    r_line, r_args = lines["r"][0]
    parts = r_args.split(" ")
    want = 7 if md else 8
    if len(parts) < want:
        raise ConsensusError("'r' line must have %d values, got %r" % (want, r_args), r_line)
    if md:
        parts.insert(2, None)
    nick, ident, dig, date, tm, addr, orp, dirp = parts[:8]
    try:
        if not _NICKNAME_RE.match(nick):
            raise _FieldError("invalid nickname %r" % nick)
        for value, what in ((ident, "identity"), (dig, "digest")):
            if value is not None and not _DIGEST20_RE.match(value):
                raise _FieldError("%s %r is not 27 base64 characters (a 20-byte digest)" % (what, value))
        _timestamp(date + " " + tm)
        if not _dirdoc.valid_ipv4(addr):
            raise _FieldError("address %r is not a valid IPv4 address" % addr)
        if not _dirdoc.valid_port(orp):
            raise _FieldError("ORPort %r is invalid" % orp)
        if not _dirdoc.valid_port(dirp, allow_zero=True):
            raise _FieldError("DirPort %r is invalid" % dirp)
    except _FieldError as exc:
        raise ConsensusError("router %s: %s" % (nick, exc), r_line)
    return {"nick": nick, "ident": ident.rstrip("="), "digest": None if md else dig.rstrip("="), "date": date,
            "time": tm, "address": addr, "or_port": orp, "dir_port": dirp}


def _entry_other_lines(doc, st, lines, values):
    """Every other line of the entry, checked, into values (as the entry patterns capture them, and what
    only this path reads); returns the entry's flag and version cache entries."""
    current = None
    try:
        if "a" in lines:
            for current, args in lines["a"]:
                _or_address(args)
            values["alines"] = "".join("a %s\n" % args for _line, args in lines["a"])
        current, s_args = lines["s"][0]
        values["s"] = skey = " " + s_args if s_args else ""
        se = st.scache.get(skey) or st.flag_entry(skey)
        values["bw"] = None
        if "w" in lines:
            current, w_args = lines["w"][0]
            values["bw"], values["measured"], values["unmeasured"] = _bandwidth(w_args)
        ve = None
        if "v" in lines:
            current, v_args = lines["v"][0]
            values["v"] = " " + v_args
            ve = st.vcache.get(values["v"]) or st.version_entry(values["v"])
        if "pr" in lines:
            current, pr_args = lines["pr"][0]
            values["pr"] = " " + pr_args
            if values["pr"] not in st.pcache:
                st.protocols(values["pr"])
        if not doc.microdesc and "p" in lines:
            current, p_args = lines["p"][0]
            values["p"] = " " + p_args
            if values["p"] not in st.polcache:
                st.policy(values["p"])
        _entry_m_lines(doc, lines, values)
        if "id" in lines and not doc.microdesc:
            current, id_args = lines["id"][0]
            values["id_type"], values["identifier"] = _vote_id_line(doc, id_args)
    except _FieldError as exc:
        raise ConsensusError("router %s: %s" % (values["nick"], exc), exc.line or current)
    return se, ve


def _entry_m_lines(doc, lines, values):
    """'m' lines: a microdesc consensus's digest, a vote's hashes.  A _FieldError names its line."""
    if doc.is_vote:
        values["m_hashes"] = []
    if doc.microdesc:
        lineno, mdigest = lines["m"][0]
        if not _DIGEST32_RE.match(mdigest):
            raise _FieldError("microdescriptor digest %r is not 43 base64 characters" % mdigest, lineno)
        values["digest"] = mdigest.rstrip("=")
    elif "m" in lines:
        if not doc.is_vote:
            raise _FieldError("'m' lines appear only in votes and microdesc consensuses", lines["m"][0][0])
        for lineno, m_args in lines["m"]:
            try:
                values["m_hashes"].append(_vote_m_line(m_args))
            except _FieldError as exc:
                raise _FieldError(str(exc), lineno)


def _vote_id_line(doc, args):
    if not doc.is_vote:
        raise _FieldError("'id' lines appear only in votes")
    id_parts = args.split()
    if len(id_parts) < 2:
        raise _FieldError("'id' line needs a key type and a digest, got %r" % args)
    return id_parts[0], id_parts[1]


def _bandwidth(value):
    """'w' line -> (bandwidth, measured, unmeasured), Stem's rules."""
    _check_chars(value)
    entries = value.split(" ")
    if not entries[0].startswith("Bandwidth="):
        raise _FieldError("'w' line must start with Bandwidth=, got %r" % value)
    bandwidth = measured = None
    unmeasured = False
    for entry in entries:
        key, _eq, val = entry.partition("=")
        if key == "Bandwidth":
            if not (val.isdigit() and val.isascii()):
                raise _FieldError("Bandwidth must be a number, got %r" % value)
            bandwidth = int(val)
        elif key == "Measured":
            if not (val.isdigit() and val.isascii()):
                raise _FieldError("Measured must be a number, got %r" % value)
            measured = int(val)
        elif key == "Unmeasured":
            if val != "1":
                raise _FieldError("Unmeasured may only be 1, got %r" % value)
            unmeasured = True
    return bandwidth, measured, unmeasured


def _vote_m_line(value):
    parts = value.split(" ")
    try:
        methods = [int(x) for x in parts[0].split(",")]
    except ValueError:
        raise _FieldError("'m' line must start with comma-separated consensus methods, got %r" % value)
    hashes = {}
    for entry in parts[1:]:
        name, eq, digest = entry.partition("=")
        if not eq:
            raise _FieldError("'m' line digests must be algorithm=digest, got %r" % value)
        hashes[name] = digest
    return {"methods": methods, "hashes": hashes}


# --------------------------------------------------------------------------- public API

def _parse(text_or_bytes, routers=True, flags=None, fingerprints=None, nicknames=None,
           min_bandwidth=None, limit=None, summary_only=False, fields=None, _mode=None):
    doc, pos, lineno = _prepare(text_or_bytes)
    doc.doc_start = pos
    doc.signed_end = None
    prefix = doc.prefix
    router_start, router_line = _preamble_end(prefix, pos, lineno)
    if doc.raw is not None and len(prefix) < len(doc.raw) and router_start >= len(prefix):
        prefix = doc.prefix = doc.text  # an unusual preamble: take the whole document
        router_start, router_line = _preamble_end(prefix, pos, lineno)
    doc.router_start, doc.router_line = router_start, router_line
    doc.line_mark = (router_start, router_line)
    pre = _dirdoc.items(prefix, pos, router_start, lineno, ConsensusError)
    auth_index = len(pre)
    for i, item in enumerate(pre):
        if item[1] == "dir-source":
            auth_index = i
            break
    _parse_header_items(doc, pre[:auth_index])
    _parse_authority_items(doc, pre[auth_index:], prefix)
    doc.prefix = prefix = pre = None
    _check_filter_args(flags, fingerprints, nicknames, min_bandwidth, limit, fields, doc.microdesc, doc.is_vote)
    st = _Routers(doc, flags, fingerprints, nicknames, min_bandwidth, limit, summary_only)
    st.fields = list(fields) if fields is not None else None
    size = len(doc.raw) if doc.raw is not None else len(doc.text)
    if not routers or router_start >= size or doc.piece(router_start, router_start + 1) != "r":
        footer_start = _find_footer(doc, router_start)
    elif doc.is_vote or _mode == "general":
        footer_start = _find_footer(doc, router_start)
        _routers_general(doc, st, router_start, footer_start)
    elif _mode == "iter":
        footer_start = _find_footer(doc, router_start)
        _routers_iter(doc, st, router_start, footer_start)
    else:
        footer_start = _routers_bulk(doc, st, router_start)
    footer = doc.piece(footer_start, size)
    try:
        _parse_footer_items(doc, _dirdoc.items(footer, 0, len(footer), 1, ConsensusError), footer_start)
    except ConsensusError as exc:
        base = _line_of(doc, footer_start) if footer_start > router_start else router_line
        raise ConsensusError(exc.reason, None if exc.line is None else exc.line + base - 1)
    return doc, st


def _check_filter_args(flags, fingerprints, nicknames, min_bandwidth, limit, fields, microdesc, vote):
    for name, value in (("flags", flags), ("fingerprints", fingerprints), ("nicknames", nicknames)):
        if value is not None and (isinstance(value, (str, bytes)) or not all(isinstance(v, str) for v in value)):
            raise ValueError("%s must be a list of strings" % name)
    if min_bandwidth is not None and (not isinstance(min_bandwidth, int) or isinstance(min_bandwidth, bool)):
        raise ValueError("min_bandwidth must be an integer")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise ValueError("limit must be a non-negative integer")
    if fields is not None:
        allowed = ROUTER_FIELDS_MICRODESC if microdesc else ROUTER_FIELDS_NS
        if vote:
            allowed = allowed + ROUTER_FIELDS_VOTE_EXTRA
        unknown = [f for f in fields if f not in allowed]
        if unknown:
            raise ValueError("unknown router field(s) %s for this document; choose from %s"
                             % (", ".join(map(str, unknown)), ", ".join(allowed)))


def parse_consensus(text_or_bytes, *, flags=None, fingerprints=None, nicknames=None, min_bandwidth=None,
                    limit=None, fields=None, summary_only=False, now=None, certs=None, authorities=None,
                    _mode=None):
    """Parse and validate a v3 network-status consensus (or vote); returns a JSON-ready dict.

    Filters apply while parsing: ``flags`` (all required), ``fingerprints`` (hex, '$' optional),
    ``nicknames`` (case-insensitive), ``min_bandwidth`` (consensus weight), ``limit`` (first N
    matches), ``fields`` (router keys to keep), ``summary_only`` (no router list).  Every router
    is still validated and counted in ``router_count`` and ``summary``; ``routers_matched``
    counts those passing the filters (before ``limit``).  ``now`` (epoch seconds or ISO string,
    default the current time) is used for ``summary.is_fresh``/``is_valid``.  With ``certs``
    (the text of a cached-certs file) the signatures are verified: see verify_signatures().
    Raises ConsensusError (line number and reason) for malformed documents, ValueError for
    bad arguments.
    """
    doc, st = _parse(text_or_bytes, True, flags, fingerprints, nicknames, min_bandwidth, limit,
                     summary_only, fields, _mode)
    result = _document_result(doc)
    result["router_count"] = st.count
    result["routers_matched"] = st.matched
    result["summary"] = _summary(doc, st, now)
    if not summary_only:
        result["routers"] = st.kept
    if certs is not None:
        report = _verify(doc, certs, now, authorities)
        result["verification"] = report
        for sig, checked in zip(result["signatures"], report["signatures"]):
            sig["verified"] = checked["verified"]
    return result


def _document_result(doc):
    header = doc.header
    result = {
        "flavor": header["flavor"],
        "vote_status": header["vote_status"],
        "is_vote": doc.is_vote,
    }
    if doc.is_vote:
        result["consensus_methods"] = header.get("consensus_methods", [1])
        result["published"] = header["published"]
        result["flag_thresholds"] = header.get("flag_thresholds", {})
    else:
        result["consensus_method"] = header.get("consensus_method", 1)
    for key in ("valid_after", "fresh_until", "valid_until", "voting_delay"):
        result[key] = header[key]
    result["client_versions"] = header.get("client_versions", [])
    result["server_versions"] = header.get("server_versions", [])
    result["packages"] = header.get("packages", [])
    result["known_flags"] = header["known_flags"]
    for key in ("recommended_client_protocols", "recommended_relay_protocols",
                "required_client_protocols", "required_relay_protocols"):
        result[key] = header.get(key, {})
    result["params"] = header.get("params", {})
    result["shared_rand_previous"] = header.get("shared_rand_previous")
    result["shared_rand_current"] = header.get("shared_rand_current")
    if doc.is_vote:
        for key in ("bandwidth_file_headers", "bandwidth_file_digest"):
            result[key] = header.get(key, {})
    result["authorities"] = doc.authorities
    result["bandwidth_weights"] = doc.footer.get("bandwidth_weights", {})
    result["signatures"] = [
        {"identity": s["identity"], "signing_key_digest": s["signing_key_digest"],
         "algorithm": s["algorithm"], "verified": None}
        for s in doc.signatures]
    return result


def _summary(doc, st, now):
    flags = {}
    weights = {}
    for skey, count in st.cacc.items():
        weight = st.wacc.get(skey, 0)
        for flag in st.scache[skey][0]:
            flags[flag] = flags.get(flag, 0) + count
            weights[flag] = weights.get(flag, 0) + weight
    versions = {}
    for entry in st.vcache.values():
        if entry[2]:
            key = entry[0] if entry[0] is not None else "other"
            versions[key] = versions.get(key, 0) + entry[2]
    if st.no_version:
        versions["unknown"] = versions.get("unknown", 0) + st.no_version
    epoch = _dirdoc.to_epoch(now)
    va, fu, vu = (_dirdoc.to_epoch(doc.header[k]) for k in ("valid_after", "fresh_until", "valid_until"))
    return {
        "routers": st.count,
        "flags": dict(sorted(flags.items())),
        "consensus_weight": {"total": st.weight, "by_flag": dict(sorted(weights.items()))},
        "versions": dict(sorted(versions.items())),
        "is_fresh": va <= epoch < fu,
        "is_valid": va <= epoch < vu,
    }


# --------------------------------------------------------------------------- signatures

def verify_signatures(text_or_bytes, certs_text, *, now=None, authorities=None):
    """Verify a consensus's directory signatures against authority key certificates.

    ``certs_text``: a cached-certs file (str or bytes), or a list of certificates already parsed
    by rsa_verify.parse_certificates().  ``now``: time for the certificate expiry checks
    (epoch seconds or ISO string; default the current time).  ``authorities``: the v3idents
    that count as known authorities (default tor 0.4.9's list, dirauths.py), or the string
    'document' to trust the document's own dir-source entries (private test networks).

    Only the header, authority entries and footer are parsed here (router entries are not
    validated: use parse_consensus(certs=...) for both).  Returns per signature: identity,
    nickname, algorithm, signing_key_digest, is_known_authority, signature_valid (the RSA
    signature matches the document digest), certificate (its checks), verified
    (signature_valid and the certificate ok) and reason; 'majority' is True when more than
    half of the known authorities have a verified signature.
    """
    doc, _st = _parse(text_or_bytes, routers=False)
    return _verify(doc, certs_text, now, authorities)


def _verify(doc, certs, now, authorities):
    parsed = _certificates(certs)
    digests = _signed_digests(doc)
    known = _known_authorities(doc, authorities)
    doc_names = dict((a["v3ident"], a["nickname"]) for a in doc.authorities)
    cert_reports = {}
    by_identity = {}
    for cert in parsed:
        by_identity.setdefault(cert["fingerprint"], []).append(cert)
        cert_reports[id(cert)] = _rsa.check_certificate(cert, now)
    signatures = []
    for sig in doc.signatures:
        entry = _check_signature(sig, digests, by_identity, cert_reports)
        ident = sig["identity"]
        entry["nickname"] = known.get(ident) or _dirauths.nickname_for(ident) or doc_names.get(ident)
        entry["is_known_authority"] = ident in known
        signatures.append(entry)
    signed_known = set(s["identity"] for s in signatures if s["is_known_authority"])
    verified_known = set(s["identity"] for s in signatures if s["is_known_authority"] and s["verified"])
    required = len(known) // 2 + 1
    summary_auth = []
    for ident, name in sorted(known.items(), key=lambda kv: (kv[1] or "", kv[0])):
        summary_auth.append({"identity": ident, "nickname": name, "signed": ident in signed_known,
                             "verified": ident in verified_known})
    return {
        "digests": dict((k, v.hex().upper()) for k, v in digests.items()),
        "signatures": signatures,
        "authorities": summary_auth,
        "known_authorities": len(known),
        "known_authorities_signed": len(verified_known),
        "required": required,
        "majority": len(verified_known) >= required,
        "certificates": [cert_reports[id(c)] for c in parsed],
    }


def _certificates(certs):
    """verify_signatures()'s certs_text: a list of parsed certificates, or a cached-certs text."""
    if isinstance(certs, (list, tuple)):
        return list(certs)
    try:
        return _rsa.parse_certificates(certs)
    except _rsa.CertificateError as exc:
        raise ConsensusError("key certificates: %s" % exc.reason, exc.line)


def _signed_digests(doc):
    """The digests of the signed part of the document, by signature algorithm."""
    if doc.raw is not None:
        signed = doc.raw[doc.doc_start:doc.signed_end]
    else:
        signed = doc.text[doc.doc_start:doc.signed_end].encode("ascii")
    return {"sha1": hashlib.sha1(signed).digest(), "sha256": hashlib.sha256(signed).digest()}


def _known_authorities(doc, authorities):
    """verify_signatures()'s authorities -> {v3ident: nickname or None}."""
    if authorities is None:
        return dict(_dirauths.V3IDENTS)
    if authorities == "document":
        return dict((a["v3ident"], a["nickname"]) for a in doc.authorities if not a["is_legacy"])
    known = {}
    for entry in authorities:
        ident = entry.get("v3ident") if isinstance(entry, dict) else entry
        if not isinstance(ident, str) or not _HEX40.match(ident):
            raise ValueError("authorities must be 40-hex v3idents, got %r" % (ident,))
        known[ident.upper()] = entry.get("nickname") if isinstance(entry, dict) else None
    return known


def _check_signature(sig, digests, by_identity, cert_reports):
    """One directory-signature against the certificates of its identity (nickname and is_known_authority
    are the caller's)."""
    ident = sig["identity"]
    entry = {
        "identity": ident,
        "nickname": None,
        "algorithm": sig["algorithm"],
        "signing_key_digest": sig["signing_key_digest"],
        "is_known_authority": False,
        "signature_valid": False,
        "certificate": None,
        "verified": False,
        "reason": None,
    }
    digest = digests.get(sig["algorithm"])
    cert = None
    for candidate in by_identity.get(ident, ()):
        if candidate.get("signing_key_digest") == sig["signing_key_digest"]:
            cert = candidate
    if digest is None:
        entry["reason"] = "unrecognized signature algorithm %r (ignored, as dir-spec requires)" % sig["algorithm"]
    elif cert is None:
        entry["reason"] = ("no key certificate for this authority" if ident not in by_identity
                           else "no key certificate with signing key %s" % sig["signing_key_digest"])
    else:
        report = cert_reports[id(cert)]
        entry["certificate"] = report
        entry["signature_valid"] = _rsa.rsa_verify_digest(sig["_signature"], cert["_signing_key"], digest)
        if not entry["signature_valid"]:
            entry["reason"] = "signature does not match the document's %s digest" % sig["algorithm"]
        elif not report["ok"]:
            entry["reason"] = "certificate: " + "; ".join(report["problems"])
        else:
            entry["verified"] = True
    return entry
