# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stem (test-only) as the oracle: a Stem-parsed network-status document in our output shape."""

from stem.descriptor.networkstatus import NetworkStatusDocumentV3


def _iso(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ") if dt is not None else None


def _protocols(value):
    return dict((k, list(v)) for k, v in (value or {}).items())


def stem_document(data, validate=True):
    """Parse with Stem (default_params=False: only the params the document carries)."""
    return NetworkStatusDocumentV3(data, validate=validate, default_params=False)


def stem_header(doc):
    out = {
        "flavor": doc.version_flavor,
        "vote_status": "vote" if doc.is_vote else "consensus",
        "is_vote": doc.is_vote,
        "valid_after": _iso(doc.valid_after),
        "fresh_until": _iso(doc.fresh_until),
        "valid_until": _iso(doc.valid_until),
        "voting_delay": {"vote_seconds": doc.vote_delay, "dist_seconds": doc.dist_delay},
        "client_versions": [str(v) for v in doc.client_versions],
        "server_versions": [str(v) for v in doc.server_versions],
        "packages": [{"name": p.name, "version": p.version, "url": p.url, "digests": dict(p.digests)}
                     for p in doc.packages],
        "known_flags": list(doc.known_flags),
        "recommended_client_protocols": _protocols(doc.recommended_client_protocols),
        "recommended_relay_protocols": _protocols(doc.recommended_relay_protocols),
        "required_client_protocols": _protocols(doc.required_client_protocols),
        "required_relay_protocols": _protocols(doc.required_relay_protocols),
        "params": dict(doc.params),
        "shared_rand_previous": None,
        "shared_rand_current": None,
        "bandwidth_weights": dict(doc.bandwidth_weights),
        "signatures": [{"identity": s.identity, "signing_key_digest": s.key_digest, "algorithm": s.method,
                        "verified": None} for s in doc.signatures],
    }
    if doc.shared_randomness_previous_value is not None:
        out["shared_rand_previous"] = {"num_reveals": doc.shared_randomness_previous_reveal_count,
                                       "value": doc.shared_randomness_previous_value}
    if doc.shared_randomness_current_value is not None:
        out["shared_rand_current"] = {"num_reveals": doc.shared_randomness_current_reveal_count,
                                      "value": doc.shared_randomness_current_value}
    if doc.is_vote:
        out["consensus_methods"] = list(doc.consensus_methods)
        out["published"] = _iso(doc.published)
        out["flag_thresholds"] = dict(doc.flag_thresholds)
        out["bandwidth_file_headers"] = dict(doc.bandwidth_file_headers)
        out["bandwidth_file_digest"] = dict(doc.bandwidth_file_digest)
    else:
        out["consensus_method"] = doc.consensus_method
    return out


def stem_authorities(doc):
    result = []
    for a in doc.directory_authorities:
        entry = {
            "nickname": a.nickname, "v3ident": a.v3ident, "hostname": a.hostname, "address": a.address,
            "dir_port": a.dir_port, "or_port": a.or_port, "is_legacy": a.is_legacy,
            "contact": a.contact, "vote_digest": a.vote_digest,
        }
        if doc.is_vote:
            entry["legacy_dir_key"] = a.legacy_dir_key
            cert = a.key_certificate
            entry["key_certificate"] = {
                "fingerprint": cert.fingerprint, "published": _iso(cert.published),
                "expires": _iso(cert.expires), "address": cert.address, "dir_port": cert.dir_port,
            }
        result.append(entry)
    return result


def stem_router(doc, r):
    out = {
        "nickname": r.nickname,
        "fingerprint": r.fingerprint,
        "published": _iso(r.published),
        "address": r.address,
        "or_port": r.or_port,
        "dir_port": r.dir_port,
        "or_addresses": [{"address": a, "port": p, "ipv6": v6} for a, p, v6 in r.or_addresses],
        "flags": list(r.flags),
        "version": str(r.version) if r.version is not None else None,
        "version_line": r.version_line,
        "protocols": _protocols(r.protocols),
        "bandwidth": r.bandwidth,
        "measured": r.measured,
        "unmeasured": r.is_unmeasured,
    }
    if doc.is_microdescriptor:
        out["microdescriptor_digest"] = r.microdescriptor_digest
    else:
        out["digest"] = r.digest
        out["exit_policy"] = str(r.exit_policy) if r.exit_policy is not None else None
    if doc.is_vote:
        out["identifier_type"] = r.identifier_type
        out["identifier"] = r.identifier
        out["microdescriptor_hashes"] = [{"methods": list(m), "hashes": dict(h)}
                                         for m, h in r.microdescriptor_hashes]
    return out
