# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What tor_consensus_facts does once its options are checked: read the consensus from one of
its two sources (a file, path; or a running tor over the control port: GETINFO of the asked
flavour, tor's DataDirectory for the key certificates), read the authorities' key certificates
when signatures are verified, and parse.

This is a private module_utils file of onionlab.tor; its API may change at any time.

The module keeps the argument spec, the checks of its options, the failing and the shaping of
its result; this file owns the sources. What names the document in an error message is kept on
the ConsensusFacts (what, certs_path).
"""

from __future__ import annotations

import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import consensus as _consensus
from ansible_collections.onionlab.tor.plugins.module_utils._tor import rsa_verify as _rsa
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import OperationFailed, TorError

GETINFO_KEYS = {
    "ns": "dir/status-vote/current/consensus",
    "microdesc": "dir/status-vote/current/consensus-microdesc",
}


class ConsensusNotAvailable(TorError):
    """Tor has no consensus of the asked flavour(s) (or not the DataDirectory it needs); its
    type name is the result's error."""


def read_file(path, what):
    """The bytes of a file; an OSError naming `what` and path."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise OSError("cannot read the %s %s: %s" % (what, path, exc.strerror or exc))


def read_from_tor(tor, flavor):
    """(document text, GETINFO key) of the asked flavour ('auto': ns, else microdesc)."""
    refused = []
    for name in (("ns", "microdesc") if flavor == "auto" else (flavor,)):
        key = GETINFO_KEYS[name]
        try:
            return tor.get_info(key)[key], key
        except OperationFailed as exc:
            if exc.code not in ("551", "552"):
                raise
            refused.append((name, key, exc))
    answers = "; ".join("GETINFO %s: %s %s" % (key, exc.code, exc.message) for _name, key, exc in refused)
    if flavor == "auto" and all(exc.code == "551" for _name, _key, exc in refused):
        raise ConsensusNotAvailable("tor has no consensus yet: it has not fetched one (it is still bootstrapping, "
                                    "or DisableNetwork is set) (tor answered %s)" % answers)
    if flavor == "auto":
        raise ConsensusNotAvailable("tor offers no consensus over the control port (tor answered %s)" % answers)
    if refused[0][2].code == "552":
        raise ConsensusNotAvailable("this tor does not know the GETINFO key %s (the microdesc consensus is offered by "
                                    "tor 0.4.3 and later); use flavor: auto or ns (tor answered %s)"
                                    % (refused[0][1], answers))
    if flavor == "ns":
        raise ConsensusNotAvailable("tor has no ns (full) consensus: a client tor keeps only the microdesc consensus "
                                    "unless FetchUselessDescriptors 1 or UseMicrodescriptors 0 is set; use flavor: "
                                    "auto or microdesc (tor answered %s)" % answers)
    raise ConsensusNotAvailable("tor has no microdesc consensus (tor answered %s)" % answers)


def data_directory(tor):
    """tor's DataDirectory (GETCONF), where its cached-certs are."""
    for key, value in tor.get_conf("DataDirectory"):
        if key.lower() == "datadirectory" and value:
            return value
    raise ConsensusNotAvailable("tor did not report its DataDirectory; set certs_path")


class ConsensusFacts:
    def __init__(self, params):
        self.p = params
        self.what = "consensus"
        self.certs_path = params["certs_path"]
        self.source = None
        self.certs = None

    def read(self, connect):
        """The consensus document, from the file `path` or from tor (connect() opens the
        control connection); sets source (and certs_path from tor's DataDirectory when needed)."""
        p = self.p
        if p["path"]:
            self.what = "consensus file %s" % p["path"]
            data = read_file(p["path"], "consensus file")
            self.source = {"type": "file", "path": p["path"], "control": None, "getinfo_key": None}
        else:
            with connect() as tor:
                data, key = read_from_tor(tor, p["flavor"])
                if p["verify_signatures"] and not self.certs_path:
                    self.certs_path = os.path.join(data_directory(tor), "cached-certs")
                self.source = {"type": "tor", "path": None, "control": tor.where, "getinfo_key": key}
            self.what = "consensus from tor (GETINFO %s)" % key
        self.source["size"] = len(data) if isinstance(data, bytes) else len(data.encode("utf-8"))
        return data

    def read_certificates(self):
        """The parsed key certificates of certs_path (None when signatures are not verified);
        a rsa_verify.CertificateError when they are malformed."""
        if self.p["verify_signatures"]:
            self.certs = _rsa.parse_certificates(read_file(self.certs_path, "key certificates"))
        return self.certs

    def parse(self, data, summary_only, authorities, now):
        """consensus.parse_consensus with the module's filters; ConsensusError for a malformed
        document, ValueError for an option value it refuses."""
        p = self.p
        return _consensus.parse_consensus(
            data, flags=p["flags"], fingerprints=p["fingerprints"], nicknames=p["nicknames"],
            min_bandwidth=p["min_bandwidth"], limit=p["limit"], fields=p["fields"],
            summary_only=summary_only, now=now, certs=self.certs, authorities=authorities)
