# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every guide and example runs as printed, on a stock Debian host (fixture ``stockbed``).

The blocks come from ``harness.doc_blocks`` (its docstring has the extraction and the wrapping
rule, in short: a play runs as printed; a task list becomes the ``tasks:`` of one play
``{hosts: all, gather_facts: false, become: true}``; a ``# host_vars/...`` mapping is written to
the inventory directory; a mapping of one role's variables becomes that role's ``vars``). No block
is edited here: a block that cannot run is fixed in the guide or marked there with
``.. onionlab-doc-test: skip (REASON)``, and the marks are printed with the table.

The reader: one inventory host ``web1`` (the stock host, also in the groups the guides name:
``web``, ``onion_servers``, ``onion_clients``, ``bob_laptop``), reached over ssh as an ordinary
user, ``onionlab-operator``, who becomes root with ``su`` (the root password is set for the run):
a play that needs root and lacks ``become: true`` fails as it would for a reader. Values a guide
leaves to the reader are set here, visibly, as extra vars (``READER_VARS``).

Each guide runs in a directory of its own (playbooks, ``backup/``, escrow), its blocks in order as a
reader would run them one after the other; each block: ``--check`` first (on the host as the blocks
before it left it), then a run, then a second run that must report ``changed=0`` unless the rst marks
the block ``.. onionlab-doc-test: changes every run (REASON)``. Between guides the host is put back:
the services ``tor_hidden_service_info`` lists are reported, torrc is the stock one again, what the
guide added under /etc/tor and /var/lib/tor is removed and tor restarted; a host that does not come
back fails the guide.

The stock host is offline (its tor knows one directory authority on 127.0.0.1:1): what needs the
network (a bootstrap, a consensus, a published descriptor) is checked only as far as tor goes
locally, or marked skip. The table (guide, block, check, run, rerun changed, seconds) is printed at
the end of the module.
"""

import base64
import hashlib
import json
import os
import re
import secrets
import subprocess
import time

import pytest
import yaml

from ansible_collections.onionlab.tor.plugins.module_utils._tor.onion import generate_client_keypair
from harness import ansible_run
from harness.ansible_run import PlaybookRun
from harness.doc_blocks import doc_blocks

OPERATOR = "onionlab-operator"
GROUPS = ("web", "onion_servers", "onion_clients", "bob_laptop")


def _ed25519_v3_key():
    """A key blob tor's ADD_ONION takes: an expanded ed25519 secret key (clamped SHA-512 of a seed)."""
    h = bytearray(hashlib.sha512(os.urandom(32)).digest())
    h[0] &= 248
    h[31] &= 127
    h[31] |= 64
    return "ED25519-V3:" + base64.b64encode(bytes(h)).decode("ascii")


# Values the guides leave to the reader ("store it in a vault"): given as extra vars to every run.
READER_VARS = {
    "vault_onion_key": _ed25519_v3_key(),                   # guide_key_backup: the stored ephemeral key
    "vault_alice_admin_key": generate_client_keypair()[0],  # guide_client_rotation: alice's key in the vault
}

BLOCKS = doc_blocks()
GUIDES = sorted({b.guide for b in BLOCKS}, key=[b.guide for b in BLOCKS].index)
ROWS = []
def run_playbook(text, work, name="playbook", check=False, extra_vars=None, extra_args=(), extra_env=None, timeout=600):
    """ansible-playbook as harness.ansible_run runs it (its environment, its record of every task),
    with the guide's inventory only (``-i DIR`` in extra_args): there ``all`` is the stock host."""
    book = work / ("%s.yml" % name)   # beside what the guide writes (backup/, client-keys/)
    work.mkdir(parents=True, exist_ok=True)
    work = work / ".ansible-run"
    work.mkdir(parents=True, exist_ok=True)
    serial = len(list(work.glob("record-*.json")))
    record = work / ("record-%d.json" % serial)
    book.write_text(text if isinstance(text, str) else json.dumps(text, indent=1))
    (work / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ)
    env.pop("ANSIBLE_INVENTORY", None)
    env.update({
        "ANSIBLE_CONFIG": str(work / "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": str(ansible_run.COLLECTIONS),
        "ANSIBLE_CALLBACK_PLUGINS": str(ansible_run.CALLBACKS),
        "ANSIBLE_CALLBACKS_ENABLED": "onionlab_record",
        "ANSIBLE_STDOUT_CALLBACK": "default",
        "ONIONLAB_RECORD_FILE": str(record),
        "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_LOCAL_TEMP": str(work / "tmp-local"),
        "ANSIBLE_HOME": str(work / "home"),
        "ANSIBLE_LOCALHOST_WARNING": "False",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    env.update(extra_env or {})
    cmd = [str(ansible_run.VENV_BIN / "ansible-playbook"), str(book)] + list(extra_args)
    if check:
        cmd.append("--check")
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    proc = subprocess.run(cmd, cwd=str(book.parent), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout)
    tasks, stats = [], {}
    if record.exists():
        data = json.loads(record.read_text())
        tasks, stats = data["tasks"], data["stats"]
    return PlaybookRun(proc.returncode, proc.stdout, proc.stderr, tasks, stats, str(book))


def _ssh(bed, script, check=True):
    p = subprocess.run(bed.ssh_cmd(bed.hosts[0], script), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=120, stdin=subprocess.DEVNULL)
    if check and p.returncode != 0:
        raise AssertionError("on the stock host: %s\nrc=%d\n%s" % (script, p.returncode, p.stdout))
    return p.stdout


# what the stock host holds before any guide: kept, everything else under these goes
_SNAPSHOT = "find /etc/tor /var/lib/tor -mindepth 1 -maxdepth 1 | sort"


@pytest.fixture(scope="module")
def reader(stockbed, request):
    """The stock host as a reader meets it: an ordinary user with su to root. Yields a dict
    (inventory text, root password); restores users, root's password and tor at the end."""
    bed = stockbed
    password = secrets.token_urlsafe(18)
    _ssh(bed, "set -e; cp -a /etc/shadow /etc/shadow.onionlab-docs; "
              "id %(u)s >/dev/null 2>&1 || useradd -m -s /bin/bash %(u)s; "
              "install -d -m 0700 -o %(u)s -g %(u)s /home/%(u)s/.ssh; "
              "install -m 0600 -o %(u)s -g %(u)s /root/.ssh/authorized_keys /home/%(u)s/.ssh/authorized_keys; "
              "echo 'root:%(p)s' | chpasswd" % {"u": OPERATOR, "p": password})
    _wait_tor(bed)
    before = set(_ssh(bed, _SNAPSHOT).split())
    inv = bed.inventory()["all"]["children"]["testbed"]
    host = inv["hosts"][bed.hosts[0]["name"]]
    web1 = {"ansible_host": host["ansible_host"], "ansible_port": host["ansible_port"]}
    common = dict(inv["vars"], ansible_user=OPERATOR, ansible_become_method="su",
                  ansible_become_password=password)
    for key in list(common):
        if key.startswith("testbed_"):
            del common[key]
    inventory = {"all": {"vars": common, "hosts": {"web1": web1},
                         "children": {g: {"hosts": {"web1": None}} for g in GROUPS}}}
    try:
        yield {"bed": bed, "inventory": inventory, "before": before}
    finally:
        try:
            _restore(bed, before)
        finally:
            _ssh(bed, "cp -a /etc/shadow.onionlab-docs /etc/shadow && rm -f /etc/shadow.onionlab-docs; "
                      "userdel -r %s 2>/dev/null; true" % OPERATOR, check=False)
            _print_table(request)


def _restore(bed, before):
    """Back to the stock host: stock torrc, only what was there under /etc/tor and /var/lib/tor, tor
    restarted (ephemeral services die with it); the names of the services removed are returned."""
    now = set(_ssh(bed, _SNAPSHOT).split())
    extra = sorted(now - before)
    _ssh(bed, "set -e; cp /etc/tor/torrc.onionlab-stock /etc/tor/torrc; "
              + "".join("rm -rf -- '%s'; " % p for p in extra)
              + "systemctl restart tor@default")
    _wait_tor(bed)
    return extra


_WAIT_TOR = (
    "python3 - <<'EOF'\n"
    "import socket, sys, time\n"
    "deadline = time.monotonic() + 30\n"
    "while True:\n"
    "    try:\n"
    "        s = socket.socket(socket.AF_UNIX); s.connect('/run/tor/control'); s.close(); break\n"
    "    except OSError as exc:\n"
    "        if time.monotonic() > deadline: sys.exit('tor control socket: %s' % exc)\n"
    "        time.sleep(0.1)\n"
    "EOF")


def _wait_tor(bed):
    """Until tor answers on /run/tor/control (it opens the socket a moment after it starts)."""
    _ssh(bed, _WAIT_TOR)


def _services(work, inventory_dir):
    """The onion addresses and directories tor runs now (tor_hidden_service_info, as root)."""
    run = run_playbook([{"hosts": "web1", "gather_facts": False, "become": True, "tasks": [
        {"name": "info", "onionlab.tor.tor_hidden_service_info": {}}]}], work,
        extra_args=["-i", str(inventory_dir)], extra_env=_ENV)
    assert run.rc == 0, run.output
    found = run.task("info", host="web1")["result"]["hidden_services"]
    return [s.get("path") or "ephemeral %s" % s.get("onion_address") for s in found]


_ENV = {"ANSIBLE_REMOTE_TEMP": "~/.ansible/tmp", "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_DEPRECATION_WARNINGS": "False"}


def _print_table(request):
    lines = ["", "docs run on a stock host (check = --check first, run, rerun = changed count of a second run)",
             "%-30s %-4s %-5s %-9s %-9s %-9s %7s  %s" % ("guide", "blk", "line", "check", "run", "rerun",
                                                        "seconds", "note")]
    for r in ROWS:
        lines.append("%-30s %-4s %-5s %-9s %-9s %-9s %7.1f  %s" % (
            r["guide"], r["block"], r["line"], r["check"], r["run"], r["rerun"], r["seconds"], r["note"]))
    capman = request.config.pluginmanager.getplugin("capturemanager")
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    with capman.global_and_fixture_disabled():
        for line in lines:
            if reporter is not None:
                reporter.write_line(line)
            else:
                print(line)


def _status(run, host="web1"):
    if run.rc == 0:
        return "ok"
    failed = [t for t in run.results(status="failed") if not t["ignore_errors"]]
    return "FAILED" if failed else "rc=%d" % run.rc


def _failure(label, what, run):
    failed = [t for t in run.results(status="failed") if not t["ignore_errors"]]
    msgs = ["%s: %s" % (t["task"], t["result"].get("msg") or t["result"].get("stderr") or t["result"])
            for t in failed]
    return "%s %s: %s" % (label, what, "; ".join(str(m)[:400] for m in msgs) or run.output[-1500:])


SECRET_NAME = re.compile(r"secret_key|auth_private|x25519|private", re.I)


def _controller_secrets(work):
    """Key files the guide left on the controller that others can read: every file whose name says
    it holds a secret must be 0600 and every directory above it, up to the guide's directory, 0700."""
    out = []
    for root, _dirs, files in os.walk(str(work)):
        rel = os.path.relpath(root, str(work))
        if rel.split(os.sep)[0] in (".ansible-run", "inventory"):
            continue
        for name in files:
            if not SECRET_NAME.search(name):
                continue
            path = os.path.join(root, name)
            mode = os.stat(path).st_mode & 0o777
            if mode != 0o600:
                out.append("controller: %s is %04o, a secret key must be 0600" % (os.path.relpath(path, str(work)), mode))
            d = root
            while os.path.relpath(d, str(work)) != ".":
                dmode = os.stat(d).st_mode & 0o777
                if dmode != 0o700:
                    out.append("controller: directory %s/ of %s is %04o, must be 0700" % (
                        os.path.relpath(d, str(work)), name, dmode))
                d = os.path.dirname(d)
    return out


@pytest.mark.parametrize("guide", GUIDES)
def test_guide_runs_as_printed(guide, reader, tmp_path):
    bed = reader["bed"]
    work = tmp_path / "reader"
    work.mkdir()
    inventory_dir = work / "inventory"
    inventory_dir.mkdir()
    (inventory_dir / "hosts.yml").write_text(yaml.safe_dump(reader["inventory"], default_flow_style=False))
    problems = []
    try:
        for block in [b for b in BLOCKS if b.guide == guide]:
            row = {"guide": guide, "block": block.number, "line": block.line, "check": "-", "run": "-",
                   "rerun": "-", "seconds": 0.0, "note": ""}
            ROWS.append(row)
            t0 = time.monotonic()
            if block.skip:
                row["note"] = "SKIP (%s)" % block.skip
                continue
            if block.kind == "other":
                row["note"] = "cannot run: neither a play, tasks, a vars file nor role vars"
                problems.append("%s (line %d) cannot run as printed: fix it or mark it "
                                "'.. onionlab-doc-test: skip (REASON)'" % (block.label, block.line))
                continue
            if block.kind == "file":
                target = inventory_dir / block.file_path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(block.text)
                row["note"] = "written to the inventory: %s" % block.file_path
                continue
            text = block.playbook_text()
            args = ["-i", str(inventory_dir)]
            for given in block.given:
                if given == "a fresh host":
                    _restore(bed, reader["before"])
                else:
                    before = [b for b in BLOCKS if b.label == given]
                    assert before, "%s: given %s: no such block" % (block.label, given)
                    setup = run_playbook(before[0].playbook_text(), work, "given-%d" % block.number, extra_vars=READER_VARS,
                                         extra_args=args, extra_env=_ENV)
                    assert setup.rc == 0, _failure(given, "(given for %s)" % block.label, setup)
                row["note"] = (row["note"] + "; " if row["note"] else "") + "given " + given
            name = "block-%d" % block.number
            check = run_playbook(text, work, name, check=True, extra_vars=READER_VARS, extra_args=args, extra_env=_ENV)
            row["check"] = _status(check)
            if check.rc != 0:
                problems.append(_failure(block.label, "--check", check))
            first = run_playbook(text, work, name, extra_vars=READER_VARS, extra_args=args, extra_env=_ENV)
            row["run"] = _status(first)
            if first.rc != 0:
                problems.append(_failure(block.label, "run", first))
                row["seconds"] = time.monotonic() - t0
                break  # the blocks after it build on it
            second = run_playbook(text, work, name, extra_vars=READER_VARS, extra_args=args, extra_env=_ENV)
            changed = sum(s.get("changed", 0) for s in second.stats.values())
            row["rerun"] = "changed=%d" % changed if second.rc == 0 else _status(second)
            reason = block.changes_every_run
            if reason:
                row["note"] = "changes every run (%s)" % reason
            if second.rc != 0:
                problems.append(_failure(block.label, "second run", second))
            elif changed and not reason:
                problems.append("%s second run: changed=%d, expected 0: %s" % (
                    block.label, changed, [t["task"] for t in second.results(status="changed")]))
            row["seconds"] = time.monotonic() - t0
        problems += _controller_secrets(work)
    finally:
        services = _services(tmp_path / "restore", inventory_dir)
        removed = _restore(bed, reader["before"])
        if ROWS and ROWS[-1]["guide"] == guide:
            ROWS[-1]["note"] = (ROWS[-1]["note"] + "; " if ROWS[-1]["note"] else "") + \
                "restored: services %s, removed %s" % (services or "none", removed or "nothing")
    assert _services(tmp_path / "after", inventory_dir) == [], "the stock host did not come back clean"
    assert not problems, "\n".join(problems)
