# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The HSDir hash ring of rend-spec-v3 (section 2.2): which directories hold a v3 descriptor.

From a consensus (parsed by consensus.py) and the ed25519 identities of its HSDirs (from their
microdescriptors): the time period, the shared random value clients use, each HSDir's index, and,
for a descriptor's blinded key, the HSDirs responsible for it, as tor computes them for a client
(hs_common.c hs_get_responsible_hsdirs with the fetch index; nodelist.c node_set_hsdir_index).
Pure functions on plain data; nothing here talks to tor.

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

import base64
import bisect
import hashlib

from ansible_collections.onionlab.tor.plugins.module_utils._tor import _dirdoc

SRV_ROUNDS = 24                 # an SRV protocol run: two phases of 12 voting rounds
DEFAULTS = {"hsdir_n_replicas": (2, 1, 16), "hsdir_spread_fetch": (3, 1, 128), "hsdir_spread_store": (4, 1, 128),
            "hsdir_interval": (1440, 30, 14400)}


def _int8(value):
    return int(value).to_bytes(8, "big")


def param(consensus, name):
    """A consensus parameter of the ring, tor's default when absent or out of range."""
    default, low, high = DEFAULTS[name]
    value = (consensus.get("params") or {}).get(name, default)
    return value if low <= value <= high else default


class Period(object):
    """The time period a consensus falls in, and the SRV a client fetching in it uses."""

    def __init__(self, consensus, testing=False):
        valid_after = int(_dirdoc.to_epoch(consensus["valid_after"]))
        interval = int(_dirdoc.to_epoch(consensus["fresh_until"])) - valid_after
        if interval <= 0:
            raise ValueError("the consensus's fresh-until is not after its valid-after")
        self.interval = interval
        phase = (SRV_ROUNDS // 2) * interval
        # tor's get_time_period_length(): a testing network's period is one SRV run, in whole minutes
        self.length = (SRV_ROUNDS * interval) // 60 if testing else param(consensus, "hsdir_interval")
        self._offset = phase // 60

        def number(when):
            return (when // 60 - self._offset) // self.length

        self.number = number(valid_after)
        srv_start = valid_after - ((valid_after // interval) % SRV_ROUNDS) * interval
        next_period_start = (number(srv_start) + 1) * self.length * 60 + phase
        self.between_period_and_srv = not (srv_start <= valid_after < next_period_start)
        current = _srv(consensus.get("shared_rand_current"))
        previous = _srv(consensus.get("shared_rand_previous"))
        chosen = current if self.between_period_and_srv else previous
        self.srv_source = ("current" if self.between_period_and_srv else "previous") if chosen else "disaster"
        self.srv = chosen or self.disaster_srv()

    def disaster_srv(self):
        """SHA3-256("shared-random-disaster" | INT_8(period_length) | INT_8(period_num))."""
        return hashlib.sha3_256(b"shared-random-disaster" + _int8(self.length) + _int8(self.number)).digest()

    def hsdir_index(self, identity):
        """SHA3-256("node-idx" | ed25519 identity | SRV | INT_8(period_num) | INT_8(period_length))."""
        return hashlib.sha3_256(b"node-idx" + identity + self.srv + _int8(self.number) + _int8(self.length)).digest()

    def hs_index(self, blinded_key, replica):
        """SHA3-256("store-at-idx" | blinded key | INT_8(replica) | INT_8(period_length) | INT_8(period_num))."""
        return hashlib.sha3_256(b"store-at-idx" + blinded_key + _int8(replica) + _int8(self.length)
                                + _int8(self.number)).digest()


def _srv(value):
    if not value:
        return None
    raw = base64.b64decode(value["value"])
    return raw if len(raw) == 32 else None


def supports_v3_hsdir(router):
    """Whether a router's protocols say HSDir=2 (a v3 directory); routers without protocol lines count."""
    protocols = router.get("protocols")
    if not protocols or "HSDir" not in protocols:
        return protocols is None or not protocols
    return 2 in protocols["HSDir"]


class Ring(object):
    """The HSDirs of a consensus sorted by their index for one period.

    routers: the consensus's routers (fingerprint, nickname, flags, protocols); identities: {fingerprint
    (hex, upper): 32-byte ed25519 identity}. An HSDir without a known identity is left out, as tor leaves
    out one without a microdescriptor."""

    def __init__(self, period, routers, identities):
        self.period = period
        nodes = []
        for router in routers:
            if "HSDir" not in (router.get("flags") or ()) or not supports_v3_hsdir(router):
                continue
            identity = identities.get(router["fingerprint"].upper())
            if identity is None:
                continue
            nodes.append((period.hsdir_index(identity), router["fingerprint"].upper(), router.get("nickname")))
        nodes.sort()
        self.nodes = nodes
        self._keys = [n[0] for n in nodes]

    def responsible(self, blinded_key, replicas, spread):
        """[(fingerprint, nickname, replica)] of the HSDirs responsible for the blinded key: for each replica,
        the next `spread` HSDirs on the ring from its hs_index, skipping any chosen already."""
        out, chosen = [], set()
        if not self.nodes:
            return out
        for replica in range(1, replicas + 1):
            start = bisect.bisect_left(self._keys, self.period.hs_index(blinded_key, replica))
            if start == len(self.nodes):
                start = 0
            index, added = start, 0
            while added < spread:
                _key, fingerprint, nickname = self.nodes[index]
                if fingerprint not in chosen:
                    chosen.add(fingerprint)
                    out.append((fingerprint, nickname, replica))
                    added += 1
                index = (index + 1) % len(self.nodes)
                if index == start:
                    break
        return out


def microdescriptor_identities(text):
    """{sha256 digest of each microdescriptor (base64 without '='): its 32-byte ed25519 identity or None}
    from the text of several microdescriptors (GETINFO md/all), each starting at its 'onion-key' line."""
    out = {}
    if text and not text.endswith("\n"):   # GETINFO's value lost the last line's end, which the digest covers
        text += "\n"
    starts = [i for i in _line_starts(text) if text.startswith("onion-key", i)]
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(text)
        body = text[start:end]
        digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii").rstrip("=")
        identity = None
        for line in body.splitlines():
            if line.startswith("id ed25519 "):
                raw = _b64(line.split(" ", 2)[2].strip())
                identity = raw if raw is not None and len(raw) == 32 else None
        out[digest] = identity
    return out


def _line_starts(text):
    yield 0
    position = text.find("\n")
    while position >= 0:
        yield position + 1
        position = text.find("\n", position + 1)


def _b64(text):
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        return None
