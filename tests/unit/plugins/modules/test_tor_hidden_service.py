# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_hidden_service main(): every branch (persistent, services list, ephemeral, absent, purge,
check mode, diff, each refusal) against the stateful fake control port (conftest.py), without tor.

The results are checked against what the fake tor holds afterwards (its HiddenService block, its
onions) and what is on disk (keys, hostname, client files, the drop-in, torrc's %include)."""

import errno
import json
import os
import socket
import stat

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import files
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_manager as sm
from ansible_collections.onionlab.tor.plugins.modules import tor_hidden_service as module
from ansible_collections.onionlab.tor.plugins.modules import tor_hidden_service_info as info_module
from harness.keys import new_expanded_key

WEB_PORTS = [{"port": 80, "target_port": 8080}]
KEY = new_expanded_key(b"onionlab unit test key")
KEY_BLOB = onion.key_blob(KEY)
KEY_SID = onion.service_id_of_key(KEY_BLOB)
OTHER_BLOB = onion.key_blob(new_expanded_key(b"another key"))
CLIENT_PRIVATE, CLIENT_PUBLIC = onion.generate_client_keypair()


def drop_in(tmp_path):
    return tmp_path / "torrc.d" / "onionlab.conf"


def args(fake, tmp_path, **params):
    params.setdefault("config_file", str(drop_in(tmp_path)))
    return dict(control_port=fake.port, **params)


def service_dir(tmp_path, name="web"):
    return str(tmp_path / name)


def address_on_disk(path):
    """The address the key files in path give (independent of the module's reading)."""
    public = onion.read_public_key_file(os.path.join(path, "hs_ed25519_public_key"))
    return onion.onion_address(public) + ".onion"


def hostname(path):
    with open(os.path.join(path, "hostname")) as handle:
        return handle.read().strip()


def setconfs(fake):
    return [line for line in fake.received if line.startswith("SETCONF")]


def create(runner, fake, tmp_path, name="web", **params):
    params.setdefault("ports", WEB_PORTS)
    return runner.ok(module, **args(fake, tmp_path, path=service_dir(tmp_path, name), **params))


# -- persistent services ---------------------------------------------------------------------------
def test_create_persistent(runner, fake, tmp_path, torrc):
    path = service_dir(tmp_path)
    result = create(runner, fake, tmp_path)
    assert result["changed"] is True
    assert result["onion_address"] == address_on_disk(path) == hostname(path)
    assert result["service"]["path"] == path
    assert result["service"]["type"] == "persistent"
    assert result["service"]["onion_address"] == result["onion_address"]
    assert result["service"]["ports"] == [{"port": 80, "target_address": "127.0.0.1", "target_port": 8080}]
    assert result["generated_clients"] == [] and result["purged"] == []
    assert fake.hs_block == [("HiddenServiceDir", path), ("HiddenServicePort", "80 127.0.0.1:8080")]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    text = drop_in(tmp_path).read_text()
    assert 'HiddenServiceDir "%s"\nHiddenServicePort 80 127.0.0.1:8080\n' % path in text
    assert torrc.read_text().count("%%include %s" % drop_in(tmp_path)) == 1
    # one atomic SETCONF of the block, inside SETEVENTS WARN ... SETEVENTS
    assert len(setconfs(fake)) == 1
    index = fake.received.index(setconfs(fake)[0])
    assert fake.received[index - 1] == "SETEVENTS WARN" and fake.received[index + 1] == "SETEVENTS"


def test_same_again_is_unchanged(runner, fake, tmp_path, torrc):
    first = create(runner, fake, tmp_path)
    torrc_text, drop_in_text = torrc.read_text(), drop_in(tmp_path).read_text()
    second = create(runner, fake, tmp_path)
    assert second["changed"] is False
    assert second["onion_address"] == first["onion_address"]
    assert second["service"] == first["service"]
    assert len(setconfs(fake)) == 1          # the second run sent none
    assert torrc.read_text() == torrc_text and drop_in(tmp_path).read_text() == drop_in_text


def test_check_mode_changes_nothing(runner, fake, tmp_path, torrc):
    path = service_dir(tmp_path)
    torrc_text = torrc.read_text()
    result = runner.ok(module, check_mode=True, **args(fake, tmp_path, path=path, ports=WEB_PORTS))
    assert result["changed"] is True
    assert result["onion_address"] is None   # no key exists yet
    assert not os.path.exists(path)
    assert not drop_in(tmp_path).exists()
    assert torrc.read_text() == torrc_text
    assert fake.hs_block == [] and setconfs(fake) == []
    # and on a service that is as asked, check mode reports no change
    create(runner, fake, tmp_path)
    again = runner.ok(module, check_mode=True, **args(fake, tmp_path, path=path, ports=WEB_PORTS))
    assert again["changed"] is False
    assert again["onion_address"] == address_on_disk(path)


def test_diff_and_port_change(runner, fake, tmp_path, torrc):
    path = service_dir(tmp_path)
    first = runner.ok(module, diff=True, **args(fake, tmp_path, path=path, ports=WEB_PORTS))
    # the %include line appended to torrc is in the diff (issue 14.10)
    assert first["diff"]["before"] == {"services": [], "torrc": {"path": str(torrc), "appended": []}}
    assert first["diff"]["after"]["torrc"] == {"path": str(torrc), "appended": [
        "# Added by onionlab.tor: the onion services it manages", "%%include %s" % drop_in(tmp_path)]}
    assert torrc.read_text().endswith("\n".join(first["diff"]["after"]["torrc"]["appended"]) + "\n")
    [after] = first["diff"]["after"]["services"]
    assert after["path"] == path and after["authorized_clients"] == []
    assert after["ports"] == [{"port": 80, "target_address": "127.0.0.1", "target_port": 8080}]
    assert "onion_address" not in after          # the diff shows configuration, not derived values
    new_ports = [{"port": 80, "target_port": 8081}, {"port": 443, "target_address": "unix:/run/web.sock"}]
    second = runner.ok(module, diff=True, **args(fake, tmp_path, path=path, ports=new_ports))
    assert second["changed"] is True
    assert second["onion_address"] == first["onion_address"]     # same key, new ports
    assert second["diff"]["before"]["services"][0]["ports"] == after["ports"]
    assert second["diff"]["after"]["services"][0]["ports"] == [
        {"port": 80, "target_address": "127.0.0.1", "target_port": 8081},
        {"port": 443, "target_address": "unix:/run/web.sock", "target_port": None}]
    assert fake.hs_block == [("HiddenServiceDir", path), ("HiddenServicePort", "80 127.0.0.1:8081"),
                             ("HiddenServicePort", "443 unix:/run/web.sock")]
    # without diff mode there is no diff in the result
    assert "diff" not in create(runner, fake, tmp_path)


def test_options_reach_tor(runner, fake, tmp_path):
    path = service_dir(tmp_path)
    result = create(runner, fake, tmp_path, max_streams=10, max_streams_close_circuit=True, num_intro_points=5,
                    allow_unknown_ports=True, export_circuit_id="haproxy")
    assert fake.hs_block == [("HiddenServiceDir", path), ("HiddenServicePort", "80 127.0.0.1:8080"),
                             ("HiddenServiceMaxStreams", "10"), ("HiddenServiceMaxStreamsCloseCircuit", "1"),
                             ("HiddenServiceAllowUnknownPorts", "1"), ("HiddenServiceNumIntroductionPoints", "5"),
                             ("HiddenServiceExportCircuitID", "haproxy")]
    service = result["service"]
    assert (service["max_streams"], service["max_streams_close_circuit"], service["num_intro_points"],
            service["allow_unknown_ports"]) == (10, True, 5, True)
    assert service["export_circuit_id"] == "haproxy" and service["extra_options"] == {}
    assert create(runner, fake, tmp_path, max_streams=10, max_streams_close_circuit=True, num_intro_points=5,
                  allow_unknown_ports=True,
                  export_circuit_id="haproxy")["changed"] is False


def test_other_services_are_kept(runner, fake, tmp_path):
    other = service_dir(tmp_path, "other")
    os.mkdir(other, 0o700)
    fake.hs_block = [("HiddenServiceDir", other), ("HiddenServicePort", "22 127.0.0.1:22")]
    path = service_dir(tmp_path)
    create(runner, fake, tmp_path)
    assert fake.hs_paths() == [other, path]
    assert fake.hs_block[1] == ("HiddenServicePort", "22 127.0.0.1:22")
    # only the managed service goes into the drop-in
    assert other not in drop_in(tmp_path).read_text()


def test_absent_keeps_the_keys(runner, fake, tmp_path):
    path = service_dir(tmp_path)
    address = create(runner, fake, tmp_path)["onion_address"]
    result = runner.ok(module, diff=True, **args(fake, tmp_path, path=path, state="absent"))
    assert result["changed"] is True
    assert result["onion_address"] is None and result["service"] is None
    assert result["purged"] == []
    assert [s["path"] for s in result["diff"]["before"]["services"]] == [path]
    assert result["diff"]["after"] == {"services": []}
    assert fake.hs_block == []
    assert path not in drop_in(tmp_path).read_text()
    assert address_on_disk(path) == address          # the keys are still there
    again = runner.ok(module, **args(fake, tmp_path, path=path, state="absent"))
    assert again["changed"] is False


def test_absent_purge(runner, fake, tmp_path):
    path = service_dir(tmp_path)
    create(runner, fake, tmp_path)
    checked = runner.ok(module, check_mode=True, **args(fake, tmp_path, path=path, state="absent", purge=True))
    assert checked["changed"] is True and os.path.isdir(path) and fake.hs_paths() == [path]
    result = runner.ok(module, **args(fake, tmp_path, path=path, state="absent", purge=True))
    assert result["changed"] is True
    assert result["purged"] == [path]
    assert not os.path.exists(path)
    assert fake.hs_block == []
    again = runner.ok(module, **args(fake, tmp_path, path=path, state="absent", purge=True))
    assert again["changed"] is False and again["purged"] == []


def test_persist_false_and_no_include(runner, fake, tmp_path, torrc):
    torrc_text = torrc.read_text()
    result = create(runner, fake, tmp_path, persist=False)
    assert result["changed"] is True and fake.hs_paths() == [service_dir(tmp_path)]
    assert not drop_in(tmp_path).exists() and torrc.read_text() == torrc_text
    other = create(runner, fake, tmp_path, name="other", include_config_file=False)
    assert torrc.read_text() == torrc_text
    assert drop_in(tmp_path).exists()
    assert any("does not %%include %s" % drop_in(tmp_path) in w for w in other["warnings"]), other.get("warnings")


def test_include_through_a_directory_is_enough(runner, fake, tmp_path, torrc):
    torrc.write_text(torrc.read_text() + "%%include %s/\n" % drop_in(tmp_path).parent)
    os.mkdir(str(drop_in(tmp_path).parent))
    torrc_text = torrc.read_text()
    result = create(runner, fake, tmp_path)
    assert result["changed"] is True and torrc.read_text() == torrc_text
    assert "warnings" not in result


def test_drop_in_write_failure_restores_tor(runner, fake, tmp_path, monkeypatch):
    create(runner, fake, tmp_path, name="a")
    drop_in_text = drop_in(tmp_path).read_text()
    real_write = files.atomic_write

    def atomic_write(path, text, mode=0o644):
        if path == str(drop_in(tmp_path)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(path, text, mode)
    monkeypatch.setattr(files, "atomic_write", atomic_write)
    result = runner.fails(module, **args(fake, tmp_path, path=service_dir(tmp_path, "b"), ports=WEB_PORTS))
    assert result["msg"] == ("cannot write %s: No space left on device; restored the previous configuration"
                             % drop_in(tmp_path))
    assert fake.hs_paths() == [service_dir(tmp_path, "a")]
    assert drop_in(tmp_path).read_text() == drop_in_text
    assert len(setconfs(fake)) == 3          # a, then b, then a again


def test_torrc_append_failure_restores_tor(runner, fake, tmp_path, torrc, monkeypatch):
    def refusing_open(path, mode="r", *rest, **kwargs):
        if str(path) == str(torrc) and "a" in mode:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return open(path, mode, *rest, **kwargs)
    monkeypatch.setattr(sm, "open", refusing_open, raising=False)
    torrc_text = torrc.read_text()
    result = runner.fails(module, **args(fake, tmp_path, path=service_dir(tmp_path), ports=WEB_PORTS))
    assert "Permission denied" in result["msg"] and "restored the previous configuration" in result["msg"]
    assert fake.hs_block == [] and torrc.read_text() == torrc_text
    assert len(setconfs(fake)) == 2          # the service, then the empty block again


# -- keys ------------------------------------------------------------------------------------------
def test_private_key_is_installed(runner, fake, tmp_path):
    path = service_dir(tmp_path)
    result = create(runner, fake, tmp_path, private_key=KEY_BLOB)
    assert result["changed"] is True
    assert result["onion_address"] == KEY_SID + ".onion" == hostname(path)
    with open(os.path.join(path, "hs_ed25519_secret_key"), "rb") as handle:
        assert handle.read() == onion.SECRET_HEADER + KEY
    assert stat.S_IMODE(os.stat(os.path.join(path, "hs_ed25519_secret_key")).st_mode) == 0o600
    assert KEY_BLOB.split(":", 1)[1] not in json.dumps(result)      # no_log: not even in the invocation
    again = create(runner, fake, tmp_path, private_key=KEY_BLOB)
    assert again["changed"] is False and again["onion_address"] == KEY_SID + ".onion"


def test_a_different_key_is_never_overwritten(runner, fake, tmp_path):
    path = service_dir(tmp_path)
    address = create(runner, fake, tmp_path)["onion_address"]
    result = runner.fails(module, **args(fake, tmp_path, path=path, ports=WEB_PORTS, private_key=KEY_BLOB))
    assert "already holds a different key (%s)" % address in result["msg"]
    assert KEY_BLOB.split(":", 1)[1] not in json.dumps(result)
    assert address_on_disk(path) == address


# -- authorized clients ----------------------------------------------------------------------------
def test_authorized_clients(runner, fake, tmp_path):
    path = service_dir(tmp_path)
    clients = [{"name": "alice", "public_key": CLIENT_PUBLIC}, {"name": "bob"}]
    result = create(runner, fake, tmp_path, authorized_clients=clients)
    sid = result["onion_address"][:-len(".onion")]
    [bob] = result["generated_clients"]
    assert bob["name"] == "bob" and bob["service"] == path
    private = onion.unb32(bob["private_key"], 32, "key")
    assert onion.b32(onion.x25519_public(private)) == bob["public_key"]
    assert bob["auth_private"] == "%s:descriptor:x25519:%s" % (sid, bob["private_key"])
    auth = os.path.join(path, "authorized_clients")
    with open(os.path.join(auth, "alice.auth")) as handle:
        assert handle.read() == "descriptor:x25519:%s\n" % CLIENT_PUBLIC
    with open(os.path.join(auth, "bob.auth")) as handle:
        assert handle.read() == "descriptor:x25519:%s\n" % bob["public_key"]
    probe = probe_public(tmp_path, path)
    assert result["service"]["authorized_clients"] == [{"name": "alice", "public_key": CLIENT_PUBLIC},
                                                       {"name": "bob", "public_key": bob["public_key"]},
                                                       {"name": "probe", "public_key": probe}]
    # the generated key is returned once; a rerun keeps bob's key and the probe's and generates nothing
    again = create(runner, fake, tmp_path, authorized_clients=clients)
    assert again["changed"] is False and again["generated_clients"] == []
    # dropping alice removes her file; the diff names clients, never keys
    less = runner.ok(module, diff=True, **args(fake, tmp_path, path=path, ports=WEB_PORTS,
                                               authorized_clients=[{"name": "bob"}]))
    assert less["changed"] is True
    assert sorted(os.listdir(auth)) == ["bob.auth", "probe.auth"]
    assert less["diff"]["before"]["services"][0]["authorized_clients"] == ["alice", "bob", "probe"]
    assert less["diff"]["after"]["services"][0]["authorized_clients"] == ["bob", "probe"]
    assert bob["public_key"] not in json.dumps(less["diff"])
    # the last client gone: the probe goes with it, and the service is public again (nobody locked out)
    public = runner.ok(module, **args(fake, tmp_path, path=path, ports=WEB_PORTS, authorized_clients=[]))
    assert public["changed"] is True and os.listdir(auth) == [] and public["service"]["authorized_clients"] == []


def probe_public(tmp_path, path):
    """The public key of the probe client kept for a service (the fake tor's DataDirectory: tmp_path/tordata),
    checked to be 0600 in a 0700 directory and in no module output."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import probe_client
    key_dir = probe_client.directory(str(tmp_path / "tordata"))
    private = probe_client.private_key(key_dir, path)
    assert private is not None, os.listdir(key_dir)
    assert stat.S_IMODE(os.stat(key_dir).st_mode) == 0o700
    assert all(stat.S_IMODE(os.stat(os.path.join(key_dir, n)).st_mode) == 0o600 for n in os.listdir(key_dir))
    return onion.b32(onion.x25519_public(private))


def test_bad_client_name_refused(runner, fake, tmp_path):
    result = runner.fails(module, **args(fake, tmp_path, path=service_dir(tmp_path), ports=WEB_PORTS,
                                         authorized_clients=[{"name": "../evil"}]))
    assert "authorized client name '../evil'" in result["msg"]
    assert setconfs(fake) == [] and not os.path.exists(service_dir(tmp_path))


def test_unix_target_with_a_hash_refused(runner, fake, tmp_path):
    """Issue 42: the drop-in's HiddenServicePort line would be cut at the # when tor reads it again (tor 0.4.9.11
    reads "80 unix:/tmp/a#b.sock" as "80 unix:/tmp/a"): refused before anything reaches tor or the disk."""
    result = runner.fails(module, **args(fake, tmp_path, path=service_dir(tmp_path),
                                         ports=[{"port": 80, "target_address": "unix:/run/web#1.sock"}]))
    assert "target_address 'unix:/run/web#1.sock': a unix target must be unix:/absolute/path without" in result["msg"]
    assert "or # (tor reads the rest of the drop-in's line as a comment)" in result["msg"]
    assert setconfs(fake) == [] and not os.path.exists(service_dir(tmp_path)) and not drop_in(tmp_path).exists()


# -- services list ---------------------------------------------------------------------------------
def services_arg(tmp_path, *names, **extra):
    return [dict({"path": service_dir(tmp_path, name), "ports": [{"port": 80 + i}]}, **extra)
            for i, name in enumerate(names)]


def test_services_list(runner, fake, tmp_path):
    result = runner.ok(module, **args(fake, tmp_path, services=services_arg(tmp_path, "a", "b")))
    assert result["changed"] is True
    assert [s["path"] for s in result["services"]] == [service_dir(tmp_path, "a"), service_dir(tmp_path, "b")]
    for service in result["services"]:
        assert service["onion_address"] == address_on_disk(service["path"])
    assert result["services"][1]["ports"] == [{"port": 81, "target_address": "127.0.0.1", "target_port": 81}]
    assert result["service"] is None and result["onion_address"] is None
    assert fake.hs_paths() == [service_dir(tmp_path, "a"), service_dir(tmp_path, "b")]
    assert len(setconfs(fake)) == 1      # both services in one atomic SETCONF
    again = runner.ok(module, **args(fake, tmp_path, services=services_arg(tmp_path, "a", "b")))
    assert again["changed"] is False and again["services"] == result["services"]


def test_services_exclusive(runner, fake, tmp_path):
    foreign = service_dir(tmp_path, "foreign")
    os.mkdir(foreign, 0o700)
    fake.hs_block = [("HiddenServiceDir", foreign), ("HiddenServicePort", "22 127.0.0.1:22")]
    plain = runner.ok(module, **args(fake, tmp_path, services=services_arg(tmp_path, "a")))
    assert [s["path"] for s in plain["services"]] == [foreign, service_dir(tmp_path, "a")]
    result = runner.ok(module, diff=True, **args(fake, tmp_path, services=services_arg(tmp_path, "a"), exclusive=True))
    assert result["changed"] is True
    assert fake.hs_paths() == [service_dir(tmp_path, "a")]
    assert [s["path"] for s in result["diff"]["before"]["services"]] == [foreign, service_dir(tmp_path, "a")]
    assert [s["path"] for s in result["services"]] == [service_dir(tmp_path, "a")]
    assert os.path.isdir(foreign)       # keys are kept


def test_services_prune(runner, fake, tmp_path):
    runner.ok(module, **args(fake, tmp_path, services=services_arg(tmp_path, "a", "b")))
    kept = runner.ok(module, **args(fake, tmp_path, services=services_arg(tmp_path, "a")))
    assert kept["changed"] is False and len(fake.hs_paths()) == 2     # without prune b stays
    result = runner.ok(module, **args(fake, tmp_path, services=services_arg(tmp_path, "a"), prune=True))
    assert result["changed"] is True
    assert fake.hs_paths() == [service_dir(tmp_path, "a")]
    assert service_dir(tmp_path, "b") not in drop_in(tmp_path).read_text()
    assert os.path.exists(os.path.join(service_dir(tmp_path, "b"), "hs_ed25519_secret_key"))
    assert result["purged"] == []


def test_services_private_key_and_clients(runner, fake, tmp_path):
    services = services_arg(tmp_path, "a", "b")
    services[0]["private_key"] = KEY_BLOB
    services[1]["authorized_clients"] = [{"name": "carol", "public_key": CLIENT_PUBLIC}]
    result = runner.ok(module, **args(fake, tmp_path, services=services))
    assert result["services"][0]["onion_address"] == KEY_SID + ".onion"
    assert result["services"][1]["authorized_clients"] == [
        {"name": "carol", "public_key": CLIENT_PUBLIC},
        {"name": "probe", "public_key": probe_public(tmp_path, result["services"][1]["path"])}]
    assert result["generated_clients"] == []
    assert KEY_BLOB.split(":", 1)[1] not in json.dumps(result)


def test_services_generated_clients_auth_private_names_their_service(runner, fake, tmp_path):
    """Regression: with services:, each generated client's auth_private line starts with the
    56-character id of its own service (it came back as ':descriptor:x25519:KEY')."""
    services = services_arg(tmp_path, "a", "b")
    services[0]["authorized_clients"] = [{"name": "alice"}]
    services[1]["authorized_clients"] = [{"name": "bob"}, {"name": "carol", "public_key": CLIENT_PUBLIC}]
    result = runner.ok(module, **args(fake, tmp_path, services=services))
    addresses = dict((s["path"], s["onion_address"]) for s in result["services"])
    generated = result["generated_clients"]
    assert sorted((g["service"], g["name"]) for g in generated) == [
        (service_dir(tmp_path, "a"), "alice"), (service_dir(tmp_path, "b"), "bob")]
    for client in generated:
        sid = addresses[client["service"]][:-len(".onion")]
        assert len(sid) == 56 and onion.is_service_id(sid)
        assert client["auth_private"] == "%s:descriptor:x25519:%s" % (sid, client["private_key"])


def test_services_fed_back_from_info(runner, fake, tmp_path):
    """The info module's output, given back as services, is what tor already runs."""
    services = services_arg(tmp_path, "a", "b")
    services[1]["authorized_clients"] = [{"name": "carol", "public_key": CLIENT_PUBLIC}]
    runner.ok(module, **args(fake, tmp_path, services=services))
    listed = runner.ok(info_module, control_port=fake.port)["hidden_services"]
    persistent = [s for s in listed if s["type"] == "persistent"]
    result = runner.ok(module, **args(fake, tmp_path, services=persistent, exclusive=True))
    assert result["changed"] is False
    assert result["services"] == persistent


# -- ephemeral services ----------------------------------------------------------------------------
def eph(fake, tmp_path, **params):
    params.setdefault("ports", WEB_PORTS)
    return args(fake, tmp_path, ephemeral=True, **params)


def test_ephemeral_generated_key(runner, fake, tmp_path):
    hidden = runner.ok(module, **eph(fake, tmp_path))
    assert hidden["changed"] is True and "private_key" not in hidden
    sid = hidden["service"]["service_id"]
    assert hidden["onion_address"] == sid + ".onion"
    assert "DiscardPK" in fake.onions[sid]["flags"] and fake.onions[sid]["detached"]
    shown = runner.ok(module, **eph(fake, tmp_path, return_private_key=True))
    new_sid = shown["service"]["service_id"]
    assert new_sid != sid and onion.service_id_of_key(shown["private_key"]) == new_sid
    assert fake.onions[new_sid]["key"] == onion.parse_key_blob(shown["private_key"])
    assert shown["service"] == {"type": "ephemeral", "service_id": new_sid, "onion_address": new_sid + ".onion",
                                "detached": True, "max_streams": None, "client_auth_v3": [],
                                "ports": [{"port": 80, "target_address": "127.0.0.1", "target_port": 8080}],
                                "pow": {"enabled": False, "queue_rate": 250, "queue_burst": 2500}}
    assert fake.onions[new_sid]["ports"] == ["80,127.0.0.1:8080"]


def test_ephemeral_with_key_is_idempotent(runner, fake, tmp_path):
    first = runner.ok(module, diff=True, **eph(fake, tmp_path, private_key=KEY_BLOB))
    assert first["changed"] is True and first["onion_address"] == KEY_SID + ".onion"
    assert first["diff"]["before"] == {} and first["diff"]["after"]["service_id"] == KEY_SID
    assert list(fake.onions) == [KEY_SID]
    assert {"DiscardPK", "Detach"} <= set(fake.onions[KEY_SID]["flags"])
    assert KEY_BLOB.split(":", 1)[1] not in json.dumps(first)
    same = runner.ok(module, **eph(fake, tmp_path, private_key=KEY_BLOB))
    assert same["changed"] is False and same["service"] == first["service"]
    assert [c for c in fake.commands() if c == "ADD_ONION"] == ["ADD_ONION"]
    changed = runner.ok(module, diff=True, **eph(fake, tmp_path, private_key=KEY_BLOB, ports=[{"port": 443}],
                                                 client_auth_v3=[CLIENT_PUBLIC], max_streams=4))
    assert changed["changed"] is True and list(fake.onions) == [KEY_SID]
    assert changed["diff"]["before"]["ports"][0]["port"] == 80 and changed["diff"]["after"]["ports"][0]["port"] == 443
    assert fake.onions[KEY_SID]["ports"] == ["443,127.0.0.1:443"]
    assert fake.onions[KEY_SID]["client_auth_v3"] == [CLIENT_PUBLIC] and "V3Auth" in fake.onions[KEY_SID]["flags"]
    assert fake.onions[KEY_SID]["max_streams"] == 4


def test_ephemeral_check_mode(runner, fake, tmp_path):
    result = runner.ok(module, check_mode=True, **eph(fake, tmp_path, private_key=KEY_BLOB))
    assert result["changed"] is True and result["onion_address"] == KEY_SID + ".onion"
    assert fake.onions == {} and "ADD_ONION" not in fake.commands()
    runner.ok(module, **eph(fake, tmp_path, private_key=KEY_BLOB))
    gone = runner.ok(module, check_mode=True, **eph(fake, tmp_path, state="absent", service_id=KEY_SID))
    assert gone["changed"] is True and list(fake.onions) == [KEY_SID]


def test_ephemeral_absent(runner, fake, tmp_path):
    runner.ok(module, **eph(fake, tmp_path, private_key=KEY_BLOB))
    result = runner.ok(module, diff=True, **eph(fake, tmp_path, state="absent", private_key=KEY_BLOB))
    assert result["changed"] is True and result["service"] is None and result["onion_address"] is None
    assert result["diff"]["before"]["service_id"] == KEY_SID and result["diff"]["after"] == {}
    assert fake.onions == {}
    again = runner.ok(module, **eph(fake, tmp_path, state="absent", service_id=KEY_SID))
    assert again["changed"] is False
    other = fake.add_onion_direct()
    by_id = runner.ok(module, **eph(fake, tmp_path, state="absent", service_id=other))
    assert by_id["changed"] is True and fake.onions == {}


def test_ephemeral_refused_change_keeps_the_service(runner, fake, tmp_path):
    runner.ok(module, **eph(fake, tmp_path, private_key=KEY_BLOB))
    fake.refuse("ADD_ONION", "512", "Invalid VIRTPORT/TARGET", times=1)
    result = runner.fails(module, **eph(fake, tmp_path, private_key=KEY_BLOB, ports=[{"port": 443}]))
    assert "512 Invalid VIRTPORT/TARGET" in result["msg"]
    assert KEY_BLOB.split(":", 1)[1] not in json.dumps(result)
    assert list(fake.onions) == [KEY_SID] and fake.onions[KEY_SID]["ports"] == ["80,127.0.0.1:8080"]


# -- refusals: one fail_json message each, nothing changed -----------------------------------------
@pytest.mark.parametrize("params, message", [
    (lambda d: {"path": d, "services": [{"path": d, "ports": [{"port": 80}]}]},
     "parameters are mutually exclusive: path|services"),
    (lambda d: {"path": d, "ephemeral": True, "ports": [{"port": 80}]},
     "parameters are mutually exclusive: path|ephemeral"),
    (lambda d: {"services": [{"path": d, "ports": [{"port": 80}]}], "state": "absent"},
     "state=absent takes one path, not a services list"),
    (lambda d: {"path": d}, "a present service needs at least one entry in ports"),
    (lambda d: {"path": "relative/dir", "ports": [{"port": 80}]}, "path must be absolute"),
    (lambda d: {"path": d, "ports": [{"port": 80, "target_address": "example.com"}]},
     "target_address 'example.com' is neither an IP address nor unix:/path"),
    (lambda d: {"path": d, "ports": ["80:[fe80::1%lo]:8080"]},
     "target_address '[fe80::1%lo]': tor takes no IPv6 zone (the %lo part)"),
    (lambda d: {"path": d, "ports": [{"port": 80}], "num_intro_points": 2}, "num_intro_points must be between 3"),
    (lambda d: {"path": d, "ports": [{"port": 80}], "extra_options": {"HiddenServiceDir": "/etc"}},
     "extra_options key 'HiddenServiceDir' must be another HiddenService* option"),
    (lambda d: {"path": d, "ports": [{"port": 80}], "private_key": "ED25519-V3:not base64!"},
     "private_key is not base64"),
    (lambda d: {"ephemeral": True, "ports": [{"port": 80}], "service_id": KEY_SID},
     "service_id alone cannot create an ephemeral service"),
    (lambda d: {"ephemeral": True, "state": "absent"}, "removing an ephemeral service needs service_id or private_key"),
    (lambda d: {"ephemeral": True}, "an ephemeral service needs at least one port"),
    (lambda d: {"ephemeral": True, "ports": [{"port": 80}], "private_key": KEY_BLOB, "service_id": "a" * 56},
     "service_id does not belong to private_key"),
    (lambda d: {"ephemeral": True, "state": "absent", "service_id": "example.onion"},
     "service_id must be a v3 service id"),
    (lambda d: {"ephemeral": True, "ports": [{"port": 80}], "client_auth_v3": ["not a key"]},
     "the client public key is not base32"),
], ids=["path+services", "path+ephemeral", "absent+services", "no ports", "relative path",
        "bad target", "IPv6 zone", "intro points", "reserved extra option", "bad private_key", "service_id alone",
        "absent without id", "ephemeral without ports", "id of another key", "bad service_id", "bad client key"])
def test_refused_parameters(runner, fake, tmp_path, params, message):
    path = service_dir(tmp_path)
    result = runner.fails(module, **args(fake, tmp_path, **params(path)))
    assert message in result["msg"]
    assert fake.hs_block == [] and fake.onions == {} and setconfs(fake) == []
    assert "ADD_ONION" not in fake.commands() and not os.path.exists(path)
    assert KEY_BLOB.split(":", 1)[1] not in json.dumps(result)


def test_neither_path_nor_services_nor_ephemeral(runner, fake, tmp_path):
    # refused before tor is asked anything (ephemeral=false must not count as given)
    result = runner.fails(module, **args(fake, tmp_path, ports=[{"port": 80}]))
    assert result["msg"] == "give path (one persistent service), services (a list of them) or ephemeral=true"
    assert fake.hs_block == [] and setconfs(fake) == [] and fake.commands() == []


def test_bad_control_port(runner, tmp_path):
    result = runner.fails(module, control_port=70000, path=service_dir(tmp_path), ports=WEB_PORTS)
    assert result["msg"] == "control_port must be between 1 and 65535, got 70000"


def test_no_tor_listening(runner, tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]          # bound, not listening: connection refused
        result = runner.fails(module, control_port=port, path=service_dir(tmp_path), ports=WEB_PORTS,
                              config_file=str(drop_in(tmp_path)))
    assert result["msg"] == "cannot connect to tor's control port 127.0.0.1:%d: Connection refused" % port
    assert result["error"] == "ConnectionFailed"
    assert not os.path.exists(service_dir(tmp_path))


def test_tor_refuses_setconf(runner, fake, tmp_path, torrc):
    path = service_dir(tmp_path)
    torrc_text = torrc.read_text()
    fake.refuse("SETCONF", "553", "Unable to set option: Failed to configure rendezvous options. See logs for "
                                  "details.")
    fake.setconf_warnings = ["Directory %s cannot be read: Permission denied" % path]
    result = runner.fails(module, **args(fake, tmp_path, path=path, ports=WEB_PORTS))
    assert "tor refused the onion-service configuration" in result["msg"]
    assert "553 Unable to set option: Failed to configure rendezvous options." in result["msg"]
    assert "tor says: Directory %s cannot be read: Permission denied" % path in result["msg"]
    assert result["error"] == "ServiceError"
    assert fake.hs_block == []
    assert not os.path.exists(path)              # the directory this run made is gone again
    assert not drop_in(tmp_path).exists() and torrc.read_text() == torrc_text
    [sent] = setconfs(fake)
    assert fake.received[fake.received.index(sent) + 1] == "SETEVENTS"     # WARN events off again


def test_service_defined_in_torrc(runner, fake, tmp_path, torrc):
    path = service_dir(tmp_path)
    os.mkdir(path, 0o700)
    torrc.write_text(torrc.read_text() + "HiddenServiceDir %s\nHiddenServicePort 80 127.0.0.1:80\n" % path)
    fake.hs_block = [("HiddenServiceDir", path), ("HiddenServicePort", "80 127.0.0.1:80")]
    result = runner.fails(module, **args(fake, tmp_path, path=path, ports=WEB_PORTS))
    assert result["msg"].startswith("the service %s is defined in %s; manage it there" % (path, torrc))
    assert fake.hs_block == [("HiddenServiceDir", path), ("HiddenServicePort", "80 127.0.0.1:80")]
    assert setconfs(fake) == [] and not drop_in(tmp_path).exists()


def test_unsafe_existing_directory(runner, fake, tmp_path):
    path = service_dir(tmp_path)
    os.mkdir(path)
    os.chmod(path, 0o755)
    result = runner.fails(module, **args(fake, tmp_path, path=path, ports=WEB_PORTS))
    assert result["msg"].startswith("service directory %s is unsafe: mode 0755, more open than 0700" % path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o755       # reported, not changed
    assert os.listdir(path) == [] and setconfs(fake) == []


def test_missing_parent_directory(runner, fake, tmp_path):
    path = str(tmp_path / "nowhere" / "web")
    result = runner.fails(module, **args(fake, tmp_path, path=path, ports=WEB_PORTS))
    assert result["msg"] == "the parent directory %s of %s does not exist" % (tmp_path / "nowhere", path)
    assert setconfs(fake) == []


def test_config_file_that_is_not_a_torrc(runner, fake, tmp_path, torrc):
    torrc.write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    result = runner.fails(module, **args(fake, tmp_path, path=service_dir(tmp_path), ports=WEB_PORTS))
    assert result["msg"] == ("tor's config-file %s does not look like a torrc (a file of tor options); not adding "
                             "an %%include line to it" % torrc)
    assert "root:x" not in json.dumps(result)
    assert torrc.read_bytes() == b"root:x:0:0:root:/root:/bin/bash\n" and setconfs(fake) == []


# -- ports in their short forms (issue 14.7) ------------------------------------------------------
SHORT_PORTS = [22, "80:8080", "81:127.0.0.2:8081", "443:unix:/run/web.sock", {"port": 8443, "target_port": 443}]
SHORT_BLOCK = ["22 127.0.0.1:22", "80 127.0.0.1:8080", "81 127.0.0.2:8081", "443 unix:/run/web.sock",
               "8443 127.0.0.1:443"]


def test_ports_short_forms_single_and_services(runner, fake, tmp_path, torrc):
    path = service_dir(tmp_path)
    result = runner.ok(module, **args(fake, tmp_path, path=path, ports=SHORT_PORTS))
    assert result["changed"] is True
    assert [v for k, v in fake.hs_block if k == "HiddenServicePort"] == SHORT_BLOCK
    # the dict form of the same ports is the same service: no change
    dicts = [hs.normalize_port(p) for p in SHORT_PORTS]
    assert runner.ok(module, **args(fake, tmp_path, path=path, ports=dicts))["changed"] is False
    listed = runner.ok(module, **args(fake, tmp_path, services=[{"path": path, "ports": SHORT_PORTS},
                                                               {"path": service_dir(tmp_path, "b"), "ports": [80]}]))
    assert listed["changed"] is True
    assert fake.hs_block[-2:] == [("HiddenServiceDir", service_dir(tmp_path, "b")),
                                  ("HiddenServicePort", "80 127.0.0.1:80")]


def test_ports_short_forms_ephemeral(runner, fake, tmp_path):
    result = runner.ok(module, **eph(fake, tmp_path, ports=["80:8080", 22]))
    assert fake.onions[result["service"]["service_id"]]["ports"] == ["80,127.0.0.1:8080", "22,127.0.0.1:22"]


@pytest.mark.parametrize("ports", [["80:localhost"], [[80]], [{"port": 80, "target": "127.0.0.1"}], ["http"]])
def test_ports_other_shapes_name_the_expected_ones(runner, fake, tmp_path, ports):
    msg = runner.fails(module, **args(fake, tmp_path, path=service_dir(tmp_path), ports=ports))["msg"]
    assert msg.startswith("ports entry %r" % (ports[0],)) and '"PORT:TARGET_PORT" ("80:8080")' in msg, msg
    assert fake.hs_block == [] and not os.path.exists(service_dir(tmp_path))


def test_duplicate_path_is_named(runner, fake, tmp_path, torrc):
    path = service_dir(tmp_path)
    msg = runner.fails(module, **args(fake, tmp_path, services=[{"path": path, "ports": [80]},
                                                                {"path": path + "/", "ports": [81]}]))["msg"]
    assert msg == "the same path is given for more than one service: %s; give each service its own directory" % path


# -- check mode and diff: what a run will do (issue 14.10) -------------------------------------------
def test_check_mode_shows_the_include_and_the_address_of_a_given_key(runner, fake, tmp_path, torrc):
    path = service_dir(tmp_path)
    torrc_text = torrc.read_text()
    checked = runner.ok(module, check_mode=True, diff=True,
                        **args(fake, tmp_path, path=path, ports=WEB_PORTS, private_key=KEY_BLOB))
    assert checked["changed"] is True
    assert checked["onion_address"] == checked["service"]["onion_address"] == KEY_SID + ".onion"
    assert checked["diff"]["after"]["torrc"]["appended"][-1] == "%%include %s" % drop_in(tmp_path)
    assert not os.path.exists(path) and torrc.read_text() == torrc_text and setconfs(fake) == []
    listed = runner.ok(module, check_mode=True, **args(fake, tmp_path, services=[
        {"path": path, "ports": [80], "private_key": KEY_BLOB}, {"path": service_dir(tmp_path, "b"), "ports": [80]}]))
    assert [s["onion_address"] for s in listed["services"]] == [KEY_SID + ".onion", None]
    # the real run gives that address; once torrc includes the drop-in, the diff has no torrc part
    done = runner.ok(module, diff=True, **args(fake, tmp_path, path=path, ports=WEB_PORTS, private_key=KEY_BLOB))
    assert done["onion_address"] == KEY_SID + ".onion"
    other = runner.ok(module, check_mode=True, diff=True, **args(fake, tmp_path, path=service_dir(tmp_path, "c"),
                                                                 ports=WEB_PORTS))
    assert "torrc" not in other["diff"]["before"] and "torrc" not in other["diff"]["after"]


def test_check_mode_address_of_a_key_already_on_disk(runner, fake, tmp_path, torrc):
    """A directory restored from a backup (key files, not yet in tor): check mode gives its address."""
    from harness.fake_controller import write_service_keys
    path = service_dir(tmp_path)
    os.mkdir(path, 0o700)
    write_service_keys(path, KEY)
    checked = runner.ok(module, check_mode=True, **args(fake, tmp_path, path=path, ports=WEB_PORTS))
    assert checked["changed"] is True and checked["onion_address"] == KEY_SID + ".onion"


# -- a failure after something was written says what (issue 14.5) ------------------------------------
def test_refusal_after_a_key_was_installed_says_so(runner, fake, tmp_path, torrc):
    vaulted, plain = service_dir(tmp_path, "vaulted2"), service_dir(tmp_path, "plain")
    fake.refuse("SETCONF", "553", "Unable to set option: Failed to configure rendezvous options. See logs for "
                                  "details.", times=1)
    result = runner.fails(module, **args(fake, tmp_path, services=[
        {"path": vaulted, "ports": [80], "private_key": KEY_BLOB}, {"path": plain, "ports": [80]}]))
    msg = result["msg"]
    assert "nothing was changed" not in msg
    assert msg.startswith("tor refused the onion-service configuration (553 Unable to set option"), msg
    assert msg.endswith("tor's configuration was not changed. Check that tor's user (root) can write the service "
                        "directories and that the options are valid. This run wrote, and kept so that no key is "
                        "lost: the key of %s.onion in %s (a directory this run made); a rerun with the same key uses "
                        "it" % (KEY_SID, vaulted)), msg
    assert KEY_BLOB.split(":", 1)[1] not in json.dumps(result)
    assert address_on_disk(vaulted) == KEY_SID + ".onion" and not os.path.exists(plain)
    assert fake.hs_block == [] and not drop_in(tmp_path).exists()
    # the rerun, tor accepting now, takes the kept key up
    done = runner.ok(module, **args(fake, tmp_path, services=[{"path": vaulted, "ports": [80], "private_key": KEY_BLOB}]))
    assert done["services"][0]["onion_address"] == KEY_SID + ".onion"


def test_services_entry_without_ports_is_refused_before_any_write(runner, fake, tmp_path, torrc):
    vaulted, noports = service_dir(tmp_path, "vaulted2"), service_dir(tmp_path, "noports")
    result = runner.fails(module, **args(fake, tmp_path, services=[
        {"path": vaulted, "ports": [80], "private_key": KEY_BLOB}, {"path": noports}]))
    assert result["msg"] == "the service %s in services needs at least one entry in ports" % noports
    assert not os.path.exists(vaulted) and not os.path.exists(noports) and setconfs(fake) == []


def test_ephemeral_keep_key_kept_0600_removed_with_the_service(runner, fake, tmp_path):
    """keep_key: the key in key_dir/<sid>.key, 0600 in a 0700 directory, never in the result; a second run changes
    nothing; keep_key false removes it (changed, check mode first); state=absent removes it with the service; a
    generated key is kept as tor returned it (tor not told DiscardPK), and keep_key with discard_pk is refused."""
    keys = tmp_path / "keys" / "ephemeral"
    first = runner.ok(module, **eph(fake, tmp_path, private_key=KEY_BLOB, keep_key=True, key_dir=str(keys)))
    kept = keys / (KEY_SID + ".key")
    assert first["changed"] is True and kept.read_text().strip() == KEY_BLOB
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and stat.S_IMODE(keys.stat().st_mode) == 0o700
    assert KEY_BLOB.split(":", 1)[1] not in json.dumps(first)
    again = runner.ok(module, **eph(fake, tmp_path, private_key=KEY_BLOB, keep_key=True, key_dir=str(keys)))
    assert again["changed"] is False
    checked = runner.ok(module, check_mode=True, **eph(fake, tmp_path, private_key=KEY_BLOB, key_dir=str(keys)))
    assert checked["changed"] is True and kept.exists()
    dropped = runner.ok(module, **eph(fake, tmp_path, private_key=KEY_BLOB, key_dir=str(keys)))
    assert dropped["changed"] is True and not kept.exists() and list(fake.onions) == [KEY_SID]
    runner.ok(module, **eph(fake, tmp_path, private_key=KEY_BLOB, keep_key=True, key_dir=str(keys)))
    gone = runner.ok(module, **eph(fake, tmp_path, state="absent", service_id=KEY_SID, key_dir=str(keys)))
    assert gone["changed"] is True and not kept.exists() and fake.onions == {}
    made = runner.ok(module, **eph(fake, tmp_path, keep_key=True, key_dir=str(keys)))
    sid = made["service"]["service_id"]
    assert "DiscardPK" not in fake.onions[sid]["flags"] and "private_key" not in made
    assert onion.service_id_of_key((keys / (sid + ".key")).read_text().strip()) == sid
    refused = runner.fails(module, **eph(fake, tmp_path, keep_key=True, discard_pk=True, key_dir=str(keys)))
    assert "keep_key keeps the service's key on the host, discard_pk tells tor to forget it" in refused["msg"]


def test_keep_key_of_a_persistent_service_refused(runner, fake, tmp_path):
    failed = runner.fails(module, **args(fake, tmp_path, path=service_dir(tmp_path), ports=WEB_PORTS, keep_key=True))
    assert failed["msg"].startswith("keep_key is for an ephemeral service")


def test_ephemeral_keep_key_refuses_a_directory_others_can_enter(runner, fake, tmp_path):
    keys = tmp_path / "open"
    keys.mkdir(mode=0o755)
    keys.chmod(0o755)
    failed = runner.fails(module, **eph(fake, tmp_path, private_key=KEY_BLOB, keep_key=True, key_dir=str(keys)))
    assert "must be this user's own and mode 0700" in failed["msg"], failed
    assert KEY_BLOB.split(":", 1)[1] not in json.dumps(failed) and list(keys.iterdir()) == []
