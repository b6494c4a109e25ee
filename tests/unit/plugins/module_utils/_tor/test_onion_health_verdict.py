# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The descriptor verdict's words: the HSDirs counted 'failed' are named with why (tor's HS_DESC FAILED reason, or
what was wrong with a descriptor received), so that a verdict like the soak's one unexplained "0 of 6 responsible
HSDirs hold the current descriptor ... 6 failed" explains itself the next time."""

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion_health

ADDRESS = "pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscryd.onion"


def _service(answers, revision=7):
    s = onion_health._Service({"address": ADDRESS, "type": "persistent"})
    s.descriptor, s.revision, s.blinded = "text", revision, b"k" * 32
    s.client_blinded = s.blinded
    s.responsible = [("%040X" % i, "relay%d" % i, 1) for i in range(len(answers))]
    s.fetch_set = set(fp for fp, _n, _r in s.responsible)
    s.answers = dict(("%040X" % i, a) for i, a in enumerate(answers))
    return s


def test_failed_hsdirs_are_named_with_their_reasons():
    answers = [{"event": "RECEIVED", "revision": 7}, {"event": "FAILED", "reason": "NOT_FOUND"},
               {"event": "FAILED", "reason": "QUERY_REJECTED"}, {"event": "FAILED", "reason": "QUERY_REJECTED"},
               {"event": "RECEIVED", "revision": None}, {}]
    out = onion_health._descriptor_verdict(_service(answers), {}, None)
    assert out["reasons"][0] == (
        "1 of 6 responsible HSDirs hold the current descriptor (revision 7, tor's own descriptor); 1 answer "
        "NOT_FOUND, 3 failed (QUERY_REJECTED x2, no revision in the descriptor x1), 1 no answer in time")
    assert out["counts"]["failed"] == 3 and out["healthy"] is False


def test_no_failure_no_words():
    out = onion_health._descriptor_verdict(_service([{"event": "RECEIVED", "revision": 7}] * 2), {}, None)
    assert out["reasons"] == ["2 of 2 responsible HSDirs hold the current descriptor (revision 7, tor's own "
                              "descriptor)"] and out["healthy"] is True
