# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_consensus_facts main(): from a small consensus file (Stem's three-router sample of a test
network, tests/data) and from the fake control port (GETINFO dir/status-vote/current/consensus*),
with the filters, fields, limit and summary options, signature verification, and every refusal."""

import base64
import hashlib
import shutil

import pytest

from ansible_collections.onionlab.tor.plugins.modules import tor_consensus_facts as module
from harness.data import STEM_DIR
from harness.fake_controller import Error

CONSENSUS = STEM_DIR / "cached-consensus"      # ns flavour, method 26, routers test002r, test001a, test000a
CERTS = STEM_DIR / "cached-certs"               # the key certificates of its two authorities
FINGERPRINTS = {"test002r": "348225F83C854796B2DD6364E65CB189B33BD696",
                "test001a": "AA0CD1A482925BCD3D1672F8B67B51B5680E8B0A",
                "test000a": "DE7242F8BBED366C7A930DB7C75584F74A72223E"}
VALID_AT = "2017-05-25 04:46:35"
NS_KEY = "dir/status-vote/current/consensus"
MD_KEY = "dir/status-vote/current/consensus-microdesc"


def ns_text():
    return CONSENSUS.read_text()


def weighted(text):
    """The sample with distinct consensus weights (its own are all 0): 300, 200, 100 in document
    order. The signatures no longer match, which only verification looks at."""
    for weight in ("300", "200", "100"):
        text = text.replace("w Bandwidth=0 Unmeasured=1", "w Bandwidth=" + weight, 1)
    return text


def microdesc(text):
    """The same network as a microdesc consensus: no descriptor digest in r lines, an m line with
    a (made-up) microdescriptor digest, no p lines."""
    out = []
    for line in text.splitlines():
        if line == "network-status-version 3":
            line += " microdesc"
        if line.startswith("p "):
            continue
        if line.startswith("r "):
            parts = line.split(" ")
            del parts[3]
            out.append(" ".join(parts))
            digest = hashlib.sha256(parts[1].encode()).digest()
            out.append("m " + base64.b64encode(digest).decode().rstrip("="))
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def facts_of(result):
    return result["ansible_facts"]["tor_consensus"]


def nicknames(facts):
    return [r["nickname"] for r in facts["routers"]]


# -- from a file -----------------------------------------------------------------------------------
def test_file_summary_only_by_default(runner):
    result = runner.ok(module, path=str(CONSENSUS))
    assert result["changed"] is False
    facts = facts_of(result)
    assert "routers" not in facts
    assert facts["source"] == {"type": "file", "path": str(CONSENSUS), "control": None, "getinfo_key": None,
                               "size": CONSENSUS.stat().st_size}
    assert (facts["flavor"], facts["vote_status"], facts["is_vote"], facts["consensus_method"]) == (
        "ns", "consensus", False, 26)
    assert (facts["valid_after"], facts["valid_until"]) == ("2017-05-25T04:46:30Z", "2017-05-25T04:46:50Z")
    assert facts["router_count"] == facts["routers_matched"] == 3
    assert facts["summary"]["flags"]["Authority"] == 2 and facts["summary"]["flags"]["Stable"] == 2
    assert facts["summary"]["versions"] == {"0.3.0.7": 3}
    assert [a["nickname"] for a in facts["authorities"]] == ["test001a", "test000a"]
    assert [s["verified"] for s in facts["signatures"]] == [None, None]
    assert "verification" not in facts


def test_file_every_router(runner):
    facts = facts_of(runner.ok(module, path=str(CONSENSUS), summary_only=False))
    assert nicknames(facts) == ["test002r", "test001a", "test000a"]
    first = facts["routers"][0]
    assert first["fingerprint"] == FINGERPRINTS["test002r"]
    assert (first["address"], first["or_port"], first["dir_port"]) == ("127.0.0.1", 5002, 7002)
    assert first["exit_policy"] == "accept 1-65535" and first["version"] == "0.3.0.7"
    assert first["unmeasured"] is True and first["bandwidth"] == 0


def test_is_fresh_judged_at_now(runner):
    at = facts_of(runner.ok(module, path=str(CONSENSUS), now=VALID_AT))["summary"]
    assert (at["is_fresh"], at["is_valid"]) == (True, True)
    later = facts_of(runner.ok(module, path=str(CONSENSUS), now="2017-05-25T04:46:45Z"))["summary"]
    assert (later["is_fresh"], later["is_valid"]) == (False, True)
    today = facts_of(runner.ok(module, path=str(CONSENSUS)))["summary"]
    assert (today["is_fresh"], today["is_valid"]) == (False, False)


@pytest.mark.parametrize("params, expected, matched", [
    ({"flags": ["Authority"]}, ["test001a", "test000a"], 2),
    ({"flags": ["Authority", "Stable"]}, ["test000a"], 1),
    ({"flags": ["BadExit"]}, [], 0),
    ({"nicknames": ["TEST002R", "nobody"]}, ["test002r"], 1),
    ({"fingerprints": ["$" + FINGERPRINTS["test000a"].lower(), FINGERPRINTS["test001a"]]},
     ["test001a", "test000a"], 2),
    ({"min_bandwidth": 200}, ["test002r", "test001a"], 2),
    ({"min_bandwidth": 200, "flags": ["Authority"]}, ["test001a"], 1),
    ({"limit": 1}, ["test002r"], 3),
    ({"limit": 0}, [], 3),
    ({"flags": ["Authority"], "limit": 1}, ["test001a"], 2),
], ids=["flag", "two flags", "no match", "nicknames", "fingerprints", "min_bandwidth", "bandwidth+flag",
        "limit", "limit 0", "flag+limit"])
def test_filters(runner, tmp_path, params, expected, matched):
    path = tmp_path / "cached-consensus"
    path.write_text(weighted(ns_text()))
    facts = facts_of(runner.ok(module, path=str(path), **params))
    assert nicknames(facts) == expected
    assert facts["routers_matched"] == matched
    assert facts["router_count"] == 3 and facts["summary"]["routers"] == 3    # the summary covers every router
    assert facts["summary"]["consensus_weight"]["total"] == 600


def test_fields_and_summary_only(runner):
    facts = facts_of(runner.ok(module, path=str(CONSENSUS), fields=["nickname", "flags"]))
    assert facts["routers"][2] == {"nickname": "test000a", "flags": ["Authority", "Exit", "Fast", "Guard", "HSDir",
                                                                     "Running", "Stable", "V2Dir", "Valid"]}
    assert all(set(r) == {"nickname", "flags"} for r in facts["routers"])
    none = facts_of(runner.ok(module, path=str(CONSENSUS), flags=["Authority"], summary_only=True))
    assert "routers" not in none and none["routers_matched"] == 2


def test_microdesc_file_and_flavor_check(runner, tmp_path):
    path = tmp_path / "cached-microdesc-consensus"
    path.write_text(microdesc(ns_text()))
    facts = facts_of(runner.ok(module, path=str(path), fields=["nickname", "microdescriptor_digest"]))
    assert facts["flavor"] == "microdesc"
    assert facts["routers"][0]["microdescriptor_digest"] == base64.b64encode(
        hashlib.sha256(b"test002r").digest()).decode().rstrip("=")
    wrong = runner.fails(module, path=str(path), flavor="ns")
    assert wrong["msg"] == "the consensus file %s is a microdesc consensus, not ns (flavor: ns)" % path
    field = runner.fails(module, path=str(path), fields=["exit_policy"])
    assert field["msg"].startswith("unknown router field(s) exit_policy for this document; choose from nickname")
    assert runner.fails(module, path=str(CONSENSUS), fields=["microdescriptor_digest"])["msg"].startswith(
        "unknown router field(s) microdescriptor_digest for this document")


def test_verify_signatures_from_file(runner):
    facts = facts_of(runner.ok(module, path=str(CONSENSUS), verify_signatures=True, certs_path=str(CERTS),
                               authorities="document", now=VALID_AT, summary_only=True))
    verification = facts["verification"]
    assert verification["certs_path"] == str(CERTS)
    assert (verification["known_authorities"], verification["known_authorities_signed"]) == (2, 2)
    assert verification["required"] == 2 and verification["majority"] is True
    assert [s["verified"] for s in facts["signatures"]] == [True, True]
    # against the real network's authorities, a test network's signatures do not count
    known = facts_of(runner.ok(module, path=str(CONSENSUS), verify_signatures=True, certs_path=str(CERTS),
                               now=VALID_AT))["verification"]
    assert known["known_authorities"] == 9 and known["known_authorities_signed"] == 0
    assert known["majority"] is False


def test_verify_signatures_of_a_changed_document(runner, tmp_path):
    path = tmp_path / "cached-consensus"
    path.write_text(weighted(ns_text()))
    facts = facts_of(runner.ok(module, path=str(path), verify_signatures=True, certs_path=str(CERTS),
                               authorities="document", now=VALID_AT))
    assert facts["verification"]["majority"] is False
    assert [s["verified"] for s in facts["signatures"]] == [False, False]


# -- from tor --------------------------------------------------------------------------------------
def test_from_tor_ns(runner, fake):
    fake.info[NS_KEY] = ns_text()
    facts = facts_of(runner.ok(module, control_port=fake.port, flags=["Authority"], fields=["nickname"]))
    assert facts["source"] == {"type": "tor", "path": None, "control": "port 127.0.0.1:%d" % fake.port,
                               "getinfo_key": NS_KEY, "size": len(ns_text().rstrip("\n").encode())}
    assert facts["routers"] == [{"nickname": "test001a"}, {"nickname": "test000a"}]
    assert [line for line in fake.received if line.startswith("GETINFO")] == ["GETINFO " + NS_KEY]


def test_from_tor_auto_falls_back_to_microdesc(runner, fake):
    fake.info[MD_KEY] = microdesc(ns_text())
    facts = facts_of(runner.ok(module, control_port=fake.port, check_mode=True))
    assert facts["flavor"] == "microdesc" and facts["source"]["getinfo_key"] == MD_KEY
    assert facts["router_count"] == 3
    assert [line for line in fake.received if line.startswith("GETINFO")] == ["GETINFO " + NS_KEY,
                                                                             "GETINFO " + MD_KEY]


def test_from_tor_verify_with_its_cached_certs(runner, fake):
    fake.info[NS_KEY] = ns_text()
    shutil.copy(str(CERTS), fake.conf["DataDirectory"][0] + "/cached-certs")
    facts = facts_of(runner.ok(module, control_port=fake.port, verify_signatures=True, authorities="document",
                               now=VALID_AT))
    assert facts["verification"]["certs_path"] == fake.conf["DataDirectory"][0] + "/cached-certs"
    assert facts["verification"]["majority"] is True


@pytest.mark.parametrize("flavor, ns, md, message", [
    ("auto", None, None, "tor has no consensus yet: it has not fetched one (it is still bootstrapping, or "
                         "DisableNetwork is set) (tor answered GETINFO %s: 551 Could not open cached consensus. "
                         "Make sure FetchUselessDescriptors is set to 1.; GETINFO %s: 551 " % (NS_KEY, MD_KEY)),
    ("ns", None, "md", "tor has no ns (full) consensus: a client tor keeps only the microdesc consensus"),
    ("microdesc", "ns", None, "tor has no microdesc consensus (tor answered GETINFO %s: 551 " % MD_KEY),
    ("microdesc", "ns", "unknown", "this tor does not know the GETINFO key %s" % MD_KEY),
    ("auto", None, "unknown", "tor offers no consensus over the control port (tor answered GETINFO %s: 551" % NS_KEY),
], ids=["none at all", "no ns", "no microdesc", "old tor", "old tor without ns"])
def test_from_tor_not_available(runner, fake, flavor, ns, md, message):
    if ns:
        fake.info[NS_KEY] = ns_text()
    if md == "md":
        fake.info[MD_KEY] = microdesc(ns_text())
    elif md == "unknown":
        del fake.info[MD_KEY]
    result = runner.fails(module, control_port=fake.port, flavor=flavor)
    assert message in result["msg"]
    assert result["error"] == "ConsensusNotAvailable"


def test_from_tor_other_refusal_and_no_data_directory(runner, fake):
    fake.info[NS_KEY] = Error("550", "Permission denied")
    refused = runner.fails(module, control_port=fake.port)
    assert refused["msg"] == "tor refused GETINFO: 550 Permission denied" and refused["error"] == "OperationFailed"
    fake.info[NS_KEY] = ns_text()
    fake.conf["DataDirectory"] = []
    result = runner.fails(module, control_port=fake.port, verify_signatures=True)
    assert result["msg"] == "tor did not report its DataDirectory; set certs_path"


def test_from_tor_malformed(runner, fake):
    fake.info[NS_KEY] = ns_text().replace("valid-until 2017-05-25 04:46:50", "valid-until someday")
    result = runner.fails(module, control_port=fake.port)
    assert result["msg"].startswith("malformed consensus from tor (GETINFO %s): line 6: " % NS_KEY)
    assert result["line"] == 6 and result["error"] == "ConsensusError"


def test_connection_failure(runner, fake):
    port = fake.port
    fake.__exit__(None, None, None)
    result = runner.fails(module, control_port=port)
    assert result["msg"] == "cannot connect to tor's control port 127.0.0.1:%d: Connection refused" % port


# -- refusals --------------------------------------------------------------------------------------
def test_bad_files(runner, tmp_path):
    missing = tmp_path / "nothing-here"
    result = runner.fails(module, path=str(missing))
    assert result["msg"].startswith("cannot read the consensus file %s: No such file or directory" % missing)
    bad = tmp_path / "bad"
    bad.write_text(ns_text().replace("r test001a qgzRpIKSW809FnL4tntRtWgOiwo",
                                     "r test001a qgzRpIKSW809FnL4tntRtWgOiw!"))
    malformed = runner.fails(module, path=str(bad))
    assert malformed["msg"] == ("malformed consensus file %s: line 27: router test001a: identity "
                                "'qgzRpIKSW809FnL4tntRtWgOiw!' is not 27 base64 characters (a 20-byte digest)" % bad)
    assert malformed["line"] == 27 and malformed["error"] == "ConsensusError"
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x00\xff not a consensus\n")
    assert runner.fails(module, path=str(garbage))["msg"].startswith("malformed consensus file %s: " % garbage)
    v2 = runner.fails(module, path=str(STEM_DIR / "cached-consensus-v2"))
    assert v2["msg"].startswith("malformed consensus file %s: " % (STEM_DIR / "cached-consensus-v2"))
    certs = tmp_path / "certs"
    certs.write_text("dir-key-certificate-version 3\nfingerprint nonsense\n")
    bad_certs = runner.fails(module, path=str(CONSENSUS), verify_signatures=True, certs_path=str(certs))
    assert bad_certs["msg"].startswith("malformed key certificates in %s: " % certs)
    no_certs = runner.fails(module, path=str(CONSENSUS), verify_signatures=True, certs_path=str(missing))
    assert no_certs["msg"].startswith("cannot read the key certificates %s: No such file" % missing)


@pytest.mark.parametrize("params, message", [
    ({"limit": -1}, "limit must be 0 or more, got -1"),
    ({"verify_signatures": True}, "verify_signatures needs certs_path (a cached-certs file of the authorities' key "
                                  "certificates) when the consensus is read from a file (path)"),
    ({"now": "yesterday"}, "now must be 'YYYY-MM-DD HH:MM:SS', 'YYYY-MM-DDTHH:MM:SSZ' (UTC) or POSIX seconds, "
                           "got 'yesterday'"),
    ({"now": "2017-02-30 00:00:00"}, "now must be"),
    ({"authorities": ["not hex"]}, "authorities must be 'known', 'document' or a list of v3 identities"),
    ({"authorities": "everyone"}, "authorities must be 'known', 'document' or a list of v3 identities"),
    ({"fields": ["colour"]}, "value of fields must be one or more of: address, bandwidth"),
    ({"flavor": "v2"}, "value of flavor must be one of: auto, ns, microdesc, got: v2"),
], ids=["limit", "verify without certs", "now", "impossible date", "authorities list", "authorities word",
        "fields", "flavor"])
def test_refused_parameters(runner, params, message):
    result = runner.fails(module, path=str(CONSENSUS), **params)
    assert message in result["msg"]
    assert "ansible_facts" not in result
