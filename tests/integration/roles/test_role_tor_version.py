# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tor role's tor_version on a stock Debian host of its own (issue 39, versions as code), with real packages:
harness/tor_debs.py makes .debs of the host's tor at other versions (one of them bad: its packaged service
defaults hold an option tor refuses) in a local apt repository on the host.

- present: the fact tor_versions says the package, the binary and the running tor (PID, not replaced), no pin;
- a bad build: its own tor reads the new torrc before anything is installed and refuses; the run fails with its
  line, the package, the pin and the running tor (same PID) stay as they were;
- an exact newer build: installed (the package's scripts restart tor), pinned (apt's candidate stays it although a
  newer one is in the sources), the fact says so; a rerun changes nothing; check mode of another version says what
  it would do and changes nothing;
- an older build: installed (a downgrade);
- a package upgraded on disk without a restart (dpkg -i with invoke-rc.d held back): the run says the running tor
  is the old one;
- present again: the pin removed.
"""


import pytest

from harness import hosts as hb
from harness import tor_debs
from harness.ansible_run import run_playbook

pytestmark = pytest.mark.timeout(900)
SETUP = "onionlab.tor.tor : Tor installed, its torrc checked by tor and written, tor running"


@pytest.fixture(scope="module")
def bed():
    hb.ensure_packages()
    bed = hb.HostBed(n=1, name_prefix="torver", stock=True)
    bed.up()
    try:
        yield bed
    finally:
        bed.down()


def ssh(bed, script, check=True):
    return bed.sh(script, check=check)[1]


def role(bed, tmp_path, check=False, **role_vars):
    play = {"hosts": "testbed", "gather_facts": False, "become": True,
            "vars": dict({"tor_control_port": 0}, **role_vars), "roles": ["onionlab.tor.tor"]}
    return run_playbook([play], tmp_path, check=check, extra_args=["-i", bed.inventory_path])


def result(run, bed):
    return run.task(SETUP, host=bed.hosts[0]["name"])["result"]


def pid(bed):
    return int(ssh(bed, "systemctl show -p MainPID --value tor@default").strip())


def test_versions_pinned_checked_installed_and_said(bed, tmp_path):
    first = role(bed, tmp_path)
    assert first.rc == 0, first.output
    versions = result(first, bed)["ansible_facts"]["tor_versions"]
    original = versions["package"]
    assert original and versions["binary"] and versions["pinned"] is None
    assert versions["running"] == {"pid": pid(bed), "version": versions["binary"], "replaced": False}
    print("present:", versions)

    # a value that is not a version: one message, nothing changed
    wrong = role(bed, tmp_path, tor_version="0.4.9.11; apt-get remove tor")
    assert wrong.rc != 0 and "Traceback" not in wrong.output
    assert "tor_version must be present, latest or an exact package version" in result(wrong, bed)["msg"]
    assert ssh(bed, "dpkg-query -W -f='${Version}' tor") == original

    new, newer, older = original + "+onionlab2", original + "+onionlab3", original + "+onionlab1"
    policy = ssh(bed, tor_debs.repo_script([(older, False), (new, False), (newer, True)]))
    print(policy)

    # the bad build: refused by its own tor before it is installed
    before = pid(bed)
    bad = role(bed, tmp_path, tor_version=newer)
    assert bad.rc != 0
    said = result(bad, bed)["msg"]
    print("bad build:", said)
    assert said.startswith("tor %s refuses the torrc" % newer) and "OnionlabRefusedOption" in said
    assert ssh(bed, "dpkg-query -W -f='${Version}' tor") == original and pid(bed) == before

    # an exact version: installed (restarted by the package), pinned against the newer one in the sources
    run = role(bed, tmp_path, tor_version=new)
    assert run.rc == 0, run.output
    got = result(run, bed)
    versions = got["ansible_facts"]["tor_versions"]
    print("installed:", got["steps"], versions)
    assert got["changed"] and got["steps"]["package"] == "changed" and got["steps"]["pin"] == "changed"
    assert got["steps"]["verify_version"] == "ok"
    assert versions["package"] == new and versions["pinned"] == new
    assert versions["running"]["pid"] == pid(bed) != before and versions["running"]["replaced"] is False
    policy = ssh(bed, "apt-cache policy tor")
    assert "Candidate: %s" % new in policy, policy
    assert ssh(bed, "cat %s" % "/etc/apt/preferences.d/onionlab-tor").splitlines()[1:] == [
        "Package: tor", "Pin: version %s" % new, "Pin-Priority: 1001"]
    upgrade = ssh(bed, "apt-get -s -o Dir::Etc::sourcelist=%s -o Dir::Etc::sourceparts=- upgrade" % tor_debs.SOURCE)
    assert "Inst tor " not in upgrade, upgrade

    again = role(bed, tmp_path, tor_version=new)
    assert again.rc == 0 and again.stats[bed.hosts[0]["name"]]["changed"] == 0, again.output

    check = role(bed, tmp_path, check=True, tor_version=older)
    assert check.rc == 0, check.output
    assert result(check, bed)["changed"] and "installs tor %s" % older in result(check, bed)["msg"]
    assert ssh(bed, "dpkg-query -W -f='${Version}' tor") == new

    # an older one: a downgrade
    down = role(bed, tmp_path, tor_version=older)
    assert down.rc == 0, down.output
    assert result(down, bed)["ansible_facts"]["tor_versions"]["package"] == older

    # upgraded on disk, not restarted: said
    running = pid(bed)
    ssh(bed, "set -e; printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; "
             "dpkg -i %s/tor_%s.deb >/dev/null; rm -f /usr/sbin/policy-rc.d" % (tor_debs.REPO, new))
    stale = role(bed, tmp_path, tor_version="present")
    assert stale.rc == 0, stale.output
    got = result(stale, bed)
    print("stale:", got.get("msg"), got["ansible_facts"]["tor_versions"])
    assert pid(bed) == running and got["ansible_facts"]["tor_versions"]["running"]["replaced"] is True
    assert "started before its binary was replaced on disk" in got["msg"] and "not restarted" in got["msg"]
    # present: the pin removed
    assert got["steps"]["pin"] == "changed" and got["ansible_facts"]["tor_versions"]["pinned"] is None
    assert ssh(bed, "test -e /etc/apt/preferences.d/onionlab-tor || echo gone").strip() == "gone"
