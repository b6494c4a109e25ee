# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""metrics.py: the PoW suggested effort from a MetricsPort page (the lines as tor 0.4.9.11 writes them)."""

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import metrics

SID = "5vt2f6p3lgkwl5syakl7b4swueacxdvvuraamkwb5l3zboyaytycnsid"
PAGE = """# HELP tor_hs_pow_suggested_effort Suggested effort for requests with a proof of work client puzzle
# TYPE tor_hs_pow_suggested_effort gauge
tor_hs_pow_suggested_effort{onion="%s"} 0
# HELP tor_hs_rdv_pow_pqueue_count Number of requests waiting in the proof of work priority queue
tor_hs_rdv_pow_pqueue_count{onion="%s"} 7
tor_hs_pow_suggested_effort{onion="other.onion"} 42
tor_hs_pow_suggested_effort{port="80",onion="third"} 1.5e3
tor_hs_pow_suggested_effort{onion="nan"} NaN
tor_hs_pow_suggested_effort{onion="neg"} -1
tor_hs_pow_suggested_effort_total{onion="x"} 9
""" % (SID, SID)


def test_suggested_efforts():
    assert metrics.suggested_efforts(PAGE) == {SID: 0, "other": 42, "third": 1500}
    assert metrics.suggested_efforts("") == {}


@pytest.mark.parametrize("url", ["", None, "127.0.0.1:9035", "file:///etc/passwd", "ftp://x/metrics", "http://"])
def test_bad_urls(url):
    with pytest.raises(metrics.MetricsError, match="metrics_url must be an http:// URL"):
        metrics.check_url(url)


def test_unreachable_port():
    with pytest.raises(metrics.MetricsError, match="cannot read tor's MetricsPort at http://127.0.0.1:1/metrics"):
        metrics.read_suggested_efforts("http://127.0.0.1:1/metrics", timeout=2)
