# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The harness's request loops (tests/harness/onionbalance.py) on scripted answers: when they tell
the client to forget its descriptors, and what they count."""

import time

import pytest

from harness import onionbalance as ob


def scripted(answers):
    it = iter(answers)
    return lambda: next(it)


def test_until_steady_forgets_after_failures_in_a_row_and_counts_them():
    forgot = []
    answers = [(None, 'timed out')] * 2 + [('b1', 'HTTP 200')] + [(None, 'timed out')] * 7 + [('b2', 'HTTP 200')] * 6
    r = ob.until_steady(scripted(answers), {'b2'}, time.monotonic(), 60, 6, sleep=lambda s: None,
                        forget=lambda: forgot.append(1))
    # b1 is not allowed: it breaks neither the run of failures nor counts as an answer
    assert r['failures'] == 10 and r['pages'] == {'b1': 1, 'b2': 6}
    assert r['forgets'] == len(forgot) == 3


def test_until_steady_without_forget_and_the_deadline_message():
    answers = [(None, 'HTTP 503: down')] * 1000
    with pytest.raises(AssertionError) as e:
        ob.until_steady(scripted(answers), {'b2'}, time.monotonic() - 59.9, 60, 6, sleep=lambda s: time.sleep(0.05))
    assert '0 forgets' in str(e.value) and 'last: HTTP 503: down' in str(e.value)
    assert 'requests, the first 0.0 s after the start' not in str(e.value) and ' s after the start' in str(e.value)


def test_a_success_resets_the_failures_in_a_row():
    forgot = []
    answers = ([(None, 'x')] * 2 + [('b2', 'ok')]) * 3 + [('b2', 'ok')] * 6
    r = ob.until_steady(scripted(answers), {'b2'}, time.monotonic(), 60, 6, sleep=lambda s: None,
                        forget=lambda: forgot.append(1))
    assert r['failures'] == 6 and not forgot
