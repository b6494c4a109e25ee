# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 41, one home for every rule: these roles only declare. Their defaults, vars, tasks and templates compute
nothing in Jinja (no inline if/else, combine, from_yaml, regex_replace or dictsort): the decisions are the
collection's filters' and lookups' (plugin_utils/prometheus_settings.py, vanguards.py, onion_services.py), unit
tested there. The onion_client role keeps every key out of its fact of credentials."""

import re
from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
# the files that only declare: every file of prometheus and onion_client; onion_vanguards' templates, defaults and
# vars (its tasks still choose the install method from the host's release, the addon's command from it, and restarted
# or started from the registered results)
DECLARING = [p for role in ("prometheus", "onion_client") for p in sorted((ROLES / role).rglob("*"))
             if p.suffix in (".yml", ".j2")] + [
    p for part in ("templates", "defaults", "vars") for p in sorted((ROLES / "onion_vanguards" / part).glob("*"))]
EXPRESSION = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)
COMPUTING = re.compile(r"\sif\s.*\selse\s|combine\(|from_yaml|regex_replace|dictsort|\s~\s|\+\s*\(?\[", re.S)


@pytest.mark.parametrize("path", DECLARING, ids=[str(p.relative_to(ROLES)) for p in DECLARING])
def test_the_role_computes_nothing_in_jinja(path):
    found = [e for e in EXPRESSION.findall(path.read_text()) if COMPUTING.search(e)]
    assert found == []


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
