# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one check of a role variable that a template writes into a config file: its value must stay one value on
its line and mean, in the file, what the variable says. No line break or other control character (tor, systemd,
HAProxy and Python's configparser start a new line or stop there), no comment begun inside it, no continuation
into the next line, and, where the file splits a line into words, one word.

This is a private module_utils file of onionlab.tor; its API may change at any time. No Ansible, no I/O.
Used by the tor role (the tor_setup action, through torrc.line_problem), by the filter config_values (the
onion_haproxy, onion_vanguards and prometheus roles' own variables) and by onion_haproxy_plan (each service's values).
onion_problem() is the check of a variable that names a v3 onion address (the prometheus role's
prometheus_metrics_onion, a target it scrapes through tor)."""

from __future__ import annotations

import json
import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion

# every C0 control character but the tab, DEL, and what Python's str.splitlines also ends a line at
_CONTROL_RE = re.compile('[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]')
_CONTROL_NAMES = {'\n': 'a newline', '\r': 'a carriage return', '\0': 'a NUL'}
_BLANK_RE = re.compile('[ \t\v\f]')

# how each file reads a line: who reads it (for the messages), what begins a comment inside a line, what a
# backslash at the end of a line does there (None: nothing), and the characters that change a value (every kind)
# or that a single word may not hold (they quote, escape or split)
FORMATS = {
    'torrc': {'reader': 'tor', 'comment': '#', 'backslash': 'tor continues it on the next line', 'special': {},
              'word': '"'},
    'haproxy': {'reader': 'HAProxy', 'comment': '#', 'backslash': 'HAProxy reads it as an escape', 'special': {},
                'word': '"\'\\'},
    'systemd': {'reader': 'systemd', 'comment': None, 'backslash': 'systemd continues it on the next line',
                'special': {'%': 'a % (systemd expands %-specifiers)'}, 'word': '"\'\\;'},
    'ini': {'reader': "the program's configparser", 'comment': None, 'backslash': None,
            'special': {'%': 'a % (configparser interpolates it)'}, 'word': ''},
    # a value the role's template writes as a JSON string into a YAML file (prometheus.yml): nothing inside a
    # quoted string ends it or begins a comment; a control character still makes no sense in any of them
    'yaml': {'reader': 'YAML', 'comment': None, 'backslash': None, 'special': {}, 'word': ''},
}
KINDS = ('word', 'value', 'line')
_SHOWN = 120


def unescape_string(text):
    """tor's unescape_string (src/lib/encoding/cstring.c) of a value that begins with a quote: (the value, what
    follows the closing quote), or (None, '') when tor refuses it. The value ends at a NUL as tor's C string does."""
    out, k = [], 1
    while k < len(text):
        c = text[k]
        if c == '"':
            return ''.join(out).split('\0', 1)[0], text[k + 1:]
        if c != '\\':
            out.append(c)
            k += 1
            continue
        e = text[k + 1:k + 2]
        if e in ('x', 'X'):
            digits = text[k + 2:k + 4]
            if len(digits) != 2 or not all(d in '0123456789abcdefABCDEF' for d in digits):
                return None, ''
            out.append(chr(int(digits, 16)))
            k += 4
        elif e and e in '01234567':
            m = re.match(r'[0-7]{1,3}', text[k + 1:])
            n = int(m.group(0), 8)
            if n > 255:
                return None, ''
            out.append(chr(n))
            k += 1 + len(m.group(0))
        elif e and e in 'nrt"\'\\':
            out.append({'n': '\n', 'r': '\r', 't': '\t'}.get(e, e))
            k += 2
        else:
            return None, ''
    return None, ''


def _torrc_quoted(text):
    """Why tor does not read text, a value that begins with a double quote, as one quoted string (tor's
    unescape_string below), or None when it does."""
    value, after = unescape_string(text)
    after = after.strip(' \t')
    if value is None:
        return 'begins with a double quote but is not one quoted string (tor refuses the line)'
    if after.startswith('#'):
        return 'holds a # after its closing double quote (tor reads the rest of the line as a comment)'
    if after:
        return 'holds more after its closing double quote (tor refuses the line)'
    return None


def as_written(value):
    """The text a template writes for value (None: nothing; booleans as Jinja writes them)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode('utf-8', 'surrogateescape')
    return str(value)


def problem(value, fmt='torrc', kind='value'):
    """Why value, written by a template into a FMT file (FORMATS) as a KIND (a single word; the value after
    an option's name; a whole line), would not stay one KIND that means what it says, in words ('holds a
    newline'); None when it would. None as value is nothing written: no problem."""
    rules = FORMATS[fmt]
    if kind not in KINDS:
        raise ValueError('kind must be one of %s, got %r' % (', '.join(KINDS), kind))
    text = as_written(value)
    if text is None:
        return None
    control = _CONTROL_RE.search(text)
    if control:
        char = control.group(0)
        return 'holds %s' % _CONTROL_NAMES.get(char, 'the control character U+%04X' % ord(char))
    if rules['backslash'] and text.endswith('\\'):
        return 'ends with a backslash (%s)' % rules['backslash']
    for char, said in sorted(rules['special'].items()):
        if char in text:
            return 'holds %s' % said
    if kind == 'word':
        if _BLANK_RE.search(text):
            return 'holds a blank (%s splits the line into words there)' % rules['reader']
        for char in rules['word']:
            if char in text:
                return 'holds %s' % {'"': 'a double quote', "'": 'a single quote', '\\': 'a backslash',
                                     ';': 'a ;'}[char]
    if fmt == 'torrc' and kind == 'value' and text.lstrip(' \t').startswith('"'):
        return _torrc_quoted(text.lstrip(' \t'))
    comment = rules['comment']
    if comment and kind != 'line' and comment in text:
        return 'holds a %s (%s reads the rest of the line as a comment%s)' % (
            comment, rules['reader'], '; a whole value in double quotes keeps it' if fmt == 'torrc' and
            kind == 'value' else '')
    return None


ONION_FORM = '56 letters a-z and digits 2-7, then .onion'


def onion_problem(value):
    """Why value does not name a v3 onion address (the service id of 56 base32 characters, with or without
    '.onion', its version 3 and its checksum right: onion.parse_onion_address), in words; None when it does."""
    if not isinstance(value, str):
        return 'is not a string' if value is not None else 'is empty (null)'
    sid = value[:-len('.onion')] if value.endswith('.onion') else value
    if not onion.SERVICE_ID_RE.match(sid):
        return 'is not 56 letters a-z and digits 2-7 (then .onion)'
    try:
        onion.parse_onion_address(sid)
    except onion.OnionKeyError as exc:
        return 'has a wrong checksum (a character mistyped)' if 'checksum' in str(exc) else 'is not version 3'
    return None


def shown(value):
    """value as a message shows it: JSON-quoted (control characters visible), cut after 120 characters."""
    text = as_written(value) or ''
    if len(text) > _SHOWN:
        return '%s... (%d characters)' % (json.dumps(text[:_SHOWN]), len(text))
    return json.dumps(text)


def problems(values, fmt='torrc', kinds=None, default_kind='word'):
    """One 'NAME: the value "..." holds a newline' per variable of values (name -> value) that problem() refuses; a
    list value item by item (named NAME[i]), a dict value entry by entry (NAME.KEY), each as the variable's kind.
    kinds: name -> kind, default_kind for the others."""
    out = []

    def check(name, value, kind):
        if isinstance(value, dict):
            for key in sorted(value, key=str):
                check('%s.%s' % (name, key), value[key], kind)
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                check('%s[%d]' % (name, index), item, kind)
        else:
            said = problem(value, fmt, kind)
            if said:
                out.append('%s: the value %s %s' % (name, shown(value), said))

    for name in sorted(values or {}, key=str):
        check(str(name), values[name], (kinds or {}).get(name, default_kind))
    return out
