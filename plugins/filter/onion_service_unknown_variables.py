# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Variables that look like a role's own but are not (a typo): argument specs only check the
variables they declare, so a misspelt onion_services is never seen by them."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onion_service_unknown_variables
short_description: Variable names that look like a role's own but are not among them, with the closest match
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes the O(_input) variable names (for example C(query('ansible.builtin.varnames', '^onion_serv'))) and returns,
    sorted, those not in O(known), each as a dict with C(name), C(suggestion) (the closest known name, or null) and
    C(text) (the name, and the suggestion as C(NAME (did you mean SUGGESTION?))).
  - Used by the P(onionlab.tor.onion_service#role) role to fail on C(onion_service) for C(onion_services), which its
    argument spec cannot see.
options:
  _input:
    description: The variable names in scope.
    type: list
    elements: str
    required: true
  known:
    description: The names that are known (the role's options and the names it sets itself).
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Typos of this role's variables
  ansible.builtin.debug:
    msg: "{{ ['onion_service', 'onion_services'] | onionlab.tor.onion_service_unknown_variables(['onion_services']) }}"
# -> [{name: onion_service, suggestion: onion_services, text: 'onion_service (did you mean onion_services?)'}]
"""

RETURN = r"""
_value:
  description: One dict per unknown name, C(name), C(suggestion) and C(text).
  type: list
  elements: dict
"""

import difflib

from ansible.errors import AnsibleFilterError


def onion_service_unknown_variables(names, known=None):
    if not isinstance(names, (list, tuple)) or not isinstance(known, (list, tuple)):
        raise AnsibleFilterError("onion_service_unknown_variables: the input and known must be lists of names")
    known = sorted(set(str(k) for k in known))
    out = []
    for name in sorted(set(str(n) for n in names)):
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.85)
        suggestion = close[0] if close else None
        out.append({"name": name, "suggestion": suggestion,
                    "text": "%s (did you mean %s?)" % (name, suggestion) if suggestion else name})
    return out


class FilterModule(object):
    def filters(self):
        return {"onion_service_unknown_variables": onion_service_unknown_variables}
