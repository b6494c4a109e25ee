# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules on a stock host (tests/harness/hosts.py, HostBed(stock=True)): Debian's tor as
packaged, its tor@default unit with its sandbox, ControlSocket /run/tor/control and its cookie,
reached over ssh as root (issue 14). Every test that changes the host puts it back in `finally:`
(the session shares one stock host)."""

import os

from harness.ansible_run import run_playbook
from harness.hosts import RESTART_TOR, START_TOR, STOCK_TORRC

HS = "onionlab.tor.tor_hidden_service"
DROP_IN = "/etc/tor/torrc.d/onionlab_hidden_services.conf"
UNIT_DROP_IN = "/etc/systemd/system/tor@default.service.d/onionlab-test-rw.conf"


def sh(bed, h, command, check=True):
    return bed.sh(command, h, check=check, timeout=120)[1]


def play(bed, h, tmp_path, tasks, **kwargs):
    """The tasks on the stock host h through its inventory (a run's tasks are its records)."""
    return run_playbook([{"hosts": h["name"], "gather_facts": False, "tasks": tasks}], tmp_path,
                        extra_args=["-i", bed.inventory_path], **kwargs)


def tor_pid(bed, h):
    return sh(bed, h, "systemctl show -p MainPID --value tor@default").strip()


def host_state(bed, h):
    """What a refused run must leave as it was: tor's PID, torrc, the drop-in (or its absence)."""
    return sh(bed, h, "systemctl show -p MainPID --value tor@default; systemctl is-active tor@default; "
                      "sha256sum /etc/tor/torrc; cat %s 2>&1; ls -la /etc/tor" % DROP_IN)


def restore(bed, h, *paths):
    """The stock host as it was: torrc back to Debian's, the drop-in, the unit drop-in and the
    given paths gone, tor restarted on that."""
    # the drop-in's whole directory: Debian's tor has no /etc/tor/torrc.d, and a later test's snapshot
    # of /etc/tor would take a left one (and what goes in it next) for the host's own
    sh(bed, h, "cp %s /etc/tor/torrc; rm -rf %s %s %s; systemctl daemon-reload; systemctl reset-failed tor@default; "
               % (STOCK_TORRC, os.path.dirname(DROP_IN), UNIT_DROP_IN, " ".join(paths)) + RESTART_TOR)


def test_service_dir_outside_the_sandbox_is_refused(stockbed, tmp_path):
    """issue 14.1: path /srv/onion/web is outside what Debian's unit lets tor write: refused before
    anything is sent (single, services, check mode), tor keeps its PID, torrc and drop-in unchanged;
    a path under /var/lib/tor works; with a unit drop-in ReadWritePaths=/srv/onion it is accepted."""
    bed, h = stockbed, stockbed.hosts[0]
    sh(bed, h, "mkdir -p /srv/onion")
    before = host_state(bed, h)
    try:
        run = play(bed, h, tmp_path, [
            {"name": "single", HS: {"path": "/srv/onion/web", "ports": [{"port": 80}]}, "ignore_errors": True},
            {"name": "list", HS: {"services": [{"path": "/var/lib/tor/fine", "ports": [{"port": 80}]},
                                               {"path": "/srv/onion/web", "ports": [{"port": 80}]}]},
             "ignore_errors": True},
        ])
        run_check = play(bed, h, tmp_path, [
            {"name": "single", HS: {"path": "/srv/onion/web", "ports": [{"port": 80}]}, "ignore_errors": True}],
            check=True)
        for result in (run.task("single", h["name"]), run.task("list", h["name"]),
                       run_check.task("single", h["name"])):
            assert result["status"] == "failed", run.output
            msg = result["result"]["msg"]
            assert msg.startswith("service directory /srv/onion/web is on /, which is read-only for tor (PID %s, "
                                  "unit tor@default.service): tor cannot write it, and would refuse the "
                                  "configuration or exit. tor may write under: " % tor_pid(bed, h)), msg
            assert "/var/lib/tor" in msg and "ReadWritePaths=/srv/onion" in msg and "run again" not in msg, msg
        assert host_state(bed, h) == before
        sh(bed, h, "test ! -e /srv/onion/web && test ! -e /var/lib/tor/fine")   # nothing made either

        run = play(bed, h, tmp_path, [{"name": "inside", HS: {"path": "/var/lib/tor/sandbox_ok",
                                                                "ports": [{"port": 80}]}}])
        assert run.rc == 0, run.output
        assert run.task("inside", h["name"])["result"]["onion_address"].endswith(".onion")
        assert tor_pid(bed, h) == before.split()[0]

        sh(bed, h, "mkdir -p %s && printf '[Service]\\nReadWritePaths=/srv/onion\\n' > %s && systemctl daemon-reload && "
                   % (UNIT_DROP_IN.rsplit("/", 1)[0], UNIT_DROP_IN) + RESTART_TOR)
        pid = tor_pid(bed, h)
        run = play(bed, h, tmp_path, [{"name": "allowed", HS: {"path": "/srv/onion/web", "ports": [{"port": 80}]}}])
        assert run.rc == 0, run.output
        assert run.task("allowed", h["name"])["result"]["onion_address"].endswith(".onion")
        assert tor_pid(bed, h) == pid and sh(bed, h, "systemctl is-active tor@default").strip() == "active"
    finally:
        restore(bed, h, "/srv/onion", "/var/lib/tor/sandbox_ok")


INFO = "onionlab.tor.tor_hidden_service_info"


def foreign_control_port():
    """Whether something listens on 127.0.0.1:9051 of this machine, which the bed's containers share
    (another pytest process's stock host with a ControlPort): the modules' default discovery falls
    back to it when the host's own socket is missing or closed to the user."""
    import socket
    try:
        socket.create_connection(("127.0.0.1", 9051), timeout=2).close()
        return True
    except OSError:
        return False


def test_not_root_is_told_to_use_become(stockbed, tmp_path):
    """issue 14.6: a module run as a user who may not open tor's control socket (Debian: debian-tor's,
    mode 0660) says to use become: true and names the socket (it said "Permission denied ... (set
    control_port or control_socket)")."""
    bed, h = stockbed, stockbed.hosts[0]
    sh(bed, h, "id onionlab-tester || useradd -m -s /bin/sh onionlab-tester")
    as_user = {"become": True, "become_method": "su", "become_user": "onionlab-tester", "ignore_errors": True}
    try:
        run = play(bed, h, tmp_path, [
            dict({"name": "info", INFO: {}}, **as_user),
            dict({"name": "service", HS: {"path": "/var/lib/tor/web", "ports": [80]}}, **as_user),
            dict({"name": "socket given", INFO: {"control_socket": "/run/tor/control"}}, **as_user),
        ])
        for name in ("info", "service", "socket given"):
            result = run.task(name, h["name"])
            assert result["status"] == "failed", run.output
            msg = result["result"]["msg"]
            assert msg.startswith("cannot connect to tor's control socket /run/tor/control: Permission denied; "
                                  if name == "socket given" else "could not find tor's control interface: cannot "
                                  "connect to tor's control socket /run/tor/control: Permission denied; ") or (
                name != "socket given" and foreign_control_port()), msg
            # (found by default, a tor of another container on the shared 127.0.0.1:9051 may answer instead: then
            # its cookie, /run/tor/control.authcookie here too, is the file this user may not open)
            assert ("the module runs as onionlab-tester, who may not open /run/tor/control" in msg
                    and ": use become: true (or run it as a member of tor's group debian-tor)" in msg), msg
    finally:
        sh(bed, h, "userdel -r onionlab-tester", check=False)


def test_tor_stopped_is_named(stockbed, tmp_path):
    """issue 14.6: with tor stopped, the message asks whether tor is running (it said "no control
    socket ... (set control_port or control_socket)")."""
    bed, h = stockbed, stockbed.hosts[0]
    sh(bed, h, "systemctl stop tor@default")
    try:
        run = play(bed, h, tmp_path, [
            {"name": "info", INFO: {}, "ignore_errors": True},
            {"name": "service", HS: {"path": "/var/lib/tor/web", "ports": [80]}, "ignore_errors": True},
            {"name": "socket given", INFO: {"control_socket": "/run/tor/control"}, "ignore_errors": True},
        ])
        for name in ("info", "service"):
            msg = run.task(name, h["name"])["result"]["msg"]
            if foreign_control_port():   # another container's tor answers on the shared 127.0.0.1:9051
                continue
            assert msg.startswith("could not find tor's control interface: no control socket at /run/tor/control; "
                                  "cannot connect to tor's control port 127.0.0.1:9051: Connection refused; is tor "
                                  "running? (systemctl status tor)"), msg
        msg = run.task("socket given", h["name"])["result"]["msg"]
        assert msg == ("cannot connect to tor's control socket /run/tor/control: No such file or directory; is tor "
                       "running? (systemctl status tor)"), msg
        sh(bed, h, "test ! -e /var/lib/tor/web")
    finally:
        sh(bed, h, START_TOR)


def test_check_diff_shows_the_include_and_the_address_of_a_given_key(stockbed, tmp_path):
    """issue 14.10: on Debian's stock torrc, --check --diff shows the %include line a real run appends,
    and returns the onion_address of a key given (from a backup) instead of null; nothing changes."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
    from harness.keys import new_expanded_key
    bed, h = stockbed, stockbed.hosts[0]
    blob = onion.key_blob(new_expanded_key(b"onionlab stock check mode"))
    before = host_state(bed, h)
    run = play(bed, h, tmp_path, [{"name": "restore", HS: {"path": "/var/lib/tor/restored", "ports": [80],
                                                             "private_key": blob}}], check=True, diff=True)
    assert run.rc == 0, run.output
    result = run.task("restore", h["name"])["result"]
    assert result["changed"] is True
    assert result["onion_address"] == onion.service_id_of_key(blob) + ".onion"
    assert result["diff"]["after"]["torrc"] == {"path": "/etc/tor/torrc", "appended": [
        "# Added by onionlab.tor: the onion services it manages", "%include " + DROP_IN]}
    assert "%include " + DROP_IN in run.stdout
    assert blob.split(":", 1)[1] not in run.stdout + run.stderr + str(result)
    assert host_state(bed, h) == before
    sh(bed, h, "test ! -e /var/lib/tor/restored")
