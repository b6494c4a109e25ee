# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secrets and load, with real tor and real ansible-playbook runs.

Secrets: a tor with a password and a cookie, playbooks at -vvvv with the password, a supplied
private key, generated client keys (no_log) and a generated ephemeral key (no_log); every byte of
output, every recorded result (diffs, warnings, exception texts) and the playbook's record are
grepped for the password, the key blobs, the cookie (hex and base64) and the client private keys:
zero hits. Key files are 0600 in 0700 directories owned by tor's user.

Load: 100 persistent services created and removed on one tor (one `services` list), 20
ephemeral services created and removed in loops (each loop item one module run: a leaked connection or fd per
run shows as 20); tor's open fds and sockets (/proc/PID/fd)
before and after; 500 client connections opened and closed in-process, the test's own fd count
back at its baseline. Figures are printed (pytest -s). ONIONLAB_LONG=1 makes it 1000 services
and 200 ephemeral ones.
"""

import base64
import json
import os
import stat

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor import probe_client
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import run_playbook
from harness.tor_instance import TorInstance
from harness.keys import new_expanded_key

HS = "onionlab.tor.tor_hidden_service"
INFO = "onionlab.tor.tor_hidden_service_info"
PASSWORD = "s3cret-pa55word-for-the-logs"
NO_GEOIP = ["GeoIPFile /dev/null", "GeoIPv6File /dev/null"]
LONG = bool(os.environ.get("ONIONLAB_LONG"))


def fds(pid):
    """(open fds, of which sockets) of a process."""
    base = "/proc/%d/fd" % pid
    names = os.listdir(base)
    sockets = 0
    for name in names:
        try:
            sockets += os.readlink(os.path.join(base, name)).startswith("socket:")
        except OSError:
            pass
    return len(names), sockets


def everything(run, tmp_path):
    """All text a run left: screen output, recorded results, files Ansible wrote."""
    parts = [run.stdout, run.stderr, json.dumps(run.tasks)]
    for root, _dirs, files in os.walk(str(tmp_path / "ansible-run")):
        for name in files:
            if not name.startswith("playbook-"):
                try:
                    parts.append(open(os.path.join(root, name), errors="replace").read())
                except OSError:
                    pass
    return "\n".join(parts)


def test_no_secret_in_any_output(tmp_path):
    raw = new_expanded_key(b"a supplied key")
    blob = onion.key_blob(raw)
    with TorInstance(tmp_path / "tor", password=PASSWORD, extra=NO_GEOIP) as tor:
        conn = {"control_port": tor.control_port, "control_password": PASSWORD,
                "config_file": str(tmp_path / "torrc.d" / "onionlab.conf")}
        keyed, clients = str(tmp_path / "keyed"), str(tmp_path / "clients")
        store = str(tmp_path / "store.json")
        tasks = [
            {HS: dict(conn, path=keyed, ports=[{"port": 80}], private_key=blob)},
            {HS: dict(conn, path=keyed, ports=[{"port": 80}], private_key=blob)},
            {HS: dict(conn, path=clients, ports=[{"port": 80}],
                      authorized_clients=[{"name": "alice"}, {"name": "bob"}]), "register": "made", "no_log": True},
            {HS: dict(conn, ephemeral=True, ports=[{"port": 81}], return_private_key=True), "register": "eph",
             "no_log": True},
            {"ansible.builtin.copy": {"dest": store, "mode": "0600",
                                      "content": "{{ {'c': made.generated_clients, 'e': eph.private_key} | to_json }}"},
             "no_log": True},
            # failures must not carry secrets either: a wrong key for the keyed dir, a bad password
            {HS: dict(conn, path=keyed, ports=[{"port": 80}], private_key=onion.key_blob(bytes(raw[:32]) + b"\1" * 32)),
             "ignore_errors": True},
            {INFO: {"control_port": tor.control_port, "control_password": PASSWORD + "x"}, "ignore_errors": True},
            {INFO: {"control_port": tor.control_port, "control_password": PASSWORD}, "register": "info"},
        ]
        run = run_playbook(tasks, tmp_path, diff=True, extra_args=["-vvvv"])
        assert run.rc == 0, run.output
        saved = json.loads(open(store).read())
        secrets = {"password": PASSWORD, "key": blob.split(":", 1)[1], "ephemeral key": saved["e"].split(":", 1)[1]}
        for client in saved["c"]:
            secrets["client " + client["name"]] = client["private_key"]
        # the health check's probe client of the service with clients: its key is kept on the host only
        with connect(port=tor.control_port, password=PASSWORD) as ctl:
            data_dir = dict(ctl.get_conf("DataDirectory"))["DataDirectory"]
        probe = probe_client.private_key(probe_client.directory(data_dir), clients)
        assert probe is not None
        secrets["probe client b32"] = onion.b32(probe)
        secrets["probe client b64"] = base64.b64encode(probe).decode()
        with open(tor.cookie_path, "rb") as handle:
            cookie = handle.read()
        secrets["cookie hex"] = cookie.hex()
        secrets["cookie HEX"] = cookie.hex().upper()
        secrets["cookie b64"] = base64.b64encode(cookie).decode()
        text = everything(run, tmp_path) + tor.log()
        hits = dict((name, text.count(value)) for name, value in secrets.items() if value in text)
        assert hits == {}, hits
        assert len(run.stdout) > 20000          # -vvvv really was verbose
        # key files: 0600 in 0700 directories owned by tor's user
        tor_uid = os.stat("/proc/%d" % tor.pid).st_uid
        for path in (keyed, clients):
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o700 and os.stat(path).st_uid == tor_uid
            for name in ("hs_ed25519_secret_key", "hs_ed25519_public_key"):
                st = os.stat(os.path.join(path, name))
                assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == tor_uid, (path, name)
        auth = os.path.join(clients, "authorized_clients")
        assert stat.S_IMODE(os.stat(auth).st_mode) == 0o700
        for name in os.listdir(auth):
            assert stat.S_IMODE(os.stat(os.path.join(auth, name)).st_mode) == 0o600
        print("\nsecrets grepped: %d values in %d bytes of -vvvv output, results and logs: 0 hits"
              % (len(secrets), len(text)))


def test_load_services_fds_connections(tmp_path):
    persistent = 1000 if LONG else 100
    ephemeral = 200 if LONG else 20
    with TorInstance(tmp_path / "tor", extra=NO_GEOIP) as tor:
        base = tmp_path / "svc"
        base.mkdir()
        conn = {"control_port": tor.control_port, "config_file": str(tmp_path / "torrc.d" / "onionlab.conf")}
        services = [{"path": str(base / ("s%04d" % i)), "ports": [{"port": 80 + i % 1000}]} for i in range(persistent)]
        fd0 = fds(tor.pid)
        run = run_playbook([
            {"name": "create", HS: dict(conn, services=services)},
            {"name": "again", HS: dict(conn, services=services)},
            {"name": "remove", HS: dict(conn, services=[], exclusive=True)},
            {"name": "eph", HS: dict(conn, ephemeral=True, ports=[{"port": 80}]), "loop": list(range(ephemeral)),
             "register": "eph"},
            {"name": "eph remove", HS: dict(conn, ephemeral=True, state="absent", service_id="{{ item.service.service_id }}"),
             "loop": "{{ eph.results }}", "loop_control": {"label": "x"}},
        ], tmp_path, timeout=900)
        assert run.rc == 0, run.output
        statuses = dict((t["task"], t["status"]) for t in run.tasks)
        assert statuses == {"create": "changed", "again": "ok", "remove": "changed", "eph": "changed",
                            "eph remove": "changed"}, statuses
        fd1 = fds(tor.pid)
        with connect(port=tor.control_port) as ctl:
            onions = ctl.list_onions()
            assert ctl.get_conf("HiddenServiceOptions") == [("HiddenServiceOptions", None)]
            listeners = ctl.get_info("net/listeners/control")
        assert onions == {"current": [], "detached": []}
        assert len(os.listdir(str(base))) == persistent          # keys kept
        # tor: every module connection was closed again (allow the one being made now)
        assert fd1[0] <= fd0[0] + 2 and fd1[1] <= fd0[1] + 2, (fd0, fd1)

        own0 = len(os.listdir("/proc/self/fd"))
        for i in range(500):
            with connect(port=tor.control_port) if i % 2 else connect(socket_path=tor.control_socket) as ctl:
                ctl.get_info("version")
        own1 = len(os.listdir("/proc/self/fd"))
        tor2 = fds(tor.pid)
        assert own1 == own0, (own0, own1)
        assert tor2[0] <= fd0[0] + 2, (fd0, tor2)
        assert listeners
        print("\nload: %d persistent services created+removed, %d ephemeral created+removed; tor fds/sockets "
              "before %s after %s; 500 in-process connections: client fds %d -> %d, tor fds %s"
              % (persistent, ephemeral, fd0, fd1, own0, own1, tor2))
