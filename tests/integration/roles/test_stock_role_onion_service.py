# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_service role on a stock Debian host (fixture stockbed): tor as Debian ships it, reached over
ssh. Issue 14: generated client keys escrowed, never printed (point 2); pruning only what the role made
and an empty list refused (point 4); run by an ordinary user without become, the role fails before
anything is read or written, saying to use become (point 6; it failed with a bare Permission denied)."""

import base64
import json
import os
import shutil
import stat
import subprocess

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from harness import hosts as hb
from harness.ansible_run import REPO, run_playbook

USER = "onionlab-nobecome"


def _ssh(bed, script, check=True):
    return bed.sh(script, check=check, timeout=120)[1]


def test_role_without_become_says_use_become(stockbed, tmp_path):
    bed = stockbed
    host = bed.hosts[0]["name"]
    _ssh(bed, "set -e; id %(u)s >/dev/null 2>&1 || useradd -m -s /bin/sh %(u)s; "
              "install -d -m 0700 -o %(u)s -g %(u)s /home/%(u)s/.ssh; "
              "install -m 0600 -o %(u)s -g %(u)s /root/.ssh/authorized_keys /home/%(u)s/.ssh/authorized_keys"
              % {"u": USER})
    try:
        before = _ssh(bed, "find /etc/tor /var/lib/tor -maxdepth 2 | sort")
        book = [{"hosts": host, "gather_facts": False, "vars": {
            "ansible_user": USER,
            "onion_services": [{"name": "web", "ports": [{"port": 80, "target_port": 8080}]}],
            "onion_service_backup_dir": str(tmp_path / "escrow"),
            "onion_service_summary_file": str(tmp_path / "summary.yml"),
        }, "roles": ["onionlab.tor.onion_service"]}]
        # the user's own remote tmp: run_playbook's default (under the controller's tmp_path, e.g.
        # /tmp/pytest-of-root/...) may already exist on this shared stock host, made 0700 by root for
        # an earlier test, and the user could not create its temp directory there
        run = run_playbook(book, tmp_path, extra_args=["-i", bed.inventory_path],
                           extra_env={"ANSIBLE_REMOTE_TEMP": "/tmp/.ansible-%s" % USER})
        assert run.rc != 0, run.output
        assert "this user cannot write /var/lib/tor" in run.output, run.output
        assert "use become: true" in run.output, run.output
        failed = [t["task"].split(" : ")[-1] for t in run.tasks if t["status"] == "failed"]
        assert failed == ["Fail early when not (use become)"], (failed, run.output)
        assert "Permission denied" not in run.output, run.output
        assert _ssh(bed, "find /etc/tor /var/lib/tor -maxdepth 2 | sort") == before
        assert not (tmp_path / "escrow").exists()
        # as root (check mode: nothing changes) the role is past that check
        book[0]["vars"]["ansible_user"] = "root"
        root = run_playbook(book, tmp_path, extra_args=["-i", bed.inventory_path], check=True)
        checked = [t["status"] for t in root.tasks if t["task"].endswith("Fail early when not (use become)")]
        assert checked == ["skipped"], root.output
        assert root.rc == 0, root.output
    finally:
        _ssh(bed, "userdel -r %s 2>/dev/null; rm -rf /tmp/.ansible-%s; true" % (USER, USER), check=False)


_SNAPSHOT = "find /etc/tor /var/lib/tor -mindepth 1 -maxdepth 1 | sort"


def _restore(bed, before):
    """The stock host as it was: stock torrc, nothing new under /etc/tor and /var/lib/tor, tor restarted."""
    extra = sorted(set(_ssh(bed, _SNAPSHOT).split()) - set(before.split()))
    _ssh(bed, "set -e; cp %s /etc/tor/torrc; " % hb.STOCK_TORRC
              + "".join("rm -rf -- '%s'; " % p for p in extra) + hb.RESTART_TOR)


def _tor_dirs(bed):
    out = _ssh(bed, "python3 - <<'EOF'\nimport socket\ns = socket.socket(socket.AF_UNIX)\n"
                    "s.connect('/run/tor/control')\nf = s.makefile('rwb')\n"
                    "cookie = open('/run/tor/control.authcookie', 'rb').read().hex()\n"
                    "f.write(b'AUTHENTICATE ' + cookie.encode() + b'\\r\\nGETCONF HiddenServiceDir\\r\\nQUIT\\r\\n')\n"
                    "f.flush()\nprint(f.read().decode())\nEOF")
    return sorted(line.split("=", 1)[1].strip() for line in out.splitlines() if "HiddenServiceDir=" in line)


def test_role_keeps_others_services_escrows_client_keys_and_refuses_an_empty_list(stockbed, tmp_path):
    """As root on the stock host, with -vvv: a service made with the module alone (as a guide does, in the
    role's drop-in) survives the role's runs; an authorized client without a public key gets its key in
    the controller's escrow (0600 in 0700), never in the output; an empty onion_services fails naming
    the role's service and leaves tor as it was."""
    bed = stockbed
    host = bed.hosts[0]["name"]
    _ssh(bed, hb.WAIT_CONTROL_SOCKET)
    before = _ssh(bed, _SNAPSHOT)
    try:
        manual = run_playbook([{"hosts": host, "gather_facts": False, "tasks": [{"onionlab.tor.tor_hidden_service": {
            "path": "/var/lib/tor/manual", "ports": [{"port": 80, "target_port": 8080}]}}]}], tmp_path,
            extra_args=["-i", bed.inventory_path])
        assert manual.rc == 0, manual.output
        role_vars = {"onion_service_backup_dir": str(tmp_path / "escrow"),
                     "onion_service_summary_file": str(tmp_path / "summary.yml"),
                     "onion_services": [{"name": "web", "ports": [{"port": 80, "target_port": 8080}],
                                         "authorized_clients": [{"name": "alice"}]}]}
        book = [{"hosts": host, "gather_facts": False, "vars": role_vars, "roles": ["onionlab.tor.onion_service"]}]
        run = run_playbook(book, tmp_path, extra_args=["-i", bed.inventory_path, "-vvv"])
        assert run.rc == 0, run.output
        assert _tor_dirs(bed) == ["/var/lib/tor/manual", "/var/lib/tor/web"]
        escrow = tmp_path / "escrow" / host / "web" / "clients" / "alice.1.x25519"
        assert stat.S_IMODE(escrow.stat().st_mode) == 0o600, run.output
        assert stat.S_IMODE(escrow.parent.stat().st_mode) == 0o700
        private = escrow.read_text().strip()
        assert private not in run.output and private.lower() not in run.output
        assert "alice.auth" in _ssh(bed, "ls /var/lib/tor/web/authorized_clients")
        record = _ssh(bed, "stat -c '%a %U' /etc/tor/torrc.d/.onionlab_hidden_services.conf.role-owned.json")
        assert record.split() == ["600", "root"], record

        role_vars["onion_services"] = []
        empty = run_playbook(book, tmp_path, extra_args=["-i", bed.inventory_path])
        assert empty.rc != 0, empty.output
        assert "would remove every service this role made there from tor: /var/lib/tor/web." in empty.output
        assert _tor_dirs(bed) == ["/var/lib/tor/manual", "/var/lib/tor/web"]

        role_vars["onion_services"] = [{"name": "blog", "ports": [{"port": 80, "target_port": 8081}]}]
        swap = run_playbook(book, tmp_path, extra_args=["-i", bed.inventory_path])
        assert swap.rc == 0, swap.output
        assert _tor_dirs(bed) == ["/var/lib/tor/blog", "/var/lib/tor/manual"]     # web pruned, manual kept
    finally:
        _restore(bed, before)


# -- issue 26 A1: no key at -vvv over ssh, with become, on the oldest, the pinned and the newest ansible-core -----
OPERATOR = "onionlab-vvv"
CORES = {"2.17": REPO / ".build" / "venv-2.17" / "bin", "2.19": REPO / ".venv" / "bin",
         "2.21": REPO / ".build" / "venv-2.21" / "bin"}


def _core_bin(version):
    """The bin directory of a venv with that ansible-core (tests/utils/core-venv.sh makes the other two)."""
    if version != "2.19":
        subprocess.run(["bash", str(REPO / "tests" / "utils" / "core-venv.sh"), version], check=True,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, ONIONLAB_ROOT=str(REPO)))
    return CORES[version]


def _encodings(secret):
    """Every way a secret could show in a log: base64 at each of the 3 alignments (so also inside the base64
    of a larger file), hex, and the text itself."""
    out = set()
    for start in range(3):
        piece = secret[start:start + 30]
        if len(piece) >= 24:
            out.add(base64.b64encode(piece).decode("ascii"))
            out.add(base64.urlsafe_b64encode(piece).decode("ascii"))
    out.update([secret.hex(), secret.hex().upper()])
    return out


def _secrets_in_escrow(escrow):
    """(what, text) of each secret the controller's escrow holds: service keys and client keys."""
    found = []
    for path in sorted(escrow.rglob("*")):
        if path.name == "hs_ed25519_secret_key":
            key = path.read_bytes()[len(onion.SECRET_HEADER):]
            found.extend((str(path), e) for e in _encodings(key))
            found.extend((str(path), e) for e in _encodings(path.read_bytes()))
        elif path.name.endswith(".x25519"):
            text = path.read_text().strip()
            found.extend((str(path), t) for t in (text, text.lower()))
            found.extend((str(path), e) for e in _encodings(onion.unb32(text, 32, "client key")))
    return found


@pytest.mark.parametrize("core", sorted(CORES))
def test_role_at_vvv_over_ssh_with_become_prints_no_key(stockbed, tmp_path, core):
    """The onion_service role run as an ordinary ssh user who becomes root (su), at -vvv: on the first run every
    service key and client key is new (the host sends its keys back for the escrow), on the second the host was
    rebuilt (its services gone: the escrowed keys go to the host). No key, in any encoding, is in the output of
    either run, on ansible-core 2.17, 2.19 and 2.21; ssh says it censored the module's output. Before the fix,
    2.19 printed the base64 of every new key file (the connection's own play context was not told no_log)."""
    bed = stockbed
    host = bed.hosts[0]["name"]
    bin_dir = _core_bin(core)
    password = "vvv-%s" % os.urandom(6).hex()
    _ssh(bed, "set -e; cp -a /etc/shadow /etc/shadow.onionlab-vvv; "
              "id %(u)s >/dev/null 2>&1 || useradd -m -s /bin/bash %(u)s; "
              "install -d -m 0700 -o %(u)s -g %(u)s /home/%(u)s/.ssh; "
              "install -m 0600 -o %(u)s -g %(u)s /root/.ssh/authorized_keys /home/%(u)s/.ssh/authorized_keys; "
              "echo 'root:%(p)s' | chpasswd" % {"u": OPERATOR, "p": password})
    _ssh(bed, hb.WAIT_CONTROL_SOCKET)
    before = _ssh(bed, _SNAPSHOT)
    escrow = tmp_path / "escrow"
    book = [{"hosts": host, "gather_facts": False, "become": True, "vars": {
        "ansible_user": OPERATOR, "ansible_become_method": "su", "ansible_become_password": password,
        "onion_service_backup_dir": str(escrow), "onion_service_summary_file": str(tmp_path / "summary.yml"),
        "onion_services": [
            {"name": "web", "ports": [{"port": 80, "target_port": 8080}]},
            {"name": "shop", "ports": [{"port": 443, "target_port": 8443}], "authorized_clients": [{"name": "bob"}]},
        ]}, "roles": ["onionlab.tor.onion_service"]}]
    env = {"ANSIBLE_REMOTE_TEMP": "/tmp/.ansible-%s" % OPERATOR}
    outputs = []
    try:
        for stage in ("new keys", "rebuilt host"):
            if stage == "rebuilt host":
                _restore(bed, before)      # the host's services and keys gone, tor restarted
            run = run_playbook(book, tmp_path, extra_args=["-i", str(bed.inventory_path), "-vvv"], extra_env=env,
                               bin_dir=bin_dir)
            assert run.rc == 0, run.output
            outputs.append(run.output)
            print("ansible-core %s, %s: %d bytes of -vvv output" % (core, stage, len(run.output)))
        assert "[core %s." % core in subprocess.run([str(bin_dir / "ansible-playbook"), "--version"],
                                                        stdout=subprocess.PIPE, universal_newlines=True).stdout
        assert '"restored": [' in outputs[1] and '"/var/lib/tor/web"' in outputs[1]
        secrets = _secrets_in_escrow(escrow)
        keys = [p for p in escrow.rglob("hs_ed25519_secret_key")]
        assert len(keys) == 2 and list(escrow.rglob("bob.1.x25519")), sorted(escrow.rglob("*"))
        for index, output in enumerate(outputs):
            assert len(output) > 10000 and "ESTABLISH SSH CONNECTION FOR USER: %s" % OPERATOR in output   # -vvv, ssh
            leaks = sorted(set(what for what, text in secrets if text in output))
            assert not leaks, "run %d printed the keys of %s" % (index + 1, leaks)
            assert "censored due to no log" in output       # ssh was told no_log for the module run
        print("%d encodings of %d keys grepped in %d bytes: 0 hits"
              % (len(secrets), len(keys) + 1, sum(len(o) for o in outputs)))
    finally:
        _restore(bed, before)
        _ssh(bed, "cp -a /etc/shadow.onionlab-vvv /etc/shadow && rm -f /etc/shadow.onionlab-vvv; "
                  "userdel -r %s 2>/dev/null; rm -rf /tmp/.ansible-%s; true" % (OPERATOR, OPERATOR), check=False)


# -- issue 40: the escrow encrypted at rest -----------------------------------------------------------------------
def _vault_lib(password):
    from ansible.parsing.vault import VaultLib, VaultSecret
    return VaultLib([("default", VaultSecret(password.encode()))])


def _sealed_secrets(escrow, password):
    """(what, text) of each secret of a sealed escrow, opened with the password (every key file must be sealed)."""
    lib, found = _vault_lib(password), []
    for path in sorted(escrow.rglob("*")):
        if path.name == "hs_ed25519_secret_key" or path.name.endswith(".x25519"):
            raw = path.read_bytes()
            assert raw.startswith(b"$ANSIBLE_VAULT;1.1;AES256\n"), "%s is not sealed" % path
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
            data = lib.decrypt(raw)
            if path.name == "hs_ed25519_secret_key":
                found.extend((str(path), e) for e in _encodings(data[len(onion.SECRET_HEADER):]))
            else:
                text = data.decode().strip()
                found.extend((str(path), t) for t in (text, text.lower()))
            found.extend((str(path), t) for t in _encodings(raw))   # nor the vault text itself
    return found


def test_escrow_sealed_with_the_run_vault_restored_and_refused_without_it(stockbed, tmp_path):
    """Issue 40, 1: with a vault password the run writes every key of the escrow with ansible-vault (service keys,
    a client key), never prints a key or its vault text at -vvv over ssh, changes nothing on a second run, and
    restores a rebuilt host from the sealed escrow (same address). Without the password: refused, nothing changed.
    An escrow in a git work tree that git does not ignore, without a vault password: refused; ignored by git:
    plaintext; then a run with the password seals those older plaintext keys."""
    bed = stockbed
    host = bed.hosts[0]["name"]
    _ssh(bed, hb.WAIT_CONTROL_SOCKET)
    before = _ssh(bed, _SNAPSHOT)
    password = "escrow-%s" % os.urandom(8).hex()
    pw_file = tmp_path / "vault-password"
    pw_file.write_text(password + "\n")
    pw_file.chmod(0o600)
    escrow = tmp_path / "escrow"
    role_vars = {"onion_service_backup_dir": str(escrow), "onion_service_summary_file": str(tmp_path / "summary.yml"),
                 "onion_services": [
                     {"name": "web", "ports": [{"port": 80, "target_port": 8080}]},
                     {"name": "shop", "ports": [{"port": 443, "target_port": 8443}],
                      "authorized_clients": [{"name": "bob"}]}]}
    book = [{"hosts": host, "gather_facts": False, "vars": role_vars, "roles": ["onionlab.tor.onion_service"]}]
    inventory = ["-i", bed.inventory_path]
    vault = ["--vault-password-file", str(pw_file)]
    try:
        first = run_playbook(book, tmp_path, extra_args=inventory + vault + ["-vvv"])
        assert first.rc == 0, first.output
        secrets = _sealed_secrets(escrow, password)
        assert len({what for what, _ in secrets}) == 3, secrets   # two service keys, bob's key
        hostname = (escrow / host / "web" / "hostname").read_text().strip()
        assert hostname.endswith(".onion")                       # an address is public: plaintext
        again = run_playbook(book, tmp_path, extra_args=inventory + vault)
        assert again.rc == 0 and again.stats[host]["changed"] == 0, again.output
        assert _sealed_secrets(escrow, password) and (escrow / host / "web" / "hostname").read_text().strip() == hostname

        # the restore drill (issue 40, 3) on the escrow the role made: green, then red on a torn and a mismatched key
        declared = tmp_path / "declared.yml"
        declared.write_text(json.dumps({"all": {"hosts": {host: {"onion_services": role_vars["onion_services"]}}}}))
        drill_book = "- ansible.builtin.import_playbook: onionlab.tor.restore_drill\n"
        drill_args = ["-i", str(declared), "-e", json.dumps({"restore_drill_backup_dir": str(escrow),
                                                             "restore_drill_summary_file": str(tmp_path / "summary.yml")})]
        green = run_playbook(drill_book, tmp_path, extra_args=drill_args + vault)
        assert green.rc == 0, green.output
        assert "every declared service restorable: 2 key generations loaded by a scratch tor, 1 client keys" \
            in green.output, green.output
        damaged = tmp_path / "escrow-damaged"
        shutil.copytree(str(escrow), str(damaged))
        web_key = damaged / host / "web" / "hs_ed25519_secret_key"
        web_key.write_bytes(web_key.read_bytes()[:200])                         # torn (a vault text cut short)
        shutil.copy(str(damaged / host / "web" / "hostname"), str(damaged / host / "shop" / "hostname"))
        red = run_playbook(drill_book, tmp_path, extra_args=["-i", str(declared), "-e", json.dumps(
            {"restore_drill_backup_dir": str(damaged)})] + vault)
        assert red.rc != 0, red.output
        assert "2 gaps" in red.output and "%s web: unreadable" % host in red.output, red.output
        assert "a key of another service" in red.output, red.output
        assert not [what for what, text in secrets if text in green.output + red.output]

        _restore(bed, before)                                   # the host rebuilt: services and keys gone
        plain = run_playbook(book, tmp_path, extra_args=inventory)
        assert plain.rc != 0, plain.output
        assert "is encrypted with ansible-vault and this run has no vault password: give the run a vault " \
               "password" in plain.output, plain.output
        assert _ssh(bed, _SNAPSHOT) == before                    # refused before anything was written
        rebuilt = run_playbook(book, tmp_path, extra_args=inventory + vault + ["-vvv"])
        assert rebuilt.rc == 0, rebuilt.output
        assert '"/var/lib/tor/web"' in rebuilt.output and _ssh(bed, "cat /var/lib/tor/web/hostname").strip() == hostname
        for index, output in enumerate((first.output, rebuilt.output)):
            leaks = sorted(set(what for what, text in secrets if text in output))
            assert not leaks, "run %d printed the keys of %s" % (index + 1, leaks)
        _restore(bed, before)

        repo = tmp_path / "site"
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        role_vars["onion_service_backup_dir"] = str(repo / "onion-keys")
        role_vars["onion_services"] = role_vars["onion_services"][:1]
        book[0]["vars"] = role_vars
        refused = run_playbook(book, tmp_path, extra_args=inventory)
        assert refused.rc != 0, refused.output
        assert "is inside the git work tree %s and git does not ignore it" % repo in refused.output, refused.output
        assert not (repo / "onion-keys").exists() and _ssh(bed, _SNAPSHOT) == before
        (repo / ".gitignore").write_text("/onion-keys/\n")
        ignored = run_playbook(book, tmp_path, extra_args=inventory)
        assert ignored.rc == 0, ignored.output
        key = repo / "onion-keys" / host / "web" / "hs_ed25519_secret_key"
        assert key.read_bytes().startswith(onion.SECRET_HEADER)  # plaintext, where git does not look
        sealing = run_playbook(book, tmp_path, extra_args=inventory + vault)
        assert sealing.rc == 0 and sealing.stats[host]["changed"] >= 1, sealing.output
        assert _vault_lib(password).decrypt(key.read_bytes()).startswith(onion.SECRET_HEADER)
        print("escrow sealed: 3 keys, %d encodings grepped in 2 runs at -vvv: 0 hits; refused without the "
              "password and in a git work tree; the older plaintext key sealed by the next run" % len(secrets))
    finally:
        _restore(bed, before)
