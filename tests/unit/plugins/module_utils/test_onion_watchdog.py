# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watchdog's ladder (watchdog.py) against scripted checks: one step per unhealthy run, the next only when
the one before did not help; no repair when pending, bootstrapping, report-only, while a run holds the lock or
tor does not answer; restarts at most once per interval; state and metrics kept between runs. Beside the ladder: a
hung tor restarted after hung_checks runs in a row, a backend's unit restarted (backend_units)."""

import io
import json
import os

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils import _onion_watchdog as watchdog
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion_health
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import ConnectionFailed
from ansible_collections.onionlab.tor.plugins.module_utils._tor.lock import TorLock

ADDRESS = "a" * 56 + ".onion"


INTRO_CIRCUITS = "".join(
    "%d BUILT $%s~g,$%s~m,$%s~i%d PURPOSE=HS_SERVICE_INTRO HS_STATE=HSSI_ESTABLISHED REND_QUERY=%s "
    "TIME_CREATED=2026-12-06T10:00:00.000000\n" % (n, "A" * 40, "B" * 40, ("%X" % n) * 40, n, ADDRESS[:-6])
    for n in (1, 2, 3))


class FakeCtl(object):
    def __init__(self, data_dir):
        self.signals = []
        self.requests = []
        self.data_dir = data_dir
        self.sock = type("S", (), {"where": "fake"})()

    def get_info(self, *keys):
        return {"circuit-status": INTRO_CIRCUITS}

    def request(self, command, args):
        self.requests.append([command] + list(args))

    def del_onion(self, sid):
        self.requests.append(["DEL_ONION", sid])

    def add_onion(self, ports, key_type=None, key_blob=None, flags=(), client_auth_v3=(), keywords=None):
        self.requests.append(["ADD_ONION", key_type, ports])
        return {"service_id": ADDRESS[:-6]}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def signal(self, name):
        self.signals.append(name)

    def get_conf(self, *keys):
        return [("DataDirectory", self.data_dir)]


@pytest.fixture
def bed(tmp_path, monkeypatch):
    script = {"states": [], "ready": True, "posted": []}

    def run_check(ctl, addresses=None, timeout=None, min_hsdirs=None, **options):
        state, kind = script["states"].pop(0)
        entry = {"address": ADDRESS, "type": kind, "state": state, "reasons": ["scripted %s" % state],
                 "counts": {"current": 6 if state == "healthy" else 0},
                 "hsdirs": [{"fingerprint": "%040X" % i, "result": "current" if state == "healthy" else "missing"}
                            for i in range(6)]}
        return {"services": [entry]}, {ADDRESS: object()}

    monkeypatch.setattr(onion_health, "run_check", run_check)
    monkeypatch.setattr(onion_health, "bootstrapped", lambda ctl: (script["ready"], "Done"))
    monkeypatch.setattr(onion_health, "reference_text", lambda service: "hs-descriptor 3\n")
    monkeypatch.setattr(onion_health, "repost", lambda ctl, address, text, fps, timeout:
                        script["posted"].append(fps) or {"uploaded": len(fps), "failed": 0, "no_answer": 0})
    (tmp_path / "tor").mkdir()
    ctl = FakeCtl(str(tmp_path / "tor"))
    clock = {"now": 1000.0}
    restarts = []

    def run(states, **config):
        script["states"] = list(states)
        out = io.StringIO()
        cfg = dict({"state_file": str(tmp_path / "state.json"), "metrics_file": str(tmp_path / "wd.prom"),
                    "confirm_checks": 1}, **config)
        for _ in states:
            watchdog.Watchdog(cfg, connect=lambda: ctl, restart=lambda argv=None: restarts.append(
                clock["now"] if argv is None else argv) or (True, ""),
                              clock=lambda: clock["now"], out=out).run()
            clock["now"] += 300
        return out.getvalue().splitlines()

    return {"run": run, "ctl": ctl, "script": script, "restarts": restarts, "tmp": tmp_path, "clock": clock}


def _actions(lines):
    return [l.split(" action=")[1].split(" ")[0] for l in lines]


def test_ladder_one_step_per_run_then_healthy_resets_it(bed):
    lines = bed["run"]([("unhealthy", "persistent")] * 3 + [("healthy", "persistent"), ("unhealthy", "persistent")])
    assert _actions(lines) == ["repost", "reload", "restart", "none", "repost"], lines
    assert "healthy again after step 3 (restart)" in lines[3]
    assert bed["ctl"].signals == ["RELOAD"] and len(bed["restarts"]) == 1
    assert len(bed["script"]["posted"][0]) == 6
    assert all(l.startswith("onionlab-watchdog: service=%s state=" % ADDRESS) for l in lines)
    state = json.loads((bed["tmp"] / "state.json").read_text())
    assert state["services"][ADDRESS]["repairs"] == {"repost": 2, "reload": 1, "restart": 1}
    metrics = (bed["tmp"] / "wd.prom").read_text()
    assert 'onionlab_watchdog_repairs_total{onion="%s",step="restart"} 1' % ADDRESS[:-6] in metrics
    assert 'onionlab_watchdog_failures_total{onion="%s"} 4' % ADDRESS[:-6] in metrics
    assert 'onionlab_watchdog_checks_total{onion="%s"} 5' % ADDRESS[:-6] in metrics
    assert "# TYPE onionlab_watchdog_healthy gauge" in metrics


def test_restart_at_most_once_per_interval_the_cheaper_steps_meanwhile(bed):
    lines = bed["run"]([("unhealthy", "persistent")] * 6, restart_interval=3600)
    assert _actions(lines) == ["repost", "reload", "restart", "repost", "reload", "repost"], lines
    assert "restart held back: tor was restarted 300 s ago" in lines[3]
    assert "restart held back: tor was restarted 900 s ago" in lines[5]
    assert len(bed["restarts"]) == 1


def test_an_ephemeral_service_skips_the_reload(bed):
    assert _actions(bed["run"]([("unhealthy", "ephemeral")] * 2)) == ["repost", "restart"]
    assert bed["ctl"].signals == []


@pytest.mark.parametrize("setting,expected", [
    ({"report_only": True}, "report only"),
    ({"ready": False}, "tor is bootstrapping"),
])
def test_no_repair_in_report_only_mode_or_while_bootstrapping(bed, setting, expected):
    if "ready" in setting:
        bed["script"]["ready"] = False
        setting = {}
    lines = bed["run"]([("unhealthy", "persistent")] * 3, **setting)
    assert _actions(lines) == ["none"] * 3 and all(expected in l for l in lines), lines
    assert bed["ctl"].signals == [] and bed["restarts"] == [] and bed["script"]["posted"] == []


def test_pending_is_never_repaired(bed):
    lines = bed["run"]([("pending", "persistent")] * 3)
    assert _actions(lines) == ["none"] * 3 and "nothing to judge" in lines[0]
    assert 'onionlab_watchdog_healthy{onion="%s"} -1' % ADDRESS[:-6] in (bed["tmp"] / "wd.prom").read_text()


def test_no_repair_while_a_run_of_the_collection_holds_the_lock(bed):
    with TorLock(bed["ctl"].data_dir):       # as a role run holds it (another process in real life)
        import ansible_collections.onionlab.tor.plugins.module_utils._tor.lock as lockmod
        held = dict(lockmod._HELD)
        lockmod._HELD.clear()               # seen from the watchdog, the lock is someone else's
        try:
            lines = bed["run"]([("unhealthy", "persistent")], lock_wait=0.2)
        finally:
            lockmod._HELD.update(held)
    assert _actions(lines) == ["none"] and "holds the tor's lock" in lines[0], lines


def test_tor_not_answering_is_reported_never_repaired(bed, tmp_path):
    def refuse():
        raise ConnectionFailed("tor at /run/tor/control refused the connection")
    out = io.StringIO()
    state = watchdog.Watchdog({"state_file": str(tmp_path / "s.json"), "metrics_file": str(tmp_path / "m.prom"),
                               "control_socket": str(tmp_path / "none"), "pid_file": str(tmp_path / "none.pid")},
                              connect=refuse, restart=lambda: pytest.fail("restarted"), out=out).run()
    assert state["tor_up"] == 0 and "tor=unreachable" in out.getvalue() and "action=none" in out.getvalue()
    assert "onionlab_watchdog_tor_up 0" in (tmp_path / "m.prom").read_text()


def test_a_repair_only_after_confirm_checks_unhealthy_checks_in_a_row(bed):
    """A service tor has just built and not uploaded yet reads unhealthy once: not repaired."""
    lines = bed["run"]([("unhealthy", "persistent"), ("healthy", "persistent"), ("unhealthy", "persistent"),
                        ("unhealthy", "persistent"), ("unhealthy", "persistent")], confirm_checks=2)
    assert _actions(lines) == ["none", "none", "repost", "reload"], lines
    assert "unhealthy 1 time(s) in a row; a repair after 2" in lines[0]


def test_config_file_unknown_setting_refused(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"restart_intervall": 5}))
    with pytest.raises(ValueError, match="unknown settings restart_intervall"):
        watchdog.load_config(str(path))
    assert watchdog.main([str(path)]) == 2


def test_an_exposed_backend_is_a_journal_line_and_a_metric_never_a_repair(bed, monkeypatch):
    """onion_health's `exposed` (listeners.py): one line per exposed port, onionlab_watchdog_backend_exposed 1 for it
    and 0 for the service's other ports; a run that could not check says so and writes no such sample."""
    service = type("Service", (), {"ports": [{"port": 80, "target_address": "127.0.0.1", "target_port": 8080},
                                            {"port": 443, "target_address": "unix:/run/web.sock", "target_port": None}]})()
    checks = [{"exposed": [{"port": 80, "target": "127.0.0.1:8080", "listening_on": ["0.0.0.0:8080", "[::]:8080"]}]},
              {"exposed": None, "problem": "tor's process 77 is not on this host"}]

    def run_check(ctl, addresses=None, timeout=None, min_hsdirs=None, **options):
        check = checks.pop(0)
        entry = {"address": ADDRESS, "type": "persistent", "state": "healthy", "reasons": ["scripted"],
                 "counts": {"current": 6}, "hsdirs": [], "exposed": check["exposed"]}
        return {"services": [entry], "exposure": {"checked": check["exposed"] is not None,
                                                   "problem": check.get("problem")}}, {ADDRESS: service}

    monkeypatch.setattr(onion_health, "run_check", run_check)
    lines = bed["run"]([("healthy", "persistent")])
    assert lines == ["onionlab-watchdog: service=%s backend=exposed port=80 target=127.0.0.1:8080 "
                     "listening_on=0.0.0.0:8080,[::]:8080 action=none result=\"a scan of this host's addresses finds "
                     "the backend and ties the service to the host; bind the backend to 127.0.0.1 or a unix socket\""
                     % ADDRESS], lines
    metrics = (bed["tmp"] / "wd.prom").read_text()
    onion = ADDRESS[:-6]
    assert "# TYPE onionlab_watchdog_backend_exposed gauge" in metrics
    assert 'onionlab_watchdog_backend_exposed{onion="%s",port="80"} 1' % onion in metrics
    assert 'onionlab_watchdog_backend_exposed{onion="%s",port="443"} 0' % onion in metrics
    assert bed["ctl"].signals == [] and bed["restarts"] == []

    lines = bed["run"]([("healthy", "persistent")])
    assert lines == ['onionlab-watchdog: backend=unchecked evidence="tor\'s process 77 is not on this host" '
                     'action=none result="whether a backend also listens on a non-loopback address is not known"']
    assert "onionlab_watchdog_backend_exposed{" not in (bed["tmp"] / "wd.prom").read_text()


def _layered(state, failed, oks):
    """A scripted entry with layers: oks {layer: True/False/None}."""
    layers = dict((name, {"ok": ok, "evidence": "%s evidence" % name}) for name, ok in oks.items())
    return {"address": ADDRESS, "type": "persistent", "state": state, "failed_layer": failed, "layers": layers,
            "reasons": ["%s: %s evidence" % (n, n) for n in oks], "counts": {"current": 6},
            "hsdirs": [{"fingerprint": "%040X" % i, "result": "current" if oks["descriptor"] else "missing"}
                       for i in range(6)]}


def test_a_layer_other_than_the_descriptor_is_named_never_repaired_as_a_descriptor(bed, monkeypatch):
    """Backend or reach failing with the descriptor fine: no repost, reload or restart; the line names the layer
    and carries every layer; one gauge per layer (1, 0, -1 not checked). A failed descriptor still climbs the ladder."""
    checks = [_layered("unhealthy", "backend", {"tor": True, "backend": False, "descriptor": True,
                                                "introduction": True, "reach": False}),
              _layered("unhealthy", "reach", {"tor": True, "backend": True, "descriptor": True,
                                              "introduction": True, "reach": False}),
              _layered("unhealthy", "descriptor", {"tor": True, "backend": True, "descriptor": False,
                                                   "introduction": True, "reach": None})]
    def run_check(ctl, **options):
        return {"services": [checks.pop(0)]}, {ADDRESS: object()}
    monkeypatch.setattr(onion_health, "run_check", run_check)
    lines = bed["run"]([None, None, None])
    assert _actions(lines) == ["none", "close-intro", "repost"], lines
    assert 'layer=backend layers="tor:ok backend:fail descriptor:ok introduction:ok reach:fail"' in lines[0]
    assert "the backend layer failed, the descriptor is fine: no descriptor repair" in lines[0]
    assert "layer=reach" in lines[1] and "closed 3 of its 3 introduction circuits" in lines[1]
    assert "layer=descriptor" in lines[2] and "reach:unchecked" in lines[2]
    assert bed["ctl"].signals == [] and bed["restarts"] == [] and len(bed["script"]["posted"]) == 1
    metrics = (bed["tmp"] / "wd.prom").read_text()
    onion = ADDRESS[:-6]
    assert "# TYPE onionlab_watchdog_layer_ok gauge" in metrics
    for name, value in (("tor", 1), ("backend", 1), ("descriptor", 0), ("introduction", 1), ("reach", -1)):
        assert 'onionlab_watchdog_layer_ok{onion="%s",layer="%s"} %d' % (onion, name, value) in metrics, metrics


def _reach_failing(kind):
    entry = _layered("unhealthy", "reach", {"tor": True, "backend": True, "descriptor": True, "introduction": True,
                                            "reach": False})
    return dict(entry, type=kind)


def test_reach_failing_with_the_descriptor_fine_climbs_the_intro_ladder(bed, monkeypatch):
    """A persistent service that tor publishes but no fresh client reaches: close its introduction circuits (every
    one of that service), then restart tor; restart_interval holds the restart back and the ladder closes the
    circuits again; healthy again names the step. repairs_total counts close-intro."""
    checks = [_reach_failing("persistent") for _ in range(4)] + [_layered("healthy", None, {
        "tor": True, "backend": True, "descriptor": True, "introduction": True, "reach": True})]
    monkeypatch.setattr(onion_health, "run_check", lambda ctl, **o: ({"services": [checks.pop(0)]}, {ADDRESS: object()}))
    lines = bed["run"]([None] * 5, restart_interval=3600)
    assert _actions(lines) == ["close-intro", "restart", "close-intro", "close-intro", "none"], lines
    assert [r for r in bed["ctl"].requests if r[0] == "CLOSECIRCUIT"] == [["CLOSECIRCUIT", n] for n in "123" * 3]
    assert len(bed["restarts"]) == 1 and "restart held back: tor was restarted 300 s ago" in lines[2]
    assert "healthy again after step 1 (close-intro)" in lines[4]
    assert 'onionlab_watchdog_repairs_total{onion="%s",step="close-intro"} 3' % ADDRESS[:-6] in \
        (bed["tmp"] / "wd.prom").read_text()


def _silent_hsdirs(entry, silent, answered="current"):
    """The entry with `silent` of its six HSDirs giving no answer in time, the others `answered`."""
    return dict(entry, hsdirs=[{"fingerprint": "%040X" % i, "result": "no_answer" if i < silent else answered}
                               for i in range(6)])


def test_no_restart_while_relays_hang_the_cheaper_step_again(bed, monkeypatch):
    """Reach failing while 3 of the 6 HSDirs give no answer in time and the others answer (relays of the network
    hang; this tor builds circuits): the intro ladder closes the introduction circuits again instead of restarting
    tor, and the line says why; the descriptor ladder the same (repost, reload, then repost again)."""
    checks = [_silent_hsdirs(_reach_failing("persistent"), 3) for _ in range(3)]
    monkeypatch.setattr(onion_health, "run_check", lambda ctl, **o: ({"services": [checks.pop(0)]}, {ADDRESS: object()}))
    lines = bed["run"]([None] * 3, restart_interval=0)
    assert _actions(lines) == ["close-intro", "close-intro", "close-intro"], lines
    assert bed["restarts"] == [] and all(
        "restart held back: 3 of 6 responsible HSDirs gave no answer in time while 3 answered: relays of the "
        "network hang" in l for l in lines[1:]), lines
    descriptor = [_silent_hsdirs(_layered("unhealthy", "descriptor", {"tor": True, "descriptor": False}), 2, "missing")
                  for _ in range(3)]
    monkeypatch.setattr(onion_health, "run_check",
                        lambda ctl, **o: ({"services": [descriptor.pop(0)]}, {ADDRESS: object()}))
    lines = bed["run"]([None] * 3, restart_interval=0)
    assert _actions(lines) == ["repost", "reload", "repost"], lines
    assert bed["restarts"] == [] and "2 of 6 responsible HSDirs gave no answer in time while 4 answered" in lines[2]


@pytest.mark.parametrize("silent", [0, 6])
def test_a_restart_when_no_hsdir_or_every_hsdir_is_silent(bed, monkeypatch, silent):
    """No HSDir silent (nothing says the network hangs), or none answering (this tor may be the one at fault): the
    intro ladder's restart is not held back."""
    checks = [_silent_hsdirs(_reach_failing("persistent"), silent) for _ in range(2)]
    monkeypatch.setattr(onion_health, "run_check", lambda ctl, **o: ({"services": [checks.pop(0)]}, {ADDRESS: object()}))
    lines = bed["run"]([None] * 2, restart_interval=0)
    assert _actions(lines) == ["close-intro", "restart"] and len(bed["restarts"]) == 1, lines
    assert watchdog.hanging_hsdirs(_silent_hsdirs({}, silent)) is None


def test_an_ephemeral_service_with_its_key_kept_is_added_again_before_a_restart(bed, monkeypatch):
    """Step 2 for an ephemeral service the collection recorded with its key kept: DEL_ONION and ADD_ONION with that
    key (new introduction points, the same address), no restart; then tor restarted; never the key in a line."""
    key = "ED25519-V3:" + "k" * 86 + "=="
    monkeypatch.setattr(watchdog.ephemeral, "read_ephemeral_record", lambda d: {ADDRESS[:-6]: {
        "ports": [{"port": 80, "target": "127.0.0.1:8080"}]}})
    monkeypatch.setattr(watchdog.ephemeral, "kept_key", lambda d, sid: key)
    monkeypatch.setattr(watchdog.ephemeral, "add_back", lambda ctl, sid, view, k: ctl.add_onion(
        [(80, "127.0.0.1:8080")], key_type=k.partition(":")[0]) and sid)
    checks = [_reach_failing("ephemeral") for _ in range(3)]
    monkeypatch.setattr(onion_health, "run_check", lambda ctl, **o: ({"services": [checks.pop(0)]}, {ADDRESS: object()}))
    lines = bed["run"]([None] * 3, restart_interval=0, readd_ephemeral=False)
    assert _actions(lines) == ["close-intro", "readd", "restart"], lines
    assert ["DEL_ONION", ADDRESS[:-6]] in bed["ctl"].requests and "same address, new introduction points" in lines[1]
    assert len(bed["restarts"]) == 1 and not any("k" * 20 in l for l in lines)


def test_a_tor_that_accepts_but_never_answers_is_hung(bed, tmp_path, monkeypatch):
    """ControlTimeout and tor's process alive (a recorded /proc: the control port's socket held by PID 321, stopped):
    tor=hung with its PID, no repair, onionlab_watchdog_tor_hung 1; the layer gauges of known services say tor 0."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import ControlTimeout
    _hung_proc(tmp_path, monkeypatch)
    bed["run"]([("healthy", "persistent")])

    def silent():
        raise ControlTimeout("tor at port 127.0.0.1:9043 did not answer within 10.0s")
    out = io.StringIO()
    state = watchdog.Watchdog({"state_file": str(tmp_path / "state.json"), "metrics_file": str(tmp_path / "wd.prom"),
                               "control_port": 9043}, connect=silent, restart=lambda: pytest.fail("restarted"),
                              out=out).run()
    line = out.getvalue()
    assert state["tor_up"] == 0 and state["tor_hung"] == 1
    assert line.startswith("onionlab-watchdog: tor=hung pid=321 evidence=\"tor's process 321 (tor, stopped by a "
                           "signal) lives") and "action=none" in line, line
    metrics = (tmp_path / "wd.prom").read_text()
    assert "onionlab_watchdog_tor_hung 1" in metrics
    assert 'onionlab_watchdog_layer_ok{onion="%s",layer="tor"} 0' % ADDRESS[:-6] in metrics


def _hung_proc(tmp_path, monkeypatch):
    """A recorded /proc where PID 321 (stopped) holds the listening socket of control port 9043."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import health_layers
    import os
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "tcp").write_text(
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 0100007F:2353 00000000:0000 0A 00000000:00000000 00:00000000 00000000   105        0 4242 1 0\n")
    (proc / "321" / "fd").mkdir(parents=True)
    (proc / "321" / "stat").write_text("321 (tor) T 1 321 0 0")
    os.symlink("socket:[4242]", str(proc / "321" / "fd" / "7"))
    monkeypatch.setattr(health_layers, "PROC", str(proc))


@pytest.mark.parametrize("report_only", [False, True])
def test_a_hung_tor_is_restarted_after_hung_checks_runs_in_a_row(tmp_path, monkeypatch, report_only):
    """Hung on run 1: a line, no restart; hung on run 2: restarted although a restart happened 60 s before
    (restart_interval 3600 does not hold back a hung tor); a run where tor answers resets the count; report_only
    never restarts. The counter onionlab_watchdog_hung_restarts_total counts the restarts."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import ControlTimeout
    _hung_proc(tmp_path, monkeypatch)
    (tmp_path / "state.json").write_text(json.dumps({"services": {}, "last_restart": 940, "runs": 3}))
    restarts, out, clock = [], io.StringIO(), {"now": 1000.0}

    def silent():
        raise ControlTimeout("tor at port 127.0.0.1:9043 did not answer within 10.0s")
    cfg = {"state_file": str(tmp_path / "state.json"), "metrics_file": str(tmp_path / "wd.prom"),
           "control_port": 9043, "report_only": report_only}
    for _ in range(3):
        watchdog.Watchdog(cfg, connect=silent, restart=lambda argv=None: restarts.append(argv) or (True, ""),
                          clock=lambda: clock["now"], out=out).run()
        clock["now"] += 60
    lines = out.getvalue().splitlines()
    if report_only:
        assert restarts == [] and _actions(lines) == ["none"] * 3 and all("report only" in line for line in lines), lines
        return
    assert restarts == [None], restarts
    assert _actions(lines) == ["none", "restart", "none"], lines
    assert "hung 1 time(s) in a row; a restart after 2" in lines[0]
    assert "hung 2 times in a row: tor restarted" in lines[1] and "tor=hung pid=321" in lines[1]
    state = json.loads((tmp_path / "state.json").read_text())
    assert state["hung_restarts"] == 1 and state["last_restart"] == 1060 and state["hung_streak"] == 1
    assert "onionlab_watchdog_hung_restarts_total 1" in (tmp_path / "wd.prom").read_text()


def _backend_down(target="127.0.0.1:8080"):
    entry = _layered("unhealthy", "backend", {"tor": True, "backend": False, "descriptor": True,
                                              "introduction": True, "reach": False})
    entry["layers"]["backend"]["ports"] = [{"port": 80, "target": target, "ok": False, "error": "Connection refused"},
                                           {"port": 443, "target": "unix:/run/ok.sock", "ok": True, "error": None}]
    return entry


def test_a_refusing_backend_restarts_its_unit_never_tor(bed, monkeypatch):
    """backend_units names the unit of the refusing target: restarted after confirm_checks, then held back within
    backend_restart_interval, then again; tor gets no signal and no restart; the repair is counted."""
    monkeypatch.setattr(onion_health, "run_check", lambda ctl, **o: ({"services": [_backend_down()]},
                                                                     {ADDRESS: object()}))
    lines = bed["run"]([None] * 4, confirm_checks=2, backend_restart_interval=500,
                       backend_units={"127.0.0.1:8080": "web.service", "unix:/run/ok.sock": "other.service"})
    assert _actions(lines) == ["none", "restart-backend", "none", "restart-backend"], lines
    assert "unhealthy 1 time(s) in a row; a repair after 2" in lines[0]
    assert "unit=web.service" in lines[1] and "web.service restarted" in lines[1] and "layer=backend" in lines[1]
    assert "web.service held back: restarted 300 s ago (backend_restart_interval 500 s)" in lines[2]
    assert bed["restarts"] == [["systemctl", "restart", "web.service"]] * 2, bed["restarts"]
    assert bed["ctl"].signals == [] and bed["script"]["posted"] == []
    metrics = (bed["tmp"] / "wd.prom").read_text()
    assert 'onionlab_watchdog_repairs_total{onion="%s",step="backend"} 2' % ADDRESS[:-6] in metrics
    assert 'onionlab_watchdog_backend_restarts_total{unit="web.service"} 2' in metrics


def test_a_refusing_backend_without_a_unit_is_named_not_repaired(bed, monkeypatch):
    monkeypatch.setattr(onion_health, "run_check", lambda ctl, **o: ({"services": [_backend_down("[::1]:80")]},
                                                                     {ADDRESS: object()}))
    lines = bed["run"]([None, None], report_only=False, backend_units={"127.0.0.1:8080": "web.service"})
    assert _actions(lines) == ["none", "none"] and bed["restarts"] == [], lines
    assert "no unit in backend_units for its target, so nothing to restart" in lines[1]


@pytest.mark.parametrize("setting", [
    {"backend_units": {"127.0.0.1:80": "web; rm -rf /"}}, {"backend_units": {"127.0.0.1:80": "--force"}},
    {"backend_units": ["web"]}, {"hung_checks": 0}, {"hung_checks": True}, {"backend_restart_interval": -1},
    {"backend_restart_command": "systemctl restart"}, {"restart_command": []}])
def test_config_file_bad_repair_settings_refused(tmp_path, setting):
    path = tmp_path / "wd.json"
    path.write_text(json.dumps(setting))
    with pytest.raises(ValueError) as err:
        watchdog.load_config(str(path))
    assert str(path) in str(err.value) and list(setting)[0] in str(err.value)


def test_settings_from_the_role_checked_in_one_place():
    """The onion_watchdog role's variables -> the settings file (filter watchdog_settings): defaults filled in, numbers
    as numbers, addresses with their checksum checked; each bad value refused naming its variable."""
    good = "pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscryd"
    out = watchdog.settings_from_role({"addresses": [good], "control_port": "9051", "fetch_timeout": "20",
                                       "report_only": "false", "backend_units": {"127.0.0.1:8080": "nginx.service"},
                                       "interval_minutes": 5}, "/var/lib/prometheus/node-exporter/")
    assert out["addresses"] == [good + ".onion"] and out["control_port"] == 9051 and out["fetch_timeout"] == 20.0
    assert out["report_only"] is False and out["hung_checks"] == 2 and out["layers"] == ["backend", "introduction",
                                                                                          "reach"]
    assert out["metrics_file"] == "/var/lib/prometheus/node-exporter/onionlab_watchdog.prom"
    assert set(out) <= set(watchdog.DEFAULTS)
    bad_checksum = good[:-2] + ("ya" if good[-2:] != "ya" else "yb")
    for variable, value in (("addresses", [bad_checksum]), ("interval_minutes", 0), ("confirm_checks", "9" * 5000),
                            ("layers", ["descriptor"]), ("web_ports", [70000]), ("report_only", "maybe"),
                            ("backend_units", {"127.0.0.1:80": "a b"}), ("reach_timeout", "inf"),
                            ("restart_command", "systemctl restart tor")):
        with pytest.raises(ValueError) as err:
            watchdog.settings_from_role({variable: value}, "/m")
        assert "onion_watchdog_%s must be" % variable in str(err.value), (variable, str(err.value))


def test_ephemeral_services_added_back_from_their_kept_keys(tmp_path):
    """A restarted tor runs none of the ephemeral services the module made: the watchdog adds back the one whose key
    the module kept (keep_key), same address, ports and clients, tor told to forget the key again; the one without a
    kept key is named once and leaves the record; a second run does nothing. Over a real socket (the fake controller),
    with the module's own record and key files."""
    import stat
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import ephemeral, onion
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
    from harness.fake_controller import FakeController
    torrc = tmp_path / "torrc"
    torrc.write_text("SocksPort 0\nDataDirectory %s\n" % (tmp_path / "tordata"))
    keys = str(tmp_path / "keys")
    expanded = bytes(range(64))
    key = onion.key_blob(expanded)
    client = "A" * 52
    with FakeController(tmp_path / "tordata", torrc) as fake:
        with connect(port=fake.port) as ctl:
            kept = ephemeral.apply_ephemeral(ctl, "present", ports=[{"port": 80, "target_port": 8080}], private_key=key,
                                             client_auth_v3=[client], keep_key=True, key_dir=keys)
            lost = ephemeral.apply_ephemeral(ctl, "present", ports=[{"port": 22}], discard_pk=True, key_dir=keys)
        sid, other = kept["service"]["service_id"], lost["service"]["service_id"]
        assert stat.S_IMODE(os.stat(os.path.join(keys, sid + ".key")).st_mode) == 0o600
        fake.onions.clear()                                   # tor restarted: it runs none of them
        lines = []
        for _ in range(2):
            out = io.StringIO()
            cfg = {"control_port": fake.port, "ephemeral_key_dir": keys, "state_file": str(tmp_path / "wd.json"),
                   "metrics_file": str(tmp_path / "wd.prom")}
            dog = watchdog.Watchdog(cfg, out=out)
            with connect(port=fake.port) as ctl:
                dog._readd(ctl, {})
            lines.append(dog.lines)
        assert list(fake.onions) == [sid], fake.onions
        added = fake.onions[sid]
        assert added["ports"] == ["80,127.0.0.1:8080"] and added["client_auth_v3"] == [client]
        assert {"Detach", "DiscardPK"} <= set(added["flags"]) and added["key"] == expanded
        assert len(lines[0]) == 2 and lines[1] == [], lines
        said = "\n".join(lines[0])
        assert "service=%s.onion state=gone action=readd result=\"added back with its kept key" % sid in said
        assert "service=%s.onion state=gone action=none" % other in said and "its key was not kept" in said
        assert key.split(":", 1)[1] not in said
        assert sorted(ephemeral.read_ephemeral_record(str(tmp_path / "tordata"))) == [sid]
