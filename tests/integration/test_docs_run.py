# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every guide and example runs as printed, on stock Debian hosts (fixture ``stockbed``, issue 14).

The blocks come from ``harness.doc_blocks`` (its docstring has the extraction, the marks and the
wrapping rule; in short: a play runs as printed; a task list becomes the ``tasks:`` of one play
``{hosts: all, gather_facts: false, become: true}``; a ``# host_vars/...`` mapping is written to
the inventory directory; a mapping of one role's variables becomes that role's ``vars``). No block
is edited here: a block that cannot run is fixed in the guide or marked there (``.. onionlab-doc-test:
skip (REASON)``), and the marks are printed with the table.

The reader: each guide gets a stock host of its own (the ``stockbed`` host, then hosts of a second
stock bed started here), named ``web1`` in its inventory and in the groups the guides name: ``web``,
``onion_servers``, ``bob_laptop``. A guide whose blocks name the group ``onion_clients`` gets a
second stock host as ``laptop-a`` (the only host of ``onion_clients``); ``laptop-b`` is a name of
it in no group (the guides name it in a client's ``hosts``). Ansible reaches them over ssh as an
ordinary user, ``onionlab-operator``, who becomes root with ``su`` (the root password is set for the
run): a play that needs root and lacks ``become: true`` fails as it would for a reader. Values a
guide leaves to the reader are extra vars of every run, here, visibly (``READER_VARS``); the
inventory of a guide that runs the tor role sets ``tor_control_port: 0`` (``BED_ROLE_VARS``: the role's
ControlPort 127.0.0.1:9051 would be one port for every host of the bed, which share a network).

Each guide runs in a directory of its own (its playbooks ``block-N.yml``, and what it writes beside
them: ``backup/``, ``client-keys/``, an escrow), its blocks in order as a reader would run them one
after the other; each block: ``--check`` first (on the host as the blocks before it left it), then a
run, then a second run that must report ``changed=0`` unless the rst marks the block ``changes every
run``. A key file the guide leaves on the controller must be 0600 in 0700 directories. After the
guide its hosts are put back: the services ``tor_hidden_service_info`` lists are reported, torrc is
the stock one again, what the guide added under /etc/tor and /var/lib/tor is removed and tor
restarted, and tor must then list no service. Guides run in parallel (``ONIONLAB_DOCS_WORKERS``,
default 4), each on its own hosts.

The stock hosts are offline (their tor knows one directory authority, on 127.0.0.1:1): what needs
the network (a bootstrap, a consensus, a published descriptor) is checked only as far as tor goes
locally, or marked skip. The table (guide, block, check, run, rerun changed, seconds) is printed at
the end.
"""

import base64
import concurrent.futures
import hashlib
import json
import os
import re
import secrets
import subprocess
import time
import traceback

import pytest
import yaml

from ansible_collections.onionlab.tor.plugins.module_utils._tor.onion import generate_client_keypair
from harness import ansible_run
from harness import hosts as hb
from harness.ansible_run import PlaybookRun
from harness.doc_blocks import doc_blocks

OPERATOR = "onionlab-operator"
SERVER_GROUPS = ("web", "onion_servers", "bob_laptop")
WORKERS = int(os.environ.get("ONIONLAB_DOCS_WORKERS", "4"))
# every guide in one module-scoped fixture: minutes on a loaded machine, not pytest.ini's 300 s
pytestmark = pytest.mark.timeout(1800)


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
if os.environ.get("ONIONLAB_DOCS_GUIDES"):  # e.g. guide_key_backup,examples/accounting_alert (while writing one)
    GUIDES = [g for g in GUIDES if g in os.environ["ONIONLAB_DOCS_GUIDES"].split(",")]
_ENV = {"ANSIBLE_REMOTE_TEMP": "~/.ansible/tmp", "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_DEPRECATION_WARNINGS": "False"}


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


class Host(object):
    """One stock host of a bed: ssh as root, and what it held before any guide."""

    def __init__(self, bed, h):
        self.bed, self.h, self.before = bed, h, set()

    def ssh(self, script, check=True):
        p = subprocess.run(self.bed.ssh_cmd(self.h, script), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=120, stdin=subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise AssertionError("on %s: %s\nrc=%d\n%s" % (self.h["name"], script, p.returncode, p.stdout))
        return p.stdout

    def inventory_vars(self):
        return {"ansible_host": "127.0.0.1", "ansible_port": self.h["ssh_port"],
                "ansible_ssh_private_key_file": self.bed.key}

    def prepare(self, password):
        """An ordinary user with the bed's ssh key; root's password (shadow kept to put back)."""
        self.ssh("set -e; cp -a /etc/shadow /etc/shadow.onionlab-docs; "
                 "id %(u)s >/dev/null 2>&1 || useradd -m -s /bin/bash %(u)s; "
                 "install -d -m 0700 -o %(u)s -g %(u)s /home/%(u)s/.ssh; "
                 "install -m 0600 -o %(u)s -g %(u)s /root/.ssh/authorized_keys /home/%(u)s/.ssh/authorized_keys; "
                 "echo 'root:%(p)s' | chpasswd" % {"u": OPERATOR, "p": password})
        self.wait_tor()
        self.before = set(self.ssh(_SNAPSHOT).split())

    def unprepare(self):
        self.ssh("cp -a /etc/shadow.onionlab-docs /etc/shadow && rm -f /etc/shadow.onionlab-docs; "
                 "userdel -r %s 2>/dev/null; true" % OPERATOR, check=False)

    def restore(self):
        """Back to the stock host: stock torrc, only what was there under /etc/tor and /var/lib/tor,
        tor restarted (ephemeral services die with it). Returns what was removed."""
        extra = sorted(set(self.ssh(_SNAPSHOT).split()) - self.before)
        self.ssh("set -e; cp %s /etc/tor/torrc; " % hb.STOCK_TORRC
                 + "".join("rm -rf -- '%s'; " % p for p in extra)
                 + hb.RESTART_TOR)
        return extra

    def wait_tor(self):
        """Until tor answers on /run/tor/control (it opens the socket a moment after it starts)."""
        self.ssh(_WAIT_TOR)


# what a stock host holds before any guide: kept; everything else under these goes
_SNAPSHOT = "find /etc/tor /var/lib/tor -mindepth 1 -maxdepth 1 | sort"
_WAIT_TOR = hb.WAIT_CONTROL_SOCKET


def _hosts_needed(guide):
    blocks = [b for b in BLOCKS if b.guide == guide and not b.skip]
    if not any(b.playbook_text() for b in blocks):
        return 0
    return 2 if any("onion_clients" in b.text for b in blocks) else 1


# Inventory vars for a guide whose blocks run a role that the bed needs told something: the bed's
# hosts share one network namespace (with other beds too), so the tor role's ControlPort
# 127.0.0.1:9051 would be one port for all of them: none (0, as its spec says),
# the control socket stays. Only for guides that run the role: docs/examples use tor_control_port
# as the module's port.
BED_ROLE_VARS = {"onionlab.tor.tor": {"tor_control_port": 0}}


def _bed_vars(guide):
    out = {}
    for role, rvars in BED_ROLE_VARS.items():
        if any(role + "\n" in (b.playbook_text() or "") or "role: %s\n" % role in (b.playbook_text() or "")
               for b in BLOCKS if b.guide == guide and not b.skip):
            out.update(rvars)
    return out


def _inventory(hosts, password, bed_vars=None):
    common = {"ansible_user": OPERATOR, "ansible_become_method": "su", "ansible_become_password": password,
              "ansible_python_interpreter": "/usr/bin/python3",
              "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"}
    common.update(bed_vars or {})
    if not hosts:  # nothing of the guide runs on a host
        return {"all": {"vars": common}}
    names = {"web1": hosts[0].inventory_vars()}
    children = {g: {"hosts": {"web1": None}} for g in SERVER_GROUPS}
    if len(hosts) > 1:
        names["laptop-a"] = hosts[1].inventory_vars()
        names["laptop-b"] = hosts[1].inventory_vars()
        children["onion_clients"] = {"hosts": {"laptop-a": None}}
    return {"all": {"vars": common, "hosts": names, "children": children}}


def _services(work, inventory_dir, names):
    """The directories (or addresses) of the services tor runs now on each host, as root."""
    run = run_playbook([{"hosts": ":".join(names), "gather_facts": False, "become": True, "tasks": [
        {"name": "info", "onionlab.tor.tor_hidden_service_info": {}}]}], work,
        extra_args=["-i", str(inventory_dir)], extra_env=_ENV)
    assert run.rc == 0, run.output
    out = []
    for name in names:
        found = run.task("info", host=name)["result"]["hidden_services"]
        out += [s.get("path") or "ephemeral %s" % s.get("onion_address") for s in found]
    return out


def _status(run):
    if run.rc == 0:
        return "ok"
    failed = [t for t in run.results(status="failed") if not t["ignore_errors"]]
    return "FAILED" if failed else "rc=%d" % run.rc


def _failure(label, what, run):
    failed = [t for t in run.results(status="failed") if not t["ignore_errors"]]
    msgs = ["%s: %s" % (t["task"], t["result"].get("msg") or t["result"].get("stderr") or t["result"])
            for t in failed]
    return "%s %s: %s" % (label, what, "; ".join(str(m)[:500] for m in msgs) or run.output[-1500:])


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
                out.append("controller: %s is %04o, a secret key must be 0600"
                           % (os.path.relpath(path, str(work)), mode))
            d = root
            while os.path.relpath(d, str(work)) != ".":
                dmode = os.stat(d).st_mode & 0o777
                if dmode != 0o700:
                    out.append("controller: directory %s/ of %s is %04o, must be 0700" % (
                        os.path.relpath(d, str(work)), name, dmode))
                d = os.path.dirname(d)
    return out


def _run_block(block, work, args, rows, problems, hosts):
    """One block: (given), --check, run, second run; False when the blocks after it cannot go on."""
    row = {"guide": block.guide, "block": block.number, "line": block.line, "check": "-", "run": "-",
           "rerun": "-", "seconds": 0.0, "note": ""}
    rows.append(row)
    t0 = time.monotonic()
    try:
        if block.skip:
            row["note"] = "SKIP (%s)" % block.skip
            return True
        if block.kind == "other":
            row["note"] = "cannot run: neither a play, tasks, a vars file nor role vars"
            problems.append("%s (line %d) cannot run as printed: fix it or mark it "
                            "'.. onionlab-doc-test: skip (REASON)'" % (block.label, block.line))
            return True
        if block.kind == "file":
            target = work / "inventory" / block.file_path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
            row["note"] = "written to the inventory: %s" % block.file_path
            return True
        text = block.playbook_text()
        name = "block-%d" % block.number
        for given in block.given:
            if given == "a fresh host":
                for host in hosts:
                    host.restore()
            else:
                setup = [b for b in BLOCKS if b.label == given]
                assert setup, "%s: given %s: no such block" % (block.label, given)
                run = run_playbook(setup[0].playbook_text(), work, "given-%d" % block.number,
                                   extra_vars=READER_VARS, extra_args=args, extra_env=_ENV)
                if run.rc != 0:
                    problems.append(_failure(given, "(given for %s)" % block.label, run))
                    return False
            row["note"] = (row["note"] + "; " if row["note"] else "") + "given " + given
        check = run_playbook(text, work, name, check=True, extra_vars=READER_VARS, extra_args=args, extra_env=_ENV)
        row["check"] = _status(check)
        if check.rc != 0:
            problems.append(_failure(block.label, "--check", check))
        first = run_playbook(text, work, name, extra_vars=READER_VARS, extra_args=args, extra_env=_ENV)
        row["run"] = _status(first)
        if first.rc != 0:
            problems.append(_failure(block.label, "run", first))
            return False  # the blocks after it build on it
        second = run_playbook(text, work, name, extra_vars=READER_VARS, extra_args=args, extra_env=_ENV)
        changed = sum(s.get("changed", 0) for s in second.stats.values())
        row["rerun"] = "changed=%d" % changed if second.rc == 0 else _status(second)
        if block.changes_every_run:
            row["note"] = "changes every run (%s)" % block.changes_every_run
        if second.rc != 0:
            problems.append(_failure(block.label, "second run", second))
        elif changed and not block.changes_every_run:
            problems.append("%s second run: changed=%d, expected 0: %s" % (
                block.label, changed, sorted({t["task"] for t in second.results(status="changed")})))
        return True
    finally:
        row["seconds"] = time.monotonic() - t0


def _run_guide(guide, hosts, work, password):
    """(rows, problems) of one guide on its hosts; never raises."""
    rows, problems = [], []
    inventory_dir = work / "inventory"
    inventory_dir.mkdir(parents=True)
    (inventory_dir / "hosts.yml").write_text(yaml.safe_dump(_inventory(hosts, password, _bed_vars(guide)),
                                                                default_flow_style=False))
    names = ["web1", "laptop-a"][:len(hosts)]
    args = ["-i", str(inventory_dir)]
    try:
        for block in [b for b in BLOCKS if b.guide == guide]:
            if not _run_block(block, work, args, rows, problems, hosts):
                break
        problems += _controller_secrets(work)
    except Exception:  # a harness failure: report it with the guide
        problems.append("%s: %s" % (guide, traceback.format_exc()))
    finally:
        if hosts and rows:
            try:
                try:
                    services = _services(work / ".restore", inventory_dir, names)
                finally:
                    removed = []
                    for host in hosts:
                        removed += host.restore()
                rows[-1]["note"] = (rows[-1]["note"] + "; " if rows[-1]["note"] else "") + \
                    "restored: services %s, removed %s" % (services or "none", removed or "nothing")
                left = _services(work / ".after", inventory_dir, names)
                if left:
                    problems.append("%s: the host did not come back clean: tor still runs %s" % (guide, left))
            except Exception:
                problems.append("%s: restoring the host: %s" % (guide, traceback.format_exc()))
    return rows, problems


@pytest.fixture(scope="module")
def doc_results(stockbed, request, tmp_path_factory):
    """Runs every guide, in parallel, each on hosts of its own; {guide: problems}; prints the table."""
    needed = {g: _hosts_needed(g) for g in GUIDES}
    total = sum(needed.values())
    extra = None
    for attempt in (1, 2) if total > 1 else ():
        # several containers booting at once on a loaded machine: a longer wait, and one retry
        # (up() tears down what it started when it fails)
        extra = hb.HostBed(n=total - 1, name_prefix="docs", stock=True, boot_timeout=300.0)
        try:
            extra.up()
            break
        except RuntimeError:
            if attempt == 2:
                raise
    pool = [Host(stockbed, stockbed.hosts[0])] + ([Host(extra, h) for h in extra.hosts] if extra else [])
    password = secrets.token_urlsafe(18)
    t0 = time.monotonic()
    results, rows = {}, {}
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as ex:
            list(ex.map(lambda host: host.prepare(password), pool))
            futures, i = {}, 0
            for guide in GUIDES:
                hosts, i = pool[i:i + needed[guide]], i + needed[guide]
                work = tmp_path_factory.mktemp(guide.replace("/", "-"))
                futures[guide] = ex.submit(_run_guide, guide, hosts, work, password)
            for guide in GUIDES:
                try:
                    rows[guide], results[guide] = futures[guide].result()
                except Exception:  # noqa: BLE001  (a bug here: the guide fails with it)
                    rows[guide], results[guide] = [], ["%s: %s" % (guide, traceback.format_exc())]
        yield results
    finally:
        for host in pool:
            host.unprepare()
        if extra is not None:
            extra.down()
        _print_table(request, [r for g in GUIDES for r in rows.get(g, [])], time.monotonic() - t0)


def _print_table(request, rows, seconds):
    lines = ["", "docs run as printed on stock hosts (check: --check first; run; rerun: a second run's changed "
             "count); %.0f s in all, %d guides in parallel" % (seconds, WORKERS),
             "%-30s %-4s %-5s %-9s %-9s %-9s %7s  %s" % ("guide", "blk", "line", "check", "run", "rerun",
                                                        "seconds", "note")]
    for r in rows:
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


@pytest.mark.parametrize("guide", GUIDES)
def test_guide_runs_as_printed(guide, doc_results):
    assert not doc_results[guide], "\n".join(doc_results[guide])


def test_docs_know_the_roles_are_released():
    """A guide that calls a role of roles/ unreleased is wrong (issue 14: the hosts guide did)."""
    for rst in sorted((ansible_run.REPO / "docs" / "docsite" / "rst").glob("*.rst")):
        text = " ".join(rst.read_text().split())
        assert not re.search(r"not (yet )?released|are not released|is not released", text), rst.name


def test_doc_blocks_wrapping_rule(tmp_path):
    """harness.doc_blocks on a small rst: the kinds, the wrapping, the marks (no host needed)."""
    from harness import doc_blocks as db
    rst = tmp_path / "guide_x.rst"
    rst.write_text("\n".join([
        "Title", "=====", "",
        ".. code-block:: yaml+jinja", "", "    - name: A play", "      hosts: all", "      tasks: []", "",
        ".. onionlab-doc-test: changes every run (why)", "",
        ".. code-block:: yaml", "", "    - name: A task", "      ansible.builtin.debug:",
        "        msg: \"{{ x }}\"", "",
        ".. code-block:: console", "", "    $ not yaml", "",
        ".. onionlab-doc-test: given guide_x#1", ".. onionlab-doc-test: given a fresh host", "",
        ".. code-block:: yaml", "", "    # host_vars/web1.yml", "    a: 1", "",
        ".. code-block:: yaml", "", "    onion_services: []", "    onion_service_prune: true", "",
        ".. onionlab-doc-test: skip (a fragment)", "",
        ".. code-block:: yaml", "", "    clients:", "      - name: alice", ""]))
    blocks = db.rst_blocks(rst)
    assert [b.kind for b in blocks] == ["play", "tasks", "file", "role_vars", "other"]
    assert [b.line for b in blocks] == [4, 12, 25, 30, 37]
    assert blocks[0].playbook_text() == "- name: A play\n  hosts: all\n  tasks: []\n"
    assert yaml.safe_load(blocks[1].playbook_text()) == [{
        "hosts": "all", "gather_facts": False, "become": True,
        "tasks": [{"name": "A task", "ansible.builtin.debug": {"msg": "{{ x }}"}}]}]
    assert blocks[1].changes_every_run == "why" and blocks[0].changes_every_run is None
    assert blocks[2].file_path == "host_vars/web1.yml" and blocks[2].given == ["guide_x#1", "a fresh host"]
    assert blocks[3].role == "onion_service" and yaml.safe_load(blocks[3].playbook_text())[0]["roles"] == [
        {"role": "onionlab.tor.onion_service", "vars": {"onion_services": [], "onion_service_prune": True}}]
    assert blocks[4].skip == "a fragment" and blocks[4].playbook_text() is None
    bad = tmp_path / "guide_y.rst"
    bad.write_text(".. onionlab-doc-test: skipp (typo)\n\n.. code-block:: yaml\n\n    a: 1\n")
    with pytest.raises(ValueError, match="unknown mark"):
        db.rst_blocks(bad)


def test_every_doc_block_can_run_or_is_marked():
    """Before any host: every block of the docs is a play, tasks, a vars file or role vars, or marked skip."""
    cannot = ["%s (%s line %d)" % (b.label, b.source, b.line) for b in BLOCKS if b.kind == "other" and not b.skip]
    assert not cannot, "neither a play, tasks, a vars file nor role vars; fix or mark skip: %s" % cannot
    assert [b.label for b in BLOCKS if b.skip], "no skips at all: check that the marks are read"
