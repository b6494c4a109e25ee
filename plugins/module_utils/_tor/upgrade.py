# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One host's tor upgrade with a gate and a way back (the tor_upgrade module, playbooks/upgrade.yml): the order of
the steps and every decision between them. What each step does on the host (apt, systemd, the control port) is the
caller's ``ops`` object; this file only decides, so that each path (held back, refused, upgraded, rolled back) is
tested with a scripted ``ops``.

The steps: the services reachable before (a host already unhealthy is held back, never upgraded blind); the new
version's tor reads the host's torrc; the installed package and tor's configuration kept for rollback; the new
version pinned and installed; tor running the new binary; the gate (every service reached by a fresh client through
the host's own tor) within ``gate_timeout`` from the install; the soak (the verdict again every ``soak_interval``
for ``soak`` seconds, tor's PID unchanged); on a failed gate or soak: the kept package and configuration back, tor
restarted, the gate again. Keys are never touched.

Standard library only. This is a private module_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import time

GATE_TIMEOUT = 300.0
SOAK_INTERVAL = 60.0
CONFIRM = 2   # a soak check must fail this many times in a row (one failed fresh connection is not a verdict)


class UpgradeFailed(Exception):
    """The upgrade did not hold; result() of the run says what happened."""


def gate(verdict):
    """(passed, {address: reached}, reasons): passed when tor answered, it runs at least one service (none: nothing
    to gate on, passed) and every service's reach layer got an answer: a fresh client through the host's own tor,
    which fetched the descriptor from the HSDirs anew and was introduced, the way every client comes. The other
    layers are evidence in the reasons, not the gate: a descriptor check can fail while clients get through (seen:
    every HSDir's answer 'failed' to the check's HSFETCH while a fresh client was answered), and a host held back or
    rolled back on that would be a false alarm. verdict: the health check's result (onion_health.check), or a str
    when tor could not be asked."""
    if isinstance(verdict, str):
        return False, {}, [verdict]
    reached, reasons = {}, []
    for service in verdict.get("services", []):
        reach = (service.get("layers") or {}).get("reach") or {}
        ok = reach.get("ok") is True
        reached[service["address"]] = ok
        if ok:
            continue
        if service.get("state") == "pending":
            why = "pending: %s" % "; ".join(service.get("reasons") or [])
        elif reach.get("ok") is None:
            why = "reach not checked (%s): the gate needs a SocksPort of this tor on 127.0.0.1" % (
                reach.get("evidence") or "no reach layer")
        else:
            why = "; ".join(service.get("reasons") or [reach.get("evidence") or "no answer"])
        reasons.append("%s: %s" % (service["address"], why))
    return not reasons, reached, reasons


class Upgrade(object):
    """run() -> result dict; raises UpgradeFailed (with the same result in .result) when the host did not end on
    the new version with every service reachable. ops: installed() -> version or None; verify(version) -> problem
    or None; keep(installed) -> (kept, problem); pin(version, or None to put back the kept pin) -> changed; install(version)
    -> problem or None; install_kept() -> problem or None; restore_config(); restart(); running() -> {pid, version, replaced} or None; verdict() -> the
    health result or a str; log_since(t) -> [lines] of tor's log since the install began."""

    def __init__(self, ops, version, gate_timeout=GATE_TIMEOUT, soak=0.0, soak_interval=SOAK_INTERVAL,
                 rollback=True, check_mode=False, clock=time.monotonic, sleep=time.sleep, poll=5.0):
        self.ops, self.version = ops, version
        self.gate_timeout, self.soak, self.soak_interval = float(gate_timeout), float(soak), float(soak_interval)
        self.rollback_enabled, self.check_mode = rollback, check_mode
        self.clock, self.sleep, self.poll = clock, sleep, poll
        self.result = {"changed": False, "version": version, "before": None, "now": None, "steps": {},
                       "services": {}, "held_back": False, "rolled_back": False, "msg": ""}

    def step(self, name, state):
        self.result["steps"][name] = state

    def done(self, msg, failed=False):
        self.result["msg"] = msg
        self.result["now"] = self.ops.installed()
        if failed:
            err = UpgradeFailed(msg)
            err.result = self.result
            raise err
        return self.result

    # -- the run ------------------------------------------------------------------------------------------
    def run(self):
        before = self.ops.installed()
        self.result["before"] = before
        if before is None:
            self.result["held_back"] = True
            return self.done("held back: tor is not installed on this host, nothing to upgrade")
        now = self.ops.running()
        if before == self.version and now and not now.get("replaced") and now.get("pid"):
            if not self.check_mode and self.ops.pin(self.version):
                self.result["changed"] = True
                self.step("pin", "changed")
                return self.done("tor %s is installed and runs; its apt pin written" % before)
            return self.done("tor %s is installed and runs: nothing to do" % before)
        if self.check_mode:
            self.result["changed"] = self.result["would_upgrade"] = True
            return self.done("would upgrade tor %s to %s (gate: every service reached within %.0f s%s)" % (
                before, self.version, self.gate_timeout, ", then a soak of %.0f s" % self.soak if self.soak else ""))
        passed, reached, reasons = gate(self.ops.verdict())
        self.result["services"] = dict((a, {"reachable_before": ok}) for a, ok in reached.items())
        if not passed:
            self.result["held_back"] = True
            self.step("before", "unhealthy")
            return self.done("held back, not upgraded: the host's services are not all reachable before the upgrade "
                             "(an upgrade would be judged against a broken baseline): " + "; ".join(reasons))
        self.step("before", "reachable")
        problem = self.ops.verify(self.version)
        if problem:
            self.step("verify", "refused")
            return self.done(problem, failed=True)
        self.step("verify", "ok")
        kept, problem = self.ops.keep(before)
        if problem:
            self.step("keep", "failed")
            return self.done("no way back, so no upgrade: %s" % problem, failed=True)
        self.step("keep", "ok")
        self.result["kept"] = kept
        return self._install_and_gate(before, now)

    def _install_and_gate(self, before, old):
        begun = self.clock()
        self.result["changed"] = True
        self.ops.pin(self.version)
        problem = self.ops.install(self.version)
        if problem:
            self.step("install", "failed")
            passed, reasons = False, [problem]
        else:
            self.step("install", "ok")
            self._ensure_new_binary(old)
            passed, reasons = self._gate(begun, "unreachable_seconds")
        if passed and self.soak > 0:
            passed, reasons = self._soak()
        if passed:
            return self.done("tor %s -> %s: every service reached by a fresh client%s" % (
                before, self.version, " and through a soak of %.0f s" % self.soak if self.soak > 0 else ""))
        log = self.ops.log_since(begun)
        self.result["log"] = log
        failed = [name for name in ("install", "gate", "soak") if self.result["steps"].get(name) == "failed"][0]
        said = "tor %s failed its %s: %s" % (self.version, failed, "; ".join(reasons))
        if log:
            said += "\ntor's log since the install:\n" + "\n".join(log[-20:])
        if not self.rollback_enabled:
            return self.done(said + "\n(rollback: false: left as it is)", failed=True)
        return self._rollback(before, said)

    def _ensure_new_binary(self, old):
        """The package's scripts restart tor (Debian's); a tor that still runs the old binary is restarted."""
        now = self.ops.running()
        if now is None or now.get("replaced") or (old and now.get("pid") == old.get("pid")):
            self.ops.restart()
            self.step("restart", "by the upgrade")
        else:
            self.step("restart", "by the package")

    def _gate(self, begun, key):
        """Every service reached within gate_timeout of begun; each service's seconds until its first answer."""
        pending = set(self.result["services"])
        reasons = ["no verdict yet"]
        while True:
            passed, reached, reasons = gate(self.ops.verdict())
            at = self.clock() - begun
            for address, ok in reached.items():
                entry = self.result["services"].setdefault(address, {})
                if ok and key not in entry:
                    entry[key] = round(at, 1)
                    pending.discard(address)
            if passed and not pending:
                self.step("gate" if key == "unreachable_seconds" else "gate_after_rollback", "passed")
                return True, []
            if at >= self.gate_timeout:
                self.step("gate" if key == "unreachable_seconds" else "gate_after_rollback", "failed")
                return False, reasons or ["services not reached again: %s" % ", ".join(sorted(pending))]
            self.sleep(self.poll)

    def _soak(self):
        """The verdict again every soak_interval for soak seconds: a check that fails CONFIRM times in a row, or a
        tor that restarted (its PID changed), fails the soak."""
        pid = (self.ops.running() or {}).get("pid")
        end, failures, checks = self.clock() + self.soak, 0, 0
        while self.clock() < end:
            self.sleep(min(self.soak_interval, max(0.0, end - self.clock())))
            now = self.ops.running()
            if not now or now.get("pid") != pid:
                self.step("soak", "failed")
                return False, ["tor restarted during the soak (PID %s, now %s)" % (pid, (now or {}).get("pid"))]
            passed, _reached, reasons = gate(self.ops.verdict())
            checks += 1
            failures = 0 if passed else failures + 1
            if failures >= CONFIRM:
                self.step("soak", "failed")
                return False, reasons
        self.step("soak", "passed (%d checks)" % checks)
        return True, []

    def _rollback(self, before, said):
        begun = self.clock()
        self.ops.pin(None)
        problem = self.ops.install_kept()
        if problem:
            self.step("rollback", "failed")
            return self.done("%s\nthe rollback to tor %s failed too: %s" % (said, before, problem), failed=True)
        self.ops.restore_config()
        self.ops.restart()
        self.result["rolled_back"] = True
        self.step("rollback", "ok")
        for entry in self.result["services"].values():
            entry.pop("back_seconds", None)
        passed, reasons = self._gate(begun, "back_seconds")
        back = "rolled back to tor %s: %s" % (
            before, "every service reached again" if passed else "services still unreachable: " + "; ".join(reasons))
        return self.done("%s\n%s" % (said, back), failed=True)


def summary(result, host=None):
    """One line for the rollout's summary: before, now, and each service's unreachable seconds."""
    parts = []
    installed = result.get("steps", {}).get("install") is not None
    for address, entry in sorted(result.get("services", {}).items()) if installed else ():
        seconds = entry.get("unreachable_seconds")
        back = entry.get("back_seconds")
        parts.append("%s unreachable %s%s" % (address[:12] + "...", "%.1f s" % seconds if seconds is not None
                                              else "until the end of the gate",
                                              ", back after rollback in %.1f s" % back if back is not None else ""))
    state = ("held back" if result.get("held_back") else "rolled back" if result.get("rolled_back")
             else "check mode: would be upgraded" if result.get("would_upgrade")
             else "changed" if result.get("changed") else "unchanged")
    now = result.get("version") if result.get("would_upgrade") else result.get("now")
    return "%stor %s -> %s (%s)%s" % (host + ": " if host else "", result.get("before"), now, state,
                                      "; " + "; ".join(parts) if parts else "")
