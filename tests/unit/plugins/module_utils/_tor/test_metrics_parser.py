# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""metrics.py: the Prometheus text format parser (a real tor 0.4.9.11 page, the format's corners, hypothesis
properties), the per-service view, and fetch() against a scripted port over a real socket: closed, slow,
garbage, huge, endless, not 200, chunked."""

import math
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.onionlab.tor.plugins.module_utils._tor import metrics as M
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError
from harness.ports import free_ports
from harness.prometheus import ScriptedPort, http_ok

DATA = Path(__file__).resolve().parent.parent / "data"
REAL = (DATA / "metricsport-tor-0.4.9.11.prom").read_text()
S1 = "zs7bgfoxd7tj5athygvu6xqkklwfd26uabmmjwdild72aalz7fttisyd"   # HiddenServiceDir, PoW on
S2 = "ovsyyabnswa6uwviddcn5aqsucxfz6adctla7yl5glunh2l3aomqutqd"   # HiddenServiceDir
S3 = "j224dzi3me6fohxg46cfijxqyzheqxgoupjrgo6hy6zoforg7vggkkqd"   # ADD_ONION


# -- the real page ---------------------------------------------------------------------------------

def test_real_page_every_line_is_read():
    page = M.parse(REAL)
    lines = [line for line in REAL.splitlines() if line and not line.startswith("#")]
    assert len(page.samples) == len(lines) == 377
    assert page.types["tor_hs_intro_circ_build_time"] == "histogram"
    assert page.types["tor_hs_intro_num_total"] == "counter"
    assert page.help["tor_hs_rdv_num_total"] == "Total number of rendezvous circuits created"
    assert page.family("tor_hs_intro_circ_build_time_bucket") == "tor_hs_intro_circ_build_time"
    assert page.family("tor_hs_intro_num_total") == "tor_hs_intro_num_total"


def test_real_page_per_service():
    view = M.onion_services(M.parse(REAL))
    assert set(view["services"]) == {S1, S2, S3}
    one = view["services"][S1]
    assert one["tor_hs_rdv_num_total"] == 1
    assert one["tor_hs_intro_established_count"] == 6
    assert one["tor_hs_pow_suggested_effort"] == 0
    assert one["tor_hs_app_read_bytes_total"] == [{"labels": {"port": "80"}, "value": 194}]
    assert one["tor_hs_rend_circ_build_time_bucket"][-1] == {"labels": {"le": "+Inf"}, "value": 1}
    assert one["tor_hs_rend_circ_build_time_sum"] == 40
    assert {e["labels"]["reason"] for e in one["tor_hs_rdv_error_count"]} == {
        "rp_conn_failure", "invalid_path", "rendezvous1", "e2e_circ", "retry"}
    assert view["totals"]["tor_hs_rdv_num_total"] == sum(
        view["services"][s]["tor_hs_rdv_num_total"] for s in (S1, S2, S3))
    assert view["other"] == {}   # the default prefix keeps only tor_hs_
    assert view["types"]["tor_hs_rend_circ_build_time"] == "histogram"
    everything = M.onion_services(M.parse(REAL), prefix="")
    assert everything["other"]["tor_bug_reached_count"] == 0
    only = M.onion_services(M.parse(REAL), names=["tor_hs_intro_num_total"])
    assert set(only["services"][S2]) == {"tor_hs_intro_num_total"}


def test_suggested_efforts_of_the_real_page():
    assert M.suggested_efforts(REAL) == {S1: 0, S2: 0, S3: 0}


# -- the format --------------------------------------------------------------------------------------

def test_escapes_timestamps_and_special_values():
    page = M.parse('# HELP m A \\\\ and a\\nnewline\n# TYPE m gauge\n'
                   'm{a="x\\\\y\\"z\\nw",b="",c="\\q"} +Inf 1700000000000\n'
                   'm{a="1"} -Inf\nm{a="2"} NaN -5\nm{a="3",} 1.5e3\nm{ a = "4" } .5\n'
                   'plain 7\r\n\n  # a comment\n#no space comment\n')
    assert page.help["m"] == "A \\ and a\nnewline"
    (n0, l0, v0, t0), (_, _, v1, _), (_, _, v2, t2), (_, l3, v3, _), (_, l4, v4, _), plain = page.samples
    assert l0 == {"a": 'x\\y"z\nw', "b": "", "c": "\\q"}
    assert v0 == math.inf and t0 == 1700000000000
    assert v1 == -math.inf and math.isnan(v2) and t2 == -5
    assert l3 == {"a": "3"} and v3 == 1500.0 and l4 == {"a": "4"} and v4 == 0.5
    assert plain == ("plain", {}, 7.0, None)
    view = M.onion_services(page, prefix="")
    assert view["other"]["m"][0]["value"] == "+Inf" and view["other"]["m"][2]["value"] == "NaN"


@pytest.mark.parametrize("text, line, what", [
    ("ok 1\n1bad 2", 2, "not a metric name"),
    ('m{a="x} 1', 1, "label value not closed"),
    ('m{a="x" b="y"} 1', 1, "expected ',' or '}'"),
    ('m{a=x} 1', 1, "has no '=\"value\"'"),
    ('m{a="1",a="2"} 1', 1, "label a twice"),
    ('m{0a="1"} 1', 1, "bad label name"),
    ("m", 1, "needs a value"),
    ("m 1 2 3", 1, "needs a value and at most a timestamp"),
    ("m 1_000", 1, "not a number"),
    ("m 0x10", 1, "not a number"),
    ("m 1 1.5", 1, "timestamp of m is not milliseconds"),
    ('m{a="1"}2', 1, "no blank between m and its value"),
    ("# TYPE m gauges", 1, "unknown type"),
    ("# TYPE m gauge\n# TYPE m counter", 2, "contradicts"),
    ("m 1\n# TYPE m gauge", 2, "comes after samples"),
    ("# TYPE h histogram\nh_bucket 1", 2, "without an le label"),
    ("# TYPE h histogram\nh 1", 2, "without _bucket"),
    ("# HELP 9x text", 1, "bad metric name"),
    ("m " + "1" * (M.MAX_LINE + 1), 1, "line longer than"),
])
def test_parse_errors_name_the_line(text, line, what):
    with pytest.raises(M.MetricsParseError, match="^line %d: .*%s" % (line, __import__("re").escape(what))) as exc:
        M.parse(text)
    assert exc.value.line == line


def test_tor_repeats_help_and_type_per_service():
    block = '# HELP x_total Total\n# TYPE x_total counter\nx_total{onion="%s"} %d\n'
    page = M.parse(block % ("a", 1) + block % ("b", 2))
    assert M.onion_services(page, prefix="x")["totals"] == {"x_total": 3}


# -- properties --------------------------------------------------------------------------------------

NAMES = st.from_regex(r"\A[a-zA-Z_:][a-zA-Z0-9_:]{0,20}\Z")
LABEL_NAMES = st.from_regex(r"\A[a-zA-Z_][a-zA-Z0-9_]{0,10}\Z")
LABEL_VALUES = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
VALUES = st.one_of(st.floats(allow_nan=False), st.integers(-2 ** 53, 2 ** 53).map(float))
SETTINGS = settings(max_examples=300, deadline=2000, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def escape(value):
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(name, labels, value, ts):
    text = name
    if labels:
        text += "{" + ",".join('%s="%s"' % (k, escape(v)) for k, v in labels.items()) + "}"
    return text + " " + repr(value).replace("inf", "Inf") + ("" if ts is None else " %d" % ts)


@given(samples=st.lists(st.tuples(NAMES, st.dictionaries(LABEL_NAMES, LABEL_VALUES, max_size=4), VALUES,
                                  st.one_of(st.none(), st.integers(-2 ** 62, 2 ** 62))), max_size=8))
@SETTINGS
def test_round_trip(samples):
    text = "\n".join(render(*s) for s in samples)
    assert M.parse(text).samples == [(n, l, v, t) for n, l, v, t in samples]


@given(text=st.one_of(st.text(max_size=300),
                      st.lists(st.sampled_from(['m', '{', '}', '"', '\\', '=', ',', ' ', '\n', '1', 'a', '#',
                                                ' TYPE ', ' HELP ', 'histogram', '_bucket', 'le', 'NaN', '+Inf',
                                                'onion', '\t', '\r']), max_size=60).map("".join)))
@SETTINGS
def test_any_text_only_metrics_errors(text):
    try:
        page = M.parse(text)
    except M.MetricsError:
        return
    view = M.onion_services(page, prefix="")
    assert isinstance(view["services"], dict)
    M.suggested_efforts(text)


# -- reading the port (a scripted server on a real socket) ---------------------------------------------

def test_fetch_a_page():
    with ScriptedPort([http_ok(REAL)]) as port:
        page = M.scrape(port.url, timeout=5)
    assert len(page.samples) == 377
    assert port.requests[0].startswith(b"GET /metrics HTTP/1.0\r\n")


def test_fetch_chunked_in_pieces():
    body = REAL.encode()
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 1000]), body[i:i + 1000])
                       for i in range(0, len(body), 1000)) + b"0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    script = [head] + [chunked[i:i + 777] for i in range(0, len(chunked), 777)]
    with ScriptedPort(script) as port:
        assert M.fetch(port.url, timeout=5) == REAL


def test_closed_port():
    url = "http://127.0.0.1:%d/metrics" % free_ports(1)[0]
    with pytest.raises(M.MetricsError, match=r"^cannot read tor's MetricsPort at %s: Connection refused \(torrc "
                       r"needs MetricsPort on this address and a MetricsPortPolicy that accepts this host\)$" % url):
        M.fetch(url, timeout=2)


def test_policy_rejects_us():
    """tor closes a connection its MetricsPortPolicy rejects without a byte."""
    with ScriptedPort([]) as port:
        with pytest.raises(M.MetricsError, match="the connection was closed without an answer"):
            M.fetch(port.url, timeout=2)


def test_slow_drip_has_one_deadline():
    """One byte every 0.3 s: each recv would be within a per-recv timeout; the whole read is not."""
    drip = [b"HTTP/1.0 200 OK\r\n\r\n"] + [x for _ in range(100) for x in (b"m", 0.3)]
    with ScriptedPort(drip) as port:
        t0 = time.monotonic()
        with pytest.raises(M.MetricsError, match=r"no complete answer within 1\.5 seconds \(\d+ bytes read\)"):
            M.fetch(port.url, timeout=1.5)
        took = time.monotonic() - t0
    assert took < 2.5, took


def test_silent_port():
    with ScriptedPort([], hold=True) as port:
        with pytest.raises(M.MetricsError, match=r"no complete answer within 1 seconds \(0 bytes read\)"):
            M.fetch(port.url, timeout=1)


def test_huge_and_endless_bodies_are_bounded():
    endless = [b"HTTP/1.0 200 OK\r\n\r\n"] + [b"x" * 65536] * 10000
    with ScriptedPort(endless) as port:
        t0 = time.monotonic()
        with pytest.raises(M.MetricsError, match=r"the answer is larger than 100000 bytes; not read further"):
            M.fetch(port.url, timeout=10, max_bytes=100000)
        assert time.monotonic() - t0 < 5
    with ScriptedPort([http_ok("m 1\n" * 30000)]) as port:   # 120000 bytes, all sent at once
        with pytest.raises(M.MetricsError, match="larger than 100000 bytes"):
            M.fetch(port.url, timeout=10, max_bytes=100000)


@pytest.mark.parametrize("script, what", [
    ([b"SSH-2.0-OpenSSH_9.2\r\n"], "not an HTTP answer: b'SSH-2.0-OpenSSH_9.2"),
    ([b"\x00\xff" * 50 + b"\r\n\r\n"], "not an HTTP answer"),
    ([b"HTTP/1.0 404 Not Found\r\n\r\nnope"], "HTTP 404 Not Found"),
    ([b"HTTP/1.0 200 OK\r\n\r\n\xff\xfe"], "the page is not UTF-8 text (byte 0)"),
    ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"], "a broken chunked body"),
])
def test_garbage_answers(script, what):
    with ScriptedPort(script) as port:
        with pytest.raises(M.MetricsError) as exc:
            M.fetch(port.url, timeout=3)
    assert str(exc.value).startswith("cannot read tor's MetricsPort at %s: " % port.url)
    assert what in str(exc.value)


def test_garbage_page_names_url_and_line():
    with ScriptedPort([http_ok("tor_hs_x 1\n<html>oops</html>\n")]) as port:
        with pytest.raises(M.MetricsError, match=r"^tor's MetricsPort at http://127\.0\.0\.1:\d+/metrics did not send "
                           r"the Prometheus text format: line 2: not a metric name at the start of '<html>"):
            M.scrape(port.url, timeout=3)


@pytest.mark.parametrize("url", ["", None, "127.0.0.1:9035", "file:///etc/passwd", "http://", "http://h:99999/"])
def test_bad_urls(url):
    with pytest.raises(M.MetricsError, match="metrics_url (must be an http:// URL|has a bad port)"):
        M.check_url(url)


def test_errors_are_tor_errors():
    assert issubclass(M.MetricsParseError, M.MetricsError) and issubclass(M.MetricsError, TorError)


def test_content_length_ends_the_answer_on_an_open_connection():
    """tor 0.4.9 keeps the connection open after the page (measured: the first version waited for the close
    and timed out with the whole page read); the answer ends at its Content-Length."""
    with ScriptedPort([http_ok(REAL)], hold=True) as port:
        t0 = time.monotonic()
        assert M.fetch(port.url, timeout=5) == REAL
        assert time.monotonic() - t0 < 1
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    with ScriptedPort([head, b"4\r\nm 1\n\r\n", 0.2, b"0\r\n\r\n"], hold=True) as port:
        assert M.fetch(port.url, timeout=5) == "m 1\n"


def test_content_length_over_the_limit_fails_at_once():
    with ScriptedPort([b"HTTP/1.0 200 OK\r\nContent-Length: 999999999\r\n\r\nm 1\n"], hold=True) as port:
        with pytest.raises(M.MetricsError, match="the answer is larger than 1000 bytes; not read further"):
            M.fetch(port.url, timeout=5, max_bytes=1000)
