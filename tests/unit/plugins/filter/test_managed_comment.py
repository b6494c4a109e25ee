# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""managed_comment: ansible_managed as one comment line; every role template's first line uses it."""

import glob
import os

import pytest

from ansible_collections.onionlab.tor.plugins.filter.managed_comment import managed_comment

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *[os.pardir] * 4))


@pytest.mark.parametrize("text, line", [
    ("Ansible managed", "# Ansible managed"),
    ("Ansible managed\nControlPort 0.0.0.0:9051", "# Ansible managed ControlPort 0.0.0.0:9051"),
    ("a\r\n\x00\tb\x7f", "# a b "),
    ("", "# "),
])
def test_one_line(text, line):
    assert managed_comment(text) == line


def test_every_role_template_begins_with_it():
    templates = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "templates", "*.j2")))
    assert len(templates) > 10
    for path in templates:
        with open(path) as f:
            first = f.readline()
        if path.endswith("haproxy.cfg.j2"):  # the onion_haproxy role's own marker (onion_haproxy_config_owner)
            assert first == "# {{ onion_haproxy_marker }}\n"
            continue
        assert first.startswith("{{ ansible_managed") and first.endswith(" | onionlab.tor.managed_comment }}\n"), path
