# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_hidden_service and tor_hidden_service_info, run by real ansible-playbook against a
real tor (DisableNetwork 1), with Stem reading the same tor as a second opinion."""

import hashlib
import json
import os
import stat
import types

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import run_playbook
from harness.fake_controller import FakeController
from harness.keys import new_expanded_key

HS = "onionlab.tor.tor_hidden_service"
INFO = "onionlab.tor.tor_hidden_service_info"
FRONTEND = onion.onion_address(onion.ed25519_public_from_expanded(new_expanded_key(b"round trip frontend"))) + ".onion"


def conn(tor, tmp_path):
    return {"control_port": tor.control_port, "config_file": str(tmp_path / "torrc.d" / "onionlab.conf")}


def hs_task(tor, tmp_path, register=None, **params):
    task = {HS: dict(conn(tor, tmp_path), **params)}
    if register:
        task["register"] = register
    return task


def results(run, name=HS):
    return [t["result"] for t in run.results(name)]


def live_conf(tor):
    with connect(port=tor.control_port) as ctl:
        return ctl.get_conf("HiddenServiceOptions")


def web(tmp_path, name="web"):
    return str(tmp_path / name)


def test_create_idempotent_and_address(tor, tmp_path):
    path = web(tmp_path)
    task = hs_task(tor, tmp_path, path=path, ports=[{"port": 80, "target_port": 8080}])
    run = run_playbook([task, task], tmp_path)
    assert run.rc == 0, run.output
    first, second = results(run)
    assert first["changed"] is True
    assert second["changed"] is False
    with open(os.path.join(path, "hostname")) as handle:
        hostname = handle.read().strip()
    assert first["onion_address"] == hostname == second["onion_address"]
    public = onion.read_public_key_file(os.path.join(path, "hs_ed25519_public_key"))
    assert onion.onion_address(public) + ".onion" == hostname
    assert first["service"]["ports"] == [{"port": 80, "target_address": "127.0.0.1", "target_port": 8080}]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    assert live_conf(tor) == [("HiddenServiceDir", path), ("HiddenServicePort", "80 127.0.0.1:8080")]
    # the drop-in holds it, and torrc now includes the drop-in (appended once)
    drop_in = tmp_path / "torrc.d" / "onionlab.conf"
    assert 'HiddenServiceDir "%s"' % path in drop_in.read_text()
    assert tor.torrc.read_text().count("%%include %s" % drop_in) == 1
    assert run.stats["localhost"]["changed"] == 1


def test_check_mode_touches_nothing(tor, tmp_path):
    path = web(tmp_path)
    run = run_playbook([hs_task(tor, tmp_path, path=path, ports=[{"port": 80}])], tmp_path, check=True, diff=True)
    assert run.rc == 0, run.output
    (res,) = results(run)
    assert res["changed"] is True
    assert not os.path.exists(path)
    assert not (tmp_path / "torrc.d").exists()
    assert live_conf(tor) == [("HiddenServiceOptions", None)]
    assert res["diff"]["before"] == {"services": [], "torrc": {"path": str(tor.torrc), "appended": []}}
    assert res["diff"]["after"]["services"][0]["path"] == path
    # the %include line the real run appends to torrc is in the diff (issue 14.10), and on screen
    include = "%%include %s" % (tmp_path / "torrc.d" / "onionlab.conf")
    assert res["diff"]["after"]["torrc"] == {"path": str(tor.torrc), "appended": [
        "# Added by onionlab.tor: the onion services it manages", include]}
    assert include in run.stdout, run.stdout


def test_ports_added_and_removed_options_changed(tor, tmp_path):
    path = web(tmp_path)
    other = web(tmp_path, "other")
    base = hs_task(tor, tmp_path, path=other, ports=[{"port": 22}])
    one = hs_task(tor, tmp_path, path=path, ports=[{"port": 80}])
    two = hs_task(tor, tmp_path, path=path, ports=[{"port": 80}, {"port": 443, "target_address": "::1"},
                                                   {"port": 81, "target_address": "unix:/run/x.sock"}],
                  num_intro_points=5, max_streams=10)
    back = hs_task(tor, tmp_path, path=path, ports=[{"port": 443, "target_address": "::1"}])
    run = run_playbook([base, one, two, two, back], tmp_path, diff=True)
    assert run.rc == 0, run.output
    changed = [r["changed"] for r in results(run)]
    assert changed == [True, True, True, False, True]
    assert live_conf(tor) == [
        ("HiddenServiceDir", other), ("HiddenServicePort", "22 127.0.0.1:22"),
        ("HiddenServiceDir", path), ("HiddenServicePort", "443 [::1]:443")]
    last = results(run)[-1]
    assert last["diff"]["before"]["services"][1]["num_intro_points"] == 5
    assert last["diff"]["after"]["services"][1]["num_intro_points"] == 3
    # the other service kept its key all along
    assert results(run)[0]["onion_address"] == onion.service_dir_address(other)


def test_absent_keeps_keys_purge_removes(tor, tmp_path):
    path = web(tmp_path)
    create = hs_task(tor, tmp_path, path=path, ports=[{"port": 80}], register="made")
    absent = hs_task(tor, tmp_path, path=path, state="absent")
    run = run_playbook([create, absent, absent], tmp_path)
    assert run.rc == 0, run.output
    assert [r["changed"] for r in results(run)] == [True, True, False]
    assert os.path.exists(os.path.join(path, "hs_ed25519_secret_key"))
    assert live_conf(tor) == [("HiddenServiceOptions", None)]
    address = results(run)[0]["onion_address"]
    # present again: same key, same address
    run = run_playbook([create, hs_task(tor, tmp_path, path=path, state="absent", purge=True)], tmp_path)
    assert run.rc == 0, run.output
    again, purged = results(run)
    assert again["onion_address"] == address
    assert purged["changed"] is True and purged["purged"] == [path]
    assert not os.path.exists(path)


def test_two_services_at_once_and_restart_keeps_them(tor, tmp_path):
    services = [{"path": web(tmp_path, "a"), "ports": [{"port": 80}]},
                {"path": web(tmp_path, "b"), "ports": [{"port": 22, "target_port": 2222}]}]
    task = hs_task(tor, tmp_path, services=services)
    run = run_playbook([task, task], tmp_path)
    assert run.rc == 0, run.output
    first, second = results(run)
    assert first["changed"] and not second["changed"]
    before = live_conf(tor)
    addresses = [s["onion_address"] for s in first["services"]]
    tor.restart()
    assert live_conf(tor) == before
    run = run_playbook([{INFO: {"control_port": tor.control_port}, "register": "info"}], tmp_path)
    info = results(run, INFO)[0]["hidden_services"]
    assert [s["onion_address"] for s in info] == addresses


def test_info_round_trip_exclusive(tor, tmp_path):
    """Info output fed back with exclusive: the same state; on a changed tor it restores it."""
    a, b, c, d = web(tmp_path, "a"), web(tmp_path, "b"), web(tmp_path, "c"), web(tmp_path, "d")
    setup = [hs_task(tor, tmp_path, path=a, ports=[{"port": 80, "target_port": 8080}], max_streams=3),
             hs_task(tor, tmp_path, path=b, ports=[{"port": 22}], allow_unknown_ports=True,
                     authorized_clients=[{"name": "alice", "public_key": onion.generate_client_keypair()[1]}]),
             hs_task(tor, tmp_path, path=d, ports=[{"port": 80}], onionbalance_frontend=FRONTEND),
             {INFO: {"control_port": tor.control_port}, "register": "info"},
             hs_task(tor, tmp_path, path=c, ports=[{"port": 1}]),
             hs_task(tor, tmp_path, path=a, ports=[{"port": 81}]),
             hs_task(tor, tmp_path, path=d, ports=[{"port": 80}]),   # no longer balanced: ob_config removed
             hs_task(tor, tmp_path, register="restored", exclusive=True,
                     services="{{ info.hidden_services | selectattr('type', 'equalto', 'persistent') | list }}"),
             hs_task(tor, tmp_path, register="again", exclusive=True,
                     services="{{ info.hidden_services | selectattr('type', 'equalto', 'persistent') | list }}"),
             {INFO: {"control_port": tor.control_port}, "register": "info2"}]
    run = run_playbook(setup, tmp_path)
    assert run.rc == 0, run.output
    info1, info2 = [r["hidden_services"] for r in results(run, INFO)]
    restored, again = results(run)[-2:]
    assert restored["changed"] is True and again["changed"] is False
    assert info1 == info2
    assert [s["path"] for s in info2] == [a, b, d]
    assert info2[1]["authorized_clients"][0]["name"] == "alice"
    # the balanced service came back balanced: flag and ob_config
    assert [s["onionbalance_frontend"] for s in info2] == [None, None, FRONTEND]
    with open(os.path.join(d, "ob_config")) as handle:
        assert handle.read() == "MasterOnionAddress %s\n" % FRONTEND
    assert os.path.exists(c)  # removed from tor by exclusive, but its keys are kept


def test_info_agrees_with_stem(tor, tmp_path):
    """Stem's get_hidden_service_conf and the info module read the same tor alike. (Stem 1.8.2
    raises on unix: and IPv6 targets, "invalid HiddenServicePort target address", so none here.)"""
    stem_control = pytest.importorskip("stem.control")
    a, b = web(tmp_path, "a"), web(tmp_path, "b")
    run = run_playbook([hs_task(tor, tmp_path, path=a, ports=[{"port": 80, "target_port": 8080},
                                                              {"port": 443}], max_streams=7),
                        hs_task(tor, tmp_path, path=b, ports=[{"port": 22, "target_address": "127.0.0.2"}],
                                allow_unknown_ports=True),
                        {INFO: {"control_port": tor.control_port}, "register": "info"}], tmp_path)
    assert run.rc == 0, run.output
    ours = results(run, INFO)[0]["hidden_services"]
    with stem_control.Controller.from_port(port=tor.control_port) as controller:
        controller.authenticate()
        theirs = controller.get_hidden_service_conf()
    assert list(theirs) == [s["path"] for s in ours]
    for service in ours:
        stem_ports = [(p, h, t) for p, h, t in theirs[service["path"]]["HiddenServicePort"]]
        our_ports = [(p["port"], p["target_address"], p["target_port"]) for p in service["ports"]]
        assert stem_ports == our_ports
    assert theirs[a]["HiddenServiceMaxStreams"] == "7" and ours[0]["max_streams"] == 7
    assert theirs[b]["HiddenServiceAllowUnknownPorts"] == "1" and ours[1]["allow_unknown_ports"] is True


def test_ephemeral_generated_supplied_detach_discard(tor, tmp_path):
    gen = hs_task(tor, tmp_path, ephemeral=True, ports=[{"port": 80, "target_port": 8080}],
                  return_private_key=True, register="gen")
    supplied = hs_task(tor, tmp_path, ephemeral=True, ports=[{"port": 80, "target_port": 8080}],
                       private_key="{{ gen.private_key }}")
    changed_ports = hs_task(tor, tmp_path, ephemeral=True, ports=[{"port": 81}], private_key="{{ gen.private_key }}")
    discard = hs_task(tor, tmp_path, ephemeral=True, ports=[{"port": 80}])
    remove = hs_task(tor, tmp_path, ephemeral=True, state="absent", service_id="{{ gen.service.service_id }}")
    run = run_playbook([gen, supplied, changed_ports, discard, remove, remove], tmp_path)
    assert run.rc == 0, run.output
    r_gen, r_sup, r_chg, r_disc, r_rm, r_rm2 = results(run)
    assert r_gen["changed"] and r_gen["private_key"].startswith("ED25519-V3:")
    sid = r_gen["service"]["service_id"]
    assert onion.service_id_of_key(r_gen["private_key"]) == sid
    assert r_sup["changed"] is False and r_sup["onion_address"] == sid + ".onion"
    assert r_chg["changed"] is True and r_chg["service"]["ports"][0]["port"] == 81
    assert r_chg["service"]["service_id"] == sid
    assert "private_key" not in r_disc and r_disc["changed"]
    assert r_rm["changed"] is True and r_rm2["changed"] is False
    with connect(port=tor.control_port) as ctl:
        detached = ctl.list_onions()["detached"]
    # the generated-then-removed one is gone; the DiscardPK one outlived its connection
    assert sid not in detached
    assert r_disc["service"]["service_id"] in detached
    # the key never reached the log of a run that did not ask for it
    assert r_gen["private_key"].split(":")[1] not in "".join(str(r) for r in (r_sup, r_chg, r_disc))


def test_authorized_clients(tor, tmp_path):
    path = web(tmp_path)
    _priv, alice = onion.generate_client_keypair()
    keys_file = tmp_path / "generated.json"
    task = hs_task(tor, tmp_path, path=path, ports=[{"port": 80}], register="made",
                   authorized_clients=[{"name": "alice", "public_key": alice}, {"name": "bob"}])
    task["no_log"] = True
    save = {"ansible.builtin.copy": {"content": "{{ made.generated_clients | to_json }}", "dest": str(keys_file)},
            "no_log": True}
    same = hs_task(tor, tmp_path, path=path, ports=[{"port": 80}],
                   authorized_clients=[{"name": "alice", "public_key": alice}, {"name": "bob"}])
    fewer = hs_task(tor, tmp_path, path=path, ports=[{"port": 80}], authorized_clients=[{"name": "bob"}])
    run = run_playbook([task, save, same, fewer], tmp_path, diff=True)
    assert run.rc == 0, run.output
    first, second, third = results(run)
    assert first["changed"] and not second["changed"] and third["changed"]
    (bob,) = json.loads(keys_file.read_text())
    assert bob["name"] == "bob" and second["generated_clients"] == []
    assert onion.b32(onion.x25519_public(onion.unb32(bob["private_key"], 32, "k"))) == bob["public_key"]
    assert bob["auth_private"] == "%s:descriptor:x25519:%s" % (second["onion_address"][:-6], bob["private_key"])
    assert bob["private_key"] not in run.output  # no_log hid it
    directory = os.path.join(path, "authorized_clients")
    assert sorted(os.listdir(directory)) == ["bob.auth", "probe.auth"]   # probe: the health check's own client
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.join(directory, "bob.auth")).st_mode) == 0o600
    assert open(os.path.join(directory, "bob.auth")).read().strip() == "descriptor:x25519:" + bob["public_key"]
    assert third["diff"]["after"]["services"][0]["authorized_clients"] == ["bob", "probe"]
    assert third["diff"]["before"]["services"][0]["authorized_clients"] == ["alice", "bob", "probe"]


@pytest.mark.parametrize("params, message", [
    ({"ports": [{"port": 0}]}, "between 1 and 65535"),
    ({"ports": [{"port": 80, "target_port": 70000}]}, "between 1 and 65535"),
    ({"ports": [{"port": 80, "target_address": "example.com"}]}, "neither an IP address nor unix:/path"),
    ({"ports": [{"port": 80, "target_address": "unix:relative"}]}, "unix:/absolute/path"),
    ({"path": "relative/dir", "ports": [{"port": 80}]}, "path must be absolute"),
    ({"path": "/etc/hostname", "ports": [{"port": 80}]}, "is not a directory"),
    ({"path": "/nonexistent-onionlab/x", "ports": [{"port": 80}]}, "parent directory"),
    ({"ports": [{"port": 80, "target_address": "127.0.0.1\r\nSIGNAL SHUTDOWN"}]}, "carriage return"),
    ({"ports": [{"port": 80}], "extra_options": {"HiddenServiceNoSuchOption": 1}}, "tor refused"),
    ({"ports": [{"port": 80}], "extra_options": {"ContactInfo": "x"}}, "another HiddenService* option"),
    ({"ports": []}, "at least one entry in ports"),
    ({"ports": [{"port": 80}], "num_intro_points": 99}, "between 3 and 20"),
    # an IPv6 target with a zone index: Python's ipaddress takes it, tor refuses it: refused before tor
    ({"ports": [{"port": 80, "target_address": "fe80::1%lo"}]}, "tor takes no IPv6 zone"),
    ({"ephemeral": True, "path": None, "ports": [{"port": 80}], "private_key": "ED25519-V3:bm90IGEga2V5"},
     "64-byte"),
    ({"ephemeral": True, "path": None, "ports": [{"port": 80}], "client_auth_v3": ["short"]}, "client public key"),
    ({"ephemeral": True, "path": None, "ports": [{"port": 80}], "client_auth_v3": ["not base32!"]}, "base32"),
])
def test_bad_input_one_clear_message(tor, tmp_path, params, message):
    params = dict({"path": web(tmp_path)}, **params)
    if params.get("path") is None:
        del params["path"]
    run = run_playbook([hs_task(tor, tmp_path, **params)], tmp_path)
    assert run.rc != 0
    (res,) = results(run)
    assert message in res["msg"], res["msg"]
    assert "Traceback" not in run.output
    assert res.get("exception", "(traceback unavailable)") == "(traceback unavailable)"  # 2.19 adds this key
    assert live_conf(tor) == [("HiddenServiceOptions", None)]
    with connect(port=tor.control_port) as ctl:
        assert ctl.get_info("version")["version"]  # tor is alive: nothing was injected


def test_unsafe_existing_directory_reported_not_changed(tor, tmp_path):
    path = web(tmp_path)
    os.mkdir(path, 0o755)
    os.chmod(path, 0o755)
    run = run_playbook([hs_task(tor, tmp_path, path=path, ports=[{"port": 80}])], tmp_path)
    assert run.rc != 0
    assert "is unsafe" in results(run)[0]["msg"] and "0755" in results(run)[0]["msg"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755


def test_persistent_private_key_installed_never_overwritten(tor, tmp_path):
    h = new_expanded_key()
    blob = onion.key_blob(h)
    address = onion.service_id_of_key(blob) + ".onion"
    path = web(tmp_path)
    task = hs_task(tor, tmp_path, path=path, ports=[{"port": 80}], private_key=blob)
    other_key = onion.key_blob(bytes(h[:32]) + b"\x00" * 32)
    clash = hs_task(tor, tmp_path, path=path, ports=[{"port": 80}], private_key=other_key)
    run = run_playbook([task, task, clash], tmp_path)
    assert run.rc != 0
    first, second, third = results(run)
    assert first["changed"] and first["onion_address"] == address
    assert not second["changed"]
    assert "refusing to overwrite" in third["msg"] and blob.split(":")[1] not in run.output
    assert stat.S_IMODE(os.stat(os.path.join(path, "hs_ed25519_secret_key")).st_mode) == 0o600
    assert onion.service_dir_address(path) == address


def test_prune_removes_only_managed_services(tor, tmp_path):
    a, b = web(tmp_path, "a"), web(tmp_path, "b")
    both = hs_task(tor, tmp_path, services=[{"path": a, "ports": [{"port": 80}]}, {"path": b, "ports": [{"port": 81}]}])
    only_a = hs_task(tor, tmp_path, services=[{"path": a, "ports": [{"port": 80}]}], prune=True)
    run = run_playbook([both, only_a, only_a], tmp_path)
    assert run.rc == 0, run.output
    assert [r["changed"] for r in results(run)] == [True, True, False]
    assert [s["path"] for s in results(run)[-1]["services"]] == [a]
    assert os.path.exists(os.path.join(b, "hs_ed25519_secret_key"))
    assert "/b" not in (tmp_path / "torrc.d" / "onionlab.conf").read_text()


def test_refused_ephemeral_change_keeps_the_running_service(tor, tmp_path):
    """Changing an ephemeral service means DEL_ONION + ADD_ONION; when tor refuses the new
    configuration the old one is put back, so a failed run costs nothing."""
    blob = onion.key_blob(bytearray(hashlib.sha512(b"refused").digest()[:32]) + b"\x00" * 32)
    good = hs_task(tor, tmp_path, ephemeral=True, private_key=blob, ports=[{"port": 80}], max_streams=5)
    bad = hs_task(tor, tmp_path, ephemeral=True, private_key=blob, ports=[{"port": 81}], max_streams=70000)
    bad["ignore_errors"] = True
    run = run_playbook([good, bad, good], tmp_path)
    assert run.rc == 0, run.output
    first, refused, again = results(run)
    assert first["changed"] and run.results(HS)[1]["status"] == "failed" and "tor refused ADD_ONION" in refused["msg"]
    assert blob.split(":")[1] not in run.output
    sid = onion.service_id_of_key(blob)
    with connect(port=tor.control_port) as ctl:
        assert sid in ctl.list_onions()["detached"]
    assert again["changed"] is False  # the old configuration is what runs


def test_ports_short_forms(tor, tmp_path):
    """issue 14.7: ports as 80, "80:8080", "80:127.0.0.1:8080", "80:unix:/path" through a real
    ansible-playbook (the YAML of the issue), the same as their dict forms; another shape fails
    naming the expected ones."""
    path = web(tmp_path)
    book = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: short
      %(hs)s:
        control_port: %(port)d
        config_file: %(conf)s
        path: %(path)s
        ports: [22, "80:8080", "81:127.0.0.1:8081", "443:unix:/run/web.sock"]
    - name: dicts
      %(hs)s:
        control_port: %(port)d
        config_file: %(conf)s
        path: %(path)s
        ports:
          - {port: 22}
          - {port: 80, target_port: 8080}
          - {port: 81, target_address: 127.0.0.1, target_port: 8081}
          - {port: 443, target_address: "unix:/run/web.sock"}
    - name: wrong
      %(hs)s:
        control_port: %(port)d
        config_file: %(conf)s
        path: %(path)s
        ports: ["80/tcp"]
      ignore_errors: true
""" % {"hs": HS, "port": tor.control_port, "conf": tmp_path / "torrc.d" / "onionlab.conf", "path": path}
    run = run_playbook(book, tmp_path)
    assert run.rc == 0, run.output
    assert run.task("short")["result"]["changed"] is True
    assert run.task("dicts")["result"]["changed"] is False
    assert live_conf(tor) == [("HiddenServiceDir", path), ("HiddenServicePort", "22 127.0.0.1:22"),
                              ("HiddenServicePort", "80 127.0.0.1:8080"), ("HiddenServicePort", "81 127.0.0.1:8081"),
                              ("HiddenServicePort", "443 unix:/run/web.sock")]
    wrong = run.task("wrong")
    assert wrong["status"] == "failed"
    assert wrong["result"]["msg"].startswith("ports entry '80/tcp': expected a port (80, to 127.0.0.1:80), "
                                             '"PORT:TARGET_PORT" ("80:8080")'), wrong["result"]["msg"]


def test_refusal_after_a_key_was_installed_says_what_was_written(tmp_path):
    """issue 14.5: tor refuses the new block after this run installed a key from a vault: the
    message says so (it said "nothing was changed"), the key is kept, and the rerun takes it up.
    Every input that tor 0.4.9.11 refuses is now refused by the module before anything is written
    (the last one, an IPv6 target with a zone, fe80::1%lo), so tor's 513 comes from the stateful
    fake control port, answered once; the playbook runs are real."""
    torrc = tmp_path / "torrc"
    torrc.write_text("SocksPort 0\n")
    key = onion.key_blob(bytes(range(64)))
    address = onion.service_id_of_key(key) + ".onion"
    vaulted, other = web(tmp_path, "vaulted2"), web(tmp_path, "other")
    services = [{"path": vaulted, "ports": [80], "private_key": key}, {"path": other, "ports": [81]}]
    with FakeController(tmp_path / "tordata", torrc) as fake:
        fake.refuse("SETCONF", "513", "Unacceptable option value: Failed to configure rendezvous options. See logs "
                                      "for details.", times=1)
        port = types.SimpleNamespace(control_port=fake.port)
        run = run_playbook([dict(hs_task(port, tmp_path, services=services), ignore_errors=True),
                            hs_task(port, tmp_path, services=services[:1])], tmp_path)
        assert fake.errors == []
    failed, done = results(run)
    msg = failed["msg"]
    assert msg.startswith("tor refused the onion-service configuration (513 "), msg
    assert "nothing was changed" not in msg and "tor's configuration was not changed" in msg, msg
    assert msg.endswith("This run wrote, and kept so that no key is lost: the key of %s in %s (a directory this run "
                        "made); a rerun with the same key uses it" % (address, vaulted)), msg
    assert key.split(":", 1)[1] not in run.output
    assert not os.path.exists(other)
    assert done["services"][0]["onion_address"] == address and run.rc == 0, run.output


def test_ephemeral_kept_key_added_back_by_the_watchdog_after_a_restart(tor, tmp_path):
    """Issue 38: an ephemeral service made with keep_key (a run at -vvv: the key is in no output) is gone when tor
    restarts; the watchdog's program, run once against that tor, adds it back with the same address and ports from the
    kept key; a second watchdog run changes nothing; removing the service removes the kept key."""
    from ansible_collections.onionlab.tor.plugins.module_utils import _onion_watchdog as watchdog
    keys = tmp_path / "kept"
    made = hs_task(tor, tmp_path, ephemeral=True, ports=[{"port": 80, "target_port": 8080}], keep_key=True,
                   key_dir=str(keys), return_private_key=True, register="made")
    made["no_log"] = True
    run = run_playbook([made], tmp_path, extra_args=["-vvv"])
    assert run.rc == 0, run.output
    (result,) = results(run)
    kept = keys.iterdir().__next__()
    key = kept.read_text().strip()
    sid = kept.name[:-len(".key")]
    assert onion.service_id_of_key(key) == sid and stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert key.split(":", 1)[1] not in run.output
    tor.restart()
    with connect(port=tor.control_port) as ctl:
        assert sid not in ctl.list_onions()["detached"]
    config = tmp_path / "wd.json"
    config.write_text(json.dumps({"control_port": tor.control_port, "ephemeral_key_dir": str(keys), "layers": [],
                                  "state_file": str(tmp_path / "wd-state.json"),
                                  "metrics_file": str(tmp_path / "wd.prom")}))
    said = []
    for _attempt in (1, 2):
        dog = watchdog.Watchdog(watchdog.load_config(str(config)), out=open(os.devnull, "w"))
        dog.run()
        said.append([line for line in dog.lines if "action=readd" in line])
        assert key.split(":", 1)[1] not in "\n".join(dog.lines)
    assert len(said[0]) == 1 and said[1] == [], said
    assert "service=%s.onion state=gone action=readd result=\"added back with its kept key" % sid in said[0][0]
    with connect(port=tor.control_port) as ctl:
        assert sid in ctl.list_onions()["detached"]
    assert "onionlab_watchdog_readds_total 1" in (tmp_path / "wd.prom").read_text()
    gone = run_playbook([hs_task(tor, tmp_path, ephemeral=True, state="absent", service_id=sid, key_dir=str(keys))],
                        tmp_path)
    assert gone.rc == 0 and results(gone)[0]["changed"] is True, gone.output
    assert list(keys.iterdir()) == []


def test_ephemeral_kept_key_readded_by_the_intro_ladder(tor, tmp_path):
    """Issue 38: the second step of the watchdog's introduction/reach ladder, against a real tor: an ephemeral service
    made with keep_key is removed and added again (DEL_ONION + ADD_ONION) with its kept key: the same address, the
    same ports in the collection's record, tor serving it; the line names the step and no key; without a kept key
    the ladder goes on to its restart step instead (held back here by restart_interval, so it closes circuits)."""
    from ansible_collections.onionlab.tor.plugins.module_utils import _onion_watchdog as watchdog
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import ephemeral
    keys = tmp_path / "kept"
    made = hs_task(tor, tmp_path, ephemeral=True, ports=[{"port": 80, "target_port": 8080}], keep_key=True,
                   key_dir=str(keys), register="made")
    made["no_log"] = True
    run = run_playbook([made], tmp_path)
    assert run.rc == 0, run.output
    kept = keys.iterdir().__next__()
    key, sid = kept.read_text().strip(), kept.name[:-len(".key")]
    with connect(port=tor.control_port) as ctl:
        data_dir = dict(ctl.get_conf("DataDirectory"))["DataDirectory"]
        before = ephemeral.read_ephemeral_record(data_dir)[sid]
        assert sid in ctl.list_onions()["detached"]
    config = tmp_path / "wd.json"
    config.write_text(json.dumps({"control_port": tor.control_port, "ephemeral_key_dir": str(keys), "layers": [],
                                  "restart_interval": 3600, "restart_command": ["false"],
                                  "state_file": str(tmp_path / "wd-state.json"),
                                  "metrics_file": str(tmp_path / "wd.prom")}))
    dog = watchdog.Watchdog(watchdog.load_config(str(config)), out=open(os.devnull, "w"))
    state = {"last_restart": 1.0e12}   # a restart "just now": the ladder may not restart tor
    record = {"intro_step": 1, "repairs": {}}
    entry = {"address": sid + ".onion", "type": "ephemeral"}
    with connect(port=tor.control_port) as ctl:
        dog._repair_intro(ctl, state, record, entry, "reach: 0 of 2 fresh connections", 1.0e12 + 1, {})
        assert sid in ctl.list_onions()["detached"]
        assert ephemeral.read_ephemeral_record(data_dir)[sid] == before
    assert record == {"intro_step": 2, "repairs": {"readd": 1}}, record
    (line,) = dog.lines
    assert "service=%s.onion state=unhealthy" % sid in line and "action=readd" in line, line
    assert "removed and added again with its kept key (same address, new introduction points)" in line, line
    assert key.split(":", 1)[1] not in line
    # the same step for a service whose key was not kept (a persistent one, or an ephemeral one without keep_key):
    # the ladder's next step is a restart, held back by restart_interval, so it closes the circuits again
    record = {"intro_step": 1, "repairs": {}}
    with connect(port=tor.control_port) as ctl:
        dog._repair_intro(ctl, state, record, dict(entry, type="persistent"), "reach: 0 of 2", 1.0e12 + 2, {})
    assert record == {"intro_step": 1, "repairs": {"close-intro": 1}}, record
    assert "restart held back" in dog.lines[-1] and "action=close-intro" in dog.lines[-1], dog.lines[-1]
