# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""onionlab.tor.tor_accounting_facts against real tors (DisableNetwork 1), Stem 1.8.2 as the oracle.

Accounting needs no relay: `AccountingMax` alone makes even a client tor with DisableNetwork 1
report real accounting/* values (measured with tor 0.4.9.11; no ORPort, nothing leaves the
machine). Its counters stay at 0 without traffic, so to see real non-zero figures - and the
soft and hard hibernation states - a tor is started once to learn its interval start, stopped,
given a state file with AccountingBytesReadInInterval/WrittenInInterval for that interval, and
started again: tor loads the counters and, within a second or two, hibernates as it would have.

Stem and the facts are read within a second of each other; the counters cannot drift (no
traffic), so they must be equal; time_until_reset may differ by the seconds between the reads.
"""

import contextlib
import datetime
import os
import subprocess
import time

import pytest
import yaml
from stem.control import Controller as StemController

from ansible_collections.onionlab.tor.plugins.module_utils._tor import accounting as A
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import REPO, run_playbook
from harness.tor_instance import TorInstance

ACCOUNTING = ["AccountingMax 1 GB", "AccountingStart month 1 00:00"]
BANDWIDTH_TORRC = ["BandwidthRate 5 MB", "BandwidthBurst 10 MB", "RelayBandwidthRate 2 MB",
                   "RelayBandwidthBurst 4 MB", "MaxAdvertisedBandwidth 3 MB"]
MODULE = "onionlab.tor.tor_accounting_facts"
pytestmark = pytest.mark.filterwarnings("ignore:setDaemon:DeprecationWarning")  # stem 1.8.2 on Python 3.10+
GB = 1073741824


def controller(tor):
    return connect(port=tor.control_port, cookie_path=tor.cookie_path)


@contextlib.contextmanager
def stem(tor):
    """Stem's controller on tor. Stem sends TAKEOWNERSHIP when __OwningControllerProcess is its
    own pid (TorInstance sets it to ours), so tor would exit when Stem disconnects; undo that."""
    ctl = StemController.from_port(port=tor.control_port)
    try:
        ctl.authenticate()
        if ctl.get_conf("__OwningControllerProcess", None) != str(os.getpid()):
            ctl.msg("DROPOWNERSHIP")
            ctl.set_conf("__OwningControllerProcess", str(os.getpid()))
        yield ctl
    finally:
        ctl.close()


def wait_hibernating(tor, want, timeout=15):
    deadline = time.monotonic() + timeout
    while True:
        with controller(tor) as ctl:
            state = ctl.get_info("accounting/hibernating")["accounting/hibernating"]
        if state == want or time.monotonic() > deadline:
            assert state == want, tor.log()
            return
        time.sleep(0.1)


@contextlib.contextmanager
def accounting_tor(base, read=None, written=None, rule="max", expected_usage=1000, want="awake", extra=()):
    """A tor with ACCOUNTING (+ extra); with read/written, counters preloaded from a state file."""
    tor = TorInstance(base, extra=ACCOUNTING + ["AccountingRule %s" % rule] + list(extra))
    tor.start()
    try:
        if read is not None:
            with controller(tor) as ctl:
                start = ctl.get_info("accounting/interval-start")["accounting/interval-start"]
            tor.stop()
            (tor.data_dir / "state").write_text(
                "AccountingBytesReadInInterval %d\nAccountingBytesWrittenInInterval %d\n"
                "AccountingExpectedUsage %d\nAccountingIntervalStart %s\nAccountingSecondsActive 3600\n"
                "LastWritten %s\n" % (read, written, expected_usage, start,
                                      time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())))
            tor.restart()
            wait_hibernating(tor, want)
        yield tor
    finally:
        tor.stop()


def facts_now(tor, groups=A.GROUPS):
    with controller(tor) as ctl:
        facts, missing = A.collect(ctl, groups, connected=time.time())
    assert missing == []
    return facts


def iso(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch(text):
    return (datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
            .replace(tzinfo=datetime.timezone.utc).timestamp())


def assert_agrees_with_stem(tor, facts=None):
    """Facts (read now unless given) against Stem's get_accounting_stats and get_effective_rate."""
    before = time.time()
    facts = facts or facts_now(tor)
    with stem(tor) as ctl:
        stats = ctl.get_accounting_stats()
        rate, burst = ctl.get_effective_rate(), ctl.get_effective_rate(burst=True)
        conf = dict((k, int(ctl.get_conf(k))) for k in ("AccountingMax",))
    assert time.time() - before < 3, "the reads were too far apart to compare"
    acc = facts["accounting"]
    assert acc["enabled"] is True
    assert acc["hibernating"] == stats.status
    assert acc["interval_end"] == iso(stats.interval_end)
    assert (acc["bytes_read"], acc["bytes_written"]) == (stats.read_bytes, stats.written_bytes)
    assert (acc["bytes_left_read"], acc["bytes_left_written"]) == (stats.read_bytes_left, stats.write_bytes_left)
    assert acc["bytes_read"] + acc["bytes_left_read"] == stats.read_limit
    assert acc["bytes_written"] + acc["bytes_left_written"] == stats.write_limit
    # Stem: max(0, interval_end - int(its retrieved)); ours the same from our retrieved_at
    assert 0 <= acc["time_until_reset"] - stats.time_until_reset <= int(stats.retrieved - epoch(facts["retrieved_at"])) + 1
    assert acc["time_until_reset"] == max(0, int(epoch(acc["interval_end"]) - epoch(facts["retrieved_at"])))
    assert acc["max"] == conf["AccountingMax"]
    if "effective_rate" in facts:
        assert (facts["effective_rate"], facts["effective_burst"]) == (rate, burst)
    return facts, stats


# -- accounting off ------------------------------------------------------------------------------
def test_accounting_off(tmp_path):
    with TorInstance(tmp_path / "tor") as tor:
        facts = facts_now(tor)
        with stem(tor) as ctl:
            with pytest.raises(Exception, match="Accounting isn't enabled"):
                ctl.get_accounting_stats()
            assert (facts["effective_rate"], facts["effective_burst"]) == (
                ctl.get_effective_rate(), ctl.get_effective_rate(burst=True))
            assert facts["pid"] == ctl.get_pid() == tor.pid
            assert facts["version"] == str(ctl.get_version()).split(" ")[0]
            assert abs(epoch(facts["started_at"]) - ctl.get_start_time()) <= 2
            assert facts["traffic"] == {"read": int(ctl.get_info("traffic/read")),
                                        "written": int(ctl.get_info("traffic/written"))}
    assert facts["accounting"] == dict(dict.fromkeys(A.ACCOUNTING_FIELDS), enabled=False)
    assert facts["bootstrap"]["severity"] == "NOTICE" and facts["bootstrap"]["progress"] == 0
    assert facts["network_liveness"] == "down"  # DisableNetwork 1
    assert facts["dormant"] is False and facts["circuit_established"] is False
    assert facts["bandwidth"] == {"rate": GB, "burst": GB, "relay_rate": 0, "relay_burst": 0, "max_advertised": GB}
    assert facts["effective_rate"] == facts["effective_burst"] == GB
    assert facts["connection_time"] <= facts["retrieved_at"]


# -- accounting on, from the torrc -------------------------------------------------------------
@pytest.mark.parametrize("read, written, rule, usage, want", [
    (123456789, 98765432, "max", 1000, "awake"),
    (1030000000, 98765432, "max", 10000000, "soft"),   # 96% used, 3 hours' expected use left
    (1123456789, 98765432, "max", 1000, "hard"),       # over AccountingMax
    (123456789, 98765432, "sum", 1000, "awake"),
    (123456789, 998765432, "out", 1000, "awake"),
])
def test_accounting_torrc_agrees_with_stem(tmp_path, read, written, rule, usage, want):
    with accounting_tor(tmp_path / "tor", read, written, rule, usage, want, BANDWIDTH_TORRC) as tor:
        facts, stats = assert_agrees_with_stem(tor)
    acc = facts["accounting"]
    assert (acc["bytes_read"], acc["bytes_written"], acc["hibernating"]) == (read, written, want)
    assert acc["max"] == GB and acc["rule"] == rule and acc["start"] == "month 1 00:00"
    used = {"max": max(read, written), "sum": read + written, "out": written}[rule]
    assert acc["bytes_used"] == used
    assert acc["bytes_left"] == max(0, GB - used)
    assert acc["fraction_used"] == round(used / float(GB), 6)
    assert acc["fraction_left"] == round(max(0, GB - used) / float(GB), 6)
    # tor's own bytes-left agrees with ours for the limited direction
    assert acc["bytes_left"] == (acc["bytes_left_written"] if rule == "out" else acc["bytes_left_read"])
    end = datetime.datetime.fromtimestamp(epoch(acc["interval_end"]))  # AccountingStart is local time
    assert acc["interval_start"] < acc["interval_end"] and (end.day, end.hour, end.minute) == (1, 0, 0)
    assert facts["bandwidth"] == {"rate": 5 << 20, "burst": 10 << 20, "relay_rate": 2 << 20,
                                  "relay_burst": 4 << 20, "max_advertised": 3 << 20}
    assert (facts["effective_rate"], facts["effective_burst"]) == (2 << 20, 4 << 20)


# -- accounting switched on and off with SETCONF ---------------------------------------------------
def test_accounting_setconf_agrees_with_stem(tmp_path):
    with TorInstance(tmp_path / "tor") as tor:
        assert facts_now(tor, ["accounting"])["accounting"]["enabled"] is False
        with controller(tor) as ctl:
            ctl.set_conf([("AccountingMax", "500 MB"), ("AccountingStart", "week 1 10:00"),
                          ("AccountingRule", "in")])
        facts, _ = assert_agrees_with_stem(tor)
        acc = facts["accounting"]
        assert (acc["max"], acc["rule"], acc["start"], acc["hibernating"]) == (500 << 20, "in", "week 1 10:00", "awake")
        assert (acc["bytes_used"], acc["bytes_left"], acc["fraction_left"]) == (0, 500 << 20, 1.0)
        start, end = epoch(acc["interval_start"]), epoch(acc["interval_end"])
        # AccountingStart is in tor's local time; a DST change may make the week an hour shorter or longer
        assert abs(end - start - 7 * 86400) <= 3600
        assert (datetime.datetime.fromtimestamp(end).weekday(), datetime.datetime.fromtimestamp(end).hour) == (0, 10)
        with controller(tor) as ctl:
            ctl.set_conf([("AccountingMax", "0")])
        assert facts_now(tor, ["accounting"])["accounting"] == dict(dict.fromkeys(A.ACCOUNTING_FIELDS),
                                                                    enabled=False)


# -- bandwidth options in several combinations -----------------------------------------------------
BANDWIDTH_CASES = [
    # (SETCONF pairs, effective rate, effective burst) - the expectations are Stem's rules
    ([], GB, GB),
    ([("BandwidthRate", "5 MB"), ("BandwidthBurst", "10 MB"), ("RelayBandwidthRate", "2 MB"),
      ("RelayBandwidthBurst", "4 MB"), ("MaxAdvertisedBandwidth", "3 MB")], 2 << 20, 4 << 20),
    ([("BandwidthRate", "100 KB"), ("BandwidthBurst", "200 KB"), ("RelayBandwidthRate", "0"),
      ("RelayBandwidthBurst", "0"), ("MaxAdvertisedBandwidth", "50 KB")], 50 << 10, 200 << 10),
    ([("BandwidthRate", "1 MB"), ("BandwidthBurst", "1 MB"), ("RelayBandwidthRate", "512 KB"),
      ("RelayBandwidthBurst", "768 KB"), ("MaxAdvertisedBandwidth", "10 MB")], 512 << 10, 768 << 10),
    # tor raises BandwidthRate/Burst to RelayBandwidthRate/Burst; GETCONF reports the raised values
    ([("BandwidthRate", "800 kbits"), ("BandwidthBurst", "1 MB"), ("RelayBandwidthRate", "2 MB"),
      ("RelayBandwidthBurst", "3 MB"), ("MaxAdvertisedBandwidth", "1 GB")], 2 << 20, 3 << 20),
    ([("BandwidthRate", "800 kbits"), ("BandwidthBurst", "1 MB"), ("RelayBandwidthRate", "0"),
      ("RelayBandwidthBurst", "0")], 100 << 10, 1 << 20),  # tor: 1 kbit = 1024 bits
    ([("MaxAdvertisedBandwidth", "0")], 0, 1 << 20),   # Stem's min(): 0 wins
    ([("BandwidthRate", "0"), ("MaxAdvertisedBandwidth", "64 KB")], 64 << 10, 1 << 20),  # Stem: a 0 is replaced
]


def test_bandwidth_combinations_agree_with_stem(tmp_path):
    seen = []
    with TorInstance(tmp_path / "tor") as tor:
        for pairs, rate, burst in BANDWIDTH_CASES:
            if pairs:
                with controller(tor) as ctl:
                    ctl.set_conf(pairs)
            facts = facts_now(tor, ["bandwidth"])
            with stem(tor) as oracle:  # a fresh one each time: Stem caches GETCONF answers
                raw = dict((k, int(oracle.get_conf(o))) for k, o in A.BANDWIDTH_OPTIONS)
                want = (oracle.get_effective_rate(), oracle.get_effective_rate(burst=True))
            got = (facts["effective_rate"], facts["effective_burst"])
            assert got == want, pairs
            assert got == (rate, burst), pairs
            assert facts["bandwidth"] == raw, pairs
            seen.append(got)
    assert len(set(seen)) == len(seen)  # every case was a different combination


# -- the module, run by ansible-playbook -------------------------------------------------------------
@pytest.fixture(scope="module")
def used_tor(tmp_path_factory):
    """Accounting on, 11.5% of 1 GB used (max rule), bandwidth options from the torrc."""
    with accounting_tor(tmp_path_factory.mktemp("used-tor"), 123456789, 98765432, extra=BANDWIDTH_TORRC) as tor:
        yield tor


def facts_of(record):
    return record["result"]["ansible_facts"]["tor"]


def assert_clean_failure(run, name, message, error=None):
    record = run.task(name)
    assert record["status"] == "failed", record
    result = record["result"]
    assert message in result["msg"], result
    assert "\n" not in result["msg"]
    assert "module_stderr" not in result and "module_stdout" not in result
    assert "Traceback" not in str(result.get("exception", ""))
    if error:
        assert result["error"] == error


def test_module_in_a_playbook(used_tor, tmp_path):
    port, sock = used_tor.control_port, used_tor.control_socket
    connection = {"control_port": port}
    tasks = [
        {"name": "all", MODULE: dict(connection)},
        {"name": "check", MODULE: dict(connection), "check_mode": True},
        {"name": "socket, accounting only", MODULE: {"control_socket": sock, "include": ["accounting"]}},
        {"name": "process and traffic", MODULE: dict(connection, include=["process", "traffic"])},
        {"name": "closed port", MODULE: {"control_port": 1}, "ignore_errors": True},
        {"name": "no such socket", MODULE: {"control_socket": str(tmp_path / "nothing.sock")},
         "ignore_errors": True},
        {"name": "wrong cookie", MODULE: dict(connection, cookie_path="/dev/null"), "ignore_errors": True},
        {"name": "port and socket", MODULE: {"control_port": port, "control_socket": sock}, "ignore_errors": True},
        {"name": "port out of range", MODULE: {"control_port": 70000}, "ignore_errors": True},
        {"name": "unknown group", MODULE: dict(connection, include=["accounting", "weather"]),
         "ignore_errors": True},
    ]
    plays = [
        {"hosts": "localhost", "gather_facts": False, "tasks": tasks},
        {"name": "action group", "hosts": "localhost", "gather_facts": False,
         "module_defaults": {"group/onionlab.tor.tor": connection},
         "tasks": [{"name": "defaults", MODULE: {"include": ["bandwidth"]}}]},
    ]
    run = run_playbook(plays, tmp_path)
    facts, stats = assert_agrees_with_stem(used_tor, facts_of(run.task("all")))
    assert run.rc == 0, run.output
    assert run.stats["localhost"]["changed"] == 0 and run.stats["localhost"]["ignored"] == 6, run.output
    assert "Traceback" not in run.output
    for record in run.results(status="ok"):
        assert record["result"]["changed"] is False and record["result"]["missing_keys"] == []

    acc = facts["accounting"]
    assert (acc["bytes_read"], acc["bytes_written"], acc["max"], acc["fraction_left"]) == (
        123456789, 98765432, GB, 0.885022)
    assert facts["pid"] == used_tor.pid and facts["uptime"] >= 0
    assert (facts["effective_rate"], facts["effective_burst"]) == (2 << 20, 4 << 20)

    # check mode: the same facts (the clock-bound ones may have ticked)
    clock = ("connection_time", "retrieved_at", "uptime", "started_at", "accounting")  # accounting: below
    checked = facts_of(run.task("check"))
    assert dict((k, v) for k, v in checked.items() if k not in clock) == \
        dict((k, v) for k, v in facts.items() if k not in clock)
    assert abs(checked["accounting"]["time_until_reset"] - acc["time_until_reset"]) <= 5
    checked["accounting"]["time_until_reset"] = acc["time_until_reset"]
    assert checked["accounting"] == acc

    only = facts_of(run.task("socket, accounting only"))
    assert set(only) == {"connection_time", "retrieved_at", "accounting"}
    assert dict(only["accounting"], time_until_reset=0) == dict(acc, time_until_reset=0)
    some = facts_of(run.task("process and traffic"))
    assert set(some) == {"connection_time", "retrieved_at", "version", "pid", "uptime", "started_at", "traffic"}
    assert set(facts_of(run.task("defaults"))) == {"connection_time", "retrieved_at", "effective_rate",
                                                   "effective_burst", "bandwidth"}

    assert_clean_failure(run, "closed port", "cannot connect to tor's control port 127.0.0.1:1", "ConnectionFailed")
    assert_clean_failure(run, "no such socket", "nothing.sock", "ConnectionFailed")
    assert_clean_failure(run, "wrong cookie", "cookie", "AuthenticationFailed")
    assert_clean_failure(run, "port and socket", "mutually exclusive: control_port|control_socket")
    assert_clean_failure(run, "port out of range", "control_port must be between 1 and 65535")
    assert_clean_failure(run, "unknown group", "weather")


# -- the documented playbooks ------------------------------------------------------------------
def test_alert_playbook(used_tor, tmp_path):
    """docs/examples/accounting_alert.yml passes with 88.5% left, fails (also in check mode) on a
    tor in soft hibernation with 4% left, and skips its check on a tor without accounting."""
    book = (REPO / "docs" / "examples" / "accounting_alert.yml").read_text()
    assert yaml.safe_load(book)[0]["hosts"] == "all"
    name = "Fail when less than 10% of the period's bytes are left"

    ok = run_playbook(book, tmp_path, extra_vars={"tor_control_port": used_tor.control_port})
    assert ok.rc == 0 and ok.task(name)["status"] == "ok", ok.output
    assert ok.task(name)["result"]["msg"].startswith("950285035 bytes left until 20")
    assert "11.5% of 1.00 GB used (max), awake, the period ends 20" in ok.output

    with accounting_tor(tmp_path / "soft", 1030000000, 98765432, expected_usage=10000000, want="soft") as tor:
        low = run_playbook(book, tmp_path, check=True, diff=True,
                           extra_vars={"tor_control_socket": tor.control_socket})
    assert low.rc == 2, low.output
    failed = low.task(name)
    assert failed["status"] == "failed"
    assert failed["result"]["msg"].startswith("tor has only 43741824 of 1073741824 bytes left in this accounting")
    assert "hibernating: soft" in failed["result"]["msg"]
    assert low.task("Read tor's accounting figures")["result"]["changed"] is False

    with TorInstance(tmp_path / "plain") as plain:
        off = run_playbook(book, tmp_path, extra_vars={"tor_control_port": plain.control_port,
                                                        "tor_accounting_min_left": 0.9})
    assert off.rc == 0, off.output
    assert off.task("Fail when less than 90% of the period's bytes are left")["status"] == "skipped"


def test_module_examples_run(used_tor, tmp_path):
    """The module's EXAMPLES, as written but for the connection: module_defaults points the first
    examples at the test tor, 9051 becomes its port and the bootstrap wait (which cannot finish
    under DisableNetwork 1) is cut to one retry."""
    from ansible_collections.onionlab.tor.plugins.modules import tor_accounting_facts as module
    text = module.EXAMPLES.replace("control_port: 9051", "control_port: %d" % used_tor.control_port)
    text = text.replace("retries: 30", "retries: 1").replace("delay: 2", "delay: 0")
    tasks = yaml.safe_load(text)
    wait = [t for t in tasks if t.get("until")]
    assert len(wait) == 1
    wait[0]["ignore_errors"] = True
    play = {"hosts": "localhost", "gather_facts": False, "tasks": tasks,
            "module_defaults": {"group/onionlab.tor.tor": {"control_port": used_tor.control_port}}}
    run = run_playbook([play], tmp_path)
    assert run.rc == 0, run.output
    statuses = [(t["task"], t["status"]) for t in run.tasks]
    assert [s for _, s in statuses] == ["ok", "ok", "ok", "ok", "failed"], statuses
    waited = run.tasks[4]
    assert waited["result"]["attempts"] >= 1 and facts_of(waited)["bootstrap"]["progress"] == 0
    assert "2.00 MB/s, burst 4.00 MB" in run.output


def test_docs_page_shows_the_tested_playbook():
    """docs/accounting.md quotes docs/examples/accounting_alert.yml (comments aside)."""
    page = (REPO / "docs" / "accounting.md").read_text()
    section = page.split("## An alert", 1)[1]
    quoted = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    book = (REPO / "docs" / "examples" / "accounting_alert.yml").read_text()
    assert yaml.safe_load(quoted) == yaml.safe_load(book)


OLDEST_BIN = REPO / ".build" / "venv-2.17" / "bin"


@pytest.mark.skipif(not (OLDEST_BIN / "ansible-playbook").exists(),
                    reason="no .build/venv-2.17 (made by the sanity step, tests/ci/20-sanity.sh)")
def test_module_on_oldest_ansible_core(used_tor, tmp_path):
    """meta/runtime.yml says ansible-core >= 2.17: the same module and action group there."""
    play = {"hosts": "localhost", "gather_facts": False,
            "module_defaults": {"group/onionlab.tor.tor": {"control_port": used_tor.control_port}},
            "tasks": [{"name": "facts", MODULE: {"include": ["accounting"]}, "check_mode": True},
                      {"name": "closed", MODULE: {"control_port": 1}, "ignore_errors": True}]}
    run = run_playbook([play], tmp_path, bin_dir=OLDEST_BIN)
    assert run.rc == 0, run.output
    assert "ansible-core 2.17" in run_version(OLDEST_BIN)
    assert facts_of(run.task("facts"))["accounting"]["bytes_read"] == 123456789
    assert_clean_failure(run, "closed", "cannot connect to tor's control port 127.0.0.1:1", "ConnectionFailed")


def run_version(bin_dir):
    out = subprocess.run([str(bin_dir / "ansible-playbook"), "--version"], stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    return out.splitlines()[0].replace("[core ", "ansible-core ")
