# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's variables that its templates write into a config file, checked to stay one value each
(plugins/module_utils/_tor/config_value.py, the check the tor role's tor_setup action makes of the torrc)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: config_values
short_description: Refuse role variables that would not stay one value in the config file they are written into
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes a dict of a role's variables (name to value, as a template writes them) and returns it unchanged when each
    stays one value of the file O(file_format) names, as its reader reads it; otherwise fails with one message naming
    every variable refused and why.
  - Refused in every value - a newline, a carriage return, a NUL or another control character (a tab is allowed);
    a backslash at its end where the reader continues the line (tor, systemd) or reads an escape (HAProxy); C(#)
    where a comment begins inside a line (tor, HAProxy; in a torrc value, except inside a whole quoted value);
    C(%) where the reader expands it (systemd specifiers, configparser interpolation).
  - Refused in a word (a variable not named in O(values) or O(lines)) also - a blank, and a quote or backslash
    (C(;) too in a systemd unit), where the reader splits, quotes or escapes.
  - A list value is checked item by item (named C(NAME[i])), a dict value entry by entry (C(NAME.KEY)); V(null) is
    written as nothing and passes.
  - The variables named in O(onions) must each name a v3 onion address (56 letters a-z and digits 2-7, with or
    without C(.onion); its version and checksum are checked), refused in the same message otherwise.
  - The tor role's own torrc is checked this way by its action (P(onionlab.tor.tor_setup#module)), without this
    filter.
options:
  _input:
    description: The variables, name to value.
    type: dict
    required: true
  file_format:
    description: The file they are written into (V(torrc), V(haproxy), V(systemd) unit, V(ini) read by Python's
      configparser, V(yaml) as JSON strings, for example C(prometheus.yml)).
    type: str
    choices: [torrc, haproxy, systemd, ini, yaml]
    required: true
  values:
    description: The variables written as the rest of a line (blanks allowed), not as one word.
    type: list
    elements: str
    default: []
  lines:
    description: The variables written as whole lines (a comment allowed).
    type: list
    elements: str
    default: []
  onions:
    description: The variables that name a v3 onion address (V(null) passes, as nothing is written for it).
    type: list
    elements: str
    default: []
  role:
    description: The role whose variables they are (the message begins with it).
    type: str
"""

EXAMPLES = r"""
- name: The variables written into the unit are one word each
  ansible.builtin.assert:
    that: "({'my_user': my_user, 'my_binary': my_binary} | onionlab.tor.config_values('systemd')) is mapping"
"""

RETURN = r"""
_value:
  description: The input, unchanged.
  type: dict
"""

from ansible_collections.onionlab.tor.plugins.module_utils._tor import config_value

try:
    from ansible.errors import AnsibleFilterError
except ImportError:  # pragma: no cover (plain Python in unit tests)
    class AnsibleFilterError(Exception):
        pass


def config_values(variables, file_format, values=(), lines=(), role=None, onions=()):
    if not isinstance(variables, dict):
        raise AnsibleFilterError('config_values takes a dict of variables, got %s' % type(variables).__name__)
    if file_format not in config_value.FORMATS:
        raise AnsibleFilterError('config_values: file_format must be one of %s, got %r'
                                 % (', '.join(sorted(config_value.FORMATS)), file_format))
    kinds = dict([(name, 'value') for name in values or ()] + [(name, 'line') for name in lines or ()])
    problems = config_value.problems(variables, file_format, kinds, 'word')
    not_onions = ['%s: the value %s %s' % (name, config_value.shown(variables[name]), said)
                  for name, said in ((name, config_value.onion_problem(variables[name]))
                                     for name in sorted(onions or (), key=str)
                                     if name in variables and variables[name] is not None)
                  if said and not any(p.startswith('%s: ' % name) for p in problems)]
    said = []
    if problems:
        said.append('these variables would not stay one value each in the %s file they are written into: %s.'
                    % (file_format, '; '.join(problems)))
    if not_onions:
        said.append('%shese variables must each name a v3 onion address (%s): %s.'
                    % ('T' if said else 't', config_value.ONION_FORM, '; '.join(not_onions)))
    if said:
        raise AnsibleFilterError('%s%s Nothing was changed.' % ('%s: ' % role if role else '', ' '.join(said)))
    return variables


class FilterModule(object):
    def filters(self):
        return {'config_values': config_values}
