# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""PersistentManager on disk, as root for a tor whose user is another account (Debian: debian-tor;
here `nobody`), against the stateful fake control port (harness/fake_controller.py) - no tor.

Issue 26 A3: a failed or interrupted run (tor refuses the SETCONF, another controller wins the race
RACE_ATTEMPTS times, a write fails half-way) leaves authorized_clients exactly as tor could read it
before: each file's content, owner, group and mode; the files the run added gone; the ones it
deleted back with their owner and mode; the directory gone when the run made it. (tor enables
client authorization only when a client file loads: a file put back that tor's user cannot read
publishes the service to everyone at the next reload.)

Issue 26 A6: tor's user owns the service directories and their parent, so it can swap any name in
them for a symbolic link while root works: a link put where the run makes or writes something
changes nothing of the link's target, and the run fails with one message."""

import errno
import os
import pwd
import stat

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._common import error_message
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import ephemeral as _ephemeral
from ansible_collections.onionlab.tor.plugins.module_utils._tor import files
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_manager as sm
from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_plan as sp
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.fake_controller import FakeController
from harness.keys import new_expanded_key

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="files of tor's user (another account) need root")

TOR = pwd.getpwnam("nobody")
REFUSAL = "Unable to set option: Failed to configure rendezvous options. See logs for details."
_, LAPTOP = onion.generate_client_keypair()
_, PHONE = onion.generate_client_keypair()
_, DESK = onion.generate_client_keypair()
_, NEW = onion.generate_client_keypair()


@pytest.fixture
def fake(tmp_path):
    """A fake tor whose process runs as `nobody` (GETINFO process/uid)."""
    torrc = tmp_path / "torrc"
    torrc.write_text("SocksPort 0\n")
    with FakeController(tmp_path / "tordata", torrc, uid=TOR.pw_uid) as controller:
        yield controller


@pytest.fixture
def base(tmp_path):
    """The directory the services live in: tor's user's, as Debian's /var/lib/tor."""
    path = tmp_path / "lib"
    path.mkdir(mode=0o700)
    os.chown(str(path), TOR.pw_uid, TOR.pw_gid)
    return path


def apply(fake, tmp_path, path, clients, **kwargs):
    with connect(port=fake.port) as ctl:
        manager = sm.PersistentManager(ctl, config_file=str(tmp_path / "torrc.d" / "onionlab.conf"), include=False)
        for name, value in kwargs.items():
            setattr(manager, name, value(manager))
        return manager.apply([hs.normalize_service({"path": path, "ports": [{"port": 80}]})],
                             clients=None if clients is None else {path: clients})


def snapshot(directory):
    """Everything tor sees of a directory: its owner/mode, and each entry's kind, owner, group,
    mode and content (or link target)."""
    def entry(path):
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            what = ("link", os.readlink(path))
        elif stat.S_ISDIR(st.st_mode):
            what = ("directory", sorted(os.listdir(path)))
        else:
            with open(path, "rb") as handle:
                what = ("file", handle.read())
        return what + (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode))
    st = os.lstat(directory)
    return ((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)),
            dict((name, entry(os.path.join(directory, name))) for name in sorted(os.listdir(directory))))


def owner_mode(path):
    st = os.lstat(path)
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def service_with_clients(fake, tmp_path, base):
    """A service with three clients, their files as an operator may have left them: laptop
    (tor's, 0600), phone (tor's, group-readable 0640), desk (root's, 0644: tor reads it too)."""
    path = str(base / "web")
    apply(fake, tmp_path, path, [{"name": "laptop", "public_key": LAPTOP}, {"name": "phone", "public_key": PHONE},
                                 {"name": "desk", "public_key": DESK}])
    auth = os.path.join(path, "authorized_clients")
    assert owner_mode(os.path.join(auth, "laptop.auth")) == (TOR.pw_uid, TOR.pw_gid, 0o600)
    os.chmod(os.path.join(auth, "phone.auth"), 0o640)
    os.chown(os.path.join(auth, "desk.auth"), 0, 0)
    os.chmod(os.path.join(auth, "desk.auth"), 0o644)
    return path, auth


# the run that fails: laptop gets a new key, phone goes, tablet comes, desk stays
CHANGE = [{"name": "laptop", "public_key": NEW}, {"name": "desk", "public_key": DESK}, {"name": "tablet"}]


def test_refused_setconf_puts_the_client_files_back_exactly(fake, tmp_path, base, monkeypatch):
    path, auth = service_with_clients(fake, tmp_path, base)
    before = snapshot(auth)
    seen = []
    real = sm.set_conf_explained

    def set_conf(ctl, pairs):
        seen.append(snapshot(auth))
        return real(ctl, pairs)
    monkeypatch.setattr(sm, "set_conf_explained", set_conf)
    fake.refuse("SETCONF", "553", REFUSAL)
    with pytest.raises(sm.ServiceError) as err:
        apply(fake, tmp_path, path, CHANGE)
    assert "tor refused the onion-service configuration" in str(err.value)
    # what tor would have read: the new files, tor's, 0600
    [written] = seen
    assert sorted(written[1]) == ["desk.auth", "laptop.auth", "probe.auth", "tablet.auth"]   # probe: the health check's
    for name in ("laptop.auth", "tablet.auth"):
        assert written[1][name][2:] == (TOR.pw_uid, TOR.pw_gid, 0o600), name
    assert written[1]["laptop.auth"][1] == ("descriptor:x25519:%s\n" % NEW).encode()
    # and after the failure, exactly what tor could read before
    assert snapshot(auth) == before


def test_every_race_retry_puts_the_client_files_back(fake, tmp_path, base):
    """Another controller changes tor's block between each read and our SETCONF: RACE_ATTEMPTS
    attempts, each writes the files and undoes them."""
    path, auth = service_with_clients(fake, tmp_path, base)
    before = snapshot(auth)
    attempts = []

    def racing(manager):
        real = manager.current

        def current():
            block = real()
            if os.path.exists(os.path.join(auth, "tablet.auth")):   # the re-read right before our SETCONF
                attempts.append(snapshot(auth))
                fake.hs_block = fake.hs_block + [("HiddenServiceDir", str(base / ("other%d" % len(attempts)))),
                                                 ("HiddenServicePort", "99 127.0.0.1:99")]
                return real()
            return block
        return current
    with pytest.raises(sm.ServiceError) as err:
        apply(fake, tmp_path, path, CHANGE, current=racing)
    assert "changed by another controller" in str(err.value)
    assert len(attempts) == sm.RACE_ATTEMPTS
    for written in attempts:
        assert written[1]["laptop.auth"][2:] == (TOR.pw_uid, TOR.pw_gid, 0o600)
    assert snapshot(auth) == before


def test_a_write_failing_half_way_undoes_the_ones_before(fake, tmp_path, base, monkeypatch):
    path, auth = service_with_clients(fake, tmp_path, base)
    before = snapshot(auth)
    real = os.rename

    def rename(src, dst, *args, **kwargs):
        if str(dst).endswith("tablet.auth"):
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real(src, dst, *args, **kwargs)
    monkeypatch.setattr(os, "rename", rename)
    with pytest.raises(OSError) as err:
        apply(fake, tmp_path, path, CHANGE)
    assert err.value.errno == errno.ENOSPC
    monkeypatch.setattr(os, "rename", real)
    assert snapshot(auth) == before
    assert not [line for line in fake.received if line.startswith("SETCONF")][1:]   # only the first run's


def test_the_authorized_clients_directory_a_failed_run_made_goes(fake, tmp_path, base):
    path = str(base / "web")
    apply(fake, tmp_path, path, [])
    os.rmdir(os.path.join(path, "authorized_clients"))   # a service that never had clients
    before = snapshot(path)
    fake.refuse("SETCONF", "553", REFUSAL)
    with pytest.raises(sm.ServiceError):
        apply(fake, tmp_path, path, [{"name": "laptop", "public_key": LAPTOP}])
    assert snapshot(path) == before


def test_a_client_file_that_was_a_link_is_a_link_again(fake, tmp_path, base):
    """An operator's client file kept elsewhere and linked (tor follows the link): a failed run
    that was to replace it leaves the link, not a copy as root."""
    path, auth = service_with_clients(fake, tmp_path, base)
    kept = base / "desk-key"
    kept.write_text("descriptor:x25519:%s\n" % DESK)
    os.chown(str(kept), TOR.pw_uid, TOR.pw_gid)
    os.unlink(os.path.join(auth, "desk.auth"))
    os.symlink(str(kept), os.path.join(auth, "desk.auth"))
    before = snapshot(auth)
    fake.refuse("SETCONF", "553", REFUSAL)
    with pytest.raises(sm.ServiceError):
        apply(fake, tmp_path, path, [{"name": "desk", "public_key": NEW}, {"name": "laptop", "public_key": LAPTOP},
                                     {"name": "phone", "public_key": PHONE}])
    assert snapshot(auth) == before
    assert kept.read_text() == "descriptor:x25519:%s\n" % DESK


# -- A6: a symbolic link where root makes or writes something -------------------------------------------------
@pytest.fixture
def victim(tmp_path):
    """A file of root's, 0644, that a link swapped in by tor's user points at."""
    path = tmp_path / "root-only"
    path.write_text("root's\n")
    os.chmod(str(path), 0o644)
    return path


@pytest.fixture
def victim_dir(tmp_path):
    path = tmp_path / "root-dir"
    path.mkdir(mode=0o755)
    return path


def one_message(exc):
    text = error_message(exc)
    assert "\n" not in text
    return text


def mkdir_makes_a_link(monkeypatch, name, target):
    """os.mkdir of `name` makes a symbolic link to target instead: what tor's user does by
    renaming the new directory away and putting a link there between root's mkdir and chmod."""
    real = os.mkdir

    def mkdir(path, *args, **kwargs):
        if os.path.basename(str(path)) == name:
            os.symlink(str(target), str(path), dir_fd=kwargs.get("dir_fd"))
            return
        return real(path, *args, **kwargs)
    monkeypatch.setattr(os, "mkdir", mkdir)


def test_service_directory_swapped_for_a_link(fake, tmp_path, base, victim, monkeypatch):
    before = owner_mode(str(victim))
    mkdir_makes_a_link(monkeypatch, "web", victim)
    with pytest.raises(OSError) as err:
        apply(fake, tmp_path, str(base / "web"), [])
    assert owner_mode(str(victim)) == before and victim.read_text() == "root's\n"
    assert one_message(err.value) == "%s: %s" % (files.SWAPPED, base / "web")
    assert [line for line in fake.received if line.startswith("SETCONF")] == []


def test_authorized_clients_swapped_for_a_link(fake, tmp_path, base, victim_dir, monkeypatch):
    path = base / "web"
    apply(fake, tmp_path, str(path), None)   # the service, no clients managed yet
    before = snapshot(str(victim_dir))
    mkdir_makes_a_link(monkeypatch, "authorized_clients", victim_dir)
    with pytest.raises(OSError) as err:
        apply(fake, tmp_path, str(path), [{"name": "laptop", "public_key": LAPTOP}])
    assert snapshot(str(victim_dir)) == before       # not given to tor's user, nothing written into it
    assert one_message(err.value) == "%s: %s" % (files.SWAPPED, path / "authorized_clients")


def test_client_file_swapped_for_a_link_after_its_write(fake, tmp_path, base, victim, monkeypatch):
    """The new client file renamed into place, then at once replaced by a link to root's file:
    nothing of root's is given to tor's user (the owner was set on the file before the rename)."""
    path = base / "web"
    before = owner_mode(str(victim))
    real = os.rename

    def rename(src, dst, *args, **kwargs):
        real(src, dst, *args, **kwargs)
        if str(dst).endswith("laptop.auth"):
            dir_fd = kwargs.get("dst_dir_fd")
            os.unlink(dst, dir_fd=dir_fd)
            os.symlink(str(victim), dst, dir_fd=dir_fd)
    monkeypatch.setattr(os, "rename", rename)
    apply(fake, tmp_path, str(path), [{"name": "laptop", "public_key": LAPTOP}])
    assert owner_mode(str(victim)) == before and victim.read_text() == "root's\n"


def test_service_directory_swapped_before_its_key_is_written(fake, tmp_path, base, victim_dir, monkeypatch):
    """A key to install in a directory that has none: tor's user swaps the directory for a link to
    one of root's between the read and the write; no key lands there."""
    path = base / "web"
    path.mkdir(mode=0o700)
    os.chown(str(path), TOR.pw_uid, TOR.pw_gid)
    before = snapshot(str(victim_dir))
    real_plan = sp.plan

    def plan(*args, **kwargs):
        steps = real_plan(*args, **kwargs)
        os.rename(str(path), str(base / "moved"))
        os.symlink(str(victim_dir), str(path))
        return steps
    monkeypatch.setattr(sp, "plan", plan)
    key = new_expanded_key(b"swapped")
    with connect(port=fake.port) as ctl:
        manager = sm.PersistentManager(ctl, config_file=str(tmp_path / "torrc.d" / "onionlab.conf"), include=False)
        with pytest.raises(OSError) as err:
            manager.apply([hs.normalize_service({"path": str(path), "ports": [{"port": 80}]})], keys={str(path): key})
    assert snapshot(str(victim_dir)) == before
    assert one_message(err.value) == "%s: %s" % (files.SWAPPED, path)


def test_ephemeral_record_not_read_through_a_link_or_a_fifo(tmp_path):
    """The ephemeral record lives in tor's DataDirectory: a link tor's user put there (to a file of
    root's) is not read, nor a FIFO waited on."""
    data_dir = tmp_path / "tordata"
    data_dir.mkdir()
    elsewhere = tmp_path / "root.json"
    elsewhere.write_text('{"secret": "of root"}')
    os.symlink(str(elsewhere), str(data_dir / _ephemeral.EPHEMERAL_RECORD))
    assert _ephemeral.read_ephemeral_record(str(data_dir)) == {}
    os.unlink(str(data_dir / _ephemeral.EPHEMERAL_RECORD))
    os.mkfifo(str(data_dir / _ephemeral.EPHEMERAL_RECORD))
    assert _ephemeral.read_ephemeral_record(str(data_dir)) == {}
    os.unlink(str(data_dir / _ephemeral.EPHEMERAL_RECORD))
    _ephemeral.write_ephemeral_record(str(data_dir), {"abc": {"ports": []}})
    assert _ephemeral.read_ephemeral_record(str(data_dir)) == {"abc": {"ports": []}}
