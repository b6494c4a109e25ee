# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What tor_consensus_facts does once its options are checked: read the consensus in one of
its two modes (a file, path; or a running tor over the control port), read the authorities' key
certificates when signatures are verified, and parse.

This is a private module_utils file of onionlab.tor; its API may change at any time.

The module keeps the argument spec, the checks of its options, the failing and the shaping of
its result. It hands in its readers (read_file(path, what), read_from_tor(tor, flavor) ->
(text, GETINFO key), data_directory(tor)); what names the document in an error message is kept
on the ConsensusFacts (what, certs_path).
"""

from __future__ import annotations

import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import consensus as _consensus
from ansible_collections.onionlab.tor.plugins.module_utils._tor import rsa_verify as _rsa


class ConsensusFacts(object):
    def __init__(self, params, read_file, read_from_tor, data_directory):
        self.p = params
        self._read_file = read_file
        self._read_from_tor = read_from_tor
        self._data_directory = data_directory
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
            data = self._read_file(p["path"], "consensus file")
            self.source = {"type": "file", "path": p["path"], "control": None, "getinfo_key": None}
        else:
            with connect() as tor:
                data, key = self._read_from_tor(tor, p["flavor"])
                if p["verify_signatures"] and not self.certs_path:
                    self.certs_path = os.path.join(self._data_directory(tor), "cached-certs")
                self.source = {"type": "tor", "path": None, "control": tor.where, "getinfo_key": key}
            self.what = "consensus from tor (GETINFO %s)" % key
        self.source["size"] = len(data) if isinstance(data, bytes) else len(data.encode("utf-8"))
        return data

    def read_certificates(self):
        """The parsed key certificates of certs_path (None when signatures are not verified);
        a rsa_verify.CertificateError when they are malformed."""
        if self.p["verify_signatures"]:
            self.certs = _rsa.parse_certificates(self._read_file(self.certs_path, "key certificates"))
        return self.certs

    def parse(self, data, summary_only, authorities, now):
        """consensus.parse_consensus with the module's filters; ConsensusError for a malformed
        document, ValueError for an option value it refuses."""
        p = self.p
        return _consensus.parse_consensus(
            data, flags=p["flags"], fingerprints=p["fingerprints"], nicknames=p["nicknames"],
            min_bandwidth=p["min_bandwidth"], limit=p["limit"], fields=p["fields"],
            summary_only=summary_only, now=now, certs=self.certs, authorities=authorities)
