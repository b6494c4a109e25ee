"""A bed's Ansible inventory as INI (a part of tests/harness/hosts.py; ``HostBed.inventory()``
makes the dict, ``hosts.py up --inventory-out FILE.ini`` writes it)."""


from __future__ import annotations

import json
import re


def _ini_value(value):
    """A value of an INI inventory line: ansible's ini plugin reads a Python literal (lists,
    booleans, numbers) and else takes the text; text with a space or quote is quoted."""
    if isinstance(value, (list, tuple)):
        # the host line is split as a shell would (shlex): the list in single quotes, its elements in JSON's
        # double quotes, which the split keeps and the ini plugin's literal_eval reads (['a'] came back '[a]')
        text = json.dumps(list(value))
        if "'" in text:
            raise ValueError('an INI inventory list cannot hold a single quote: %r' % (value,))
        return "'%s'" % text
    if not isinstance(value, str):
        return repr(value)
    text = str(value)
    return repr(text) if re.search(r'[\s\'"#;=]', text) else text


def inventory_ini(inventory):
    """The inventory of HostBed.inventory() as an INI inventory: hosts of each group with their vars
    on one line, then [group:vars] (values as Python literals, which ansible's ini plugin reads)."""
    lines = []
    for group, data in inventory['all']['children'].items():
        lines.append('[%s]' % group)
        for name, hvars in data.get('hosts', {}).items():
            lines.append(' '.join([name] + ['%s=%s' % (k, _ini_value(v)) for k, v in hvars.items()]))
        lines.append('')
        if data.get('vars'):
            lines.append('[%s:vars]' % group)
            # a [group:vars] line is not split on spaces: a list is one Python literal ('TestingTorNetwork 1')
            lines += ['%s=%s' % (k, repr(list(v)) if isinstance(v, (list, tuple)) else _ini_value(v))
                      for k, v in data['vars'].items()]
            lines.append('')
    return '\n'.join(lines)
