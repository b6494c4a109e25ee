# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a real ansible-playbook from a test and get every task's result back as data.

    from harness.ansible_run import run_playbook

    run = run_playbook([{"onionlab.tor.tor_accounting_facts": {"control_port": tor.control_port},
                         "register": "out"}], tmp_path)
    assert run.rc == 0, run.output
    facts = run.task("onionlab.tor.tor_accounting_facts")["result"]["ansible_facts"]["tor"]
    assert run.stats["localhost"]["changed"] == 0

run_playbook(playbook, tmp_path, extra_env=None, check=False, diff=False, extra_vars=None,
             extra_args=(), timeout=300, bin_dir=None) -> PlaybookRun

playbook is one of
  * YAML text: written as is (give it its own `hosts: localhost`);
  * a list of plays (dicts with "hosts"): written as JSON, which YAML reads;
  * a list of tasks (dicts without "hosts"): wrapped in one play
    `{"hosts": "localhost", "gather_facts": false, "tasks": [...]}`.

The run: `.venv/bin/ansible-playbook` of this repository, inventory `localhost` with
ansible_connection=local and ansible_python_interpreter = the venv's python, cwd tmp_path,
ANSIBLE_COLLECTIONS_PATH=.build/collections (the repository as onionlab.tor), an empty
ansible.cfg (no user or cwd configuration leaks in), no colour, no retry files, Ansible's temp
dirs under tmp_path, pipelining on (extra_env can turn it off). check/diff add --check/--diff; extra_vars (a dict) is passed as JSON with
-e; extra_args are appended; extra_env is merged over that environment last. bin_dir takes
ansible-playbook from another virtualenv (e.g. .build/venv-2.17/bin for the oldest ansible-core);
the modules still run on this venv's python.

Results come from the test-only callback tests/harness/ansible_callbacks/onionlab_record.py
(enabled next to the default screen output, which stays in .stdout). PlaybookRun has
  .rc, .stdout, .stderr, .output (both), .playbook (its path), .tasks, .stats, and
  .task(name, host="localhost", index=0) / .results(name=None, host=None, status=None).
Each entry of .tasks is a dict: play, task (name; the action when unnamed), action, host,
status ("ok", "changed", "failed", "skipped", "unreachable"), ignore_errors and result (the
module's result, with "exception" kept as text when there was one). .stats is
{host: {"ok", "changed", "failures", "unreachable", "skipped", "rescued", "ignored"}}.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COLLECTIONS = REPO / ".build" / "collections"
CALLBACKS = Path(__file__).resolve().parent / "ansible_callbacks"
VENV_BIN = REPO / ".venv" / "bin"


def _tool(name, bin_dir=None):
    candidate = Path(str(bin_dir or VENV_BIN)) / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if not found:
        raise RuntimeError("%s not found in %s nor on PATH" % (name, bin_dir or VENV_BIN))
    return found


def _python():
    candidate = VENV_BIN / "python"
    return str(candidate) if candidate.exists() else sys.executable


class PlaybookRun(object):
    def __init__(self, rc, stdout, stderr, tasks, stats, playbook):
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.tasks = tasks
        self.stats = stats
        self.playbook = playbook

    @property
    def output(self):
        return "rc=%s\n--- stdout\n%s\n--- stderr\n%s" % (self.rc, self.stdout, self.stderr)

    def results(self, name=None, host=None, status=None):
        return [t for t in self.tasks
                if (name is None or t["task"] == name) and (host is None or t["host"] == host)
                and (status is None or t["status"] == status)]

    def task(self, name, host="localhost", index=0):
        """The index-th record of the task called name on host (AssertionError if none)."""
        found = self.results(name, host)
        if len(found) <= index:
            raise AssertionError("no result %d for task %r on %s; tasks: %r\n%s"
                                 % (index, name, host, [t["task"] for t in self.tasks], self.output))
        return found[index]

    def __repr__(self):
        return "PlaybookRun(rc=%r, tasks=%d, stats=%r)" % (self.rc, len(self.tasks), self.stats)


def _playbook_text(playbook):
    if isinstance(playbook, str):
        return playbook
    plays = list(playbook)
    if plays and not all(isinstance(p, dict) and "hosts" in p for p in plays):
        plays = [{"hosts": "localhost", "gather_facts": False, "tasks": plays}]
    return json.dumps(plays, indent=1)


def run_playbook(playbook, tmp_path, extra_env=None, check=False, diff=False, extra_vars=None,
                 extra_args=(), timeout=300, bin_dir=None):
    work = Path(str(tmp_path)) / "ansible-run"
    work.mkdir(parents=True, exist_ok=True)
    # several runs in one tmp_path: number them
    serial = len(list(work.glob("playbook-*.yml")))
    book = work / ("playbook-%d.yml" % serial)
    record = work / ("record-%d.json" % serial)
    book.write_text(_playbook_text(playbook))
    inventory = work / "inventory.ini"
    inventory.write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n" % _python())
    config = work / "ansible.cfg"
    config.write_text("[defaults]\n")
    if record.exists():
        record.unlink()

    env = dict(os.environ)
    env.update({
        "ANSIBLE_CONFIG": str(config),
        "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS),
        "ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS),
        "ANSIBLE_CALLBACKS_ENABLED": "onionlab_record",
        "ANSIBLE_STDOUT_CALLBACK": "default",
        "ONIONLAB_RECORD_FILE": str(record),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_LOCAL_TEMP": str(work / "tmp-local"),
        "ANSIBLE_REMOTE_TEMP": str(work / "tmp-remote"),
        "ANSIBLE_HOME": str(work / "home"),
        "ANSIBLE_GATHERING": "explicit",
        # one ssh (or local) command per task, the module on its stdin, instead of a temp dir, a file put, a
        # chmod and an exec: measured on a bed host, 11 tasks took 2.0 CPU-s of the controller instead of 2.5,
        # 15-18 s instead of 19-25 s under load
        "ANSIBLE_PIPELINING": "True",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    env.pop("ANSIBLE_INVENTORY", None)
    env.update(extra_env or {})

    cmd = [_tool("ansible-playbook", bin_dir), "-i", str(inventory), str(book)]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    cmd += list(extra_args)
    return run_recorded(cmd, work, env, record, book, timeout)


def run_recorded(cmd, cwd, env, record, book, timeout):
    """Run an ansible-playbook command (its stdin closed) whose onionlab_record callback writes to record: its exit
    status, output, and the callback's tasks and stats, as a PlaybookRun."""
    proc = subprocess.run(cmd, cwd=str(cwd), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)
    tasks, stats = [], {}
    if record.exists():
        data = json.loads(record.read_text())
        tasks, stats = data["tasks"], data["stats"]
    return PlaybookRun(proc.returncode, proc.stdout, proc.stderr, tasks, stats, str(book))


def onion_service_play(control_port, tmp_path, services, **extra):
    """A one-play playbook: the onion_service role on localhost against the tor at control_port,
    every path of it (services, drop-in, escrow, summary) under tmp_path; extra role vars win."""
    role_vars = dict({
        "onion_service_control_port": control_port,
        "onion_service_dir": str(tmp_path / "svc"),
        "onion_service_tor_user": "root",
        "onion_service_config_file": str(tmp_path / "onionlab.conf"),
        "onion_service_backup_dir": str(tmp_path / "escrow"),
        "onion_service_summary_file": str(tmp_path / "summary.yml"),
        "onion_services": services,
    }, **extra)
    return [{"hosts": "localhost", "gather_facts": False, "vars": role_vars,
             "roles": ["onionlab.tor.onion_service"]}]
