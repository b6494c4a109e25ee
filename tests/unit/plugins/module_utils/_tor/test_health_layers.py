# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""health_layers.py (issue 38.1): circuit-status parsed into a service's introduction circuits (lines as tor 0.4.9.11
wrote them on the private network), the SocksPort from net/listeners/socks, the port reach probes, the backend probe
against real sockets, the tor process found from a /proc of recorded text (hung vs unreachable), the reach summary
and the order in which the verdict names layers."""

import datetime
import os
import socket

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import health_layers as hl

SID = "crxismllbni4rnh2zeew3y345pptfhxsnnyhnhem76x3kjgk3cz442yd"
A1, A2, R0, R2 = ("18DD24CEA7B7D50EF8E21AB52B1EFD180C1BC1D2", "67FC55965E0D5BA460E5E0C613C4B51FF8166C3F",
                  "7E3F432FD5F80F289C28867CA44468C0CB6CDD23", "33CEE45155BFCFC28F4913B3428B1D3B1CCB6E78")
CIRCUITS = """\
4 BUILT $%(a1)s~auth1,$%(r0)s~relay0 BUILD_FLAGS=IS_INTERNAL,NEED_UPTIME PURPOSE=HS_VANGUARDS TIME_CREATED=2026-12-06T02:05:36.496901
5 BUILT $%(a1)s~auth1,$%(a2)s~auth2,$%(r2)s~relay2,$%(a1)s~auth1 BUILD_FLAGS=IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_ESTABLISHED REND_QUERY=%(sid)s TIME_CREATED=2026-12-06T02:05:36.497025
8 BUILT $%(a1)s~auth1,$%(a2)s~auth2,$%(r2)s~relay2,$%(r0)s~relay0 BUILD_FLAGS=IS_INTERNAL,NEED_UPTIME PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_ESTABLISHED REND_QUERY=%(sid)s TIME_CREATED=2026-12-06T01:05:36.497264
9 EXTENDED $%(a1)s~auth1 BUILD_FLAGS=IS_INTERNAL PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_CONNECTING REND_QUERY=%(sid)s TIME_CREATED=2026-12-06T02:05:36.497359
10 BUILT $%(a1)s~auth1,$%(r2)s~relay2 BUILD_FLAGS=IS_INTERNAL PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_ESTABLISHED REND_QUERY=%(other)s TIME_CREATED=2026-12-06T02:05:36.499449
26 BUILT $%(a1)s~auth1,$%(a2)s~auth2 BUILD_FLAGS=IS_INTERNAL,NEED_CAPACITY PURPOSE=HS_CLIENT_REND HS_STATE=HSCR_JOINED REND_QUERY=%(sid)s TIME_CREATED=2026-12-06T02:05:38.435524 SOCKS_USERNAME="a1" SOCKS_PASSWORD="x"
30 LAUNCHED BUILD_FLAGS=NEED_CAPACITY PURPOSE=GENERAL TIME_CREATED=2026-12-06T02:05:39.184664
""" % {"a1": A1, "a2": A2, "r0": R0, "r2": R2, "sid": SID, "other": "b" * 56}
NOW = datetime.datetime(2026, 12, 6, 2, 6, 36, tzinfo=datetime.timezone.utc)


def test_circuit_status_parsed_and_the_services_established_intro_circuits_found():
    circuits = hl.parse_circuits(CIRCUITS)
    assert [c["id"] for c in circuits] == ["4", "5", "8", "9", "10", "26", "30"]
    assert circuits[1]["path"][-1] == (A1, "auth1") and circuits[1]["keywords"]["REND_QUERY"] == SID
    assert circuits[-1]["path"] == [] and circuits[-1]["status"] == "LAUNCHED"
    routers = {A1: ["Authority", "Running", "Valid"], R0: ["Valid"]}
    found = hl.intro_circuits(circuits, SID, routers, now=NOW)
    assert found == [
        {"id": "5", "relay": A1, "nickname": "auth1", "age_seconds": 60, "in_consensus": True, "running": True},
        {"id": "8", "relay": R0, "nickname": "relay0", "age_seconds": 3660, "in_consensus": True, "running": False}]
    layer = hl.introduction_layer(found, 3, 0.01)
    assert layer["ok"] is True and layer["established"] == 2 and layer["configured"] == 3
    assert "2 introduction circuits established (3 configured per descriptor" in layer["evidence"]
    assert "ages 60 s to 61 min" in layer["evidence"] and "1 at relays without the Running flag (relay0)" in layer[
        "evidence"]
    # without a consensus: nothing said about the relays, still usable
    unknown = hl.intro_circuits(circuits, SID, None, now=NOW)
    assert [c["in_consensus"] for c in unknown] == [None, None] and hl.introduction_layer(unknown, 3)["ok"] is True


def test_introduction_fails_without_a_usable_intro_circuit():
    assert hl.introduction_layer([], 3)["ok"] is False
    gone = hl.intro_circuits(hl.parse_circuits(CIRCUITS), SID, {R2: ["Running"]}, now=NOW)
    layer = hl.introduction_layer(gone, None)
    assert layer["ok"] is False and "2 at relays not in tor's consensus (auth1, relay0)" in layer["evidence"]


@pytest.mark.parametrize("value, port", [
    ('"127.0.0.1:9050"', 9050), ('"[::1]:9050" "127.0.0.1:9150"', 9150), ('"unix:/run/tor/socks"', None),
    ('"0.0.0.0:9050"', None), ("", None), ('"127.0.0.1:auto"', None)])
def test_socks_listener_on_127_0_0_1_only(value, port):
    assert hl.socks_listener(value) == port


def test_reach_port_prefers_web_ports_and_probes_only_a_configured_one():
    ports = [{"port": 22}, {"port": 443}, {"port": 80}]
    assert hl.reach_port(ports, (80, 443)) == (80, "http", False)
    assert hl.reach_port(ports, (443, 80)) == (443, "http", True)
    assert hl.reach_port([{"port": 8333}, {"port": 22}], (80, 443)) == (22, "tcp", False)
    assert hl.reach_port([], (80,)) is None and hl.reach_port(None, (80,)) is None


def test_port_targets_with_tors_defaults():
    assert hl.port_target({"port": 80, "target_address": None, "target_port": None}) == ("tcp", ("127.0.0.1", 80))
    assert hl.port_target({"port": 80, "target_address": "::1", "target_port": 8080}) == ("tcp", ("::1", 8080))
    assert hl.port_target({"port": 80, "target_address": 'unix:"/run/a b.sock"'}) == ("unix", "/run/a b.sock")
    assert hl.show_target("tcp", ("::1", 8080)) == "[::1]:8080"


def test_backend_layer_against_real_sockets(tmp_path):
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen(1)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    free = closed.getsockname()[1]
    closed.close()
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(tmp_path / "s"))
    unix.listen(1)
    try:
        up = listening.getsockname()[1]
        layer = hl.backend_layer([{"port": 80, "target_address": "127.0.0.1", "target_port": up},
                                  {"port": 81, "target_address": "unix:%s" % (tmp_path / "s")}])
        assert layer["ok"] is True and layer["evidence"] == "127.0.0.1:%d accepts, unix:%s accepts" % (
            up, tmp_path / "s")
        layer = hl.backend_layer([{"port": 80, "target_address": "127.0.0.1", "target_port": up},
                                  {"port": 82, "target_address": "127.0.0.1", "target_port": free},
                                  {"port": 83, "target_address": "unix:%s" % (tmp_path / "none")}])
        assert layer["ok"] is False and [p["ok"] for p in layer["ports"]] == [True, False, False]
        assert layer["evidence"].startswith("127.0.0.1:%d refuses (Connection refused; port 82)" % free)
        assert "No such file or directory" in layer["evidence"]
        assert hl.backend_layer(None)["ok"] is None
    finally:
        listening.close()
        unix.close()


def _proc(tmp_path, pid, state, port=9051, fd_inode="4242"):
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True, exist_ok=True)
    (proc / "net" / "tcp").write_text(
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 0100007F:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000   105        0 4242 1 0 100 0 0 10 0\n"
        % port)
    (proc / "net" / "unix").write_text("Num       RefCount Protocol Flags    Type St Inode Path\n"
                                       "0000000000000000: 00000002 00000000 00010000 0001 01 777 /run/tor/control\n")
    base = proc / str(pid)
    (base / "fd").mkdir(parents=True)
    (base / "stat").write_text("%d (tor) %s 1 %d 0 0" % (pid, state, pid))
    os.symlink("socket:[%s]" % fd_inode, str(base / "fd" / "7"))
    return str(proc)


def test_a_stopped_tor_is_hung_a_gone_one_unreachable(tmp_path):
    proc = _proc(tmp_path, 321, "T")
    assert hl.find_tor_pid(control_port=9051, proc=proc)[0] == 321
    layer = hl.tor_unanswered("tor at port 127.0.0.1:9051 did not answer within 3.0s", control_port=9051, proc=proc)
    assert layer["state"] == "hung" and layer["pid"] == 321 and layer["process_state"] == "T"
    assert layer["evidence"].startswith("tor's process 321 (tor, stopped by a signal) lives but its control port")
    # refused, not a timeout: not hung even though the process lives
    assert hl.tor_unanswered("refused", control_port=9051, proc=proc, timed_out=False)["state"] == "unreachable"
    # nothing listens: unreachable; a pid file naming a dead process: unreachable too
    layer = hl.tor_unanswered("timed out", control_port=9999, proc=proc)
    assert layer["state"] == "unreachable" and "nothing listens on the control port" in layer["evidence"]
    (tmp_path / "tor.pid").write_text("999\n")
    layer = hl.tor_unanswered("timed out", control_port=9999, pid_file=str(tmp_path / "tor.pid"), proc=proc)
    assert layer["state"] == "unreachable" and "process 999 (the PID in" in layer["evidence"]


def test_unix_control_socket_owner(tmp_path):
    proc = _proc(tmp_path, 55, "S", fd_inode="777")
    assert hl.find_tor_pid(control_socket="/run/tor/control", proc=proc) == (
        55, "the owner of the control socket's listening socket")
    assert hl.process_state(55, proc) == ("S", "tor") and hl.process_state(56, proc) is None


def test_reach_summary_names_the_socks_error_and_the_descriptor_fetch():
    failed = [{"reachable": False, "status": None, "reason": "introduction_failed", "error": "x", "socks_reply": 0xF2,
               "seconds": 20.0}] * 3
    layer = hl.summarize_attempts(failed, 80, 60.2, 1)
    assert layer["ok"] is False and layer["evidence"] == (
        "0 of 3 fresh connections to port 80 in 60 s, SOCKS error 0xF2 introduction failed; the descriptor fetched "
        "anew from the HSDirs 1 time")
    answered = [{"reachable": True, "status": 200, "reason": None, "error": None, "socks_reply": None, "seconds": 1.23}]
    layer = hl.summarize_attempts(answered, 80, 1.3, 0)
    assert layer["ok"] is True and layer["evidence"].startswith("1 of 1 fresh connection to port 80 answered (HTTP 200")
    assert "came from tor's client cache" in layer["evidence"]


def test_first_failed_layer_and_reasons_failed_first():
    layers = {"tor": hl.layer(True, "answered"), "backend": hl.layer(True, "127.0.0.1:8080 accepts"),
              "descriptor": hl.layer(True, "6 of 6"), "introduction": hl.layer(True, "3 established"),
              "reach": hl.layer(False, "0 of 3")}
    assert hl.first_failed(layers) == "reach"
    assert hl.reasons(layers) == ["reach: 0 of 3", "backend: 127.0.0.1:8080 accepts", "descriptor: 6 of 6",
                                  "introduction: 3 established"]
    layers["backend"] = hl.layer(False, "refuses")
    assert hl.first_failed(layers) == "backend"
    layers["reach"] = hl.not_checked("no SocksPort")
    layers["backend"]["ok"] = True
    assert hl.first_failed(layers) is None and hl.reasons(layers)[-1] == "reach: not checked: no SocksPort"
