# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every guide and example runs as printed, on stock Debian hosts joined to the private network (issues 14, 26).

The blocks come from ``harness.doc_blocks`` (its docstring has the extraction, the marks and the
wrapping rule; in short: a play runs as printed; a task list becomes the ``tasks:`` of one play
``{hosts: all, gather_facts: false, become: true}``; a ``# host_vars/...`` mapping is written to
the inventory directory; a mapping of one role's variables becomes that role's ``vars``). No block
is edited here: a block that cannot run is fixed in the guide or marked there (``.. onionlab-doc-test:
skip (REASON)``), and the marks are printed with the table.

The reader: each guide gets stock hosts of its own (``docs_bed``: one bed started here), named
``web1`` in its inventory and in the groups the guides name: ``web``, ``onion_servers``, ``onion_hosts``,
``bob_laptop``, ``monitoring`` (a block whose play matches no host of the bed fails: it would pass without
running anything, as the plays for ``onion_hosts`` did until 2026-12-06). A guide whose blocks name ``web3`` gets ``web2`` and ``web3`` too
(in ``web``, ``onion_servers`` and ``onion_hosts``); one whose blocks name the group ``onion_clients`` gets a host
``laptop-a`` (the only host of ``onion_clients``; ``laptop-b`` is a name of it in no group, the
guides name it in a client's ``hosts``); one with a play for ``hosts: frontend`` a host ``balancer``,
the only host of ``frontend``.

The hosts are Debian's: stock ``/etc/tor/torrc`` and systemd unit; what joins them to the private
network (``privnet``: its ``TestingTorNetwork`` and ``DirAuthority`` lines, and the host's own
SocksPort, since the hosts share this machine's network) is in tor's defaults file
(``hosts.stock_defaults_torrc``: Debian's torrc has no ``%include``, so a torrc.d drop-in would not
be read), so the guides' tors bootstrap, hold a consensus and publish descriptors. Their apt reads
the bed's local repository (``hosts.AptRepo``) of the packages the guides install
(``DOCS_APT_PACKAGES``); nothing else is installable. ``prepare`` waits until each host's tor has
bootstrapped (it prints the phase it saw). The guides' web server "on 127.0.0.1:8080 of each host" is
one small server started here (``GUIDE_BACKEND``; the hosts share the network), when the port is free.
Ansible reaches them over ssh as an ordinary user, ``onionlab-operator``, who becomes root with
``su`` (the root password is set for the run): a play that needs root and lacks ``become: true`` fails as it would for a reader. Values a
guide leaves to the reader are extra vars of every run, here, visibly (``READER_VARS``); the
inventory of a guide that runs the tor role sets ``tor_control_port: 0`` (``BED_ROLE_VARS``: the role's
ControlPort 127.0.0.1:9051 would be one port for every host of the bed, which share a network), one
that runs the onionbalance role ``onionbalance_testnet: true`` (a private network), and every host has
``tor_socks_port``, its tor's SocksPort, as a reader's inventory would (the guides read it). Values a
ready playbook documents for a private test network are its extra vars there (``LAB_VARS``).

Each guide runs in a directory of its own (its playbooks ``block-N.yml``, and what it writes beside
them: ``backup/``, ``client-keys/``, an escrow), its blocks in order as a reader would run them one
after the other; each block: ``--check`` first (on the host as the blocks before it left it), then a
run, then a second run that must report ``changed=0`` (none when the run changed nothing: it would be the same run
again) unless the rst marks the block ``changes every run`` (``check after the first run``: its ``--check`` comes after the first run). A block marked
``torrc lines`` is appended to torrc and tor restarted; a ``fragment`` replaces its keys in the inventory file it belongs to and the play it names runs again (check, run, rerun);
blocks marked ``after #N`` run right after block N (``doc_blocks.run_order``). A key file the guide
leaves on the controller must be 0600 in 0700 directories. After the
guide its hosts are put back: the services ``tor_hidden_service_info`` lists are reported, torrc is
the stock one again, what the guide added under /etc/tor and /var/lib/tor is removed and tor
restarted, and tor must then list no service. Guides run in parallel (``ONIONLAB_DOCS_WORKERS``,
default 4), each on its own hosts; guides that open the same fixed port on loopback (a MetricsPort
127.0.0.1:9035) take turns (``_fixed_ports``), since the hosts share this machine's network.

After a guide's blocks, the reader's site playbook runs on its hosts (issue 31: a guide must never teach a step
another part of the collection undoes; not after a guide that leaves no onion service and no client credential, which
it could not lose): the tor role, owning the torrc (``tor_torrc_takeover``), with the tor
variables the guide gave (``_site_vars``: its blocks of the role's variables and the ``tor_*`` vars of its plays that
run the role); then tor restarts on each host (waiting for bootstrap) and what the guide set up must still be there:
every persistent onion service (directory, address) and every permanent client credential (``_outcome``). The
client authorization guide's ``lineinfile`` into torrc failed here (the credential gone after the restart).

After a guide's blocks, ``ss -ltunp`` on each of its hosts: no daemon the collection's roles run or install listens on
an address other than loopback (``COLLECTION_DAEMONS``; issue 42: Debian's Prometheus, installed by the metrics guide's
play, listened on ``*:9090`` of the network the hosts share with this machine); row ``ss`` lists them.

A block left marked skip has a reason no host here could run it (``NO_HOST_HERE``, checked). The
table (guide, block, check, run, rerun changed, seconds) is printed at the end.
"""

import concurrent.futures
import http.server
import ipaddress
import json
import os
import re
import secrets
import threading
import time
import traceback

import pytest
import yaml

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.onion import generate_client_keypair
from harness import ansible_run
from harness import hosts as hb
from harness.doc_blocks import doc_blocks, run_order
from harness.http_backend import HttpBackend
from harness.keys import new_expanded_key

OPERATOR = "onionlab-operator"
SERVER_GROUPS = ("web", "onion_servers", "onion_hosts")       # web1 (web2, web3)
WEB1_GROUPS = ("bob_laptop", "monitoring")      # web1 alone
# What the guides apt-get install on their hosts: the bed's local repository has them (and nothing else).
DOCS_APT_PACKAGES = ["haproxy", "nginx", "onionbalance", "prometheus"]
# The blocks left marked skip, each for a reason no host here could run it (the rst says which).
NO_HOST_HERE = {"guide_consensus#1", "guide_metrics#2", "guide_metrics#7", "guide_metrics#8", "guide_metrics#9",
                "guide_metrics#10", "guide_vanguards#1"}
WORKERS = int(os.environ.get("ONIONLAB_DOCS_WORKERS", "4"))
# every guide in one module-scoped fixture: minutes on a loaded machine, not pytest.ini's 300 s
pytestmark = pytest.mark.timeout(1800)


def _ed25519_v3_key():
    """A key blob tor's ADD_ONION takes: an expanded ed25519 secret key (clamped SHA-512 of a seed)."""
    return onion.key_blob(new_expanded_key())


# Values the guides leave to the reader ("store it in a vault"): given as extra vars to every run.
READER_VARS = {
    "vault_onion_key": _ed25519_v3_key(),                   # guide_key_backup: the stored ephemeral key
    "vault_alice_admin_key": generate_client_keypair()[0],  # guide_client_rotation: alice's key in the vault
}

BLOCKS = doc_blocks()
# What a ready playbook documents for a private test network (TestingTorNetwork): its extra vars there.
LAB_VARS = {"examples/consensus_check": {"tor_consensus_authorities": "document", "tor_consensus_freshness": "valid"}}


def _extra_vars(guide):
    return dict(READER_VARS, **LAB_VARS.get(guide, {}))

GUIDES = sorted({b.guide for b in BLOCKS}, key=[b.guide for b in BLOCKS].index)
if os.environ.get("ONIONLAB_DOCS_GUIDES"):  # e.g. guide_key_backup,examples/accounting_alert (while writing one)
    GUIDES = [g for g in GUIDES if g in os.environ["ONIONLAB_DOCS_GUIDES"].split(",")]
# Seconds each guide took in a clean-clone run (194ec59, 2026-12-05, 4 workers, the other lanes beside): the
# guides start longest first, so that the longest (Onionbalance, 357 s) does not start last and finish alone
# (672 s in all in that run, guides in file order; 1878 s of work for 4 workers). Only the order matters; a guide
# not listed counts as the median.
GUIDE_SECONDS = {"guide_onionbalance": 357, "guide_onion_location": 300, "guide_onion_service_hosts": 184,
                 "guide_metrics": 168, "guide_client_rotation": 165, "guide_key_backup": 155,
                 "guide_circuit_limits": 106, "guide_client_auth": 77, "guide_accounting": 73, "guide_dos": 63,
                 "examples/accounting_alert": 53, "guide_watchdog": 50, "examples/consensus_check": 49, "guide_upgrades": 38,
                 "guide_vanguards": 45, "guide_consensus": 36, "guide_awx": 0}


def _longest_first(guides):
    known = sorted(GUIDE_SECONDS.values())
    median = known[len(known) // 2]
    return sorted(guides, key=lambda g: -GUIDE_SECONDS.get(g, median))


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
        # a guide's plays that gather facts (as printed: most do) gather them once per host of the guide; its
        # later plays and runs (--check, run, rerun) take them from a cache in the guide's directory, as a reader's
        # ansible.cfg with fact caching would: the same facts of the same host, without a setup run each time
        "ANSIBLE_GATHERING": "smart",
        "ANSIBLE_CACHE_PLUGIN": "jsonfile",
        "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(work / "facts"),
        "ANSIBLE_CACHE_PLUGIN_TIMEOUT": "86400",
    })
    env.update(extra_env or {})
    cmd = [ansible_run._tool("ansible-playbook"), str(book)] + list(extra_args)  # .venv/bin, else PATH
    if check:
        cmd.append("--check")
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    return ansible_run.run_recorded(cmd, book.parent, env, record, book, timeout)


class Host(object):
    """One stock host of a bed: ssh as root, and what it held before any guide."""

    def __init__(self, bed, h):
        self.bed, self.h, self.before = bed, h, set()

    def ssh(self, script, check=True):
        return self.bed.sh(script, self.h, check=check, timeout=120)[1]

    def inventory_vars(self):
        return {"ansible_host": "127.0.0.1", "ansible_port": self.h["ssh_port"],
                "ansible_ssh_private_key_file": self.bed.key, "tor_socks_port": self.h["tor_socks_port"]}

    def prepare(self, password):
        """An ordinary user with the bed's ssh key; root's password (shadow kept to put back); tor
        bootstrapped on the private network (its cached consensus then belongs to the host)."""
        self.ssh("set -e; cp -a /etc/shadow /etc/shadow.onionlab-docs; "
                 "id %(u)s >/dev/null 2>&1 || useradd -m -s /bin/bash %(u)s; "
                 "install -d -m 0700 -o %(u)s -g %(u)s /home/%(u)s/.ssh; "
                 "install -m 0600 -o %(u)s -g %(u)s /root/.ssh/authorized_keys /home/%(u)s/.ssh/authorized_keys; "
                 "echo 'root:%(p)s' | chpasswd" % {"u": OPERATOR, "p": password})
        self.wait_tor()
        self.bootstrap = self.ssh(_WAIT_BOOTSTRAP).strip()
        self.before = set(self.ssh(_SNAPSHOT).split())

    def append_torrc(self, lines):
        """The lines a guide tells the reader to put in torrc, then tor restarted."""
        quoted = " ".join("'%s'" % line.replace("'", "'\\''") for line in lines)
        self.ssh("set -e; printf '%%s\\n' %s >> /etc/tor/torrc; %s" % (quoted, hb.RESTART_TOR))

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
# Until tor has bootstrapped on the private network (GETINFO status/bootstrap-phase over the control
# socket with the cookie, as root); prints the phase it saw, fails with it after 180 s.
_WAIT_BOOTSTRAP = r"""python3 - <<'EOF'
import binascii, socket, sys, time
deadline, seen = time.monotonic() + 180, ''
while True:
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        s.connect('/run/tor/control')
        cookie = binascii.hexlify(open('/run/tor/control.authcookie', 'rb').read())
        s.sendall(b'AUTHENTICATE ' + cookie + b'\r\nGETINFO status/bootstrap-phase\r\nQUIT\r\n')
        out = b''
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
        s.close()
        seen = ' '.join(l for l in out.decode(errors='replace').splitlines() if 'bootstrap-phase' in l)
    except OSError as exc:
        seen = 'control socket: %s' % exc
    if 'PROGRESS=100' in seen:
        print('%.0f s: %s' % (180 - (deadline - time.monotonic()), seen))
        break
    if time.monotonic() > deadline:
        sys.exit('tor did not bootstrap in 180 s; last seen: %s' % seen)
    time.sleep(1)
EOF"""


def _host_names(guide):
    """The inventory names of the guide's hosts (one host each), from what its blocks name."""
    blocks = [b for b in BLOCKS if b.guide == guide and not b.skip]
    if not any(b.playbook_text() or b.kind in ("torrc", "fragment") for b in blocks):
        return []
    text = "\n".join(b.text for b in blocks)
    names = ["web1"]
    if re.search(r"\bweb3\b", text):
        names += ["web2", "web3"]
    if "onion_clients" in text:
        names.append("laptop-a")
    if re.search(r"hosts: *frontend\b", text):
        names.append("balancer")
    return names


_PORT_PATTERNS = (r"MetricsPort +127\.0\.0\.1:(\d+)", r"metrics_port: *(\d+)\b", r"http://127\.0\.0\.1:(\d+)")
_PORT_LOCKS = {}


def _fixed_ports(guide):
    """Ports on loopback the guide's blocks open or read: the bed's hosts share this machine's
    network, so two guides with one of them take turns."""
    text = "\n".join(b.text for b in BLOCKS if b.guide == guide and not b.skip)
    return sorted({int(p) for pattern in _PORT_PATTERNS for p in re.findall(pattern, text)})


# Inventory vars for a guide whose blocks run a role that the bed needs told something: the bed's
# hosts share one network namespace (with other beds too), so the tor role's ControlPort
# 127.0.0.1:9051 would be one port for all of them: none (0, as its spec says),
# the control socket stays. Only for guides that run the role: docs/examples use tor_control_port
# as the module's port.
BED_ROLE_VARS = {"onionlab.tor.tor": {"tor_control_port": 0},
                 "onionlab.tor.adopt": {"tor_control_port": 0},   # the playbook runs the tor role
                 # a private network (TestingTorNetwork): Onionbalance's --is-testnet
                 "onionlab.tor.onionbalance": {"onionbalance_testnet": True}}


def _bed_vars(guide):
    out = {}
    for role, rvars in BED_ROLE_VARS.items():
        if any(role + "\n" in (b.playbook_text() or "") or "role: %s\n" % role in (b.playbook_text() or "")
               for b in BLOCKS if b.guide == guide and not b.skip):
            out.update(rvars)
    return out


def _inventory(hosts, password, bed_vars=None):
    """hosts: {inventory name: Host} (_host_names)."""
    common = {"ansible_user": OPERATOR, "ansible_become_method": "su", "ansible_become_password": password,
              "ansible_python_interpreter": "/usr/bin/python3",
              "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
              "ansible_ssh_args": hb.SSH_ARGS}
    common.update(bed_vars or {})
    if not hosts:  # nothing of the guide runs on a host
        return {"all": {"vars": common}}
    names = {name: host.inventory_vars() for name, host in hosts.items()}
    web = [n for n in hosts if n.startswith("web")]
    children = {g: {"hosts": {n: None for n in web}} for g in SERVER_GROUPS}
    children.update({g: {"hosts": {"web1": None}} for g in WEB1_GROUPS})
    if "laptop-a" in hosts:
        names["laptop-b"] = hosts["laptop-a"].inventory_vars()
        children["onion_clients"] = {"hosts": {"laptop-a": None}}
    if "balancer" in hosts:
        children["frontend"] = {"hosts": {"balancer": None}}
    return {"all": {"vars": common, "hosts": names, "children": children}}


def _tor_state(host):
    """What the host's tor runs now (hostbed.TOR_STATE over ssh as root: one python3 of the host, not an
    Ansible run): {"services": ["DIR ADDRESS"], "ephemeral": [ID], "credentials": [ID of a permanent one]}."""
    return json.loads(host.ssh(hb.TOR_STATE).strip().splitlines()[-1])


def _services(named_hosts):
    """The directories (or addresses) of the services tor runs now on each host."""
    out = []
    for host in named_hosts.values():
        state = _tor_state(host)
        out += [s.split(" ", 1)[0] for s in state["services"]] + ["ephemeral %s" % i for i in state["ephemeral"]]
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


def _replace_keys(data, fragment):
    """The first mapping in data (depth first) that has every key of fragment: those keys replaced."""
    if isinstance(data, dict):
        if set(fragment) <= set(data):
            data.update(fragment)
            return True
        return any(_replace_keys(v, fragment) for v in data.values())
    if isinstance(data, list):
        return any(_replace_keys(v, fragment) for v in data)
    return False


def _debug_messages(run, width=160):
    """What the run's debug tasks printed (the guides print what a reader looks at), shortened."""
    out = []
    for t in run.tasks:
        if t.get("action") in ("debug", "ansible.builtin.debug") and t.get("status") == "ok":
            msg = " ".join(str(t["result"].get("msg", "")).split())
            out.append("%s: %s" % (t.get("host"), msg[:width] + ("..." if len(msg) > width else "")))
    return "; ".join(out)


def _play_hosts(text):
    """The hosts: patterns of a playbook's plays."""
    try:
        plays = yaml.safe_load(text) or []
    except yaml.YAMLError:
        return set()
    return set(str(p.get("hosts")) for p in plays if isinstance(p, dict))


def _run_block(block, work, args, rows, problems, hosts):
    """One block: (given), --check, run, second run; False when the blocks after it cannot go on."""
    row = {"guide": block.guide, "block": block.number, "line": block.line, "check": "-", "run": "-",
           "rerun": "-", "seconds": 0.0, "note": ""}
    rows.append(row)
    t0 = time.monotonic()
    extra_vars = _extra_vars(block.guide)
    try:
        if block.skip:
            row["note"] = "SKIP (%s)" % block.skip
            return True
        if block.after:
            row["note"] = "after #%d" % block.after[0]
        if block.kind == "torrc":
            for host in hosts:
                host.append_torrc(block.torrc_lines())
            row["note"] = "appended to torrc, tor restarted: %s" % "; ".join(block.torrc_lines())
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
        if block.kind == "fragment":
            target = work / "inventory" / block.file_path
            data = yaml.safe_load(target.read_text())
            fragment = yaml.safe_load(block.text)
            if not _replace_keys(data, fragment):
                problems.append("%s: no mapping in %s has the keys %s" % (block.label, block.file_path, sorted(fragment)))
                return False
            target.write_text(yaml.safe_dump(data, default_flow_style=False, sort_keys=False))
            play = [b for b in BLOCKS if b.guide == block.guide and b.number == block.fragment[1]][0]
            text, name = play.playbook_text(), "block-%d" % play.number
            row["note"] = "%s in %s, then %s" % ("/".join(sorted(fragment)), block.file_path, play.label)
        else:
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
                                   extra_vars=extra_vars, extra_args=args, extra_env=_ENV)
                if run.rc != 0:
                    problems.append(_failure(given, "(given for %s)" % block.label, run))
                    return False
            row["note"] = (row["note"] + "; " if row["note"] else "") + "given " + given
        def check_mode():
            check = run_playbook(text, work, name, check=True, extra_vars=extra_vars, extra_args=args,
                                 extra_env=_ENV)
            row["check"] = _status(check)
            if check.rc != 0:
                problems.append(_failure(block.label, "--check", check))
        if not block.check_after_run:
            check_mode()
        first = run_playbook(text, work, name, extra_vars=extra_vars, extra_args=args, extra_env=_ENV)
        row["run"] = _status(first)
        if block.check_after_run and first.rc == 0:
            check_mode()
            row["note"] = (row["note"] + "; " if row["note"] else "") + "--check after the run (%s)" % (
                block.check_after_run)
        said = _debug_messages(first)
        if said:
            row["note"] = (row["note"] + "; " if row["note"] else "") + "said: " + said
        if first.rc != 0:
            problems.append(_failure(block.label, "run", first))
            return False  # the blocks after it build on it
        if "skipping: no hosts matched" in first.stdout:
            # a play for a group the bed does not have would pass without running anything
            problems.append("%s: a play of it matched no host of the bed (hosts: %s); give the bed that group "
                            "(SERVER_GROUPS, WEB1_GROUPS)" % (block.label, sorted(_play_hosts(text))))
        if not sum(s.get("changed", 0) for s in first.stats.values()) and first.stats:
            # the run changed nothing: a second one on the same host is the same run (no CPU spent to see it again)
            row["rerun"] = "changed=0"
            row["note"] = (row["note"] + "; " if row["note"] else "") + "the run changed nothing: no rerun"
            return True
        second = run_playbook(text, work, name, extra_vars=extra_vars, extra_args=args, extra_env=_ENV)
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


def _run_guide(guide, named_hosts, work, password):
    """(rows, problems) of one guide on its hosts ({inventory name: Host}); never raises."""
    rows, problems = [], []
    inventory_dir = work / "inventory"
    inventory_dir.mkdir(parents=True)
    (inventory_dir / "hosts.yml").write_text(yaml.safe_dump(_inventory(named_hosts, password, _bed_vars(guide)),
                                                                default_flow_style=False))
    hosts = list(named_hosts.values())
    args = ["-i", str(inventory_dir)]
    locks = [_PORT_LOCKS[p] for p in _fixed_ports(guide)]
    for lock in locks:
        lock.acquire()
    try:
        completed = True
        for block in run_order([b for b in BLOCKS if b.guide == guide]):
            if not _run_block(block, work, args, rows, problems, hosts):
                completed = False
                break
        if hosts and rows:
            _check_listeners(guide, named_hosts, rows, problems)
        if completed and hosts and rows:
            _site_then_restart(guide, work, inventory_dir, named_hosts, rows, problems)
        problems += _controller_secrets(work)
    except Exception:  # a harness failure: report it with the guide
        problems.append("%s: %s" % (guide, traceback.format_exc()))
    finally:
        try:
            _restore_guide(guide, named_hosts, rows, problems)
        finally:
            for lock in reversed(locks):
                lock.release()
    return rows, problems


# The daemons the collection's roles run or install (their names as ss shows them: 15 characters), which must
# listen on loopback only unless a guide names another address (issue 42: Debian's prometheus listened on *:9090).
COLLECTION_DAEMONS = ("tor", "prometheus", "prometheus-aler", "prometheus-node", "onionprobe", "onionbalance",
                      "haproxy")


def _listeners(host):
    """[(process, local address)] of every TCP and UDP listener of a process of this host: ss run on the host sees
    every socket of the network it shares with this machine, but names only the processes of its own PID
    namespace, so a socket with a process is the host's."""
    out = []
    for line in host.ssh("ss -Hltunp").splitlines():
        process = re.search(r'users:\(\("([^"]+)"', line)
        if process:
            out.append((process.group(1), line.split()[4]))
    return out


def _is_loopback(local):
    address = re.sub(r"%[^:\]]*", "", local.rsplit(":", 1)[0]).strip("[]")  # 127.0.0.53%lo:53, [::1]:9090
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:  # * (every address)
        return False


def _check_listeners(guide, named_hosts, rows, problems):
    """After the guide's blocks: no daemon of the collection listens on an address other than loopback."""
    row = {"guide": guide, "block": "ss", "line": "-", "check": "-", "run": "-", "rerun": "-", "seconds": 0.0,
           "note": ""}
    rows.append(row)
    t0 = time.monotonic()
    try:
        seen, exposed = [], []
        for name, host in named_hosts.items():
            for process, local in _listeners(host):
                if process in COLLECTION_DAEMONS:
                    seen.append("%s %s %s" % (name, process, local))
                    if not _is_loopback(local):
                        exposed.append("%s: %s on %s" % (name, process, local))
        row["run"] = "failed" if exposed else "ok"
        row["note"] = "listeners: %s" % ("; ".join(sorted(set(seen))) or "none")
        if exposed:
            problems.append("%s: the collection's daemons listen beyond loopback: %s" % (guide, "; ".join(exposed)))
    except Exception:  # noqa: BLE001  (reading the listeners failed: said with the guide)
        problems.append("%s: reading the hosts' listeners: %s" % (guide, traceback.format_exc()))
    finally:
        row["seconds"] = time.monotonic() - t0


def _site_vars(guide):
    """The tor role's variables the guide gave: its blocks of the role's variables, and the ``tor_*``
    variables of its plays that run the role (play vars and the role's own vars): what the reader's site
    playbook holds after following the guide."""
    out = {}
    for b in BLOCKS:
        if b.guide != guide or b.skip:
            continue
        if b.kind == "role_vars" and b.role == "tor":
            out.update(yaml.safe_load(b.text))
        elif b.kind == "play":
            for play in yaml.safe_load(b.text):
                entries = [r if isinstance(r, dict) else {"role": r} for r in play.get("roles") or []]
                entries += [dict(t.get(k) or {}, vars=t.get("vars") or {}) for t in play.get("tasks") or []
                            for k in ("ansible.builtin.import_role", "ansible.builtin.include_role",
                                      "import_role", "include_role") if k in t]
                tor = [e for e in entries if (e.get("role") or e.get("name")) in ("onionlab.tor.tor", "tor")]
                if tor:
                    out.update({k: v for k, v in (play.get("vars") or {}).items() if k.startswith("tor_")})
                    for e in tor:
                        out.update({k: v for k, v in (e.get("vars") or {}).items() if k.startswith("tor_")})
    return out


def _outcome(named_hosts):
    """What a guide leaves that must outlive a tor restart, per host: the persistent onion services
    (directory, address) and the permanent client credentials (their addresses; tor keeps client names in
    memory only)."""
    out = {}
    for name, host in named_hosts.items():
        state = _tor_state(host)
        out[name] = {"services": state["services"], "credentials": state["credentials"]}
    return out


def _site_then_restart(guide, work, inventory_dir, named_hosts, rows, problems):
    """Issue 31: after the guide, the reader's site playbook (the tor role, with the tor variables the guide
    gave) runs on its hosts, then tor restarts; what the guide set up must still hold. A guide that edits a
    file a role owns fails here (the client authorization guide's torrc line, issue 31)."""
    row = {"guide": guide, "block": "site", "line": "-", "check": "-", "run": "-", "rerun": "-", "seconds": 0.0,
           "note": ""}
    rows.append(row)
    t0 = time.monotonic()
    names = list(named_hosts)
    try:
        before = _outcome(named_hosts)
        if not any(v for d in before.values() for v in d.values()):
            # no persistent service and no permanent credential: nothing a site playbook and a restart could lose
            row["run"] = "-"
            row["note"] = "the guide left no onion service and no client credential: nothing to keep, no site run"
            return
        # the reader's site playbook owns the torrc (tor_torrc_takeover): a line the guide put there by hand is
        # dropped, as it is on a host whose torrc the role wrote before the guide
        site_vars = dict(BED_ROLE_VARS["onionlab.tor.tor"], tor_torrc_takeover=True, **_site_vars(guide))
        play = [{"name": "The site playbook after the guide: the tor role writes each host's torrc",
                 "hosts": ":".join(names), "become": True, "gather_facts": False,
                 "roles": [{"role": "onionlab.tor.tor", "vars": site_vars}]}]
        site = run_playbook(play, work, "site", extra_vars=_extra_vars(guide),
                            extra_args=["-i", str(inventory_dir)], extra_env=_ENV)
        row["run"] = _status(site)
        if site.rc != 0:
            problems.append(_failure("%s site playbook" % guide, "run", site))
            return
        said = "; ".join(m for t in site.tasks for m in t["result"].get("messages") or [])
        row["note"] = "site playbook (tor role): %s" % (said[:300] or "ok")
        for host in named_hosts.values():
            host.ssh(hb.RESTART_TOR)
            host.ssh(_WAIT_BOOTSTRAP)
        after = _outcome(named_hosts)
        lost = {n: {k: sorted(set(before[n][k]) - set(after[n][k])) for k in before[n]} for n in names}
        lost = {n: {k: v for k, v in d.items() if v} for n, d in lost.items()}
        lost = {n: d for n, d in lost.items() if d}
        kept = sum(len(v) for d in before.values() for v in d.values())
        row["note"] += "; tor restarted; kept %d of %d services and credentials" % (
            kept - sum(len(v) for d in lost.values() for v in d.values()), kept)
        if lost:
            problems.append("%s: after the site playbook (the tor role) and a tor restart the guide's outcome is "
                            "lost: %s (the guide edits something a role owns)" % (guide, lost))
    finally:
        row["seconds"] = time.monotonic() - t0


def _restore_guide(guide, named_hosts, rows, problems):
    """The guide's hosts put back (Host.restore); what was removed noted in its last row."""
    if not (named_hosts and rows):
        return
    try:
        try:
            services = _services(named_hosts)
        finally:
            removed = []
            for host in named_hosts.values():
                removed += host.restore()
        rows[-1]["note"] = (rows[-1]["note"] + "; " if rows[-1]["note"] else "") + \
            "restored: services %s, removed %s" % (services or "none", removed or "nothing")
        left = _services(named_hosts)
        if left:
            problems.append("%s: the host did not come back clean: tor still runs %s" % (guide, left))
    except Exception:
        problems.append("%s: restoring the host: %s" % (guide, traceback.format_exc()))


# "a web server that listens on 127.0.0.1:8080 of each host" (the guides): the hosts share this
# machine's network, so one small server here is every host's backend, when the port is free.
GUIDE_BACKEND = ("127.0.0.1", 8080)


class _BackendHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"the guides' web server on 127.0.0.1:8080\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _guide_backend():
    """(server or None, what the table says about it)."""
    try:
        server = HttpBackend(_BackendHandler, GUIDE_BACKEND)
    except OSError as exc:
        return None, "no web server on %s:%d (%s)" % (GUIDE_BACKEND + (exc,))
    return server, "the guides' web server answers on %s:%d" % GUIDE_BACKEND


@pytest.fixture(scope="module")
def docs_bed(privnet):
    """Stock hosts for every guide, joined to the private network, with the bed's apt repository."""
    if os.geteuid() != 0:
        pytest.skip("the bed needs root (systemd-nspawn)")
    hb.ensure_packages()
    total = sum(len(_host_names(g)) for g in GUIDES)
    if not total:
        yield None
        return
    for attempt in (1, 2):
        # many containers booting at once on a loaded machine: a longer wait, and one retry
        # (up() tears down what it started when it fails)
        bed = hb.HostBed(n=total, name_prefix="docs", stock=True, boot_timeout=300.0,
                         privnet_join_lines=privnet.join_torrc_lines(), apt_packages=DOCS_APT_PACKAGES)
        try:
            bed.up()
            break
        except RuntimeError:
            if attempt == 2:
                raise
    try:
        yield bed
    finally:
        bed.down()


@pytest.fixture(scope="module")
def doc_results(docs_bed, request, tmp_path_factory):
    """Runs every guide, in parallel, each on hosts of its own; {guide: problems}; prints the table."""
    pool = [Host(docs_bed, h) for h in docs_bed.hosts] if docs_bed else []
    for guide in GUIDES:
        for port in _fixed_ports(guide):
            _PORT_LOCKS.setdefault(port, threading.Lock())
    password = secrets.token_urlsafe(18)
    t0 = time.monotonic()
    results, rows, boot = {}, {}, {}
    backend, backend_note = _guide_backend()
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as ex:
            list(ex.map(lambda host: host.prepare(password), pool))
            boot = {h.h["name"]: h.bootstrap for h in pool}
            futures, i = {}, 0
            for guide in _longest_first(GUIDES):
                names = _host_names(guide)
                named = dict(zip(names, pool[i:i + len(names)]))
                i += len(names)
                work = tmp_path_factory.mktemp(guide.replace("/", "-"))
                futures[guide] = ex.submit(_run_guide, guide, named, work, password)
            for guide in GUIDES:
                try:
                    rows[guide], results[guide] = futures[guide].result()
                except Exception:  # noqa: BLE001  (a bug here: the guide fails with it)
                    rows[guide], results[guide] = [], ["%s: %s" % (guide, traceback.format_exc())]
        yield results
    finally:
        if backend is not None:
            backend.stop()
        for host in pool:
            host.unprepare()
        _print_table(request, [r for g in GUIDES for r in rows.get(g, [])], time.monotonic() - t0, boot,
                     backend_note)


def _print_table(request, rows, seconds, boot=None, backend_note=""):
    skipped = [r for r in rows if r["note"].startswith("SKIP")]
    lines = ["", "docs run as printed on stock hosts joined to the private network (check: --check first; run; "
             "rerun: a second run's changed count); %.0f s in all, %d guides in parallel; %d blocks, "
             # not 'N skipped': tests/ci/15-beds.sh fails on that (a pytest skip)
             "%d not run (marked skip)"
             % (seconds, WORKERS, len(rows), len(skipped))]
    lines += ["  %s bootstrapped after %s" % kv for kv in sorted((boot or {}).items())]
    lines += ["  %s" % backend_note] if backend_note else []
    lines += ["%-30s %-4s %-5s %-9s %-9s %-9s %7s  %s" % ("guide", "blk", "line", "check", "run", "rerun",
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
    more = tmp_path / "guide_z.rst"
    more.write_text("\n".join([
        ".. code-block:: text", "", "    not run, not a block", "",
        ".. onionlab-doc-test: torrc lines", "", ".. code-block:: text", "", "    MetricsPort 127.0.0.1:9035",
        "    MetricsPortPolicy accept 127.0.0.1", "",
        ".. onionlab-doc-test: after #4 (needs what #4 makes)", "",
        ".. code-block:: yaml", "", "    - name: B", "      hosts: all", "      tasks: []", "",
        ".. code-block:: yaml", "", "    # host_vars/web1.yml", "    onion_services:", "      - name: a",
        "        clients: [{name: x}]", "",
        ".. code-block:: yaml", "", "    - name: D", "      hosts: all", "      tasks: []", "",
        ".. onionlab-doc-test: fragment of host_vars/web1.yml, then #4", "",
        ".. code-block:: yaml", "", "    clients:", "      - name: y", ""]))
    blocks = db.rst_blocks(more)
    assert [b.kind for b in blocks] == ["torrc", "play", "file", "play", "fragment"]
    assert blocks[0].torrc_lines() == ["MetricsPort 127.0.0.1:9035", "MetricsPortPolicy accept 127.0.0.1"]
    assert [b.number for b in db.run_order(blocks)] == [1, 3, 4, 2, 5]
    assert blocks[4].fragment == ("host_vars/web1.yml", 4) and blocks[4].file_path == "host_vars/web1.yml"
    assert db.Block("x.rst", "x", 1, 1, "yaml", "- hosts: all\n", None,
                    ["check after the first run (why)"]).check_after_run == "why"
    data = yaml.safe_load(blocks[2].text)
    assert _replace_keys(data, yaml.safe_load(blocks[4].text))
    assert data == {"onion_services": [{"name": "a", "clients": [{"name": "y"}]}]}
    bad = tmp_path / "guide_y.rst"
    bad.write_text(".. onionlab-doc-test: skipp (typo)\n\n.. code-block:: yaml\n\n    a: 1\n")
    with pytest.raises(ValueError, match="unknown mark"):
        db.rst_blocks(bad)


def test_every_doc_block_can_run_or_is_marked():
    """Before any host: every block of the docs is a play, tasks, a vars file or role vars, or marked skip."""
    cannot = ["%s (%s line %d)" % (b.label, b.source, b.line) for b in BLOCKS if b.kind == "other" and not b.skip]
    assert not cannot, "neither a play, tasks, a vars file nor role vars; fix or mark skip: %s" % cannot
    # the blocks left unrun are exactly those no host here could run (each says why in its mark)
    assert {b.label for b in BLOCKS if b.skip} == NO_HOST_HERE
    for guide in GUIDES:
        run_order([b for b in BLOCKS if b.guide == guide])  # every 'after #N' names a block of its guide
    for b in BLOCKS:
        if b.kind == "fragment":
            assert [x for x in BLOCKS if x.guide == b.guide and x.number == b.fragment[1] and x.kind == "play"], b
            assert [x for x in BLOCKS if x.guide == b.guide and x.number < b.number and x.file_path == b.file_path]
