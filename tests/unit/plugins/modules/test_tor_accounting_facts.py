# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_accounting_facts main() against the fake control port (conftest.py): the groups of
include, accounting on and off, keys an older tor does not know (552) and failures."""

import calendar
import time

import pytest

from ansible_collections.onionlab.tor.plugins.modules import tor_accounting_facts as module

ACCOUNTING_ON = {
    "uptime": "3600",
    "status/bootstrap-phase": 'NOTICE BOOTSTRAP PROGRESS=100 TAG=done SUMMARY="Done"',
    "network-liveness": "up",
    "dormant": "0",
    "status/circuit-established": "1",
    "accounting/enabled": "1",
    "accounting/hibernating": "soft",
    "accounting/bytes": "1000 2000",
    "accounting/bytes-left": "9000 8000",
    "accounting/interval-start": "2026-12-01 00:00:00",
    "accounting/interval-wake": "2026-12-01 00:10:00",
    "accounting/interval-end": "2100-01-01 00:00:00",
    "traffic/read": "123456",
    "traffic/written": "654321",
}
CONF = {
    "AccountingMax": ["10000"],
    "AccountingRule": ["sum"],
    "AccountingStart": ["month 1 0:00"],
    "BandwidthRate": ["1073741824"],
    "BandwidthBurst": ["1073741824"],
    "RelayBandwidthRate": ["0"],
    "RelayBandwidthBurst": ["2000000"],
    "MaxAdvertisedBandwidth": ["5000000"],
}
GROUP_KEYS = {
    "process": {"version", "pid", "uptime", "started_at"},
    "status": {"bootstrap", "network_liveness", "dormant", "circuit_established"},
    "accounting": {"accounting"},
    "traffic": {"traffic"},
    "bandwidth": {"effective_rate", "effective_burst", "bandwidth"},
}


@pytest.fixture
def relay(fake):
    """The fake as a tor with accounting on."""
    fake.info.update(ACCOUNTING_ON)
    fake.conf.update(CONF)
    return fake


def epoch(iso):
    return calendar.timegm(time.strptime(iso, "%Y-%m-%dT%H:%M:%SZ"))


def test_every_group(runner, relay):
    result = runner.ok(module, control_port=relay.port)
    assert result["changed"] is False and result["missing_keys"] == []
    tor = result["ansible_facts"]["tor"]
    assert set(tor) == set.union({"connection_time", "retrieved_at"}, *GROUP_KEYS.values())
    retrieved = epoch(tor["retrieved_at"])
    assert abs(retrieved - time.time()) < 60 and epoch(tor["connection_time"]) <= retrieved
    assert (tor["version"], tor["pid"], tor["uptime"]) == ("0.4.9.11", int(relay.info["process/pid"]), 3600)
    assert epoch(tor["started_at"]) == retrieved - 3600
    assert tor["bootstrap"]["progress"] == 100 and tor["bootstrap"]["tag"] == "done"
    assert tor["bootstrap"]["summary"] == "Done" and tor["bootstrap"]["warning"] is None
    assert (tor["network_liveness"], tor["dormant"], tor["circuit_established"]) == ("up", False, True)
    assert tor["traffic"] == {"read": 123456, "written": 654321}
    assert tor["effective_rate"] == 5000000 and tor["effective_burst"] == 2000000
    assert tor["bandwidth"]["relay_rate"] == 0 and tor["bandwidth"]["max_advertised"] == 5000000
    accounting = tor["accounting"]
    assert accounting["enabled"] is True and accounting["hibernating"] == "soft"
    assert (accounting["bytes_read"], accounting["bytes_written"]) == (1000, 2000)
    assert (accounting["bytes_left_read"], accounting["bytes_left_written"]) == (9000, 8000)
    assert (accounting["max"], accounting["rule"], accounting["start"]) == (10000, "sum", "month 1 0:00")
    assert (accounting["bytes_used"], accounting["bytes_left"]) == (3000, 7000)      # sum: read + written
    assert (accounting["fraction_used"], accounting["fraction_left"]) == (0.3, 0.7)
    assert accounting["interval_start"] == "2026-12-01T00:00:00Z"
    assert accounting["interval_end"] == "2100-01-01T00:00:00Z"
    assert accounting["time_until_reset"] == epoch("2100-01-01T00:00:00Z") - retrieved
    # one GETINFO for every key, one GETCONF for every option
    assert relay.commands() == ["PROTOCOLINFO", "AUTHENTICATE", "GETINFO", "GETCONF", "QUIT"]


@pytest.mark.parametrize("group", sorted(GROUP_KEYS))
def test_include_one_group(runner, relay, group):
    result = runner.ok(module, control_port=relay.port, include=[group])
    assert set(result["ansible_facts"]["tor"]) == {"connection_time", "retrieved_at"} | GROUP_KEYS[group]
    asked = [line for line in relay.received if line.startswith(("GETINFO", "GETCONF"))]
    if group == "bandwidth":
        assert asked == ["GETCONF BandwidthRate BandwidthBurst RelayBandwidthRate RelayBandwidthBurst "
                         "MaxAdvertisedBandwidth"]
    elif group == "accounting":
        assert asked == ["GETINFO accounting/enabled accounting/hibernating accounting/bytes accounting/bytes-left "
                         "accounting/interval-start accounting/interval-wake accounting/interval-end",
                         "GETCONF AccountingMax AccountingRule AccountingStart"]
    else:
        assert len(asked) == 1 and asked[0].startswith("GETINFO ")


def test_accounting_off(runner, fake):
    fake.info.update(ACCOUNTING_ON)
    fake.info.update({"accounting/enabled": "0", "accounting/hibernating": "awake", "accounting/bytes": "0 0"})
    fake.conf["AccountingMax"] = ["0"]
    result = runner.ok(module, control_port=fake.port, include=["accounting"])
    accounting = result["ansible_facts"]["tor"]["accounting"]
    assert accounting.pop("enabled") is False
    assert set(accounting.values()) == {None}


def test_keys_an_older_tor_does_not_know(runner, relay):
    del relay.info["uptime"]
    del relay.info["dormant"]
    relay.unknown_options.add("AccountingRule")
    result = runner.ok(module, control_port=relay.port)
    assert sorted(result["missing_keys"]) == ["AccountingRule", "dormant", "uptime"]
    tor = result["ansible_facts"]["tor"]
    assert tor["uptime"] is None and tor["started_at"] is None and tor["dormant"] is None
    assert tor["version"] == "0.4.9.11" and tor["network_liveness"] == "up"      # the rest is still read
    assert tor["accounting"]["rule"] is None
    assert tor["accounting"]["bytes_used"] == 2000          # no AccountingRule: tor counts the larger way
    # asked again without each key tor named in its 552, then once more for the options
    getinfos = [line.split()[1:] for line in relay.received if line.startswith("GETINFO")]
    assert len(getinfos) == 3 and "uptime" in getinfos[0] and "dormant" in getinfos[1]
    assert "uptime" not in getinfos[2] and "dormant" not in getinfos[2] and "version" in getinfos[2]
    assert [line for line in relay.received if line.startswith("GETCONF")][-1] == (
        "GETCONF AccountingMax AccountingStart BandwidthRate BandwidthBurst RelayBandwidthRate RelayBandwidthBurst "
        "MaxAdvertisedBandwidth")


def test_odd_values_are_null(runner, relay):
    relay.info.update({"uptime": "-5", "accounting/bytes": "lots", "network-liveness": "sideways",
                       "status/bootstrap-phase": "garbage"})
    tor = runner.ok(module, control_port=relay.port)["ansible_facts"]["tor"]
    assert tor["uptime"] is None and tor["network_liveness"] is None and tor["bootstrap"] is None
    assert tor["accounting"]["bytes_read"] is None and tor["accounting"]["bytes_used"] is None


def test_check_mode(runner, relay):
    normal = runner.ok(module, control_port=relay.port, include=["accounting", "traffic"])
    checked = runner.ok(module, control_port=relay.port, include=["accounting", "traffic"], check_mode=True)
    assert checked["changed"] is False
    # time_until_reset counts from each run's own clock: the two runs may straddle a second
    normal_accounting, checked_accounting = (dict(r["ansible_facts"]["tor"]["accounting"]) for r in (normal, checked))
    assert abs(normal_accounting.pop("time_until_reset") - checked_accounting.pop("time_until_reset")) <= 2
    assert checked_accounting == normal_accounting
    assert checked["ansible_facts"]["tor"]["traffic"] == normal["ansible_facts"]["tor"]["traffic"]


def test_connection_refused(runner, fake):
    port = fake.port
    fake.__exit__(None, None, None)          # nobody listens there any more
    result = runner.fails(module, control_port=port)
    assert result["msg"] == "cannot connect to tor's control port 127.0.0.1:%d: Connection refused" % port
    assert result["changed"] is False and result["error"] == "ConnectionFailed"
    assert "ansible_facts" not in result


def test_authentication_refused(runner, fake):
    fake.refuse("AUTHENTICATE", "515", "Authentication failed: Password did not match HashedControlPassword value "
                                       "from configuration")
    result = runner.fails(module, control_port=fake.port)
    assert result["msg"] == ("tor refused authentication: 515 Authentication failed: Password did not match "
                             "HashedControlPassword value from configuration")
    assert result["error"] == "AuthenticationFailed"


def test_getinfo_refused_otherwise(runner, relay):
    relay.refuse("GETINFO", "551", "Internal error")
    result = runner.fails(module, control_port=relay.port)
    assert result["msg"] == "tor refused GETINFO: 551 Internal error"


def test_bad_parameters(runner):
    result = runner.fails(module, control_port=9051, include=["process", "gossip"])
    assert "value of include must be one or more of: process, status, accounting, traffic, bandwidth" in result["msg"]
    assert "gossip" in result["msg"]
    assert runner.fails(module, control_port=9051, timeout=0)["msg"] == "timeout must be a positive number of seconds"
