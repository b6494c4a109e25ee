# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""onionlab.tor.tor_onion_probe with real ansible-playbook runs against the private Tor network
(harness/privnet.py): a reachable onion (http, tcp, a unix SocksPort, check mode), an unknown one
(0xF0 with ExtendedErrors, 0x04 without), a stopped SocksPort, a malformed address, a SocksPort
that never answers, wait mode that goes on once a service comes up and wait mode that fails at
its deadline; its time to first byte next to curl's on the same onion; and the address check
against tor's own (0xF6) on random keys.

Fixtures come from harness.fixtures (privnet, http_backend).
"""

import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion, probe, socks
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness import privnet as pn
from harness import procs
from harness.ansible_run import run_playbook
from harness.reach import Reach, Watch
from harness.keys import new_expanded_key

MODULE = "onionlab.tor.tor_onion_probe"
FETCH_DEADLINE = float(os.environ.get("ONIONLAB_FETCH_DEADLINE", "60"))
CURL_ROUNDS = int(os.environ.get("ONIONLAB_PROBE_CURL_ROUNDS", "5"))


def _say(msg):
    sys.stderr.write("\n[onionlab] %s\n" % msg)


def new_key():
    """(key blob for ADD_ONION, its address): a fresh clamped ed25519 expanded key."""
    blob = onion.key_blob(new_expanded_key())
    return blob, onion.service_id_of_key(blob) + ".onion"


def unknown_onion():
    """A well-formed v3 address no service publishes."""
    return new_key()[1]


def probe_task(args, name="probe", **extra):
    task = {"name": name, MODULE: args, "register": "out"}
    task.update(extra)
    return task


def result_of(run, name="probe"):
    return run.task(name)["result"]


@pytest.fixture(scope="module")
def service(privnet, http_backend):
    """An onion service on privnet's onion tor (ports 80 and 8080 -> http_backend), fetched once
    through the client tor so its descriptor is out; its address."""
    onion_tor = privnet.onion
    with connect(port=onion_tor.control_port, cookie_path=onion_tor.cookie_path) as ctl:
        target = "127.0.0.1:%d" % http_backend.port
        with Reach(onion_tor, privnet.client) as reach:
            svc = ctl.add_onion([(80, target), (8080, target)], flags=["DiscardPK"])
            address = svc["service_id"] + ".onion"
            _body, took = reach.fetch(address, deadline=FETCH_DEADLINE)
        _say("probe service %s answered %.1fs after its upload" % (address, took))
        yield address
        ctl.del_onion(svc["service_id"])


class Extended(object):
    """A client tor with a SocksPort with ExtendedErrors (.port) and a unix SocksPort (.path)
    beside a plain one (add_tor's "SocksPort 0" without socks=True would turn off the others)."""


@pytest.fixture(scope="module")
def extended(privnet, tmp_path_factory):
    base = tmp_path_factory.mktemp("probe-socks")
    os.chmod(str(base), 0o700)
    (port,) = pn.free_ports(1)
    info = Extended()
    info.port = port
    info.path = str(base / "socks")
    t0 = time.monotonic()
    info.node = privnet.add_tor("probeext", ["SocksPort 127.0.0.1:%d ExtendedErrors" % port,
                                             "SocksPort unix:%s ExtendedErrors" % info.path], socks=True)
    _say("client tor with ExtendedErrors bootstrapped in %.1fs" % (time.monotonic() - t0))
    try:
        yield info
    finally:
        procs.kill_pids([(info.node.pid, info.node.starttime)], grace=5.0)
        info.node.proc.wait(timeout=10)


def test_reachable_onion_http_tcp_and_unix_socket(privnet, service, extended, http_backend, tmp_path):
    tasks = [
        probe_task({"socks_port": privnet.socks_port, "wait": True, "deadline": 60, "targets": [
            {"address": service, "body_contains": http_backend.token},
            {"address": service[:-len(".onion")].upper(), "port": 8080, "path": "/any?x=1", "status": [200, 204]},
            {"address": service, "port": 80, "mode": "tcp"},
        ]}),
        probe_task({"socks_socket": extended.path, "targets": [{"address": service}]}, name="unix", register="unix"),
    ]
    t0 = time.monotonic()
    run = run_playbook(tasks, tmp_path)
    took = time.monotonic() - t0
    assert run.rc == 0, run.output
    out = result_of(run)
    assert out["changed"] is False and out["unanswered"] == []
    web, alt, tcp = out["targets"]
    assert (web["address"], web["port"], web["mode"], web["status"]) == (service, 80, "http", 200)
    assert (alt["address"], alt["port"], alt["status"]) == (service, 8080, 200)
    assert (tcp["port"], tcp["mode"], tcp["status"]) == (80, "tcp", None)
    for entry in out["targets"]:
        assert entry["reachable"] is True and entry["error"] is None and entry["reason"] is None
        assert entry["attempts"] >= 1 and 0 < entry["time_to_first_byte"] < 60
    unix = result_of(run, "unix")
    assert unix["targets"][0]["reachable"] is True and unix["targets"][0]["status"] == 200
    assert run.stats["localhost"]["changed"] == 0
    _say("reachable: http %.3fs, tcp %.3fs, via unix socket %.3fs (first contact of that tor); playbook %.1fs"
         % (web["time_to_first_byte"], tcp["time_to_first_byte"], unix["targets"][0]["time_to_first_byte"], took))


def test_check_mode_probes_the_same(privnet, service, tmp_path):
    run = run_playbook([probe_task({"socks_port": privnet.socks_port, "targets": [{"address": service}]})],
                       tmp_path, check=True)
    assert run.rc == 0, run.output
    out = result_of(run)
    assert out["changed"] is False
    assert out["targets"][0]["reachable"] is True and out["targets"][0]["status"] == 200


def test_unknown_onion_names_the_socks_error(privnet, extended, tmp_path):
    address = unknown_onion()
    tasks = [probe_task({"socks_port": extended.port, "timeout": 30, "targets": [{"address": address}]},
                        name="extended", register="extended"),
             probe_task({"socks_port": privnet.socks_port, "timeout": 30, "targets": [{"address": address}]},
                        name="plain", register="plain")]
    run = run_playbook(tasks, tmp_path)
    assert run.rc == 0, run.output            # a report: an unreachable onion does not fail the task
    (ext,) = result_of(run, "extended")["targets"]
    assert ext["reachable"] is False and ext["attempts"] == 1
    assert ext["reason"] == "descriptor_not_found" and ext["socks_reply"] == 0xF0
    assert ext["error"].startswith("tor answered 0xF0: onion service descriptor can not be found")
    assert ext["time_to_first_byte"] is None and ext["status"] is None
    assert result_of(run, "extended")["unanswered"] == [address + ":80"]
    (plain,) = result_of(run, "plain")["targets"]
    assert plain["reason"] == "host_unreachable" and plain["socks_reply"] == 0x04
    assert "the ExtendedErrors flag on the SocksPort says why" in plain["error"]
    _say("unknown onion: %s | without ExtendedErrors: %s" % (ext["error"], plain["error"]))


def test_stopped_socks_port(privnet, tmp_path):
    node = privnet.add_tor("probestopped", socks=True)
    port = node.socks_port
    socket.create_connection(("127.0.0.1", port), timeout=5).close()      # it was a SocksPort
    procs.kill_pids([(node.pid, node.starttime)], grace=5.0)
    node.proc.wait(timeout=10)
    address = unknown_onion()
    tasks = [probe_task({"socks_port": port, "targets": [{"address": address}]}),
             probe_task({"socks_port": port, "wait": True, "deadline": 2, "delay": 0.5,
                         "targets": [{"address": address}]}, name="wait", ignore_errors=True)]
    run = run_playbook(tasks, tmp_path)
    assert run.rc == 0, run.output
    (entry,) = result_of(run)["targets"]
    assert entry["reachable"] is False and entry["reason"] == "proxy_refused"
    assert entry["error"] == ("connection refused by the SocksPort 127.0.0.1:%d: nothing listens there (is tor "
                              "running, with this SocksPort?)" % port)
    waited = run.task("wait")
    assert waited["status"] == "failed"
    assert waited["result"]["msg"].startswith("1 of 1 onion services did not answer within 2s through SocksPort "
                                              "127.0.0.1:%d: %s:80 (connection refused" % (port, address))
    assert waited["result"]["targets"][0]["attempts"] >= 3
    _say("stopped SocksPort: %s" % waited["result"]["msg"])


@pytest.mark.parametrize("address, words", [
    ("not-an-onion", "targets[0].address: 'not-an-onion' is not a v3 onion address"),
    ("expyuzz4wqqyqhjn.onion", "is a version 2 address"),
    ("__TYPO__", "has a wrong checksum"),
])
def test_malformed_address_is_one_message(privnet, tmp_path, address, words):
    if address == "__TYPO__":
        good = unknown_onion()
        address = good[:20] + ("a" if good[20] != "a" else "b") + good[21:]
    run = run_playbook([probe_task({"socks_port": privnet.socks_port, "targets": [{"address": address}]})], tmp_path)
    assert run.rc == 2
    failed = run.task("probe")
    assert failed["status"] == "failed"
    msg = failed["result"]["msg"]
    assert words in msg and "\n" not in msg
    # ansible-core 2.19 notes '(traceback unavailable)' for every fail_json
    assert failed["result"].get("exception", "(traceback unavailable)") == "(traceback unavailable)"
    assert "Traceback" not in run.output


def test_socks_port_that_never_answers_times_out(tmp_path):
    """A local TCP server that accepts and never says a word, used as the SocksPort."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except socket.timeout:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    port = server.getsockname()[1]
    address = unknown_onion()
    tasks = [probe_task({"socks_port": port, "timeout": 1.5, "targets": [{"address": address}]}),
             probe_task({"socks_port": port, "timeout": 1, "wait": True, "deadline": 3, "delay": 0.2,
                         "targets": [{"address": address, "mode": "tcp"}]}, name="wait", ignore_errors=True)]
    try:
        run = run_playbook(tasks, tmp_path)
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
        for conn in accepted:
            conn.close()
    assert run.rc == 0, run.output
    out = result_of(run)
    (entry,) = out["targets"]
    assert entry["reachable"] is False and entry["reason"] == "proxy_timeout"
    assert entry["error"] == ("the SocksPort 127.0.0.1:%d accepted the connection but did not answer the SOCKS5 "
                              "greeting in time (is it a SocksPort?) (timeout 1.5s)" % port)
    assert 1.4 <= out["elapsed"] < 5
    assert run.task("wait")["status"] == "failed"
    waited = run.task("wait")["result"]
    assert "did not answer within 3s" in waited["msg"] and "did not answer the SOCKS5 greeting" in waited["msg"]
    assert 2.9 <= waited["elapsed"] < 6
    assert waited["targets"][0]["attempts"] >= 2
    assert len(accepted) >= 3


def test_wait_goes_on_once_the_service_comes_up(privnet, extended, http_backend, tmp_path):
    """Probing starts first (wait mode); the service is created once the client's tor has found no descriptor for
    it (its HS_DESC REQUESTED fetches all FAILED: the probe's first attempt refused)."""
    blob, address = new_key()
    outcome = {}

    def play():
        outcome["run"] = run_playbook([probe_task({
            "socks_port": extended.port, "wait": True, "deadline": 90, "delay": 0.5, "timeout": 20,
            "targets": [{"address": address, "body_contains": http_backend.token}]})], tmp_path)

    sid = address[:-len(".onion")]
    client = Watch(extended.node, ["HS_DESC"])     # the probe's first attempt, seen from the client's tor
    thread = threading.Thread(target=play)
    t0 = time.monotonic()
    thread.start()
    try:
        while True:     # until the client's tor asked the HSDirs for the address and every one said it has none
            asked = [text.split() for _t, text in client.poll() if text.split()[2:3] == [sid]]
            requested = len([w for w in asked if w[1] == "REQUESTED"])
            if requested and len([w for w in asked if w[1] == "FAILED"]) >= requested:
                break
            assert thread.is_alive() and time.monotonic() - t0 < 120, \
                "the probe's first attempt never reached the client's HSDir fetches: %s" % client.seen[-20:]
            time.sleep(0.2)
    finally:
        client.close()
    key_type, key = blob.split(":", 1)
    onion_tor = privnet.onion
    with connect(port=onion_tor.control_port, cookie_path=onion_tor.cookie_path) as ctl:
        created = time.monotonic()
        svc = ctl.add_onion([(80, "127.0.0.1:%d" % http_backend.port)], key_type=key_type, key_blob=key)
        assert svc["service_id"] + ".onion" == address
        thread.join(timeout=150)
        done = time.monotonic()
        ctl.del_onion(svc["service_id"])
    run = outcome["run"]
    assert run.rc == 0, run.output
    (entry,) = result_of(run)["targets"]
    assert entry["reachable"] is True and entry["status"] == 200
    assert entry["attempts"] >= 2          # it was probed, and refused, before the service existed
    _say("wait mode: service created %.1fs after the playbook started; the playbook ended %.1fs after that; "
         "%d attempts, last time to first byte %.3fs" % (created - t0, done - created, entry["attempts"],
                                                         entry["time_to_first_byte"]))


def test_wait_fails_after_the_deadline(privnet, extended, service, tmp_path):
    missing = unknown_onion()
    run = run_playbook([probe_task({"socks_port": extended.port, "wait": True, "deadline": 5, "delay": 1,
                                    "targets": [{"address": service}, {"address": missing, "port": 443}]})],
                       tmp_path)
    assert run.rc == 2
    failed = run.task("probe")["result"]
    assert failed["msg"].startswith("1 of 2 onion services did not answer within 5s through SocksPort 127.0.0.1:%d: "
                                    "%s:443 (tor answered 0xF0: onion service descriptor can not be found"
                                    % (extended.port, missing))
    assert failed["unanswered"] == [missing + ":443"]
    ok, bad = failed["targets"]
    assert ok["reachable"] is True and ok["attempts"] == 1
    assert bad["reachable"] is False and bad["attempts"] >= 3 and bad["reason"] == "descriptor_not_found"
    assert 5 - 1 - 0.5 <= failed["elapsed"] < 10     # the last pause does not cross the deadline
    _say("wait mode failed after %.1fs: %s" % (failed["elapsed"], failed["msg"]))


def test_time_to_first_byte_next_to_curl(privnet, service, http_backend, tmp_path):
    """The module's time to first byte and curl's (--socks5-hostname, time_starttransfer) on the same
    onion, through the same SocksPort, CURL_ROUNDS each. Printed; asserted only loosely."""
    curl = shutil.which("curl")
    if not curl:
        pytest.skip("curl is not installed")
    run = run_playbook([probe_task({"socks_port": privnet.socks_port, "targets": [{"address": service}]},
                                   loop=list(range(CURL_ROUNDS)))], tmp_path)
    assert run.rc == 0, run.output
    ours = []
    for item in result_of(run)["results"]:
        (entry,) = item["targets"]
        assert entry["reachable"] is True
        ours.append(entry["time_to_first_byte"])
    theirs = []
    for _ in range(CURL_ROUNDS):
        proc = subprocess.run([curl, "-sS", "-o", "/dev/null", "--max-time", "30", "-w", "%{http_code} %{time_starttransfer}",
                               "--socks5-hostname", "127.0.0.1:%d" % privnet.socks_port, "http://%s/" % service],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        code, seconds = proc.stdout.split()
        assert code == "200"
        theirs.append(float(seconds))
    _say("time to first byte on %s, median of %d: tor_onion_probe %.2f ms, curl %.2f ms (ours %s; curl %s)"
         % (service, CURL_ROUNDS, statistics.median(ours) * 1000, statistics.median(theirs) * 1000,
            ", ".join("%.1f" % (v * 1000) for v in ours), ", ".join("%.1f" % (v * 1000) for v in theirs)))
    assert statistics.median(ours) < 10 and statistics.median(theirs) < 10


def test_address_check_agrees_with_tor(extended):
    """Random 56-character addresses with a good checksum: the module refuses exactly those tor
    refuses as invalid (0xF6, ExtendedErrors); the others tor looks up (0xF0)."""
    proxy = socks.SocksProxy("127.0.0.1", extended.port)
    refused = looked_up = 0
    addresses = [onion.onion_address(os.urandom(32)) + ".onion"
                 for _ in range(int(os.environ.get("ONIONLAB_PROBE_KEYS", "24")))]
    addresses += [unknown_onion() for _ in range(3)]         # keys tor accepts: about 1 in 16 random ones
    for address in addresses:
        try:
            probe.normalize_address(address)
            ours = True
        except probe.ProbeInputError:
            ours = False
        try:
            socks.connect(proxy, address, 80, time.monotonic() + 30).close()
            raise AssertionError("%s answered" % address)
        except socks.SocksRefused as exc:
            assert exc.code in (0xF0, 0xF6), exc
            assert ours == (exc.code == 0xF0), (address, ours, exc.code)
        refused += not ours
        looked_up += ours
    _say("address check vs tor: %d refused by both, %d accepted by both" % (refused, looked_up))
    assert refused and looked_up
