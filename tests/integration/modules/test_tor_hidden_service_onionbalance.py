# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_hidden_service's onionbalance_frontend against a real tor (DisableNetwork 1), run by real
ansible-playbook: the backend side of an Onionbalance setup (ob_config and
HiddenServiceOnionbalanceInstance 1), check mode, diff, idempotency, unset, info, restart."""

import os
import stat

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import run_playbook
from harness.keys import new_expanded_key

HS = "onionlab.tor.tor_hidden_service"
INFO = "onionlab.tor.tor_hidden_service_info"
FRONT_SID = onion.onion_address(onion.ed25519_public_from_expanded(new_expanded_key(b"obmod frontend one")))
FRONT = FRONT_SID + ".onion"
OTHER_FRONT = onion.onion_address(onion.ed25519_public_from_expanded(new_expanded_key(b"obmod frontend two"))) + ".onion"


def hs_task(tor, tmp_path, **params):
    params.setdefault("ports", [{"port": 80, "target_port": 8080}])
    params.setdefault("path", str(tmp_path / "web"))
    return {HS: dict(control_port=tor.control_port, config_file=str(tmp_path / "torrc.d" / "onionlab.conf"),
                     **params)}


def info_task(tor):
    return {INFO: {"control_port": tor.control_port}}


def results(run, name=HS):
    return [t["result"] for t in run.results(name)]


def live_conf(tor):
    with connect(port=tor.control_port) as ctl:
        return ctl.get_conf("HiddenServiceOptions")


def ob_config(path):
    try:
        with open(os.path.join(path, "ob_config")) as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def test_balanced_backend_create_check_diff_idempotent_change_unset(tor, tmp_path):
    path = str(tmp_path / "web")
    balanced = hs_task(tor, tmp_path, onionbalance_frontend=FRONT_SID)   # without .onion
    # check mode: nothing written, the diff shows the frontend
    run = run_playbook([balanced], tmp_path, check=True, diff=True)
    assert run.rc == 0, run.output
    (checked,) = results(run)
    assert checked["changed"] is True and not os.path.exists(path)
    assert live_conf(tor) == [("HiddenServiceOptions", None)]
    assert checked["diff"]["after"]["services"][0]["onionbalance_frontend"] == FRONT
    # the real run, twice, then info
    run = run_playbook([balanced, balanced, info_task(tor)], tmp_path, diff=True)
    assert run.rc == 0, run.output
    first, second = results(run)
    assert first["changed"] is True and second["changed"] is False
    assert first["service"]["onionbalance_frontend"] == FRONT == second["service"]["onionbalance_frontend"]
    assert ob_config(path) == "MasterOnionAddress %s\n" % FRONT
    st, dir_st = os.stat(os.path.join(path, "ob_config")), os.stat(path)
    assert stat.S_IMODE(st.st_mode) == 0o600 and stat.S_IMODE(dir_st.st_mode) == 0o700
    assert (st.st_uid, st.st_gid) == (dir_st.st_uid, dir_st.st_gid)
    key_st = os.stat(os.path.join(path, "hs_ed25519_secret_key"))   # tor's own file: same owner
    assert st.st_uid == key_st.st_uid
    assert live_conf(tor) == [("HiddenServiceDir", path), ("HiddenServicePort", "80 127.0.0.1:8080"),
                              ("HiddenServiceOnionBalanceInstance", "1")]
    assert "HiddenServiceOnionbalanceInstance 1\n" in (tmp_path / "torrc.d" / "onionlab.conf").read_text()
    (info,) = [r["hidden_services"] for r in results(run, INFO)]
    assert info[0]["onionbalance_frontend"] == FRONT and info[0]["onion_address"] == first["onion_address"]
    assert "OnionBalance: MasterOnionAddress %s registered" % FRONT in tor.log()
    address = first["onion_address"]

    # another frontend: ob_config rewritten, tor re-reads it (same block, SETCONF sent), diff shows both
    moved = hs_task(tor, tmp_path, onionbalance_frontend=OTHER_FRONT)
    run = run_playbook([moved, moved], tmp_path, diff=True)
    assert run.rc == 0, run.output
    changed, same = results(run)
    assert changed["changed"] is True and same["changed"] is False
    assert changed["diff"]["before"]["services"][0]["onionbalance_frontend"] == FRONT
    assert changed["diff"]["after"]["services"][0]["onionbalance_frontend"] == OTHER_FRONT
    assert ob_config(path) == "MasterOnionAddress %s\n" % OTHER_FRONT
    assert "OnionBalance: MasterOnionAddress %s registered" % OTHER_FRONT in tor.log()

    # a restart of tor reads the drop-in and the ob_config: still balanced, same address
    tor.restart()
    assert ("HiddenServiceOnionBalanceInstance", "1") in live_conf(tor)

    # unset: check mode shows it and keeps the file; then flag gone, ob_config gone, key kept
    plain = hs_task(tor, tmp_path)
    run = run_playbook([plain], tmp_path, check=True, diff=True)
    assert run.rc == 0, run.output
    (checked,) = results(run)
    assert checked["changed"] is True and ob_config(path) is not None
    assert checked["diff"]["before"]["services"][0]["onionbalance_frontend"] == OTHER_FRONT
    assert checked["diff"]["after"]["services"][0]["onionbalance_frontend"] is None
    run = run_playbook([plain, plain, info_task(tor)], tmp_path)
    assert run.rc == 0, run.output
    unset, again = results(run)
    assert unset["changed"] is True and again["changed"] is False
    assert unset["service"]["onionbalance_frontend"] is None and unset["onion_address"] == address
    assert ob_config(path) is None
    assert live_conf(tor) == [("HiddenServiceDir", path), ("HiddenServicePort", "80 127.0.0.1:8080")]
    assert results(run, INFO)[0]["hidden_services"][0]["onionbalance_frontend"] is None


def test_stale_ob_config_of_an_unbalanced_service_removed(tor, tmp_path):
    """A service the module makes unbalanced whose directory holds an ob_config (written by
    hand): the file goes (changed), tor's block stays."""
    path = str(tmp_path / "web")
    plain = hs_task(tor, tmp_path)
    run = run_playbook([plain], tmp_path)
    assert run.rc == 0, run.output
    with open(os.path.join(path, "ob_config"), "w") as handle:
        handle.write("MasterOnionAddress %s\n" % FRONT)
    run = run_playbook([plain, plain], tmp_path)
    assert run.rc == 0, run.output
    assert [r["changed"] for r in results(run)] == [True, False]
    assert ob_config(path) is None
