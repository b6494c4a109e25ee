# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 41, one home for every rule: the roles only declare. Their defaults, vars, tasks, handlers and templates
compute nothing in Jinja (no inline if/else, combine, from_yaml, from_json, regex_replace, dictsort, string joining
with ~, list arithmetic, `is match`, max/min): the decisions are the collection's filters' and lookups'
(plugin_utils/, module_utils/_tor/), unit tested there. `when:` conditions on variables and registered results, and a
variable's `default(...)`, are declarations. The onion_client role keeps every key out of its fact of credentials."""

import re
from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
DECLARING = [p for p in sorted(ROLES.rglob("*")) if p.suffix in (".yml", ".j2") and "molecule" not in p.parts]
EXPRESSION = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
COMPUTING = re.compile(r"\sif\s.*\selse\s|combine\(|from_yaml|from_json|regex_replace|dictsort|\s~\s|\+\s*\(?\[|is match"
                       r"|\|\s*(max|min)\b", re.S)
# the expressions left on purpose, each a declaration: a default path that names another role's variable, and the
# tor role's SocksPort passed as null when unset (a None templated through "{{ }}" is not None on every ansible-core)
LEFT = {
    ("onionbalance/defaults/main.yml", "{{ onion_service_backup_dir | default(playbook_dir ~ '/onion-keys') }}"),
    ("onionbalance/meta/argument_specs.yml", "{{ onion_service_backup_dir | default(playbook_dir ~ '/onion-keys') }}"),
    ("onionprobe/defaults/main.yml", "{{ onion_service_backup_dir | default(playbook_dir ~ '/onion-keys') }}"),
    ("onionprobe/meta/argument_specs.yml", "{{ onion_service_backup_dir | default(playbook_dir ~ '/onion-keys') }}"),
    ("tor/tasks/configure.yml", "{{ omit if tor_socks_port is none else tor_socks_port }}"),
}


@pytest.mark.parametrize("path", DECLARING, ids=[str(p.relative_to(ROLES)) for p in DECLARING])
def test_the_role_computes_nothing_in_jinja(path):
    where = str(path.relative_to(ROLES))
    found = [e for e in EXPRESSION.findall(path.read_text())
             if COMPUTING.search(e) and (where, " ".join(e.split())) not in LEFT]
    assert found == []


def test_what_is_left_is_still_there():
    """Each expression left on purpose exists (a stale entry would hide nothing, and mislead)."""
    for where, expression in LEFT:
        text = " ".join((ROLES / where).read_text().split())
        assert expression in text, where


def test_onion_service_vars_read_no_file():
    text = (ROLES / "onion_service" / "vars" / "main.yml").read_text()
    assert "lookup(" not in text and "from_yaml" not in text


def test_onion_client_keys_only_in_its_no_log_task():
    """The set_fact of the credentials (not no_log) passes no key and reads no vault; the one task that gets a key
    (the lookup onion_client_key given the credential) is no_log."""
    tasks = yaml.safe_load((ROLES / "onion_client" / "tasks" / "main.yml").read_text())
    facts = [t for t in tasks if "ansible.builtin.set_fact" in t]
    assert len(facts) == 1 and not facts[0].get("no_log")
    assert not re.search(r"_keys\b|lookup\(|vault", str(facts[0]["ansible.builtin.set_fact"]))
    with_keys = [t for t in tasks if re.search(r"_keys\b|onion_client_key", str(t))]
    assert [t["name"] for t in with_keys] == ["This host's tor gets each client key (permanent), or loses a revoked one"]
    assert with_keys[0]["no_log"] is True
