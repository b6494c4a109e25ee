# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_service_generations filter: service key rotation as data."""

import copy
import datetime

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.onion_service_generations import generations, FilterModule

PORTS = [{'port': 80, 'target_port': 8080}]
BEFORE = '2027-01-30T23:59:59Z'
AFTER = '2027-01-31T00:00:00Z'


def _names(out):
    return [(e['name'], e['service'], e['key'], e['generation'], e.get('state', 'present')) for e in out]


def test_no_key_is_one_generation_in_its_own_directory():
    out = generations([{'name': 'web', 'ports': PORTS}], now=BEFORE)
    assert _names(out) == [('web', 'web', 1, 'current', 'present')]
    assert out[0]['ports'] == PORTS


def test_rotation_serves_both_until_the_time_then_removes_the_old_keeping_its_keys():
    svc = {'name': 'shop', 'ports': PORTS, 'key': 2, 'previous_until': '2027-01-31', 'clients': [{'name': 'a'}]}
    during = generations([svc], now=BEFORE)
    assert _names(during) == [('shop.k2', 'shop', 2, 'current', 'present'), ('shop', 'shop', 1, 'previous', 'present')]
    assert during[1]['ports'] == PORTS and during[1]['clients'] == [{'name': 'a'}]
    after = generations([svc], now=AFTER)
    assert _names(after) == [('shop.k2', 'shop', 2, 'current', 'present'), ('shop', 'shop', 1, 'previous', 'absent')]
    assert after[1]['purge'] is False
    # the next rotation: generation 3 in shop.k3, shop.k2 the previous one
    third = generations([dict(svc, key=3, previous_until='2027-06-01T12:00:00Z')], now=AFTER)
    assert _names(third) == [('shop.k3', 'shop', 3, 'current', 'present'),
                             ('shop.k2', 'shop', 2, 'previous', 'present')]


def test_without_previous_until_the_old_generation_goes_at_once():
    out = generations([{'name': 'shop', 'key': 2}], now=BEFORE)
    assert _names(out)[1] == ('shop', 'shop', 1, 'previous', 'absent')


def test_absent_service_has_both_generations_absent():
    out = generations([{'name': 'shop', 'key': 2, 'previous_until': '2099-01-01', 'state': 'absent'}], now=BEFORE)
    assert [e['state'] for e in out] == ['absent', 'absent']


def test_times_and_dates():
    svc = {'name': 's', 'key': '2', 'previous_until': '2027-01-31 06:30'}
    assert generations([svc], now='2027-01-31T06:29:59Z')[1]['state'] == 'present'
    assert generations([svc], now='2027-01-31T06:30:00Z')[1]['state'] == 'absent'
    svc['previous_until'] = datetime.date(2027, 1, 31)     # YAML gives a date for an unquoted 2027-01-31
    assert generations([svc], now=BEFORE)[1]['state'] == 'present'
    # without now: the current time (a date far ahead keeps the old one)
    svc['previous_until'] = '2999-01-01'
    assert generations([svc])[1]['state'] == 'present'


@pytest.mark.parametrize('services, message', [
    ([{'name': 'x', 'key': 0}], 'key must be a whole number'),
    ([{'name': 'x', 'key': 'two'}], 'key must be a whole number'),
    ([{'name': 'x', 'key': True}], 'key must be a whole number'),
    ([{'name': 'x', 'key': 2, 'previous_until': 'next week'}], 'previous_until must be a UTC date'),
    ([{'name': 'x', 'key': 2, 'previous_until': '2027-02-30'}], 'is no date'),
    ([{'name': '../etc'}], 'name must be'),
    ([{'name': 'a\nb'}], 'name must be'),
    ([{'ports': PORTS}], 'name must be'),
    ([{'name': 'x.k2', 'key': 2}], 'kept for key generations'),
    ([{'name': 'x', 'key': 2}, {'name': 'x'}], "would both use the directory 'x'"),
    ('x', 'expects a list'),
    ([['x']], 'is not a dict'),
])
def test_bad_input_one_message(services, message):
    with pytest.raises(AnsibleFilterError) as err:
        generations(services, now=BEFORE)
    assert message in str(err.value)
    assert '\n' not in str(err.value).replace('a\\nb', '')


def test_registered():
    assert FilterModule().filters()['onion_service_generations'] is generations


@pytest.mark.parametrize('ports, made', [
    ([80], [{'port': 80}]),
    (['80'], [{'port': '80'}]),
    (['443:8443', 22], [{'port': '443', 'target_port': '8443'}, {'port': 22}]),
    (['80:[::1]:8080'], [{'port': '80', 'target_address': '[::1]', 'target_port': '8080'}]),
    (['80:unix:/run/web.sock'], [{'port': '80', 'target_address': 'unix:/run/web.sock'}]),
    (PORTS, PORTS),
    # none of the shapes: left for the module to refuse with its message
    (['80/tcp', True, {'port': 80, 'proto': 'tcp'}], ['80/tcp', True, {'port': 80, 'proto': 'tcp'}]),
])
def test_every_ports_shape_becomes_a_dict_in_both_generations(ports, made):
    """Issue 26 A9: ports: [80] passed the role's spec, then the summary read entry.port of an int."""
    svc = {'name': 'shop', 'ports': ports, 'key': 2, 'previous_until': '2027-01-31'}
    given = copy.deepcopy(svc)
    out = generations([svc], now=BEFORE)
    assert [e['ports'] for e in out] == [made, made]
    assert svc == given     # the play's variable is not changed
