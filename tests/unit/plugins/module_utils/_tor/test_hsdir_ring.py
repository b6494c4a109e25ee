# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""hsdir_ring.py and onion.blinded_public_key: time periods, SRVs, indexes and tor's walk of the ring, by hand and
against Stem (scalar multiplication); tor itself is the oracle in tests/integration/modules/test_onion_health.py."""

import base64
import hashlib
import os

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hsdir_ring, onion


def _consensus(valid_after, fresh_until, current=None, previous=None, params=None):
    return {"valid_after": valid_after, "fresh_until": fresh_until, "params": params or {},
            "shared_rand_current": {"num_reveals": 9, "value": base64.b64encode(current).decode()} if current else None,
            "shared_rand_previous": {"num_reveals": 9, "value": base64.b64encode(previous).decode()} if previous else None}


def test_period_of_the_tor_network_and_the_srv_clients_use():
    """A day long, offset by 12 h: 2026-12-04T11:00 is before the 12:00 UTC rotation, so the period began the day
    before, and a consensus between the period's start and the next SRV (00:00) uses the current SRV."""
    cur, prev = os.urandom(32), os.urandom(32)
    morning = hsdir_ring.Period(_consensus("2026-12-04T11:00:00Z", "2026-12-04T12:00:00Z", cur, prev))
    afternoon = hsdir_ring.Period(_consensus("2026-12-04T13:00:00Z", "2026-12-04T14:00:00Z", cur, prev))
    assert morning.length == afternoon.length == 1440
    assert afternoon.number == morning.number + 1
    days = (1796342400 // 60 - 720) // 1440           # 2026-12-04T00:00Z
    assert afternoon.number == days + 1 or afternoon.number == days
    assert afternoon.between_period_and_srv and afternoon.srv == cur and afternoon.srv_source == "current"
    night = hsdir_ring.Period(_consensus("2026-12-05T01:00:00Z", "2026-12-05T02:00:00Z", cur, prev))
    assert not night.between_period_and_srv and night.srv == prev and night.srv_source == "previous"


def test_testing_network_period_is_one_srv_run_and_disaster_srv_without_values():
    p = hsdir_ring.Period(_consensus("2026-12-04T16:46:45Z", "2026-12-04T16:46:55Z"), testing=True)
    assert p.length == 4                               # 24 rounds of 10 s, in whole minutes
    assert p.number == (1796402805 // 60 - 2) // 4
    assert p.srv_source == "disaster"
    assert p.srv == hashlib.sha3_256(b"shared-random-disaster" + (4).to_bytes(8, "big")
                                     + p.number.to_bytes(8, "big")).digest()


def test_params_out_of_range_fall_back_to_tor_defaults():
    c = _consensus("2026-12-04T11:00:00Z", "2026-12-04T12:00:00Z",
                   params={"hsdir_n_replicas": 0, "hsdir_spread_store": 6, "hsdir_interval": 5})
    assert hsdir_ring.param(c, "hsdir_n_replicas") == 2
    assert hsdir_ring.param(c, "hsdir_spread_store") == 6
    assert hsdir_ring.param(c, "hsdir_interval") == 1440


def _ring(n, flags=("HSDir",)):
    period = hsdir_ring.Period(_consensus("2026-12-04T13:00:00Z", "2026-12-04T14:00:00Z", os.urandom(32)))
    routers, identities = [], {}
    for i in range(n):
        fingerprint = "%040X" % i
        routers.append({"fingerprint": fingerprint, "nickname": "r%d" % i, "flags": list(flags),
                        "protocols": {"HSDir": [1, 2]}})
        identities[fingerprint] = os.urandom(32)
    return period, routers, identities


def test_walk_picks_the_next_nodes_after_each_replica_index_skipping_chosen_ones():
    period, routers, identities = _ring(20)
    ring = hsdir_ring.Ring(period, routers, identities)
    blinded = os.urandom(32)
    chosen = ring.responsible(blinded, 2, 4)
    assert len(chosen) == 8 and len(set(f for f, _n, _r in chosen)) == 8
    order = [fp for _key, fp, _nick in ring.nodes]

    def run_from(replica):
        target = period.hs_index(blinded, replica)
        start = next((i for i, node in enumerate(ring.nodes) if node[0] >= target), 0)
        return [order[(start + k) % 20] for k in range(20)]

    first = run_from(1)[:4]
    assert [f for f, _n, r in chosen if r == 1] == first
    assert [f for f, _n, r in chosen if r == 2] == [f for f in run_from(2) if f not in first][:4]


def test_a_small_ring_gives_every_node_once_and_leaves_out_non_hsdirs():
    period, routers, identities = _ring(5)
    routers.append({"fingerprint": "F" * 40, "nickname": "guard", "flags": ["Guard"], "protocols": {"HSDir": [2]}})
    routers.append({"fingerprint": "E" * 40, "nickname": "old", "flags": ["HSDir"], "protocols": {"HSDir": [1]}})
    routers.append({"fingerprint": "D" * 40, "nickname": "nomd", "flags": ["HSDir"], "protocols": {"HSDir": [2]}})
    identities.update({"F" * 40: os.urandom(32), "E" * 40: os.urandom(32)})
    ring = hsdir_ring.Ring(period, routers, identities)
    assert len(ring.nodes) == 5
    chosen = ring.responsible(os.urandom(32), 2, 4)
    assert sorted(f for f, _n, _r in chosen) == sorted(r["fingerprint"] for r in routers[:5])


def test_blinding_is_stems_scalar_multiplication_of_tors_parameter():
    pytest.importorskip("cryptography")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from stem.descriptor.hidden_service import _blinded_pubkey
    for period_num, length in ((19000, 1440), (7485011, 4)):
        key = Ed25519PrivateKey.generate()
        public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        nonce = b"key-blind" + period_num.to_bytes(8, "big") + length.to_bytes(8, "big")
        h = hashlib.sha3_256(b"Derive temporary signing key\0" + public + onion._BASEPOINT_STRING + nonce).digest()
        assert onion.blinded_public_key(public, period_num, length) == _blinded_pubkey(key.public_key(), h)


def test_microdescriptor_identities_by_digest_last_one_without_its_newline():
    ident = os.urandom(32)
    md1 = "onion-key\nntor-onion-key AAAA\nid ed25519 %s\n" % base64.b64encode(ident).decode().rstrip("=")
    md2 = "onion-key\nntor-onion-key BBBB\n"
    out = hsdir_ring.microdescriptor_identities(md1 + md2.rstrip("\n"))
    digest1 = base64.b64encode(hashlib.sha256(md1.encode()).digest()).decode().rstrip("=")
    digest2 = base64.b64encode(hashlib.sha256(md2.encode()).digest()).decode().rstrip("=")
    assert out == {digest1: ident, digest2: None}
