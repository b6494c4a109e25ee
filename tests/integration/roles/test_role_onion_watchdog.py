# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_watchdog role on a bed host (systemd-nspawn, Debian's tor joined to the private network), over ssh:
the timer installed and enabled, a second run and a check-mode run change nothing, a bad variable refused with one
message before anything; the watchdog's service, started by systemd, checks the host's onion service from the
network and says so in the journal and the textfile metrics; state=absent removes it all."""

import json
import time
import types

import pytest

from harness.ansible_run import run_playbook
from harness.reach import Reach, bed_tor

SERVICE_DIR = "/var/lib/tor/onionlab_watchdog_web"


def _play(hostbed, tmp_path, tasks=None, roles=None, check=False, host=None):
    play = {"hosts": host or hostbed.hosts[0]["name"], "gather_facts": False}
    if tasks:
        play["tasks"] = tasks
    if roles:
        play["roles"] = roles
    return run_playbook([play], tmp_path, check=check, timeout=600, extra_env={"ANSIBLE_HOST_KEY_CHECKING": "False"},
                        extra_args=["-i", hostbed.inventory_path])


def _ssh(hostbed, command):
    rc, out = hostbed.sh(command, check=False)
    return types.SimpleNamespace(returncode=rc, stdout=out)


@pytest.mark.timeout(900)
def test_watchdog_role_installs_checks_and_removes(hostbed, http_backend, tmp_path):
    role = {"role": "onionlab.tor.onion_watchdog", "onion_watchdog_interval_minutes": 60,
            "onion_watchdog_restart_command": ["systemctl", "restart", "tor@default"]}
    # its backend: the test's web server on 127.0.0.1 (the bed's hosts share this machine's network); a healthy
    # verdict needs one that answers (the backend and reach layers)
    made = _play(hostbed, tmp_path, tasks=[{"name": "onion service", "onionlab.tor.tor_hidden_service": {
        "path": SERVICE_DIR, "ports": [{"port": 80, "target_port": http_backend.port}]}, "register": "svc"}])
    assert made.rc == 0, made.output
    address = made.task("onion service", host=hostbed.hosts[0]["name"])["result"]["onion_address"]
    try:
        bad = _play(hostbed, tmp_path, roles=[dict(role, onion_watchdog_addresses=["nope.onion"])])
        said = " ".join(bad.output.split())
        assert bad.rc != 0 and "onion_watchdog: onion_watchdog_addresses must be v3 onion addresses" in said, said
        assert "with a right checksum, .onion optional); not: nope.onion" in said, said
        assert _ssh(hostbed, "test -e /etc/onionlab-watchdog.json").returncode != 0

        first = _play(hostbed, tmp_path, roles=[role])
        assert first.rc == 0, first.output
        again = _play(hostbed, tmp_path, roles=[role])
        assert again.rc == 0 and again.stats[hostbed.hosts[0]["name"]]["changed"] == 0, (
            [(t["task"], str(t.get("result"))[:300]) for t in again.tasks if t["status"] == "changed"], again.output)
        checked = _play(hostbed, tmp_path, roles=[role], check=True)
        assert checked.rc == 0 and checked.stats[hostbed.hosts[0]["name"]]["changed"] == 0, checked.output
        timer = _ssh(hostbed, "systemctl is-enabled onionlab-watchdog.timer; systemctl is-active onionlab-watchdog.timer")
        assert timer.stdout.split() == ["enabled", "active"], timer.stdout
        assert _ssh(hostbed, "stat -c %a /etc/onionlab-watchdog.json").stdout.strip() == "600"

        # once the HSDirs a client asks serve the service's current descriptor (tor's own events: the host's tor
        # fetches it from each of them), systemd runs the watchdog: a healthy run is silent in the journal, its
        # metrics say it; each run's journal lines and gauge printed. The deadline counts from that event: the
        # watchdog asks the same HSDirs, so its first run is healthy; a few runs at most.
        host = hostbed.hosts[0]
        with Reach(bed_tor(host), bed_tor(host)) as reach:
            reach.wait_published([address], since=None)
            healthy = 'onionlab_watchdog_healthy{onion="%s"} 1' % address[:-6]
            deadline = time.monotonic() + 60
            while True:
                run = _ssh(hostbed, "systemctl start onionlab-watchdog.service; "
                                    "journalctl -u onionlab-watchdog.service -o cat -n 2 --no-pager | grep '^onionlab'; "
                                    "grep '^onionlab_watchdog_healthy' "
                                    "/var/lib/prometheus/node-exporter/onionlab_watchdog.prom")
                print(run.stdout.strip())
                if healthy in run.stdout or time.monotonic() > deadline:
                    break
                time.sleep(3)
            assert healthy in run.stdout, "%s\n%s" % (run.stdout, reach.report(address))
        metrics = _ssh(hostbed, "cat /var/lib/prometheus/node-exporter/onionlab_watchdog.prom").stdout
        assert 'onionlab_watchdog_checks_total{onion="%s"}' % address[:-6] in metrics, metrics
        assert "onionlab_watchdog_tor_up 1" in metrics
        assert 'onionlab_watchdog_repairs_total{onion="%s",step="restart"} 0' % address[:-6] in metrics
        state = json.loads(_ssh(hostbed, "cat /var/lib/onionlab-watchdog/state.json").stdout)
        print("state: %s" % state["services"][address])

        gone = _play(hostbed, tmp_path, roles=[dict(role, onion_watchdog_state="absent")])
        assert gone.rc == 0, gone.output
        left = _ssh(hostbed, "ls /etc/systemd/system/onionlab-watchdog.* /etc/onionlab-watchdog.json "
                             "/usr/local/lib/onionlab-watchdog 2>&1; systemctl is-active onionlab-watchdog.timer")
        assert "No such file" in left.stdout and "inactive" in left.stdout, left.stdout
    finally:
        _play(hostbed, tmp_path, tasks=[{"onionlab.tor.tor_hidden_service": {"path": SERVICE_DIR, "state": "absent",
                                                                               "purge": True}}])
