# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tor role on an operator's own Debian host (fixture ``stockbed``: Debian's packaged tor, its
unit and sandbox, the stock torrc).

* A hand-written onion service in /etc/tor/torrc is never dropped silently: the role refuses (in
  check mode, diff mode and a real run alike) naming the service, its address and every other option
  it would drop, and leaves the file as it was; carried into the role's variables it keeps being
  served under the same address; with ``tor_torrc_takeover`` the file is replaced, the run says what
  went and the old file is kept as a backup (issue 14, point 3).
* ``--check`` on a host where tor is not installed yet reports what it would do instead of failing
  with "Could not find the requested service tor" (issue 14, point 10).

Every test puts the host back (stock torrc, nothing new under /etc/tor or /var/lib/tor, tor restarted)
in a ``finally``.
"""

import base64
import json
import os
import time

import pytest

from harness import hosts as hb
from harness.ansible_run import run_playbook

# each role run on the stock host takes 15-40 s (more on a loaded machine)
pytestmark = pytest.mark.timeout(900)

HAND = "/var/lib/tor/hand"
HAND_LINES = ["HiddenServiceDir %s" % HAND, "HiddenServicePort 80 127.0.0.1:8080", "Nickname handmade"]
ROLE = "onionlab.tor.tor : "
# the role's one task (plugins/action/tor_setup.py); its result says what each step did (steps) and
# what the run says (messages), as the separate tasks and debug messages did before
SETUP = ROLE + "Tor installed, its torrc checked by tor and written, tor running"
REFUSAL_TASK = SETUP
SNAPSHOT = "find /etc/tor /var/lib/tor -mindepth 1 -maxdepth 1 | sort"
WAIT_TOR = hb.WAIT_CONTROL_SOCKET


def ssh(bed, script, check=True):
    return bed.sh(script, check=check, timeout=120)[1]


def restart_tor(bed):
    ssh(bed, hb.RESTART_TOR)  # it waits for the control socket


def torrc_sha(bed):
    return ssh(bed, "sha256sum /etc/tor/torrc").split()[0]


def role(bed, tmp_path, check=False, diff=False, verbose=(), **role_vars):
    """The tor role on the stock host (no ControlPort: the stock ControlSocket stays), then the
    onion services tor runs (tor_hidden_service_info, registered as `onions`); verbose: e.g. ["-vvv"]."""
    play = {"hosts": "testbed", "gather_facts": True, "gather_subset": ["min"],
            "vars": dict({"tor_control_port": 0}, **role_vars), "roles": ["onionlab.tor.tor"]}
    info = {"hosts": "testbed", "gather_facts": False, "tasks": [
        {"name": "Onion services tor runs", "onionlab.tor.tor_hidden_service_info": {}, "register": "onions"}]}
    return run_playbook([play, info], tmp_path, check=check, diff=diff,
                        extra_args=["-i", bed.inventory_path] + list(verbose))


def served(bed, tmp_path, until=None, deadline=15.0):
    """{path: onion_address} of the persistent services tor runs now (a reload is a SIGHUP that tor
    acts on a moment later: with until, asked again until until(services) holds or deadline)."""
    t0 = time.monotonic()
    while True:
        run = run_playbook([{"hosts": "testbed", "gather_facts": False, "tasks": [
            {"name": "Onion services tor runs", "onionlab.tor.tor_hidden_service_info": {}}]}],
            tmp_path, extra_args=["-i", bed.inventory_path])
        assert run.rc == 0, run.output
        services = run.task("Onion services tor runs", host=bed.hosts[0]["name"])["result"]["hidden_services"]
        found = {s["path"]: s["onion_address"] for s in services if s["type"] == "persistent"}
        if until is None or until(found) or time.monotonic() - t0 > deadline:
            return found
        time.sleep(0.5)


@pytest.fixture
def hand_service(stockbed):
    """The stock torrc plus an operator's own onion service (and one option), tor restarted with
    it. Yields the service's address; afterwards the stock host as it was."""
    bed = stockbed
    ssh(bed, WAIT_TOR)
    before = set(ssh(bed, SNAPSHOT).split())
    try:
        ssh(bed, "set -e; install -d -m 0700 -o debian-tor -g debian-tor %s; "
                 "cp /etc/tor/torrc.onionlab-stock /etc/tor/torrc; printf '%%s\\n' %s >> /etc/tor/torrc"
                 % (HAND, " ".join("'%s'" % line for line in HAND_LINES)))
        restart_tor(bed)
        address = ssh(bed, "cat %s/hostname" % HAND).strip()
        assert address.endswith(".onion"), address
        yield address
    finally:
        extra = sorted(set(ssh(bed, SNAPSHOT).split()) - before)
        ssh(bed, "set -e; cp /etc/tor/torrc.onionlab-stock /etc/tor/torrc; "
                 + "".join("rm -rf -- '%s'; " % p for p in extra))
        restart_tor(bed)


def refusal(run, host):
    failed = [t for t in run.results(host=host, status="failed")]
    assert [t["task"] for t in failed] == [REFUSAL_TASK], run.output
    return failed[0]["result"]["msg"]


def test_hand_written_onion_service_is_not_dropped(stockbed, hand_service, tmp_path):
    bed, host = stockbed, stockbed.hosts[0]["name"]
    sha = torrc_sha(bed)
    assert served(bed, tmp_path) == {HAND: hand_service}
    messages = []
    for check, diff in ((True, True), (False, False)):
        run = role(bed, tmp_path, check=check, diff=diff)
        assert run.rc == 2, run.output
        messages.append(refusal(run, host))
        assert torrc_sha(bed) == sha, "the torrc changed (check=%s diff=%s)" % (check, diff)
        assert "torrc" not in run.task(SETUP, host=host)["result"].get("steps", {}), run.output
    # one decision, one message, whatever the mode
    assert len(set(messages)) == 1, messages
    msg = messages[0]
    assert msg.startswith("/etc/tor/torrc was not written by this role"), msg
    assert "onion services would go offline" in msg, msg
    assert "onion service %s (%s, HiddenServicePort 80 127.0.0.1:8080)" % (HAND, hand_service) in msg, msg
    assert "Nickname handmade" in msg and "tor_torrc_takeover=true" in msg and "Nothing was changed" in msg, msg
    assert ('for example tor_config_lines: ["HiddenServiceDir %s", "HiddenServicePort 80 127.0.0.1:8080", '
            '"Nickname handmade"]' % HAND) in msg, msg
    assert served(bed, tmp_path) == {HAND: hand_service}
    assert ssh(bed, "ls /etc/tor").split() == ["torrc", "torrc.onionlab-stock"]


def test_hand_written_onion_service_carried_into_the_role_stays_online(stockbed, hand_service, tmp_path):
    bed, host = stockbed, stockbed.hosts[0]["name"]
    old = ssh(bed, "cat /etc/tor/torrc")
    run = role(bed, tmp_path, tor_config_lines=HAND_LINES[:2], tor_options={"Nickname": "handmade"})
    assert run.rc == 0, run.output
    setup = run.task(SETUP, host=host)
    assert setup["status"] == "changed" and setup["result"]["steps"]["torrc"] == "changed", setup
    backup = setup["result"]["ansible_facts"]["tor_torrc_backup"]
    assert backup.startswith("/etc/tor/torrc.") and ssh(bed, "cat '%s'" % backup) == old
    onions = run.task("Onion services tor runs", host=host)["result"]["hidden_services"]
    assert [(s["path"], s["onion_address"]) for s in onions] == [(HAND, hand_service)], onions
    assert "# Written by the onionlab.tor.tor role" in ssh(bed, "cat /etc/tor/torrc")
    again = role(bed, tmp_path, tor_config_lines=HAND_LINES[:2], tor_options={"Nickname": "handmade"})
    assert again.rc == 0 and again.stats[host]["changed"] == 0, again.output
    assert served(bed, tmp_path) == {HAND: hand_service}
    # the role's own torrc: a service whose lines leave the variables goes, and the run says so
    dropping = role(bed, tmp_path, check=True, diff=True, tor_options={"Nickname": "handmade"})
    assert dropping.rc == 0, dropping.output
    said = dropping.task(SETUP, host=host)["result"]["messages"]
    assert said == [
        "/etc/tor/torrc (written by this role) is replaced; dropped from it (its onion services go offline): "
        "onion service %s (%s, HiddenServicePort 80 127.0.0.1:8080). To keep them, give them to the role: "
        'tor_config_lines: ["HiddenServiceDir %s", "HiddenServicePort 80 127.0.0.1:8080"] (or tor_options)'
        % (HAND, hand_service, HAND)], said


def test_takeover_replaces_says_what_went_and_keeps_a_backup(stockbed, hand_service, tmp_path):
    bed, host = stockbed, stockbed.hosts[0]["name"]
    old = ssh(bed, "cat /etc/tor/torrc")
    check = role(bed, tmp_path, check=True, diff=True, tor_torrc_takeover=True)
    assert check.rc == 0, check.output
    run = role(bed, tmp_path, tor_torrc_takeover=True)
    assert run.rc == 0, run.output
    for r in (check, run):
        said = r.task(SETUP, host=host)["result"]["messages"][0]
        assert said == ("tor_torrc_takeover=true: /etc/tor/torrc is replaced; dropped from it: onion service "
                        "%s (%s, HiddenServicePort 80 127.0.0.1:8080); Nickname handmade. To keep them, give them to "
                        'the role: tor_config_lines: ["HiddenServiceDir %s", "HiddenServicePort 80 127.0.0.1:8080", '
                        '"Nickname handmade"] (or tor_options)' % (HAND, hand_service, HAND)), said
    backup = run.task(SETUP, host=host)["result"]["ansible_facts"]["tor_torrc_backup"]
    assert ssh(bed, "cat '%s'" % backup) == old
    assert "The previous /etc/tor/torrc is kept as %s" % backup in run.stdout
    assert served(bed, tmp_path, until=lambda s: HAND not in s) == {}
    # the keys are still there: the service comes back when its lines do
    assert ssh(bed, "cat %s/hostname" % HAND).strip() == hand_service


UNITS = ["/lib/systemd/system/tor.service", "/lib/systemd/system/tor@.service",
         "/lib/systemd/system/tor@default.service", "/etc/init.d/tor", "/usr/bin/tor"]


def test_check_mode_before_tor_is_installed(stockbed, tmp_path):
    """No tor yet: no unit systemd knows (not even the one its sysv generator makes from
    /etc/init.d/tor), no tor binary, and the package check reports an install (a package of the
    mirror's index that is not installed stands in for tor)."""
    bed, host = stockbed, stockbed.hosts[0]["name"]
    ssh(bed, WAIT_TOR)
    sha = torrc_sha(bed)
    ssh(bed, "apt-cache policy tor-geoipdb | grep -q 'Installed: (none)'")
    try:
        ssh(bed, "set -e; mkdir -p /root/onionlab-away; "
                 + "".join("mv %s /root/onionlab-away/%d; " % (p, i) for i, p in enumerate(UNITS))
                 + "systemctl daemon-reload")
        assert "LoadState=not-found" in ssh(bed, "systemctl show -p LoadState tor")
        for diff in (False, True):
            run = role(bed, tmp_path, check=True, diff=diff, tor_package_name="tor-geoipdb")
            # the info play fails (no tor to ask); the role's play must not
            role_tasks = [t for t in run.results(host=host) if t["task"] != "Onion services tor runs"]
            assert [t for t in role_tasks if t["status"] == "failed"] == [], run.output
            setup = run.task(SETUP, host=host)
            assert setup["status"] == "changed", setup
            steps = setup["result"]["steps"]
            assert steps["package"] == "changed" and steps["service"] == "skipped", steps
            said = setup["result"]["messages"]
            assert said[-1].startswith("Check mode: tor-geoipdb is not installed yet"), said
            assert steps["torrc"] == "changed", steps
            assert torrc_sha(bed) == sha
    finally:
        ssh(bed, "".join("mv /root/onionlab-away/%d %s; " % (i, p) for i, p in enumerate(UNITS))
                 + "rmdir /root/onionlab-away; systemctl daemon-reload", check=False)
        restart_tor(bed)
    assert "LoadState=loaded" in ssh(bed, "systemctl show -p LoadState tor")


# -- issue 26 A5: the old torrc's secrets never leave the host, at -vvv --diff over ssh --------------------------------
def _encodings(text):
    """The text, and its base64 at each of the 3 alignments (as it shows inside the base64 of a larger file)."""
    data = text.encode()
    out = {text}
    for start in range(3):
        piece = data[start:]
        if len(piece) >= 8:
            full = len(piece) // 3 * 3
            out.add(base64.b64encode(piece[:full]).decode("ascii"))
    return out


def test_secret_of_the_old_torrc_is_not_printed_at_vvv_diff_over_ssh(stockbed, tmp_path):
    """The role's own torrc holds a proxy user and password (the password's value continued on a second line, as
    tor allows); the role replaces it (a new option, the proxy lines dropped, a new password of its own) at -vvv
    --diff over ssh. Neither the old nor the new secret values show anywhere in the output or the results, in
    clear or in base64 (of the value at any alignment, of the secret line, of the whole file); the diff is there
    and says "(value hidden)". Before the fix the module returned the old file in base64 (before_b64), which
    the ssh connection printed at -vvv."""
    bed, host = stockbed, stockbed.hosts[0]["name"]
    tag = os.urandom(5).hex()
    user, first, rest, new = "user-%s" % tag, "pw-%s-" % tag, "cont-%s" % tag, "newpw-%s" % tag
    secret_line = "Socks5ProxyPassword %s\\\n%s\n" % (first, rest)
    old = ("# Written by the onionlab.tor.tor role; local changes are overwritten.\nSocksPort 0\n"
           "Socks5Proxy 127.0.0.1:1\nSocks5ProxyUsername %s\n%sNickname before\n" % (user, secret_line))
    ssh(bed, WAIT_TOR)
    before = set(ssh(bed, SNAPSHOT).split())
    try:
        ssh(bed, "set -e; echo %s | base64 -d > /etc/tor/torrc" % base64.b64encode(old.encode()).decode())
        # tor reads the continued value as one password (so it is the secret the output must not show)
        dumped = ssh(bed, "tor --dump-config short --hush --defaults-torrc /usr/share/tor/tor-service-defaults-torrc "
                          "-f /etc/tor/torrc 2>/dev/null | grep ^Socks5ProxyPassword")
        assert dumped.strip() == "Socks5ProxyPassword %s%s" % (first, rest), dumped
        run = role(bed, tmp_path, diff=True, verbose=["-vvv"], tor_socks_port=0,
                   tor_options={"Nickname": "after", "Socks5Proxy": "127.0.0.1:2", "Socks5ProxyUsername": "u",
                                "Socks5ProxyPassword": new})
        assert run.rc == 0, run.output
        setup = run.task(SETUP, host=host)
        assert setup["status"] == "changed" and setup["result"]["steps"]["torrc"] == "changed", setup
        assert "ESTABLISH SSH CONNECTION" in run.output and len(run.output) > 10000   # over ssh, -vvv
        assert "-Nickname before" in run.stdout and "+Nickname after" in run.stdout, run.stdout   # the diff is there
        assert "-Socks5ProxyPassword (value hidden)" in run.stdout and "+Socks5ProxyPassword (value hidden)" in run.stdout
        looked_for = set()
        for text in (user, first, rest, first + rest, new, secret_line, old):
            looked_for |= _encodings(text)
        looked_for.add(base64.b64encode(old.encode()).decode())
        seen = sorted(t for t in looked_for if t in run.output or t in json.dumps(run.tasks))
        assert not seen, "printed: %s" % seen
        print("%d forms of the secrets grepped in %d bytes of -vvv --diff output over ssh: 0 hits"
              % (len(looked_for), len(run.output)))
    finally:
        extra = sorted(set(ssh(bed, SNAPSHOT).split()) - before)
        ssh(bed, "set -e; cp /etc/tor/torrc.onionlab-stock /etc/tor/torrc; "
                 + "".join("rm -rf -- '%s'; " % p for p in extra))
        restart_tor(bed)
