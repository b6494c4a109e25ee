# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service key rotation as data: each service of ``onion_services`` becomes the key generations
tor serves (the current one, and the previous one while its overlap lasts)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onion_service_generations
short_description: The key generations of onion services that tor serves, for service key rotation
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Takes the O(_input) list of the P(onionlab.tor.onion_service#role) role (C(onion_services)) and returns one
    entry per key generation to apply, each a copy of its service with C(name) set to the generation's directory
    name and these keys added: C(service) (the service's own name), C(key) (the generation) and C(generation)
    (V(current) or V(previous))."
  - A service without C(key), or with C(key=1), has one generation, in the directory C(name).
    With C(key=N) (N of 2 or more) the current generation lives in C(name.kN), a new directory (a new key, so a
    new address); generation N-1 (C(name), or C(name.k<N-1>)) is the previous one.
  - The previous generation is served (state V(present)) while the time is before C(previous_until); from then
    on, or when C(previous_until) is not given, it is V(absent) with C(purge=false); tor stops serving it and its
    key stays on the host and in the escrow. Older generations are not listed (the role's pruning removes them
    from tor, keys kept).
  - A service with C(state=absent) has both generations absent.
  - Each entry of a service's C(ports), in any shape the role takes (a port, C("PORT"), C("PORT:TARGET_PORT"),
    C("PORT:ADDRESS:TARGET_PORT"), C("PORT:unix:/path") or a dict), is given as a dict with C(port) and, where
    the entry names them, C(target_address) and C(target_port) (a port alone goes to the same port on 127.0.0.1,
    as in P(onionlab.tor.tor_hidden_service#module)). An entry of none of these shapes is left as it is (the
    module refuses it, naming the shapes).
  - Fails, naming the service, on a malformed C(name), C(key) or C(previous_until), and when two entries would
    use one directory.
options:
  _input:
    description: The services, as the role's C(onion_services).
    type: list
    elements: dict
    required: true
  now:
    description:
      - The time to compare C(previous_until) with, C(YYYY-MM-DDTHH:MM:SSZ) in UTC. The current time when not given.
    type: str
"""

EXAMPLES = r"""
- name: What tor will serve
  ansible.builtin.debug:
    msg: "{{ onion_services | onionlab.tor.onion_service_generations }}"
  vars:
    onion_services:
      - name: shop
        ports: [{port: 80, target_port: 8080}]
        key: 2
        previous_until: "2027-01-31"
# -> [{name: shop.k2, service: shop, key: 2, generation: current, ...},
#     {name: shop, service: shop, key: 1, generation: previous, state: present, purge: false, ...}]
"""

RETURN = r"""
_value:
  description: One entry per generation, current before previous, services in their order.
  type: list
  elements: dict
"""

import datetime
import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.onionlab.tor.plugins.module_utils._tor.hidden_service import ServiceConfigError, port_entry

NAME_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$')
GENERATION_SUFFIX_RE = re.compile(r'\.k[0-9]+$')
UNTIL_RE = re.compile(r'^(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d))?Z?)?$')


def directory(name, key):
    """The directory name of generation key of the service name."""
    return name if key == 1 else '%s.k%d' % (name, key)


def parse_until(value, service):
    """previous_until as an aware UTC datetime; a date alone means its start (00:00 UTC)."""
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
    if isinstance(value, datetime.date):
        return datetime.datetime(value.year, value.month, value.day, tzinfo=datetime.timezone.utc)
    text = to_text(value).strip()
    match = UNTIL_RE.match(text)
    if not match:
        raise AnsibleFilterError("onion service %r: previous_until must be a UTC date or time such as 2027-01-31 or "
                                 "2027-01-31T12:00:00Z, not %r" % (service, text[:40]))
    parts = [int(p) if p else 0 for p in match.groups()]
    try:
        return datetime.datetime(*parts, tzinfo=datetime.timezone.utc)
    except ValueError as e:
        raise AnsibleFilterError("onion service %r: previous_until %r is no date: %s" % (service, text, e))


def _key(service, name):
    key = service.get('key', 1)
    if key is None:
        return 1
    if isinstance(key, bool) or not isinstance(key, (int, str)) or not to_text(key).isdigit() or int(key) < 1:
        raise AnsibleFilterError("onion service %r: key must be a whole number of 1 or more (the key generation), "
                                 "not %r" % (name, key))
    return int(key)


def _port(entry):
    """One ports entry as the dict tor_hidden_service makes of it (80 -> {port: 80}); as it is when it has none of
    the shapes (the module refuses it, with its message)."""
    try:
        return port_entry(entry)
    except ServiceConfigError:
        return entry


def generations(services, now=None):
    if services is None:
        return []
    if not isinstance(services, (list, tuple)):
        raise AnsibleFilterError('onion_service_generations expects a list of services, not %s'
                                 % type(services).__name__)
    now = parse_until(now, 'now') if now is not None else datetime.datetime.now(datetime.timezone.utc)
    out, used = [], {}
    for index, service in enumerate(services):
        if not isinstance(service, dict):
            raise AnsibleFilterError('onion_services[%d] is not a dict' % index)
        name = service.get('name')
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise AnsibleFilterError("onion_services[%d]: name must be 1-128 letters, digits, '_', '-' or '.', "
                                     "not starting with '.' or '-', not %r" % (index, name))
        key = _key(service, name)
        until = service.get('previous_until')
        if key > 1 and GENERATION_SUFFIX_RE.search(name):
            raise AnsibleFilterError("onion service %r: a name ending in .k<N> is kept for key generations" % name)
        until = parse_until(until, name) if until not in (None, '') else None
        present = service.get('state', 'present') == 'present'
        if isinstance(service.get('ports'), (list, tuple)):
            # the one place where the shapes of a port become one (the summary, the module and the filters after
            # this read entry['port'])
            service = dict(service, ports=[_port(entry) for entry in service['ports']])
        current = dict(service, name=directory(name, key), service=name, key=key, generation='current')
        entries = [current]
        if key > 1:
            served = present and until is not None and now < until
            previous = dict(service, name=directory(name, key - 1), service=name, key=key - 1,
                            generation='previous', state='present' if served else 'absent')
            if not served:
                previous['purge'] = False
            entries.append(previous)
        for entry in entries:
            if entry['name'] in used:
                raise AnsibleFilterError('onion services %r and %r would both use the directory %r'
                                         % (used[entry['name']], name, entry['name']))
            used[entry['name']] = name
        out.extend(entries)
    return out


class FilterModule(object):
    def filters(self):
        return {'onion_service_generations': generations}
