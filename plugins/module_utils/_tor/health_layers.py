# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layers of one onion service's health verdict (issue 38), beside the descriptor that onion_health.py
checks: pure parsers and small probes, standard library only, used by onion_health.py (module
tor_onion_health, the watchdog).

Each layer is one dict: ``ok`` (True, False, or None when it was not checked), ``evidence`` (words),
``seconds`` (how long it took) and the layer's own details.

- tor: the control port answered, and in how long; when it does not answer, whether tor's process lives
  (``hung``: alive but silent, SIGSTOPped or a blocked main loop) or not (``unreachable``). The process is the
  owner of the control port's listening socket (/proc/net/tcp, tcp6 or unix -> the socket's inode -> the
  /proc/PID/fd that holds it; reading another user's fds needs root) or the PID in a pid file (Debian:
  /run/tor/tor.pid).
- backend: each service port's target (TCP host:port, or a unix socket) accepts a connection from this host.
- introduction: the service side's established introduction circuits (GETINFO circuit-status, PURPOSE=
  HS_SERVICE_INTRO with HS_STATE=HSSI_ESTABLISHED and REND_QUERY=<service id>), their count against the configured
  HiddenServiceNumIntroductionPoints, their age (TIME_CREATED), each one's last hop (the intro relay) in tor's
  current consensus and Running. The intro points listed in the descriptor itself are in its encrypted inner
  layer (AES-256-CTR, which the standard library does not have), so the service side's view is used. tor keeps
  a set of introduction points for each of its two descriptors (the current and the next time period's), so up to
  twice the configured number are established.
- reach: see onion_health.reach (a fresh client through the service's own tor's SocksPort).

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

import datetime
import os
import re
import socket
import time

PROC = "/proc"
LAYERS = ("tor", "backend", "descriptor", "introduction", "reach")
OPTIONAL_LAYERS = ("backend", "introduction", "reach")
BACKEND_TIMEOUT = 5.0
_CIRC_RE = re.compile(r"^(\d+) (\S+)(?: (\$\S+))?((?: [A-Z_]+=\S*)*)\s*$")


def layer(ok, evidence, seconds=None, **details):
    """One layer's dict."""
    out = {"ok": ok, "evidence": evidence, "seconds": None if seconds is None else round(seconds, 3)}
    out.update(details)
    return out


def not_checked(why):
    return layer(None, "not checked: %s" % why)


# -- tor: answering, hung or gone ---------------------------------------------------------------------
def _inodes_tcp(port, proc=None):
    """Inodes of the LISTEN sockets on TCP port `port` in this network namespace."""
    proc = proc or PROC
    out = set()
    for name in ("tcp", "tcp6"):
        try:
            with open("%s/net/%s" % (proc, name)) as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == "0A" and fields[1].rpartition(":")[2].upper() == "%04X" % port:
                out.add(fields[9])
    return out


def _inodes_unix(path, proc=None):
    """Inodes of the listening unix sockets bound to `path`."""
    proc = proc or PROC
    out = set()
    try:
        with open("%s/net/unix" % proc) as handle:
            lines = handle.read().splitlines()[1:]
    except OSError:
        return out
    for line in lines:
        fields = line.split()
        if len(fields) >= 8 and fields[7] == path:
            out.add(fields[6])
    return out


def socket_owner(inodes, proc=None):
    """The PID of a process holding one of the socket inodes (None when none is readable)."""
    proc = proc or PROC
    if not inodes:
        return None
    wanted = set("socket:[%s]" % i for i in inodes)
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        fd_dir = "%s/%s/fd" % (proc, entry)
        try:
            names = os.listdir(fd_dir)
        except OSError:
            continue
        for name in names:
            try:
                if os.readlink("%s/%s" % (fd_dir, name)) in wanted:
                    return int(entry)
            except OSError:
                continue
    return None


def process_state(pid, proc=None):
    """(state letter, command name) of a live process from /proc/PID/stat; None when it is gone (or a zombie)."""
    proc = proc or PROC
    try:
        with open("%s/%d/stat" % (proc, pid)) as handle:
            text = handle.read()
    except (OSError, ValueError, TypeError):
        return None
    name = text[text.find("(") + 1:text.rfind(")")]
    state = text[text.rfind(")") + 1:].split()[0] if ")" in text else "?"
    if state in ("Z", "X"):
        return None
    return state, name


STATE_WORDS = {"T": "stopped by a signal", "t": "stopped by a debugger", "D": "in uninterruptible sleep",
               "R": "running", "S": "sleeping"}


def find_tor_pid(control_port=None, control_socket=None, pid_file=None, proc=None):
    """(pid, how it was found) of the tor behind a control port or socket; (None, why not)."""
    proc = proc or PROC
    inodes = _inodes_tcp(control_port, proc) if control_port else _inodes_unix(control_socket, proc) \
        if control_socket else set()
    pid = socket_owner(inodes, proc)
    if pid is not None:
        return pid, "the owner of the control %s's listening socket" % ("port" if control_port else "socket")
    if pid_file:
        try:
            with open(pid_file) as handle:
                text = handle.read().strip()
            if text.isdigit():
                return int(text), "the PID in %s" % pid_file
        except OSError:
            pass
    if not inodes:
        return None, "nothing listens on the control %s" % ("port" if control_port else "socket")
    return None, "no readable process holds the control %s's socket (it takes root to read another user's)" % (
        "port" if control_port else "socket")


def tor_unanswered(error, control_port=None, control_socket=None, pid_file=None, proc=None, timed_out=True):
    """The tor layer when the control port did not answer (`error`, the exception's text; timed_out: it accepted
    the connection or command but gave no answer in time): state "hung" when it timed out and tor's process lives,
    else "unreachable"."""
    proc = proc or PROC
    pid, how = find_tor_pid(control_port, control_socket, pid_file, proc)
    live = process_state(pid, proc) if pid is not None else None
    if live is not None and not timed_out:
        evidence = "%s (tor's process %d, %s, lives)" % (error, pid, how)
        return layer(False, evidence, state="unreachable", pid=pid, process_state=live[0], found_by=how)
    if live is not None:
        state, name = live
        evidence = ("tor's process %d (%s, %s) lives but its control port does not answer: %s"
                    % (pid, name, STATE_WORDS.get(state, "state %s" % state), error))
        return layer(False, evidence, state="hung", pid=pid, process_state=state, found_by=how)
    evidence = "%s; %s" % (error, how if pid is None else "process %d (%s) is gone" % (pid, how))
    return layer(False, evidence, state="unreachable", pid=None, process_state=None, found_by=how)


# -- backend ---------------------------------------------------------------------------------------------
def port_target(port):
    """(kind, where) of a service port ({port, target_address, target_port}): ("unix", path) or ("tcp", (host,
    port)); tor's defaults (127.0.0.1, the service port) filled in."""
    address = port.get("target_address") or "127.0.0.1"
    if address.startswith("unix:"):
        path = address[len("unix:"):]
        if len(path) >= 2 and path[0] == path[-1] == '"':
            path = path[1:-1]
        return "unix", path
    target_port = port.get("target_port") or port["port"]
    return "tcp", (address.strip("[]"), int(target_port))


def show_target(kind, where):
    if kind == "unix":
        return "unix:%s" % where
    host, port = where
    return ("[%s]:%d" if ":" in host else "%s:%d") % (host, port)


def accepts(kind, where, timeout=BACKEND_TIMEOUT):
    """None when a connection to the target is accepted, else why not."""
    sock = None
    try:
        if kind == "unix":
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(where)
        else:
            sock = socket.create_connection(where, timeout=timeout)
        return None
    except socket.timeout:
        return "no answer within %.3g s" % timeout
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        if sock is not None:
            sock.close()


def backend_layer(ports, timeout=BACKEND_TIMEOUT, clock=time.monotonic):
    """The backend layer of a service from its ports (None: not known)."""
    if ports is None:
        return not_checked("the service's targets are not known (an ephemeral service the collection's record "
                           "does not hold)")
    started = clock()
    checked, seen = [], {}
    for port in ports:
        kind, where = port_target(port)
        shown = show_target(kind, where)
        if shown not in seen:
            seen[shown] = accepts(kind, where, timeout)
        checked.append({"port": port["port"], "target": shown, "ok": seen[shown] is None, "error": seen[shown]})
    failed = [c for c in checked if not c["ok"]]
    words = ["%s accepts" % c["target"] for c in checked if c["ok"] and c["target"] not in (f["target"] for f in failed)]
    words = sorted(set(words), key=words.index)
    bad = sorted(set("%s refuses (%s; port %d)" % (c["target"], c["error"], c["port"]) for c in failed))
    return layer(not failed, ", ".join(bad + words) or "no ports", clock() - started, ports=checked)


# -- introduction ----------------------------------------------------------------------------------------
def parse_circuits(text):
    """GETINFO circuit-status -> [{id, status, path: [(fingerprint, nickname)], keywords}]."""
    out = []
    for line in (text or "").splitlines():
        match = _CIRC_RE.match(line.strip())
        if not match:
            continue
        path = []
        for hop in (match.group(3) or "").split(","):
            fingerprint, _sep, nickname = hop.lstrip("$").partition("~")
            fingerprint = fingerprint.partition("=")[0]
            if re.match(r"^[0-9A-Fa-f]{40}\Z", fingerprint):
                path.append((fingerprint.upper(), nickname or None))
        keywords = dict(w.split("=", 1) for w in (match.group(4) or "").split() if "=" in w)
        out.append({"id": match.group(1), "status": match.group(2), "path": path, "keywords": keywords})
    return out


def _age(created, now):
    try:
        when = datetime.datetime.strptime(created.split(".")[0], "%Y-%m-%dT%H:%M:%S")
    except (AttributeError, ValueError):
        return None
    return max(0, int((now - when.replace(tzinfo=datetime.timezone.utc)).total_seconds()))


def intro_circuits(circuits, service_id, routers=None, now=None):
    """The service's established introduction circuits: [{id, relay, nickname, age_seconds, in_consensus, running}]
    (routers: {fingerprint: [flags]} of tor's consensus; None when not known)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    out = []
    for circ in circuits:
        words = circ["keywords"]
        if (circ["status"] != "BUILT" or words.get("PURPOSE") != "HS_SERVICE_INTRO"
                or words.get("HS_STATE") != "HSSI_ESTABLISHED" or words.get("REND_QUERY") != service_id
                or not circ["path"]):
            continue
        relay, nickname = circ["path"][-1]
        flags = None if routers is None else routers.get(relay)
        out.append({"id": circ["id"], "relay": relay, "nickname": nickname,
                    "age_seconds": _age(words.get("TIME_CREATED"), now),
                    "in_consensus": None if routers is None else flags is not None,
                    "running": None if flags is None else "Running" in flags})
    return out


def _duration(seconds):
    if seconds is None:
        return "?"
    if seconds < 120:
        return "%d s" % seconds
    if seconds < 7200:
        return "%d min" % (seconds // 60)
    return "%.1f h" % (seconds / 3600.0)


def introduction_layer(circuits, configured, seconds=None):
    """The introduction layer from intro_circuits(): ok when at least one established intro circuit ends at a relay
    of tor's consensus that is Running (or not known to be otherwise)."""
    configured = configured or 3
    usable = [c for c in circuits if c["in_consensus"] is not False and c["running"] is not False]
    ages = sorted(c["age_seconds"] for c in circuits if c["age_seconds"] is not None)
    words = "%d introduction circuit%s established (%d configured per descriptor, up to %d for the current and " \
            "next descriptors)" % (len(circuits), "" if len(circuits) == 1 else "s", configured, 2 * configured)
    if ages:
        words += ", ages %s to %s" % (_duration(ages[0]), _duration(ages[-1]))
    gone = [c for c in circuits if c["in_consensus"] is False]
    down = [c for c in circuits if c["in_consensus"] and c["running"] is False]
    if gone:
        names = ", ".join(c["nickname"] or c["relay"] for c in gone)
        words += "; %d at relays not in tor's consensus (%s)" % (len(gone), names)
    if down:
        names = ", ".join(c["nickname"] or c["relay"] for c in down)
        words += "; %d at relays without the Running flag (%s)" % (len(down), names)
    if circuits and not gone and not down and circuits[0]["in_consensus"] is not None:
        words += "; every intro relay in tor's consensus and Running"
    return layer(bool(usable), words, seconds, configured=configured, established=len(circuits), circuits=circuits)


# -- reach -----------------------------------------------------------------------------------------------
def socks_listener(value):
    """The port of a SocksPort on 127.0.0.1 from GETINFO net/listeners/socks (quoted addresses, space separated);
    None when there is none."""
    for word in (value or "").split():
        word = word.strip('"')
        host, sep, port = word.rpartition(":")
        if sep and host == "127.0.0.1" and port.isdigit():
            return int(port)
    return None


def reach_port(ports, web_ports):
    """(port, mode, tls) to probe: the first of web_ports the service has (HTTP; 443 over TLS), else its lowest
    port (a TCP connection); None when it has none."""
    numbers = sorted(set(p["port"] for p in ports or []))
    if not numbers:
        return None
    for web in web_ports:
        if web in numbers:
            return web, "http", web == 443
    return numbers[0], "tcp", False


def summarize_attempts(attempts, port, seconds, fetched):
    """The reach layer from its attempts ([{reachable, reason, error, socks_reply, status, seconds}])."""
    answered = [a for a in attempts if a["reachable"]]
    if answered:
        first = answered[0]
        how = ("HTTP %s" % first["status"]) if first.get("status") is not None else "TCP connected"
        words = "%d of %d fresh connection%s to port %d answered (%s in %.1f s)" % (
            len(answered), len(attempts), "" if len(attempts) == 1 else "s", port, how, first["seconds"])
    else:
        last = attempts[-1] if attempts else {}
        code = last.get("socks_reply")
        why = ("SOCKS error 0x%02X %s" % (code, (last.get("reason") or "").replace("_", " "))) if code is not None \
            else (last.get("error") or "no attempt")
        words = "0 of %d fresh connection%s to port %d in %.0f s, %s" % (
            len(attempts), "" if len(attempts) == 1 else "s", port, seconds, why)
    if fetched:
        words += "; the descriptor fetched anew from the HSDirs %d time%s" % (fetched, "" if fetched == 1 else "s")
    elif fetched is not None:
        words += "; the descriptor came from tor's client cache (tor delays a NEWNYM sent within 10 s of the last)"
    return layer(bool(answered), words, seconds, port=port, attempts=attempts, descriptor_fetches=fetched)


# -- the verdict -----------------------------------------------------------------------------------------
def first_failed(layers):
    """The first layer that failed, in the order the cause is named: tor, backend, descriptor, introduction,
    reach (a dead backend also fails reach; the backend is named)."""
    for name in LAYERS:
        if (layers.get(name) or {}).get("ok") is False:
            return name
    return None


def reasons(layers):
    """The verdict in words: the failed layers first, then the others, each "layer: evidence"."""
    failed = [n for n in LAYERS if n in layers and layers[n]["ok"] is False]
    rest = [n for n in LAYERS if n in layers and layers[n]["ok"] is not False and n != "tor"]
    return ["%s: %s" % (n, layers[n]["evidence"]) for n in failed + rest]
