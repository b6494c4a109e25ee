#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tor_consensus_facts
short_description: The Tor network-status consensus, parsed, validated, verified, summarised and filtered, as facts
version_added: 0.1.0
description:
  - Reads a v3 network-status consensus, from a file (O(path)) or from a running tor over its control port or socket,
    validates it as a whole and returns its header, its directory authorities, its signatures, a summary of every
    router and, when asked for (see O(summary_only)), the routers that pass the filters, as
    RV(ansible_facts.tor_consensus).
  - Both flavours are read, V(ns) (the full consensus) and V(microdesc). From tor, the module asks
    C(GETINFO dir/status-vote/current/consensus) or C(GETINFO dir/status-vote/current/consensus-microdesc)
    (tor 0.4.3 and later) as O(flavor) says. A file may also hold a vote; RV(ansible_facts.tor_consensus.is_vote)
    tells.
  - Every line of the document is checked, also those of routers the filters leave out (keyword order and counts,
    value formats, identities, ports, times, as Stem's C(validate=True)); a malformed document fails the task with
    one message that names the line and what is wrong. The filters only choose what is returned.
  - With O(verify_signatures=true), each C(directory-signature) is checked against the authorities' key
    certificates (a C(cached-certs) file), each certificate's cross-certification, certification and expiry too,
    and RV(ansible_facts.tor_consensus.verification.majority) says whether more than half of the directory
    authorities in O(authorities) have a verified signature. A consensus that fails the checks does not fail the
    task; test the result (see the examples).
  - Pure Python on the managed host; nothing is changed on tor. C(changed) is always V(false) and check mode
    returns the same facts.
  - Each run sets RV(ansible_facts.tor_consensus) as a whole.
author:
  - onionlab.tor contributors (@onionlab)
options:
  path:
    description:
      - A consensus file on the managed host, for example tor's C(DataDirectory/cached-consensus) or
        C(cached-microdesc-consensus), or a document from CollecTor (a leading C(@type) line is allowed).
      - Without O(path) the consensus is read from the running tor that the connection options name.
      - With O(path) the connection options are not used (so that C(module_defaults) for the action group can set
        them for every module).
    type: path
  flavor:
    description:
      - Which consensus to read from tor.
      - V(auto) takes the full V(ns) consensus when tor has it (a relay, a directory cache, a tor with
        C(FetchUselessDescriptors 1) or C(UseMicrodescriptors 0)) and otherwise the V(microdesc) one, the only one a
        client tor keeps by default.
      - With O(path), V(ns) or V(microdesc) make the task fail when the file holds the other flavour.
      - A tor that has no consensus of the asked flavour (tor answers C(551)) or does not know the key (an older
        tor answers C(552)) fails the task with a message saying so; a tor that has none at all (it has not
        bootstrapped, or C(DisableNetwork) is set) fails with V(tor has no consensus yet).
    type: str
    choices: [auto, ns, microdesc]
    default: auto
  verify_signatures:
    description:
      - Verify the consensus's signatures against the key certificates of O(certs_path); the report is
        RV(ansible_facts.tor_consensus.verification), and each entry of RV(ansible_facts.tor_consensus.signatures)
        gets V(true) or V(false) in its C(verified) field (otherwise V(null)).
    type: bool
    default: false
  certs_path:
    description:
      - A file of directory-authority key certificates, as tor keeps in C(DataDirectory/cached-certs).
      - When the consensus is read from tor, the default is C(cached-certs) in the C(DataDirectory) tor reports
        (C(GETCONF DataDirectory)); the file must be readable by the user the module runs as (often it takes
        C(become)).
      - Required with O(verify_signatures=true) and O(path).
    type: path
  authorities:
    description:
      - The directory authorities whose signatures count for the majority of
        RV(ansible_facts.tor_consensus.verification.majority).
      - V(known) means the nine directory authorities compiled into tor 0.4.9 (its C(auth_dirs.inc)), the list this
        collection ships.
      - V(document) means the C(dir-source) entries of the consensus itself. The document then vouches for its own
        signers, which proves nothing about the real Tor network; use it only for a private test network
        (C(TestingTorNetwork)) whose authorities tor's defaults do not know.
      - Or a list of v3 identities (40 hexadecimal digits, the C(v3ident) of C(dir-source) lines and the identity of
        C(directory-signature) lines) of the authorities to count.
    type: raw
    default: known
  flags:
    description:
      - Return only routers that have every one of these flags (for example V(Exit), V(Guard), V(Stable)).
    type: list
    elements: str
  fingerprints:
    description:
      - Return only the routers with these identity fingerprints (40 hexadecimal digits, any case, a leading C($)
        allowed).
    type: list
    elements: str
  nicknames:
    description:
      - Return only the routers with these nicknames (compared without regard to case).
    type: list
    elements: str
  min_bandwidth:
    description:
      - Return only routers whose consensus weight (the C(w Bandwidth=) value) is at least this.
    type: int
  limit:
    description:
      - Return at most this many of the matching routers, the first ones in the document (which is ordered by
        identity). RV(ansible_facts.tor_consensus.routers_matched) still counts every match.
      - V(0) returns none.
    type: int
  fields:
    description:
      - The keys each returned router has; by default every key of the flavour.
      - V(digest) and V(exit_policy) exist in V(ns) documents only, V(microdescriptor_digest) in V(microdesc) ones
        only, and V(identifier_type), V(identifier) and V(microdescriptor_hashes) in votes only; a key the document
        cannot have fails the task.
    type: list
    elements: str
    choices: [address, bandwidth, digest, dir_port, exit_policy, fingerprint, flags, identifier, identifier_type,
              measured, microdescriptor_digest, microdescriptor_hashes, nickname, or_addresses, or_port, protocols,
              published, unmeasured, version, version_line]
  summary_only:
    description:
      - V(true) returns no router list (RV(ansible_facts.tor_consensus.routers) is absent), only the counts and the
        summary; V(false) returns the routers that pass the filters.
      - When unset, the routers are returned only when a filter (O(flags), O(fingerprints), O(nicknames),
        O(min_bandwidth)), O(limit) or O(fields) is given; otherwise only the summary is. Set V(false) to get every
        router of the consensus; see the notes for what that costs.
    type: bool
  now:
    description:
      - The time that RV(ansible_facts.tor_consensus.summary.is_fresh), RV(ansible_facts.tor_consensus.summary.is_valid)
        and the certificates' expiry are judged at, in UTC, as C(YYYY-MM-DD HH:MM:SS), C(YYYY-MM-DDTHH:MM:SSZ) or
        POSIX seconds; by default the current time. Useful for archived documents.
    type: str
extends_documentation_fragment:
  - onionlab.tor.control
  - onionlab.tor.attributes
  - onionlab.tor.attributes.FACTS
  - onionlab.tor.attributes.INFO_MODULE
  - onionlab.tor.attributes.ACTIONGROUP_TOR
notes:
  - Size of the result. A consensus of the real Tor network lists some 7000 routers; with every field that is
    about 5 MB of JSON, which Ansible (2.19) takes some 20 seconds to take in and keeps for the host. So by default
    (O(summary_only) unset, no filter, O(limit) or O(fields)) only the summary and the counts are returned, and the
    module warns when it returns more than 1000 routers with every field. The summary and the counts always cover
    every router, whatever the filters.
  - The connection options are used only when the consensus is read from tor.
  - Every time is in UTC, written as ISO 8601 C(YYYY-MM-DDTHH:MM:SSZ).
  - The parser follows Stem's (test-only oracle of this collection) results, field for field, except where tor and
    dir-spec accept what Stem refuses (an empty C(client-versions) line, which tor writes when it recommends
    nothing, and out-of-range C(params) values, which tor clamps).
seealso:
  - name: Tor directory protocol, the consensus format
    description: The document this module parses (dir-spec section 3.4.1).
    link: https://spec.torproject.org/dir-spec/consensus-formats.html
  - name: Tor control protocol, GETINFO
    description: The C(dir/status-vote/current/consensus) keys.
    link: https://spec.torproject.org/control-spec/commands.html#getinfo
  - module: onionlab.tor.tor_accounting_facts
"""

EXAMPLES = r"""
- name: Summarise the consensus the local tor uses (control socket /run/tor/control, cookie authentication)
  onionlab.tor.tor_consensus_facts:

- name: Report the size of the network
  ansible.builtin.debug:
    msg: >-
      {{ ansible_facts.tor_consensus.router_count }} routers,
      {{ ansible_facts.tor_consensus.summary.flags.Exit | default(0) }} exits,
      fresh: {{ ansible_facts.tor_consensus.summary.is_fresh }}

- name: Verify the signatures of the consensus tor holds, with tor's own cached-certs
  onionlab.tor.tor_consensus_facts:
    control_port: 9051
    verify_signatures: true
    summary_only: true
  become: true

- name: Fail unless a majority of the directory authorities signed it
  ansible.builtin.assert:
    that:
      - ansible_facts.tor_consensus.verification.majority
    fail_msg: >-
      only {{ ansible_facts.tor_consensus.verification.known_authorities_signed }} of
      {{ ansible_facts.tor_consensus.verification.known_authorities }} authorities have a verified signature

- name: The ten heaviest-weighted fast, stable exits of a cached consensus file, with a few fields each
  onionlab.tor.tor_consensus_facts:
    path: /var/lib/tor/cached-consensus
    flags: [Exit, Fast, Stable]
    min_bandwidth: 10000
    fields: [nickname, fingerprint, address, bandwidth, exit_policy]
  become: true

- name: Print them
  ansible.builtin.debug:
    msg: "{{ (ansible_facts.tor_consensus.routers | sort(attribute='bandwidth', reverse=true))[:10] }}"

- name: Is my relay in the consensus, and with which flags?
  onionlab.tor.tor_consensus_facts:
    fingerprints:
      - 9695DFC35FFEB861329B9F1AB04C46397020CE31
    fields: [nickname, flags, bandwidth, measured]

- name: An archived consensus with its certificates, judged at the time it was valid
  onionlab.tor.tor_consensus_facts:
    path: /srv/archive/2017-03-10-cached-microdesc-consensus
    certs_path: /srv/archive/2017-03-10-cached-certs
    verify_signatures: true
    now: "2017-03-10 12:30:00"
    summary_only: true
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    tor_consensus:
      description: The consensus.
      returned: always
      type: dict
      contains:
        source:
          description: Where the document came from.
          returned: always
          type: dict
          contains:
            type:
              description: V(file) (O(path)) or V(tor) (the control connection).
              type: str
              sample: tor
            path:
              description: The file read, with O(path); else V(null).
              type: str
              sample: null
            control:
              description: The control port or socket the consensus was read from; else V(null).
              type: str
              sample: port 127.0.0.1:9051
            getinfo_key:
              description: The C(GETINFO) key that was read; else V(null).
              type: str
              sample: dir/status-vote/current/consensus-microdesc
            size:
              description: Size of the document in bytes.
              type: int
              sample: 2112273
        flavor:
          description: V(ns) or V(microdesc).
          returned: always
          type: str
          sample: microdesc
        vote_status:
          description: V(consensus), or V(vote) for a vote read from a file.
          returned: always
          type: str
          sample: consensus
        is_vote:
          description: Whether the document is a vote.
          returned: always
          type: bool
          sample: false
        consensus_method:
          description: The consensus method the authorities used (consensuses only).
          returned: when the document is a consensus
          type: int
          sample: 32
        consensus_methods:
          description: The consensus methods the voter supports (votes only).
          returned: when the document is a vote
          type: list
          elements: int
          sample: [28, 29, 30, 31, 32]
        published:
          description: When the vote was published (votes only).
          returned: when the document is a vote
          type: str
          sample: "2022-11-19T09:50:00Z"
        flag_thresholds:
          description: The voter's C(flag-thresholds) (votes only).
          returned: when the document is a vote
          type: dict
          sample: {}
        bandwidth_file_headers:
          description: The voter's C(bandwidth-file-headers) (votes only).
          returned: when the document is a vote
          type: dict
          sample: {}
        bandwidth_file_digest:
          description: The voter's C(bandwidth-file-digest) (votes only).
          returned: when the document is a vote
          type: dict
          sample: {}
        valid_after:
          description: Start of the period the consensus is for.
          returned: always
          type: str
          sample: "2022-11-19T10:00:00Z"
        fresh_until:
          description: Until when it is the newest consensus.
          returned: always
          type: str
          sample: "2022-11-19T11:00:00Z"
        valid_until:
          description: Until when clients may use it.
          returned: always
          type: str
          sample: "2022-11-19T13:00:00Z"
        voting_delay:
          description: The authorities' voting delays in seconds, C(vote_seconds) and C(dist_seconds).
          returned: always
          type: dict
          sample: {"vote_seconds": 300, "dist_seconds": 300}
        client_versions:
          description: The tor versions recommended for clients.
          returned: always
          type: list
          elements: str
          sample: ["0.4.7.11", "0.4.7.12"]
        server_versions:
          description: The tor versions recommended for relays.
          returned: always
          type: list
          elements: str
          sample: ["0.4.7.11", "0.4.7.12"]
        packages:
          description: The C(package) lines, each with C(name), C(version), C(url) and C(digests).
          returned: always
          type: list
          elements: dict
          sample: []
        known_flags:
          description: The flags the authorities voted on.
          returned: always
          type: list
          elements: str
          sample: [Authority, BadExit, Exit, Fast, Guard, HSDir, MiddleOnly, NoEdConsensus, Running, Stable, V2Dir, Valid]
        recommended_client_protocols:
          description: Subprotocol versions recommended for clients, name to list of versions.
          returned: always
          type: dict
          sample: {"Cons": [2], "Link": [4, 5]}
        recommended_relay_protocols:
          description: Subprotocol versions recommended for relays.
          returned: always
          type: dict
          sample: {"Cons": [2], "Link": [4, 5]}
        required_client_protocols:
          description: Subprotocol versions clients must support.
          returned: always
          type: dict
          sample: {"Cons": [2], "Link": [4]}
        required_relay_protocols:
          description: Subprotocol versions relays must support.
          returned: always
          type: dict
          sample: {"Cons": [2], "Link": [4]}
        params:
          description: The consensus parameters (C(params) line), name to integer; only those the document carries.
          returned: always
          type: dict
          sample: {"bwweightscale": 10000, "CircuitPriorityHalflifeMsec": 30000}
        shared_rand_previous:
          description: The previous shared random value, C(num_reveals) and C(value); V(null) when absent.
          returned: always
          type: dict
          sample: {"num_reveals": 9, "value": "pl2vEtP+QuJtDNmSNrZAbSjlSQfpFMgJzwgHQxkKvfs="}
        shared_rand_current:
          description: The current shared random value; V(null) when absent.
          returned: always
          type: dict
          sample: {"num_reveals": 9, "value": "zxJao+gBmFMSezvz/VXkEWEQJD5b/z+7AXNCGoLFVW0="}
        authorities:
          description:
            - The C(dir-source) entries, each with C(nickname), C(v3ident), C(hostname), C(address), C(dir_port),
              C(or_port), C(is_legacy), C(contact), C(vote_digest) and C(is_known_authority) (the v3ident is one of
              tor 0.4.9's directory authorities).
          returned: always
          type: list
          elements: dict
          sample:
            - nickname: gabelmoo
              v3ident: ED03BB616EB2F60BEC80151114BB25CEF515B226
              hostname: 131.188.40.189
              address: 131.188.40.189
              dir_port: 80
              or_port: 443
              is_legacy: false
              contact: 4096R/261C5FBE77285F88FB0C343266C8C2D7C5AA446D Sebastian Hahn <tor@sebastianhahn.net>
              vote_digest: 4EC47D2D0E5CA3DF7F8747FF38C36C4A8DCCDC5D
              is_known_authority: true
        bandwidth_weights:
          description: The C(bandwidth-weights) of the footer, name to integer.
          returned: always
          type: dict
          sample: {"Wbd": 0, "Wbe": 0, "Wbg": 4143}
        signatures:
          description:
            - The C(directory-signature) entries, each with C(identity) (v3ident), C(signing_key_digest),
              C(algorithm) (V(sha1) or V(sha256)) and C(verified) (V(null) without O(verify_signatures)).
          returned: always
          type: list
          elements: dict
          sample:
            - identity: ED03BB616EB2F60BEC80151114BB25CEF515B226
              signing_key_digest: 8F3A4B2D0CA0D7C4C2E3F1B4A9E9C3D1E2B3F4A5
              algorithm: sha256
              verified: true
        router_count:
          description: How many routers the consensus lists (all of them, whatever the filters).
          returned: always
          type: int
          sample: 6088
        routers_matched:
          description: How many routers pass the filters, before O(limit).
          returned: always
          type: int
          sample: 1320
        summary:
          description: Figures over every router of the consensus, whatever the filters.
          returned: always
          type: dict
          contains:
            routers:
              description: The number of routers.
              type: int
              sample: 6088
            flags:
              description: Routers per flag.
              type: dict
              sample: {"Exit": 1320, "Guard": 2811, "Running": 6088}
            consensus_weight:
              description: C(total), the sum of every router's consensus weight, and C(by_flag), the sum per flag.
              type: dict
              sample: {"total": 94503228, "by_flag": {"Exit": 31045113, "Guard": 63812250}}
            versions:
              description:
                - Routers per tor version (V(other) for routers of another software, V(unknown) for those without a
                  C(v) line).
              type: dict
              sample: {"0.4.7.10": 1812, "0.4.7.11": 1200}
            is_fresh:
              description: Whether O(now) lies between RV(ansible_facts.tor_consensus.valid_after) and RV(ansible_facts.tor_consensus.fresh_until).
              type: bool
              sample: true
            is_valid:
              description: Whether O(now) lies between RV(ansible_facts.tor_consensus.valid_after) and RV(ansible_facts.tor_consensus.valid_until).
              type: bool
              sample: true
        routers:
          description:
            - The routers that pass the filters, in document order, at most O(limit), each with the keys of O(fields)
              (by default every key of the flavour).
          returned: when O(summary_only=false), or O(summary_only) is unset and a filter, O(limit) or O(fields) is given
          type: list
          elements: dict
          contains:
            nickname:
              description: The router's nickname.
              type: str
              sample: moria1
            fingerprint:
              description: Its identity fingerprint, 40 upper-case hexadecimal digits.
              type: str
              sample: 9695DFC35FFEB861329B9F1AB04C46397020CE31
            digest:
              description: The SHA-1 digest of its router descriptor, upper-case hexadecimal (V(ns) only).
              type: str
              sample: 3D2C8B7E0E4B8E1B6C5DCA2F0E6C7A9A0B1C2D3E
            microdescriptor_digest:
              description: The SHA-256 digest of its microdescriptor, base64 without padding (V(microdesc) only).
              type: str
              sample: QxfB3i6thZ6vgvovto5mD24nP3E/Q6q6NQ112hq4luQ
            published:
              description: When its descriptor was published.
              type: str
              sample: "2022-11-19T07:12:48Z"
            address:
              description: Its IPv4 address.
              type: str
              sample: 128.31.0.39
            or_port:
              description: Its ORPort.
              type: int
              sample: 9101
            dir_port:
              description: Its DirPort; V(null) when it has none.
              type: int
              sample: 9131
            or_addresses:
              description: Further OR addresses (C(a) lines), each with C(address), C(port) and C(ipv6).
              type: list
              elements: dict
              sample: [{"address": "2001:db8::1", "port": 9001, "ipv6": true}]
            flags:
              description: Its flags.
              type: list
              elements: str
              sample: [Fast, Guard, Running, Stable, V2Dir, Valid]
            version:
              description: Its tor version; V(null) for other software or without a C(v) line.
              type: str
              sample: 0.4.7.11
            version_line:
              description: The C(v) line as written (after C(v )); V(null) without one.
              type: str
              sample: Tor 0.4.7.11
            protocols:
              description: Its subprotocol versions (C(pr) line), name to list of versions.
              type: dict
              sample: {"Cons": [1, 2], "Link": [1, 2, 3, 4, 5]}
            bandwidth:
              description: Its consensus weight (C(w Bandwidth=)); V(null) without a C(w) line.
              type: int
              sample: 2100
            measured:
              description: The measured bandwidth (votes); V(null) when absent.
              type: int
              sample: null
            unmeasured:
              description: Whether the weight is not based on enough measurements (C(Unmeasured=1)).
              type: bool
              sample: false
            exit_policy:
              description: Its exit-policy summary (C(p) line), for example V(accept 80,443); V(null) without one (V(ns) only).
              type: str
              sample: reject 1-65535
            identifier_type:
              description: Type of its C(id) line (votes only), for example V(ed25519).
              type: str
              sample: ed25519
            identifier:
              description: The value of its C(id) line (votes only).
              type: str
              sample: none
            microdescriptor_hashes:
              description: Its C(m) lines (votes only), each with C(methods) and C(hashes).
              type: list
              elements: dict
              sample: []
        verification:
          description: The signature check.
          returned: when O(verify_signatures=true)
          type: dict
          contains:
            certs_path:
              description: The key-certificate file used.
              type: str
              sample: /var/lib/tor/cached-certs
            digests:
              description: The V(sha1) and V(sha256) digests of the signed part, upper-case hexadecimal.
              type: dict
              sample: {"sha1": "A6541D7EC767DADE31371FC202BF7C907D00B45B", "sha256": "0FD59FE0..."}
            signatures:
              description:
                - Each signature with C(identity), C(nickname), C(algorithm), C(signing_key_digest),
                  C(is_known_authority) (counted for the majority), C(signature_valid) (the RSA signature matches
                  the digest), C(certificate) (its checks, or V(null) when there is no certificate for it),
                  C(verified) (valid signature and a sound, unexpired certificate) and C(reason) (why not, else
                  V(null)).
              type: list
              elements: dict
            authorities:
              description: Each authority counted for the majority, with C(identity), C(nickname), C(signed) and C(verified).
              type: list
              elements: dict
            known_authorities:
              description: How many authorities count (see O(authorities)).
              type: int
              sample: 9
            known_authorities_signed:
              description: How many of them have a verified signature.
              type: int
              sample: 8
            required:
              description:
                - How many verified signatures make a majority, more than half of
                  RV(ansible_facts.tor_consensus.verification.known_authorities).
              type: int
              sample: 5
            majority:
              description:
                - Whether RV(ansible_facts.tor_consensus.verification.known_authorities_signed) reaches
                  RV(ansible_facts.tor_consensus.verification.required).
              type: bool
              sample: true
            certificates:
              description:
                - The checks of every certificate of the file, each with C(fingerprint), C(published), C(expires),
                  C(signing_key_digest), C(fingerprint_matches), C(crosscert_valid), C(certification_valid),
                  C(expired), C(not_yet_valid), C(ok) and C(problems).
              type: list
              elements: dict
"""

import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.onionlab.tor.plugins.module_utils import _consensus_facts_backend as backend
from ansible_collections.onionlab.tor.plugins.module_utils._common import (
    MODULE_ERRORS,
    connect_module,
    control_argument_spec,
    fail,
    module_kwargs,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor import consensus as _consensus
from ansible_collections.onionlab.tor.plugins.module_utils._tor import rsa_verify as _rsa

GETINFO_KEYS = backend.GETINFO_KEYS
# returning more routers than this with every field draws a warning
LARGE_RESULT = 1000
# the options that ask for a router list when summary_only is unset
ROUTER_SELECTORS = ("flags", "fingerprints", "nicknames", "min_bandwidth", "limit", "fields")
_HEX40 = re.compile(r"[0-9A-Fa-f]{40}\Z")
_NOW_RE = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2})[T ]([0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.[0-9]+)?(?:Z|[+-]00:?00)?\Z")


def _authorities(value):
    """The authorities option -> the parser's argument (None = the known list)."""
    if value is None or value == "known":
        return None
    if value == "document":
        return "document"
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) and _HEX40.match(v) for v in value):
        return [v.upper() for v in value]
    raise ValueError("authorities must be 'known', 'document' or a list of v3 identities (40 hexadecimal digits), "
                     "got %r" % (value,))


def _now(value):
    if value is None:
        return None
    text = str(value).strip()
    if re.match(r"[0-9]+(?:\.[0-9]+)?\Z", text):
        return float(text)
    match = _NOW_RE.match(text)
    if match:
        stamp = "%s %s" % match.groups()
        try:
            _rsa.parse_timestamp(stamp)
        except ValueError:
            match = None
        else:
            return stamp
    raise ValueError("now must be 'YYYY-MM-DD HH:MM:SS', 'YYYY-MM-DDTHH:MM:SSZ' (UTC) or POSIX seconds, got %r"
                     % (value,))


def main():
    spec = control_argument_spec(
        path=dict(type="path"),
        flavor=dict(type="str", choices=["auto", "ns", "microdesc"], default="auto"),
        verify_signatures=dict(type="bool", default=False),
        certs_path=dict(type="path"),
        authorities=dict(type="raw", default="known"),
        flags=dict(type="list", elements="str"),
        fingerprints=dict(type="list", elements="str"),
        nicknames=dict(type="list", elements="str"),
        min_bandwidth=dict(type="int"),
        limit=dict(type="int"),
        fields=dict(type="list", elements="str", choices=list(_consensus.ROUTER_FIELDS)),
        summary_only=dict(type="bool"),
        now=dict(type="str"),
    )
    module = AnsibleModule(**module_kwargs(
        spec,
        supports_check_mode=True))
    p = module.params

    try:
        authorities = _authorities(p["authorities"])
        now = _now(p["now"])
    except ValueError as exc:
        fail(module, exc, msg=str(exc))
    if p["limit"] is not None and p["limit"] < 0:
        module.fail_json(msg="limit must be 0 or more, got %d" % p["limit"], error="ValueError")
    if p["verify_signatures"] and p["path"] and not p["certs_path"]:
        module.fail_json(msg="verify_signatures needs certs_path (a cached-certs file of the authorities' key "
                             "certificates) when the consensus is read from a file (path)", error="ValueError")

    summary_only = p["summary_only"]
    if summary_only is None:
        summary_only = all(p[name] is None for name in ROUTER_SELECTORS)
    run = backend.ConsensusFacts(p)
    try:
        data = run.read(lambda: connect_module(module))
        try:
            run.read_certificates()
        except _rsa.CertificateError as exc:
            fail(module, exc, msg="malformed key certificates in %s: %s" % (run.certs_path, exc), line=exc.line)
        facts = run.parse(data, summary_only, authorities, now)
    except _consensus.ConsensusError as exc:
        fail(module, exc, msg="malformed %s: %s" % (run.what, exc), line=exc.line)
    except MODULE_ERRORS as exc:  # ConsensusNotAvailable, the client's errors, a file that cannot be read
        fail(module, exc)
    except ValueError as exc:     # an option value the parser refuses (fields, filters)
        fail(module, exc, msg=str(exc))

    if p["flavor"] != "auto" and facts["flavor"] != p["flavor"]:
        module.fail_json(msg="the %s is a %s consensus, not %s (flavor: %s)"
                         % (run.what, facts["flavor"], p["flavor"], p["flavor"]), error="ValueError")
    facts["source"] = run.source
    if run.certs is not None:
        facts["verification"]["certs_path"] = run.certs_path
    returned = len(facts.get("routers", ()))
    if returned > LARGE_RESULT and p["fields"] is None:
        module.warn("returning %d routers with every field as facts (Ansible is slow with that much data); use "
                    "summary_only, the filters, fields or limit to keep the result small" % returned)
    module.exit_json(changed=False, ansible_facts={"tor_consensus": facts})


if __name__ == "__main__":
    main()
