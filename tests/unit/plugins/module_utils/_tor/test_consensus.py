# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""consensus.py against Stem 1.8.2 (the oracle, test-only) on real documents, and on malformed ones.

Documents (tests/data/, origins in its README.md): every consensus in tests/data/consensus/, and
these Stem samples from tests/data/stem-conformance/:

* cached-consensus   -- a consensus written by a private test network's tor (method 26).  Stem's
  validate=True refuses it for its empty client-versions/server-versions lines, which tor writes
  when nothing is recommended; following tor and dir-spec we accept it, so it is compared with
  Stem's validate=False parse.
* metrics_consensus  -- a CollecTor consensus (method 12; '@type' annotation first).
* metrics_vote       -- a CollecTor vote (authority key certificate, 'm' lines with methods).

Not supported: cached-consensus-v2 (network-status version 2, obsolete since tor 0.2.x),
bridge_network_status (the bridge authority's status format: no header, authorities or
signatures), detached_signatures (not a network-status document) -- all refused with a clear
error.  The key certificates (cached-certs, metrics_cert) are covered in test_rsa_verify.py.
"""

import glob
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import consensus as C
from ansible_collections.onionlab.tor.plugins.module_utils._tor.consensus import ConsensusError, parse_consensus

from harness.data import CONSENSUS_DIR, DATA_DIR, REPO

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stem_oracle import stem_authorities, stem_document, stem_header, stem_router  # noqa: E402

BIG = sorted(p.name for p in CONSENSUS_DIR.glob("*consensus"))
# (file, Stem validate=True possible?)
STEM_SAMPLES = [("cached-consensus", False), ("metrics_consensus", True), ("metrics_vote", True)]
DOCS = [("consensus", name, True) for name in BIG] + [("stem-conformance", n, v) for n, v in STEM_SAMPLES]


def read(sub, name):
    return (DATA_DIR / sub / name).read_bytes()


def strip_annotation(data):
    """Stem's document classes take the document without CollecTor's '@type' line."""
    if data.startswith(b"@"):
        return data.split(b"\n", 1)[1]
    return data


_CACHE = {}


def parsed_pair(sub, name, validate):
    key = (sub, name)
    if key not in _CACHE:
        data = read(sub, name)
        _CACHE[key] = (parse_consensus(data, now=0), stem_document(strip_annotation(data), validate=validate))
    return _CACHE[key]


# --------------------------------------------------------------------------- conformance

@pytest.mark.parametrize("sub,name,validate", DOCS, ids=[d[1] for d in DOCS])
def test_header_equals_stem(sub, name, validate):
    ours, stem = parsed_pair(sub, name, validate)
    expected = stem_header(stem)
    for key, value in expected.items():
        assert ours[key] == value, key


@pytest.mark.parametrize("sub,name,validate", DOCS, ids=[d[1] for d in DOCS])
def test_authorities_equal_stem(sub, name, validate):
    ours, stem = parsed_pair(sub, name, validate)
    expected = stem_authorities(stem)
    assert len(ours["authorities"]) == len(expected)
    for mine, theirs in zip(ours["authorities"], expected):
        for key, value in theirs.items():
            if key == "key_certificate":
                for ckey, cvalue in value.items():
                    assert mine[key][ckey] == cvalue, (mine["nickname"], ckey)
            else:
                assert mine[key] == value, (mine["nickname"], key)


@pytest.mark.parametrize("sub,name,validate", DOCS, ids=[d[1] for d in DOCS])
def test_routers_equal_stem(sub, name, validate):
    ours, stem = parsed_pair(sub, name, validate)
    expected = [stem_router(stem, r) for r in stem.routers.values()]
    assert ours["router_count"] == len(stem.routers) == len(ours["routers"])
    # same order (Stem's dict keeps document order), every field equal
    for mine, theirs in zip(ours["routers"], expected):
        assert mine == theirs, theirs["nickname"]


@pytest.mark.parametrize("sub,name,validate", DOCS, ids=[d[1] for d in DOCS])
def test_summary_matches_routers(sub, name, validate):
    ours, stem = parsed_pair(sub, name, validate)
    routers = list(stem.routers.values())
    summary = ours["summary"]
    assert summary["routers"] == len(routers)
    flags = {}
    weights = {}
    for r in routers:
        for flag in r.flags:
            flags[flag] = flags.get(flag, 0) + 1
            weights[flag] = weights.get(flag, 0) + (r.bandwidth or 0)
    assert summary["flags"] == flags
    assert summary["consensus_weight"]["by_flag"] == weights
    assert summary["consensus_weight"]["total"] == sum(r.bandwidth or 0 for r in routers)
    versions = {}
    for r in routers:
        key = str(r.version) if r.version is not None else ("other" if r.version_line else "unknown")
        versions[key] = versions.get(key, 0) + 1
    assert summary["versions"] == versions
    assert summary["is_fresh"] is False and summary["is_valid"] is False  # now=0


@pytest.mark.parametrize("sub,name,validate", DOCS, ids=[d[1] for d in DOCS])
def test_paths_agree_and_json(sub, name, validate):
    """The bulk path, the entry-by-entry path and the general line path give the same result."""
    data = read(sub, name)
    results = [json.dumps(parse_consensus(data, now=0, _mode=mode), sort_keys=True)
               for mode in (None, "iter", "general")]
    assert results[0] == results[1] == results[2]
    json.loads(results[0])


def test_str_and_bytes_input_agree():
    data = read("consensus", BIG[0])
    assert parse_consensus(data, now=0) == parse_consensus(data.decode("ascii"), now=0)


def test_known_authorities_flagged():
    ours, _stem = parsed_pair("consensus", "2022-11-19-cached-consensus", True)
    known = dict((a["nickname"], a["is_known_authority"]) for a in ours["authorities"])
    # tor26 and moria1 have rotated their identities since, Faravahar was re-keyed
    assert known["dannenberg"] and known["gabelmoo"] and known["maatuska"] and known["longclaw"]
    assert not known["tor26"] and not known["moria1"] and not known["Faravahar"]


def test_unsupported_samples_refused():
    with pytest.raises(ConsensusError, match="only version 3"):
        parse_consensus(read("stem-conformance", "cached-consensus-v2"))
    with pytest.raises(ConsensusError, match="starts with 'network-status-version'"):
        parse_consensus(read("stem-conformance", "bridge_network_status"))
    with pytest.raises(ConsensusError, match="starts with 'network-status-version'"):
        parse_consensus(read("stem-conformance", "detached_signatures"))


# --------------------------------------------------------------------------- filters

@pytest.fixture(scope="module")
def ns_full():
    return read("consensus", "2022-11-19-cached-consensus")


def test_filter_flags(ns_full):
    all_routers = parse_consensus(ns_full)["routers"]
    got = parse_consensus(ns_full, flags=["Guard", "Exit"])
    want = [r for r in all_routers if "Guard" in r["flags"] and "Exit" in r["flags"]]
    assert got["routers"] == want and got["routers_matched"] == len(want) > 0
    assert got["router_count"] == len(all_routers)


def test_filter_fingerprints_nicknames_bandwidth(ns_full):
    all_routers = parse_consensus(ns_full)["routers"]
    picks = [all_routers[0], all_routers[100], all_routers[-1]]
    got = parse_consensus(ns_full, fingerprints=["$" + picks[0]["fingerprint"], picks[1]["fingerprint"].lower(),
                                                 picks[2]["fingerprint"]])
    assert got["routers"] == picks
    nick = all_routers[5]["nickname"]
    got = parse_consensus(ns_full, nicknames=[nick.upper()])
    assert got["routers"] == [r for r in all_routers if r["nickname"].lower() == nick.lower()]
    got = parse_consensus(ns_full, min_bandwidth=50000)
    assert got["routers"] == [r for r in all_routers if (r["bandwidth"] or 0) >= 50000]


def test_limit_fields_summary_only(ns_full):
    all_routers = parse_consensus(ns_full)["routers"]
    got = parse_consensus(ns_full, limit=3, fields=["nickname", "fingerprint", "exit_policy"])
    assert got["routers"] == [dict((k, r[k]) for k in ("nickname", "fingerprint", "exit_policy"))
                              for r in all_routers[:3]]
    assert got["routers_matched"] == len(all_routers)
    got = parse_consensus(ns_full, limit=0)
    assert got["routers"] == [] and got["router_count"] == len(all_routers)
    got = parse_consensus(ns_full, summary_only=True)
    assert "routers" not in got and got["summary"]["routers"] == len(all_routers)
    big = parse_consensus(ns_full, flags=["Exit"], limit=7000, fields=list(C.ROUTER_FIELDS_NS))
    assert big["routers"] == [r for r in all_routers if "Exit" in r["flags"]]
    for mode in ("iter", "general"):
        assert parse_consensus(ns_full, flags=["Exit"], limit=5, fields=["nickname", "bandwidth"], _mode=mode)[
            "routers"] == [{"nickname": r["nickname"], "bandwidth": r["bandwidth"]}
                           for r in all_routers if "Exit" in r["flags"]][:5]


def test_bad_arguments(ns_full):
    with pytest.raises(ValueError, match="unknown router field"):
        parse_consensus(ns_full, fields=["microdescriptor_digest"])
    with pytest.raises(ValueError, match="limit"):
        parse_consensus(ns_full, limit=-1)
    with pytest.raises(ValueError, match="40 hex"):
        parse_consensus(ns_full, fingerprints=["abc"])
    with pytest.raises(ValueError, match="list of strings"):
        parse_consensus(ns_full, flags="Exit")
    with pytest.raises(TypeError):
        parse_consensus(12)


def test_is_fresh():
    data = read("consensus", "2022-11-19-cached-consensus")
    assert parse_consensus(data, summary_only=True, now="2022-11-19T10:30:00Z")["summary"]["is_fresh"]
    late = parse_consensus(data, summary_only=True, now="2022-11-19 12:00:00")["summary"]
    assert not late["is_fresh"] and late["is_valid"]


# --------------------------------------------------------------------------- malformed documents

BASE_NAME = "metrics_consensus"


def base_text():
    return read("stem-conformance", BASE_NAME).decode("ascii")


def line_of(text, needle):
    return text[:text.index(needle)].count("\n") + 1


# (id, old, new, marker for the line (None: line of `new`), message part, Stem validate=True refuses too)
MALFORMED = [
    ("version", "network-status-version 3", "network-status-version 2", None, "only version 3", True),
    ("flavor", "network-status-version 3", "network-status-version 3 bw", None, "unsupported flavor", False),
    ("vote-status", "vote-status consensus", "vote-status maybe", None, "'consensus' or 'vote'", True),
    ("method", "consensus-method 12", "consensus-method twelve", None, "must be an integer", True),
    ("month", "valid-after 2012-07-12 10:00:00", "valid-after 2012-13-12 10:00:00", None, "valid date", True),
    ("duplicate", "valid-until 2012-07-12 13:00:00\n",
     "valid-until 2012-07-12 13:00:00\nvalid-until 2012-07-12 13:00:00\n", "valid-until 2012-07-12 13:00:00\nvoting-delay",
     "at most one 'valid-until'", True),
    ("voting-delay", "voting-delay 300 300", "voting-delay 300", None, "two integers", True),
    ("client-version", "client-versions 0.2.2.35,", "client-versions 0.2.2.35,x.y,", None, "not a tor version", True),
    ("params-order", "params CircuitPriorityHalflifeMsec=30000 bwauthpid=1",
     "params bwauthpid=1 CircuitPriorityHalflifeMsec=30000", None, "sorted", True),
    ("params-int", "params CircuitPriorityHalflifeMsec=30000", "params CircuitPriorityHalflifeMsec=3x", None,
     "not an integer", True),
    ("params-int32", "params CircuitPriorityHalflifeMsec=30000", "params CircuitPriorityHalflifeMsec=2147483648",
     None, "Int32", True),
    ("known-flags", "known-flags Authority BadExit Exit Fast Guard HSDir Named Running Stable Unnamed V2Dir Valid\n",
     "", "params", "known-flags", True),
    ("dir-source-ident", "dir-source tor26 14C131DFC5C6F93646BE72FA1401C02A8DF2E8B4",
     "dir-source tor26 14C131DFC5C6F93646BE72FA1401C02A8DF2E8BZ", None, "40 hex", True),
    ("dir-source-ip", "86.59.21.38 86.59.21.38 80 443", "86.59.21.38 86.59.21.300 80 443", None, "IPv4", True),
    ("dir-source-port", "86.59.21.38 86.59.21.38 80 443", "86.59.21.38 86.59.21.38 80 0", None, "ORPort", True),
    ("contact-missing", "contact Peter Palfrader\n", "", "dir-source tor26", "'contact'", True),
    ("vote-digest", "vote-digest 0B6D1E9A300B895AA2D0B427F92917B6995C3C1C",
     "vote-digest 0B6D1E9A300B895AA2D0B427F92917B6995C3C1", None, "40 hex", True),
    ("nickname", "r sumkledi ", "r sumkledisumkledisumkledi ", None, "nickname", True),
    ("identity", "ABPSI4nNUNC3hKPkBhyzHozozrU", "ABPSI4nNUNC3hKPkBhyzHozozr", None, "base64", True),
    ("r-fields", "2012-07-12 04:01:55 178.218.213.229 80 0", "2012-07-12 04:01:55 178.218.213.229 80", None,
     "8 values", True),
    ("address", "178.218.213.229 80 0", "178.218.213.256 80 0", None, "IPv4", True),
    ("orport", "178.218.213.229 80 0", "178.218.213.229 0 0", None, "ORPort", True),
    ("dirport", "178.218.213.229 80 0", "178.218.213.229 80 70000", None, "DirPort", True),
    ("date", "2012-07-12 04:01:55 178.218.213.229", "2012-02-30 04:01:55 178.218.213.229", None, "valid date", True),
    ("time", "2012-07-12 04:01:55 178.218.213.229", "2012-07-12 25:01:55 178.218.213.229", None, "time", True),
    ("dup-flags", "s Exit Fast Named Running Valid", "s Exit Fast Named Running Valid Fast", None, "duplicate", True),
    ("flag-space", "s Exit Fast Named Running Valid", "s Exit Fast  Named Running Valid", None, "whitespace", True),
    ("no-s", "s Exit Fast Named Running Valid\n", "", "r sumkledi", "'s' line", True),
    ("two-v", "v Tor 0.2.2.35\nw Bandwidth=38\n", "v Tor 0.2.2.35\nv Tor 0.2.2.35\nw Bandwidth=38\n",
     "v Tor 0.2.2.35\nw Bandwidth=38", "at most one 'v'", True),
    ("version", "v Tor 0.2.2.35\nw Bandwidth=38", "v Tor 0.2.x.35\nw Bandwidth=38", None, "tor version", True),
    ("bandwidth", "w Bandwidth=38\n", "w Bandwidth=3a8\n", None, "number", True),
    ("bandwidth-first", "w Bandwidth=38\n", "w Unmeasured=1 Bandwidth=38\n", None, "start with Bandwidth", True),
    ("unmeasured", "w Bandwidth=38\n", "w Bandwidth=38 Unmeasured=2\n", None, "Unmeasured", True),
    ("policy-port", "p accept 80,443\n", "p accept 80,443,70000\n", None, "port range", True),
    ("policy-word", "p accept 80,443\n", "p allow 80,443\n", None, "accept", True),
    ("policy-range", "p accept 80,443\n", "p accept 443-80\n", None, "port range", False),
    ("protocols", "w Bandwidth=38\n", "pr Cons=1-x\nw Bandwidth=38\n", None, "numbers or ranges", True),
    ("protocols-range", "w Bandwidth=38\n", "pr Cons=1-99\nw Bandwidth=38\n", None, "0-63", False),
    ("a-line", "s Exit Fast Named Running Valid", "a [zz::1]:9001\ns Exit Fast Named Running Valid", None,
     "invalid address", True),
    ("a-port", "s Exit Fast Named Running Valid", "a 1.2.3.4:0\ns Exit Fast Named Running Valid", None,
     "invalid port", True),
    ("m-in-ns", "w Bandwidth=38\n", "w Bandwidth=38\nm 8,9 sha256=abc\n", "m 8,9", "only in votes", True),
    ("not-a-line", "w Bandwidth=38\n", "w Bandwidth=38\n!bogus\n", "!bogus", "expected a keyword", True),
    ("footer-args", "directory-footer\n", "directory-footer x\n", None, "no arguments", True),
    ("weights", "bandwidth-weights Wbd=3335 Wbe=0", "bandwidth-weights Wbe=0 Wbd=3335", None, "sorted", True),
    ("sig-ident", "directory-signature 14C131DFC5C6F93646BE72FA1401C02A8DF2E8B4",
     "directory-signature 14C131DFC5C6F93646BE72FA1401C02A8DF2E8", None, "40 hex", True),
    ("sig-args", "directory-signature 14C131DFC5C6F93646BE72FA1401C02A8DF2E8B4",
     "directory-signature sha1 x 14C131DFC5C6F93646BE72FA1401C02A8DF2E8B4", None, "identity signing-key", True),
    ("sig-block", "-----BEGIN SIGNATURE-----\nHFXB", "-----BEGIN SIG-----\nHFXB", "-----BEGIN SIG-----",
     "not terminated", True),
    ("after-sigs", "directory-signature 27B6B5996C426270A5C95488AA5BCEB6BCC86956",
     "x-extra 1\ndirectory-signature 27B6B5996C426270A5C95488AA5BCEB6BCC86956", "x-extra 1", "only signatures",
     False),
    ("router-after-footer", "directory-footer\n", "directory-footer\nr x\n", "r x", "out of place", False),
    ("header-in-routers", "w Bandwidth=38\n", "w Bandwidth=38\nknown-flags Exit\n", "known-flags Exit",
     "out of place", False),
    ("non-ascii", "contact Peter Palfrader", "contact Peter Pälfrader", None, "non-ASCII", True),
    ("control-char", "contact Peter Palfrader", "contact Peter\x01Palfrader", None, "control character", False),
    ("times", "fresh-until 2012-07-12 11:00:00", "fresh-until 2012-07-12 09:00:00", None, "later than", False),
]


@pytest.mark.parametrize("case", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_refused(case):
    name, old, new, marker, message, stem_refuses = case
    text = base_text()
    assert old in text, name
    bad = text.replace(old, new, 1)
    expected_line = line_of(bad, marker if marker is not None else new)
    for mode in (None, "iter", "general"):
        with pytest.raises(ConsensusError) as info:
            parse_consensus(bad.encode("utf-8"), _mode=mode)
        assert message in str(info.value), (mode, str(info.value))
        assert info.value.line == expected_line, (mode, str(info.value))
        assert str(info.value).startswith("line %d: " % expected_line)
    if stem_refuses:
        with pytest.raises(ValueError):
            stem_document(strip_annotation(bad.encode("utf-8")), validate=True)


def _big_mutation(index, old, new):
    text = read("consensus", "2022-11-19-cached-consensus").decode("ascii")
    pos = -1
    for _ in range(index + 1):
        pos = text.index("\nr ", pos + 1)
    entry_end = text.index("\nr ", pos + 1) if "\nr " in text[pos + 1:] else len(text)
    entry = text[pos:entry_end]
    assert old in entry
    changed = entry.replace(old, new, 1)
    bad = text[:pos] + changed + text[entry_end:]
    return bad, pos + changed.index(new) if new else pos


@pytest.mark.parametrize("index", [0, 2999, 6087])
def test_malformed_router_in_large_document(index):
    """An error deep in a real consensus is reported with its exact line (bulk path falls back)."""
    bad, where = _big_mutation(index, "\ns ", "\ns Fast Fast ")
    with pytest.raises(ConsensusError) as info:
        parse_consensus(bad)
    assert "duplicate flags" in str(info.value)
    assert info.value.line == bad.count("\n", 0, where + 1) + 1


def test_odd_entry_in_large_document_still_parsed():
    """Entries outside tor's canonical shape (here an 'opt' prefix and an unknown line) parse the same."""
    text = read("consensus", "2022-11-19-cached-consensus").decode("ascii")
    ref = parse_consensus(text)
    bad, _where = _big_mutation(1500, "\nv ", "\nx-unknown 1\nopt v ")
    got = parse_consensus(bad)
    assert got["routers"] == ref["routers"] and got["summary"] == ref["summary"]


def test_truncated_document():
    text = read("consensus", "2022-11-19-cached-consensus").decode("ascii")
    with pytest.raises(ConsensusError, match="no 'directory-signature'"):
        parse_consensus(text[:len(text) // 2 - 7])
    with pytest.raises(ConsensusError, match="network-status-version"):
        parse_consensus("")


def test_empty_client_versions_accepted():
    """tor writes 'client-versions ' when it recommends nothing (Stem's validate=True refuses)."""
    result = parse_consensus(read("stem-conformance", "cached-consensus"))
    assert result["client_versions"] == [] and result["server_versions"] == []


def test_python38_compatible():
    """The module imports and parses under the oldest supported Python when one is installed."""
    python38 = None
    for candidate in ["python3.8"] + sorted(glob.glob("/root/.pyenv/versions/3.8*/bin/python3.8")):
        try:
            out = subprocess.run([candidate, "-c", "import sys; print(sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0 and "(3, 8)" in out.stdout:
            python38 = candidate
    if python38 is None:
        pytest.skip("no python3.8 here")
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from ansible_collections.onionlab.tor.plugins.module_utils._tor import consensus as C\n"
            "r = C.parse_consensus(open(%r, 'rb').read())\n"
            "v = C.verify_signatures(open(%r, 'rb').read(), open(%r, 'rb').read(), now='2017-03-10T10:30:00Z')\n"
            "print(r['router_count'], v['known_authorities_signed'])\n"
            % (str(REPO / ".build" / "collections"), str(CONSENSUS_DIR / "2022-11-19-cached-microdesc-consensus"),
               str(CONSENSUS_DIR / "2017-03-10-cached-microdesc-consensus"),
               str(CONSENSUS_DIR / "2017-03-10-cached-certs")))
    out = subprocess.run([python38, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["6088", "4"]
    assert sys.version_info >= (3, 8)
