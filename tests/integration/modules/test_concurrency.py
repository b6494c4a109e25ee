# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several runs of tor_hidden_service at the same moment against one real tor lose nothing.

Each run is a real process: the module file executed by Python with its arguments in a JSON
file, as Ansible runs it on a target (several at once are what two playbooks, two controllers,
``strategy: free`` or ``delegate_to`` onto one tor produce), and, once, two real
``ansible-playbook`` processes side by side. Afterwards every service is in tor, in the drop-in
and still there after tor restarts; ephemeral services keep their recorded configuration.

The lock (plugins/module_utils/_tor/lock.py) is also tested on its own: a holder killed with
SIGKILL does not wedge the next run, a stopped holder makes the next run fail after
lock_timeout with a message that names the holder's PID.
"""

import base64
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import ephemeral as _ephemeral
from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc_tree as _torrc_tree
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import COLLECTIONS, REPO, run_playbook

MODULE = REPO / "plugins" / "modules" / "tor_hidden_service.py"
PARALLEL = 8
ROUNDS = int(os.environ.get("ONIONLAB_CONCURRENCY_ROUNDS", "3"))  # 10 for a longer measurement


def start_module(args, tmp_path, tag):
    """Start one module run as its own process; returns (Popen, stdout file path)."""
    args_file = tmp_path / ("args-%s.json" % tag)
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    out = open(str(tmp_path / ("out-%s.json" % tag)), "w")
    env = dict(os.environ, PYTHONPATH=str(COLLECTIONS))
    proc = subprocess.Popen([sys.executable, str(MODULE), str(args_file)], stdout=out,
                            stderr=subprocess.STDOUT, env=env, cwd=str(tmp_path))
    out.close()
    return proc, tmp_path / ("out-%s.json" % tag)


def finish(runs, timeout=120):
    results = []
    for proc, out in runs:
        proc.wait(timeout)
        text = out.read_text()
        try:
            results.append(json.loads(text[text.index("{"):]))
        except ValueError:
            raise AssertionError("module printed no result: %s" % text)
    return results


def live_paths(tor):
    with connect(port=tor.control_port) as ctl:
        return [s["path"] for s in hs.services_from_conf(ctl.get_conf("HiddenServiceOptions"))]


def drop_in_paths(*files):
    paths = []
    for name in files:
        paths.extend(s["path"] for s in (_torrc_tree.read_drop_in(str(name)) or []))
    return paths


def test_parallel_persistent_runs_lose_nothing(tor, tmp_path):
    """ROUNDS rounds of PARALLEL runs at once, each adding its own service, half of them through
    a second drop-in (the lock is per tor, whatever config_file a run uses)."""
    drop_ins = [tmp_path / "torrc.d" / "a.conf", tmp_path / "torrc.d" / "b.conf"]
    wanted = []
    for rnd in range(ROUNDS):
        runs = []
        for i in range(PARALLEL):
            path = str(tmp_path / ("svc-%d-%d" % (rnd, i)))
            wanted.append(path)
            args = {"control_port": tor.control_port, "config_file": str(drop_ins[i % 2]), "path": path,
                    "ports": [{"port": 80 + i, "target_port": 8000 + rnd * 100 + i}]}
            runs.append(start_module(args, tmp_path, "p%d-%d" % (rnd, i)))
        for result in finish(runs):
            assert not result.get("failed"), result
            assert result["changed"] is True
            assert result["onion_address"].endswith(".onion")
        live = live_paths(tor)
        missing_live = [p for p in wanted if p not in live]
        missing_drop_in = [p for p in wanted if p not in drop_in_paths(*drop_ins)]
        assert not missing_live and not missing_drop_in, (
            "round %d: %d of %d services missing from tor, %d from the drop-ins"
            % (rnd, len(missing_live), len(wanted), len(missing_drop_in)))
    tor.restart()
    assert sorted(live_paths(tor)) == sorted(wanted)
    # and a run afterwards finds every one of them as it left it
    again = finish([start_module({"control_port": tor.control_port, "config_file": str(drop_ins[0]),
                                  "path": wanted[0], "ports": [{"port": 80, "target_port": 8000}]},
                                 tmp_path, "again")])[0]
    assert again["changed"] is False, again


def _expanded_key(seed):
    """A deterministic ed25519 expanded key (clamped scalar + prefix), as tor's key blob."""
    raw = bytearray((bytes([seed]) * 64))
    raw[0] &= 248
    raw[31] &= 127
    raw[31] |= 64
    return "ED25519-V3:" + base64.b64encode(bytes(raw)).decode()


def test_parallel_ephemeral_runs_keep_their_record(tor, tmp_path):
    """PARALLEL ephemeral services added at once: each is in tor and each keeps its recorded
    ports (the record in the DataDirectory is a read-modify-write too)."""
    keys = [_expanded_key(i + 1) for i in range(PARALLEL)]
    for rnd in range(2):
        runs = [start_module({"control_port": tor.control_port, "ephemeral": True, "private_key": key,
                              "ports": [{"port": 80, "target_port": 9000 + rnd * 100 + i}]},
                             tmp_path, "e%d-%d" % (rnd, i)) for i, key in enumerate(keys)]
        for result in finish(runs):
            assert not result.get("failed"), result
            assert result["changed"] is True
        with connect(port=tor.control_port) as ctl:
            detached = set(ctl.list_onions()["detached"])
        record = _ephemeral.read_ephemeral_record(str(tor.data_dir))
        for i, key in enumerate(keys):
            sid = onion.service_id_of_key(key)
            assert sid in detached
            assert record.get(sid, {}).get("ports") == [
                {"port": 80, "target_address": "127.0.0.1", "target_port": 9000 + rnd * 100 + i}], (rnd, i)


def test_two_playbooks_at_once(tor, tmp_path):
    """Two ansible-playbook processes on one host, each adding four services to the same tor."""
    config_file = str(tmp_path / "torrc.d" / "onionlab.conf")
    procs = []
    wanted = []
    for name in ("one", "two"):
        services = []
        for i in range(4):
            path = str(tmp_path / ("%s-%d" % (name, i)))
            wanted.append(path)
            services.append({"path": path, "ports": [{"port": 80, "target_port": 8080 + i}]})
        tasks = [{"onionlab.tor.tor_hidden_service": {"control_port": tor.control_port, "config_file": config_file,
                                                      "path": "{{ item.path }}", "ports": "{{ item.ports }}"},
                  "loop": services}]
        work = tmp_path / name
        work.mkdir()
        procs.append((name, work, tasks))
    import threading
    runs = {}

    def play(name, work, tasks):
        runs[name] = run_playbook(tasks, work)

    threads = [threading.Thread(target=play, args=p) for p in procs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    for name, run in runs.items():
        assert run.rc == 0, run.output
        assert run.stats["localhost"]["changed"] == 1
    assert sorted(live_paths(tor)) == sorted(wanted)
    assert sorted(drop_in_paths(config_file)) == sorted(wanted)
    tor.restart()
    assert sorted(live_paths(tor)) == sorted(wanted)


# -- the lock on its own -------------------------------------------------------------------------
HOLDER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.lock import TorLock
    with TorLock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(600)
""")


def start_holder(tor):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(tor.data_dir), str(COLLECTIONS)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_killed_holder_does_not_wedge_the_next_run(tor, tmp_path):
    holder = start_holder(tor)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(10)
    started = time.monotonic()
    result = finish([start_module({"control_port": tor.control_port, "config_file": str(tmp_path / "d.conf"),
                                   "path": str(tmp_path / "web"), "ports": [{"port": 80}], "lock_timeout": 30},
                                  tmp_path, "after-kill")])[0]
    assert result["changed"] is True and not result.get("failed"), result
    assert time.monotonic() - started < 15


def test_hung_holder_makes_the_run_fail_after_lock_timeout_naming_it(tor, tmp_path):
    holder = start_holder(tor)
    try:
        started = time.monotonic()
        for args in ({"path": str(tmp_path / "web"), "ports": [{"port": 80}]},
                     {"ephemeral": True, "ports": [{"port": 80}]}):
            result = finish([start_module(dict(args, control_port=tor.control_port, lock_timeout=1.5,
                                               config_file=str(tmp_path / "d.conf")), tmp_path, "hung")])[0]
            assert result.get("failed") is True, result
            assert "holds the lock on %s; process %d (" % (tor.data_dir, holder.pid) in result["msg"], result["msg"]
            assert "nothing was changed" in result["msg"] and "lock_timeout" in result["msg"]
        assert time.monotonic() - started < 20
        assert live_paths(tor) == []
        with connect(port=tor.control_port) as ctl:
            assert ctl.list_onions()["detached"] == []
        assert not (tmp_path / "web").exists()
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)


def _waiting_on_the_lock(proc, data_dir):
    """Whether a process has the tor's DataDirectory open (TorLock opens it, then waits for the flock)."""
    try:
        fds = os.listdir("/proc/%d/fd" % proc.pid)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (proc.pid, fd)) == str(data_dir):
                return True
        except OSError:
            pass
    return False


def test_two_role_runs_at_once_keep_each_others_record(tor, tmp_path):
    """Two runs of the onion_service role's module on one host at once (two playbooks; prune off), each adding
    a service: the role's record lists both afterwards. The record used to be read before the tor's lock was
    taken and written after it was let go, so the second writer dropped the first one's service from it."""
    state_file = tmp_path / "record.json"
    module = REPO / "plugins" / "modules" / "onion_service_deploy.py"
    holder = start_holder(tor)
    runs = []
    try:
        for name in ("one", "two"):
            args = {"control_port": tor.control_port, "config_file": str(tmp_path / "torrc.d" / "o.conf"),
                    "service_dir": str(tmp_path), "state_file": str(state_file), "prune": False, "pow": False,
                    "entries": [{"path": str(tmp_path / name), "ports": [{"port": 80}]}]}
            args_file = tmp_path / ("deploy-%s.json" % name)
            args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
            out = open(str(tmp_path / ("deploy-%s.out" % name)), "w")
            runs.append((subprocess.Popen([sys.executable, str(module), str(args_file)], stdout=out,
                                          stderr=subprocess.STDOUT, cwd=str(tmp_path),
                                          env=dict(os.environ, PYTHONPATH=str(COLLECTIONS))),
                         tmp_path / ("deploy-%s.out" % name)))
            out.close()
        deadline = time.monotonic() + 60
        while not all(_waiting_on_the_lock(proc, tor.data_dir) for proc, _out in runs):
            assert time.monotonic() < deadline, "the runs never reached the lock"
            assert all(proc.poll() is None for proc, _out in runs), [o.read_text() for _p, o in runs]
            time.sleep(0.02)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(10)
    results = finish(runs)
    assert all(r.get("changed") is True and not r.get("failed") for r in results), results
    record = json.loads(state_file.read_text())["services"]
    print("record after two runs at once: %s" % record)
    assert record == [str(tmp_path / "one"), str(tmp_path / "two")]
    assert sorted(live_paths(tor)) == [str(tmp_path / "one"), str(tmp_path / "two")]


# -- a writer outside the collection -----------------------------------------------------------
def _external_add(tor, path):
    """What a Stem script or a person with SETCONF does: read the block, add a service, write it."""
    with connect(port=tor.control_port) as other:
        block = hs.services_from_conf(other.get_conf("HiddenServiceOptions"))
        block.append(hs.normalize_service({"path": path, "ports": [{"port": 99}]}))
        other.set_conf(hs.block_to_conf(block))


def _external_write(tor, services):
    with connect(port=tor.control_port) as other:
        other.set_conf(hs.block_to_conf(services))


def _manager(ctl, tmp_path):
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_manager as sm
    return sm, sm.PersistentManager(ctl, config_file=str(tmp_path / "torrc.d" / "o.conf"), include=False)


def test_external_writer_between_read_and_setconf_converges(tor, tmp_path):
    ext = str(tmp_path / "ext")
    os.mkdir(ext, 0o700)
    with connect(port=tor.control_port) as ctl:
        sm, manager = _manager(ctl, tmp_path)
        reads = []
        real_current = manager.current

        def current():
            reads.append(1)
            if len(reads) == 2:  # the re-read right before our SETCONF
                _external_add(tor, ext)
            return real_current()
        manager.current = current
        mine = hs.normalize_service({"path": str(tmp_path / "mine"), "ports": [{"port": 80}]})
        result = manager.apply([mine])
    assert result["changed"] is True
    assert sorted(live_paths(tor)) == sorted([ext, mine["path"]])
    assert [s["path"] for s in _torrc_tree.read_drop_in(str(tmp_path / "torrc.d" / "o.conf"))] == [mine["path"]]
    assert len(reads) >= 4  # planned twice


def test_external_writer_right_after_setconf_converges(tor, tmp_path, monkeypatch):
    ext = str(tmp_path / "ext")
    os.mkdir(ext, 0o700)
    with connect(port=tor.control_port) as ctl:
        sm, manager = _manager(ctl, tmp_path)
        real = sm.set_conf_explained
        calls = []

        def set_conf_then_stale_write(c, pairs):
            real(c, pairs)
            calls.append(1)
            if len(calls) == 1:  # a writer that read before us writes its stale block: ours is gone
                _external_write(tor, [hs.normalize_service({"path": ext, "ports": [{"port": 99}]})])
        monkeypatch.setattr(sm, "set_conf_explained", set_conf_then_stale_write)
        mine = hs.normalize_service({"path": str(tmp_path / "mine"), "ports": [{"port": 80}]})
        result = manager.apply([mine])
    assert len(calls) == 2 and result["changed"] is True
    assert sorted(live_paths(tor)) == sorted([ext, mine["path"]])


def test_external_writer_every_time_is_a_clear_error(tor, tmp_path, monkeypatch):
    with connect(port=tor.control_port) as ctl:
        sm, manager = _manager(ctl, tmp_path)
        real = sm.set_conf_explained
        n = []

        def set_conf_then_overwrite(c, pairs):
            real(c, pairs)
            n.append(1)
            _external_write(tor, [])
        monkeypatch.setattr(sm, "set_conf_explained", set_conf_then_overwrite)
        mine = hs.normalize_service({"path": str(tmp_path / "mine"), "ports": [{"port": 80}]})
        with pytest.raises(sm.ServiceError) as err:
            manager.apply([mine])
    assert len(n) == sm.RACE_ATTEMPTS
    assert "changed by another controller" in str(err.value)
    assert "tor now holds 0 services where this run set 1; the drop-in was not changed" in str(err.value)
    assert not os.path.exists(str(tmp_path / "torrc.d" / "o.conf"))
