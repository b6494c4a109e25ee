# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor's MetricsPort: a bounded HTTP GET over a plain socket, the Prometheus text exposition format (0.0.4)
parsed, and the onion-service metrics of a page grouped per service.

This is a private module_utils file of onionlab.tor; its API may change at any time.

The port needs `MetricsPort 127.0.0.1:PORT` and `MetricsPortPolicy accept 127.0.0.1` in torrc, and a tor
with network: with `DisableNetwork 1` tor does not open it at all (measured with tor 0.4.9.11).
tor writes every onion-service metric labelled with the service's address without .onion
(tests/unit/plugins/module_utils/data/metricsport-tor-0.4.9.11.prom is a real page):

    # HELP tor_hs_intro_num_total Total number of introduction received
    # TYPE tor_hs_intro_num_total counter
    tor_hs_intro_num_total{onion="5vt2f6p3...nsid"} 1
    tor_hs_rdv_error_count{onion="5vt2f6p3...nsid",reason="retry"} 0
    tor_hs_intro_circ_build_time_bucket{onion="5vt2f6p3...nsid",le="+Inf"} 6

and repeats `# HELP` / `# TYPE` before each service's block of the same metric.

Every error is a MetricsError (a TorError) with one line of text: a port that is closed, refuses us, is
slow (the whole read has one deadline, not one per recv), answers something other than HTTP 200, sends more
than MAX_BYTES, or sends a page that is not the text format (the line number and what is wrong).
"""

from __future__ import annotations

import math
import re
import socket
import time
from urllib.parse import urlparse

from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

SUGGESTED_EFFORT = "tor_hs_pow_suggested_effort"
MAX_BYTES = 16 * 1024 * 1024      # the body; a real page is ~40 KB for 3 services (~12 KB per service)
MAX_HEADER_BYTES = 64 * 1024
MAX_LINE = 64 * 1024               # one line of the page
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")
ONION_LABEL = "onion"

_NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_BLANK_RE = re.compile(r"[ \t]*")
_FLOAT_RE = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[iI][nN][fF]|[nN][aA][nN])\Z")
_INT_RE = re.compile(r"-?[0-9]{1,19}\Z")
_TOKEN_RE = re.compile(r"[^ \t]+")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n"}
_LINE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}\s+(\S+)')
_LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class MetricsError(TorError):
    """The MetricsPort could not be read, or its page is not the Prometheus text format."""


class MetricsParseError(MetricsError):
    """A page that is not the Prometheus text format: .line is the (1-based) line number."""

    def __init__(self, line, what):
        self.line = line
        self.what = what
        super(MetricsParseError, self).__init__("line %d: %s" % (line, what))


# -- the text format ---------------------------------------------------------------------------------------

class Page(object):
    """A parsed page: samples [(name, {label: value}, value float, timestamp ms or None)] in page order,
    types {family: type} and help {family: text} from # TYPE and # HELP."""

    def __init__(self):
        self.samples = []
        self.types = {}
        self.help = {}

    def family(self, name):
        """The family a sample name belongs to: x for x_bucket/x_sum/x_count of a histogram x, x_sum/x_count of
        a summary x; the name itself otherwise."""
        for suffix, kinds in (("_bucket", ("histogram",)), ("_sum", ("histogram", "summary")),
                              ("_count", ("histogram", "summary"))):
            if name.endswith(suffix) and self.types.get(name[:-len(suffix)]) in kinds:
                return name[:-len(suffix)]
        return name


def parse_float(text):
    """A sample value as the format writes it: Go's float syntax, NaN, +Inf, -Inf (no '_', no hex)."""
    if not _FLOAT_RE.match(text):
        raise ValueError("not a number: %r" % (text[:40],))
    return float(text)


def _label_value(line, pos, lineno):
    """The label value starting after the opening quote at pos: (value, position after the closing quote)."""
    out = []
    i = pos
    n = len(line)
    while i < n:
        c = line[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            if i + 1 >= n:
                break
            nxt = line[i + 1]
            # \\, \" and \n are the format's escapes; Prometheus keeps any other backslash as written
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    raise MetricsParseError(lineno, "label value not closed by '\"'")


def parse_sample(line, lineno=1):
    """One sample line -> (name, labels, value, timestamp or None), or MetricsParseError."""
    m = _NAME_RE.match(line)
    if not m:
        raise MetricsParseError(lineno, "not a metric name at the start of %r" % (line[:60],))
    name = m.group(0)
    pos = m.end()
    labels = {}
    if pos < len(line) and line[pos] == "{":
        pos += 1
        while True:
            pos = _BLANK_RE.match(line, pos).end()
            if pos < len(line) and line[pos] == "}":
                pos += 1
                break
            lm = _LABEL_NAME_RE.match(line, pos)
            if not lm:
                raise MetricsParseError(lineno, "bad label name in %s{...}" % name)
            label = lm.group(0)
            pos = _BLANK_RE.match(line, lm.end()).end()
            if line[pos:pos + 1] != "=":
                raise MetricsParseError(lineno, "label %s of %s has no '=\"value\"'" % (label, name))
            pos = _BLANK_RE.match(line, pos + 1).end()
            if line[pos:pos + 1] != '"':
                raise MetricsParseError(lineno, "label %s of %s has no '=\"value\"'" % (label, name))
            value, pos = _label_value(line, pos + 1, lineno)
            if label in labels:
                raise MetricsParseError(lineno, "label %s twice in one sample of %s" % (label, name))
            labels[label] = value
            pos = _BLANK_RE.match(line, pos).end()
            if line[pos:pos + 1] == ",":
                pos += 1
                continue
            if line[pos:pos + 1] == "}":
                pos += 1
                break
            raise MetricsParseError(lineno, "expected ',' or '}' after label %s of %s" % (label, name))
    if pos < len(line) and line[pos] not in " \t":
        raise MetricsParseError(lineno, "no blank between %s and its value" % name)
    rest = _TOKEN_RE.findall(line, pos)
    if not rest or len(rest) > 2:
        raise MetricsParseError(lineno, "%s needs a value and at most a timestamp, got %d fields" % (name, len(rest)))
    try:
        value = parse_float(rest[0])
    except ValueError as exc:
        raise MetricsParseError(lineno, "value of %s: %s" % (name, exc))
    timestamp = None
    if len(rest) == 2:
        if not _INT_RE.match(rest[1]):
            raise MetricsParseError(lineno, "timestamp of %s is not milliseconds: %r" % (name, rest[1][:40]))
        timestamp = int(rest[1])
    return name, labels, value, timestamp


def _unescape_help(text):
    out = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in "\\n":
            out.append("\n" if text[i + 1] == "n" else "\\")
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse(text):
    """A whole page (str) -> Page, or MetricsParseError naming the first bad line.

    Follows the text exposition format 0.0.4: blank lines and comments are ignored, `# HELP name text` and
    `# TYPE name counter|gauge|histogram|summary|untyped` describe a family (a repeated HELP or TYPE of the
    same name, as tor writes, is accepted when it says the same; a TYPE that contradicts an earlier one or
    comes after the family's samples is an error)."""
    if not isinstance(text, str):
        raise MetricsError("the page must be text, got %s" % type(text).__name__)
    page = Page()
    seen = set()   # families that had samples
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.endswith("\r"):
            line = line[:-1]
        if len(line) > MAX_LINE:
            raise MetricsParseError(lineno, "line longer than %d characters" % MAX_LINE)
        stripped = line.strip(" \t")
        if not stripped:
            continue
        if stripped.startswith("#"):
            parts = stripped[1:].lstrip(" \t").split(None, 2) if stripped[1:2] in (" ", "\t") else []
            if len(parts) >= 2 and parts[0] in ("HELP", "TYPE"):
                name = parts[1]
                if not _NAME_RE.fullmatch(name):
                    raise MetricsParseError(lineno, "bad metric name in # %s: %r" % (parts[0], name[:60]))
                if parts[0] == "HELP":
                    page.help[name] = _unescape_help(parts[2] if len(parts) > 2 else "")
                else:
                    kind = parts[2].strip(" \t") if len(parts) > 2 else ""
                    if kind not in TYPES:
                        raise MetricsParseError(lineno, "# TYPE %s: unknown type %r (one of %s)"
                                                % (name, kind[:40], ", ".join(TYPES)))
                    if page.types.get(name, kind) != kind:
                        raise MetricsParseError(lineno, "# TYPE %s %s contradicts # TYPE %s %s before"
                                                % (name, kind, name, page.types[name]))
                    if name in seen and name not in page.types:
                        raise MetricsParseError(lineno, "# TYPE %s comes after samples of %s" % (name, name))
                    page.types[name] = kind
            continue
        sample = parse_sample(stripped, lineno)
        family = page.family(sample[0])
        if page.types.get(family) == "histogram" and sample[0] == family + "_bucket" and "le" not in sample[1]:
            raise MetricsParseError(lineno, "bucket of histogram %s without an le label" % family)
        if page.types.get(family) == "histogram" and sample[0] == family:
            raise MetricsParseError(lineno, "histogram %s has a sample without _bucket, _sum or _count" % family)
        seen.add(family)
        page.samples.append(sample)
    return page


# -- the onion-service view --------------------------------------------------------------------------------

def _number(value):
    """A sample value for JSON: an int when it is integral, a float otherwise; NaN/Inf as the text format
    writes them (JSON has no NaN)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 2 ** 63:
        return int(value)
    return value


def _add(a, b):
    if isinstance(a, str) or isinstance(b, str):   # NaN or Inf: let float decide
        return _number(parse_float(str(a)) + parse_float(str(b)))
    return _number(a + b)


def select(name, prefix=None, names=None):
    """Whether a sample name is kept: one of names when names is given, else one starting with prefix."""
    if names:
        return name in names
    return name.startswith(prefix or "")


def _put(table, name, labels, value):
    """table[name]: the value when the sample has no (other) labels, else a list of {labels, value}."""
    if not labels:
        table[name] = value
        return
    entries = table.setdefault(name, [])
    if not isinstance(entries, list):   # a labelless sample came first: keep both
        entries = table[name] = [{"labels": {}, "value": entries}]
    entries.append({"labels": labels, "value": value})


def onion_services(page, prefix="tor_hs_", names=None):
    """{services: {onion label: {sample name: value | [{labels, value}]}}, totals: {sample name: the sum over
    every service, with the same labels}, other: {sample name: ...} of the kept samples without an onion label,
    types: {family: type}} of the samples select() keeps. The onion label is as tor writes it (the address
    without .onion); a labelless sample's value stands alone, others keep their labels but onion."""
    services = {}
    other = {}
    totals = {}
    types = {}
    for name, labels, value, _timestamp in page.samples:
        if not select(name, prefix, names):
            continue
        family = page.family(name)
        if family in page.types:
            types[family] = page.types[family]
        value = _number(value)
        if ONION_LABEL not in labels:
            _put(other, name, labels, value)
            continue
        rest = dict((k, v) for k, v in labels.items() if k != ONION_LABEL)
        _put(services.setdefault(labels[ONION_LABEL], {}), name, rest, value)
        key = (name, tuple(sorted(rest.items())))
        totals[key] = _add(totals[key], value) if key in totals else value
    total_table = {}
    for (name, rest), value in totals.items():
        _put(total_table, name, dict(rest), value)
    return dict(services=services, totals=total_table, other=other, types=types)


def suggested_efforts(text):
    """{service id (no .onion): suggested effort} from a MetricsPort page. Lenient: only the lines of
    SUGGESTED_EFFORT are read, and one that does not parse is skipped (tor_hidden_service_info adds the
    effort to what the control port said, and must not fail on the rest of the page)."""
    efforts = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.startswith(SUGGESTED_EFFORT + "{"):
            continue
        try:
            name, labels, value, _timestamp = parse_sample(line.strip(), lineno)
        except MetricsParseError:
            continue
        if name != SUGGESTED_EFFORT:
            continue
        sid = labels.get(ONION_LABEL, "")
        sid = sid[:-len(".onion")] if sid.endswith(".onion") else sid
        if sid and not math.isnan(value) and not math.isinf(value) and value >= 0:   # NaN and negatives are not efforts
            efforts[sid] = int(value)
    return efforts


# -- reading the port --------------------------------------------------------------------------------------

def check_url(url):
    parsed = urlparse(url or "")
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise MetricsError("metrics_url must be an http:// URL of tor's MetricsPort, such as "
                           "http://127.0.0.1:9035/metrics, got %r" % (url,))
    try:
        parsed.port
    except ValueError:
        raise MetricsError("metrics_url has a bad port: %r" % (url,))
    return url


def _fail(url, why):
    return MetricsError("cannot read tor's MetricsPort at %s: %s" % (url, why))


_HINT = " (torrc needs MetricsPort on this address and a MetricsPortPolicy that accepts this host)"


def _split_response(url, raw):
    """(status, reason, headers {lower name: value}, body) of a whole HTTP/1.x response."""
    end = raw.find(b"\r\n\r\n")
    sep = 4
    if end < 0:
        end, sep = raw.find(b"\n\n"), 2
    if end < 0:
        if not raw:
            raise _fail(url, "the connection was closed without an answer" + _HINT)
        raise _fail(url, "not an HTTP answer: %r" % (raw[:60],))
    head = raw[:end].decode("iso-8859-1").replace("\r\n", "\n").split("\n")
    m = re.match(r"HTTP/1\.[01] ([0-9]{3})(?: (.*))?\Z", head[0])
    if not m:
        raise _fail(url, "not an HTTP answer: %r" % (head[0][:60],))
    headers = {}
    for line in head[1:]:
        key, colon, value = line.partition(":")
        if colon:
            headers[key.strip().lower()] = value.strip()
    return int(m.group(1)), m.group(2) or "", headers, raw[end + sep:]


def _dechunk(url, body):
    out = []
    pos = 0
    while True:
        eol = body.find(b"\r\n", pos)
        size_text = body[pos:eol].split(b";")[0].strip() if eol >= 0 else b""
        if eol < 0 or not re.match(rb"[0-9a-fA-F]{1,8}\Z", size_text):
            raise _fail(url, "a broken chunked body")
        size = int(size_text, 16)
        if size == 0:
            return b"".join(out)
        out.append(body[eol + 2:eol + 2 + size])
        if len(out[-1]) != size:
            raise _fail(url, "a chunked body cut short")
        pos = eol + 2 + size + 2


def _expected_length(url, raw, max_bytes):
    """How long the whole answer is, from its headers: (headers end, total bytes) with a Content-Length,
    (headers end, None) for a chunked body or none (it ends at its last chunk, or when the peer closes), or
    None while the headers are not complete."""
    end = raw.find(b"\r\n\r\n")
    if end < 0:
        if len(raw) > MAX_HEADER_BYTES:
            raise _fail(url, "not an HTTP answer: no end of headers in %d bytes" % MAX_HEADER_BYTES)
        return None
    m = re.search(rb"\ncontent-length:[ \t]*([0-9]{1,15})[ \t]*(?:\r|\Z)", bytes(raw[:end]).lower())
    if not m:
        return end, None
    length = int(m.group(1))
    if length > max_bytes:
        raise _fail(url, "the answer is larger than %d bytes; not read further" % max_bytes)
    return end, end + 4 + length


def fetch(url, timeout=10.0, max_bytes=None):
    """The body (str) of GET url, or MetricsError. HTTP/1.0 over one socket: the whole exchange (connect, the
    request, every byte of the answer) has one deadline of timeout seconds, and at most max_bytes (MAX_BYTES)
    of body and MAX_HEADER_BYTES of headers are read."""
    parsed = urlparse(check_url(url))
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    if not timeout or timeout <= 0:
        raise MetricsError("timeout must be a positive number of seconds, got %r" % (timeout,))
    deadline = time.monotonic() + timeout
    host = parsed.hostname
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    path = (parsed.path or "/") + ("?" + parsed.query if parsed.query else "")
    limit = max_bytes + MAX_HEADER_BYTES
    buf = bytearray()
    got = 0
    expected = None
    sock = None
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
        if parsed.scheme == "https":
            import ssl
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        request = "GET %s HTTP/1.0\r\nHost: %s\r\nAccept: text/plain\r\nConnection: close\r\n\r\n" % (
            path, parsed.netloc)
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        sock.sendall(request.encode("ascii", "replace"))
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout()
            sock.settimeout(left)
            data = sock.recv(65536)
            if not data:
                break
            buf += data
            got = len(buf)
            if got > limit:
                raise _fail(url, "the answer is larger than %d bytes; not read further" % max_bytes)
            if expected is None:
                expected = _expected_length(url, buf, max_bytes)
            # tor keeps the connection open after the page, even for HTTP/1.0: stop at Content-Length
            if expected is not None and expected[1] is not None and got >= expected[1]:
                break
            if expected is not None and expected[1] is None and buf.endswith(b"\r\n0\r\n\r\n") \
                    and b"chunked" in bytes(buf[:expected[0]]).lower():
                break
    except socket.timeout:
        raise _fail(url, "no complete answer within %g seconds (%d bytes read)" % (timeout, got))
    except OSError as exc:
        raise _fail(url, "%s%s" % (getattr(exc, "strerror", None) or exc, _HINT))
    finally:
        if sock is not None:
            sock.close()
    status, reason, headers, body = _split_response(url, bytes(buf))
    if status != 200:
        raise _fail(url, "HTTP %d %s" % (status, reason))
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = _dechunk(url, body)
    elif headers.get("content-length", "").isdigit():
        body = body[:int(headers["content-length"])]
    if len(body) > max_bytes:
        raise _fail(url, "the answer is larger than %d bytes; not read further" % max_bytes)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _fail(url, "the page is not UTF-8 text (byte %d)" % exc.start)


def scrape(url, timeout=10.0, max_bytes=None):
    """fetch() and parse() of url: a Page, or MetricsError (a parse error names the URL and the line)."""
    text = fetch(url, timeout, max_bytes)
    try:
        return parse(text)
    except MetricsParseError as exc:
        raise MetricsError("tor's MetricsPort at %s did not send the Prometheus text format: %s" % (url, exc))


def read_suggested_efforts(url, timeout=10.0):
    """Fetch url (tor's MetricsPort) and return suggested_efforts() of it, or MetricsError."""
    return suggested_efforts(fetch(url, timeout))
