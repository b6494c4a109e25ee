# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters onionbalance_key_command, onionbalance_key_result and onionbalance_command (faces of
plugin_utils/onionbalance_frontend.py, whose decisions test_onionbalance_frontend.py tests) and the onionbalance role's
use of them: its key tasks rendered by Ansible's own Templar (harness/ansible_template.py); the command's result, which
holds the keys, is only the no_log task's variable."""

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from harness.ansible_template import render
from ansible_collections.onionlab.tor.plugins.filter.onionbalance_command import onionbalance_command
from ansible_collections.onionlab.tor.plugins.filter.onionbalance_key_command import onionbalance_key_command
from ansible_collections.onionlab.tor.plugins.filter.onionbalance_key_result import onionbalance_key_result

REPO = Path(__file__).resolve().parents[4]
ROLE = REPO / "roles" / "onionbalance"
LOOKUP = "lookup('ansible.builtin.file', 'frontend_key.py')"
COMMAND_TASK = "The frontend key (the vault's, else the host's, else the escrowed one, else a new one), checked " \
               "before anything is written"
VAULT = "ED25519-V3:" + "QUJD" * 21 + "QQ=="
NO_ESCROW = {"exists": False, "content": None, "problem": None}


def _tasks(name="key.yml"):
    return yaml.safe_load((ROLE / "tasks" / name).read_text())


def _flat(tasks):
    for t in tasks:
        yield t
        for part in ("block", "rescue", "always"):
            yield from _flat(t.get(part) or [])


def _role_vars(**extra):
    out = dict(yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()))
    out.update(yaml.safe_load((ROLE / "vars" / "main.yml").read_text()))
    out.update(playbook_dir="/srv/play", inventory_hostname="lb1", ansible_managed="Ansible managed",
               _script="print(1)")
    out.update(extra)
    return out


def _swap_lookup(data):
    if isinstance(data, str):
        return data.replace(LOOKUP, "_script")
    if isinstance(data, dict):
        return dict((k, _swap_lookup(v)) for k, v in data.items())
    return data


def test_the_faces_refuse_what_the_role_never_passes_without_saying_a_key():
    with pytest.raises(AnsibleFilterError, match="onionbalance_key_command: the input must be the text of"):
        onionbalance_key_command("", "/p", "/k", False, "u", "g", "h", "/e", True, VAULT, NO_ESCROW)
    with pytest.raises(AnsibleFilterError) as err:
        onionbalance_key_command("x", "/p", "/k", False, "u", "g", "h", "/e", True, VAULT, {"content": VAULT})
    assert str(err.value).startswith("onionbalance_key_command: escrow_read must be") and "QUJD" not in str(err.value)
    with pytest.raises(AnsibleFilterError, match="onionbalance_key_result: the input must be the registered result"):
        onionbalance_key_result("stdout", "/usr/bin/python3")
    assert onionbalance_command("/ob", "/c", "/d", "/s", None, "info", True) == "/ob -c /c -s /s -v info --is-testnet"


def test_the_command_result_is_only_the_no_log_tasks_variable():
    """The filter's result holds the keys: a variable of the one task that runs the command, whose no_log it sets;
    never a fact, never read by another task."""
    users = []
    for name in ("key.yml", "frontend_key.yml", "main.yml", "config.yml", "backends.yml", "control.yml"):
        for t in _flat(_tasks(name)):
            text = yaml.safe_dump(t)
            if "onionbalance_key_command" in text:
                users.append(t)
    assert [t["name"] for t in users] == [COMMAND_TASK]
    task = users[0]
    assert "onionbalance_key_command" in task["vars"] and task["no_log"] == "{{ onionbalance_key_command.no_log }}"
    assert "register" in task and "ansible.builtin.set_fact" not in task


@pytest.fixture(scope="module")
def rendered():
    """The role's key tasks rendered for a few cases, in one child."""
    tasks = dict((t["name"], t) for t in _tasks())
    command = _swap_lookup(tasks[COMMAND_TASK])
    usable, fact = tasks["The frontend key is usable"], tasks["The frontend address"]
    jobs = []
    for private_key, escrow in [(None, NO_ESCROW), (VAULT, NO_ESCROW), (None, dict(NO_ESCROW, exists=True,
                                                                                   content="PT0g"))]:
        variables = _role_vars(ansible_check_mode=False, onionbalance_private_key=private_key,
                               onionbalance_escrow_read=escrow, **command["vars"])
        jobs.append({"data": {"args": command["ansible.builtin.command"], "no_log": command["no_log"]},
                     "vars": variables})
    for run in [{"rc": 0, "stdout": '{"changed": true, "generated": true, "restored": false, "onion_address": null}'},
                {"rc": 1, "stdout": '{"failed": true, "msg": "refused"}'}, {"rc": 1, "stdout": "", "stderr_lines": ["E"]}]:
        variables = _role_vars(onionbalance_key_run=run, **usable["vars"])
        jobs.append({"data": {"changed": "{{ %s }}" % command["changed_when"],
                              "that": "{{ %s }}" % usable["ansible.builtin.assert"]["that"],
                              "fail_msg": usable["ansible.builtin.assert"]["fail_msg"],
                              "fact": fact["ansible.builtin.set_fact"]["onionbalance_key"]}, "vars": variables})
    return render(jobs)


def test_the_role_runs_the_command_with_the_keys_on_stdin_alone(rendered):
    plain, vault, escrow = [r["value"] for r in rendered[:3]]
    assert plain["args"]["argv"][:2] == ["/usr/bin/python3", "-c"] and plain["args"]["argv"][-1] == "no-stdin"
    assert "stdin" not in plain["args"] and plain["no_log"] is False   # omitted: nothing to send
    assert vault["args"]["stdin"] == '{"vault": "%s"}' % VAULT and vault["no_log"] is True
    assert escrow["args"]["stdin"] == '{"escrow": "PT0g"}' and escrow["no_log"] is True
    assert all(VAULT not in word for word in vault["args"]["argv"])


def test_the_role_reads_the_result(rendered):
    ok, refused, broken = [r["value"] for r in rendered[3:]]
    assert ok == {"changed": True, "that": True, "fail_msg": "onionbalance: ", "fact": {
        "changed": True, "generated": True, "restored": False, "onion_address": None}}
    assert refused == {"changed": False, "that": False, "fail_msg": "onionbalance: refused", "fact": None}
    assert broken["that"] is False and broken["fail_msg"] == \
        "onionbalance: could not run /usr/bin/python3 with Onionbalance's libraries: E"


def test_the_unit_prints_the_filters_command_line():
    port, socket = render([
        {"template": "roles/onionbalance/templates/onionlab.conf.j2",
         "vars": _role_vars(onionbalance_control_port=9051, onionbalance_testnet=True)},
        {"template": "roles/onionbalance/templates/onionlab.conf.j2", "vars": _role_vars()}])
    assert "ExecStart=/usr/sbin/onionbalance -c /etc/onionbalance/config.yaml -i 127.0.0.1 -p 9051 -s " \
           "/etc/onionbalance/no-control-socket -v warning --is-testnet\n" in port["text"]
    assert "ExecStart=/usr/sbin/onionbalance -c /etc/onionbalance/config.yaml -s /run/tor/control -v warning\n" \
        in socket["text"]


OLD_CORE = REPO / ".build" / "venv-2.17" / "bin" / "python"   # made by tests/utils/core-venv.sh 2.17
OLD_CORE_CHILD = r"""
import json, sys
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar
init_plugin_loader()
task, variables = json.load(sys.stdin)
args = Templar(loader=DataLoader(), variables=variables).template(task)
print(json.dumps({"type": type(args.get("stdin")).__name__, "args": args}))
"""


@pytest.mark.skipif(not OLD_CORE.exists(), reason="needs .build/venv-2.17 (tests/utils/core-venv.sh 2.17)")
def test_on_ansible_core_2_17_stdin_stays_the_json_text():
    """ansible-core 2.17 reads a template's text that looks like a mapping back into one (the role's | string)."""
    command = _swap_lookup(dict((t["name"], t) for t in _tasks())[COMMAND_TASK])
    variables = _role_vars(ansible_check_mode=False, onionbalance_private_key=VAULT, onionbalance_escrow_read=dict(
        NO_ESCROW, exists=True, content="PT0g"), omit="__omit_place_holder__t", **command["vars"])
    p = subprocess.run([str(OLD_CORE), "-c", OLD_CORE_CHILD], input=json.dumps([command["ansible.builtin.command"],
                                                                                variables]),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120,
                       env=dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections")))
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    assert out["type"] != "dict" and out["args"]["stdin"] == '{"vault": "%s", "escrow": "PT0g"}' % VAULT
