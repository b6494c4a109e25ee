# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tor role's guard for non-anonymous (single) onion services: refused before anything is
written unless acknowledged and set as tor requires; accepted (and checked by the real
tor --verify-config) when it is. Runs the role's configure tasks against files in tmp_path."""

import pytest

from harness.ansible_run import run_playbook

SINGLE = {"HiddenServiceSingleHopMode": True, "HiddenServiceNonAnonymousMode": True}


def configure(tmp_path, **role_vars):
    base = {"tor_config_file": str(tmp_path / "torrc"), "tor_config_dir": str(tmp_path / "torrc.d"),
            "tor_os_defaults_torrc": "/dev/null", "tor_control_port": 0, "tor_control_socket": None}
    base.update(role_vars)
    return run_playbook([{"hosts": "localhost", "gather_facts": False, "vars": base, "tasks": [
        {"ansible.builtin.include_role": {"name": "onionlab.tor.tor", "tasks_from": "configure"}}]}], tmp_path)


@pytest.mark.parametrize("role_vars, found", [
    ({"tor_options": SINGLE, "tor_socks_port": 0}, "tor_non_anonymous_onion_services=False"),
    ({"tor_options": {"HiddenServiceSingleHopMode": 1}, "tor_socks_port": 0,
      "tor_non_anonymous_onion_services": True}, "hiddenservicesinglehopmode;"),
    ({"tor_options": SINGLE, "tor_non_anonymous_onion_services": True}, "tor_socks_port=unset"),
    ({"tor_config_lines": ["HiddenServiceNonAnonymousMode 1"], "tor_socks_port": 0}, "hiddenservicenonanonymousmode 1"),
])
def test_non_anonymous_refused_before_anything_is_written(tmp_path, role_vars, found):
    run = configure(tmp_path, **role_vars)
    assert run.rc == 2, run.output
    failed = [t for t in run.tasks if t["status"] == "failed"]
    assert len(failed) == 1 and "non-anonymous" in failed[0]["result"]["msg"]
    assert found in failed[0]["result"]["msg"], failed[0]["result"]["msg"]
    assert not (tmp_path / "torrc").exists() and not (tmp_path / "torrc.d").exists()


def test_non_anonymous_acknowledged_is_written_and_valid(tmp_path):
    run = configure(tmp_path, tor_options=dict(SINGLE, DataDirectory=str(tmp_path / "data")), tor_socks_port=0,
                    tor_non_anonymous_onion_services=True)
    assert run.rc == 0, run.output
    text = (tmp_path / "torrc").read_text()
    assert "HiddenServiceSingleHopMode 1" in text and "HiddenServiceNonAnonymousMode 1" in text
    assert "SocksPort 0" in text


def test_ordinary_options_pass_the_guard(tmp_path):
    run = configure(tmp_path, tor_options={"HiddenServiceSingleHopMode": False, "DataDirectory": str(tmp_path / "d")})
    assert run.rc == 0, run.output

