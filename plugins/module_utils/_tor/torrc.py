# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tor role's torrc decisions as plain data (no Ansible, no I/O): the non-anonymous guard,
what a new torrc drops from the current one (as tor reads both, or line by line as written), the
messages about it, tor's own error lines, and secret values hidden."""

from __future__ import annotations

import json
import re

# options whose values are secrets: named, never shown
_SECRET_RE = re.compile(r'^((?i:HTTPS?ProxyAuthenticator|Socks5ProxyUsername|Socks5ProxyPassword'
                        r'|HashedControl(?:Session)?Password)) .*$')
_SECRET_LINE_RE = re.compile(r'^([ \t]*(?i:HTTPS?ProxyAuthenticator|Socks5ProxyUsername|Socks5ProxyPassword'
                             r'|HashedControl(?:Session)?Password))[ \t]+\S.*$', re.MULTILINE)
_WARN_RE = re.compile(r' \[(warn|err)\] ')
_LOG_LINE_RE = re.compile(r'^[A-Z][a-z]{2} [ 0-9]?[0-9] [0-9:.]+ \[[a-z]+\] ')
# one item per onion service (its HiddenServiceDir line with the lines of that service) or per other line
_ITEMS_RE = re.compile(r'^HiddenServiceDir .*(?:\nHiddenService(?!Dir |SingleHopMode |NonAnonymousMode |Statistics )'
                       r'\S* .*)*|^(?!HiddenServiceDir ).+$', re.MULTILINE)
_MARKER_RE = re.compile(r'^# Written by the onionlab\.tor\.tor role', re.MULTILINE)
_NON_ANONYMOUS = ('hiddenservicesinglehopmode', 'hiddenservicenonanonymousmode')
_NON_ANONYMOUS_LINE_RE = re.compile(r'^hiddenservice(singlehop|nonanonymous)mode[ \t]+1$')


def non_anonymous_problem(options, config_lines, socks_port, acknowledged):
    """The refusal message when tor_options / tor_config_lines make the onion services non-anonymous
    without tor_non_anonymous_onion_services, not both options, or with a SocksPort; else None."""
    keys = [str(k).lower() for k, v in (options or {}).items()
            if not isinstance(v, (list, dict)) and v in (1, True, '1') and str(k).lower() in _NON_ANONYMOUS]
    keys += [line for line in (str(raw).strip().lower() for raw in (config_lines or []))
             if _NON_ANONYMOUS_LINE_RE.match(line)]
    if not keys or (acknowledged and len(keys) == 2 and str(socks_port) == '0'):
        return None
    return ("HiddenServiceSingleHopMode / HiddenServiceNonAnonymousMode make every onion service of this tor "
            "non-anonymous: the server's location is no longer hidden, and a key used so can never be used for a "
            "hidden service again. They need tor_non_anonymous_onion_services=true, both options set to 1 together, "
            "and tor_socks_port=0 (tor refuses a SocksPort in that mode). Found: %s; "
            "tor_non_anonymous_onion_services=%s; tor_socks_port=%s."
            % (', '.join(keys), bool(acknowledged), 'unset' if socks_port is None else socks_port))


def written_by_role(text):
    return bool(_MARKER_RE.search(text))


def hide_secrets(text):
    """A torrc's text with the values of secret options replaced (for a diff)."""
    return _SECRET_LINE_RE.sub(r'\1 (value hidden)', text)


def lines_as_written(text):
    """A torrc's option lines as written: trimmed, comments and blank lines out, blanks folded."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith('#'):
            out.append(re.sub(r'[ \t]+', ' ', line))
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
    new_items = set(_ITEMS_RE.findall('\n'.join(new_lines)))
    return [_SECRET_RE.sub(r'\1 (value hidden)', item) for item in _ITEMS_RE.findall('\n'.join(current_lines))
            if item not in new_items]


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
    """What the run says when the new torrc drops something (taken over, or the role's own torrc)."""
    if ours:
        return '%s (written by this role) is replaced; dropped from it%s: %s' % (
            config_file, ' (its onion services go offline)' if _drops_services(items) else '', words)
    return 'tor_torrc_takeover=true: %s is replaced; dropped from it: %s' % (config_file, words)
