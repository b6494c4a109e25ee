# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The accounting/traffic/bandwidth/state parsers (accounting.py) on replies recorded from a
real tor 0.4.9.11 (DisableNetwork 1; accounting figures loaded from a prepared state file) and
on malformed ones; the tolerant query against a scripted peer."""

import calendar
import datetime

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import accounting as A
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import Controller
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import (
    OperationFailed,
    ProtocolError,
    UnrecognizedKey,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.reply import Reply, ReplyLine, parse_key_values
from ansible_collections.onionlab.tor.plugins.module_utils._tor.transport import ControlSocket
from harness.fake_tor import FakeTor

# -- recorded from tor 0.4.9.11 ------------------------------------------------------------------
# The GETINFO reply lines (code, separator, text) of `GETINFO <every key of every group>`, with
# AccountingMax 1 GB, AccountingStart month 1 00:00, AccountingRule max, and a state file of
# 123456789 bytes read / 98765432 written in the interval; retrieved at RETRIEVED.
RETRIEVED = 1796283775
RAW_AWAKE = [
    ("250", "-", "version=0.4.9.11"), ("250", "-", "process/pid=29714"), ("250", "-", "uptime=0"),
    ("250", "-", 'status/bootstrap-phase=NOTICE BOOTSTRAP PROGRESS=0 TAG=starting SUMMARY="Starting"'),
    ("250", "-", "network-liveness=down"), ("250", "-", "dormant=0"), ("250", "-", "status/circuit-established=0"),
    ("250", "-", "accounting/enabled=1"), ("250", "-", "accounting/hibernating=awake"),
    ("250", "-", "accounting/bytes=123456789 98765432"), ("250", "-", "accounting/bytes-left=950285035 974976392"),
    ("250", "-", "accounting/interval-start=2026-11-30 00:00:00"),
    ("250", "-", "accounting/interval-wake=2026-11-30 00:00:00"),
    ("250", "-", "accounting/interval-end=2027-01-01 00:00:00"),
    ("250", "-", "traffic/read=0"), ("250", "-", "traffic/written=0"), ("250", " ", "OK"),
]
CONF_RECORDED = [("AccountingMax", "1073741824"), ("AccountingRule", "max"), ("AccountingStart", "month 1 00:00"),
                 ("BandwidthRate", "5242880"), ("BandwidthBurst", "10485760"), ("RelayBandwidthRate", "2097152"),
                 ("RelayBandwidthBurst", "4194304"), ("MaxAdvertisedBandwidth", "3145728")]


def info_of(raw):
    return dict((k, v if v is not None else "") for k, v in parse_key_values(Reply([ReplyLine(*r) for r in raw])))


AWAKE = info_of(RAW_AWAKE)
CONF = dict(CONF_RECORDED)

# Same tor with 1030000000 bytes read and a high expected usage: soft hibernation.
SOFT = dict(AWAKE, **{"uptime": "2", "accounting/hibernating": "soft", "accounting/bytes": "1030000000 98765432",
                      "accounting/bytes-left": "43741824 974976392",
                      "accounting/interval-wake": "2026-12-05 19:01:47"})
# 1123456789 bytes read, more than AccountingMax: hard hibernation.
HARD = dict(AWAKE, **{"uptime": "1", "accounting/hibernating": "hard", "accounting/bytes": "1123456789 98765432",
                      "accounting/bytes-left": "0 974976392"})
# Accounting off (tor's defaults): tor still answers, with zeros and the epoch.
OFF = dict(AWAKE, **{"accounting/enabled": "0", "accounting/bytes": "0 0", "accounting/bytes-left": "0 0",
                     "accounting/interval-start": "1970-01-01 00:00:00",
                     "accounting/interval-wake": "1970-01-01 00:00:00",
                     "accounting/interval-end": "1970-01-01 00:00:00"})
CONF_OFF = {"AccountingMax": "0", "AccountingRule": "max", "AccountingStart": None, "BandwidthRate": "1073741824",
            "BandwidthBurst": "1073741824", "RelayBandwidthRate": "0", "RelayBandwidthBurst": "0",
            "MaxAdvertisedBandwidth": "1073741824"}
# bytes-left as recorded under the other AccountingRules (same 123456789 / 98765432 bytes)
BYTES_LEFT_BY_RULE = {"sum": "851519603 851519603", "in": "950285035 1073741824", "out": "1073741824 974976392"}

END = calendar.timegm((2027, 1, 1, 0, 0, 0))


def test_recorded_reply_has_every_key_of_every_group():
    keys, options = A.keys_for(A.GROUPS)
    assert sorted(AWAKE) == sorted(keys)
    assert [o for o, _ in CONF_RECORDED] == options


def test_facts_from_recorded_awake_tor():
    facts = A.build_facts(AWAKE, CONF, A.GROUPS, retrieved=RETRIEVED + 0.4, connected=RETRIEVED - 0.1)
    assert facts == {
        "connection_time": "2026-12-03T07:42:54Z",
        "retrieved_at": "2026-12-03T07:42:55Z",
        "version": "0.4.9.11",
        "pid": 29714,
        "uptime": 0,
        "started_at": "2026-12-03T07:42:55Z",
        "bootstrap": {"severity": "NOTICE", "progress": 0, "tag": "starting", "summary": "Starting",
                      "warning": None, "reason": None, "count": None, "recommendation": None, "host": None},
        "network_liveness": "down",
        "dormant": False,
        "circuit_established": False,
        "accounting": {
            "enabled": True, "hibernating": "awake",
            "bytes_read": 123456789, "bytes_written": 98765432,
            "bytes_left_read": 950285035, "bytes_left_written": 974976392,
            "interval_start": "2026-11-30T00:00:00Z", "interval_wake": "2026-11-30T00:00:00Z",
            "interval_end": "2027-01-01T00:00:00Z", "time_until_reset": END - RETRIEVED,
            "max": 1073741824, "rule": "max", "start": "month 1 00:00",
            "bytes_used": 123456789, "bytes_left": 950285035,
            "fraction_used": 0.114978, "fraction_left": 0.885022,
        },
        "traffic": {"read": 0, "written": 0},
        "effective_rate": 2097152,
        "effective_burst": 4194304,
        "bandwidth": {"rate": 5242880, "burst": 10485760, "relay_rate": 2097152, "relay_burst": 4194304,
                      "max_advertised": 3145728},
    }


def test_soft_and_hard_hibernation():
    soft = A.accounting_facts(SOFT, CONF, RETRIEVED)
    assert soft["hibernating"] == "soft"
    assert soft["interval_wake"] == "2026-12-05T19:01:47Z"
    assert soft["bytes_left"] == 43741824 == soft["bytes_left_read"]
    assert soft["fraction_left"] == round(43741824 / 1073741824.0, 6) < 0.1
    hard = A.accounting_facts(HARD, CONF, RETRIEVED)
    assert hard["hibernating"] == "hard"
    assert hard["bytes_left"] == 0 == hard["bytes_left_read"]
    assert hard["fraction_left"] == 0.0
    assert hard["fraction_used"] == round(1123456789 / 1073741824.0, 6) > 1  # tor overshot; reported as is


@pytest.mark.parametrize("rule, used", [("max", 123456789), ("sum", 123456789 + 98765432), ("in", 123456789),
                                        ("out", 98765432), (None, 123456789), ("bogus", 123456789)])
def test_bytes_used_per_rule_agrees_with_tors_bytes_left(rule, used):
    info = dict(AWAKE)
    if rule in BYTES_LEFT_BY_RULE:
        info["accounting/bytes-left"] = BYTES_LEFT_BY_RULE[rule]
    conf = dict(CONF, AccountingRule=rule)
    facts = A.accounting_facts(info, conf, RETRIEVED)
    assert facts["rule"] == (rule if rule in A.ACCOUNTING_RULES else None)
    assert facts["bytes_used"] == used
    assert facts["bytes_left"] == 1073741824 - used
    # tor's own figure for the limited direction(s) is the same number
    if rule in ("max", "sum", "in"):
        assert facts["bytes_left_read"] == facts["bytes_left"]
    if rule in ("sum", "out"):
        assert facts["bytes_left_written"] == facts["bytes_left"]


def test_accounting_off_gives_nulls_not_the_epoch():
    facts = A.build_facts(OFF, CONF_OFF, ["accounting", "bandwidth"], retrieved=RETRIEVED)
    assert facts["accounting"] == dict(dict.fromkeys(A.ACCOUNTING_FIELDS), enabled=False)
    assert facts["effective_rate"] == 1073741824 == facts["effective_burst"]
    assert set(facts) == {"connection_time", "retrieved_at", "accounting", "effective_rate", "effective_burst",
                          "bandwidth"}
    assert facts["connection_time"] is None


@pytest.mark.parametrize("groups, present", [
    (["process"], {"version", "pid", "uptime", "started_at"}),
    (["status"], {"bootstrap", "network_liveness", "dormant", "circuit_established"}),
    (["accounting"], {"accounting"}),
    (["traffic"], {"traffic"}),
    (["bandwidth"], {"effective_rate", "effective_burst", "bandwidth"}),
    ([], set()),
])
def test_groups_limit_facts_and_keys(groups, present):
    facts = A.build_facts(AWAKE, CONF, groups, retrieved=RETRIEVED, connected=RETRIEVED)
    assert set(facts) == present | {"connection_time", "retrieved_at"}
    keys, options = A.keys_for(groups)
    for group in A.GROUPS:
        wanted = set(A.GETINFO_KEYS[group]) | set(A.GETCONF_OPTIONS.get(group, ()))
        assert wanted <= set(keys) | set(options) if group in groups else not wanted & set(keys + options)


def test_everything_missing_gives_nulls():
    facts = A.build_facts({}, {}, A.GROUPS, retrieved=None, connected=None)
    assert facts["accounting"] == dict.fromkeys(A.ACCOUNTING_FIELDS)
    for key in ("version", "pid", "uptime", "started_at", "bootstrap", "network_liveness", "dormant",
                "circuit_established", "effective_rate", "effective_burst", "connection_time", "retrieved_at"):
        assert facts[key] is None, key
    assert facts["traffic"] == {"read": None, "written": None}
    assert facts["bandwidth"] == dict.fromkeys(["rate", "burst", "relay_rate", "relay_burst", "max_advertised"])


MALFORMED = {
    "version": "",
    "process/pid": "-1",
    "uptime": "12s",
    "status/bootstrap-phase": "garbage",
    "network-liveness": "sideways",
    "dormant": "yes",
    "status/circuit-established": "2",
    "accounting/enabled": "1",
    "accounting/hibernating": "sleepy",
    "accounting/bytes": "12 34 56",
    "accounting/bytes-left": "x y",
    "accounting/interval-start": "2026-02-30 00:00:00",
    "accounting/interval-wake": "never",
    "accounting/interval-end": "2027-01-01T00:00:00",
    "traffic/read": "1e6",
    "traffic/written": "\u0663",  # ARABIC-INDIC DIGIT THREE: isdigit() but not ASCII
}


def test_malformed_values_give_nulls_never_an_exception():
    conf = {"AccountingMax": "lots", "AccountingRule": "MAX", "AccountingStart": "",
            "BandwidthRate": "1 GB", "BandwidthBurst": "-5", "RelayBandwidthRate": "0", "RelayBandwidthBurst": " 1",
            "MaxAdvertisedBandwidth": "1.5"}
    facts = A.build_facts(MALFORMED, conf, A.GROUPS, retrieved=RETRIEVED, connected=RETRIEVED)
    acc = facts.pop("accounting")
    assert acc == dict(dict.fromkeys(A.ACCOUNTING_FIELDS), enabled=True)
    for key in ("version", "pid", "uptime", "started_at", "bootstrap", "network_liveness", "dormant",
                "circuit_established", "effective_rate", "effective_burst"):
        assert facts[key] is None, key
    assert facts["traffic"] == {"read": None, "written": None}
    assert set(facts["bandwidth"].values()) == {None, 0}


@pytest.mark.parametrize("value, expected", [
    ("0", 0), ("18446744073709551615", 18446744073709551615), ("007", 7),
    ("", None), (" 1", None), ("1 ", None), ("+1", None), ("-1", None), ("1.0", None), ("0x10", None),
    ("\u0663", None), ("1" * 21, None), (None, None), (5, None),
])
def test_parse_uint(value, expected):
    assert A.parse_uint(value) == expected


@pytest.mark.parametrize("value, expected", [
    ("1 2", (1, 2)), ("0 0", (0, 0)), ("1  2", (None, None)), ("1", (None, None)), ("1 2 3", (None, None)),
    ("a 2", (None, None)), ("", (None, None)), (None, (None, None)),
])
def test_parse_pair(value, expected):
    assert A.parse_pair(value) == expected


@pytest.mark.parametrize("value, expected", [
    ("2027-01-01 00:00:00", calendar.timegm((2027, 1, 1, 0, 0, 0))),
    ("1970-01-01 00:00:00", 0),
    ("2024-02-29 23:59:59", calendar.timegm((2024, 2, 29, 23, 59, 59))),
    ("2026-02-29 00:00:00", None), ("2026-13-01 00:00:00", None), ("2026-01-01 24:00:00", None),
    ("2026-01-01T00:00:00", None), ("2026-01-01 00:00", None), ("2026-01-01 00:00:00 ", None),
    ("", None), (None, None),
])
def test_parse_time(value, expected):
    assert A.parse_time(value) == expected


def test_iso_time():
    assert A.iso_time(0) == "1970-01-01T00:00:00Z"
    assert A.iso_time(1796283775.9) == "2026-12-03T07:42:55Z"
    assert A.iso_time(None) is None
    moment = datetime.datetime(2027, 1, 1, tzinfo=datetime.timezone.utc)
    assert A.iso_time(moment.timestamp()) == "2027-01-01T00:00:00Z"


@pytest.mark.parametrize("value, expected", [("1", True), ("0", False), ("", None), ("true", None), (None, None),
                                             (" 1", None)])
def test_parse_flag(value, expected):
    assert A.parse_flag(value) is expected


def test_parse_choice_and_text():
    assert A.parse_choice("awake", A.HIBERNATION_STATES) == "awake"
    assert A.parse_choice("Awake", A.HIBERNATION_STATES) is None
    assert A.parse_choice(None, A.LIVENESS) is None
    assert A.parse_text(" 0.4.9.11 ") == "0.4.9.11"
    assert A.parse_text("0.4.8.0-alpha-dev (git-abcdef)") == "0.4.8.0-alpha-dev (git-abcdef)"
    assert A.parse_text("a\nb") is None
    assert A.parse_text("   ") is None
    assert A.parse_text(None) is None


# control-spec's examples of status/bootstrap-phase, and tor 0.4.9's "done" phase
BOOT_WARN = ('WARN BOOTSTRAP PROGRESS=10 TAG=conn_done SUMMARY="Connected to a relay" WARNING="Connection refused" '
             'REASON=CONNECTREFUSED COUNT=3 RECOMMENDATION=ignore HOSTID="$0123456789ABCDEF0123456789ABCDEF01234567" '
             'HOSTADDR="192.0.2.1:9001"')


def test_parse_bootstrap():
    assert A.parse_bootstrap('NOTICE BOOTSTRAP PROGRESS=100 TAG=done SUMMARY="Done"') == {
        "severity": "NOTICE", "progress": 100, "tag": "done", "summary": "Done", "warning": None, "reason": None,
        "count": None, "recommendation": None, "host": None}
    assert A.parse_bootstrap(BOOT_WARN) == {
        "severity": "WARN", "progress": 10, "tag": "conn_done", "summary": "Connected to a relay",
        "warning": "Connection refused", "reason": "CONNECTREFUSED", "count": 3, "recommendation": "ignore",
        "host": "192.0.2.1:9001"}


@pytest.mark.parametrize("value", ["", "garbage", "NOTICE", "NOTICE STATUS PROGRESS=1", 'NOTICE BOOTSTRAP SUMMARY="x',
                                   'NOTICE BOOTSTRAP SUMMARY="bad \\q escape"', None])
def test_parse_bootstrap_not_a_status(value):
    assert A.parse_bootstrap(value) is None


def test_parse_bootstrap_odd_fields():
    odd = A.parse_bootstrap("LOUD BOOTSTRAP PROGRESS=101 COUNT=x")
    assert odd["severity"] is None and odd["progress"] is None and odd["count"] is None and odd["tag"] is None
    assert A.parse_bootstrap("NOTICE BOOTSTRAP")["progress"] is None


# -- Stem's get_effective_rate -------------------------------------------------------------------
def stem_reference(values):
    """stem 1.8.2 Controller.get_effective_rate, the loop verbatim (with int() done already)."""
    value = None
    for attr, attr_value in values:
        if attr_value == 0 and attr.startswith('Relay'):
            continue
        value = min(value, attr_value) if value else attr_value
    return value


@pytest.mark.parametrize("rate, relay, advertised, expected", [
    (1073741824, 0, 1073741824, 1073741824),
    (5242880, 2097152, 3145728, 2097152),
    (5242880, 0, 3145728, 3145728),
    (5242880, 8388608, 9999999, 5242880),
    (102400, 0, 0, 0),          # MaxAdvertisedBandwidth 0 wins: Stem's min()
    (0, 0, 51200, 51200),       # a BandwidthRate of 0 is replaced by the next value, as in Stem
    (0, 4096, 51200, 4096),
    (0, 0, 0, 0),
])
def test_effective_rate_matches_stem(rate, relay, advertised, expected):
    values = [("BandwidthRate", rate), ("RelayBandwidthRate", relay), ("MaxAdvertisedBandwidth", advertised)]
    assert A.effective_rate(rate, relay, advertised) == expected == stem_reference(values)


@pytest.mark.parametrize("burst, relay, expected", [(10485760, 4194304, 4194304), (10485760, 0, 10485760),
                                                    (1024, 4096, 1024), (0, 4096, 4096)])
def test_effective_burst_matches_stem(burst, relay, expected):
    values = [("BandwidthBurst", burst), ("RelayBandwidthBurst", relay)]
    assert A.effective_burst(burst, relay) == expected == stem_reference(values)


def test_effective_rate_unknown_value():
    assert A.effective_rate(None, 0, 1) is None
    assert A.effective_rate(1, None, 1) is None
    assert A.effective_burst(1, None) is None


def test_time_until_reset_never_negative_and_started_at():
    assert A.accounting_facts(AWAKE, CONF, END + 100)["time_until_reset"] == 0
    assert A.accounting_facts(AWAKE, CONF, None)["time_until_reset"] is None
    process = A.process_facts({"uptime": "3600"}, RETRIEVED + 0.7)
    assert process["started_at"] == A.iso_time(RETRIEVED - 3600)
    assert A.process_facts({"uptime": "3600"}, None)["started_at"] is None


def test_accounting_max_zero_or_missing_gives_no_fraction():
    for conf in ({}, dict(CONF, AccountingMax="0"), dict(CONF, AccountingMax="bad")):
        facts = A.accounting_facts(AWAKE, conf, RETRIEVED)
        assert facts["bytes_used"] == 123456789
        assert facts["bytes_left"] is facts["fraction_used"] is facts["fraction_left"] is None


# -- tolerant querying ---------------------------------------------------------------------------
class FakeFetch(object):
    """fetch() of a tor that lacks some names; message(name) is tor's 552 text."""

    def __init__(self, known, message=lambda name: 'Unrecognized key "%s"' % name):
        self.known = known
        self.message = message
        self.calls = []

    def __call__(self, names):
        self.calls.append(list(names))
        for name in names:
            if name not in self.known:
                raise UnrecognizedKey("552", self.message(name), "GETINFO")
        return dict((n, self.known[n]) for n in names)


def test_query_tolerant_all_known_is_one_call():
    fetch = FakeFetch({"a": "1", "b": "2"})
    assert A.query_tolerant(fetch, ["a", "b"]) == ({"a": "1", "b": "2"}, [])
    assert fetch.calls == [["a", "b"]]


def test_query_tolerant_drops_what_tor_names():
    fetch = FakeFetch({"version": "0.3.4.1", "traffic/read": "5"})
    assert A.query_tolerant(fetch, ["version", "uptime", "traffic/read", "dormant"]) == (
        {"version": "0.3.4.1", "traffic/read": "5"}, ["uptime", "dormant"])
    assert fetch.calls == [["version", "uptime", "traffic/read", "dormant"], ["version", "traffic/read", "dormant"],
                           ["version", "traffic/read"]]


def test_query_tolerant_config_key_case_insensitive():
    fetch = FakeFetch({"BandwidthRate": "1"}, lambda name: 'Unrecognized configuration key "%s"' % name.lower())
    assert A.query_tolerant(fetch, ["AccountingRule", "BandwidthRate"]) == ({"BandwidthRate": "1"},
                                                                            ["AccountingRule"])


def test_query_tolerant_unnamed_key_asks_one_by_one():
    fetch = FakeFetch({"a": "1", "c": "3"}, lambda name: "Unrecognized key")
    assert A.query_tolerant(fetch, ["a", "b", "c"]) == ({"a": "1", "c": "3"}, ["b"])
    assert fetch.calls == [["a", "b", "c"], ["a"], ["b"], ["c"]]


def test_query_tolerant_nothing_known():
    fetch = FakeFetch({})
    assert A.query_tolerant(fetch, ["a", "b"]) == ({}, ["a", "b"])
    assert A.query_tolerant(fetch, []) == ({}, [])


def test_query_tolerant_other_errors_propagate():
    def refuse(names):
        raise OperationFailed("551", "Internal error", "GETINFO")
    with pytest.raises(OperationFailed):
        A.query_tolerant(refuse, ["a"])


def _wire(raw):
    return "".join("%s%s%s\r\n" % line for line in raw).encode()


def test_collect_over_a_scripted_old_tor():
    """A tor without `uptime` and `dormant` (552 for each, as tor words it), then GETCONF."""
    keys, options = A.keys_for(A.GROUPS)
    answered = [line for line in RAW_AWAKE if not line[2].startswith(("uptime=", "dormant="))]
    script = [
        (b"GETINFO version process/pid uptime ", b'552 Unrecognized key "uptime"\r\n'),
        (b"GETINFO version process/pid status/", b'552 Unrecognized key "dormant"\r\n'),
        (b"GETINFO version process/pid status/", _wire(answered)),
        (b"GETCONF AccountingMax AccountingRule", _wire([("250", "-", "%s=%s" % kv) for kv in CONF_RECORDED[:-1]]
                                                       + [("250", " ", "%s=%s" % CONF_RECORDED[-1])])),
    ]
    with FakeTor(script) as fake:
        controller = Controller(ControlSocket.tcp("127.0.0.1", fake.port, 5.0))
        try:
            facts, missing = A.collect(controller, A.GROUPS, connected=RETRIEVED, clock=lambda: RETRIEVED)
        finally:
            controller.close()
    assert not fake.errors
    assert missing == ["uptime", "dormant"]
    assert fake.received[0] == ("GETINFO " + " ".join(keys)).encode()
    assert fake.received[3] == ("GETCONF " + " ".join(options)).encode()
    expected = A.build_facts(AWAKE, CONF, A.GROUPS, RETRIEVED, RETRIEVED)
    expected.update(uptime=None, started_at=None, dormant=None)
    assert facts == expected


def test_collect_getinfo_only_when_no_conf_needed():
    script = [(b"GETINFO traffic/read traffic/written", b"250-traffic/read=10\r\n250-traffic/written=20\r\n250 OK\r\n")]
    with FakeTor(script) as fake:
        controller = Controller(ControlSocket.tcp("127.0.0.1", fake.port, 5.0))
        try:
            facts, missing = A.collect(controller, ["traffic"], clock=lambda: RETRIEVED)
        finally:
            controller.close()
    assert not fake.errors
    assert missing == [] and facts["traffic"] == {"read": 10, "written": 20}
    assert [r for r in fake.received if r.startswith(b"GET")] == [b"GETINFO traffic/read traffic/written"]


def test_collect_reply_missing_a_key_is_a_protocol_error():
    script = [(b"GETINFO traffic/read", b"250-traffic/read=10\r\n250 OK\r\n")]
    with FakeTor(script) as fake:
        controller = Controller(ControlSocket.tcp("127.0.0.1", fake.port, 5.0))
        try:
            with pytest.raises(ProtocolError):
                A.collect(controller, ["traffic"])
        finally:
            controller.close()
