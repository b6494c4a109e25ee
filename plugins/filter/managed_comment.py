# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The first line of every file a role of the collection writes: ansible_managed as one comment line."""

from __future__ import annotations

DOCUMENTATION = r"""
name: managed_comment
short_description: C(ansible_managed) as one comment line, for the first line of a file a role writes
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes a text (the roles pass C(ansible_managed)) and returns C(# ) and that text on one line, each run of control
    characters (a newline among them) replaced by one space.
  - A newline in C(ansible_managed) would otherwise end the comment and make its second line a torrc option, a
    systemd directive or YAML; every template of the collection's roles writes its first line with this filter.
options:
  _input:
    description: The text.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: The first line of a config file
  ansible.builtin.debug:
    msg: "{{ 'Ansible managed\nControlPort 0.0.0.0:9051' | onionlab.tor.managed_comment }}"
  # '# Ansible managed ControlPort 0.0.0.0:9051'
"""

RETURN = r"""
_value:
  description: The comment line, without a line end.
  type: str
"""

import re

_CONTROL_RUN = re.compile('[\x00-\x1f\x7f]+')


def managed_comment(text):
    return '# ' + _CONTROL_RUN.sub(' ', str(text))


class FilterModule(object):
    def filters(self):
        return {'managed_comment': managed_comment}
