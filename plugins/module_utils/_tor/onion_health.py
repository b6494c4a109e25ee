# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The state of a tor's onion services as the network sees them (module tor_onion_health, the watchdog).

For each service: its own side (the descriptor tor built: GETINFO hs/service/desc/id/<id>, its
revision counter, lifetime and blinded key) and the network's side: the HSDirs responsible for it
in the current time period (hsdir_ring.py, from the consensus and microdescriptors tor holds), each
asked for the descriptor with one HSFETCH ... SERVER=, their answers read from HS_DESC and
HS_DESC_CONTENT events (held the current revision, an older or a newer one, NOT_FOUND, failed with
tor's reason, no answer in time; how long each took). One verdict per service: "healthy",
"unhealthy" (with the reasons in words) or "pending" (tor has built no descriptor yet, or has no
live consensus: nothing to judge). Nothing is changed on tor, except what a fetch changes in its
client cache.

Beside the verdict, which is about reachability only: whether a service port's backend can also be found from
the clearnet (listeners.py: its target port listening on a non-loopback address of tor's host), each such port in
the service's `exposed`. Checked whatever tor's bootstrap (a pending service too); not possible when tor is not a
process of this host, or for an ephemeral service whose targets neither tor nor the collection's record gives.

The verdict has layers (issue 38; health_layers.py), each with its evidence and the seconds it took: tor (the
control port answered), backend (each port's target accepts a connection on this host), descriptor (the HSDirs, as
above), introduction (the service side's established introduction circuits, their relays in the consensus) and
reach (a fresh client got through: reach() below). A service is healthy only when every layer checked is; the
reasons name the failed layers first ("reach: 0 of 3 fresh connections ..."), `failed_layer` the first of them in
the order tor, backend, descriptor, introduction, reach. When tor has no SocksPort on 127.0.0.1 the reach layer
says it was not checked (ok null) and the verdict rests on the other layers.

repost() is the first step of the watchdog's repair: the service's current descriptor posted to the
HSDirs that lack it (+HSPOST SERVER=... HSADDRESS=...), the outcome from HS_DESC events.

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

import base64
import re
import secrets
import threading
import time

from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth as _client_auth
from ansible_collections.onionlab.tor.plugins.module_utils._tor import probe_client as _probe_client
from ansible_collections.onionlab.tor.plugins.module_utils._tor import consensus as _consensus
from ansible_collections.onionlab.tor.plugins.module_utils._tor import health_layers as _layers
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hsdir_ring
from ansible_collections.onionlab.tor.plugins.module_utils._tor import listeners as _listeners
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor import probe as _probe
from ansible_collections.onionlab.tor.plugins.module_utils._tor import socks as _socks
from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_list
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import OperationFailed, TorError

DEFAULT_TIMEOUT = 30.0
# how many HSDirs the descriptor layer asks at a time (3 services of 8), and how many services the reach layer probes
# at a time: each is a circuit (a probe: a fetch, an introduction and a rendezvous) of tor's client side, which
# holds at most 32 pending (MaxClientCircuitsPending) and learns a longer build timeout from a burst of timeouts
# (see _fetch)
FETCHES_IN_FLIGHT = 24
PROBES_IN_FLIGHT = 4
REACH_TIMEOUT = 60.0
REACH_ATTEMPTS = 3
WEB_PORTS = (80, 443)
CONSENSUS_KEY = "dir/status-vote/current/consensus-microdesc"
_ROUTER_FIELDS = ["fingerprint", "nickname", "flags", "protocols", "microdescriptor_digest"]
_CERT_RE = re.compile(r"-----BEGIN ED25519 CERT-----\n(.*?)\n-----END ED25519 CERT-----", re.S)
_HSDIR_RE = re.compile(r"\$([0-9A-Fa-f]{40})(?:[~=]\S*)?\Z")


class HealthError(TorError):
    """A request this module cannot answer (an address that is not a service of this tor)."""


# -- descriptors ---------------------------------------------------------------------------------------
def outer_layer(text):
    """(revision counter, lifetime in minutes, blinded key bytes or None) of a v3 descriptor's plaintext
    outer layer; (None, None, None) when it is not one."""
    if not text or not text.startswith("hs-descriptor 3"):
        return None, None, None
    revision = lifetime = None
    for line in text.splitlines():
        if line.startswith("revision-counter "):
            revision = _int(line.split(" ", 1)[1])
        elif line.startswith("descriptor-lifetime "):
            lifetime = _int(line.split(" ", 1)[1])
        elif line == "superencrypted":
            break
    match = _CERT_RE.search(text)
    return revision, lifetime, signed_with_key(match.group(1)) if match else None


def _int(text):
    text = text.strip()
    return int(text) if text.isdigit() else None


def signed_with_key(cert_b64):
    """The key an ed25519 certificate (tor's cert-spec) was signed with, from its extension 04: for a
    descriptor signing key certificate, the service's blinded key. None when absent or malformed."""
    try:
        raw = base64.b64decode("".join(cert_b64.split()))
    except (ValueError, TypeError):
        return None
    if len(raw) < 40 or raw[0] != 1:
        return None
    position, count = 40, raw[39]
    for dummy in range(count):
        if position + 4 > len(raw):
            return None
        length, kind = int.from_bytes(raw[position:position + 2], "big"), raw[position + 2]
        data = raw[position + 4:position + 4 + length]
        if kind == 4 and length == 32 and len(data) == 32:
            return data
        position += 4 + length
    return None


# -- what tor holds: services, consensus, ring ------------------------------------------------------
def local_services(ctl):
    """[{address, path, type, ports}] of every onion service tor runs (persistent ones whose key file could not
    be read have address None; ports is None for an ephemeral service the collection's record does not know)."""
    out = []
    for service in service_list.list_services(ctl):
        out.append({"address": service.get("onion_address"), "path": service.get("path"),
                    "type": service["type"], "ports": service.get("ports"),
                    "num_intro_points": service.get("num_intro_points"),
                    "client_auth": bool(service.get("authorized_clients") or service.get("client_auth_v3"))})
    return out


def backend_exposure(ctl, listed):
    """({address: (exposed ports or None, why not checked or None)}, {checked, problem}): each service's
    ports whose backend also listens on a non-loopback address of tor's host (listeners.py)."""
    try:
        pid = ctl.get_info("process/pid").get("process/pid")
    except OperationFailed:
        pid = None
    found, problem = _listeners.read_listeners(pid, _listeners.PROC)
    out = {}
    for service in listed:
        if found is None:
            out[service["address"]] = (None, problem)
        elif service["ports"] is None:
            out[service["address"]] = (None, "tor does not give an ephemeral service's targets, and the "
                                             "collection's record in tor's DataDirectory has none for it (made by "
                                             "another controller) or could not be read")
        else:
            out[service["address"]] = (_listeners.service_exposure(service["ports"], found), None)
    return out, {"checked": found is not None, "problem": problem}


def exposure_warnings(result):
    """One warning per exposed port of a check()'s result."""
    return [_listeners.describe(s["address"], e) for s in result["services"] for e in s.get("exposed") or []]


def network_view(ctl):
    """(Period, Ring, consensus summary) from the consensus and microdescriptors tor holds; (None, None,
    why) when it has no live consensus."""
    try:
        text = ctl.get_info(CONSENSUS_KEY)[CONSENSUS_KEY]
    except OperationFailed as exc:
        return None, None, "tor has no consensus (%s)" % exc.message
    if not text.strip():
        return None, None, "tor has no consensus yet"
    doc = _consensus.parse_consensus(text, fields=_ROUTER_FIELDS)
    if not doc["summary"]["is_valid"]:
        return None, None, "tor's consensus is not valid now (valid-after %s, valid-until %s)" % (
            doc["valid_after"], doc["valid_until"])
    testing = dict(ctl.get_conf("TestingTorNetwork")).get("TestingTorNetwork") == "1"
    period = hsdir_ring.Period(doc, testing=testing)
    by_digest = hsdir_ring.microdescriptor_identities(ctl.get_info("md/all")["md/all"])
    identities = {r["fingerprint"]: by_digest.get(r["microdescriptor_digest"]) for r in doc["routers"]}
    identities = {k: v for k, v in identities.items() if v is not None}
    ring = hsdir_ring.Ring(period, doc["routers"], identities)
    ring.flags = dict((r["fingerprint"], r["flags"]) for r in doc["routers"])
    summary = {"valid_after": doc["valid_after"], "hsdirs": len(ring.nodes),
               "replicas": hsdir_ring.param(doc, "hsdir_n_replicas"),
               "spread_fetch": hsdir_ring.param(doc, "hsdir_spread_fetch"),
               "spread_store": hsdir_ring.param(doc, "hsdir_spread_store")}
    return period, ring, summary


def bootstrapped(ctl):
    """(done, tor's bootstrap summary) from GETINFO status/bootstrap-phase."""
    phase = ctl.get_info("status/bootstrap-phase")["status/bootstrap-phase"]
    match = re.search(r"PROGRESS=(\d+)", phase)
    summary = re.search(r'SUMMARY="([^"]*)"', phase)
    return bool(match and int(match.group(1)) >= 100), summary.group(1) if summary else phase[:80]


# -- the check -------------------------------------------------------------------------------------------
class _Service:
    def __init__(self, entry):
        self.address = entry["address"]
        self.service_id = self.address[:-len(".onion")]
        self.path = entry.get("path")
        self.type = entry["type"]
        self.ports = entry.get("ports")
        self.num_intro_points = entry.get("num_intro_points")
        self.client_auth = entry.get("client_auth", False)
        self.layers = {}
        self.descriptor = None
        self.revision = self.lifetime = self.blinded = None
        self.responsible = []
        self.fetch_set = set()
        self.for_period = None
        self.answers = {}   # fingerprint -> dict
        self.texts = {}     # revision -> a descriptor text an HSDir served
        self.client_blinded = None
        self.pending = None
        self.fetch_started = self.fetch_seconds = None   # its HSFETCH (monotonic), and how long its answers took

    def own_side(self, ctl, period):
        key = "hs/service/desc/id/" + self.service_id
        try:
            self.descriptor = ctl.get_info(key)[key]
        except OperationFailed as exc:
            if exc.code not in ("551", "552"):   # 551 "Not found in cache": none built yet
                raise
            self.pending = "tor has not built a descriptor for it yet"
            return
        self.revision, self.lifetime, self.blinded = outer_layer(self.descriptor)
        if period is not None and self.blinded is not None:
            public = onion.parse_onion_address(self.address)
            for number in (period.number, period.number + 1, period.number - 1):
                if onion.blinded_public_key(public, number, period.length) == self.blinded:
                    self.for_period = number
                    break


def check(ctl, addresses=None, timeout=DEFAULT_TIMEOUT, min_hsdirs=None, clock=time.monotonic, **options):
    """The health of each service (all of tor's, or those of `addresses`), as a dict for a module result."""
    return run_check(ctl, addresses, timeout, min_hsdirs, clock, **options)[0]


def run_check(ctl, addresses=None, timeout=DEFAULT_TIMEOUT, min_hsdirs=None, clock=time.monotonic,
              layers=_layers.OPTIONAL_LAYERS, reach_timeout=REACH_TIMEOUT, reach_attempts=REACH_ATTEMPTS,
              web_ports=WEB_PORTS, reach_ports=None):
    """check()'s result and {address: the service's working data} (its descriptor texts, for repost). layers: the
    optional layers to check (backend, introduction, reach); tor and descriptor always are. reach_ports: {address:
    port} the reach layer probes instead of its choice (a port the service configures; HealthError otherwise)."""
    started = clock()
    ready, phase = bootstrapped(ctl)
    answered = clock() - started
    tor_layer = _layers.layer(True, "the control port answered in %.3f s" % answered, answered, state="answering")
    listed = [s for s in local_services(ctl) if s["address"]]
    if addresses:
        wanted = [a if a.endswith(".onion") else a + ".onion" for a in addresses]
        known = set(s["address"] for s in listed)
        missing = [a for a in wanted if a not in known]
        if missing:
            raise HealthError("not an onion service of this tor: %s (it runs %s)" % (
                ", ".join(missing), ", ".join(sorted(known)) or "none"))
        listed = [s for s in listed if s["address"] in wanted]
    reach_ports = _reach_ports(reach_ports, listed)
    services = [_Service(s) for s in listed]
    exposure, exposure_summary = backend_exposure(ctl, listed)
    period, ring, network = network_view(ctl) if ready else (None, None, "tor is bootstrapping (%s)" % phase)
    for service in services:
        service.own_side(ctl, period)
        if period is None and service.pending is None:
            service.pending = network
    asked = [s for s in services if s.pending is None]
    fetch_seconds = None
    if asked:
        begun = clock()
        _fetch(ctl, asked, ring, network, timeout, clock)
        fetch_seconds = clock() - begun
    for service in services:
        service.layers["tor"] = tor_layer
        if "backend" in layers:
            service.layers["backend"] = _layers.backend_layer(service.ports, clock=clock)
    if "introduction" in layers:
        introductions(ctl, asked, getattr(ring, "flags", None), clock)
    if "reach" in layers:
        reach(ctl, asked, reach_timeout, reach_attempts, web_ports, clock, reach_ports)
    results = [_verdict(s, network if isinstance(network, dict) else None, min_hsdirs, fetch_seconds)
               for s in services]
    for entry in results:
        entry["exposed"], entry["exposure_problem"] = exposure[entry["address"]]
    return {
        "healthy": all(r["state"] != "unhealthy" for r in results),
        "unhealthy": [r["address"] for r in results if r["state"] == "unhealthy"],
        "pending": [r["address"] for r in results if r["state"] == "pending"],
        "exposed": [r["address"] for r in results if r["exposed"]],
        "exposure": exposure_summary,
        "services": results,
        "period": None if period is None else {
            "number": period.number, "length_minutes": period.length, "srv": period.srv_source},
        "network": network if isinstance(network, dict) else {"problem": network},
    }, {s.address: s for s in services}


def introductions(ctl, services, flags, clock=time.monotonic):
    """Each service's introduction layer from one GETINFO circuit-status (health_layers.intro_circuits)."""
    if not services:
        return
    started = clock()
    text = ctl.get_info("circuit-status")["circuit-status"]
    circuits = _layers.parse_circuits(text)
    seconds = clock() - started
    for service in services:
        found = _layers.intro_circuits(circuits, service.service_id, flags)
        service.layers["introduction"] = _layers.introduction_layer(found, service.num_intro_points, seconds)


def _reach_ports(reach_ports, listed):
    """{address with .onion: port} of reach_ports, each checked: a service checked now, a port it configures."""
    out = {}
    by_address = dict((s["address"], s) for s in listed)
    for address, port in (reach_ports or {}).items():
        full = address if address.endswith(".onion") else address + ".onion"
        if full not in by_address:
            raise HealthError("reach_ports: %s is not a service this check covers (%s)" % (
                full, ", ".join(sorted(by_address)) or "none"))
        ports = by_address[full]["ports"]
        if ports is not None and port not in [p["port"] for p in ports]:
            raise HealthError("reach_ports: %s does not configure port %s (its ports: %s); only a configured port is "
                              "probed" % (full, port, ", ".join(str(p["port"]) for p in ports) or "none"))
        out[full] = port
    return out


def reach(ctl, services, timeout=REACH_TIMEOUT, attempts=REACH_ATTEMPTS, web_ports=WEB_PORTS,
          clock=time.monotonic, reach_ports=None):
    """Each service's reach layer: up to `attempts` connections, within `timeout` seconds, as a fresh client through
    a SocksPort of this very tor on 127.0.0.1 (GETINFO net/listeners/socks) to one configured port of the service
    (the first of web_ports it has, with an HTTP GET: any HTTP status is an answer, and is reported; 443 over TLS;
    else its lowest port, a TCP connection), until one answers. PROBES_IN_FLIGHT services at a time.

    tor's client side fetches the descriptor from the HSDirs and introduces itself like any client's; it does not
    read the local service's state. Each attempt has a fresh random SOCKS username and password, so tor
    (IsolateSOCKSAuth, on by default) builds it new circuits. That alone does not make tor fetch the descriptor
    again: measured on the private network (tor 0.4.9.11), a second and third attempt with new SOCKS credentials
    reused the cached descriptor (no HS_DESC REQUESTED), and the HSFETCH of the descriptor layer fills that cache
    too. SIGNAL NEWNYM purges tor's client-side onion-service state (descriptor cache included): the next attempt
    fetched it anew (HS_DESC REQUESTED, RECEIVED). So one NEWNYM is sent before the attempts; tor rate-limits
    NEWNYM to one per 10 seconds and delays one that comes sooner (then seen: the attempt used the cached
    descriptor), which is why `descriptor_fetches` counts the HS_DESC REQUESTED events of each service seen during
    its attempts. NEWNYM also makes this tor's other clients' later streams use new circuits.

    A service with client authorization is probed with a key tor's client side holds for it (ONION_CLIENT_AUTH_VIEW),
    else with its probe client's (probe_client.py: one key per service the module keeps in tor's DataDirectory, lent
    to tor's client side with ONION_CLIENT_AUTH_ADD, not permanent, for this check and removed after); without either
    its reach reads not checked. A service whose ports are not known (an ephemeral one made by another controller) is not probed: only a
    configured port is, never one tor would have to answer for. reach_ports ({address: port}) names the port of a
    service instead (HTTP when it is one of web_ports, else TCP)."""
    if not services:
        return
    socks_port, jobs, lent = _reach_jobs(ctl, services, web_ports, reach_ports)
    if not jobs:
        return
    first = ctl.event_mark()
    ctl.request("SETEVENTS", ["HS_DESC"])
    try:
        try:
            ctl.signal("NEWNYM")
        except OperationFailed:
            pass
        # a probe key is lent after the NEWNYM (which purges the credentials tor's client side holds for the session
        # only) and again before any attempt that finds it gone (a NEWNYM tor delayed, up to 10 s, came in between)
        lock, slots = threading.Lock(), threading.BoundedSemaphore(PROBES_IN_FLIGHT)
        threads = [threading.Thread(target=_reach_one, args=(service, choice, socks_port, timeout, attempts, clock),
                                    kwargs={"before": _lender(ctl, lock, service, lent.get(service.service_id)),
                                            "slots": slots},
                                    name="onion-health-reach-%d" % i) for i, (service, choice) in enumerate(jobs)]
        for thread in threads:
            thread.daemon = True
            thread.start()
        for thread in threads:
            thread.join()
        while ctl.sock.wait_event(0.2) is not None:
            pass
    finally:
        ctl.request("SETEVENTS", [])
        for service_id in lent:   # the probe's key was lent to tor's client side for this check only
            try:
                _client_auth.remove(ctl, service_id)
            except TorError:
                pass
    events = ctl.events_since(first)
    for service, choice in jobs:
        fetched = _fetches_requested(events, service.service_id)
        found = service.layers["reach"]
        service.layers["reach"] = _layers.summarize_attempts(found["attempts"], choice[0], found["seconds"], fetched)
        service.layers["reach"]["socks_port"] = "127.0.0.1:%d" % socks_port


def _reach_jobs(ctl, services, web_ports, reach_ports):
    """(this tor's SocksPort on 127.0.0.1, [(service, its port choice)] to probe, {service id: probe key to lend});
    a service that cannot be probed gets its reach layer 'not checked' with why."""
    try:
        value = ctl.get_info("net/listeners/socks")["net/listeners/socks"]
    except OperationFailed as exc:
        value, problem = "", "GETINFO net/listeners/socks failed: %s" % exc.message
    else:
        problem = "tor has no SocksPort on 127.0.0.1 (net/listeners/socks: %s)" % (value.strip() or "none")
    socks_port = _layers.socks_listener(value)
    jobs, lent, seen = [], {}, {}
    for service in services:
        chosen = (reach_ports or {}).get(service.address)
        choice = _layers.reach_port(service.ports if chosen is None else [{"port": chosen}], web_ports)
        if socks_port is None:
            service.layers["reach"] = _layers.not_checked(problem)
        elif choice is None:
            service.layers["reach"] = _layers.not_checked(
                "the service's ports are not known (an ephemeral service the collection's record does not hold)"
                if service.ports is None else "the service has no port")
        elif service.client_auth and not _holds_client_key(ctl, service.service_id):
            key, why = _probe_key(ctl, service, seen)
            if why:
                service.layers["reach"] = _layers.not_checked(
                    "the service admits authorized clients only, and this tor's client side holds no key for it "
                    "(ONION_CLIENT_AUTH_VIEW): %s" % why)
            else:
                lent[service.service_id] = key
                jobs.append((service, choice))
        else:
            jobs.append((service, choice))
    return socks_port, jobs, lent


def _fetches_requested(events, service_id):
    """How many HS_DESC REQUESTED events (tor's client side fetching the descriptor) name service_id."""
    fetched = 0
    for event in events:
        words = event.lines[0].text.split()
        if len(words) >= 3 and words[:2] == ["HS_DESC", "REQUESTED"] and words[2] == service_id:
            fetched += 1
    return fetched


def _probe_key(ctl, service, seen):
    """(the service's probe key, None) from probe_client (kept in tor's DataDirectory by the module that manages the
    service's clients), or (None, why not in words). seen: tor's DataDirectory, asked once per check."""
    if not service.path:
        return None, "no probe client of ours (an ephemeral service)"
    try:
        if "data_dir" not in seen:
            seen["data_dir"] = dict(ctl.get_conf("DataDirectory")).get("DataDirectory")
        data_dir = seen["data_dir"]
        key = _probe_client.private_key(_probe_client.directory(data_dir), service.path) if data_dir else None
    except OSError as exc:
        return None, "its probe key could not be read (%s)" % exc.strerror
    if key is None:
        return None, "no probe client of ours (tor_hidden_service and the onion_service role add one, named probe, " \
                     "to a service whose clients they manage)"
    return key, None


def _lender(ctl, lock, service, key):
    """None, or a callable that gives tor's client side the service's probe key (not permanently) when it holds none:
    called by the reach thread before each attempt; the control connection is shared under `lock`."""
    if key is None:
        return None

    def lend():
        with lock:
            if not _holds_client_key(ctl, service.service_id):
                _client_auth.add(ctl, service.service_id, key, client_name=_probe_client.NAME)
    return lend


def _holds_client_key(ctl, service_id):
    """Whether tor's client side holds a client authorization key for the service (the key itself is not kept)."""
    try:
        return bool(_client_auth.view(ctl, service_id))
    except TorError:
        return False


def _reach_one(service, choice, socks_port, timeout, attempts, clock, before=None, slots=None):
    """The attempts at one service (a thread of reach()); its layer left in service.layers["reach"]. before: called
    before each attempt (the probe key lent again when tor's client side lost it). slots: a semaphore that bounds
    how many services are probed at once (PROBES_IN_FLIGHT); the timeout counts from the service's turn."""
    if slots is not None:
        with slots:
            return _reach_one(service, choice, socks_port, timeout, attempts, clock, before)
    port, mode, tls = choice
    started = clock()
    done = []
    try:
        for number in range(attempts):
            left = started + timeout - clock()
            if left <= 0:
                break
            proxy = _socks.SocksProxy("127.0.0.1", socks_port, username="onionlab-health-" + secrets.token_hex(8),
                                      password=secrets.token_hex(8))
            target = _probe.Target(service.address, service.service_id, port, mode, statuses=range(100, 600),
                                   timeout=max(1.0, left / (attempts - number)), tls=tls)
            if before is not None:
                before()
            begun = clock()
            outcome = _probe.attempt(proxy, target)
            done.append({"reachable": outcome.reachable, "status": outcome.status, "reason": outcome.reason,
                         "error": None if outcome.reachable else outcome.error, "socks_reply": outcome.socks_reply,
                         "seconds": round(clock() - begun, 3)})
            if outcome.reachable:
                break
            if number + 1 < attempts:
                time.sleep(min(1.0, max(0.0, started + timeout - clock())))
    except Exception as exc:  # pylint: disable=broad-except
        # a thread's failure is the layer's evidence, never a traceback of the check
        done.append({"reachable": False, "status": None, "reason": "probe_error", "socks_reply": None,
                     "error": "the probe failed: %s" % exc, "seconds": round(clock() - started, 3)})
    finally:
        service.layers["reach"] = {"attempts": done, "seconds": clock() - started}


def repost(ctl, address, text, fingerprints, timeout=DEFAULT_TIMEOUT, clock=time.monotonic):
    """Post a descriptor (its text) of the service at `address` to the HSDirs in `fingerprints` (one +HSPOST);
    {"uploaded", "failed", "no_answer"} counted from the HS_DESC events until all answered or the deadline."""
    start = clock()
    mark = ctl.event_mark()
    wanted = set(f.upper() for f in fingerprints)
    done = {}
    ctl.request("SETEVENTS", ["HS_DESC"])
    try:
        ctl.hs_post(text, ["$" + f for f in sorted(wanted)], address=address)
        while True:
            for event in ctl.events_since(mark):
                mark += 1
                words = event.lines[0].text.split()
                if len(words) >= 5 and words[0] == "HS_DESC" and words[1] in ("UPLOADED", "FAILED"):
                    fingerprint = _fingerprint(words[4])
                    if fingerprint in wanted:
                        done[fingerprint] = words[1]
            remaining = start + timeout - clock()
            if len(done) >= len(wanted) or remaining <= 0 or ctl.sock.wait_event(remaining) is None:
                break
    finally:
        ctl.request("SETEVENTS", [])
    uploaded = sum(1 for v in done.values() if v == "UPLOADED")
    return {"uploaded": uploaded, "failed": len(done) - uploaded, "no_answer": len(wanted) - len(done)}


def _fetch(ctl, services, ring, network, timeout, clock):
    """One HSFETCH per service to every responsible HSDir; the answers from the events. At most FETCHES_IN_FLIGHT
    HSDirs are asked at a time (a sliding window over the services): each fetch is a circuit of tor's client side,
    which holds at most 32 pending (MaxClientCircuitsPending); with 10 services asked at once (60 fetches) tor logged
    "we already have 32 general-purpose client circuits pending. Waiting until some finish." A service's `timeout`
    counts from its own HSFETCH; the check ends when every service asked has its answers or its time is up. The
    answers are read from an event mark (events_since): reading them by position lost them once the connection had
    kept 1,000 events (30 services: 21 of 30, then 0 of 30 healthy while tor had every fetch answered 200)."""
    mark = ctl.event_mark()
    ctl.request("SETEVENTS", ["HS_DESC", "HS_DESC_CONTENT"])
    try:
        by_id, queue, active = {}, [], []
        for service in services:
            public = onion.parse_onion_address(service.address)
            service.client_blinded = onion.blinded_public_key(public, ring.period.number, ring.period.length)
            service.responsible = ring.responsible(service.client_blinded, network["replicas"], network["spread_store"])
            service.fetch_set = _client_set(service.responsible, network["spread_fetch"])
            by_id[service.service_id] = service
            if service.responsible:
                queue.append(service)
        while True:
            for event in ctl.events_since(mark):
                mark += 1
                _take(event, by_id, clock())
            now = clock()
            for service in active:
                if _done(service) or now >= service.fetch_started + timeout:
                    service.fetch_seconds = now - service.fetch_started
            active = [s for s in active if s.fetch_seconds is None]
            in_flight = sum(_unanswered(s) for s in active)
            while queue and (not active or in_flight + len(queue[0].responsible) <= FETCHES_IN_FLIGHT):
                service = queue.pop(0)
                service.fetch_started, service.fetch_seconds = clock(), None
                ctl.hs_fetch(service.address, ["$" + f for f, _n, _r in service.responsible])
                active.append(service)
                in_flight += len(service.responsible)
            if not active:
                break
            remaining = min(s.fetch_started + timeout for s in active) - clock()
            if remaining > 0:
                ctl.sock.wait_event(remaining)
    finally:
        ctl.request("SETEVENTS", [])
    for event in ctl.events_since(mark):
        _take(event, by_id, clock())


def _unanswered(service):
    """How many of the HSDirs asked for the service have not answered yet (a receipt counts once its content came)."""
    count = 0
    for fingerprint, _nickname, _replica in service.responsible:
        answer = service.answers.get(fingerprint, {})
        if "revision" not in answer and answer.get("event") != "FAILED":
            count += 1
    return count


def _done(service):
    """Whether every HSDir asked for the service has answered (a receipt counts once its content came)."""
    return _unanswered(service) == 0


def _client_set(responsible, spread_fetch):
    """The HSDirs a client asks: the first spread_fetch of each replica's run on the ring."""
    out, counts = set(), {}
    for fingerprint, _nickname, replica in responsible:
        counts[replica] = counts.get(replica, 0) + 1
        if counts[replica] <= spread_fetch:
            out.add(fingerprint)
    return out


def _take(event, by_id, now):
    """One HS_DESC / HS_DESC_CONTENT event into its service's answers (seconds counted from its HSFETCH)."""
    words = event.lines[0].text.split()
    if not words:
        return
    if words[0] == "HS_DESC_CONTENT" and len(words) >= 4:
        service = by_id.get(words[1])
        fingerprint = _fingerprint(words[3])
        if service is None or fingerprint is None or service.fetch_started is None:
            return
        text = event.lines[0].data or ""
        revision = outer_layer(text)[0]
        answer = service.answers.setdefault(fingerprint, {"seconds": round(now - service.fetch_started, 3)})
        if revision is not None:
            answer["revision"] = revision
            service.texts.setdefault(revision, text)
        return
    if words[0] != "HS_DESC" or len(words) < 5 or words[1] not in ("RECEIVED", "FAILED"):
        return
    service = by_id.get(words[2])
    fingerprint = _fingerprint(words[4])
    if service is None or fingerprint is None or service.fetch_started is None:
        return
    answer = service.answers.setdefault(fingerprint, {"seconds": round(now - service.fetch_started, 3)})
    answer["event"] = words[1]
    reason = [w.split("=", 1)[1] for w in words[5:] if w.startswith("REASON=")]
    if reason:
        answer["reason"] = reason[0]


def _fingerprint(word):
    match = _HSDIR_RE.match(word)
    return match.group(1).upper() if match else None


def _verdict(service, network, min_hsdirs, fetch_seconds=None):
    """The service's entry: the descriptor's verdict (_descriptor_verdict) and the other layers."""
    out = _descriptor_verdict(service, network, min_hsdirs)
    layers = dict(service.layers)
    if service.pending is not None:
        layers["descriptor"] = _layers.layer(None, "pending: %s" % service.pending)
        out.update(layers=layers, failed_layer=None)
        return out
    layers["descriptor"] = _layers.layer(out["healthy"], "; ".join(out["reasons"]),
                                         service.fetch_seconds if service.fetch_seconds is not None else fetch_seconds)
    failed = _layers.first_failed(layers)
    out.update(layers=layers, failed_layer=failed, state="healthy" if failed is None else "unhealthy",
               healthy=failed is None, reasons=_layers.reasons(layers))
    return out


def _descriptor_verdict(service, network, min_hsdirs):
    out = {"address": service.address, "path": service.path, "type": service.type,
           "descriptor": {"built": service.descriptor is not None, "revision": service.revision,
                          "lifetime_minutes": service.lifetime,
                          "for_period": service.for_period},
           "hsdirs": [], "counts": {}, "reasons": []}
    if service.pending is not None:
        out.update(state="pending", healthy=None, reasons=[service.pending])
        return out
    reference, source = reference_revision(service)
    counts = {"responsible": len(service.responsible), "current": 0, "older": 0, "newer": 0, "missing": 0,
              "failed": 0, "no_answer": 0}
    for fingerprint, nickname, replica in service.responsible:
        answer = service.answers.get(fingerprint, {})
        result = _result(answer, reference)
        counts[result] += 1
        out["hsdirs"].append({"fingerprint": fingerprint, "nickname": nickname, "replica": replica,
                              "client_fetches": fingerprint in service.fetch_set, "result": result,
                              "revision": answer.get("revision"), "reason": answer.get("reason"),
                              "seconds": answer.get("seconds")})
    out["descriptor"].update(current_revision=reference, compared_with=source)
    out["counts"] = counts
    fetched = [h for h in out["hsdirs"] if h["client_fetches"]]
    needed = min_hsdirs if min_hsdirs is not None else (len(fetched) + 1) // 2
    holding = sum(1 for h in fetched if h["result"] == "current")
    reasons = ["%d of %d responsible HSDirs hold the current descriptor (revision %s, %s)%s" % (
        counts["current"], counts["responsible"], reference, source,
        _others(counts, _failure_words(out["hsdirs"], reference)))]
    if not service.responsible:
        reasons = ["no HSDir is responsible for it in tor's consensus (%s HSDirs with a known identity)"
                   % (network or {}).get("hsdirs")]
    healthy = bool(service.responsible) and holding >= max(needed, 1)
    if not healthy and service.responsible:
        reasons.append("%d of the %d HSDirs clients ask hold it, %d needed" % (holding, len(fetched), max(needed, 1)))
    out.update(state="healthy" if healthy else "unhealthy", healthy=healthy, reasons=reasons)
    return out


def reference_revision(service):
    """(the revision the HSDirs should hold, where it comes from): tor's own descriptor when it is the one
    clients fetch now (signed with the key blinded for the consensus's time period); else, around a time
    period's change, when tor's current descriptor is the previous period's, the newest an HSDir served."""
    if service.blinded is not None and service.blinded == service.client_blinded:
        return service.revision, "tor's own descriptor"
    if service.texts:
        return max(service.texts), "the newest on the HSDirs (tor's own is for time period %s)" % service.for_period
    return None, "none known (tor's own descriptor is for time period %s)" % service.for_period


def reference_text(service):
    """The text of the descriptor at the reference revision (to post again), or None."""
    reference, _source = reference_revision(service)
    if service.blinded is not None and service.blinded == service.client_blinded:
        return service.descriptor
    return service.texts.get(reference)


def _failure_words(hsdirs, reference):
    """Why the HSDirs counted 'failed' failed, as 'REASON xN' words (tor's HS_DESC FAILED reason; 'no revision in
    the descriptor' for one received that gave none; 'no reference revision' when nothing was compared)."""
    seen = {}
    for h in hsdirs:
        if h["result"] != "failed":
            continue
        word = h["reason"] or ("no reference revision" if reference is None and h["revision"] is not None
                               else "no revision in the descriptor")
        seen[word] = seen.get(word, 0) + 1
    return ", ".join("%s x%d" % (word, n) for word, n in sorted(seen.items()))


def _others(counts, failure_words=""):
    parts = []
    for key, words in (("older", "an older revision"), ("newer", "a newer revision"), ("missing", "NOT_FOUND"),
                       ("failed", "failed"), ("no_answer", "no answer in time")):
        if counts[key]:
            parts.append("%d %s" % (counts[key], words if key != "missing" else "answer " + words))
            if key == "failed" and failure_words:
                parts[-1] += " (%s)" % failure_words
    return "; " + ", ".join(parts) if parts else ""


def _result(answer, revision):
    if answer.get("event") == "RECEIVED" or "revision" in answer:
        got = answer.get("revision")
        if got is None or revision is None:
            return "failed"
        return "current" if got == revision else ("older" if got < revision else "newer")
    if answer.get("event") == "FAILED":
        return "missing" if answer.get("reason") == "NOT_FOUND" else "failed"
    return "no_answer"
