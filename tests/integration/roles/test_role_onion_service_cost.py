# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 20: a converged host costs the onion_service role two task runs (argument validation and the work,
which writes the summary too since issue 31; the become check's task is skipped) and one module run on the host."""

import re

from harness.ansible_run import onion_service_play, run_playbook


def _module_runs(output, task):
    """The modules run by a task (-vvv: one python .../AnsiballZ_<module>.py per module run)."""
    sections = [s for s in output.split("\nTASK [") if s.startswith("onionlab.tor.onion_service : " + task)]
    assert len(sections) == 1, output
    return re.findall(r"EXEC /bin/sh -c '\S*python\S* \S*/AnsiballZ_(\w+)\.py", sections[0])


def test_converged_host_costs_two_tasks_and_one_module_run(tor, tmp_path):
    (tmp_path / "svc").mkdir(mode=0o700)
    services = [{"name": "web", "ports": [{"port": 80, "target_port": 8080}]}]
    first = run_playbook(onion_service_play(tor.control_port, tmp_path, services), tmp_path)
    assert first.rc == 0, first.output
    # without pipelining: -vvv then names each module's AnsiballZ file it runs
    again = run_playbook(onion_service_play(tor.control_port, tmp_path, services), tmp_path, extra_args=["-vvv"],
                         extra_env={"ANSIBLE_PIPELINING": "False"})
    assert again.rc == 0, again.output
    stats = again.stats["localhost"]
    assert (stats["ok"], stats["changed"], stats["skipped"]) == (2, 0, 1), (stats, again.output)
    statuses = [(t["task"].split(" : ")[-1], t["status"]) for t in again.tasks]
    assert [s for _name, s in statuses] == ["ok", "ok", "skipped"], statuses
    assert _module_runs(again.output, "Apply the services") == ["onion_service_deploy"], again.output
