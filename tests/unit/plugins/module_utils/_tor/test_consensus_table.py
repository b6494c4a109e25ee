# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, onionlab.tor contributors
"""consensus.py's router table (_ROUTER_TABLE) and header table (_HEADER_FIELDS): every parse path
builds the same routers from them, for every choice of fields."""

from __future__ import annotations

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import consensus as C

from harness.data import CONSENSUS_DIR, DATA_DIR

MODES = (None, "iter", "general")


def test_public_field_lists():
    """The field lists the module offers (tor_consensus_facts' fields choices) and their order."""
    assert C.ROUTER_FIELDS_NS == (
        "nickname", "fingerprint", "digest", "published", "address", "or_port", "dir_port",
        "or_addresses", "flags", "version", "version_line", "protocols", "bandwidth", "measured",
        "unmeasured", "exit_policy")
    assert C.ROUTER_FIELDS_MICRODESC == (
        "nickname", "fingerprint", "microdescriptor_digest", "published", "address", "or_port",
        "dir_port", "or_addresses", "flags", "version", "version_line", "protocols", "bandwidth",
        "measured", "unmeasured")
    assert C.ROUTER_FIELDS_VOTE_EXTRA == ("identifier_type", "identifier", "microdescriptor_hashes")
    assert C.ROUTER_FIELDS == tuple(sorted(set(C.ROUTER_FIELDS_NS + C.ROUTER_FIELDS_MICRODESC
                                               + C.ROUTER_FIELDS_VOTE_EXTRA)))


def _sample(name):
    """The first ~300 routers of a real consensus (the header, routers cut there, then the footer)."""
    text = (CONSENSUS_DIR / name).read_text("ascii")
    first = text.index("\nr ") + 1
    cut = first
    for _ in range(300):
        cut = text.index("\nr ", cut + 1) + 1
    return text[:cut] + text[text.index("\ndirectory-footer") + 1:]


@pytest.mark.parametrize("name", ["2022-11-19-cached-consensus", "2022-11-19-cached-microdesc-consensus"])
def test_fields_alike_in_every_path(name):
    doc = _sample(name)
    full = C.parse_consensus(doc, now=0)
    allowed = C.ROUTER_FIELDS_MICRODESC if full["flavor"] == "microdesc" else C.ROUTER_FIELDS_NS
    choices = [None, [], ["nickname"], ["measured"], ["bandwidth", "nickname", "bandwidth"], list(reversed(allowed)),
               [f for i, f in enumerate(allowed) if i % 2]]
    for fields in choices:
        for kwargs in ({}, {"flags": ["Exit"]}, {"limit": 7}, {"min_bandwidth": 5000, "limit": 250}):
            results = [C.parse_consensus(doc, now=0, fields=fields, _mode=mode, **kwargs) for mode in MODES]
            assert results[0] == results[1] == results[2], (fields, kwargs)
            routers = results[0]["routers"]
            if "limit" not in kwargs:
                assert len(routers) == results[0]["routers_matched"]
            if fields is not None:
                expected = [dict((f, r[f]) for f in fields) for r in
                            C.parse_consensus(doc, now=0, **kwargs)["routers"]]
                assert routers == expected, (fields, kwargs)
                assert all(list(r) == list(dict.fromkeys(fields)) for r in routers)
            else:
                assert all(tuple(r) == allowed for r in routers)
    assert len(full["routers"]) == 300


def test_vote_fields():
    vote = (DATA_DIR / "stem-conformance" / "metrics_vote").read_bytes()
    result = C.parse_consensus(vote)
    assert result["is_vote"] and result["routers"]
    assert all(tuple(r) == C.ROUTER_FIELDS_NS + C.ROUTER_FIELDS_VOTE_EXTRA for r in result["routers"])
    assert any(r["microdescriptor_hashes"] for r in result["routers"])
    picked = C.parse_consensus(vote, fields=["identifier", "nickname"])["routers"]
    assert picked == [{"identifier": r["identifier"], "nickname": r["nickname"]} for r in result["routers"]]


def test_general_path_reads_unbracketed_ipv6():
    """An 'a' line with an IPv6 address without brackets (Stem accepts it): the general path's value."""
    text = (DATA_DIR / "stem-conformance" / "cached-consensus").read_text("ascii")
    first = text.index("\ns ") + 1
    doc = text[:first] + "a 2001:db8::1:9001\na [2001:db8::2]:443\na 1.2.3.4:80\n" + text[first:]
    for mode in MODES:
        router = C.parse_consensus(doc, _mode=mode)["routers"][0]
        assert router["or_addresses"] == [{"address": "2001:db8::1", "port": 9001, "ipv6": True},
                                          {"address": "2001:db8::2", "port": 443, "ipv6": True},
                                          {"address": "1.2.3.4", "port": 80, "ipv6": False}], mode


def test_header_table_covers_the_header_keywords():
    """Each header keyword has its reader; a document's header values come from the table's readers."""
    for keyword, spec in C._HEADER_FIELDS.items():
        assert len(spec) == 5 and callable(spec[4]), keyword
    result = C.parse_consensus((DATA_DIR / "stem-conformance" / "metrics_vote").read_bytes())
    assert result["consensus_methods"] and result["known_flags"] and result["published"]
