# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The torrc lines of the tor role's tor_options (the rule: _tor/torrc.py's option_lines, which the tor_setup action
also reads the options with)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: tor_option_lines
short_description: The tor role's C(tor_options) as torrc lines
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes the role variable C(tor_options) (option name to value) and returns its torrc lines, sorted by option name
    without regard to case.
  - A list value gives one line per item (tor reads repeated lines of C(HiddenServicePort), C(ExitPolicy) and the
    like as one list); C(true) and C(false) are written C(1) and C(0), null as nothing; any other value as its text.
  - The values are not checked here; M(onionlab.tor.tor_setup)'s action refuses, naming it, an option whose name or
    value would not stay one option in the torrc.
options:
  _input:
    description: C(tor_options).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: The torrc lines of two options
  ansible.builtin.debug:
    msg: "{{ {'SafeLogging': true, 'ExitPolicy': ['reject *:25', 'reject *:*']} | onionlab.tor.tor_option_lines }}"
  # ['ExitPolicy reject *:25', 'ExitPolicy reject *:*', 'SafeLogging 1']
"""

RETURN = r"""
_value:
  description: The torrc lines, in order.
  type: list
  elements: str
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc


def tor_option_lines(options):
    if options is None:
        return []
    if not isinstance(options, Mapping):
        raise AnsibleFilterError('tor_options must be a mapping of option names to values, got %s'
                                 % type(options).__name__)
    return [line for dummy, line in torrc.option_lines(dict(options))]


class FilterModule(object):
    def filters(self):
        return {'tor_option_lines': tor_option_lines}
