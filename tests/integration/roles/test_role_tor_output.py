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


def test_tor_control_port_says_what_hosts_sharing_a_network_need():
    """Issue 31 item 4d: beds sharing the host's network need tor_control_port: 0, said only inside a test
    (test_docs_run.py's BED_ROLE_VARS); the role's documentation says it now."""
    import os
    import subprocess
    doc = subprocess.run(["ansible-doc", "-t", "role", "onionlab.tor.tor"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True, env=dict(os.environ, ANSIBLE_NOCOLOR="1"))
    assert doc.returncode == 0, doc.stdout
    text = " ".join(doc.stdout.split())
    start = text.index("tor_control_port")
    part = text[start:text.index("tor_control_socket", start)]
    print(part)
    assert "share one network namespace" in part and "tor_control_port: 0" in part
