# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_service role's variables live in three places: defaults/main.yml, meta/argument_specs.yml
(test_argument_specs.py ties these two) and one pass-through in tasks/main.yml. The action plugin takes their
names from the argument spec, and the module's options are the host's request only, each one read on the host
(issue 29: a variable was written in six places, and tor_user was declared, passed and read by nothing)."""

import re
from pathlib import Path

import yaml

from ansible_collections.onionlab.tor.plugins.action import onion_service_deploy as action
from ansible_collections.onionlab.tor.plugins.module_utils import _onion_service_deploy as deploy
from ansible_collections.onionlab.tor.plugins.module_utils._common import control_argument_spec

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "onion_service"
OPTIONS = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
TASKS_TEXT = (ROLE / "tasks" / "main.yml").read_text()
TASKS = yaml.safe_load(TASKS_TEXT)
HOST_SIDE = [REPO / "plugins" / "module_utils" / "_onion_service_deploy.py",
             REPO / "plugins" / "modules" / "onion_service_deploy.py"]


def _deploy_args():
    (task,) = [t for t in TASKS if "onionlab.tor.onion_service_deploy" in t]
    return task["onionlab.tor.onion_service_deploy"]


def test_each_role_variable_is_named_once_in_the_tasks():
    counts = dict((name, len(re.findall(r"\b%s\b" % name, TASKS_TEXT))) for name in OPTIONS)
    assert [n for n, c in counts.items() if c != 1] == [], counts


def test_the_pass_through_uses_the_names_the_action_plugin_takes_from_the_argument_spec():
    assert sorted(action.TASK_SPEC) == sorted(["known_variables"] + [action.SHORT.get(n, n[len(action.PREFIX):])
                                                                     for n in OPTIONS])
    for arg, value in _deploy_args().items():
        assert arg in action.TASK_SPEC, arg
        if arg == "known_variables":
            continue
        (variable,) = re.findall(r"\{\{\s*(onion_service\w*)", value)
        assert action.SHORT.get(variable, variable[len(action.PREFIX):]) == arg, (arg, value)
        assert action.TASK_SPEC[arg]["type"] == OPTIONS[variable]["type"], arg


def test_the_module_options_are_the_host_request_and_each_is_read_on_the_host():
    control = set(control_argument_spec())
    request = set(deploy.argument_spec()) - control
    source = "".join(p.read_text() for p in HOST_SIDE)
    unread = sorted(k for k in request if not re.search(r"""\bp\[["']%s["']\]""" % k, source))
    assert unread == [], "options of the host's request that the host never reads: %s" % unread
    documented = yaml.safe_load(
        (REPO / "plugins" / "modules" / "onion_service_deploy.py").read_text().split('DOCUMENTATION = r"""')[1]
        .split('"""')[0])["options"]
    assert sorted(documented) == sorted(request)
    # a role variable that only the controller reads is no option of the module
    controller_only = set(action.TASK_SPEC) - set(deploy.argument_spec())
    assert not controller_only & set(documented), controller_only & set(documented)


def test_the_typo_check_knows_the_argument_spec_and_the_role_own_names():
    """Issue 41: the role passes only its own names (vars/main.yml's onion_service_internal_variables); the action
    plugin adds its argument spec's options itself (no lookup/from_yaml in the role). A misspelt variable is named with
    the right one; every option and every name the role sets is known."""
    internal = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["onion_service_internal_variables"]
    assert _deploy_args()["known_variables"] == "{{ onion_service_internal_variables }}"
    assert action.ROLE_VARIABLES == sorted(OPTIONS)
    act = object.__new__(action.ActionModule)
    args = {"known_variables": internal, "backup_dir": "/srv/escrow", "service_dir": "/var/lib/tor/onion"}
    everything = dict((name, None) for name in list(OPTIONS) + internal)
    act._check(args, "web1", dict(everything, inventory_hostname="web1"))   # nothing unknown: no _Fail
    for typo, meant in (("onion_servics", "onion_services"), ("onion_service_backupdir", "onion_service_backup_dir")):
        try:
            act._check(args, "web1", dict(everything, **{typo: []}))
        except action._Fail as exc:
            assert "unknown variable(s) %s (did you mean %s?)" % (typo, meant) in exc.msg, exc.msg
        else:
            raise AssertionError("%s was not refused" % typo)
    # outside the role (no known_variables given): no such check
    act._check(dict(args, known_variables=[]), "web1", {"onion_servics": []})
