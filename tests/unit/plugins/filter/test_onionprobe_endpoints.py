# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onionprobe role's endpoints (filter onionprobe_endpoints): read from hostvars by host name, as the role
passes them (issue 41: no Jinja loop over hostvars in the role), the same as from a dict; the role's extra
endpoints merged and named in the report it prints."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.onionprobe_endpoints import onionprobe_endpoints
from ansible_collections.onionlab.tor.plugins.module_utils._tor.onion import onion_address

A1, FRONT = (onion_address(bytes([n]) * 32) + '.onion' for n in (1, 4))
HOSTVARS = {
    'web1': {'onion_services': [{'name': 'shop', 'ports': [80, 443]}, {'name': 'ssh', 'ports': [22]}],
             'onion_service_addresses': {'shop': A1}, 'ansible_host': '10.0.0.5', 'unrelated': 'x'},
    'lb': {'onionbalance_address': FRONT, 'onionbalance_backends': ['web1']},
    'monitor': {},
}


def test_hosts_by_name_from_hostvars_the_same_as_a_dict(tmp_path):
    by_name = onionprobe_endpoints(['web1', 'lb', 'monitor', 'not-in-inventory'], str(tmp_path), hostvars=HOSTVARS)
    as_dict = onionprobe_endpoints(dict((h, HOSTVARS[h]) for h in ('web1', 'lb', 'monitor')), str(tmp_path))
    assert by_name == as_dict
    assert sorted(by_name['endpoints']) == ['lb/frontend:80', 'web1/shop:443', 'web1/shop:80']
    assert by_name['report'] == {'probed': ['web1/shop:80', 'web1/shop:443', 'lb/frontend:80'],
                                 'not probed': [{'host': 'web1', 'service': 'ssh', 'reason': (
                                     'no web port (80 or 443): Onionprobe probes HTTP(S) only; name the port in '
                                     'onionprobe_checks.ssh.ports')}]}


def test_extra_endpoints_added_and_named_in_the_report(tmp_path):
    extra = {'outside': {'address': FRONT, 'protocol': 'http', 'port': 80, 'paths': [{'path': '/'}]},
             'web1/shop:80': {'address': A1, 'protocol': 'http', 'port': 80, 'paths': [{'path': '/own'}]}}
    out = onionprobe_endpoints(['web1'], str(tmp_path), hostvars=HOSTVARS, extra_endpoints=extra)
    assert out['endpoints']['outside'] == extra['outside']
    assert out['endpoints']['web1/shop:80']['paths'] == [{'path': '/own'}]       # the operator's entry wins
    assert out['report']['probed'] == ['web1/shop:443', 'outside', 'web1/shop:80']


@pytest.mark.parametrize('hosts, options, message', [
    ('web1', {'hostvars': HOSTVARS}, 'with hostvars, the input must be a list of inventory host names, got str'),
    (['web1'], {}, 'the input must be a dict of host to its variables'),
    (['web1'], {'hostvars': HOSTVARS, 'extra_endpoints': ['x']}, 'extra_endpoints must be a dict'),
])
def test_bad_input_one_message(tmp_path, hosts, options, message):
    with pytest.raises(AnsibleFilterError, match=message):
        onionprobe_endpoints(hosts, str(tmp_path), **options)
