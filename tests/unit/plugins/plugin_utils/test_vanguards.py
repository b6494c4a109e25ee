# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/vanguards.py: the onion_vanguards role's variables checked in Python, what its templates write from
them (plan), and the role's task that uses it."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from ansible_collections.onionlab.tor.plugins.plugin_utils import vanguards

ROLE = pathlib.Path(__file__).resolve().parents[4] / "roles" / "onion_vanguards"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
GOOD = dict((k[len("onion_vanguards_"):], v) for k, v in DEFAULTS.items())
# the role's own paths (vars/main.yml) as the default instance has them
PATHS = {"state_dir": "/var/lib/onionlab-vanguards/default", "config_file": "/etc/onionlab-vanguards/default.conf"}


def test_the_defaults_pass_unchanged():
    assert vanguards.check(dict(GOOD)) == GOOD


@pytest.mark.parametrize("changes, said", [
    ({"instance": "a b"}, "onion_vanguards_instance must be 1-40 letters"),
    ({"instance": "x" * 41}, "onion_vanguards_instance must be"),
    ({"tor_unit": "tor"}, "onion_vanguards_tor_unit must be a systemd service name"),
    ({"tor_unit": "tor.service\nExecStart=/bin/sh"}, "onion_vanguards_tor_unit must be"),
    ({"num_layer2_guards": 0}, "onion_vanguards_num_layer2_guards must be a whole number of at least 1 \\(got 0\\)"),
    ({"num_layer3_guards": "eight"}, "onion_vanguards_num_layer3_guards must be a whole number of at least 1"),
    ({"num_layer3_guards": True}, "onion_vanguards_num_layer3_guards must be"),
    ({"circ_max_megabytes": -1}, "onion_vanguards_circ_max_megabytes must be a whole number of at least 0"),
    ({"circ_max_hsdesc_kilobytes": "30x"}, "onion_vanguards_circ_max_hsdesc_kilobytes must be"),
    ({"control_port": 9051}, "not both and not neither"),
    ({"control_socket": ""}, "not both and not neither"),
    ({"control_socket": "", "control_port": 70000}, "onion_vanguards_control_port must be a port number"),
    ({"control_socket": "", "control_port": 9051, "control_ip": "localhost"}, "onion_vanguards_control_ip must be"),
    ({"control_socket": "run/tor/control"}, "onion_vanguards_control_socket must be an absolute path"),
    ({"control_socket": "/run/tor/con trol"}, "onion_vanguards_control_socket must be an absolute path"),
    ({"venv": "opt/v"}, "onion_vanguards_venv must be an absolute path"),
    ({"version": "latest"}, "onion_vanguards_version must be a version number"),
    ({"stem_version": "1.8.2; rm"}, "onion_vanguards_stem_version must be"),
    ({"extra_config": ["Vanguards"]}, "onion_vanguards_extra_config must be a mapping"),
    ({"extra_config": {"Global": {"loglevel": "DEBUG"}}}, "refused: Global$"),
    ({"extra_config": {"Vanguards": "x"}}, "refused: Vanguards$"),
    ({"extra_config": {"Vanguards": {"num_layer2_guards": 4}}}, "refused: Vanguards.num_layer2_guards$"),
    ({"extra_config": {"Vanguards": {"Min-Life": 4}}}, "refused: Vanguards.Min-Life$"),
    ({"extra_config": {"Rendguard": {"rend_use_max_use_to_bw_ratio": "5\n[Global]"}}},
     "refused: Rendguard.rend_use_max_use_to_bw_ratio$"),
    ({"extra_config": {"Bandguards": {"circ_max_age_hours": [24]}}}, "refused: Bandguards.circ_max_age_hours$"),
])
def test_a_wrong_variable_is_named(changes, said):
    with pytest.raises(vanguards.SettingsError, match=said):
        vanguards.check(dict(GOOD, **changes))


def test_every_wrong_variable_in_one_message():
    with pytest.raises(vanguards.SettingsError) as e:
        vanguards.check(dict(GOOD, instance="", num_layer2_guards=0, venv="v"))
    assert str(e.value).count(" must be ") == 3, str(e.value)


def test_good_values_of_each_kind_pass():
    ok = dict(GOOD, control_socket="", control_port="9051", control_ip="::1", num_layer2_guards="4",
              circ_max_megabytes=0, extra_config={"Vanguards": {"min_layer2_lifetime_hours": 48},
                                                  "Bandguards": {"circ_max_age_hours": 24.5},
                                                  "Rendguard": {"rend_use_close_circuits_on_overuse": True}})
    assert vanguards.check(ok) is ok


def test_the_role_checks_with_this_filter():
    """The role's task 'Check the role's variables' passes exactly the role's variables it names through the filter:
    every key of its mapping is a role variable the check reads."""
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    found = [t for t in tasks if t.get("name") == "Check the role's variables"]
    assert len(found) == 1
    assert "onionlab.tor.vanguards_settings" in found[0]["ansible.builtin.set_fact"]["_onion_vanguards_plan"]
    mapping = found[0]["vars"]["_role_vars"]
    assert set(mapping) == set(GOOD) - {"mode", "venv_packages", "pip_environment", "keep_software", "user", "group",
                                        "rendguard", "close_circuits", "log_level"} | {"state_dir", "config_file",
                                                                                       "release"}
    for key, expression in mapping.items():
        assert expression == ("{{ ansible_facts.distribution_release | default('') }}" if key == "release"
                              else "{{ onion_vanguards_%s }}" % key)


def test_the_plan_of_the_defaults():
    assert vanguards.plan(dict(GOOD, **PATHS)) == {
        "method": "pip", "install": "pip", "binary": "/opt/onionlab-vanguards/bin/vanguards",
        "state_directory": "onionlab-vanguards/default",
        "exec_args": "--config /etc/onionlab-vanguards/default.conf",
        "control_lines": ["control_socket = /run/tor/control"],
        "extra_lines": {"Vanguards": [], "Bandguards": [], "Rendguard": []}}


@pytest.mark.parametrize("bandguards, args", [
    (True, "--config /etc/onionlab-vanguards/default.conf"), ("yes", "--config /etc/onionlab-vanguards/default.conf"),
    (False, "--config /etc/onionlab-vanguards/default.conf --disable_bandguards"),
    ("no", "--config /etc/onionlab-vanguards/default.conf --disable_bandguards"),
])
def test_bandguards_off_is_an_argument_of_the_addon(bandguards, args):
    assert vanguards.plan(dict(GOOD, bandguards=bandguards, **PATHS))["exec_args"] == args


def test_the_control_port_lines():
    for port in (9051, "9051"):
        got = vanguards.plan(dict(GOOD, control_socket="", control_port=port, control_ip="::1", **PATHS))
        assert got["control_lines"] == ["control_ip = ::1", "control_port = 9051", "control_socket ="]


def test_the_state_directory_is_below_var_lib():
    got = vanguards.plan(dict(GOOD, **dict(PATHS, state_dir="/var/lib/onionlab-vanguards/second")))
    assert got["state_directory"] == "onionlab-vanguards/second"


def test_extra_lines_sorted_by_key_per_section_as_jinja_writes_values():
    extra = {"Vanguards": {"min_layer2_lifetime_hours": 48, "layer1_lifetime_days": 0},
             "Bandguards": {"circ_max_age_hours": 24.5, "circ_max_disconnected_secs": "30"},
             "Rendguard": {"rend_use_close_circuits_on_overuse": True}}
    assert vanguards.plan(dict(GOOD, extra_config=extra, **PATHS))["extra_lines"] == {
        "Vanguards": ["layer1_lifetime_days = 0", "min_layer2_lifetime_hours = 48"],
        "Bandguards": ["circ_max_age_hours = 24.5", "circ_max_disconnected_secs = 30"],
        "Rendguard": ["rend_use_close_circuits_on_overuse = True"]}


@pytest.mark.parametrize("changes, said", [
    ({"bandguards": "maybe"}, "onion_vanguards_bandguards must be true or false"),
    ({"state_dir": "var/lib/x"}, "onion_vanguards_state_dir must be an absolute path"),
    ({"config_file": None}, "onion_vanguards_config_file must be an absolute path"),
])
def test_a_wrong_plan_input_is_named(changes, said):
    with pytest.raises(vanguards.SettingsError, match=said):
        vanguards.plan(dict(GOOD, **dict(PATHS, **changes)))


def test_the_plan_needs_the_role_paths():
    with pytest.raises(vanguards.SettingsError, match="lack onion_vanguards_state_dir, onion_vanguards_config_file"):
        vanguards.plan(dict(GOOD))


@pytest.mark.parametrize("changes, method, install, binary", [
    ({"install_method": "auto", "release": "sid"}, "debian", "debian", "/usr/bin/vanguards"),
    ({"install_method": "auto", "release": "bookworm"}, "debian", "debian", "/usr/bin/vanguards"),
    ({"install_method": "auto", "release": "noble"}, "pip", "pip", "/opt/onionlab-vanguards/bin/vanguards"),
    ({"install_method": "pip", "release": "sid"}, "pip", "pip", "/opt/onionlab-vanguards/bin/vanguards"),
    ({"install_method": "debian", "install": False}, "debian", None, "/usr/bin/vanguards"),
    ({"install_method": "auto", "install": "no", "venv": "/srv/v"}, "pip", None, "/srv/v/bin/vanguards"),
])
def test_the_way_the_addon_is_installed_on_a_release(changes, method, install, binary):
    got = vanguards.plan(dict(GOOD, **dict(PATHS, **changes)))
    assert (got["method"], got["install"], got["binary"]) == (method, install, binary)


@pytest.mark.parametrize("changes, said", [
    ({"install_method": "docker"}, "onion_vanguards_install_method must be one of auto, debian, pip (got docker)"),
    ({"debian_releases": "sid"}, "onion_vanguards_debian_releases must be a list of release names (got sid)"),
    ({"install": "maybe"}, "onion_vanguards_install must be true or false (got maybe)"),
])
def test_a_wrong_install_variable_is_named(changes, said):
    with pytest.raises(vanguards.SettingsError) as e:
        vanguards.plan(dict(GOOD, **dict(PATHS, **changes)))
    assert said in str(e.value)
