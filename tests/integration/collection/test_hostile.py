# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile input at the module level, and a hostile peer.

* Injection: every module parameter that reaches the control port, with CR, LF, NUL, quotes,
  backslashes, spaces and whole injected commands at the start, middle and end, through real
  ansible-playbook runs against a real tor, behind a recording tap (tests/harness/tap.py) that
  sees every line the modules send. None may get through: every line on the wire starts with a
  command we send, tor stays alive with its configuration unchanged except for the services of
  the tasks that legitimately succeeded. CI runs six payloads at one position each per parameter
  (~90 runs, ~50 s); ONIONLAB_LONG=1 runs eleven payloads at every position (~500 runs, ~5 min).
* Malicious peer (FakeTor): ADD_ONION answers with a ServiceID that is not one, with '../', or
  with a PrivateKey of another service; GETCONF HiddenServiceOptions with HiddenServiceDir
  '../../etc'; GETINFO config-file naming a non-torrc file; PROTOCOLINFO COOKIEFILE=/etc/shadow.
  Values tor returns are validated before use, nothing is written outside the service dirs, and
  no key or file content reaches results or output.
"""

import base64
import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import run_playbook
from harness.fake_tor import FakeTor
from harness.tap import ControlTap
from harness.tor_instance import TorInstance
from harness.keys import new_expanded_key

HS = "onionlab.tor.tor_hidden_service"
INFO = "onionlab.tor.tor_hidden_service_info"
FACTS = "onionlab.tor.tor_accounting_facts"
PASSWORD = "hostile input test"
LONG = bool(os.environ.get("ONIONLAB_LONG"))
NO_GEOIP = ["GeoIPFile /dev/null", "GeoIPv6File /dev/null"]

# CI: CR, LF, NUL, a whole command, quotes+spaces, backslash+quote+CRLF; ONIONLAB_LONG adds the rest
PAYLOADS = ["\r", "\n", "\x00", "\r\nSIGNAL HALT\r\n", '" SETCONF=1 "', '\\"\r\nRESETCONF HiddenServiceDir\r\n']
if LONG:
    PAYLOADS += ["\nSETCONF ControlPort=0", '"', "\\", " ", "\r\n.\r\n250 OK\r\n"]
SENT_KEYWORDS = {b"PROTOCOLINFO", b"AUTHENTICATE", b"AUTHCHALLENGE", b"GETINFO", b"GETCONF", b"SETCONF",
                 b"RESETCONF", b"SETEVENTS", b"ADD_ONION", b"DEL_ONION", b"QUIT"}


def key_blob(seed):
    return onion.key_blob(new_expanded_key(seed))


def injected(value, index):
    """(payload, position) variants of value: one rotating position, or all three with ONIONLAB_LONG."""
    out = []
    for n, payload in enumerate(PAYLOADS):
        positions = [0, len(value) // 2, len(value)]
        for pos in positions if LONG else [positions[(n + index) % 3]]:
            out.append(value[:pos] + payload + value[pos:])
    return out


def live(tor):
    with connect(port=tor.control_port, password=PASSWORD) as ctl:
        text = ctl.get_info("config-text")["config-text"]
        onions = ctl.list_onions()
        dirs = [v for k, v in ctl.get_conf("HiddenServiceOptions") if k == "HiddenServiceDir"]
    other = sorted(l for l in text.splitlines() if not l.startswith("HiddenService"))
    return other, dirs, onions["detached"] + onions["current"]


def test_injection_through_every_parameter(tmp_path):
    base = tmp_path / "tor"
    with TorInstance(base, password=PASSWORD, extra=NO_GEOIP) as tor, ControlTap(tor.control_port) as tap:
        conn = {"control_port": tap.port, "control_password": PASSWORD}
        drop_in = str(tmp_path / "torrc.d" / "onionlab.conf")
        svc = str(tmp_path / "svc")
        blob = key_blob(b"persistent")
        eph_blob = key_blob(b"ephemeral")
        _priv, client_key = onion.generate_client_keypair()
        hs_conn = dict(conn, config_file=drop_in)
        cases = []   # (module, params, which parameter)

        def add(module, param, values, make):
            for value in values:
                cases.append((module, make(value), param))

        for i, (param, value, make) in enumerate([
            ("path", svc, lambda v: dict(hs_conn, path=v, ports=[{"port": 80}])),
            ("ports.target_address", "127.0.0.1",
             lambda v: dict(hs_conn, path=svc, ports=[{"port": 80, "target_address": v}])),
            ("ports.target_address unix", "unix:/run/web.sock",
             lambda v: dict(hs_conn, path=svc, ports=[{"port": 80, "target_address": v}])),
            ("extra_options key", "HiddenServiceFutureOption",
             lambda v: dict(hs_conn, path=svc, ports=[{"port": 80}], extra_options={v: "1"})),
            ("extra_options value", "0",
             lambda v: dict(hs_conn, path=svc, ports=[{"port": 80}],
                            extra_options={"HiddenServiceFutureOption": v})),
            ("onionbalance_frontend", onion.onion_address(bytes(range(32))) + ".onion",
             lambda v: dict(hs_conn, path=svc, ports=[{"port": 80}], onionbalance_frontend=v)),
            ("private_key persistent", blob,
             lambda v: dict(hs_conn, path=str(tmp_path / "keyed"), ports=[{"port": 80}], private_key=v)),
            ("private_key ephemeral", eph_blob,
             lambda v: dict(hs_conn, ephemeral=True, ports=[{"port": 80}], private_key=v)),
            ("service_id", onion.service_id_of_key(eph_blob),
             lambda v: dict(hs_conn, ephemeral=True, state="absent", service_id=v)),
            ("client_auth_v3", client_key,
             lambda v: dict(hs_conn, ephemeral=True, ports=[{"port": 80}], client_auth_v3=[v])),
            ("authorized_clients.name", "alice",
             lambda v: dict(hs_conn, path=svc, ports=[{"port": 80}], authorized_clients=[{"name": v}])),
            ("authorized_clients.public_key", client_key,
             lambda v: dict(hs_conn, path=svc, ports=[{"port": 80}],
                            authorized_clients=[{"name": "bob", "public_key": v}])),
        ]):
            add(HS, param, injected(value, i), make)
        for i, module in enumerate([HS, INFO, FACTS]):
            extra = {"ephemeral": True, "ports": [{"port": 80}], "config_file": drop_in} if module == HS else {}
            add(module, "control_password", injected(PASSWORD, i), lambda v: dict(conn, control_password=v, **extra))
        add(INFO, "control_host", injected("127.0.0.1", 0), lambda v: dict(conn, control_host=v))
        add(FACTS, "control_socket", injected(tor.control_socket, 1),
            lambda v: {"control_socket": v, "control_password": PASSWORD})
        add(INFO, "cookie_path", injected(tor.cookie_path, 2), lambda v: {"control_port": tap.port, "cookie_path": v})

        before_other, before_dirs, before_onions = live(tor)
        tasks = [{"name": "%d %s" % (n, param), module: params, "ignore_errors": True, "no_log": False}
                 for n, (module, params, param) in enumerate(cases)]
        run = run_playbook(tasks, tmp_path, extra_args=["--forks", "1"], timeout=600)
        assert len(run.tasks) == len(cases), run.output

        # nothing got through: every line on the wire is one of our commands, no bare CR or NUL
        keywords = set(tap.keywords())
        assert keywords <= SENT_KEYWORDS, keywords - SENT_KEYWORDS
        assert not [l for l in tap.lines if b"\r" in l or b"\x00" in l]
        assert tor.proc.poll() is None, "tor died"
        after_other, after_dirs, after_onions = live(tor)
        assert after_other == before_other
        # only services of tasks that succeeded, with exactly the value given
        accepted = [(cases[int(t["task"].split()[0])], t) for t in run.tasks if t["status"] != "failed"]
        ok_paths = set(os.path.normpath(c[1]["path"]) for c, _t in accepted if "path" in c[1])
        assert set(after_dirs) - set(before_dirs) <= ok_paths
        ok_ids = set((t["result"].get("service") or {}).get("service_id") for c, t in accepted)
        assert set(after_onions) - set(before_onions) <= ok_ids
        # a refused value is refused with one message, never a traceback, never the key
        for task in run.tasks:
            if task["status"] == "failed":
                assert task["result"].get("msg"), task
                assert "Traceback" not in task["result"].get("msg", "")
        for secret in (blob.split(":")[1], eph_blob.split(":")[1], PASSWORD):
            assert secret not in run.stdout + run.stderr
        failed = sum(1 for t in run.tasks if t["status"] == "failed")
        print("\ninjections tried: %d (%d parameters x %d payloads%s); refused %d, accepted as plain values %d; "
              "%d lines on the wire, keywords %s"
              % (len(cases), len(set(c[2] for c in cases)), len(PAYLOADS), " x 3 positions" if LONG else "",
                 failed, len(cases) - failed, len(tap.lines), sorted(k.decode() for k in keywords)))


# -- a malicious peer -----------------------------------------------------------------------

PI_NULL = b'250-PROTOCOLINFO 1\r\n250-AUTH METHODS=NULL\r\n250-VERSION Tor="0.4.8.10"\r\n250 OK\r\n'
OK = b"250 OK\r\n"


def facts_reply(config_file, data_dir):
    return (("250-config-file=%s\r\n250-process/pid=%d\r\n250-process/uid=%d\r\n250-process/user=root\r\n"
             "250-version=0.4.8.10\r\n250 OK\r\n" % (config_file, os.getpid(), os.getuid())).encode(),
            ("250-DataDirectory=%s\r\n250 User\r\n" % data_dir).encode())


ONIONS_NONE = b"250-onions/current=\r\n250-onions/detached=\r\n250 OK\r\n"


class Runs(object):
    """Several playbook runs read as one: .tasks, .stdout, .stderr, .output, .playbook_text."""

    def __init__(self, runs):
        self.tasks = [t for r in runs for t in r.tasks]
        self.stdout = "".join(r.stdout for r in runs)
        self.stderr = "".join(r.stderr for r in runs)
        self.output = "\n".join(r.output for r in runs)
        self.playbook_text = "".join(open(r.playbook).read() for r in runs)


def run_each(pairs, tmp_path, **kwargs):
    """[(FakeTor, task)]: each task in its own playbook run, its fake started right before it (a
    FakeTor accepts one connection within 10 s of its start; on a loaded machine a playbook of a
    few tasks reaches the last fake later than that)."""
    runs = []
    for fake, task in pairs:
        with fake:
            runs.append(run_playbook([task], tmp_path, **kwargs))
    return Runs(runs)


def ephemeral_script(tmp_path, add_onion_reply):
    info, conf = facts_reply("/nonexistent/torrc", tmp_path / "fakedata")
    return [(b"PROTOCOLINFO", PI_NULL), (b"AUTHENTICATE", OK), (b"GETINFO", info), (b"GETCONF", conf),
            (b"GETINFO", ONIONS_NONE), (b"ADD_ONION", add_onion_reply), (None, OK), (None, OK)]


def test_malicious_add_onion_replies(tmp_path):
    (tmp_path / "fakedata").mkdir()
    key_a, key_b = key_blob(b"a"), key_blob(b"b")
    sid_a = onion.service_id_of_key(key_a)
    bad = {
        "not an id": b"250-ServiceID=notanid\r\n250 OK\r\n",
        "dot dot": b"250-ServiceID=../../../../tmp/pwn\r\n250 OK\r\n",
        "56 chars with ..": ("250-ServiceID=%s\r\n250 OK\r\n" % ("../" * 18 + "ab")).encode(),
        "wrong key": ("250-ServiceID=%s\r\n250-PrivateKey=%s\r\n250 OK\r\n" % (sid_a, key_b)).encode(),
        "bad key": ("250-ServiceID=%s\r\n250-PrivateKey=ED25519-V3:%s\r\n250 OK\r\n"
                    % (sid_a, base64.b64encode(b"x" * 64).decode())).encode(),
        "other id for our key": ("250-ServiceID=%s\r\n250 OK\r\n" % onion.service_id_of_key(key_b)).encode(),
    }
    fakes = dict((name, FakeTor(ephemeral_script(tmp_path, reply))) for name, reply in bad.items())
    pairs = []
    for name, fake in fakes.items():
        params = {"control_port": fake.port, "ephemeral": True, "ports": [{"port": 80}],
                  "return_private_key": True, "config_file": str(tmp_path / "d.conf")}
        if name == "other id for our key":
            params["private_key"] = key_a
        pairs.append((fake, {"name": name, HS: params, "ignore_errors": True}))
    run = run_each(pairs, tmp_path, extra_args=["-vvvv"])
    assert len(run.tasks) == len(bad), run.output
    for task in run.tasks:
        assert task["status"] == "failed", task
        assert "ServiceID" in task["result"]["msg"] or "PrivateKey" in task["result"]["msg"], task["result"]["msg"]
        assert "private_key" not in task["result"] or task["result"]["private_key"] is None
    # what tor handed out that did not add up was removed again
    for name in ("wrong key", "bad key", "other id for our key"):
        assert any(line.startswith(b"DEL_ONION") for line in fakes[name].received), (name, fakes[name].received)
    output = run.stdout + run.stderr + run.playbook_text
    assert key_b.split(":")[1] not in output and base64.b64encode(b"x" * 64).decode() not in output
    # nothing was written for the bogus ids (the record stays empty, no file named after them)
    assert not os.path.exists("/tmp/pwn")
    for path in (tmp_path / "fakedata").iterdir():
        assert "pwn" not in path.read_text() and ".." not in path.read_text()


def test_malicious_service_dir_and_config_file(tmp_path):
    """tor says a service lives in '../../etc' and in a victim directory, and that its torrc is
    a shadow-like file: the module writes nothing there."""
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o700)
    (victim / "keep").write_text("untouched")
    shadow = tmp_path / "shadow"
    shadow.write_text("root:$6$salt$hash:19000:0:99999:7:::\n")
    service = tmp_path / "mine"
    hs_conf = ("250-HiddenServiceDir=../../etc\r\n250-HiddenServicePort=80 127.0.0.1:80\r\n"
               "250-HiddenServiceDir=%s\r\n250 HiddenServicePort=22 127.0.0.1:22\r\n" % victim).encode()
    # what tor holds after the SETCONF (read back to check that no other writer raced us)
    hs_after = hs_conf[:-len(b"\r\n")].replace(b"250 HiddenServicePort", b"250-HiddenServicePort") + (
        "\r\n250-HiddenServiceDir=%s\r\n250 HiddenServicePort=80 127.0.0.1:80\r\n" % service).encode()
    scripts = {}
    for name, config_file in (("shadow", shadow), ("etc", "/nonexistent/torrc")):
        info, conf = facts_reply(config_file, tmp_path)
        scripts[name] = [(b"PROTOCOLINFO", PI_NULL), (b"AUTHENTICATE", OK), (b"GETINFO", info), (b"GETCONF", conf),
                         (b"GETCONF", hs_conf), (b"GETCONF", hs_conf), (b"SETEVENTS", OK), (b"SETCONF", OK),
                         (b"SETEVENTS", OK), (b"GETCONF", hs_after), (None, OK)]
    info_i, conf_i = facts_reply("/nonexistent/torrc", tmp_path)
    scripts["info"] = [(b"PROTOCOLINFO", PI_NULL), (b"AUTHENTICATE", OK), (b"GETINFO", info_i), (b"GETCONF", conf_i),
                       (b"GETCONF", hs_conf), (b"GETINFO", ONIONS_NONE),
                       (b"GETCONF", b"250 VanguardsLiteEnabled=auto\r\n")]
    fakes = dict((n, FakeTor(s)) for n, s in scripts.items())
    drop_in = str(tmp_path / "torrc.d" / "x.conf")
    tasks = [{"name": "shadow", HS: {"control_port": fakes["shadow"].port, "path": str(service),
                                     "ports": [{"port": 80}], "config_file": drop_in}, "ignore_errors": True},
             {"name": "etc", HS: {"control_port": fakes["etc"].port, "path": str(service), "ports": [{"port": 80}],
                                  "config_file": drop_in, "include_config_file": False,
                                  "authorized_clients": [{"name": "eve"}]}, "ignore_errors": True, "no_log": True},
             {"name": "info", INFO: {"control_port": fakes["info"].port}, "ignore_errors": True}]
    etc_before = sorted(os.listdir("/etc"))
    run = run_each(zip([fakes["shadow"], fakes["etc"], fakes["info"]], tasks), tmp_path)
    shadow_task, etc_task, info_task = run.tasks
    assert shadow_task["status"] == "failed"
    assert "does not look like a torrc" in shadow_task["result"]["msg"]
    assert "$6$" not in run.stdout + run.stderr and "root:" not in shadow_task["result"]["msg"]
    assert shadow.read_text() == "root:$6$salt$hash:19000:0:99999:7:::\n"
    # the service we asked for was applied; tor's own (bogus) paths were only sent back to it
    assert etc_task["status"] == "changed", etc_task
    setconf = [l for l in fakes["etc"].received if l.startswith(b"SETCONF")][0]
    assert b'HiddenServiceDir="../../etc"' in setconf and str(service).encode() in setconf
    assert sorted(os.listdir(str(victim))) == ["keep"]
    assert sorted(os.listdir("/etc")) == etc_before and not os.path.exists("/etc/authorized_clients")
    assert not os.path.exists(str(tmp_path / "ansible-run" / ".." / ".." / "etc"))
    assert info_task["status"] == "ok", info_task["result"]
    assert [s["path"] for s in info_task["result"]["hidden_services"]] == ["../../etc", str(victim)]
    assert info_task["result"]["hidden_services"][0]["onion_address"] is None


def test_cookiefile_pointing_at_a_secret(tmp_path):
    """PROTOCOLINFO COOKIEFILE=/etc/shadow (and a 32-byte secret): the error names the file but
    never its content; with SAFECOOKIE the peer cannot prove it knows it, so nothing derived from
    the file is sent either."""
    secret = tmp_path / "secret32"
    secret.write_bytes(b"S3CRET-S3CRET-S3CRET-S3CRET-32b!")
    fakes = []
    for path in ("/etc/shadow", str(secret)):
        pi = ('250-PROTOCOLINFO 1\r\n250-AUTH METHODS=SAFECOOKIE COOKIEFILE="%s"\r\n250-VERSION Tor="0.4.8.10"\r\n'
              '250 OK\r\n' % path).encode()
        challenge = b"250 AUTHCHALLENGE SERVERHASH=" + b"00" * 32 + b" SERVERNONCE=" + b"11" * 32 + b"\r\n"
        fakes.append(FakeTor([(b"PROTOCOLINFO", pi), (b"AUTHCHALLENGE", challenge), (None, OK)]))
    run = run_each([(f, {"name": str(i), INFO: {"control_port": f.port}, "ignore_errors": True})
                    for i, f in enumerate(fakes)], tmp_path, extra_args=["-vvvv"])
    shadow_task, secret_task = run.tasks
    assert "/etc/shadow is not 32 bytes long" in shadow_task["result"]["msg"]
    assert "SAFECOOKIE" in secret_task["result"]["msg"] and "refusing" in secret_task["result"]["msg"]
    with open("/etc/shadow", "rb") as handle:
        shadow_lines = [l for l in handle.read().split(b"\n") if len(l) > 8]
    output = (run.stdout + run.stderr).encode()
    assert not any(l in output for l in shadow_lines)
    raw = secret.read_bytes()
    for leak in (raw, raw.hex().encode(), base64.b64encode(raw)):
        assert leak not in output
        assert not any(leak in line for f in fakes for line in f.received)
    assert not any(line.startswith(b"AUTHENTICATE") for f in fakes for line in f.received)
