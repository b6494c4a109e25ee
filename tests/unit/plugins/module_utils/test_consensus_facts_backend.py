# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_consensus_facts_backend: its two sources (a file; tor over the control port, here the fake
control port of tests/harness over a real loopback socket), the key certificates from a path or
from tor's DataDirectory, and each refusal with its message."""

import shutil

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils import _consensus_facts_backend as backend
from ansible_collections.onionlab.tor.plugins.module_utils._tor import rsa_verify
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import OperationFailed
from harness.data import STEM_DIR
from harness.fake_controller import Error, FakeController

CONSENSUS = STEM_DIR / "cached-consensus"      # ns flavour, three routers
CERTS = STEM_DIR / "cached-certs"
VALID_AT = "2017-05-25 04:46:35"
NS_KEY, MD_KEY = backend.GETINFO_KEYS["ns"], backend.GETINFO_KEYS["microdesc"]


def params(**overrides):
    p = dict(path=None, flavor="auto", verify_signatures=False, certs_path=None, flags=None, fingerprints=None,
             nicknames=None, min_bandwidth=None, limit=None, fields=None)
    p.update(overrides)
    return p


@pytest.fixture
def fake(tmp_path):
    with FakeController(tmp_path / "tordata") as controller:
        yield controller
    assert controller.errors == []


def opener(fake):
    return lambda: connect(port=fake.port)


def test_file_source_read_verified_and_parsed():
    run = backend.ConsensusFacts(params(path=str(CONSENSUS), verify_signatures=True, certs_path=str(CERTS)))
    data = run.read(None)          # no connection for a file
    assert data == CONSENSUS.read_bytes()
    assert run.source == {"type": "file", "path": str(CONSENSUS), "control": None, "getinfo_key": None,
                          "size": len(data)}
    assert run.what == "consensus file %s" % CONSENSUS
    assert len(run.read_certificates()) == 2
    facts = run.parse(data, False, "document", VALID_AT)
    assert facts["flavor"] == "ns" and len(facts["routers"]) == 3
    assert facts["verification"]["majority"] is True
    assert [s["verified"] for s in facts["signatures"]] == [True, True]


def test_no_certificates_read_without_verification():
    run = backend.ConsensusFacts(params(path=str(CONSENSUS), certs_path="/nonexistent"))
    assert run.read_certificates() is None and run.certs is None


def test_unreadable_file_named(tmp_path):
    run = backend.ConsensusFacts(params(path=str(tmp_path / "missing")))
    with pytest.raises(OSError) as info:
        run.read(None)
    assert str(info.value) == "cannot read the consensus file %s: No such file or directory" % (tmp_path / "missing")


def test_malformed_certificates_refused(tmp_path):
    bad = tmp_path / "certs"
    bad.write_text("dir-key-certificate-version 3\nfingerprint nothex\n")
    run = backend.ConsensusFacts(params(path=str(CONSENSUS), verify_signatures=True, certs_path=str(bad)))
    with pytest.raises(rsa_verify.CertificateError):
        run.read_certificates()


def test_tor_source_auto_takes_ns_and_certs_from_data_directory(fake):
    fake.info[NS_KEY] = CONSENSUS.read_text()
    shutil.copy(str(CERTS), fake.conf["DataDirectory"][0] + "/cached-certs")
    run = backend.ConsensusFacts(params(verify_signatures=True))
    data = run.read(opener(fake))
    assert data.strip() == CONSENSUS.read_text().strip()    # a GETINFO value loses its last newline
    assert run.source == {"type": "tor", "path": None, "control": "port 127.0.0.1:%d" % fake.port,
                          "getinfo_key": NS_KEY, "size": len(data.encode("utf-8"))}
    assert run.what == "consensus from tor (GETINFO %s)" % NS_KEY
    assert run.certs_path == fake.conf["DataDirectory"][0] + "/cached-certs"
    assert len(run.read_certificates()) == 2


def test_tor_source_auto_falls_back_to_microdesc(fake):
    fake.info[MD_KEY] = "microdesc text"
    with connect(port=fake.port) as tor:
        assert backend.read_from_tor(tor, "auto") == ("microdesc text", MD_KEY)


@pytest.mark.parametrize("flavor, answers, message", [
    ("auto", {}, "tor has no consensus yet: it has not fetched one"),
    ("auto", {NS_KEY: Error("552", "Unrecognized key"), MD_KEY: Error("551", "No consensus")},
     "tor offers no consensus over the control port"),
    ("microdesc", {MD_KEY: Error("552", "Unrecognized key")},
     "this tor does not know the GETINFO key %s (the microdesc consensus is offered by tor 0.4.3" % MD_KEY),
    ("ns", {}, "tor has no ns (full) consensus: a client tor keeps only the microdesc consensus"),
    ("microdesc", {}, "tor has no microdesc consensus (tor answered GETINFO %s: 551" % MD_KEY),
])
def test_tor_without_the_consensus_refused(fake, flavor, answers, message):
    fake.info.update(answers)
    with connect(port=fake.port) as tor:
        with pytest.raises(backend.ConsensusNotAvailable) as info:
            backend.read_from_tor(tor, flavor)
    assert message in str(info.value)


def test_other_tor_errors_pass_through(fake):
    fake.info[NS_KEY] = Error("510", "Unrecognized command")
    with connect(port=fake.port) as tor:
        with pytest.raises(OperationFailed) as info:
            backend.read_from_tor(tor, "ns")
    assert info.value.code == "510"


def test_no_data_directory_refused(fake):
    fake.conf["DataDirectory"] = []
    with connect(port=fake.port) as tor:
        with pytest.raises(backend.ConsensusNotAvailable) as info:
            backend.data_directory(tor)
    assert str(info.value) == "tor did not report its DataDirectory; set certs_path"
