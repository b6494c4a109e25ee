# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each role's defaults/main.yml and meta/argument_specs.yml describe the same variables with
the same defaults, so that the documented interface cannot drift from the code."""

from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"


@pytest.mark.parametrize("role", sorted(p.name for p in ROLES.iterdir() if (p / "meta" / "argument_specs.yml").exists()))
def test_defaults_match_argument_specs(role):
    defaults = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()) or {}
    spec = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]
    options = spec["options"]
    assert sorted(defaults) == sorted(options), "variables in defaults vs argument_specs differ"
    for name, option in options.items():
        assert name.startswith(role + "_") or name == "onion_services", "%s lacks the role prefix" % name
        assert option.get("description"), name
        assert option.get("default") == defaults[name], "default of %s differs" % name
        assert "required" not in option or not option["required"], name
