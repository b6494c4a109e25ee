# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tor role's systemd watchdog (tor_watchdog_sec) and the health check's SocksPort (tor_health_socks_port) on a
bed host (systemd-nspawn, Debian's tor and unit, joined to the private network), over ssh (issue 38, "hung tor").

* check mode says what it would do and writes nothing; the real run writes the drop-in and reloads systemd, restarts
  nothing and says that the running tor has no watchdog until it next starts (it learns WATCHDOG_USEC only then); a
  second run changes nothing; after a restart of tor (the test's, as an operator's or a reboot) it runs under it.
* a healthy tor under the drop-in pings: over a run of consensus fetches (the private network votes every 10 s) its
  MainPID and NRestarts stay as they were.
* a tor stopped with SIGSTOP (its MainPID, from systemctl show) is aborted by systemd after at most WatchdogSec and
  started again by the unit's Restart=on-failure: the test waits for NRestarts and a new MainPID, and measures.
* a longer value or 0 changes the drop-in without a restart; 0 removes it.
* tor_socks_port: 0 with tor_health_socks_port: auto opens a SocksPort on 127.0.0.1 that GETINFO net/listeners/socks
  names; with false, none.
WatchdogSec here is 10 s (pings every 5 s) so that the test is short; the role's default is 120 s."""

import re
import time

import pytest

from harness.ansible_run import run_playbook
from harness.fixtures import _say, running_bed
from harness.reach import bed_tor

from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect

pytestmark = pytest.mark.timeout(1200)

SETUP = "onionlab.tor.tor : Tor installed, its torrc checked by tor and written, tor running"
UNIT = "tor@default.service"
DROPIN = "/etc/systemd/system/tor@default.service.d/onionlab-watchdog.conf"
WATCHDOG = 10


@pytest.fixture(scope="module")
def bed(privnet):
    yield from running_bed(1, "wdog", privnet)


def ssh(bed, script):
    return bed.sh(script, timeout=120)[1]


def unit_state(bed):
    out = ssh(bed, "systemctl show -p MainPID -p NRestarts -p ActiveState -p SubState -p WatchdogUSec %s" % UNIT)
    return dict(line.split("=", 1) for line in out.split())


def role(bed, tmp_path, check=False, diff=False, **role_vars):
    host = bed.hosts[0]
    play = {"hosts": "testbed", "gather_facts": False, "vars": dict({
        "tor_control_port": host["tor_control_port"],
        "tor_socks_port": "127.0.0.1:%d ExtendedErrors" % host["tor_socks_port"],
        "tor_config_lines": "{{ testbed_privnet_torrc_lines }}",
        "tor_torrc_takeover": True}, **role_vars), "roles": ["onionlab.tor.tor"]}
    run = run_playbook([play], tmp_path, check=check, diff=diff, timeout=600,
                       extra_args=["-i", bed.inventory_path])
    assert run.rc == 0, run.output
    return run, run.task(SETUP, host=host["name"])


def wait_for(what, condition, timeout, step=0.5):
    t0 = time.monotonic()
    while True:
        value = condition()
        if value:
            return value, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise AssertionError("%s: not within %.0fs" % (what, timeout))
        time.sleep(step)


def socks_listeners(bed):
    tor = bed_tor(bed.hosts[0])
    ctl = wait_for("tor's control port", lambda: _connect(tor), 60)[0]
    try:
        return ctl.get_info("net/listeners/socks")["net/listeners/socks"]
    finally:
        ctl.close()


def _connect(tor):
    try:
        return connect(port=tor.control_port, cookie_path=tor.cookie_path)
    except Exception:  # noqa: BLE001 - tor is (re)starting
        return None


def test_watchdog_restarts_a_stopped_tor_and_spares_a_healthy_one(bed, tmp_path):
    host = bed.hosts[0]["name"]
    assert ssh(bed, "test -e %s && echo yes || echo no" % DROPIN).strip() == "no"
    before = unit_state(bed)
    assert before["WatchdogUSec"] in ("0", "infinity"), before  # Debian's unit has none

    # check mode: what it would do, nothing written
    run, setup = role(bed, tmp_path, check=True, diff=True, tor_watchdog_sec=WATCHDOG)
    assert setup["status"] == "changed" and setup["result"]["steps"]["watchdog"] == "changed", setup
    assert "WatchdogSec=%d" % WATCHDOG in run.stdout, run.stdout
    assert ssh(bed, "test -e %s && echo yes || echo no" % DROPIN).strip() == "no"
    assert unit_state(bed)["MainPID"] == before["MainPID"]

    # the real run: drop-in, daemon-reload, no restart (the running tor has no watchdog until it next starts)
    run, setup = role(bed, tmp_path, tor_watchdog_sec=WATCHDOG)
    assert setup["result"]["steps"]["watchdog"] == "changed" and "restart" not in setup["result"]["steps"], setup
    assert "the running tor has no watchdog until it next starts" in " ".join(setup["result"]["messages"]), setup
    assert unit_state(bed)["MainPID"] == before["MainPID"]
    again, setup = role(bed, tmp_path, tor_watchdog_sec=WATCHDOG)
    assert again.stats[host]["changed"] == 0, setup
    ssh(bed, "systemctl restart %s" % UNIT)
    state, dummy = wait_for("tor active under the watchdog", lambda: (
        lambda s: s if s["ActiveState"] == "active" and s["MainPID"] not in ("0", before["MainPID"]) else None)(
            unit_state(bed)), 60)
    assert state["WatchdogUSec"] == "%ds" % WATCHDOG, state
    env = ssh(bed, "tr '\\0' '\\n' < /proc/%s/environ | grep ^WATCHDOG_USEC= || true" % state["MainPID"])
    assert env.strip() == "WATCHDOG_USEC=%d" % (WATCHDOG * 1000000), env
    again, setup = role(bed, tmp_path, tor_watchdog_sec=WATCHDOG)
    assert again.stats[host]["changed"] == 0, setup
    assert unit_state(bed)["MainPID"] == state["MainPID"]

    # healthy: pings every WatchdogSec/2 through consensus fetches, never restarted
    def new_consensus(seen=set()):
        seen.add(ssh(bed, "stat -c %Y /var/lib/tor/cached-microdesc-consensus 2>/dev/null || true").strip())
        now = unit_state(bed)
        assert now["MainPID"] == state["MainPID"] and now["NRestarts"] == state["NRestarts"], (state, now)
        return len(seen) >= 8
    dummy, took = wait_for("8 consensus documents fetched", new_consensus, 300, step=2)
    _say("healthy tor under WatchdogSec=%ds: 8 consensus fetches in %.0fs, MainPID %s, NRestarts %s unchanged"
         % (WATCHDOG, took, state["MainPID"], state["NRestarts"]))

    # hung: SIGSTOP of its main PID; systemd aborts it and the unit starts it again
    ssh(bed, "kill -STOP %s" % state["MainPID"])
    restarted, took = wait_for("systemd's restart of the stopped tor", lambda: (
        lambda s: s if int(s["NRestarts"]) > int(state["NRestarts"]) and s["MainPID"] not in ("0", state["MainPID"])
        and s["ActiveState"] == "active" else None)(unit_state(bed)), WATCHDOG + 60)
    journal = ssh(bed, "journalctl -u %s --no-pager -o cat | grep -i watchdog | tail -5" % UNIT)
    _say("SIGSTOP of tor %s: restarted as %s after %.1fs (WatchdogSec=%ds); journal: %s"
         % (state["MainPID"], restarted["MainPID"], took, WATCHDOG, " | ".join(journal.splitlines())))
    assert "Watchdog timeout" in journal, journal
    assert WATCHDOG / 2.0 - 1 <= took <= WATCHDOG + 30, took

    # a new length, then off: no restart; systemd keeps the running tor's watchdog until it next starts, and says so
    for value in (2 * WATCHDOG, 0):
        run, setup = role(bed, tmp_path, diff=True, tor_watchdog_sec=value)
        assert setup["result"]["steps"]["watchdog"] == "changed" and "restart" not in setup["result"]["steps"], setup
        assert "the running tor keeps its watchdog of %d s until it next starts" % WATCHDOG in " ".join(
            setup["result"]["messages"]), setup
        now = unit_state(bed)
        assert now["MainPID"] == restarted["MainPID"] and now["WatchdogUSec"] == "%ds" % WATCHDOG, now
    assert ssh(bed, "test -e %s && echo yes || echo no" % DROPIN).strip() == "no"
    again, setup = role(bed, tmp_path, tor_watchdog_sec=0)
    assert again.stats[host]["changed"] == 0, setup


def test_health_socks_port_only_when_needed(bed, tmp_path):
    host = bed.hosts[0]
    own = "127.0.0.1:%d" % host["tor_socks_port"]
    # a SocksPort of its own on loopback: nothing added
    role(bed, tmp_path, tor_watchdog_sec=0)
    assert socks_listeners(bed) == '"%s"' % own
    # SocksPort 0: the health check's own on 127.0.0.1 (port auto: on a reload tor keeps its loopback SOCKS
    # listener as that one), named by GETINFO net/listeners/socks
    run, setup = role(bed, tmp_path, tor_watchdog_sec=0, tor_socks_port="0")
    torrc = ssh(bed, "cat /etc/tor/torrc")
    assert "SocksPort 127.0.0.1:auto ExtendedErrors" in torrc and "SocksPort 0" not in torrc, torrc
    listeners = wait_for("the health SocksPort", lambda: (
        lambda v: v if re.match(r'^"127\.0\.0\.1:\d+"$', v) else None)(socks_listeners(bed)), 30)[0]
    _say("tor_socks_port 0, tor_health_socks_port auto: net/listeners/socks = %s" % listeners)
    again, dummy = role(bed, tmp_path, tor_watchdog_sec=0, tor_socks_port="0")
    assert again.stats[host["name"]]["changed"] == 0
    # after a restart tor picks a port of its own for it
    ssh(bed, "systemctl restart tor@default")
    listeners = wait_for("the health SocksPort after a restart", lambda: (
        lambda v: v if re.match(r'^"127\.0\.0\.1:\d+"$', v) and v != '"%s"' % own else None)(
            socks_listeners(bed)), 60)[0]
    _say("after a restart: net/listeners/socks = %s" % listeners)
    # a host that must keep SocksPort 0 keeps it
    role(bed, tmp_path, tor_watchdog_sec=0, tor_socks_port="0", tor_health_socks_port=False)
    assert "SocksPort 0" in ssh(bed, "cat /etc/tor/torrc")
    wait_for("no SocksPort", lambda: socks_listeners(bed) == "", 30)
