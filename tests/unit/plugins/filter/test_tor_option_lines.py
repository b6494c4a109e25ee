# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_option_lines and tor_control_lines: the tor role's torrc lines (the rules: _tor/torrc.py's option_lines and
control_lines); torrc.j2 writes them, and what the tor_setup action checks is read with the same rule."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.tor_control_lines import tor_control_lines
from ansible_collections.onionlab.tor.plugins.filter.tor_option_lines import tor_option_lines
from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc


def test_options_sorted_without_case_lists_once_per_item_booleans_and_null():
    options = {"SafeLogging": True, "exitpolicy": ["reject *:25", "reject *:*"], "Bridge": False, "NumCPUs": 2,
               "Nickname": None, "HashedControlPassword": {"16:AB": 1}}
    assert tor_option_lines(options) == [
        "Bridge 0", "exitpolicy reject *:25", "exitpolicy reject *:*", "HashedControlPassword 16:AB", "Nickname ",
        "NumCPUs 2", "SafeLogging 1"]
    assert tor_option_lines(None) == [] and tor_option_lines({}) == []


def test_not_a_mapping_refused():
    with pytest.raises(AnsibleFilterError) as e:
        tor_option_lines(["SafeLogging 1"])
    assert str(e.value) == "tor_options must be a mapping of option names to values, got list"


def test_the_action_reads_the_lines_the_template_writes():
    # torrc.socks_lines and line_problem read tor_options through the same rule as the template writes them
    options = {"SocksPort": ["9050", "127.0.0.1:9150"], "Log": "notice syslog"}
    assert [line for dummy, line in torrc._template_lines(options, ["SocksPort 9999"])] == \
        tor_option_lines(options) + ["SocksPort 9999"]


@pytest.mark.parametrize("port, socket, cookie, lines", [
    (None, "/run/tor/control", True, ["CookieAuthentication 1"]),
    (9051, "/run/tor/control", "yes", ["ControlPort 127.0.0.1:9051", "CookieAuthentication 1"]),
    ("9052", "/run/tor2/control", "False",
     ["ControlPort 127.0.0.1:9052", "ControlSocket /run/tor2/control GroupWritable RelaxDirModeCheck",
      "CookieAuthentication 0"]),
    (0, "", 1, ["CookieAuthentication 1"]),
    ("", None, "ON", ["CookieAuthentication 1"]),
    (None, None, "maybe", ["CookieAuthentication 0"]),  # the action refuses it, naming tor_cookie_authentication
])
def test_control_lines(port, socket, cookie, lines):
    assert tor_control_lines(port, socket, cookie) == lines
