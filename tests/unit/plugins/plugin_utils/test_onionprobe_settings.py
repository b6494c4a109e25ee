# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/onionprobe_settings.py (filters onionprobe_settings, onionprobe_config): the onionprobe role's
variables checked, every wrong one named; how Onionprobe is installed on a release, its command and Python, who writes
the unit; the configuration object, the password only when set. The files the role writes from them are compared with
the role's former Jinja in the change that moved it (432 renderings, byte for byte)."""

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.onionprobe_config import onionprobe_config
from ansible_collections.onionlab.tor.plugins.filter.onionprobe_settings import onionprobe_settings
from ansible_collections.onionlab.tor.plugins.plugin_utils import onionprobe_settings as S

ROLE = os.path.join(os.path.dirname(__file__), *[os.pardir] * 4, "roles", "onionprobe")


def defaults(**changes):
    with open(os.path.join(ROLE, "defaults", "main.yml")) as f:
        v = yaml.safe_load(f)
    with open(os.path.join(ROLE, "vars", "main.yml")) as f:
        names = yaml.safe_load(f)["_onionprobe_variables"]
    out = dict((name, v[name]) for name in names)
    out.update(changes)
    return out


@pytest.mark.parametrize("method, release, manage, install, used, writes_unit", [
    ("auto", "trixie", True, True, "debian", True),
    ("auto", "bookworm", True, True, "pip", True),
    ("auto", "", False, True, "pip", False),
    ("auto", "sid", False, True, "debian", True),  # Debian's package: its own unit would start a tor of its own
    ("pip", "trixie", True, False, "pip", True),
    ("debian", "bookworm", False, False, "debian", True),
])
def test_the_way_onionprobe_is_installed_and_run(method, release, manage, install, used, writes_unit):
    s = onionprobe_settings(defaults(onionprobe_install_method=method, onionprobe_manage_service=manage,
                                     onionprobe_install=install), release=release)
    assert s["method"] == used and s["writes_unit"] is writes_unit
    assert s["install"] == (used if install else None)
    if used == "debian":
        assert (s["binary"], s["python"]) == ("/usr/bin/onionprobe", "/usr/bin/python3")
    else:
        assert (s["binary"], s["python"]) == ("/opt/onionprobe/bin/onionprobe", "/opt/onionprobe/bin/python3")
    assert s["file_group"] == ("onionprobe" if writes_unit else None)
    assert s["venv_packages"] == (["python3-venv", "python3-packaging"] if s["install"] == "pip" else [])
    assert s["user_groups"] == ["debian-tor"] and s["has_password"] is False


def test_no_secret_in_the_settings_the_password_only_in_the_config():
    v = defaults(onionprobe_control_password="s3cret")
    s = onionprobe_settings(v)
    assert s["has_password"] is True and "s3cret" not in repr(s)
    assert onionprobe_config(v, {"e": {}})["control_password"] == "s3cret"
    assert "control_password" not in onionprobe_config(defaults(onionprobe_control_password=""), {})
    assert "control_password" not in onionprobe_config(defaults(), {})
    assert onionprobe_config(defaults(), {"x": 1})["endpoints"] == {"x": 1}
    assert onionprobe_settings(defaults(onionprobe_tor_group=""))["user_groups"] == []


@pytest.mark.parametrize("changes, message", [
    ({"onionprobe_version": "latest"}, 'onionprobe_version must be a version number (1.4.1), got "latest"'),
    ({"onionprobe_exporter_port": 0}, "onionprobe_exporter_port must be a port (1-65535), got 0"),
    ({"onionprobe_socks_port": "9050\n"}, 'onionprobe_socks_port must be a port (1-65535), got "9050\\n"'),
    ({"onionprobe_exporter_port": "9051"}, "onionprobe_exporter_port must be 1-65535 and the exporter's differ from "
                                           "tor's (ControlPort 9051, SocksPort 9050), got 9051"),
    ({"onionprobe_venv": "opt/x"}, 'onionprobe_venv must be an absolute path, got "opt/x"'),
    ({"onionprobe_exporter_listen_address": "localhost"}, "onionprobe_exporter_listen_address must be an IPv4 or IPv6 "
                                                          'address (127.0.0.1, ::1; 0.0.0.0 for every address), got '
                                                          '"localhost"'),
    ({"onionprobe_install_method": "docker"}, 'onionprobe_install_method must be one of auto, debian, pip, got '
                                              '"docker"'),
    ({"onionprobe_manage_service": "maybe"}, 'onionprobe_manage_service must be a boolean, got "maybe"'),
    ({"onionprobe_debian_releases": "trixie"}, 'onionprobe_debian_releases must be a list of release names'),
])
def test_a_wrong_variable_is_named(changes, message):
    with pytest.raises(AnsibleFilterError) as e:
        onionprobe_settings(defaults(**changes))
    assert str(e.value).startswith("onionprobe: ") and message in str(e.value), str(e.value)


def test_every_wrong_variable_in_one_message():
    with pytest.raises(S.SettingsError) as e:
        S.settings(defaults(onionprobe_version="x", onionprobe_venv="y", onionprobe_control_port=70000))
    assert str(e.value).count(" must be ") == 3


def test_not_a_mapping():
    with pytest.raises(AnsibleFilterError):
        onionprobe_settings(["onionprobe_version"])
    with pytest.raises(AnsibleFilterError):
        onionprobe_config(defaults(), None)
