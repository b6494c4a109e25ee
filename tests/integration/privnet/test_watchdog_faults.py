# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fault campaign's short version (issue 38): bench/watchdog_faults.py, one trial of three faults on a private
network of its own, a watched tor beside one left alone (report-only checks), a fresh client fetching both every 5 s.

* backend down (both web servers stopped): the watchdog restarts the watched one's unit (backend_units) and the
  watched service answers before the alone one, which answers only when its server is started at the fault's end;
* tor hung (SIGSTOP of both tors): the watchdog restarts the watched tor after hung_checks (2) checks and its
  service answers before the thaw, the alone one only after it;
* tor killed and started again 5 s later: both answer again, the watchdog does not restart tor.

Short: checks every 15 s, the backend down 45 s, tor hung 90 s (the campaign's own run: 60 s checks, 3 and 10
minutes, 5 trials; its results are in guide_watchdog.rst). On failure the test prints what both sides saw: every
check's journal line and the fetches' errors, per tor."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.fixtures import _say

pytestmark = pytest.mark.timeout(900)

REPO = Path(__file__).resolve().parents[3]
INTERVAL = 15


def _story(rows):
    out = []
    for row in rows:
        out.append("== %s (%.0f s): %s" % (row["fault"], row["fault_seconds"],
                                            {k: v for k, v in row.items() if k not in ("watched", "alone")}))
        for name in ("watched", "alone"):
            r = row[name]
            out.append("  %s: detect %s, failed %d of %d fetches (%s), back %s, actions %s" % (
                name, r["detect"], r["failed"], r["fetches"], r["why"], r["back"], r["actions"]))
            out += ["     %6.1f %s" % (t, line[:240]) for t, line in r["lines"]]
    return "\n".join(out)


def test_watched_tor_is_repaired_before_the_one_left_alone(tmp_path):
    out = tmp_path / "rows.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "watchdog_faults.py"), "--trials", "1", "--faults", "backend,hung,kill",
         "--interval", str(INTERVAL), "--backend-minutes", "0.75", "--hung-minutes", "1.5", "--window", "120",
         "--voting-interval", "20", "--relays", "5", "--vanguards", "none", "--json", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=840, check=False)
    assert proc.returncode == 0 and out.exists(), proc.stdout[-6000:]
    rows = dict((row["fault"], row) for row in json.loads(out.read_text()))
    story = _story(rows.values())
    backend, hung, kill = rows["backend"], rows["hung"], rows["kill"]

    assert "restart-backend" in [a for _t, a, _l in backend["watched"]["actions"]], story
    assert backend["watched"]["back"] is not None and backend["alone"]["back"] is not None, story
    assert backend["watched"]["back"] < backend["alone"]["back"], story
    assert backend["alone"]["back"] >= backend["fault_seconds"] - 1, story
    assert backend["watched"]["detect"] is not None and backend["watched"]["detect"] <= 2 * INTERVAL + 30, story

    assert ("restart", "hung") in [(a, l) for _t, a, l in hung["watched"]["actions"]], story
    assert hung["watched"]["back"] is not None and hung["watched"]["back"] < hung["fault_seconds"], story
    assert hung["alone"]["back"] is None or hung["alone"]["back"] >= hung["fault_seconds"] - 1, story

    assert kill["watched"]["back"] is not None and kill["alone"]["back"] is not None, story
    assert "restart" not in [a for _t, a, _l in kill["watched"]["actions"]], story
    _say("watchdog faults (short): backend back %.1f s watched / %.1f s alone; hung back %.1f s watched / %s alone; "
         "kill back %.1f / %.1f s" % (backend["watched"]["back"], backend["alone"]["back"], hung["watched"]["back"],
                                      hung["alone"]["back"], kill["watched"]["back"], kill["alone"]["back"]))
