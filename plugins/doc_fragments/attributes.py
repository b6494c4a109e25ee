# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    # Standard attribute blocks: every module stacks the one that fits.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
"""

    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state.
    description: Will return details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
"""

    FACTS = r"""
options: {}
attributes:
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
    support: full
"""

    ACTION = r"""
options: {}
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
"""

    ACTIONGROUP_TOR = r"""
options: {}
attributes:
  action_group:
    description: Use C(group/onionlab.tor.tor) in C(module_defaults) to set the connection options once for all modules.
    support: full
    membership:
      - onionlab.tor.tor
"""
