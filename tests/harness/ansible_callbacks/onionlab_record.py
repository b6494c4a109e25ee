# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only callback: records every task result and the stats of an ansible-playbook run as
JSON in the file named by $ONIONLAB_RECORD_FILE. Used by tests/harness/ansible_run.py, which
enables it (ANSIBLE_CALLBACK_PLUGINS + ANSIBLE_CALLBACKS_ENABLED); the screen output stays
the default callback's."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onionlab_record
type: aggregate
short_description: record task results as JSON for the onionlab.tor tests
description:
  - Writes the play, task, host, status and result of every task, and the run's stats, to the file
    named by the environment variable C(ONIONLAB_RECORD_FILE).
requirements:
  - enabled in ANSIBLE_CALLBACKS_ENABLED
"""

import json
import os

from ansible.plugins.callback import CallbackBase


def _attr(obj, new, old):
    # ansible-core 2.19 names them result.host/.task/.result; 2.17 and 2.18 _host/_task/_result.
    try:
        return getattr(obj, new)
    except AttributeError:
        return getattr(obj, old)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "onionlab_record"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._play = None
        self._tasks = []

    def v2_playbook_on_play_start(self, play):
        self._play = play.get_name()

    def _record(self, result, status, ignore_errors=False):
        raw = _attr(result, "result", "_result")
        host = _attr(result, "host", "_host")
        task = _attr(result, "task", "_task")
        record = json.loads(self._dump_results(raw, keep_invocation=True, sort_keys=True))
        if raw.get("exception"):
            record["exception"] = str(raw.get("exception"))
        if "diff" in raw and "diff" not in record:
            # _dump_results drops the diff; tests check it (it passed through no_log already)
            record["diff"] = json.loads(json.dumps(raw["diff"], default=str))
        self._tasks.append({
            "play": self._play,
            "task": task.get_name(),
            "action": task.action,
            "host": host.get_name(),
            "status": status,
            "ignore_errors": bool(ignore_errors),
            "result": record,
        })

    def v2_runner_on_ok(self, result, **kwargs):
        raw = _attr(result, "result", "_result")
        self._record(result, "changed" if raw.get("changed") else "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False, **kwargs):
        self._record(result, "failed", ignore_errors)

    def v2_runner_on_skipped(self, result, **kwargs):
        self._record(result, "skipped")

    def v2_runner_on_unreachable(self, result, **kwargs):
        self._record(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        summary = {}
        for host in sorted(stats.processed.keys()):
            summary[host] = stats.summarize(host)
        path = os.environ.get("ONIONLAB_RECORD_FILE")
        if path:
            with open(path, "w") as handle:
                json.dump({"tasks": self._tasks, "stats": summary}, handle, indent=1, sort_keys=True)
