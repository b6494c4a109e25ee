# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 31 item 4b: every run of the tor role printed two empty task headers "Apply a changed configuration
now" (a meta: flush_handlers, shown once per host whatever it flushed). The role's task list (ansible-playbook
--list-tasks, what the default callback prints a header for) holds the role's own task and nothing empty."""

from harness.ansible_run import run_playbook


def test_the_tor_role_lists_no_empty_flush_task(tmp_path):
    run = run_playbook([{"hosts": "localhost", "gather_facts": False, "roles": ["onionlab.tor.tor"]}], tmp_path,
                       extra_args=["--list-tasks"])
    print(run.output)
    assert run.rc == 0, run.output
    assert "Tor installed, its torrc checked by tor and written, tor running" in run.output
    assert "Apply a changed configuration now" not in run.output
