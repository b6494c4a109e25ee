# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The descriptor layer asks at most FETCHES_IN_FLIGHT HSDirs at a time (onion_health._fetch), and the reach layer
probes at most PROBES_IN_FLIGHT services at a time.

Measured on the private network: with 10 services asked at once (60 fetches) tor logged "we already have 32
general-purpose client circuits pending. Waiting until some finish." (MaxClientCircuitsPending). A scripted
controller here counts the fetches in flight: a real tor cannot be made to show the window.
"""

import os
import threading
import types

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion, onion_health


def _event(text):
    return types.SimpleNamespace(lines=[types.SimpleNamespace(text=text, data=None)])


class _Ctl(object):
    """HSFETCH answered by every HSDir one wait_event later (NOT_FOUND), except those of `silent` services."""

    def __init__(self, silent=()):
        self.events, self.pending, self.silent = [], [], set(silent)
        self.in_flight = self.most = 0
        self.fetched = []
        self.sock = types.SimpleNamespace(wait_event=self.wait_event)

    def request(self, keyword, args):
        assert keyword == "SETEVENTS"

    def event_mark(self):
        return len(self.events)

    def events_since(self, mark):
        return self.events[mark:]

    def hs_fetch(self, address, servers):
        service_id = address[:-len(".onion")]
        self.fetched.append(service_id)
        for server in servers:
            self.in_flight += 1
            if service_id not in self.silent:
                self.pending.append((service_id, server))
        self.most = max(self.most, self.in_flight)

    def wait_event(self, timeout):
        if not self.pending:
            self.clock.now += timeout
            return None
        service_id, server = self.pending.pop(0)
        self.in_flight -= 1
        self.clock.now += 0.1
        self.events.append(_event("HS_DESC FAILED %s NO_AUTH %s~relay REASON=NOT_FOUND" % (service_id, server)))
        return self.events[-1]


class _Clock(object):
    now = 1000.0

    def __call__(self):
        return self.now


class _Ring(object):
    period = types.SimpleNamespace(number=20000, length=1440)

    def responsible(self, blinded, replicas, spread):
        return [("%040X" % (i + 1), "relay%d" % i, 1 + i // spread) for i in range(replicas * spread)]


def _services(n):
    out = []
    for _ in range(n):
        address = onion.onion_address(onion.ed25519_public_from_expanded(os.urandom(64)))
        out.append(onion_health._Service({"address": address + ".onion", "type": "persistent"}))
    return out


NETWORK = {"replicas": 2, "spread_store": 4, "spread_fetch": 3}


def test_thirty_services_never_more_than_the_window_in_flight_and_all_answered():
    services, ctl, clock = _services(30), _Ctl(), _Clock()
    ctl.clock = clock
    onion_health._fetch(ctl, services, _Ring(), NETWORK, 20.0, clock)
    assert ctl.most <= onion_health.FETCHES_IN_FLIGHT, ctl.most
    assert len(ctl.fetched) == 30
    for service in services:
        assert onion_health._done(service) and len(service.answers) == 8
        assert service.fetch_seconds is not None and service.fetch_seconds < 20.0
        assert all(a["reason"] == "NOT_FOUND" for a in service.answers.values())


def test_a_silent_service_times_out_on_its_own_deadline_and_the_others_are_still_asked():
    services, clock = _services(5), _Clock()
    ctl = _Ctl(silent=[services[0].service_id])
    ctl.clock = clock
    onion_health._fetch(ctl, services, _Ring(), NETWORK, 20.0, clock)
    assert len(ctl.fetched) == 5 and ctl.fetched[0] == services[0].service_id
    assert services[0].answers == {} and services[0].fetch_seconds >= 20.0
    for service in services[1:]:
        assert onion_health._done(service), service.answers
        # asked while the silent one waited: its 8 unanswered HSDirs leave room in the window
        assert service.fetch_started < services[0].fetch_started + 20.0
        assert service.fetch_seconds < 5.0, service.fetch_seconds


def test_an_event_of_a_service_not_asked_yet_is_not_its_answer():
    services, clock = _services(3), _Clock()
    ctl = _Ctl()
    ctl.clock = clock
    ctl.events.append(_event("HS_DESC FAILED %s NO_AUTH $%040X~relay0 REASON=NOT_FOUND"
                             % (services[2].service_id, 1)))        # before this check: another client's fetch
    first = len(ctl.events)
    onion_health._fetch(ctl, services, _Ring(), NETWORK, 20.0, clock)
    assert first == 1 and all(onion_health._done(s) for s in services)
    assert min(a["seconds"] for a in services[2].answers.values()) >= 0


def test_reach_probes_at_most_the_window_at_once(monkeypatch):
    running, most, lock = [0], [0], threading.Lock()
    barrier = threading.Event()

    def attempt(proxy, target):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        barrier.wait(0.05)
        with lock:
            running[0] -= 1
        return types.SimpleNamespace(reachable=True, status=200, reason="answered", error=None, socks_reply=0)

    monkeypatch.setattr(onion_health._probe, "attempt", attempt)
    services = _services(12)
    slots = threading.BoundedSemaphore(onion_health.PROBES_IN_FLIGHT)
    threads = [threading.Thread(target=onion_health._reach_one, args=(s, (80, "http", False), 9050, 30.0, 1,
                                                                        onion_health.time.monotonic),
                                kwargs={"slots": slots}) for s in services]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert most[0] == onion_health.PROBES_IN_FLIGHT, most
    assert all(s.layers["reach"]["attempts"][0]["status"] == 200 for s in services)
