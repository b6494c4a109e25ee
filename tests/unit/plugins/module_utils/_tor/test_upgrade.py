# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_tor/upgrade.py: one host's upgrade (issue 39): every path through its steps with a scripted host (``Host``:
the package installed, the running tor, the verdicts the health check would give, in order) and a fake clock. The
real steps run on bed hosts joined to the private network in tests/integration/beds/test_upgrade_rollout.py."""

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import upgrade

A = "a" * 52 + "aaad.onion"
B = "b" * 52 + "bbad.onion"


def service(address, healthy=True, reach=True, reasons=None):
    return {"address": address, "state": "healthy" if healthy else "unhealthy",
            "reasons": reasons or ([] if healthy else ["reach: 0 of 3 fresh connections"]),
            "layers": {"reach": {"ok": reach, "evidence": "1 of 1" if reach else "not checked: no SocksPort"}}}


def good(*addresses):
    return {"services": [service(a) for a in addresses]}


def bad(*addresses):
    return {"services": [service(a, healthy=False, reach=False) for a in addresses]}


class Clock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class Host(object):
    """A scripted host: verdicts are taken in order (the last repeats); each verdict costs 10 s of the clock."""

    def __init__(self, clock, installed="1.0", verdicts=(), verify=None, keep=None, install=None,
                 restarted_by_package=True, crash_after=None):
        self.clock, self.version, self.verdicts = clock, installed, list(verdicts)
        self.verify_problem, self.keep_problem, self.install_problem = verify, keep, install
        self.by_package, self.crash_after = restarted_by_package, crash_after
        self.pid, self.replaced, self.calls, self.pinned, self.config_restored = 10, False, [], "kept", False

    def installed(self):
        return self.version

    def running(self):
        if self.crash_after is not None and self.clock.now >= self.crash_after:
            self.pid, self.crash_after = self.pid + 1, None
        return {"pid": self.pid, "version": self.version, "replaced": self.replaced}

    def verdict(self):
        self.calls.append("verdict")
        self.clock.now += 10
        return self.verdicts.pop(0) if len(self.verdicts) > 1 else self.verdicts[0]

    def verify(self, version):
        self.calls.append("verify %s" % version)
        return self.verify_problem

    def keep(self, installed):
        self.calls.append("keep %s" % installed)
        return (None, self.keep_problem) if self.keep_problem else ({"dir": "/k", "package": "tor_1.0.deb"}, None)

    def pin(self, version):
        self.calls.append("pin %s" % version)
        changed, self.pinned = self.pinned != (version or "kept"), version or "kept"
        return changed

    def install(self, version):
        self.calls.append("install %s" % version)
        if self.install_problem:
            return self.install_problem
        self.version = version
        if self.by_package:
            self.pid += 1
        else:
            self.replaced = True

    def install_kept(self):
        self.calls.append("install kept")
        self.version, self.pid = "1.0", self.pid + 1

    def restore_config(self):
        self.calls.append("restore config")
        self.config_restored = True

    def restart(self):
        self.calls.append("restart")
        self.pid, self.replaced = self.pid + 1, False

    def log_since(self, begun):
        return ["[warn] something the new tor said"]


def run(host, clock, **kw):
    kw.setdefault("gate_timeout", 60)
    return upgrade.Upgrade(host, "2.0", clock=clock, sleep=clock.sleep, **kw).run()


def failed(host, clock, **kw):
    with pytest.raises(upgrade.UpgradeFailed) as info:
        run(host, clock, **kw)
    return info.value.result


def test_gate_needs_every_service_reached():
    assert upgrade.gate(good(A, B))[0] is True
    assert upgrade.gate({"services": []}) == (True, {}, [])
    passed, reached, reasons = upgrade.gate({"services": [service(A), service(B, healthy=False, reach=False)]})
    assert not passed and reached == {A: True, B: False} and reasons[0].startswith(B + ": reach: 0 of 3")
    passed, _, reasons = upgrade.gate({"services": [service(A, reach=None)]})
    assert not passed and "the gate needs a SocksPort" in reasons[0]
    assert upgrade.gate("tor did not answer: refused") == (False, {}, ["tor did not answer: refused"])
    pending = dict(service(A), state="pending", reasons=["tor is bootstrapping"])
    pending["layers"] = {}
    assert upgrade.gate({"services": [pending]}) == (False, {A: False}, [A + ": pending: tor is bootstrapping"])
    # the descriptor layer failing while a fresh client got through: reached (the gate is the reach layer)
    stray = service(A, healthy=False, reach=True, reasons=["descriptor: 0 of 6 responsible HSDirs ...; 6 failed"])
    assert upgrade.gate({"services": [stray]}) == (True, {A: True}, [])


def test_good_upgrade_measures_each_service_and_pins():
    clock = Clock()
    host = Host(clock, verdicts=[good(A, B), "tor did not answer: starting", bad(A, B), good(A, B)])
    result = run(host, clock)
    assert result["changed"] and not result["rolled_back"] and result["before"] == "1.0" and result["now"] == "2.0"
    assert host.calls[:5] == ["verdict", "verify 2.0", "keep 1.0", "pin 2.0", "install 2.0"]
    assert result["steps"] == {"before": "reachable", "verify": "ok", "keep": "ok", "install": "ok",
                               "restart": "by the package", "gate": "passed"}
    # three verdicts after the install (10 s each) and two polls of 5 s between them
    assert result["services"][A] == {"reachable_before": True, "unreachable_seconds": 40.0}
    assert "restart" not in host.calls and host.pinned == "2.0"
    assert upgrade.summary(result, "web1").startswith("web1: tor 1.0 -> 2.0 (changed); aaaaaaaaaaaa... unreachable 40.0 s")


def test_package_that_did_not_restart_tor_is_restarted():
    clock = Clock()
    host = Host(clock, verdicts=[good(A)], restarted_by_package=False)
    result = run(host, clock)
    assert result["steps"]["restart"] == "by the upgrade" and "restart" in host.calls


def test_rerun_at_the_version_changes_nothing():
    clock = Clock()
    host = Host(clock, installed="2.0", verdicts=[good(A)])
    result = run(host, clock)
    assert result["changed"] and "its apt pin written" in result["msg"] and host.calls == ["pin 2.0"]
    result = run(host, clock)
    assert not result["changed"] and "nothing to do" in result["msg"] and host.calls == ["pin 2.0", "pin 2.0"]


def test_check_mode_says_and_touches_nothing():
    clock = Clock()
    host = Host(clock, verdicts=[good(A)])
    result = run(host, clock, check_mode=True, soak=600)
    assert result["changed"] and host.calls == [] and host.version == "1.0"
    assert result["msg"] == "would upgrade tor 1.0 to 2.0 (gate: every service reached within 60 s, then a soak of 600 s)"
    assert upgrade.summary(result) == "tor 1.0 -> 2.0 (check mode: would be upgraded)"


def test_unhealthy_host_is_held_back_not_upgraded():
    clock = Clock()
    host = Host(clock, verdicts=[{"services": [service(A), service(B, healthy=False, reach=False)]}])
    result = run(host, clock)
    assert result["held_back"] and not result["changed"] and host.calls == ["verdict"]
    assert result["msg"].startswith("held back, not upgraded") and B in result["msg"]
    assert upgrade.summary(result).startswith("tor 1.0 -> 1.0 (held back)")


def test_no_tor_installed_is_held_back():
    clock = Clock()
    host = Host(clock, installed=None, verdicts=[good(A)])
    result = run(host, clock)
    assert result["held_back"] and host.calls == []


def test_refused_torrc_or_no_way_back_stops_before_anything_changes():
    clock = Clock()
    host = Host(clock, verdicts=[good(A)], verify="tor 2.0 refuses the torrc: [warn] Unknown option")
    result = failed(host, clock)
    assert result["steps"]["verify"] == "refused" and not result["changed"] and "install 2.0" not in host.calls
    host = Host(clock, verdicts=[good(A)], keep="not in apt's cache")
    result = failed(host, clock)
    assert result["msg"].startswith("no way back, so no upgrade") and host.calls[-1] == "keep 1.0"
    assert not any(c.startswith(("pin", "install")) for c in host.calls)


def test_failed_gate_rolls_back_and_gates_again():
    clock = Clock()
    host = Host(clock, verdicts=[good(A)] + [bad(A)] * 5 + [good(A)])
    result = failed(host, clock)
    assert result["rolled_back"] and result["now"] == "1.0" and host.pinned == "kept" and host.config_restored
    assert result["steps"]["gate"] == "failed" and result["steps"]["gate_after_rollback"] == "passed"
    assert result["msg"].startswith("tor 2.0 failed its gate: %s: reach: 0 of 3" % A)
    assert "something the new tor said" in result["msg"] and "rolled back to tor 1.0: every service reached again" in result["msg"]
    entry = result["services"][A]
    assert "unreachable_seconds" not in entry and entry["back_seconds"] == 10.0
    assert host.calls[-5:] == ["pin None", "install kept", "restore config", "restart", "verdict"]


def test_failed_install_rolls_back():
    clock = Clock()
    host = Host(clock, verdicts=[good(A)], install="apt-get install tor=2.0 failed: dpkg error")
    result = failed(host, clock)
    assert result["steps"]["install"] == "failed" and result["rolled_back"]
    assert "failed its install: apt-get install tor=2.0 failed" in result["msg"]


def test_no_rollback_leaves_it():
    clock = Clock()
    result = failed(Host(clock, verdicts=[good(A), bad(A)]), clock, rollback=False)
    assert not result["rolled_back"] and "(rollback: false: left as it is)" in result["msg"]


def test_soak_passes_with_one_stray_failure_and_fails_on_two_or_a_restart():
    clock = Clock()
    host = Host(clock, verdicts=[good(A), good(A), bad(A), good(A)])
    result = run(host, clock, soak=300, soak_interval=60)
    assert result["steps"]["soak"] == "passed (5 checks)" and not result["rolled_back"]

    clock = Clock()
    host = Host(clock, verdicts=[good(A), good(A), good(A), bad(A), bad(A), good(A)])
    result = failed(host, clock, soak=600, soak_interval=60)
    assert result["steps"]["soak"] == "failed" and result["rolled_back"]
    assert result["msg"].startswith("tor 2.0 failed its soak: %s" % A)

    clock = Clock()
    host = Host(clock, verdicts=[good(A)], crash_after=1100)
    result = failed(host, clock, soak=600, soak_interval=60)
    assert "tor restarted during the soak" in result["msg"] and result["rolled_back"]


def test_rollback_that_fails_says_both():
    clock = Clock()
    host = Host(clock, verdicts=[good(A), bad(A)])
    host.install_kept = lambda: "apt-get install /k/tor_1.0.deb failed: broken"
    result = failed(host, clock)
    assert result["steps"]["rollback"] == "failed" and "the rollback to tor 1.0 failed too" in result["msg"]
