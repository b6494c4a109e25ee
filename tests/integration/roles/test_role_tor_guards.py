# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tor role's guard for non-anonymous (single) onion services: refused before anything is
written unless acknowledged and set as tor requires; accepted (and checked by the real
tor --verify-config) when it is. Runs the role's configure tasks against files in tmp_path."""

import json

import pytest

from harness.ansible_run import run_playbook

# the role's one task (plugins/action/tor_setup.py): the guards fail it with their messages
SETUP = "onionlab.tor.tor : Tor installed, its torrc checked by tor and written, tor running"
SINGLE = {"HiddenServiceSingleHopMode": True, "HiddenServiceNonAnonymousMode": True}


def configure(tmp_path, check=False, diff=False, extra_args=(), **role_vars):
    base = {"tor_config_file": str(tmp_path / "torrc"), "tor_config_dir": str(tmp_path / "torrc.d"),
            "tor_os_defaults_torrc": "/dev/null", "tor_control_port": 0, "tor_control_socket": None}
    base.update(role_vars)
    return run_playbook([{"hosts": "localhost", "gather_facts": False, "vars": base, "tasks": [
        {"ansible.builtin.include_role": {"name": "onionlab.tor.tor", "tasks_from": "configure"}}]}], tmp_path,
        check=check, diff=diff, extra_args=extra_args)


@pytest.mark.parametrize("role_vars, found", [
    ({"tor_options": SINGLE, "tor_socks_port": 0}, "tor_non_anonymous_onion_services=False"),
    ({"tor_options": {"HiddenServiceSingleHopMode": 1}, "tor_socks_port": 0,
      "tor_non_anonymous_onion_services": True}, "hiddenservicesinglehopmode;"),
    ({"tor_options": SINGLE, "tor_non_anonymous_onion_services": True}, "tor_socks_port=unset"),
    ({"tor_config_lines": ["HiddenServiceNonAnonymousMode 1"], "tor_socks_port": 0}, "hiddenservicenonanonymousmode 1"),
    # issue 26 A8: forms tor reads as 1 that the guard missed (the unit tests have them all, with tor as the oracle)
    ({"tor_options": {"HiddenServiceSingleHopMode": [1]}, "tor_socks_port": 0}, "hiddenservicesinglehopmode;"),
    ({"tor_config_lines": ['HiddenServiceSingleHopMode "1"'], "tor_socks_port": 0},
     'Found: hiddenservicesinglehopmode "1";'),
    ({"tor_config_lines": ["HiddenServiceSingleHop 1"], "tor_socks_port": 0}, "Found: hiddenservicesinglehop 1;"),
])
def test_non_anonymous_refused_before_anything_is_written(tmp_path, role_vars, found):
    run = configure(tmp_path, **role_vars)
    assert run.rc == 2, run.output
    failed = [t for t in run.tasks if t["status"] == "failed"]
    assert len(failed) == 1 and "non-anonymous" in failed[0]["result"]["msg"]
    assert found in failed[0]["result"]["msg"], failed[0]["result"]["msg"]
    assert not (tmp_path / "torrc").exists() and not (tmp_path / "torrc.d").exists()


@pytest.mark.parametrize("role_vars, said", [
    ({"tor_config_lines": ["Nickname ok", "ContactInfo me\nHiddenServiceSingleHopMode 1"]},
     'tor_config_lines[1] "ContactInfo me\\nHiddenServiceSingleHopMode 1" holds a newline'),
    ({"tor_options": {"ContactInfo": "me\nHiddenServiceSingleHopMode 1"}},
     'tor_options ContactInfo: the value "me\\nHiddenServiceSingleHopMode 1" holds a newline'),
    ({"tor_config_lines": ["HiddenServiceSingleHopMode \\", "1"]},
     'tor_config_lines[0] "HiddenServiceSingleHopMode \\\\" ends with a backslash'),
    # issue 42: the variables written raw into torrc beside tor_options and tor_config_lines, and a # in a value
    ({"tor_socks_port": "0\nHiddenServiceNonAnonymousMode 1\nHiddenServiceSingleHopMode 1\nControlPort 0.0.0.0:9052"},
     'tor_socks_port: the value "0\\nHiddenServiceNonAnonymousMode 1\\nHiddenServiceSingleHopMode 1\\nControlPort '
     '0.0.0.0:9052" holds a newline'),
    ({"tor_control_socket": "/run/tor/ctl\nControlPort 0.0.0.0:9052"},
     'tor_control_socket: the value "/run/tor/ctl\\nControlPort 0.0.0.0:9052" holds a newline'),
    ({"tor_options": {"HiddenServiceSingleHopMode": "1 # yes"}},
     'tor_options HiddenServiceSingleHopMode: the value "1 # yes" holds a #'),
])
def test_a_value_of_more_than_one_line_is_refused_with_nothing_changed(tmp_path, role_vars, said):
    """Issue 26 A8, issue 42: a role variable that tor would read as more than one line, or cut at a # (here
    smuggling HiddenServiceSingleHopMode past the guard): one refusal naming the variable, before anything is
    written, in check mode too; a torrc already there is left as it was."""
    torrc = tmp_path / "torrc"
    torrc.write_text("# Written by the onionlab.tor.tor role\nNickname before\n")
    for check in (True, False):
        run = configure(tmp_path, check=check, diff=check, **dict({"tor_socks_port": 0}, **role_vars))
        assert run.rc == 2, run.output
        failed = [t for t in run.tasks if t["status"] == "failed"]
        assert [t["task"] for t in failed] == [SETUP], run.output
        msg = failed[0]["result"]["msg"]
        assert msg.startswith("Each tor role variable written into the torrc must stay what it says there, one value "
                              "(a tor_config_lines item: one line) as tor reads it: "), msg
        assert said in msg and "(nothing was changed)" in msg, msg
        assert "steps" not in failed[0]["result"], failed[0]["result"]
        assert torrc.read_text() == "# Written by the onionlab.tor.tor role\nNickname before\n"
        assert not (tmp_path / "torrc.d").exists()


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



@pytest.mark.parametrize("check", [False, True])
def test_unknown_option_is_named_by_tor_before_anything_is_written(tmp_path, check):
    """A typo in tor_options: the message is tor's own line (it was "failed to validate"), in
    check mode too, and neither torrc nor its drop-in directory is written."""
    run = configure(tmp_path, check=check, diff=check, tor_options={"AccountingMx": "1 GB"})
    assert run.rc == 2, run.output
    failed = [t for t in run.tasks if t["status"] == "failed"]
    assert [t["task"] for t in failed] == [SETUP], run.output
    assert failed[0]["result"]["msg"] == (
        "tor --verify-config refuses the torrc made from tor_options and tor_config_lines (nothing was written): "
        "Failed to parse/validate config: Unknown option 'AccountingMx'.  Failing."), failed[0]["result"]["msg"]
    assert not (tmp_path / "torrc").exists() and not (tmp_path / "torrc.d").exists()


def test_a_torrc_not_written_by_the_role_is_not_replaced_and_its_secrets_stay_hidden(tmp_path):
    """The operator's torrc (not the role's) holds options the new one drops, one a proxy password:
    the run fails naming each option, the password's value appears nowhere (not with -vvv either,
    nor in any task result), and the file is unchanged."""
    secret = "s3cr3t-proxy-value"
    torrc = tmp_path / "torrc"
    torrc.write_text("# my own torrc\nSocks5Proxy 127.0.0.1:1\nSocks5ProxyUsername me\n"
                     "Socks5ProxyPassword %s\nMaxCircuitDirtiness 700\n" % secret)
    before = torrc.read_bytes()
    for check in (True, False):
        run = configure(tmp_path, check=check, diff=check, extra_args=["-vvv"])
        assert run.rc == 2, run.output
        failed = [t for t in run.tasks if t["status"] == "failed"]
        assert [t["task"] for t in failed] == [SETUP], run.output
        msg = failed[0]["result"]["msg"]
        assert "would drop: MaxCircuitDirtiness 700; Socks5Proxy 127.0.0.1:1; Socks5ProxyPassword (value hidden); " \
               "Socks5ProxyUsername (value hidden). Nothing was changed." in msg, msg
        assert secret not in run.output and secret not in json.dumps(run.tasks)
        assert torrc.read_bytes() == before and not (tmp_path / "torrc.d").exists()
