# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_onion_client_auth and tor_onion_client_auth_info, run by real ansible-playbook against a
real tor 0.4.9 (DisableNetwork 1) with a ClientOnionAuthDir, and on the files alone; tor's own
VIEW (read here with our client) and its files are the reference. The private network proof of
use is in test_privnet_client_auth.py."""

import base64
import os
import re
import signal
import stat
import time

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth as ca
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from ansible_collections.onionlab.tor.plugins.module_utils._tor.reply import format_command
from harness.ansible_run import run_playbook
from harness.tor_instance import TorInstance

MODULE = "onionlab.tor.tor_onion_client_auth"
INFO = "onionlab.tor.tor_onion_client_auth_info"


def new_sid():
    return onion.onion_address(onion.ed25519_public_from_expanded(os.urandom(64)))


def raw_key(private):
    return base64.b32decode(private.upper() + "====")


def key_forms(private):
    raw = raw_key(private)
    b64 = base64.b64encode(raw).decode()
    return [private, private.lower(), b64, b64.rstrip("="), b64[:30], private[:30], private.lower()[:30]]


@pytest.fixture
def client_tor(tmp_path):
    """A tor with a ClientOnionAuthDir (tor wants the directory to exist, 0700, when it starts)."""
    auth = tmp_path / "onion_auth"
    auth.mkdir(mode=0o700)
    with TorInstance(tmp_path / "tor", extra=["ClientOnionAuthDir %s" % auth]) as instance:
        instance.auth_dir = str(auth)
        yield instance


def view(tor):
    with connect(port=tor.control_port) as ctl:
        return ca.view(ctl)


def task(tor, register=None, name=None, module=MODULE, **params):
    entry = {module: dict({"control_port": tor.control_port}, **params)}
    if register:
        entry["register"] = register
    if name:
        entry["name"] = name
    return entry


def results(run, name=MODULE):
    return [t["result"] for t in run.results(name)]


def test_add_again_info_remove(client_tor, tmp_path):
    sid = new_sid()
    private, public = onion.generate_client_keypair()
    add = task(client_tor, address=sid + ".onion", private_key=private, client_name="alice")
    t0 = time.monotonic()
    run = run_playbook([add, add, task(client_tor, module=INFO)], tmp_path)
    took = time.monotonic() - t0
    assert run.rc == 0, run.output
    first, second = results(run)
    assert first["changed"] is True and second["changed"] is False
    entry = {"address": sid + ".onion", "service_id": sid, "client_name": "alice", "permanent": True,
             "flags": ["Permanent"], "public_key": public}
    assert first["credential"] == second["credential"] == entry
    (info,) = results(run, INFO)
    assert info["credentials"] == [entry] and info["auth_dir"] == client_tor.auth_dir
    (cred,) = view(client_tor)
    assert (cred.service_id, cred.client_name, cred.flags) == (sid, "alice", ["Permanent"])
    assert cred.private_key == raw_key(private)
    # tor wrote the file: its name, its format, 0600 in the 0700 directory
    path = os.path.join(client_tor.auth_dir, sid + ".auth_private")
    assert os.listdir(client_tor.auth_dir) == [sid + ".auth_private"]
    with open(path) as handle:
        assert handle.read() == "%s:descriptor:x25519:%s" % (sid, private.lower())
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(client_tor.auth_dir).st_mode) == 0o700

    gone = task(client_tor, address=sid, state="absent")
    run = run_playbook([gone, gone], tmp_path)
    assert run.rc == 0, run.output
    first, second = results(run)
    assert first["changed"] is True and second["changed"] is False
    assert first["credential"] is None and first["credentials"] == []
    assert view(client_tor) == [] and os.listdir(client_tor.auth_dir) == []
    print("\nadd, add again, info in one playbook: %.1fs" % took)


def test_check_mode_and_diff_show_no_key(client_tor, tmp_path):
    sid = new_sid()
    private, public = onion.generate_client_keypair()
    run = run_playbook([task(client_tor, address=sid, private_key=private, client_name="bob")], tmp_path,
                       check=True, diff=True)
    assert run.rc == 0, run.output
    (res,) = results(run)
    assert res["changed"] is True and res["credential"]["public_key"] == public
    assert view(client_tor) == [] and os.listdir(client_tor.auth_dir) == []
    assert res["diff"]["before"] == {"state": "absent", "files": []}
    assert res["diff"]["after"]["client_name"] == "bob" and res["diff"]["after"]["public_key"] == public
    assert "--- before: %s.onion" % sid in run.stdout and "+    \"client_name\": \"bob\"" in run.stdout
    for form in key_forms(private):
        assert form not in run.output


def test_permanent_survives_a_restart_the_others_and_names_do_not(client_tor, tmp_path):
    kept, lost = new_sid(), new_sid()
    private, _public = onion.generate_client_keypair()
    other, _other_public = onion.generate_client_keypair()
    run = run_playbook([task(client_tor, address=kept, private_key=private, client_name="kept"),
                        task(client_tor, address=lost, private_key=other, permanent=False)], tmp_path)
    assert run.rc == 0, run.output
    assert [(c.service_id, c.permanent) for c in view(client_tor)] == sorted([(kept, True), (lost, False)])
    client_tor.restart()
    (cred,) = view(client_tor)
    # loaded from its file: permanent, same key, no name (tor keeps none on disk)
    assert (cred.service_id, cred.flags, cred.client_name) == (kept, ["Permanent"], None)
    assert cred.private_key == raw_key(private)
    same = task(client_tor, address=kept, private_key=private)
    named = task(client_tor, address=kept, private_key=private, client_name="kept")
    run = run_playbook([same, named, named], tmp_path)
    assert run.rc == 0, run.output
    assert [r["changed"] for r in results(run)] == [False, True, False]


def test_a_reload_drops_what_is_not_permanent(client_tor, tmp_path):
    """tor 0.4.9 replaces every credential with its ClientOnionAuthDir's files whenever it applies
    its options: a SETCONF of anything is enough (documented under permanent=false)."""
    sid = new_sid()
    private, _public = onion.generate_client_keypair()
    add = task(client_tor, address=sid, private_key=private, permanent=False)
    run = run_playbook([add], tmp_path)
    assert run.rc == 0, run.output
    assert len(view(client_tor)) == 1
    with connect(port=client_tor.control_port) as ctl:
        ctl.set_conf([("MaxCircuitDirtiness", "700")])
    assert view(client_tor) == []
    run = run_playbook([add], tmp_path)
    assert run.rc == 0 and results(run)[0]["changed"] is True


def test_dropping_permanence_leaves_no_file(client_tor, tmp_path):
    sid = new_sid()
    private, _public = onion.generate_client_keypair()
    run = run_playbook([task(client_tor, address=sid, private_key=private),
                        task(client_tor, address=sid, private_key=private, permanent=False)], tmp_path)
    assert run.rc == 0, run.output
    assert [r["changed"] for r in results(run)] == [True, True]
    (cred,) = view(client_tor)
    assert cred.flags == [] and os.listdir(client_tor.auth_dir) == []
    client_tor.restart()
    assert view(client_tor) == []


def test_tor_replaced_without_the_flag_keeps_its_file(client_tor):
    """Why the module removes first: tor 0.4.9 keeps a Permanent credential's file when another
    ADD without the flag replaces it, and REMOVE of that one then leaves the file behind."""
    sid = new_sid()
    key = raw_key(onion.generate_client_keypair()[0])
    with connect(port=client_tor.control_port) as ctl:
        ca.add(ctl, sid, key, permanent=True)
        assert ca.add(ctl, sid, key) == "251"
        assert ca.remove(ctl, sid) is True
    assert os.listdir(client_tor.auth_dir) == [sid + ".auth_private"]
    client_tor.restart()
    assert [c.service_id for c in view(client_tor)] == [sid]


def test_a_second_file_for_the_service(client_tor, tmp_path):
    """Two files naming one service: tor exits at its next reload. The module removes the other
    file when it gives tor the credential, so that a SIGHUP (logrotate) later finds one."""
    sid = new_sid()
    private, _public = onion.generate_client_keypair()
    other, _ = onion.generate_client_keypair()
    stray = os.path.join(client_tor.auth_dir, "by-hand.auth_private")
    with open(stray, "w") as handle:
        handle.write("%s:descriptor:x25519:%s\n" % (sid, other))
    os.chmod(stray, 0o600)
    run = run_playbook([task(client_tor, address=sid, private_key=private)], tmp_path)
    assert run.rc == 0, run.output
    (res,) = results(run)
    assert res["changed"] is True and res["removed_files"] == [stray]
    assert os.listdir(client_tor.auth_dir) == [sid + ".auth_private"]
    os.kill(client_tor.pid, signal.SIGHUP)
    time.sleep(1.0)
    assert client_tor.proc.poll() is None, client_tor.log()[-800:]
    (cred,) = view(client_tor)
    assert cred.private_key == raw_key(private) and cred.client_name is None
    # and what the module prevents: with a second file, tor's reload fails and tor exits
    with open(stray, "w") as handle:
        handle.write("%s:descriptor:x25519:%s\n" % (sid, other))
    os.kill(client_tor.pid, signal.SIGHUP)
    client_tor.proc.wait(10)
    assert "Duplicate authorization for the same hidden service address" in client_tor.log()


def test_a_long_name_gets_two_replies_from_tor(client_tor):
    """The tor quirk that makes the module check names first: over 16 characters, tor 0.4.9 answers
    512 and registers the credential anyway, with a second reply."""
    sid = new_sid()
    blob = base64.b64encode(raw_key(onion.generate_client_keypair()[0])).decode()
    with connect(port=client_tor.control_port) as ctl:
        first = ctl.sock.request(format_command(ca.ADD, [sid, "x25519:" + blob, "ClientName=" + "x" * 17]))
        second = ctl.sock.recv_reply()
    assert (first.code, first.lines[-1].text) == ("512", "ClientName longer than 16 chars")
    assert second.code == "250"
    (cred,) = view(client_tor)
    assert cred.client_name == "x" * 17


def test_files_without_tor_then_tor_uses_them(tmp_path):
    auth = str(tmp_path / "onion_auth")
    sid, sid2 = new_sid(), new_sid()
    private, public = onion.generate_client_keypair()
    private2, _ = onion.generate_client_keypair()
    write = {"name": "write", MODULE: {"auth_dir": auth, "address": sid, "private_key": private}}
    run = run_playbook([write, write, {MODULE: {"auth_dir": auth, "address": sid2, "private_key": private2}},
                        {INFO: {"auth_dir": auth}}], tmp_path, diff=True)
    assert run.rc == 0, run.output
    first, second = [t["result"] for t in run.results("write")]
    assert first["changed"] is True and second["changed"] is False
    assert stat.S_IMODE(os.stat(auth).st_mode) == 0o700
    for name in os.listdir(auth):
        assert stat.S_IMODE(os.stat(os.path.join(auth, name)).st_mode) == 0o600
    (info,) = results(run, INFO)
    assert sorted(c["service_id"] for c in info["credentials"]) == sorted([sid, sid2])
    # a tor started on that directory has both, with these keys
    with TorInstance(tmp_path / "tor", extra=["ClientOnionAuthDir %s" % auth]) as tor:
        creds = dict((c.service_id, c) for c in view(tor))
        assert set(creds) == {sid, sid2}
        assert creds[sid].private_key == raw_key(private) and creds[sid].permanent
        assert creds[sid2].private_key == raw_key(private2)
        # the list is the same whether read from tor or from the files (tor has no names, no paths)
        run = run_playbook([task(tor, module=INFO)], tmp_path)
        (live,) = results(run, INFO)
        assert [dict(c, path=None) for c in info["credentials"]] == [
            dict(c, path=None) for c in sorted(live["credentials"], key=lambda c: c["service_id"] + ".auth_private")]
        # files written while tor runs: tor takes them at its reload (SIGHUP)
        sid3 = new_sid()
        private3, _ = onion.generate_client_keypair()
        run = run_playbook([{MODULE: {"auth_dir": auth, "address": sid3, "private_key": private3}},
                            {MODULE: {"auth_dir": auth, "address": sid2, "state": "absent"}}], tmp_path)
        assert run.rc == 0, run.output
        os.kill(tor.pid, signal.SIGHUP)
        deadline = time.monotonic() + 10
        while {c.service_id for c in view(tor)} != {sid, sid3} and time.monotonic() < deadline:
            time.sleep(0.1)
        assert {c.service_id for c in view(tor)} == {sid, sid3}


def test_secrets_never_in_output(client_tor, tmp_path):
    sid = new_sid()
    private, public = onion.generate_client_keypair()
    line = "%s:descriptor:x25519:%s" % (sid, private)
    tasks = [
        task(client_tor, name="check", address=sid, private_key=private, client_name="c"),
        task(client_tor, name="add", address=sid, private_key=line, client_name="c"),
        task(client_tor, name="again", address=sid, private_key=private.lower(), client_name="c"),
        task(client_tor, name="info", module=INFO),
        task(client_tor, name="wrong service", address=new_sid(), private_key=line),
        task(client_tor, name="bad name", address=sid, private_key=private, client_name="x" * 17),
        {"name": "files", MODULE: {"auth_dir": str(tmp_path / "files"), "address": sid, "private_key": private}},
        task(client_tor, name="gone", address=sid, state="absent"),
    ]
    for entry in tasks[4:6]:
        entry["ignore_errors"] = True
    tasks[0]["check_mode"] = True
    run = run_playbook(tasks, tmp_path, diff=True, extra_args=["-vvv"])
    assert run.rc == 0, run.output
    assert len(run.stdout) > 10000                      # -vvv was verbose
    statuses = dict((t["task"], t["status"]) for t in run.tasks)
    assert statuses == {"check": "changed", "add": "changed", "again": "ok", "info": "ok",
                        "wrong service": "failed", "bad name": "failed", "files": "changed", "gone": "changed"}
    text = run.output + "".join(repr(t) for t in run.tasks)
    for form in key_forms(private):
        assert form not in text
    assert public in text                               # the public half is shown
    assert view(client_tor) == []


BAD = [
    ({"address": "nope.onion"}, "not a v3 onion address"),
    ({"address": "SID.onion.onion"}, "not a v3 onion address"),
    ({"private_key": "KEY"[:2]}, "52 base32"),
    ({"private_key": "A" * 52}, "all zeros"),
    ({"private_key": "KEY:descriptor:x25519"}, "52 base32|x25519 key|52 characters"),
    ({"client_name": "x" * 17}, "1 to 16"),
    ({"client_name": "with space"}, "only letters"),
    ({"client_name": 'qu"ote'}, "only letters"),
    ({"auth_dir": "relative"}, "absolute path"),
    ({"owner": "root"}, "auth_dir"),
    ({"state": "present", "private_key": None}, "private_key is required"),
]


def test_bad_input_one_message_nothing_written(client_tor, tmp_path):
    sid = new_sid()
    private, _ = onion.generate_client_keypair()
    tasks = []
    for number, (change, _message) in enumerate(BAD):
        params = {"address": sid, "private_key": private}
        for key, value in change.items():
            if isinstance(value, str):
                value = value.replace("SID", sid).replace("KEY", private)
            params[key] = value
        params = dict((k, v) for k, v in params.items() if v is not None)
        entry = task(client_tor, name="bad %d" % number, **params)
        entry["ignore_errors"] = True
        tasks.append(entry)
    run = run_playbook(tasks, tmp_path)
    assert run.rc == 0, run.output
    for number, (_change, message) in enumerate(BAD):
        record = run.task("bad %d" % number)
        assert record["status"] == "failed", record
        result = record["result"]
        # ansible-core 2.19 notes '(traceback unavailable)' for a fail_json inside an except block
        assert result.get("exception", "(traceback unavailable)") == "(traceback unavailable)", result
        assert "Traceback" not in run.output
        assert re.search(message, result["msg"]), (number, result["msg"])
    assert view(client_tor) == [] and os.listdir(client_tor.auth_dir) == []
    assert not os.path.exists(os.path.join(str(tmp_path / "ansible-run"), "relative"))
    for form in key_forms(private):
        assert form not in run.output
