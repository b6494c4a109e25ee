# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion watchdog, a program of its own beside the library: the checks of _tor/onion_health.py every few minutes
on a service host, and a repair ladder (role onion_watchdog runs main() from a systemd timer; standard library and
the _tor library only: the role ships both to the host, tests/unit/test_architecture.py checks the imports).

Each run: connect to tor, check every service (or the configured ones), and for each unhealthy one
take the next step of its ladder, one step per run, only when the step before did not bring it
back by this check:

1. repost: the current descriptor posted again to the responsible HSDirs that lack it (HSPOST);
2. reload: SIGHUP to tor (a persistent service); an ephemeral service has no key on disk to add
   again, so it goes on to 3;
3. restart: the configured command (systemctl restart tor), at most once per restart_interval, and not while
   relays of the network hang (hanging_hsdirs: some responsible HSDirs gave no answer in time while others
   answered; a restart of this tor does not mend them): the cheaper step again meanwhile.

A service is repaired only once it was found unhealthy confirm_checks times in a row (default 2: a
service tor has just built and not uploaded yet is not repaired). No repair while a run of the
collection holds the tor's lock (lock.py), while tor bootstraps, or for a service that is pending;
nothing at all in report-only mode. It never touches keys or the
torrc. Each decision is one line on standard output (the journal); counters and gauges go to a
node_exporter textfile (metrics_file), and the ladder's state to state_file, both written
atomically.

Each run also reports a service port whose backend the clearnet can find (onion_health's `exposed`: its
target port listening on a non-loopback address of the host): a journal line for each such port, and
onionlab_watchdog_backend_exposed 1 for it (0 for a port checked and not exposed). Nothing is repaired
there: binding the backend to 127.0.0.1 or a unix socket is the fix, and a person's.

The check has layers (onion_health.py, health_layers.py: tor, backend, descriptor, introduction, reach). The ladder
above repairs the descriptor only: a service unhealthy at another layer while its descriptor is fine (a backend
down, introduction or reach failing) gets a journal line naming the failed layer and no descriptor repair (a repost
or reload would not bring back a backend). Introduction or reach failing while the descriptor and the backend are
fine has a ladder of its own (_repair_intro, after confirm_checks, a step per check): close the service's
introduction circuits (tor builds new ones), add an ephemeral service whose key was kept again (new introduction
points, same address), restart tor (restart_interval holds it back, and so do relays that hang). Each
service's journal line carries its layers (layers="tor:ok backend:fail descriptor:ok introduction:ok
reach:fail"), and the textfile one gauge per layer: onionlab_watchdog_layer_ok{onion=...,layer=...} (1 ok, 0
failed, -1 not checked). When tor's control port does not answer, the line says whether tor is hung (its process
lives: found as the owner of the control port's listening socket, or by pid_file) or unreachable;
onionlab_watchdog_tor_hung is 1 for a hung tor.

Repairs beside the ladder:
- a hung tor is restarted (restart_command) once it was found hung on hung_checks runs in a row (default 2);
  restart_interval does not hold that back (a hung tor serves nobody), report_only does. An unreachable tor (no
  live process) is left to its service manager, which restarts a tor that died.
- a backend that refuses connections: when backend_units names a systemd unit for the failed target (keys as the
  backend layer shows them: "127.0.0.1:8080", "[::1]:80", "unix:/run/app.sock"), that unit is restarted
  (backend_restart_command + [unit]) after confirm_checks unhealthy checks, at most once per
  backend_restart_interval seconds for each unit; tor is never touched for a backend. Without a unit the line
  says so and nothing is repaired.

This is a private module_utils file of onionlab.tor (not part of the _tor library: an application of it); its API may
change at any time.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

from ansible_collections.onionlab.tor.plugins.module_utils._tor import client as _client
from ansible_collections.onionlab.tor.plugins.module_utils._tor import ephemeral
from ansible_collections.onionlab.tor.plugins.module_utils._tor import files
from ansible_collections.onionlab.tor.plugins.module_utils._tor import health_layers
from ansible_collections.onionlab.tor.plugins.module_utils._tor import listeners
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion_health
from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import ControlTimeout, TorError
from ansible_collections.onionlab.tor.plugins.module_utils._tor.lock import LockTimeout, TorLock

STEPS = (None, "repost", "reload", "restart")
# the introduction/reach ladder: a service tor publishes, that clients cannot reach through its introduction points
INTRO_STEPS = (None, "close-intro", "readd", "restart")
REPAIRS = ("repost", "reload", "restart", "close-intro", "readd", "backend")
DEFAULTS = {
    "control_socket": _client.DEFAULT_SOCKET, "control_port": None, "control_host": "127.0.0.1",
    "cookie_path": None, "addresses": None, "fetch_timeout": 30.0, "min_hsdirs": None,
    "restart_interval": 3600, "restart_command": ["systemctl", "restart", "tor"], "report_only": False,
    "state_file": "/var/lib/onionlab-watchdog/state.json",
    "metrics_file": "/var/lib/prometheus/node-exporter/onionlab_watchdog.prom",
    "lock_wait": 2.0, "timeout": 10.0, "confirm_checks": 2,
    "layers": list(health_layers.OPTIONAL_LAYERS), "reach_timeout": 60.0, "reach_attempts": 3,
    "web_ports": [80, 443], "pid_file": "/run/tor/tor.pid", "hung_checks": 2,
    "backend_units": {}, "backend_restart_interval": 600, "backend_restart_command": ["systemctl", "restart"],
    "readd_ephemeral": True, "ephemeral_key_dir": "/var/lib/onionlab/ephemeral-keys",
}
_UNIT_RE = re.compile(r"^[A-Za-z0-9_.@:-]{1,255}\Z")


def load_config(path):
    """The watchdog's settings: the role's JSON file over DEFAULTS."""
    with open(path) as handle:
        data = json.load(handle)
    if not isinstance(data, dict):
        raise ValueError("%s does not hold a JSON object" % path)
    unknown = sorted(set(data) - set(DEFAULTS))
    if unknown:
        raise ValueError("%s: unknown settings %s" % (path, ", ".join(unknown)))
    check_config(data, path)
    return dict(DEFAULTS, **data)


def check_config(data, where="the watchdog's settings"):
    """ValueError for a setting of the repairs that would run something other than what it says."""
    units = data.get("backend_units", {})
    if not isinstance(units, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and _UNIT_RE.match(v) and not v.startswith("-")
            for k, v in units.items()):
        raise ValueError("%s: backend_units must be a mapping of a backend target (\"127.0.0.1:8080\", \"unix:/run/app.sock\") to "
                         "a systemd unit name (letters, digits and _.@:-, not starting with -)" % where)
    for name in ("hung_checks", "backend_restart_interval"):
        value = data.get(name, DEFAULTS[name])
        if isinstance(value, bool) or not isinstance(value, int) or value < (1 if name == "hung_checks" else 0):
            raise ValueError("%s: %s must be a whole number (hung_checks at least 1)" % (where, name))
    for name in ("restart_command", "backend_restart_command"):
        value = data.get(name, DEFAULTS[name])
        if not isinstance(value, list) or not value or not all(isinstance(w, str) and w for w in value):
            raise ValueError("%s: %s must be a non-empty list of words (argv, no shell)" % (where, name))


# The onion_watchdog role's variables (without the onion_watchdog_ prefix) that are settings of the same name.
ROLE_SETTINGS = ("control_socket", "control_port", "cookie_path", "addresses", "min_hsdirs", "fetch_timeout",
                 "restart_interval", "restart_command", "report_only", "confirm_checks", "layers", "reach_timeout",
                 "reach_attempts", "web_ports", "hung_checks", "backend_units", "backend_restart_interval",
                 "readd_ephemeral", "ephemeral_key_dir")


def _whole(value, name, least):
    text = value.strip() if isinstance(value, str) else value
    if isinstance(value, bool) or not isinstance(value, (int, str)) or (isinstance(text, str) and (
            not text.isdigit() or len(text) > 9)) or int(text) < least or int(text) > 10 ** 9:
        raise ValueError("onion_watchdog_%s must be a whole number of at least %d; got %r" % (name, least, str(value)[:40]))
    return int(text)


def settings_from_role(role_vars, metrics_dir):
    """The settings file's object from the onion_watchdog role's variables ({name without the prefix: value}),
    checked here: ValueError names the variable and what it must be."""
    v = dict((k, role_vars.get(k, DEFAULTS.get(k))) for k in ROLE_SETTINGS)
    if "interval_minutes" in role_vars:  # the timer's, not a setting: checked here with the others
        _whole(role_vars["interval_minutes"], "interval_minutes", 1)
    out = dict((k, v[k]) for k in ("control_socket", "cookie_path", "restart_command", "backend_units"))
    out["control_port"] = None if v["control_port"] in (None, "") else _whole(v["control_port"], "control_port", 1)
    out["min_hsdirs"] = None if v["min_hsdirs"] in (None, "") else _whole(v["min_hsdirs"], "min_hsdirs", 1)
    for name in ("confirm_checks", "reach_attempts", "hung_checks"):
        out[name] = _whole(v[name], name, 1)
    for name in ("restart_interval", "backend_restart_interval"):
        out[name] = _whole(v[name], name, 0)
    for name in ("fetch_timeout", "reach_timeout"):
        try:
            out[name] = float(v[name])
        except (TypeError, ValueError, OverflowError):
            out[name] = 0.0
        if isinstance(v[name], bool) or not out[name] >= 1 or out[name] > 3600:
            raise ValueError("onion_watchdog_%s must be a number of seconds from 1 to 3600; got %r" % (
                name, str(v[name])[:40]))
    for name in ("report_only", "readd_ephemeral"):
        value = torrc.role_bool(v[name])   # the tor role's reading of a role boolean (Ansible's bool words)
        if value is None:
            raise ValueError("onion_watchdog_%s must be true or false; got %r" % (name, str(v[name])[:40]))
        out[name] = value
    if not isinstance(v["ephemeral_key_dir"], str) or not v["ephemeral_key_dir"].startswith("/") \
            or "\n" in v["ephemeral_key_dir"]:
        raise ValueError("onion_watchdog_ephemeral_key_dir must be an absolute path; got %r"
                         % (str(v["ephemeral_key_dir"])[:80],))
    out["ephemeral_key_dir"] = v["ephemeral_key_dir"]
    addresses = v["addresses"] or []
    bad = [a for a in addresses if not isinstance(a, str) or not _onion_ok(a)]
    if bad:
        raise ValueError("onion_watchdog_addresses must be v3 onion addresses (56 base32 characters with a right "
                         "checksum, .onion optional); not: %s" % ", ".join(str(a)[:80] for a in bad))
    out["addresses"] = [a if a.endswith(".onion") else a + ".onion" for a in addresses] or None
    layers = v["layers"] if v["layers"] is not None else []
    if not isinstance(layers, list) or set(layers) - set(health_layers.OPTIONAL_LAYERS):
        raise ValueError("onion_watchdog_layers must be a list of %s; got %r" % (
            ", ".join(health_layers.OPTIONAL_LAYERS), layers))
    out["layers"] = layers
    ports = v["web_ports"] or []
    if not isinstance(ports, list) or not all(_whole_port(p) for p in ports):
        raise ValueError("onion_watchdog_web_ports must be a list of ports (1-65535); got %s" % str(ports)[:80])
    out["web_ports"] = [int(p) for p in ports]
    out["state_file"] = "/var/lib/onionlab-watchdog/state.json"
    out["metrics_file"] = "%s/onionlab_watchdog.prom" % metrics_dir.rstrip("/")
    try:
        check_config(out)
    except ValueError as exc:
        raise ValueError(str(exc).replace("the watchdog's settings: ", "onion_watchdog_"))
    return out


def _whole_port(value):
    return not isinstance(value, bool) and isinstance(value, (int, str)) and str(value).isdigit() \
        and len(str(value)) <= 5 and 1 <= int(value) <= 65535


def _onion_ok(address):
    try:
        onion.parse_onion_address(address)
    except onion.OnionKeyError:
        return False
    return True


def _read_state(path):
    try:
        with open(path) as handle:
            state = json.load(handle)
    except (OSError, ValueError):
        return {"services": {}, "last_restart": None, "runs": 0}
    state.setdefault("services", {})
    state.setdefault("last_restart", None)
    state.setdefault("runs", 0)
    return state


def _atomic(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    files.atomic_write(path, text, mode)


class Watchdog:
    """One run of the watchdog (run()); `connect`, `restart` and `clock` can be given (tests)."""

    def __init__(self, config, connect=None, restart=None, clock=time.time, out=None):
        self.config = dict(DEFAULTS, **config)
        self._connect = connect or self._connect_tor
        self._restart = restart or self._run_restart
        self.clock = clock
        self.out = out or sys.stdout
        self.lines = []

    # -- plumbing ----------------------------------------------------------------------------------------
    def _connect_tor(self):
        c = self.config
        return _client.connect(host=c["control_host"], port=c["control_port"],
                               socket_path=None if c["control_port"] else c["control_socket"],
                               cookie_path=c["cookie_path"], timeout=c["timeout"])

    def _run_restart(self, argv=None):
        """Run the restart command (or `argv`): (ok, the end of its output)."""
        # the watchdog runs under systemd, not as an Ansible module: there is no AnsibleModule.run_command here
        try:
            proc = subprocess.run(  # pylint: disable=ansible-bad-function
                argv or self.config["restart_command"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                universal_newlines=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, str(exc)[-200:]
        return proc.returncode == 0, (proc.stdout or "").strip()[-200:]

    def say(self, **fields):
        """One journal line: key=value pairs, values with blanks quoted."""
        parts = []
        for key, value in fields.items():
            text = str(value)
            parts.append("%s=%s" % (key, json.dumps(text) if (not text or set(text) & set(' "=')) else text))
        line = "onionlab-watchdog: " + " ".join(parts)
        self.lines.append(line)
        self.out.write(line + "\n")
        self.out.flush()

    # -- one run -----------------------------------------------------------------------------------------
    def run(self):
        """Check, repair, write the state and the metrics; returns the state."""
        state = _read_state(self.config["state_file"])
        state["runs"] += 1
        now = self.clock()
        state["last_run"] = now
        try:
            with self._connect() as ctl:
                state["tor_up"] = 1
                state["tor_hung"] = 0
                state["hung_streak"] = 0
                self._run(ctl, state, now)
        except (TorError, OSError) as exc:
            state["tor_up"] = 0
            c = self.config
            tor = health_layers.tor_unanswered(
                str(exc)[:200], control_port=c["control_port"],
                control_socket=None if c["control_port"] else c["control_socket"], pid_file=c["pid_file"],
                timed_out=isinstance(exc, ControlTimeout))
            state["tor_hung"] = 1 if tor["state"] == "hung" else 0
            for record in state["services"].values():
                record["layers"] = {"tor": 0}
                record["reason"] = ["tor", tor["evidence"][:240]]
            if tor["state"] == "hung":
                state["hung_streak"] = state.get("hung_streak", 0) + 1
                self._hung(state, tor, now)
            else:
                state["hung_streak"] = 0
                self.say(tor="unreachable", evidence=tor["evidence"][:300], action="none",
                         result="no repair while tor does not answer (its service manager restarts a tor that died)")
        _atomic(self.config["state_file"], json.dumps(state, sort_keys=True, indent=1) + "\n", 0o600)
        if self.config["metrics_file"]:
            _atomic(self.config["metrics_file"], metrics_text(state))
        return state

    def _run(self, ctl, state, now):
        c = self.config
        if c["readd_ephemeral"]:
            self._readd(ctl, state)
        result, services = onion_health.run_check(
            ctl, addresses=c["addresses"], timeout=c["fetch_timeout"], min_hsdirs=c["min_hsdirs"], layers=c["layers"],
            reach_timeout=c["reach_timeout"], reach_attempts=c["reach_attempts"], web_ports=c["web_ports"])
        ready = onion_health.bootstrapped(ctl)[0]
        held = {"lock": None}    # the tor's lock, taken at the first repair that needs it
        problem = (result.get("exposure") or {}).get("problem")
        if problem:
            self.say(backend="unchecked", evidence=problem, action="none",
                     result="whether a backend also listens on a non-loopback address is not known")
        for entry in result["services"]:
            address = entry["address"]
            record = self._record(state, entry, services.get(address))
            layers = entry.get("layers") or {}
            evidence = "; ".join(entry["reasons"])
            extra = {"layer": entry.get("failed_layer") or "none", "layers": layer_words(layers)} if layers else {}
            if entry["state"] == "healthy":
                if record["step"] or record.get("intro_step"):
                    done = STEPS[record["step"]] if record["step"] else INTRO_STEPS[record["intro_step"]]
                    self.say(service=address, state="healthy", evidence=evidence, action="none", **dict(extra, result=(
                        "healthy again after step %d (%s)" % (record["step"] or record["intro_step"], done))))
                record.update(streak=0, step=0, intro_step=0, last_healthy=now)
            elif entry["state"] == "pending":
                self.say(service=address, state="pending", evidence=evidence, action="none",
                         **dict(extra, result="nothing to judge"))
            else:
                self._unhealthy(ctl, state, record, entry, services.get(address), evidence, now, extra, ready, held)
        if held["lock"]:
            held["lock"].release()

    def _record(self, state, entry, service):
        """The service's record in the state, updated with this check (counts, state, layers, reason, exposure)."""
        record = state["services"].setdefault(entry["address"], {"checks": 0, "failures": 0, "step": 0, "streak": 0,
                                                                 "repairs": {}, "last_healthy": 0})
        self._exposure(record, entry, service)
        record["checks"] += 1
        record["state"] = entry["state"]
        record["holding"] = entry["counts"].get("current", 0) if entry["counts"] else 0
        layers = entry.get("layers") or {}
        record["layers"] = dict((name, {True: 1, False: 0}.get(layers[name].get("ok"), -1)) for name in layers)
        record["reason"] = [entry.get("failed_layer") or "descriptor", (entry["reasons"] or [""])[0][:240]] \
            if entry["state"] == "unhealthy" else None
        return record

    def _unhealthy(self, ctl, state, record, entry, service, evidence, now, extra, ready, held):
        """An unhealthy service: the repair its failed layer calls for, once confirmed and allowed, else a line
        saying why not. held["lock"]: the tor's lock (None: not asked yet; False: another run holds it)."""
        address, layers = entry["address"], entry.get("layers") or {}
        record["failures"] += 1
        record["streak"] += 1
        failed = entry.get("failed_layer")
        units, intro = [], False

        def none(result):
            self.say(service=address, state="unhealthy", evidence=evidence, action="none", **dict(extra, result=result))

        if failed not in (None, "descriptor") and (layers.get("descriptor") or {}).get("ok") is not False:
            # the descriptor is fine: reposting or reloading would not help this layer. A backend that refuses
            # gets its unit restarted; introduction or reach failing (the backend accepts) gets the intro ladder
            units = self._units_for(layers.get("backend")) if failed == "backend" else []
            intro = failed in ("introduction", "reach")
            if not units and not intro:
                return none("the %s layer failed, the descriptor is fine: no descriptor repair; %s" % (
                    failed, "no unit in backend_units for its target, so nothing to restart"
                    if failed == "backend" else "no repair for the %s layer" % failed))
        if record["streak"] < self.config["confirm_checks"]:
            return none("unhealthy %d time(s) in a row; a repair after %d" % (
                record["streak"], self.config["confirm_checks"]))
        if self.config["report_only"]:
            return none("report only")
        if units:
            return self._restart_backends(state, record, address, units, evidence, now, extra)
        if not ready:
            return none("tor is bootstrapping")
        if held["lock"] is None:
            held["lock"] = self._take_lock(ctl)
        if held["lock"] is False:
            return none("a run of the collection holds the tor's lock; no repair now")
        if intro:
            return self._repair_intro(ctl, state, record, entry, evidence, now, extra)
        return self._repair(ctl, state, record, entry, service, evidence, now, extra)

    def _exposure(self, record, entry, service):
        """The service's exposed ports: a journal line each, and {port: 1 or 0} of each port checked in its record
        (for the metric; none when they were not checked)."""
        if entry.get("exposed") is None:
            record.pop("exposed", None)
            return
        exposed = dict((str(e["port"]), e) for e in entry["exposed"])
        record["exposed"] = dict((str(p["port"]), 0) for p in getattr(service, "ports", None) or ())
        record["exposed"].update((p, 1) for p in exposed)
        for port in sorted(exposed, key=int):
            item = exposed[port]
            self.say(service=entry["address"], backend="exposed", port=port, target=item["target"],
                     listening_on=",".join(item["listening_on"]), action="none",
                     result="a scan of this host's addresses finds the backend and ties the service to the host; "
                            + listeners.FIX)

    def _readd(self, ctl, state):
        """The ephemeral services the collection made (the record in tor's DataDirectory) that tor no longer runs
        (it restarted): each added back from its kept key (tor_hidden_service keep_key), same address; one that
        cannot be is named once and leaves the record."""
        data_dir = dict(ctl.get_conf("DataDirectory")).get("DataDirectory")
        # only a running tor's DataDirectory (tor holds its lock file there), as the module writes the record
        if not data_dir or not os.path.isfile(os.path.join(data_dir, "lock")):
            return
        record = ephemeral.read_ephemeral_record(data_dir)
        if not record:
            return
        onions = ctl.list_onions()
        running = set(onions["detached"]) | set(onions["current"])
        gone = sorted(sid for sid in record if sid not in running)
        if not gone:
            return
        if self.config["report_only"]:
            for sid in gone:
                self.say(service=sid + ".onion", state="gone", action="none", result="report only")
            return
        lock = self._take_lock(ctl)
        if lock is False:
            self.say(service=",".join(s + ".onion" for s in gone), state="gone", action="none",
                     result="a run of the collection holds the tor's lock; not added back now")
            return
        try:
            record = ephemeral.read_ephemeral_record(data_dir)      # again, under the lock
            for sid in gone:
                if sid not in record:
                    continue
                try:
                    key = ephemeral.kept_key(self.config["ephemeral_key_dir"], sid)
                except OSError as exc:
                    key, why = None, "its kept key could not be read (%s)" % exc.strerror
                else:
                    why = "its key was not kept (tor_hidden_service keep_key: true keeps it)"
                if key is None:
                    record.pop(sid)
                    self.say(service=sid + ".onion", state="gone", action="none", result=(
                        "tor no longer runs this ephemeral service (restarted?) and it cannot be added back: %s; "
                        "left out of the record" % why))
                    continue
                try:
                    ephemeral.add_back(ctl, sid, record[sid], key)
                except TorError as exc:
                    self.say(service=sid + ".onion", state="gone", action="readd",
                             result="adding it back failed: %s" % str(exc)[:200])
                    continue
                state["readds"] = state.get("readds", 0) + 1
                self.say(service=sid + ".onion", state="gone", action="readd",
                         result="added back with its kept key (same address) after tor no longer ran it")
            ephemeral.write_ephemeral_record(data_dir, record)
        finally:
            if lock:
                lock.release()

    def _hung(self, state, tor, now):
        """A hung tor: restarted once it was hung on hung_checks runs in a row (restart_interval does not hold a
        hung tor back; report_only does)."""
        fields = dict(tor="hung", pid=tor["pid"], evidence=tor["evidence"][:300])
        streak, need = state["hung_streak"], self.config["hung_checks"]
        if self.config["report_only"]:
            self.say(**dict(fields, action="none", result="report only"))
            return
        if streak < need:
            self.say(**dict(fields, action="none", result="hung %d time(s) in a row; a restart after %d (restart_interval "
                                                          "does not hold back a hung tor)" % (streak, need)))
            return
        ok, output = self._restart()
        state["last_restart"] = now
        state["hung_restarts"] = state.get("hung_restarts", 0) + 1
        state["hung_streak"] = 0
        self.say(**dict(fields, action="restart", result="hung %d times in a row: %s" % (
            streak, "tor restarted" if ok else "the restart command failed: %s" % output)))

    def _units_for(self, backend):
        """The backend_units of the targets the backend layer found refusing (each unit once)."""
        units = []
        for port in (backend or {}).get("ports") or ():
            unit = self.config["backend_units"].get(port.get("target")) if not port.get("ok") else None
            if unit and unit not in units:
                units.append(unit)
        return units

    def _restart_backends(self, state, record, address, units, evidence, now, extra):
        """Restart each unit (backend_restart_command + [unit]) unless it was restarted less than
        backend_restart_interval seconds ago; one journal line."""
        last = state.setdefault("backend_restarts", {})
        done, notes = [], []
        for unit in units:
            when = (last.get(unit) or {}).get("last")
            if when and now - when < self.config["backend_restart_interval"]:
                notes.append("%s held back: restarted %d s ago (backend_restart_interval %d s)" % (
                    unit, now - when, self.config["backend_restart_interval"]))
                continue
            ok, output = self._restart(list(self.config["backend_restart_command"]) + [unit])
            entry = last.setdefault(unit, {"count": 0})
            entry.update(last=now, count=entry["count"] + 1)
            done.append(unit)
            notes.append("%s restarted" % unit if ok else "restarting %s failed: %s" % (unit, output))
        if done:
            record["repairs"]["backend"] = record["repairs"].get("backend", 0) + 1
        self.say(service=address, state="unhealthy", evidence=evidence, action="restart-backend" if done else "none",
                 unit=",".join(units), **dict(extra, result="; ".join(notes)))

    def _take_lock(self, ctl):
        facts_dir = dict(ctl.get_conf("DataDirectory")).get("DataDirectory")
        lock = TorLock(facts_dir, getattr(ctl.sock, "where", "") or "", self.config["lock_wait"])
        try:
            return lock.acquire()
        except LockTimeout:
            return False

    def _repair(self, ctl, state, record, entry, service, evidence, now, extra=None):
        notes = []
        step = min(record["step"] + 1, 3)
        if step == 1 and not onion_health.reference_text(service):
            notes.append("no copy of the descriptor clients fetch now to post (tor keeps it as its next "
                         "descriptor, which the control port does not give)")
            step = 2
        if step == 2 and entry["type"] == "ephemeral":
            notes.append("an ephemeral service has no key on disk to be added again")
            step = 3
        last = state.get("last_restart")
        if step == 3 and last and now - last < self.config["restart_interval"]:
            notes.append("restart held back: tor was restarted %d s ago (restart_interval %d s)"
                         % (now - last, self.config["restart_interval"]))
            step = 1 if onion_health.reference_text(service) else 0
        hanging = hanging_hsdirs(entry) if step == 3 else None
        if hanging:
            notes.append("restart held back: " + hanging)
            step = 1 if onion_health.reference_text(service) else 0
        if step == 1:
            outcome = self._repost(ctl, entry, service)
        elif step == 2:
            ctl.signal("RELOAD")
            outcome = "SIGHUP sent"
        elif step == 3:
            ok, output = self._restart()
            state["last_restart"] = now
            outcome = "tor restarted" if ok else "the restart command failed: %s" % output
        else:
            outcome = "nothing else to try before restart_interval has passed"
        if step:
            record["step"] = step
            record["repairs"][STEPS[step]] = record["repairs"].get(STEPS[step], 0) + 1
        self.say(service=entry["address"], state="unhealthy", evidence=evidence, action=STEPS[step] or "none",
                 **dict(extra or {}, result="; ".join(notes + [outcome])))

    def _repair_intro(self, ctl, state, record, entry, evidence, now, extra):
        """The next step of the introduction/reach ladder: 1 close the service's introduction circuits (tor builds
        new ones, to other relays when one does not answer, and publishes them); 2 an ephemeral service whose key was
        kept is added again (DEL_ONION + ADD_ONION: new introduction points, the same address); 3 (2 for any other)
        tor restarted, held back by restart_interval, meanwhile step 1 again."""
        step, notes = min(record.get("intro_step", 0) + 1, 3), []
        sid = entry["address"][:-len(".onion")]
        kept = self._kept(ctl, sid) if step == 2 and entry["type"] == "ephemeral" else None
        if step == 2 and not kept:
            step = 3
        last = state.get("last_restart")
        if step == 3 and last and now - last < self.config["restart_interval"]:
            notes.append("restart held back: tor was restarted %d s ago (restart_interval %d s)"
                         % (now - last, self.config["restart_interval"]))
            step = 1
        hanging = hanging_hsdirs(entry) if step == 3 else None
        if hanging:
            notes.append("restart held back: " + hanging)
            step = 1
        if step == 1:
            outcome = self._close_intro(ctl, sid)
        elif step == 2:
            outcome = self._readd_now(ctl, sid, *kept)
        else:
            ok, output = self._restart()
            state["last_restart"] = now
            outcome = "tor restarted" if ok else "the restart command failed: %s" % output
        record["intro_step"] = step
        record["repairs"][INTRO_STEPS[step]] = record["repairs"].get(INTRO_STEPS[step], 0) + 1
        self.say(service=entry["address"], state="unhealthy", evidence=evidence, action=INTRO_STEPS[step],
                 **dict(extra or {}, result="; ".join(notes + [outcome])))

    @staticmethod
    def _close_intro(ctl, sid):
        circuits = health_layers.intro_circuits(
            health_layers.parse_circuits(ctl.get_info("circuit-status")["circuit-status"]), sid)
        closed = 0
        for circ in circuits:
            try:
                ctl.request("CLOSECIRCUIT", [circ["id"]])
                closed += 1
            except TorError:
                pass            # gone meanwhile
        return "closed %d of its %d introduction circuits: tor builds new ones" % (closed, len(circuits))

    def _kept(self, ctl, sid):
        """(view, key) of an ephemeral service the collection recorded and whose key it kept; None otherwise."""
        data_dir = dict(ctl.get_conf("DataDirectory")).get("DataDirectory")
        view = ephemeral.read_ephemeral_record(data_dir).get(sid) if data_dir else None
        try:
            key = ephemeral.kept_key(self.config["ephemeral_key_dir"], sid) if view else None
        except OSError:
            key = None
        return (view, key) if key else None

    @staticmethod
    def _readd_now(ctl, sid, view, key):
        """DEL_ONION and ADD_ONION with the kept key. Should the ADD_ONION fail, the service stays in the collection's
        record, so the next run's _readd adds it back (or names why it cannot)."""
        try:
            ctl.del_onion(sid)
            ephemeral.add_back(ctl, sid, view, key)
        except TorError as exc:
            return "adding it again failed: %s" % str(exc)[:200]
        return "removed and added again with its kept key (same address, new introduction points)"

    def _repost(self, ctl, entry, service):
        text = onion_health.reference_text(service)
        lacking = [h["fingerprint"] for h in entry["hsdirs"] if h["result"] != "current"]
        if not lacking:
            return "nothing to post: every responsible HSDir answered with it"
        outcome = onion_health.repost(ctl, entry["address"], text, lacking, self.config["fetch_timeout"])
        return "posted to %d HSDirs: %d uploaded, %d failed, %d no answer" % (
            len(lacking), outcome["uploaded"], outcome["failed"], outcome["no_answer"])


def hanging_hsdirs(entry):
    """Why a restart would not help, in words, when relays of the network hang: some of the service's responsible
    HSDirs gave no answer in time while others answered (so this tor builds circuits). Measured on the private
    network (bench/watchdog_faults.py --faults intro): while relays hang rather than refuse, a restart of the
    service's tor did not bring it back sooner; tor's own circuit timeouts decide, and a fresh client's fetches stall
    on the same relays. None when no HSDir was silent, or none answered (this tor may be the one at fault)."""
    results = [h.get("result") for h in entry.get("hsdirs") or ()]
    silent = results.count("no_answer")
    if not silent or silent == len(results):
        return None
    return ("%d of %d responsible HSDirs gave no answer in time while %d answered: relays of the network hang, "
            "which a restart of this tor does not mend" % (silent, len(results), len(results) - silent))


def layer_words(layers):
    """'tor:ok backend:fail descriptor:ok introduction:ok reach:unchecked' of a service's layers."""
    return " ".join("%s:%s" % (name, {True: "ok", False: "fail"}.get(layers[name].get("ok"), "unchecked"))
                    for name in health_layers.LAYERS if name in layers)


def metrics_text(state):
    """The node_exporter textfile of the watchdog's counters and gauges."""
    out = []

    def family(name, kind, text, samples):
        out.append("# HELP %s %s" % (name, text))
        out.append("# TYPE %s %s" % (name, kind))
        out.extend("%s%s %s" % (name, labels, value) for labels, value in samples)

    services = sorted(state["services"].items())

    def label(address, **extra):
        pairs = [("onion", address[:-len(".onion")] if address.endswith(".onion") else address)] + sorted(extra.items())
        return "{" + ",".join('%s="%s"' % (k, v) for k, v in pairs) + "}"

    family("onionlab_watchdog_tor_up", "gauge", "Whether tor answered on its control port at the last run.",
           [("", state.get("tor_up", 0))])
    family("onionlab_watchdog_tor_hung", "gauge", "1: tor's process lives but its control port did not answer at "
           "the last run.", [("", state.get("tor_hung", 0))])
    family("onionlab_watchdog_last_run_timestamp_seconds", "gauge", "When the watchdog last ran.",
           [("", int(state.get("last_run", 0)))])
    family("onionlab_watchdog_checks_total", "counter", "Checks of the service.",
           [(label(a), r["checks"]) for a, r in services])
    family("onionlab_watchdog_failures_total", "counter", "Checks that found the service unhealthy.",
           [(label(a), r["failures"]) for a, r in services])
    family("onionlab_watchdog_repairs_total", "counter", "Repairs by step of the ladder, and backend: a "
           "backend_units unit restarted.",
           [(label(a, step=s), r["repairs"].get(s, 0)) for a, r in services for s in REPAIRS])
    family("onionlab_watchdog_readds_total", "counter", "Ephemeral services added back from their kept keys after "
           "tor no longer ran them.", [("", state.get("readds", 0))])
    family("onionlab_watchdog_hung_restarts_total", "counter", "Restarts of tor found hung on hung_checks runs "
           "in a row.", [("", state.get("hung_restarts", 0))])
    family("onionlab_watchdog_backend_restarts_total", "counter", "Restarts of each backend_units unit.",
           [('{unit="%s"}' % u, v.get("count", 0)) for u, v in sorted((state.get("backend_restarts") or {}).items())])
    family("onionlab_watchdog_healthy", "gauge", "1 healthy, 0 unhealthy, -1 pending (nothing to judge yet).",
           [(label(a), {"healthy": 1, "unhealthy": 0}.get(r.get("state"), -1)) for a, r in services])
    family("onionlab_watchdog_unhealthy_streak", "gauge", "Unhealthy checks in a row.",
           [(label(a), r["streak"]) for a, r in services])
    family("onionlab_watchdog_hsdirs_holding", "gauge", "Responsible HSDirs serving the current descriptor.",
           [(label(a), r.get("holding", 0)) for a, r in services])
    family("onionlab_watchdog_last_healthy_timestamp_seconds", "gauge", "When the service was last healthy.",
           [(label(a), int(r["last_healthy"])) for a, r in services])
    family("onionlab_watchdog_layer_ok", "gauge",
           "Each layer of the service's verdict at the last run: 1 ok, 0 failed, -1 not checked (tor, backend, "
           "descriptor, introduction, reach).",
           [(label(a, layer=n), r["layers"][n]) for a, r in services
            for n in health_layers.LAYERS if n in (r.get("layers") or {})])
    family("onionlab_watchdog_reason_info", "gauge",
           "1 for each unhealthy service: the first layer that failed and its evidence in words (what the prometheus "
           "role's alerts quote).",
           [(label(a, layer=r["reason"][0], reason=_label_value(r["reason"][1])), 1) for a, r in services
            if r.get("reason")])
    family("onionlab_watchdog_backend_exposed", "gauge",
           "1: the service port's target also listens on a non-loopback address (a scan of the host finds the "
           "backend); 0: loopback or unix socket only. Fix: bind the backend to 127.0.0.1 or a unix socket.",
           [(label(a, port=p), v) for a, r in services
            for p, v in sorted((r.get("exposed") or {}).items(), key=lambda i: int(i[0]))])
    return "\n".join(out) + "\n"


def _label_value(text):
    """A Prometheus label value: backslash, double quote and newline escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.stderr.write("usage: onionlab-watchdog CONFIG.json\n")
        return 2
    try:
        config = load_config(argv[0])
    except (OSError, ValueError) as exc:
        sys.stderr.write("onionlab-watchdog: %s\n" % exc)
        return 2
    Watchdog(config).run()
    return 0
