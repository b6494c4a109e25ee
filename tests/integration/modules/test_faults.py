# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Faults during real module runs against a real tor, and what is left afterwards.

tor SIGKILLed (by PID) in the middle of a run, at the moment the module sends its SETCONF (a
recording tap, tests/harness/tap.py, sees the line and kills tor before forwarding it), or
after tor applied it and before its reply reaches the module (tor killed, or only the
connection cut); tor
restarted between two runs; the cookie file replaced; the control port answering slowly,
partially or with garbage (FakeTor); the drop-in on a full tmpfs; the service dir's parent
read-only. Each gives one clear error; afterwards tor's configuration, the drop-in file and the
key files are byte-equal to before and a rerun converges. tmpfs mounts are made by the test
(root) and unmounted in finally.
"""

import os
import signal
import subprocess
from contextlib import contextmanager

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import run_playbook
from harness.fake_tor import FakeTor
from harness.tap import ControlTap
from harness.tor_instance import TorInstance

HS = "onionlab.tor.tor_hidden_service"
INFO = "onionlab.tor.tor_hidden_service_info"
NO_GEOIP = ["GeoIPFile /dev/null", "GeoIPv6File /dev/null"]


@pytest.fixture
def qtor(tmp_path):
    with TorInstance(tmp_path / "tor", extra=NO_GEOIP) as instance:
        yield instance


@contextmanager
def tmpfs(path, size="256k", readonly=False):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    os.makedirs(str(path), exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def hs_task(port, tmp_path, name, **params):
    params.setdefault("config_file", str(tmp_path / "torrc.d" / "onionlab.conf"))
    return {"name": name, HS: dict(control_port=port, **params), "ignore_errors": True}


def snapshot(tor, tmp_path, dirs, drop_in=None):
    """tor's HiddenService config, the drop-in's bytes and every key file's bytes."""
    with connect(port=tor.control_port) as ctl:
        conf = ctl.get_conf("HiddenServiceOptions")
    drop_in = drop_in or tmp_path / "torrc.d" / "onionlab.conf"
    files = {}
    for d in dirs:
        for name in ("hs_ed25519_secret_key", "hs_ed25519_public_key", "hostname"):
            path = os.path.join(str(d), name)
            if os.path.exists(path):
                files[path] = open(path, "rb").read()
    return conf, open(str(drop_in), "rb").read() if os.path.exists(str(drop_in)) else None, files


def _service_a_then_b(qtor, tmp_path):
    """Service a made and snapshotted; b is the one the faulty run will try to add."""
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    run = run_playbook([hs_task(qtor.control_port, tmp_path, "a", path=a, ports=[{"port": 80}])], tmp_path)
    assert run.tasks[0]["status"] == "changed", run.output
    return a, b, snapshot(qtor, tmp_path, [a])


def _assert_connection_lost(run):
    (task,) = run.tasks
    assert task["status"] == "failed" and "closed the control connection" in task["result"]["msg"], task
    assert "Traceback" not in run.output


def _rerun_converges(qtor, tmp_path, a, b, before):
    """The rerun adds b (changed, then ok); after a restart both a and b are there unchanged and
    a's keys are byte-equal to before. Returns the rerun."""
    rerun = [hs_task(qtor.control_port, tmp_path, "b", path=b, ports=[{"port": 81}])]
    run = run_playbook(rerun + rerun, tmp_path)
    assert [t["status"] for t in run.tasks] == ["changed", "ok"], run.output
    qtor.restart()
    again = run_playbook(rerun + [hs_task(qtor.control_port, tmp_path, "a", path=a, ports=[{"port": 80}])], tmp_path)
    assert [t["status"] for t in again.tasks] == ["ok", "ok"], again.output
    assert snapshot(qtor, tmp_path, [a])[2] == before[2]
    return run


def test_tor_killed_at_setconf_then_restart_and_rerun(qtor, tmp_path):
    a, b, before = _service_a_then_b(qtor, tmp_path)
    killed = []

    def kill_at_setconf(line):
        if line.startswith(b"SETCONF") and not killed:
            killed.append(qtor.pid)
            os.kill(qtor.pid, signal.SIGKILL)
            qtor.proc.wait(5)
            return "close"

    with ControlTap(qtor.control_port, on_line=kill_at_setconf) as tap:
        run = run_playbook([hs_task(tap.port, tmp_path, "b", path=b, ports=[{"port": 81}])], tmp_path)
    assert killed, "no SETCONF seen"
    _assert_connection_lost(run)
    assert not os.path.exists(b)                      # the half-made directory was removed
    qtor.restart()
    assert snapshot(qtor, tmp_path, [a]) == before    # nothing lost, nothing half-configured
    # restarted between two runs: the persisted service is back, the rerun converges
    _rerun_converges(qtor, tmp_path, a, b, before)


def _hostname(path):
    with open(os.path.join(path, "hostname")) as f:
        return f.read().strip()


@pytest.mark.parametrize("tor_dies", [True, False], ids=["tor-killed", "connection-cut"])
def test_setconf_applied_but_reply_lost(qtor, tmp_path, tor_dies):
    """tor applies the SETCONF (and writes the new service's key), then the reply never arrives:
    tor is SIGKILLed at that moment, or only the connection is cut while tor runs on. One clear
    error; the old service's config, drop-in and key are intact; the key tor made is not deleted;
    a rerun converges on that same key."""
    a, b, before = _service_a_then_b(qtor, tmp_path)
    cut = []

    def lose_setconf_reply(data, last_line):
        if last_line.startswith(b"SETCONF") and not cut:
            cut.append(data)
            if tor_dies:
                os.kill(qtor.pid, signal.SIGKILL)
                qtor.proc.wait(5)
            return "close"

    with ControlTap(qtor.control_port, on_reply=lose_setconf_reply) as tap:
        run = run_playbook([hs_task(tap.port, tmp_path, "b", path=b, ports=[{"port": 81}])], tmp_path)
    assert cut and cut[0].startswith(b"250"), cut  # tor did accept it
    _assert_connection_lost(run)
    made_key = os.path.join(b, "hs_ed25519_secret_key")
    assert os.path.exists(made_key)                   # tor's new key is kept
    made = open(made_key, "rb").read()
    if tor_dies:
        qtor.restart()
        assert snapshot(qtor, tmp_path, [a]) == before  # tor comes back as before the run
    else:
        with connect(port=qtor.control_port) as ctl:   # tor runs on with what it applied
            assert ("HiddenServiceDir", b) in ctl.get_conf("HiddenServiceDir")
        assert snapshot(qtor, tmp_path, [a])[1:] == before[1:]  # drop-in and old keys untouched
    rerun = _rerun_converges(qtor, tmp_path, a, b, before)  # and it persists over a restart
    assert open(made_key, "rb").read() == made        # the same key, so the same address
    assert rerun.tasks[0]["result"]["onion_address"] == _hostname(b)


def test_cookie_file_replaced(qtor, tmp_path):
    a = str(tmp_path / "a")
    task = hs_task(qtor.control_port, tmp_path, "a", path=a, ports=[{"port": 80}])
    run_playbook([task], tmp_path)
    before = snapshot(qtor, tmp_path, [a])
    original = open(qtor.cookie_path, "rb").read()
    b_task = hs_task(qtor.control_port, tmp_path, "b", path=str(tmp_path / "b"), ports=[{"port": 81}])
    try:
        for content, message in ((os.urandom(32), "does not match our cookie"), (b"short", "not 32 bytes"),
                                 (b"", "not 32 bytes")):
            with open(qtor.cookie_path, "wb") as handle:
                handle.write(content)
            run = run_playbook([b_task], tmp_path)
            (result,) = run.tasks
            assert result["status"] == "failed" and message in result["result"]["msg"], result
            if content:
                assert content.hex() not in run.output
    finally:
        with open(qtor.cookie_path, "wb") as handle:
            handle.write(original)
    assert snapshot(qtor, tmp_path, [a]) == before
    run = run_playbook([b_task, b_task], tmp_path)
    assert [t["status"] for t in run.tasks] == ["changed", "ok"], run.output


def test_control_port_slow_partial_garbage(tmp_path):
    pi = b'250-PROTOCOLINFO 1\r\n250-AUTH METHODS=NULL\r\n250-VERSION Tor="0.4.8.10"\r\n250 OK\r\n'
    cases = {
        "silent": ([(b"PROTOCOLINFO", FakeTor.HANG)], "did not answer within"),
        "partial": ([(b"PROTOCOLINFO", pi[:30])], "did not answer within"),
        "garbage": ([(b"PROTOCOLINFO", b"\x16\x03\x01\x02\x00garbage\r\n")], "malformed reply line"),
        "http": ([(b"PROTOCOLINFO", b"HTTP/1.0 400 Bad Request\r\n\r\n")], "malformed reply line"),
        "no crlf": ([(b"PROTOCOLINFO", b"250 OK\n")], "does not end with CRLF"),
        "auth then close": ([(b"PROTOCOLINFO", pi), (b"AUTHENTICATE", FakeTor.CLOSE)], "closed the control connection"),
        "huge line": ([(b"PROTOCOLINFO", b"250-" + b"x" * (2 * 1024 * 1024))], "exceeds"),
    }
    fakes = dict((n, FakeTor(s)) for n, (s, _m) in cases.items())
    for fake in fakes.values():
        fake.__enter__()
    try:
        tasks = [{"name": n, INFO: {"control_port": f.port, "timeout": 1.5}, "ignore_errors": True}
                 for n, f in fakes.items()]
        run = run_playbook(tasks, tmp_path)
    finally:
        for fake in fakes.values():
            fake.__exit__(None, None, None)
    assert len(run.tasks) == len(cases), run.output
    for task in run.tasks:
        message = cases[task["task"]][1]
        assert task["status"] == "failed", task
        if message:
            assert message in task["result"]["msg"], (task["task"], task["result"]["msg"])
        assert task["result"]["msg"].count("\n") == 0 and "Traceback" not in task["result"]["msg"]
    assert "Traceback" not in run.output


def test_disk_full_and_read_only(qtor, tmp_path):
    """The drop-in on a full tmpfs: tor's configuration is rolled back, the old drop-in stays.
    The service dir's parent read-only: refused before anything changes."""
    a = str(tmp_path / "a")
    mnt = tmp_path / "full"
    with tmpfs(mnt, size="64k"):
        drop_in = str(mnt / "onionlab.conf")
        task_a = hs_task(qtor.control_port, tmp_path, "a", path=a, ports=[{"port": 80}], config_file=drop_in)
        run = run_playbook([task_a], tmp_path)
        assert run.tasks[0]["status"] == "changed", run.output
        before = snapshot(qtor, tmp_path, [a], drop_in)
        filler = mnt / "filler"
        try:
            with open(str(filler), "wb") as handle:
                while True:
                    handle.write(b"\0" * 4096)
                    handle.flush()
        except OSError:
            pass                                          # ENOSPC: the disk is full
        b = str(tmp_path / "b")
        task_b = hs_task(qtor.control_port, tmp_path, "b", path=b, ports=[{"port": 81}], config_file=drop_in,
                         authorized_clients=[{"name": "bob"}])
        run = run_playbook([task_b], tmp_path)
        (result,) = run.tasks
        assert result["status"] == "failed", run.output
        assert "No space left on device" in result["result"]["msg"] and "restored the previous" in result["result"]["msg"]
        with connect(port=qtor.control_port) as ctl:
            assert ctl.get_conf("HiddenServiceOptions") == before[0]
        assert snapshot(qtor, tmp_path, [a], drop_in) == before
        assert not [n for n in os.listdir(str(mnt)) if n.startswith(".onionlab.")]   # no temp file left
        os.unlink(str(filler))
        run = run_playbook([task_b, task_b], tmp_path)
        assert [t["status"] for t in run.tasks] == ["changed", "ok"], run.output
        after_b = snapshot(qtor, tmp_path, [a, b], drop_in)

    ro = tmp_path / "ro"
    with tmpfs(ro):
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        task_c = hs_task(qtor.control_port, tmp_path, "c", path=str(ro / "c"), ports=[{"port": 82}],
                         config_file=str(tmp_path / "torrc.d" / "x.conf"))
        run = run_playbook([task_c], tmp_path)
        (result,) = run.tasks
        assert result["status"] == "failed" and "which is read-only for tor" in result["result"]["msg"], result
    with connect(port=qtor.control_port) as ctl:
        assert ctl.get_conf("HiddenServiceOptions") == after_b[0]
    assert snapshot(qtor, tmp_path, [a, b], drop_in)[2] == after_b[2]


def _vault_key():
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
    import base64
    raw = bytearray(b"\x07" * 64)
    raw[0] &= 248
    raw[31] = (raw[31] & 127) | 64
    blob = "ED25519-V3:" + base64.b64encode(bytes(raw)).decode()
    return blob, onion.service_id_of_key(blob) + ".onion"


def test_key_write_leftover_from_a_crash_is_removed(qtor, tmp_path):
    """A run that died mid-write left hs_ed25519_secret_key.onionlab-new behind (opened O_EXCL):
    the next run removes it and installs the key instead of failing with FileExistsError."""
    blob, address = _vault_key()
    svc = tmp_path / "web"
    svc.mkdir(mode=0o700)
    leftover = svc / "hs_ed25519_secret_key.onionlab-new"
    leftover.write_bytes(b"half a key")
    run = run_playbook([{HS: {"control_port": qtor.control_port, "config_file": str(tmp_path / "d.conf"),
                              "path": str(svc), "ports": [{"port": 80}], "private_key": blob},
                         "register": "out"}], tmp_path)
    assert run.rc == 0, run.output
    assert run.task(HS)["result"]["onion_address"] == address
    assert sorted(os.listdir(str(svc))) == ["authorized_clients", "hostname", "hs_ed25519_public_key",
                                            "hs_ed25519_secret_key"]


def test_failed_key_write_leaves_no_temp_file(qtor, tmp_path, monkeypatch):
    """A write that fails (ENOSPC at fsync) removes its own temp file: the rerun is not wedged."""
    import errno
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_manager as sm
    blob, address = _vault_key()
    svc = tmp_path / "web"
    svc.mkdir(mode=0o700)
    service = hs.normalize_service({"path": str(svc), "ports": [{"port": 80}]})
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")
    with connect(port=qtor.control_port) as ctl:
        manager = sm.PersistentManager(ctl, config_file=str(tmp_path / "d.conf"), include=False)
        monkeypatch.setattr(sm.os, "fsync", full)
        with pytest.raises(OSError):
            manager.apply([service], keys={str(svc): onion.parse_key_blob(blob)})
        monkeypatch.setattr(sm.os, "fsync", real_fsync)
        assert os.listdir(str(svc)) == []
        out = manager.apply([service], keys={str(svc): onion.parse_key_blob(blob)})
    assert out["changed"] is True and out["services"][0]["onion_address"] == address
