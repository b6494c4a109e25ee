# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Property-based tests (hypothesis) of everything that parses what a peer or a user gives us:
the control-reply framing (transport.py over a fake socket that delivers bytes in arbitrary
chunks), QuotedString quote/unquote, parse_mapping, parse_key_values, PROTOCOLINFO, the
consensus parser (mutations of the real documents in tests/data/consensus/) and the
onion key/address code.

The rule everywhere: only the documented exception types escape (TorError subclasses for the
client, ConsensusError for the consensus parser, OnionKeyError for keys), and nothing hangs
(every example runs under a deadline). The consensus parser's three paths (bulk, per-router,
general) must also agree: on success or failure, and on the whole result.

Budget: the default settings run ~9,000 examples in 30-60 s on one core. For a long
run multiply them, e.g.

    ONIONLAB_FUZZ_SCALE=50 .venv/bin/python -m pytest -q --hypothesis-show-statistics \\
        tests/unit/plugins/module_utils/_tor/test_properties.py

(the coverage-guided targets in tests/fuzz/ are the other half; see tests/fuzz/README.md).
"""

import base64
import hashlib
import json
import os
import random
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from ansible_collections.onionlab.tor.plugins.module_utils._tor import auth, onion, reply
from ansible_collections.onionlab.tor.plugins.module_utils._tor import consensus as C
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import ProtocolError, TorError, UnsafeValue
from ansible_collections.onionlab.tor.plugins.module_utils._tor.transport import ControlSocket

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_onion import expand  # noqa: E402
from fuzz._setup import ChunkSocket, small_consensus  # shared with the atheris targets (tests/fuzz)
from harness.data import CONSENSUS_DIR

SCALE = max(1, int(os.environ.get("ONIONLAB_FUZZ_SCALE", "1")))


def budget(n, deadline_ms=2000):
    """n examples (times ONIONLAB_FUZZ_SCALE), each under a deadline (a hang fails the test)."""
    return settings(max_examples=n * SCALE, deadline=deadline_ms, derandomize=SCALE == 1,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# -- the reply framing -------------------------------------------------------------------------

def read_all(data, sizes=(65536,), max_line=4096, max_reply=65536):
    """Every reply in data (as plain tuples), and the TorError that ended the stream."""
    sock = ControlSocket(ChunkSocket(data, sizes), "fuzz", timeout=5, max_line=max_line, max_reply=max_reply)
    replies = []
    end = None
    try:
        for _ in range(len(data) + 1):
            message = sock.recv_reply()
            replies.append([(l.code, l.sep, l.text, l.data) for l in message.lines])
            # what the client does with replies must not raise anything else either
            for fn in (lambda m: m.raise_for_status("X"), reply.parse_key_values,
                       lambda m: reply.parse_key_values(m, unquote_values=False), auth.parse_protocolinfo):
                try:
                    fn(message)
                except TorError:
                    pass
    except TorError as exc:
        end = type(exc).__name__
    events = [[(l.code, l.sep, l.text, l.data) for l in e.lines] for e in sock.events]
    return replies, events, end


STATUS = st.sampled_from(["250", "251", "450", "510", "512", "513", "514", "515", "550", "551", "552",
                          "553", "554", "555", "650", "000", "999", "25", "2500"])
LINE_TEXT = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), max_size=40)
TOKENS = st.sampled_from([b"250", b"650", b"552", b"-", b"+", b" ", b"=", b"\r\n", b"\n", b"\r", b".", b"\r\n.\r\n",
                          b"OK", b"\"", b"\\", b"\x00", b"\xff", b"\xc3\xa9", b"ServiceID=", b"PROTOCOLINFO 1",
                          b"AUTH METHODS=", b"COOKIEFILE=\"", b"config-text=", b"x" * 300])


@st.composite
def reply_streams(draw):
    """Bytes that look like a control stream: a soup of protocol tokens and random bytes."""
    parts = draw(st.lists(st.one_of(TOKENS, st.binary(max_size=12)), max_size=60))
    return b"".join(parts)


@budget(1500)
@given(data=st.one_of(reply_streams(), st.binary(max_size=600)),
       sizes=st.lists(st.integers(1, 64), min_size=1, max_size=8))
def test_reply_stream_only_tor_errors(data, sizes):
    """Arbitrary bytes, cut anywhere: replies or a TorError, and the same whatever the chunking."""
    whole = read_all(data)
    chunked = read_all(data, sizes)
    assert chunked == whole


@st.composite
def wellformed_replies(draw):
    """(one valid reply as bytes, its expected lines)."""
    code = draw(st.sampled_from(["250", "251", "552", "650"]))
    n = draw(st.integers(1, 5))
    lines, out = [], b""
    for i in range(n):
        last = i == n - 1
        sep = " " if last else draw(st.sampled_from(["-", "+"]))
        text = draw(LINE_TEXT)
        data = None
        if sep == "+":
            text = draw(st.from_regex(r"\A[a-z/]{1,10}=\Z"))
            body_lines = draw(st.lists(LINE_TEXT, max_size=5))
            data = "\n".join(body_lines)
            stuffed = "".join(("." + b if b.startswith(".") else b) + "\r\n" for b in body_lines)
            out += ("%s+%s\r\n%s.\r\n" % (code, text, stuffed)).encode()
        else:
            out += ("%s%s%s\r\n" % (code, sep, text)).encode()
        lines.append((code, sep, text, data))
    return out, lines


@budget(800)
@given(replies=st.lists(wellformed_replies(), min_size=1, max_size=4),
       sizes=st.lists(st.integers(1, 32), min_size=1, max_size=6))
def test_wellformed_replies_round_trip(replies, sizes):
    """Valid replies (data blocks dot-stuffed, events interleaved) come back exactly."""
    data = b"".join(r[0] for r in replies)
    got, events, end = read_all(data, sizes, max_reply=1 << 20)
    want = [r[1] for r in replies if r[1][-1][0] != "650"]
    want_events = [r[1] for r in replies if r[1][-1][0] == "650"]
    # a data block's last empty line is not representable ('\n' joins), compare modulo that
    assert got == want
    assert events == want_events
    assert end == "ConnectionFailed"     # EOF after the last reply


@budget(200)
@given(size=st.integers(1, 3000), sizes=st.lists(st.integers(1, 4096), min_size=1, max_size=4))
def test_limits_hold(size, sizes):
    """A line over max_line or a reply over max_reply is a ProtocolError, never buffered on."""
    line = b"250-" + b"a" * size + b"\r\n"
    data = line * 50 + b"250 OK\r\n"
    got, _events, end = read_all(data, sizes, max_line=512, max_reply=8192)
    if size + 4 > 512:
        assert got == [] and end == "ProtocolError"
    elif len(data) > 8192:
        assert got == [] and end == "ProtocolError"
    else:
        assert len(got) == 1


# -- QuotedString, parse_mapping ----------------------------------------------------------------

SAFE_TEXT = st.text(st.characters(blacklist_characters="\r\n\x00", blacklist_categories=["Cs"]), max_size=80)
ANY_TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=80)


@budget(600)
@given(value=SAFE_TEXT, prefix=ANY_TEXT, suffix=ANY_TEXT)
@example(value='\\"\\\\"', prefix="", suffix="")
def test_quote_round_trip(value, prefix, suffix):
    quoted = reply.quote(value)
    assert "\r" not in quoted and "\n" not in quoted and "\x00" not in quoted
    assert reply.unquote(quoted) == (value, len(quoted))
    # found at an offset, followed by anything
    text = prefix + quoted + suffix
    assert reply.unquote(text, len(prefix)) == (value, len(prefix) + len(quoted))


@budget(300)
@given(value=ANY_TEXT)
def test_quote_refuses_what_cannot_be_carried(value):
    if any(c in value for c in "\r\n\x00"):
        with pytest.raises(UnsafeValue):
            reply.quote(value)
    else:
        reply.quote(value)


@budget(600)
@given(text=st.one_of(ANY_TEXT, st.from_regex(r'\A"([^"\\]|\\[ntr\\"\'x0-7]|\\x[0-9a-f]{0,2}|\\[0-7]{1,3})*"?',
                                              fullmatch=False)),
       start=st.integers(0, 3))
def test_unquote_only_protocol_error(text, start):
    try:
        value, end = reply.unquote(text, start)
    except ProtocolError:
        return
    assert start < end <= len(text) and text[end - 1] == '"'
    assert isinstance(value, str)


KEY = st.from_regex(r"\A[A-Za-z][A-Za-z0-9_\-]{0,10}\Z")


@budget(600)
@given(positional=st.lists(KEY, max_size=4),
       mapping=st.dictionaries(KEY, st.tuples(SAFE_TEXT, st.booleans()), max_size=5),
       spaces=st.integers(1, 3))
def test_parse_mapping_round_trip(positional, mapping, spaces):
    parts = list(positional)
    for key, (value, quoted) in mapping.items():
        if not quoted and (not value or " " in value or value.startswith('"')):
            quoted = True
        parts.append("%s=%s" % (key, reply.quote(value) if quoted else value))
    got_pos, got_map = reply.parse_mapping((" " * spaces).join(parts))
    assert got_pos == positional
    assert got_map == dict((k, v) for k, (v, _q) in mapping.items())


@budget(600)
@given(text=st.one_of(ANY_TEXT, st.lists(st.sampled_from(['A=', '"', '\\', ' ', 'x', '=', '"\\x4', 'B="a b"',
                                                           '\\0', 'C=1']), max_size=20).map("".join)))
def test_parse_mapping_only_protocol_error(text):
    try:
        positional, mapping = reply.parse_mapping(text)
    except ProtocolError:
        return
    assert all(isinstance(p, str) and p for p in positional)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items())


@budget(300)
@given(value=ANY_TEXT)
def test_check_token_and_keyword_refuse_injection(value):
    """What passes the argument checks can never split a command or an argument."""
    for check in (reply.check_token, reply.check_keyword, reply.check_config_key):
        try:
            out = check(value)
        except UnsafeValue:
            continue
        assert not any(c in out for c in "\r\n\x00 \"")


# -- onion keys and addresses -------------------------------------------------------------------

_expanded = expand   # a clamped 64-byte expanded ed25519 key from a seed (test_onion.py)


@budget(150, deadline_ms=5000)
@given(seed=st.binary(min_size=32, max_size=32))
def test_key_address_round_trip(seed):
    expanded = _expanded(seed)
    blob = onion.key_blob(expanded)
    assert onion.parse_key_blob(blob) == expanded
    sid = onion.service_id_of_key(blob)
    assert onion.is_service_id(sid)
    assert onion.parse_onion_address(sid + ".onion") == onion.ed25519_public_from_expanded(expanded)


B32 = "abcdefghijklmnopqrstuvwxyz234567"


@budget(600)
@given(text=st.one_of(ANY_TEXT, st.text(st.sampled_from(B32), min_size=50, max_size=62),
                      st.text(st.sampled_from(B32), min_size=56, max_size=56).map(lambda s: s + ".onion")))
def test_parse_onion_address_only_onion_key_error(text):
    try:
        public = onion.parse_onion_address(text)
    except onion.OnionKeyError as exc:
        assert len(str(exc)) < 300
        return
    assert len(public) == 32
    assert onion.onion_address(public) == (text[:-6] if text.endswith(".onion") else text)


@budget(300)
@given(seed=st.binary(min_size=32, max_size=32), pos=st.integers(0, 55), char=st.sampled_from(B32))
def test_address_checksum_catches_a_changed_character(seed, pos, char):
    sid = onion.onion_address(onion.ed25519_public_from_expanded(_expanded(seed)))
    mutated = sid[:pos] + char + sid[pos + 1:]
    assume(mutated != sid)
    assert not onion.is_service_id(mutated)


@budget(600)
@given(raw=st.binary(max_size=100), prefix=st.sampled_from(["", "ED25519-V3:", "RSA1024:", " ", "ED25519-V3: "]),
       junk=st.sampled_from(["", "=", "==", "\n", "\r\n", " ", "\x00", "!"]))
def test_parse_key_blob_only_onion_key_error(raw, prefix, junk):
    blob = prefix + base64.b64encode(raw).decode() + junk
    try:
        key = onion.parse_key_blob(blob)
    except onion.OnionKeyError as exc:
        assert base64.b64encode(raw).decode() not in str(exc) or not raw   # never echoes the key
        return
    assert key == raw and len(raw) == 64


@budget(400)
@given(text=ANY_TEXT)
def test_client_key_and_base32_only_onion_key_error(text):
    for fn in (onion.check_client_public_key, lambda t: onion.unb32(t, 32, "k"), onion.parse_key_blob):
        try:
            fn(text)
        except onion.OnionKeyError:
            pass


FILES = ["hs_ed25519_public_key", "hs_ed25519_secret_key", "hostname"]


@budget(300, deadline_ms=5000)
@given(contents=st.fixed_dictionaries({}, optional=dict((n, st.one_of(
    st.binary(max_size=120),
    st.binary(min_size=32, max_size=32).map(lambda b: onion.PUBLIC_HEADER + b),
    st.binary(min_size=64, max_size=64).map(lambda b: onion.SECRET_HEADER + b))) for n in FILES)))
def test_service_dir_address_on_random_files(tmp_path_factory, contents):
    """Random bytes in a service directory: an address, None, or OnionKeyError -- and the
    module-facing describe_persistent never raises at all."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_list
    path = tmp_path_factory.mktemp("hsdir")
    for name, data in contents.items():
        (path / name).write_bytes(data)
    try:
        address = onion.service_dir_address(str(path))
    except onion.OnionKeyError:
        pass
    else:
        assert address is None or onion.parse_onion_address(address)
    out = service_list.describe_persistent(hs.default_service(str(path)))
    assert out["onion_address"] is None or out["onion_address"].endswith(".onion")


# -- values tor returns -------------------------------------------------------------------------

@budget(400)
@given(pairs=st.lists(st.tuples(st.sampled_from(["HiddenServiceDir", "HiddenServicePort", "HiddenServiceVersion",
                                                 "HiddenServiceMaxStreams", "HiddenServiceFoo",
                                                 "HiddenServiceAllowUnknownPorts"]),
                                st.one_of(st.none(), ANY_TEXT, st.from_regex(r"\A\d{1,5}( [^ ]{0,20})?\Z"))),
                      max_size=8))
def test_services_from_conf_only_protocol_error(pairs):
    """Whatever GETCONF HiddenServiceOptions returns: services, or a ProtocolError."""
    try:
        services = hs.services_from_conf(pairs)
    except ProtocolError:
        return
    for service in services:
        assert isinstance(service["path"], str)


# -- the consensus parser -----------------------------------------------------------------------

DOCS = [small_consensus(p.read_bytes(), routers=6) for p in sorted(CONSENSUS_DIR.glob("*consensus"))]

MUTATION_TOKENS = [b" ", b"\n", b"\r\n", b"\x00", b"\xff", b"-", b"=", b"0", b"9999999999", b"-1", b"r ", b"s ",
                   b"m ", b"w Bandwidth=", b"p accept ", b"v Tor ", b"pr ", b"a [::1]:1", b"-----BEGIN ",
                   b"-----END SIGNATURE-----", b"directory-signature ", b"directory-footer\n", b"params ",
                   b"valid-after 2099-01-01 00:00:00", b"opt ", b"@type network-status-consensus-3 1.0\n",
                   b"network-status-version 3\n", b"known-flags Exit\n", b"consensus-method 1\n"]


def _mutate(data, rnd, count):
    data = bytearray(data)
    for _ in range(count):
        op = rnd.randrange(8)
        pos = rnd.randrange(len(data) + 1) if data else 0
        if op == 0 and data:                                   # flip a byte
            data[min(pos, len(data) - 1)] = rnd.randrange(256)
        elif op == 1:                                          # insert a protocol-ish token
            data[pos:pos] = rnd.choice(MUTATION_TOKENS)
        elif op == 2 and data:                                 # delete a span
            del data[pos:pos + rnd.randrange(1, 40)]
        elif op == 3:                                          # truncate
            del data[pos:]
        lines = bytes(data).split(b"\n")
        if op >= 4 and len(lines) > 1:
            i, j = rnd.randrange(len(lines)), rnd.randrange(len(lines))
            if op == 4:                                        # delete a line
                del lines[i]
            elif op == 5:                                      # duplicate a line
                lines.insert(j, lines[i])
            elif op == 6:                                      # swap two lines
                lines[i], lines[j] = lines[j], lines[i]
            else:                                              # replace a line's value
                head = lines[i].split(b" ", 1)[0]
                lines[i] = head + b" " + rnd.choice(MUTATION_TOKENS).strip()
            data = bytearray(b"\n".join(lines))
    return bytes(data)


PARSE_MODES = (None, "iter", "general")   # the fast bulk matcher, the per-router iterator, the general line parser


def _consensus_outcome(doc, mode):
    """("error",) or ("ok", router count, a digest of the whole result): equal outcomes mean equal results."""
    try:
        result = C.parse_consensus(doc, _mode=mode, now=1500000000)
    except C.ConsensusError as exc:
        assert exc.line is None or exc.line >= 1
        return ("error",)
    assert isinstance(result["routers"], list) and result["router_count"] >= len(result["routers"])
    whole = json.dumps(result, sort_keys=True).encode()
    return ("ok", result["router_count"], hashlib.sha256(whole).hexdigest())


@budget(600, deadline_ms=5000)
@given(index=st.integers(0, 2), seed=st.integers(0, 2 ** 32), count=st.integers(1, 6),
       as_text=st.booleans())
def test_consensus_mutations(index, seed, count, as_text):
    """A mutated real document: a result or ConsensusError, the same in all three parse paths
    (the fast bulk matcher, the per-router iterator, the general line parser)."""
    doc = _mutate(DOCS[index % len(DOCS)], random.Random(seed), count)
    if as_text:
        doc = doc.decode("latin-1")
    started = time.monotonic()
    outcomes = set(_consensus_outcome(doc, mode) for mode in PARSE_MODES)
    assert time.monotonic() - started < 4
    assert len(outcomes) == 1, outcomes


@budget(20, deadline_ms=20000)
@given(name=st.sampled_from(sorted(p.name for p in CONSENSUS_DIR.glob("*consensus"))),
       seed=st.integers(0, 2 ** 32), count=st.integers(1, 4))
def test_consensus_mutations_full_documents(name, seed, count):
    """Mutations anywhere in a whole ~2 MB document (thousands of routers): a result or a
    ConsensusError, the same in the three parse paths -- the whole result when there is one
    (each path takes well under a second on these documents)."""
    doc = _mutate((CONSENSUS_DIR / name).read_bytes(), random.Random(seed), count)
    outcomes = dict((mode, _consensus_outcome(doc, mode)) for mode in PARSE_MODES)
    assert len(set(outcomes.values())) == 1, outcomes


# The smallest consensus the parser accepts that we know of (328 bytes; a real one cut down line by
# line and token by token): no consensus-method line (method 1), no authority, no router, one
# signature with a 3-byte object.
SMALLEST_CONSENSUS = b"""network-status-version 3
vote-status consensus
valid-after 2022-11-19 10:00:00
fresh-until 2022-11-19 11:00:00
valid-until 2022-11-19 13:00:00
voting-delay 3 3
known-flags
directory-signature 14C131DFC5C6F93646BE72FA1401C02A8DF2E8B4 4A69B937C66923151A7B98F091135E5E7529F375
-----BEGIN SIGNATURE-----
TH7m
-----END SIGNATURE-----"""


def test_smallest_known_consensus():
    """What test_consensus_random_bytes relies on: it parses (no router) in every path, and is longer than
    that test's 300 bytes."""
    assert len(SMALLEST_CONSENSUS) > 300
    for mode in PARSE_MODES:
        result = C.parse_consensus(SMALLEST_CONSENSUS, _mode=mode)
        assert result["router_count"] == 0 and result["routers"] == []


@budget(300)
@given(data=st.one_of(st.binary(max_size=300),
                      st.binary(max_size=300).map(lambda b: bytes(c & 0x7f for c in b)),
                      st.lists(st.sampled_from(MUTATION_TOKENS), max_size=30).map(b"".join)))
@example(data=SMALLEST_CONSENSUS[:300])
@example(data=SMALLEST_CONSENSUS.replace(b"vote-status consensus\n", b""))
def test_consensus_random_bytes(data):
    """None of these is a consensus: the smallest valid one we could cut a real document down to
    is 328 bytes (test_smallest_known_consensus), and the tokens have no 'vote-status',
    'fresh-until' or 'valid-until' line. So each fails, in the three parse paths with the same error
    (line and reason: they share the preamble code, where these fail), and an ASCII input fails the
    same as bytes and as str. (With a non-ASCII byte the str path reports that byte first, the bytes
    path may report an earlier defect.)"""
    errors = {}
    for kind, value in (("bytes", data), ("str", data.decode("latin-1"))):
        for mode in PARSE_MODES:
            with pytest.raises(C.ConsensusError) as caught:
                C.parse_consensus(value, _mode=mode)
            assert caught.value.line is None or caught.value.line >= 1
            errors[kind, mode] = (caught.value.line, caught.value.reason)
        assert len(set(errors[kind, mode] for mode in PARSE_MODES)) == 1, errors
    if data.isascii():
        assert errors["bytes", None] == errors["str", None], errors
