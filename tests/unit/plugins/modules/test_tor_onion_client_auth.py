# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_onion_client_auth and tor_onion_client_auth_info, main() in-process (conftest.py) against
the stateful fake control port with tor 0.4.9's client credentials (harness/fake_client_auth.py),
and on ClientOnionAuthDir files (auth_dir)."""

import base64
import json
import os
import pwd
import re
import stat

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth as ca
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import files as _files
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.modules import tor_onion_client_auth as module
from ansible_collections.onionlab.tor.plugins.modules import tor_onion_client_auth_info as info_module
from harness.fake_client_auth import FakeClientAuth

SID = onion.onion_address(onion.ed25519_public_from_expanded(b"\x31" * 64))
SID2 = onion.onion_address(onion.ed25519_public_from_expanded(b"\x32" * 64))
PRIVATE, PUBLIC = onion.generate_client_keypair()
PRIVATE2, PUBLIC2 = onion.generate_client_keypair()


def key_forms(private):
    """Every text form of a private key that must never appear in a result."""
    raw = base64.b32decode(private + "====")
    b64 = base64.b64encode(raw).decode()
    return [private, private.lower(), b64, b64.rstrip("="), base64.b32encode(raw).decode().lower().rstrip("=")]


def assert_no_secret(result, *privates):
    text = json.dumps(result)
    for private in privates or (PRIVATE, PRIVATE2):
        for form in key_forms(private):
            assert form not in text


@pytest.fixture
def auth_dir(tmp_path):
    path = tmp_path / "onion_auth"
    path.mkdir(mode=0o700)
    return str(path)


@pytest.fixture
def fake(tmp_path, torrc, auth_dir):
    with FakeClientAuth(tmp_path / "tordata", torrc, auth_dir=auth_dir) as controller:
        yield controller
    assert controller.errors == []


def files(directory):
    return sorted(os.listdir(directory))


def ctl_args(fake, **args):
    return dict(control_port=fake.port, **args)


# -- over the control port ---------------------------------------------------------------------------
def test_add_then_unchanged(runner, fake, auth_dir):
    result = runner.ok(module, **ctl_args(fake, address=SID + ".onion", private_key=PRIVATE, client_name="alice"))
    assert result["changed"] is True
    entry = {"address": SID + ".onion", "service_id": SID, "client_name": "alice", "permanent": True,
             "flags": ["Permanent"], "public_key": PUBLIC}
    assert result["credential"] == entry and result["credentials"] == [entry]
    assert result["auth_dir"] == auth_dir and result["removed_files"] == []
    assert fake.client_auths[SID] == {"key": base64.b32decode(PRIVATE + "===="), "name": "alice", "permanent": True}
    assert files(auth_dir) == [SID + ".auth_private"]
    assert fake.commands() == ["PROTOCOLINFO", "AUTHENTICATE", "ONION_CLIENT_AUTH_VIEW", "GETCONF",
                               "ONION_CLIENT_AUTH_ADD", "ONION_CLIENT_AUTH_VIEW", "QUIT"]
    assert_no_secret(result)
    fake.received.clear()
    again = runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, client_name="alice"))
    assert again["changed"] is False and again["credential"] == entry
    assert "ONION_CLIENT_AUTH_ADD" not in fake.commands()


def test_check_mode_and_diff(runner, fake, auth_dir):
    result = runner.ok(module, check_mode=True, diff=True,
                       **ctl_args(fake, address=SID, private_key=PRIVATE, client_name="alice"))
    assert result["changed"] is True
    assert fake.client_auths == {} and files(auth_dir) == []
    assert "ONION_CLIENT_AUTH_ADD" not in fake.commands()
    assert result["credential"]["public_key"] == PUBLIC
    assert result["diff"]["before"] == {"state": "absent", "files": []}
    assert result["diff"]["after"] == {"state": "present", "client_name": "alice", "permanent": True,
                                       "public_key": PUBLIC, "files": [os.path.join(auth_dir, SID + ".auth_private")]}
    assert result["diff"]["before_header"] == SID + ".onion"
    assert_no_secret(result)
    # without diff mode there is no diff in the result
    assert "diff" not in runner.ok(module, check_mode=True, **ctl_args(fake, address=SID, private_key=PRIVATE))


def test_a_new_key_replaces_the_old(runner, fake, auth_dir):
    runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE))
    result = runner.ok(module, diff=True, **ctl_args(fake, address=SID, private_key=PRIVATE2))
    assert result["changed"] is True
    assert result["diff"]["before"]["public_key"] == PUBLIC and result["diff"]["after"]["public_key"] == PUBLIC2
    assert fake.client_auths[SID]["key"] == base64.b32decode(PRIVATE2 + "====")
    with open(os.path.join(auth_dir, SID + ".auth_private")) as handle:
        assert ca.parse_line(handle.read()) == (SID, base64.b32decode(PRIVATE2 + "===="))
    assert_no_secret(result)


def test_name_change_and_the_name_tor_forgets(runner, fake):
    runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, client_name="alice"))
    assert runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, client_name="bob"))["changed"]
    assert runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE))["credential"]["client_name"] is None
    runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, client_name="alice"))
    # a reload (any SETCONF) loads the credential again from its file, without its name
    fake.reload()
    assert fake.client_auths[SID]["name"] is None
    result = runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, client_name="alice"))
    assert result["changed"] is True and result["credential"]["client_name"] == "alice"


def test_not_permanent(runner, fake, auth_dir):
    result = runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, permanent=False))
    assert result["credential"]["permanent"] is False and result["credential"]["flags"] == []
    assert files(auth_dir) == []
    assert runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, permanent=False))["changed"] is False
    # tor drops it at its next reload: the module gives it back
    fake.reload()
    assert fake.client_auths == {}
    assert runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, permanent=False))["changed"] is True


def test_dropping_permanence_removes_tors_file_first(runner, fake, auth_dir):
    runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE))
    assert files(auth_dir) == [SID + ".auth_private"]
    fake.received.clear()
    result = runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, permanent=False))
    assert result["changed"] is True
    # tor would keep the file when a credential without the flag replaces a permanent one
    assert [c for c in fake.commands() if c.startswith("ONION")] == [
        "ONION_CLIENT_AUTH_VIEW", "ONION_CLIENT_AUTH_REMOVE", "ONION_CLIENT_AUTH_ADD", "ONION_CLIENT_AUTH_VIEW"]
    assert files(auth_dir) == []
    assert fake.client_auths[SID]["permanent"] is False
    fake.reload()
    assert fake.client_auths == {}


def test_a_deleted_file_is_written_again(runner, fake, auth_dir):
    runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE))
    os.unlink(os.path.join(auth_dir, SID + ".auth_private"))
    result = runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE))
    assert result["changed"] is True and files(auth_dir) == [SID + ".auth_private"]


def test_a_second_file_for_the_service_is_removed(runner, fake, auth_dir):
    # two files naming one service make tor refuse the whole directory at its next start or reload
    stray = os.path.join(auth_dir, "alice.auth_private")
    with open(stray, "w") as handle:
        handle.write(ca.format_line(SID, base64.b32decode(PRIVATE2 + "====")) + "\n")
    other = os.path.join(auth_dir, "other.auth_private")
    with open(other, "w") as handle:
        handle.write(ca.format_line(SID2, base64.b32decode(PRIVATE2 + "====")))
    fake.reload()
    result = runner.ok(module, diff=True, **ctl_args(fake, address=SID, private_key=PRIVATE))
    assert result["changed"] is True and result["removed_files"] == [stray]
    assert result["diff"]["before"]["files"] == [stray]
    assert files(auth_dir) == sorted(["other.auth_private", SID + ".auth_private"])
    fake.reload()                       # tor can load the directory again
    assert set(fake.client_auths) == {SID, SID2}
    assert runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE))["changed"] is False


def test_absent(runner, fake, auth_dir):
    runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, client_name="alice"))
    runner.ok(module, **ctl_args(fake, address=SID2, private_key=PRIVATE2, permanent=False))
    check = runner.ok(module, check_mode=True, diff=True, **ctl_args(fake, address=SID, state="absent"))
    assert check["changed"] is True and SID in fake.client_auths
    assert check["credential"] is None and [c["service_id"] for c in check["credentials"]] == [SID2]
    assert check["diff"]["before"]["state"] == "present" and check["diff"]["after"] == {"state": "absent", "files": []}
    result = runner.ok(module, **ctl_args(fake, address=SID + ".onion", state="absent"))
    assert result["changed"] is True and result["credential"] is None
    assert list(fake.client_auths) == [SID2] and files(auth_dir) == []
    assert runner.ok(module, **ctl_args(fake, address=SID, state="absent"))["changed"] is False
    assert_no_secret(result)


def test_absent_removes_files_tor_has_not_loaded(runner, fake, auth_dir):
    # written while tor ran (it reads them at its next start): they would bring the credential back
    leftover = os.path.join(auth_dir, "later.auth_private")
    with open(leftover, "w") as handle:
        handle.write(ca.format_line(SID, base64.b32decode(PRIVATE + "====")))
    result = runner.ok(module, **ctl_args(fake, address=SID, state="absent"))
    assert result["changed"] is True and result["removed_files"] == [leftover] and files(auth_dir) == []
    assert "ONION_CLIENT_AUTH_REMOVE" not in fake.commands()


def test_permanent_without_client_onion_auth_dir(runner, tmp_path, torrc):
    with FakeClientAuth(tmp_path / "tordata", torrc) as fake:
        result = runner.fails(module, **ctl_args(fake, address=SID, private_key=PRIVATE))
        assert "ClientOnionAuthDir" in result["msg"] and "permanent=false" in result["msg"]
        assert "ONION_CLIENT_AUTH_ADD" not in fake.commands()
        assert runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, permanent=False))["changed"]
        assert runner.ok(module, **ctl_args(fake, address=SID, state="absent"))["changed"]
    assert fake.errors == []


def test_tor_refuses(runner, fake):
    fake.refuse("ONION_CLIENT_AUTH_ADD", "553", 'Unable to store creds for "%s"' % SID)
    result = runner.fails(module, **ctl_args(fake, address=SID, private_key=PRIVATE))
    assert result["msg"] == 'tor refused ONION_CLIENT_AUTH_ADD: 553 Unable to store creds for "%s"' % SID
    assert result["error"] == "OperationFailed"


def test_old_tor(runner, fake):
    fake.refuse("ONION_CLIENT_AUTH_VIEW", "510", 'Unrecognized command "ONION_CLIENT_AUTH_VIEW"')
    result = runner.fails(module, **ctl_args(fake, address=SID, private_key=PRIVATE))
    assert "tor 0.4.3 or later" in result["msg"]
    assert "tor 0.4.3 or later" in runner.fails(info_module, control_port=fake.port)["msg"]


BAD_INPUT = [
    (dict(address="example.onion", private_key=PRIVATE), "not a v3 onion address"),
    (dict(address=SID[:-2] + "aa", private_key=PRIVATE), "checksum|version 3"),
    (dict(address=SID + "\nSIGNAL HALT", private_key=PRIVATE), "line feed"),
    (dict(address=SID), "private_key is required"),
    (dict(address=SID, private_key=PRIVATE[:-1]), "52 base32"),
    (dict(address=SID, private_key=PRIVATE + "\r\nSIGNAL HALT"), "line break"),
    (dict(address=SID, private_key="A" * 52), "all zeros"),
    (dict(address=SID, private_key="%s:descriptor:x25519:%s" % (SID2, PRIVATE)), "another service"),
    (dict(address=SID, private_key=PRIVATE, client_name="x" * 17), "1 to 16"),
    (dict(address=SID, private_key=PRIVATE, client_name="a b"), "only letters"),
    (dict(address=SID, private_key=PRIVATE, client_name=""), "1 to 16"),
    (dict(address=SID, private_key=PRIVATE, owner="root"), "auth_dir"),
]


@pytest.mark.parametrize("args, message", BAD_INPUT)
def test_bad_input_one_message_nothing_sent(runner, fake, auth_dir, args, message):
    result = runner.fails(module, **ctl_args(fake, **args))
    assert re.search(message, result["msg"]), result["msg"]
    assert fake.connections == 0 and fake.client_auths == {} and files(auth_dir) == []
    assert_no_secret(result)


def test_auth_dir_makes_no_connection(runner, fake, auth_dir):
    # control_port may come from module_defaults of the action group: with auth_dir it is not used
    result = runner.ok(module, control_port=fake.port, auth_dir=auth_dir, address=SID, private_key=PRIVATE)
    assert result["changed"] is True and files(auth_dir) == [SID + ".auth_private"]
    info = runner.ok(info_module, control_port=fake.port, auth_dir=auth_dir)
    assert [c["service_id"] for c in info["credentials"]] == [SID]
    assert fake.connections == 0 and fake.client_auths == {}


def test_no_tor(runner, tmp_path):
    result = runner.fails(module, control_socket=str(tmp_path / "nothing"), address=SID, private_key=PRIVATE)
    assert "cannot connect" in result["msg"] and result["error"] == "ConnectionFailed"


# -- as files -------------------------------------------------------------------------------------------
def file_args(directory, **args):
    return dict(auth_dir=directory, **args)


def test_files_create_then_unchanged(runner, tmp_path):
    directory = str(tmp_path / "new_auth")
    result = runner.ok(module, diff=True, **file_args(directory, address=SID + ".onion", private_key=PRIVATE))
    path = os.path.join(directory, SID + ".auth_private")
    assert result["changed"] is True
    assert result["credential"] == {"address": SID + ".onion", "service_id": SID, "client_name": None,
                                    "permanent": True, "flags": ["Permanent"], "public_key": PUBLIC, "path": path}
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with open(path) as handle:
        assert handle.read() == "%s:descriptor:x25519:%s" % (SID, PRIVATE.lower())
    assert result["diff"]["before"]["directory"] == "missing"
    assert result["diff"]["after"]["directory"] == "mode 0700, owner %d" % os.geteuid()
    assert_no_secret(result)
    again = runner.ok(module, **file_args(directory, address=SID, private_key=PRIVATE.lower()))
    assert again["changed"] is False and again["credential"] == result["credential"]


def test_files_check_mode_writes_nothing(runner, tmp_path):
    directory = str(tmp_path / "new_auth")
    result = runner.ok(module, check_mode=True, **file_args(directory, address=SID, private_key=PRIVATE))
    assert result["changed"] is True and not os.path.exists(directory)
    assert result["credentials"][0]["public_key"] == PUBLIC


def test_files_new_key_modes_and_strays(runner, auth_dir):
    runner.ok(module, **file_args(auth_dir, address=SID, private_key=PRIVATE))
    path = os.path.join(auth_dir, SID + ".auth_private")
    os.chmod(path, 0o644)
    os.chmod(auth_dir, 0o755)
    result = runner.ok(module, diff=True, **file_args(auth_dir, address=SID, private_key=PRIVATE))
    assert result["changed"] is True
    assert result["diff"]["before"]["directory"] == "mode 0755, owner %d" % os.geteuid()
    assert result["diff"]["before"]["file"] == "mode 0644, owner %d" % os.geteuid()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(auth_dir).st_mode) == 0o700
    stray = os.path.join(auth_dir, "alice.auth_private")
    with open(stray, "w") as handle:
        handle.write(ca.format_line(SID, base64.b32decode(PRIVATE + "====")))
    result = runner.ok(module, **file_args(auth_dir, address=SID, private_key=PRIVATE2))
    assert result["changed"] is True and result["removed_files"] == [stray]
    assert files(auth_dir) == [SID + ".auth_private"]
    assert result["credential"]["public_key"] == PUBLIC2
    assert_no_secret(result)


def test_files_absent(runner, auth_dir):
    runner.ok(module, **file_args(auth_dir, address=SID, private_key=PRIVATE))
    runner.ok(module, **file_args(auth_dir, address=SID2, private_key=PRIVATE2))
    result = runner.ok(module, **file_args(auth_dir, address=SID, state="absent"))
    assert result["changed"] is True and files(auth_dir) == [SID2 + ".auth_private"]
    assert [c["service_id"] for c in result["credentials"]] == [SID2]
    assert runner.ok(module, **file_args(auth_dir, address=SID, state="absent"))["changed"] is False


def test_files_absent_without_a_directory_creates_none(runner, tmp_path):
    directory = str(tmp_path / "none")
    assert runner.ok(module, **file_args(directory, address=SID, state="absent"))["changed"] is False
    assert not os.path.exists(directory)


def test_files_warnings(runner, auth_dir):
    with open(os.path.join(auth_dir, "broken.auth_private"), "w") as handle:
        handle.write(":descriptor:x25519:" + PRIVATE2)
    result = runner.ok(module, **file_args(auth_dir, address=SID, private_key=PRIVATE, client_name="alice"))
    assert any("client_name 'alice' is not kept" in w for w in result["warnings"])
    assert any("broken.auth_private" in w for w in result["warnings"])
    assert result["credential"]["client_name"] is None
    assert_no_secret(result)


@pytest.mark.parametrize("args, message", [
    (dict(auth_dir="relative/dir"), "absolute path"),
    (dict(permanent=False), "permanent=false needs"),
    (dict(owner="no-such-user-here"), "not a user"),
])
def test_files_refusals(runner, auth_dir, args, message):
    args.setdefault("auth_dir", auth_dir)
    result = runner.fails(module, address=SID, private_key=PRIVATE, **args)
    assert message in result["msg"]
    assert files(auth_dir) == []


def test_files_owner_needs_root(runner, auth_dir, monkeypatch):
    monkeypatch.setattr(module.os, "geteuid", lambda: 54321)
    for owner in ("root", "0"):
        result = runner.fails(module, **file_args(auth_dir, address=SID, private_key=PRIVATE, owner=owner))
        assert "only root can give the files to another user" in result["msg"]
    assert files(auth_dir) == []


def test_control_warns_of_files_tor_cannot_use(runner, fake, auth_dir):
    with open(os.path.join(auth_dir, "nameless.auth_private"), "w") as handle:
        handle.write(":descriptor:x25519:" + PRIVATE2)
    result = runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, permanent=False))
    assert any("nameless.auth_private" in w and "refuse to start" in w for w in result["warnings"])
    assert_no_secret(result)


def test_files_not_a_directory(runner, tmp_path):
    path = tmp_path / "file"
    path.write_text("")
    assert "not a directory" in runner.fails(module, **file_args(str(path), address=SID, private_key=PRIVATE))["msg"]
    assert "not a directory" in runner.fails(
        module, **file_args(str(tmp_path / "missing" / "auth"), address=SID, private_key=PRIVATE))["msg"]


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user needs root")
def test_files_owner(runner, tmp_path):
    nobody = pwd.getpwnam("nobody")
    directory = str(tmp_path / "auth")
    runner.ok(module, **file_args(directory, address=SID, private_key=PRIVATE, owner="nobody"))
    path = os.path.join(directory, SID + ".auth_private")
    assert (os.stat(directory).st_uid, os.stat(path).st_uid) == (nobody.pw_uid, nobody.pw_uid)
    assert runner.ok(module, **file_args(directory, address=SID, private_key=PRIVATE, owner="nobody"))["changed"] is False
    # without owner: the existing directory's owner
    runner.ok(module, **file_args(directory, address=SID2, private_key=PRIVATE2))
    assert os.stat(os.path.join(directory, SID2 + ".auth_private")).st_uid == nobody.pw_uid
    # a new directory takes its parent's owner (tor's DataDirectory belongs to tor's user)
    parent = tmp_path / "tordata"
    parent.mkdir()
    os.chown(str(parent), nobody.pw_uid, nobody.pw_gid)
    runner.ok(module, **file_args(str(parent / "onion_auth"), address=SID, private_key=PRIVATE))
    assert os.stat(str(parent / "onion_auth" / (SID + ".auth_private"))).st_uid == nobody.pw_uid
    # by uid, and a change of owner is a change
    result = runner.ok(module, **file_args(directory, address=SID, private_key=PRIVATE, owner="0"))
    assert result["changed"] is True and os.stat(path).st_uid == 0 and os.stat(directory).st_uid == 0


def test_files_new_auth_dir_swapped_for_a_link(runner, tmp_path, monkeypatch):
    """issue 26 A6: tor's user (owner of the parent) swaps the new directory for a link between
    root's mkdir and chmod: the link's target keeps its mode, the run fails with one message."""
    victim = tmp_path / "root-dir"
    victim.mkdir(mode=0o755)
    directory = tmp_path / "onion_auth"
    real = os.mkdir

    def mkdir(path, *args, **kwargs):
        if str(path) == str(directory):
            os.symlink(str(victim), str(path))
            return
        return real(path, *args, **kwargs)
    monkeypatch.setattr(os, "mkdir", mkdir)
    result = runner.fails(module, **file_args(str(directory), address=SID, private_key=PRIVATE))
    assert stat.S_IMODE(os.stat(str(victim)).st_mode) == 0o755 and os.listdir(str(victim)) == []
    assert result["msg"].startswith("not a plain directory (a symbolic link") and "\n" not in result["msg"]
    assert result["msg"].endswith(": %s" % directory)


def test_files_own_file_swapped_for_a_link_before_its_chmod(runner, auth_dir, tmp_path, monkeypatch):
    """The file holds the key but its mode is wrong; tor's user swaps it for a link to root's
    file after the module read it: root's file keeps its mode, the run fails with one message."""
    runner.ok(module, **file_args(auth_dir, address=SID, private_key=PRIVATE))
    path = os.path.join(auth_dir, SID + ".auth_private")
    os.chmod(path, 0o644)
    victim = tmp_path / "root-only"
    victim.write_text("root's\n")
    os.chmod(str(victim), 0o644)
    real = ca.read_dir
    swapped = []

    def read_dir(directory):
        out = real(directory)
        if not swapped:
            swapped.append(path)
            os.unlink(path)
            os.symlink(str(victim), path)
        return out
    monkeypatch.setattr(ca, "read_dir", read_dir)
    result = runner.fails(module, **file_args(auth_dir, address=SID, private_key=PRIVATE))
    assert stat.S_IMODE(os.stat(str(victim)).st_mode) == 0o644 and victim.read_text() == "root's\n"
    assert result["msg"] == "%s: %s" % (_files.NOT_A_FILE, path)


# -- tor_onion_client_auth_info ------------------------------------------------------------------------
def test_info_round_trip(runner, fake, auth_dir, tmp_path):
    runner.ok(module, **ctl_args(fake, address=SID, private_key=PRIVATE, client_name="alice"))
    runner.ok(module, **ctl_args(fake, address=SID2, private_key=PRIVATE2, permanent=False))
    info = runner.ok(info_module, control_port=fake.port)
    assert info["changed"] is False and info["auth_dir"] == auth_dir
    assert sorted(c["service_id"] for c in info["credentials"]) == sorted([SID, SID2])
    assert_no_secret(info)
    keys = {SID: PRIVATE, SID2: PRIVATE2}
    # each entry given back (with its key from elsewhere) changes nothing: the same shape
    for entry in info["credentials"]:
        args = dict((k, entry[k]) for k in ("address", "client_name", "permanent") if entry[k] is not None)
        assert runner.ok(module, **ctl_args(fake, private_key=keys[entry["service_id"]], **args))["changed"] is False
    # and into another client tor it makes the same list
    other_dir = tmp_path / "other_auth"
    other_dir.mkdir(mode=0o700)
    with FakeClientAuth(tmp_path / "otherdata", None, auth_dir=str(other_dir)) as other:
        for entry in info["credentials"]:
            args = dict((k, entry[k]) for k in ("address", "client_name", "permanent") if entry[k] is not None)
            runner.ok(module, **ctl_args(other, private_key=keys[entry["service_id"]], **args))
        assert runner.ok(info_module, control_port=other.port)["credentials"] == info["credentials"]
    assert other.errors == []
    # the files tor wrote, listed without tor
    listed = runner.ok(info_module, auth_dir=auth_dir)["credentials"]
    assert [(c["service_id"], c["permanent"], c["client_name"], c["public_key"]) for c in listed] == [
        (SID, True, None, PUBLIC)]


def test_info_files_warns_and_missing_directory(runner, auth_dir, tmp_path):
    with open(os.path.join(auth_dir, "x.auth_private"), "w") as handle:
        handle.write("junk")
    result = runner.ok(info_module, auth_dir=auth_dir)
    assert result["credentials"] == [] and any("x.auth_private" in w for w in result["warnings"])
    assert runner.ok(info_module, auth_dir=str(tmp_path / "none"))["credentials"] == []
    assert "absolute" in runner.fails(info_module, auth_dir="rel")["msg"]
