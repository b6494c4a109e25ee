# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion watchdog program and the collection's stdlib library it runs on, as one JSON text that the onion_watchdog
role copies to the host (its entry point imports the modules from it)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: watchdog_library
short_description: The onion watchdog program and the collection's stdlib library, as one JSON text
version_added: 0.2.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Returns one JSON object (keys sorted) of full module name to source: every file of this collection's
    C(plugins/module_utils/_tor/) (the stdlib-only library, C(ansible_collections.onionlab.tor.plugins.module_utils._tor.NAME))
    and the watchdog program C(plugins/module_utils/_onion_watchdog.py), read as they are on the controller."
  - The P(onionlab.tor.onion_watchdog#role) role writes it to the host in one file; the watchdog's entry point imports
    from it. Nothing else of the collection goes to the host.
options: {}
"""

EXAMPLES = r"""
- name: The watchdog program and its library
  ansible.builtin.copy:
    content: "{{ lookup('onionlab.tor.watchdog_library') }}\n"
    dest: /usr/local/lib/onionlab-watchdog/onionlab-tor-library.json
    mode: "0644"
"""

RETURN = r"""
_raw:
  description: The JSON text (one element).
  type: list
  elements: str
"""

import glob
import json
import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

PACKAGE = "ansible_collections.onionlab.tor.plugins.module_utils"
UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")


def library(utils=UTILS):
    """{full module name: source} of _tor/*.py and _onion_watchdog.py under utils."""
    files = [(PACKAGE + "._tor." + os.path.basename(path)[:-len(".py")], path)
             for path in sorted(glob.glob(os.path.join(utils, "_tor", "*.py")))]
    files.append((PACKAGE + "._onion_watchdog", os.path.join(utils, "_onion_watchdog.py")))
    out = {}
    for name, path in files:
        try:
            with open(path, encoding="utf-8") as handle:
                out[name] = handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise AnsibleLookupError("watchdog_library: cannot read %s: %s" % (path, exc))
    return out


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if terms:
            raise AnsibleLookupError("watchdog_library takes no terms")
        return [json.dumps(library(), sort_keys=True)]
