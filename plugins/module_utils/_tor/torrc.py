# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tor role's torrc decisions as plain data (no Ansible, no I/O): the non-anonymous guard,
what a new torrc drops from the current one (as tor reads both, or line by line as written), the
messages about it, tor's own error lines, and secret values hidden."""

from __future__ import annotations

import json
import os
import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor import config_value

# options whose values are secrets: named, never shown. tor reads an option name case-insensitively and,
# when no option has that exact name, as the first option it begins (a deprecated abbreviation): each name
# with the shortest beginning that tor 0.4.9 reads as it ('Socks5ProxyP' is Socks5ProxyPassword, 'Socks5Proxy'
# is an option of its own)
_SECRETS = (('httpproxyauthenticator', 10), ('httpsproxyauthenticator', 11), ('socks5proxyusername', 12),
            ('socks5proxypassword', 12), ('hashedcontrolpassword', 3), ('hashedcontrolsessionpassword', 28),
            ('__hashedcontrolsessionpassword', 3))
# HiddenService* options that are tor-wide, not of one service: in a service's block they would change every
# service of the tor, and the first two (single-hop/non-anonymous mode) end the service side's anonymity
TOR_WIDE_OPTIONS = ('HiddenServiceSingleHopMode', 'HiddenServiceNonAnonymousMode', 'HiddenServiceStatistics')
# tor's configuration file where Debian's package puts it: the default of every module and action that reads it
DEFAULT_CONFIG_FILE = '/etc/tor/torrc'
# the directory tor_setup makes torrc %include, and the onion services' file there (tor_hidden_service, the
# onion_service role's deploy)
DEFAULT_CONFIG_DIR = '/etc/tor/torrc.d'
DEFAULT_SERVICES_FILE = DEFAULT_CONFIG_DIR + '/onionlab_hidden_services.conf'
NON_ANONYMOUS_OPTIONS = TOR_WIDE_OPTIONS[:2]
# with the shortest beginning that tor 0.4.9 reads as each ('HiddenServiceS', 'HiddenServiceN')
_NON_ANONYMOUS_NAMES = tuple((name.lower(), 14) for name in NON_ANONYMOUS_OPTIONS)
# what tor's config line parser takes for blanks (TOR_ISSPACE)
_TOR_SPACE = ' \t\n\v\f\r'
_OPTION_NAME_RE = re.compile(r'^[A-Za-z0-9_]+\Z')
_WARN_RE = re.compile(r' \[(warn|err)\] ')
_LOG_LINE_RE = re.compile(r'^[A-Z][a-z]{2} [ 0-9]?[0-9] [0-9:.]+ \[[a-z]+\] ')
# one item per onion service (its HiddenServiceDir line with the lines of that service) or per other line
_ITEMS_RE = re.compile(r'^HiddenServiceDir .*(?:\nHiddenService(?!Dir |%s)\S* .*)*|^(?!HiddenServiceDir ).+$'
                       % '|'.join(re.escape(name[len('HiddenService'):]) + ' ' for name in TOR_WIDE_OPTIONS),
                       re.MULTILINE)
# the tor role's variables that torrc.j2 writes as values, each checked by line_problem (config_value's kinds):
# a single word where tor splits the value into words or reads a path; a value where it takes flags after it.
# tor_options and tor_config_lines are checked apart. A 'bool' (tor_cookie_authentication) is written as 1 or 0:
# it must be a boolean as Ansible's bool filter reads one (BOOL_WORDS; the string "false" is false), else refused.
ROLE_VALUES = {'tor_control_port': 'word', 'tor_control_socket': 'word', 'tor_socks_port': 'value',
               'tor_health_socks_port': 'word',
               'tor_config_dir': 'word', 'tor_metrics_port': 'value', 'tor_metrics_port_policy': 'value',
               'tor_cookie_authentication': 'bool'}
BOOL_WORDS = {'true': True, 'yes': True, 'on': True, '1': True, 'false': False, 'no': False, 'off': False, '0': False}
_MARKER_RE = re.compile(r'^# Written by the onionlab\.tor\.tor role', re.MULTILINE)


def parse(text):
    """A torrc's text as tor reads it (parse_config_line_from_str_verbose, src/lib/encoding/confline.c): one
    (first, last, key, value) per option line, first and last the indexes of its lines in text.split('\n').
    As tor does: carriage returns are dropped; a comment ends a line; a quoted value is unescaped; a backslash
    at the end of a line continues the value on the next one (a comment line inside such a value is skipped, an
    empty line ends it); blanks around the value are trimmed. value is None where tor refuses the line."""
    lines = [line.replace('\r', '') for line in text.split('\n')]
    out, i = [], 0
    while i < len(lines):
        s = lines[i].lstrip(_TOR_SPACE)
        if not s or s[0] == '#':
            i += 1
            continue
        k = 0
        while k < len(s) and s[k] not in _TOR_SPACE and s[k] != '#' and not (s[k] == '\\' and k == len(s) - 1):
            k += 1
        key, seg, first = s[:k], s[k:].lstrip(' \t'), i
        if seg.startswith('"'):
            value, after = config_value.unescape_string(seg)
            if value is not None and after.lstrip(' \t')[:1] not in ('', '#'):
                value = None  # tor: "Excess data after quoted string"
            out.append((first, i, key, value))
            i += 1
            continue
        value, continued = '', False
        while True:
            h = seg.find('#')
            if h >= 0 and not continued:
                value += seg[:h]
                break
            if h >= 0:  # inside a continued value a comment runs to the end of its line, and the value goes on
                value += seg[:h]
            elif seg.endswith('\\'):
                value += seg[:-1]
                continued = True
            else:
                value += seg
                break
            if i + 1 >= len(lines) or not lines[i + 1]:
                if h < 0:  # nothing to continue on: the backslash stays
                    value += '\\'
                break
            i += 1
            seg = lines[i]
        out.append((first, i, key, value.rstrip(_TOR_SPACE).split('\0', 1)[0]))
        i += 1
    return out


def _resolve(key, names):
    """The option of names that tor reads key as (its name in lower case), or None. A '+' before a name appends,
    a '/' clears (only with clearing=True)."""
    key = key.lower()
    if key[:1] == '+':
        key = key[1:]
    for name, shortest in names:
        if key == name or (len(key) >= shortest and name.startswith(key)):
            return name
    return None


def is_secret(key):
    """Whether tor reads the option name key as an option whose value is a secret."""
    return _resolve(key.lstrip('/'), _SECRETS) is not None


def option_lines(options):
    """tor_options as the role's torrc.j2 writes them (filter tor_option_lines): one (label, line) per line, sorted by
    name without regard to case; a list value once per item (a dict's keys), booleans as 1 and 0, null as nothing
    (as Ansible writes it), any other value as its text. label: the name in lower case."""
    out = []
    for key, value in sorted((options or {}).items(), key=lambda kv: str(kv[0]).lower()):
        items = [value] if isinstance(value, (str, bytes)) or not (
            hasattr(value, '__len__') and hasattr(value, '__getitem__')) else list(value)
        for item in items:
            text = ('1' if item else '0') if isinstance(item, bool) else '' if item is None else str(item)
            out.append((str(key).lower(), '%s %s' % (key, text)))
    return out


def control_lines(control_port, control_socket, cookie_authentication, packaged_socket):
    """The torrc's control lines (torrc.j2, filter tor_control_lines): a ControlPort on 127.0.0.1 when
    tor_control_port is set, a ControlSocket unless it is the packaged tor's own (packaged_socket: client.DEFAULT_SOCKET,
    given by the filter, so that the tor_setup module carries no control client; Debian's defaults torrc has it), and
    CookieAuthentication 1 or 0 as role_bool reads tor_cookie_authentication (0 for a value it does not
    read: the tor_setup action refuses that value, naming it)."""
    lines = []
    if control_port:
        lines.append('ControlPort 127.0.0.1:%s' % control_port)
    if control_socket and control_socket != packaged_socket:
        lines.append('ControlSocket %s GroupWritable RelaxDirModeCheck' % control_socket)
    lines.append('CookieAuthentication %d' % (1 if role_bool(cookie_authentication) else 0))
    return lines


def _template_lines(options, config_lines):
    """(label, line) per line of tor_options (option_lines) and tor_config_lines as torrc.j2 writes them."""
    return option_lines(options) + [(str(raw).strip().lower(), str(raw)) for raw in (config_lines or [])]


def role_bool(value):
    """A role's boolean as torrc.j2 reads it (Ansible's bool filter's words, any case; True, False, 1, 0), or None
    when value is none of them."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        return BOOL_WORDS.get(value.lower())
    return None


def line_problem(options, config_lines, values=None):
    """The refusal message when a tor role variable that torrc.j2 writes would not stay, in the torrc, what it
    says (config_value's one check, as tor reads the file), naming each; else None. values: the ROLE_VALUES
    variables (name -> value; a list value item by item), each one word or one value as ROLE_VALUES says;
    tor_options: each name an option name, each value one value (no newline, carriage return, NUL or other
    control character, no backslash at its end, which tor continues on the next line, no # outside a whole
    quoted value, where tor's comment begins); each tor_config_lines item one line (comments allowed). Secret
    values are not shown."""
    def shown(text):
        return config_value.shown(text) if hide_secrets(text) == text else '(it holds a secret option: not shown)'

    values = dict(values or {})
    problems = []
    for name in sorted(n for n in values if ROLE_VALUES.get(n) == 'bool'):
        value = values.pop(name)
        if role_bool(value) is None:
            problems.append('%s: the value %s is not a boolean (true or false; yes, no, on, off, 1 or 0)'
                            % (name, config_value.shown(value)))
    problems += config_value.problems(values, 'torrc', ROLE_VALUES, 'value')
    for key, value in (options or {}).items():
        name = str(key)
        if not _OPTION_NAME_RE.match(name):
            problems.append('tor_options name %s is not an option name (letters, digits, _)' % shown(name))
            continue
        items = [value] if isinstance(value, (str, bytes)) or not (
            hasattr(value, '__len__') and hasattr(value, '__getitem__')) else list(value)
        for item in items:
            text = '' if isinstance(item, bool) else str(item)
            said = config_value.problem(text, 'torrc', 'value')
            if said:
                problems.append('tor_options %s: the value %s %s' % (
                    name, '(secret: not shown)' if is_secret(name) else shown(text), said))
    for index, raw in enumerate(config_lines or []):
        said = config_value.problem(str(raw), 'torrc', 'line')
        if said:
            problems.append('tor_config_lines[%d] %s %s' % (index, shown(str(raw)), said))
    if not problems:
        return None
    return ("Each tor role variable written into the torrc must stay what it says there, one value (a "
            "tor_config_lines item: one line) as tor reads it: %s (nothing was changed)." % '; '.join(problems))


def non_anonymous_problem(options, config_lines, socks_port, acknowledged):
    """The refusal message when tor_options / tor_config_lines make the onion services non-anonymous
    without tor_non_anonymous_onion_services, not both options, or with a SocksPort; else None.
    The lines are read as tor reads them (names in any case, abbreviated; values quoted, commented,
    continued on the next line)."""
    labels, physical = [], []
    for label, line in _template_lines(options, config_lines):
        for part in line.split('\n'):
            labels.append(label)
            physical.append(part)
    found, names = [], set()
    for first, last, key, value in parse('\n'.join(physical)):
        name = _resolve(key, _NON_ANONYMOUS_NAMES)
        if name and value == '1':
            names.add(name)
            if labels[first] not in found:
                found.append(labels[first])
    if not found or (acknowledged and len(names) == 2 and str(socks_port) == '0'):
        return None
    return ("HiddenServiceSingleHopMode / HiddenServiceNonAnonymousMode make every onion service of this tor "
            "non-anonymous: the server's location is no longer hidden, and a key used so can never be used for a "
            "hidden service again. They need tor_non_anonymous_onion_services=true, both options set to 1 together, "
            "and tor_socks_port=0 (tor refuses a SocksPort in that mode). Found: %s; "
            "tor_non_anonymous_onion_services=%s; tor_socks_port=%s."
            % (', '.join(found), bool(acknowledged), 'unset' if socks_port is None else socks_port))


def written_by_role(text):
    return bool(_MARKER_RE.search(text))


def hide_secrets(text):
    """A torrc's text with the values of secret options replaced (for a diff and messages): each option line
    that tor reads as a secret option (by its name as tor resolves it), with the lines its value continues on."""
    lines = text.split('\n')
    for first, last, key, value in parse(text):
        if is_secret(key):
            indent = lines[first][:len(lines[first]) - len(lines[first].lstrip(_TOR_SPACE))]
            lines[first] = '%s%s (value hidden)' % (indent, key)
            for i in range(first + 1, last + 1):
                lines[i] = None
    return '\n'.join(line for line in lines if line is not None)


def lines_as_written(text):
    """A torrc's option lines as tor reads each (parse(): comments out, a continued value joined), without
    asking tor: the name and the value, blanks folded."""
    out = []
    for first, last, key, value in parse(text):
        line = key if value is None else ('%s %s' % (key, value)).strip()
        out.append(re.sub(r'[ \t\n\v\f]+', ' ', line))
    return out


def dump_lines(stdout):
    """tor --dump-config's option lines (its log lines out)."""
    return [line for line in stdout.splitlines() if not _LOG_LINE_RE.match(line)]


def tor_problems(stdout, stderr):
    """tor's warning and error lines, without their time stamps."""
    return [_LOG_LINE_RE.sub('', line, count=1) for line in stdout.splitlines() + stderr.splitlines()
            if _WARN_RE.search(line)]


def verify_refusal(rc, stdout, stderr):
    """The message when tor --verify-config refuses the new torrc."""
    said = ' '.join(line for line in tor_problems(stdout, stderr)
                    if not line.startswith('Reading config failed--see warnings above'))
    return ("tor --verify-config refuses the torrc made from tor_options and tor_config_lines (nothing was written): "
            + (said or 'exit status %d' % rc))


def dropped(current_lines, new_lines):
    """What the current torrc holds that the new one does not: one item per option line, or per onion
    service with its lines; secret values hidden."""
    new_items = set(_item_key(item) for item in _ITEMS_RE.findall('\n'.join(new_lines)))
    return ['\n'.join('%s (value hidden)' % line.split(' ', 1)[0] if is_secret(line.split(' ', 1)[0]) else line
                      for line in item.split('\n'))
            for item in _ITEMS_RE.findall('\n'.join(current_lines)) if _item_key(item) not in new_items]


def _item_key(item):
    """What an item is compared by: an onion service by its directory as tor resolves it (a trailing slash, as
    Debian's example torrc writes it, or a ./ is the same directory) and its lines in any order (an adopted
    service is written to the drop-in in the module's order); another line as it is."""
    if not item.startswith('HiddenServiceDir '):
        return item
    lines = item.split('\n')
    return (os.path.normpath(lines[0][len('HiddenServiceDir '):].strip()),) + tuple(sorted(lines[1:]))


def service_dirs(items):
    """The HiddenServiceDir of each dropped onion service."""
    return [item.split('\n')[0][len('HiddenServiceDir '):] for item in items if item.startswith('HiddenServiceDir ')]


def dropped_words(items, hostnames):
    """The dropped items in words: an onion service with its address (hostnames: {dir: address})."""
    out = []
    for entry in items:
        lines = entry.split('\n')
        if lines[0].startswith('HiddenServiceDir '):
            d = lines[0][len('HiddenServiceDir '):]
            address = (hostnames[d] + ', ') if d in hostnames else ''
            out.append('onion service %s (%s%s)' % (d, address, ', '.join(lines[1:])))
        else:
            out.append(entry)
    return '; '.join(out)


def _drops_services(items):
    return any(item.startswith('HiddenServiceDir ') for item in items)


def refusal(config_file, config_dir, items, words, unread, tor_missing):
    """The message when a torrc the role did not write would lose settings (no tor_torrc_takeover)."""
    if unread:
        why = "(tor cannot read that file: %s; its lines are compared as written.) " % ' '.join(unread)
    elif tor_missing:
        why = "(tor is not installed yet: the files are compared line by line as written.) "
    else:
        why = ''
    return ("%s was not written by this role and holds settings that the torrc made from this role's variables "
            "would drop%s: %s. %sNothing was changed. Keep them by adding them to the role's variables, for example "
            "tor_config_lines: %s (or tor_options, or a file of %s), or set tor_torrc_takeover=true to replace the "
            "file anyway (a backup of it is kept next to it)."
            % (config_file, ' (its onion services would go offline)' if _drops_services(items) else '', words, why,
               json.dumps([line for item in items for line in item.split('\n')]), config_dir))


def replaced_message(config_file, items, words, ours):
    """What the run says when the new torrc drops something (taken over, or the role's own torrc), and the
    variable that would keep it (a line added by hand, or by another tool, is gone at tor's next start)."""
    keep = ('. To keep them, give them to the role: tor_config_lines: %s (or tor_options)'
            % json.dumps([line for item in items for line in item.split('\n')]))
    if ours:
        return '%s (written by this role) is replaced; dropped from it%s: %s%s' % (
            config_file, ' (its onion services go offline)' if _drops_services(items) else '', words, keep)
    return 'tor_torrc_takeover=true: %s is replaced; dropped from it: %s%s' % (config_file, words, keep)


# SocksPort, with the shortest beginning that tor 0.4.9 reads as it ('SocksPo' is SocksPolicy)
_SOCKS_NAMES = (('socksport', 8),)
HEALTH_SOCKS_LINE = 'SocksPort 127.0.0.1:%s ExtendedErrors'
_LOOPBACK_HOSTS = ('127.0.0.1', 'localhost')


def _loopback_tcp(value):
    """Whether a SocksPort value (its first word: a port, ADDRESS:PORT, unix:PATH, 0) opens a TCP listener on
    127.0.0.1, where the reach probe looks (health_layers.socks_listener), as tor reads it (a port alone or 'auto'
    listens on 127.0.0.1)."""
    words = (value or '').split()
    if not words:
        return False
    port = words[0].strip('"')
    if port.lower().startswith('unix:') or port == '0':
        return False
    if port.isdigit() or port.lower() == 'auto':
        return True
    host, sep, rest = port.rpartition(':')
    return bool(sep) and host.lower() in _LOOPBACK_HOSTS and (
        rest.isdigit() or rest.lower() == 'auto') and rest != '0'


def socks_lines(socks_port, health, options, config_lines):
    """The torrc's SocksPort lines (torrc.j2, filter tor_socks_lines): tor_socks_port's, and the health check's
    loopback SocksPort (tor_health_socks_port) when the reach probe needs one and may have one. Returns
    (lines, note); raises ValueError with the message for a value that cannot be.

    health: 'auto' opens 127.0.0.1:auto only when no SocksPort of tor_socks_port, tor_options or tor_config_lines
    listens on 127.0.0.1 TCP (tor's default 9050 counts when none is set) and the tor is not in non-anonymous mode
    (tor refuses any SocksPort there); a port number opens that one (unless already one of them); false/0/'off'
    opens none. A SocksPort 0 that the health port replaces is not written (tor reads 0 as 'no SocksPort')."""
    own = [] if socks_port is None or str(socks_port) == '' else ['SocksPort %s' % socks_port]
    word = str(health).strip().lower() if health is not None else 'false'
    if word in ('false', 'no', 'off', '0', 'none'):
        return own, None
    if word in ('true', 'yes', 'on'):
        word = 'auto'
    if word != 'auto' and not (word.isdigit() and len(word) <= 5 and 0 < int(word) < 65536):
        raise ValueError("tor_health_socks_port must be auto, false or a port number (1-65535); got %r." % (health,))
    parsed = parse('\n'.join(line for dummy, line in _template_lines(options, config_lines)))
    others = [value for dummy, dummy, key, value in parsed
              if _resolve(key.lstrip('/'), _SOCKS_NAMES) and value is not None]
    values = ([] if socks_port is None or str(socks_port) == '' else [str(socks_port)]) + others
    non_anonymous = any(_resolve(key, _NON_ANONYMOUS_NAMES) and value == '1' for dummy, dummy, key, value in parsed)
    if non_anonymous:
        if word == 'auto':
            return own, ('non-anonymous onion services: tor refuses a SocksPort, the reach probe is not run')
        raise ValueError('tor_health_socks_port=%s: tor refuses a SocksPort with HiddenServiceNonAnonymousMode; set '
                         'tor_health_socks_port: false (the health check then says reach was not checked).' % health)
    if any(v.split()[:1] == ['0'] for v in others):
        if word == 'auto':
            return own, 'SocksPort 0 in tor_options or tor_config_lines: no SocksPort, the reach probe is not run'
        raise ValueError('tor_health_socks_port=%s: tor_options or tor_config_lines set SocksPort 0, and tor refuses '
                         'a SocksPort beside it; set the SocksPort in tor_socks_port instead.' % health)
    if word == 'auto':
        if not values or any(_loopback_tcp(v) for v in values):
            return own, None
        port = 'auto'
    else:
        port = word
        if any(v.split()[0] in (port, '127.0.0.1:' + port) for v in values if v.split()):
            return own, None
    keep = [line for line in own if str(socks_port).strip() != '0']
    # with no SocksPort of its own the torrc keeps the defaults torrc's (Debian: 9050 and a unix socket): '+' adds
    # to them; tor refuses a port beside 'SocksPort 0', which is therefore not written
    plus = '+' if not values else ''
    return keep + [plus + HEALTH_SOCKS_LINE % port], 'a SocksPort on 127.0.0.1 for the health check\'s reach probe'
