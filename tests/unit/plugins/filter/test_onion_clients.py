# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_clients filter: onion_services[].clients checked and flattened."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.onion_clients import FilterModule, onion_clients
from ansible_collections.onionlab.tor.plugins.filter.x25519_public_key import x25519_public_key
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion

PRIV_A, PUB_A = onion.generate_client_keypair()
PRIV_B, PUB_B = onion.generate_client_keypair()
PORTS = [{'port': 80, 'target_port': 8080}]


def _svc(clients, **kw):
    return dict({'name': 'admin', 'ports': PORTS, 'clients': clients}, **kw)


def test_flattened_entries():
    out = onion_clients({'web1': [{'name': 'public', 'ports': PORTS},
                                  _svc([{'name': 'alice', 'hosts': ['a'], 'key': 2},
                                        {'name': 'bob', 'hosts': ['b'], 'state': 'absent'},
                                        {'name': 'carol', 'public_key': PUB_B.lower()}])]},
                        backup_dir='/esc', inventory=['a', 'b', 'web1'])
    assert [(e['name'], e['key'], e['state'], e['hosts'], e['needs_key']) for e in out] == [
        ('alice', 2, 'present', ['a'], True), ('bob', 1, 'absent', ['b'], False), ('carol', 1, 'present', [], False)]
    assert out[0]['escrow'] == '/esc/web1/admin/clients/alice.2.x25519'
    assert out[0]['id'] == 'web1/admin/alice' and out[0]['server'] == 'web1' and out[0]['service'] == 'admin'
    assert out[2]['public_key'] == PUB_B
    assert FilterModule().filters()['onion_clients'] is onion_clients


def test_authorized_mapping():
    services = {'web1': [_svc([{'name': 'alice', 'hosts': ['a']}, {'name': 'bob', 'state': 'absent'},
                               {'name': 'carol', 'public_key': PUB_B}])]}
    out = onion_clients(services, backup_dir='/esc', private_keys={'web1/admin/alice': PRIV_A})
    assert out == {'admin': [{'name': 'alice', 'public_key': x25519_public_key(PRIV_A)},
                             {'name': 'carol', 'public_key': PUB_B}]}
    assert x25519_public_key(PRIV_A) == PUB_A


def test_absent_service_makes_its_clients_absent():
    out = onion_clients({'web1': [_svc([{'name': 'alice', 'hosts': ['a']}], state='absent')]}, backup_dir='/e')
    assert out[0]['state'] == 'absent' and not out[0]['needs_key']


BAD = [
    ([_svc([{'name': 'alice', 'hosts': ['a']}], authorized_clients=[{'name': 'x'}])], 'mutually exclusive'),
    ([_svc([{'name': 'a' * 17}])], 'name must be 1 to 16'),
    ([_svc([{'name': 'al/ice'}])], 'name must be 1 to 16'),
    ([_svc([{'name': ''}])], 'name must be 1 to 16'),
    ([_svc([{'hosts': ['a']}])], 'name must be 1 to 16'),
    ([_svc([{'name': 'alice'}, {'name': 'alice'}])], 'given twice'),
    ([_svc([{'name': 'alice', 'key': 0}])], 'key must be a whole number'),
    ([_svc([{'name': 'alice', 'key': 'two'}])], 'key must be a whole number'),
    ([_svc([{'name': 'alice', 'key': True}])], 'key must be a whole number'),
    ([_svc([{'name': 'alice', 'hosts': 'a'}])], 'hosts must be a list'),
    ([_svc([{'name': 'alice', 'hosts': ['nope']}])], 'hosts not in the inventory: nope'),
    ([_svc([{'name': 'alice', 'public_key': 'A' * 51}])], 'public_key is not an x25519 public key'),
    ([_svc([{'name': 'alice', 'public_key': PUB_A, 'hosts': ['a']}])], 'public_key and hosts are mutually'),
    ([_svc([{'name': 'alice', 'public_key': PUB_A, 'key': 2}])], 'public_key and key are mutually'),
    ([_svc([{'name': 'alice', 'hots': ['a']}])], 'unknown key'),
    ([_svc([{'name': 'alice', 'state': 'gone'}])], 'state must be present or absent'),
    ([_svc([{'name': 'alice', 'state': 'absent'}])], 'every client is absent'),
    ([_svc({'name': 'alice'})], 'clients must be a list'),
    ([_svc(['alice'])], 'each client must be a dict'),
    ([dict(_svc([{'name': 'alice'}]), name='../x')], 'needs a name'),
    ('notalist', 'onion_services must be a list'),
]


@pytest.mark.parametrize('services,expected', BAD)
def test_bad_input_is_one_message(services, expected):
    with pytest.raises(AnsibleFilterError) as info:
        onion_clients({'web1': services}, backup_dir='/e', inventory=['a', 'web1'])
    message = str(info.value)
    assert message.startswith('onion_clients: ') and expected in message, message
    assert '\n' not in message


def test_key_material_never_in_messages():
    with pytest.raises(AnsibleFilterError) as info:
        onion_clients({'web1': [_svc([{'name': 'alice', 'public_key': PUB_A[:-2]}])]}, backup_dir='/e')
    assert PUB_A[:-2] not in str(info.value)
    bad_private = PRIV_A[:-1] + ('1' if PRIV_A[-1] != '1' else '9')
    with pytest.raises(AnsibleFilterError) as info:
        onion_clients({'web1': [_svc([{'name': 'alice', 'hosts': ['a']}])]}, backup_dir='/e',
                      private_keys={'web1/admin/alice': bad_private})
    assert 'client alice' in str(info.value) and bad_private[:10] not in str(info.value)
    with pytest.raises(AnsibleFilterError, match='no private key'):
        onion_clients({'web1': [_svc([{'name': 'alice', 'hosts': ['a']}])]}, backup_dir='/e', private_keys={})


def test_input_and_backup_dir_required():
    with pytest.raises(AnsibleFilterError, match='must be a dict'):
        onion_clients([], backup_dir='/e')
    with pytest.raises(AnsibleFilterError, match='backup_dir'):
        onion_clients({}, backup_dir='')


ADDRESS = '3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd'


def test_host_mode_picks_this_hosts_clients_with_addresses(tmp_path):
    services = {'web1': [_svc([{'name': 'alice', 'hosts': ['a']}, {'name': 'bob', 'hosts': ['b'], 'state': 'absent'}])],
                'web2': [dict(_svc([{'name': 'alice', 'hosts': ['a'], 'key': 3}]), name='wiki')],
                'a': None}
    (tmp_path / 'web2' / 'wiki').mkdir(parents=True)
    (tmp_path / 'web2' / 'wiki' / 'hostname').write_text(ADDRESS.upper() + '.onion\n')
    out = onion_clients(services, backup_dir=str(tmp_path), host='a', addresses={'web1': {'admin': ADDRESS}})
    assert [(e['server'], e['service'], e['name'], e['key'], e['address']) for e in out] == [
        ('web1', 'admin', 'alice', 1, ADDRESS + '.onion'), ('web2', 'wiki', 'alice', 3, ADDRESS + '.onion')]
    (bob,) = onion_clients(services, backup_dir=str(tmp_path), host='b', addresses={'web1': {'admin': ADDRESS}})
    assert bob['state'] == 'absent' and bob['name'] == 'bob'
    assert onion_clients(services, backup_dir=str(tmp_path), host='nobody', addresses={}) == []


def test_host_mode_unknown_or_bad_address(tmp_path):
    services = {'web1': [_svc([{'name': 'alice', 'hosts': ['a']}])]}
    with pytest.raises(AnsibleFilterError) as info:
        onion_clients(services, backup_dir=str(tmp_path), host='a', addresses={})
    assert "address is not known" in str(info.value) and str(tmp_path / 'web1' / 'admin' / 'hostname') in str(info.value)
    with pytest.raises(AnsibleFilterError, match='not a v3 onion address'):
        onion_clients(services, backup_dir=str(tmp_path), host='a', addresses={'web1': {'admin': ADDRESS[:-1] + 'a'}})


def test_host_mode_pending_gives_null_address_instead_of_failing(tmp_path):
    """check mode (pending=True): the server's service is made by the real run, no address yet."""
    services = {'web1': [_svc([{'name': 'alice', 'hosts': ['a']}])]}
    (entry,) = onion_clients(services, backup_dir=str(tmp_path), host='a', addresses={}, pending=True)
    assert entry['address'] is None and entry['server'] == 'web1' and entry['state'] == 'present'
    with pytest.raises(AnsibleFilterError, match='not a v3 onion address'):
        onion_clients(services, backup_dir=str(tmp_path), host='a', addresses={'web1': {'admin': ADDRESS[:-1] + 'a'}},
                      pending=True)


OLD_ADDRESS = onion.service_id_of_key(onion.key_blob(bytes(bytearray([72] + [1] * 30 + [64] + [7] * 32))))


def test_service_key_rotation_credentials_for_both_addresses_then_the_old_one_removed(tmp_path):
    """A service with key: 2 and an overlap: the client gets a credential for the new address
    (directory admin.k2) and for the old one (admin) while tor serves it; once the overlap is over,
    the old one is taken away, the new one stays; the client's key (generation 1) is one and the same."""
    clients = [{'name': 'alice', 'hosts': ['a']}]
    during = {'web1': [_svc(clients, key=2, previous_until='2999-01-01')]}
    out = onion_clients(during, backup_dir=str(tmp_path), host='a', addresses={'web1': {'admin': ADDRESS}},
                        previous_addresses={'web1': {'admin': OLD_ADDRESS}})
    assert [(e['address'], e['state'], e['escrow']) for e in out] == [
        (ADDRESS + '.onion', 'present', str(tmp_path / 'web1' / 'admin' / 'clients' / 'alice.1.x25519')),
        (OLD_ADDRESS + '.onion', 'present', str(tmp_path / 'web1' / 'admin' / 'clients' / 'alice.1.x25519'))]
    # the server not in this play: both addresses from the escrow, one hostname file per generation
    for directory, address in (('admin.k2', ADDRESS), ('admin', OLD_ADDRESS)):
        (tmp_path / 'web1' / directory).mkdir(parents=True)
        (tmp_path / 'web1' / directory / 'hostname').write_text(address + '.onion\n')
    assert [e['address'] for e in onion_clients(during, backup_dir=str(tmp_path), host='a')] == \
        [ADDRESS + '.onion', OLD_ADDRESS + '.onion']
    after = {'web1': [_svc(clients, key=2, previous_until='2000-01-01')]}
    out = onion_clients(after, backup_dir=str(tmp_path), host='a')
    assert [(e['address'], e['state']) for e in out] == [(ADDRESS + '.onion', 'present'),
                                                         (OLD_ADDRESS + '.onion', 'absent')]
    # the old address never known (no escrow file): nothing to take away, no error
    (tmp_path / 'web1' / 'admin' / 'hostname').unlink()
    assert [e['address'] for e in onion_clients(after, backup_dir=str(tmp_path), host='a')] == [ADDRESS + '.onion']
    # during the overlap the old address must be known
    with pytest.raises(AnsibleFilterError, match='previous key generation'):
        onion_clients(during, backup_dir=str(tmp_path), host='a')


@pytest.mark.parametrize('server', ['..', 'a/b', '.'])
def test_a_server_name_that_is_no_escrow_directory_is_refused(server):
    """The escrow keeps DIR/<server>/<service>/clients/...: a host name like '..' or 'a/b' would write outside."""
    with pytest.raises(AnsibleFilterError) as info:
        onion_clients({server: [_svc([{'name': 'alice', 'hosts': ['a']}])]}, backup_dir='/e', inventory=['a'])
    assert 'cannot name a directory of the escrow' in str(info.value), str(info.value)


def test_hosts_by_name_from_hostvars_as_the_role_passes_them(tmp_path):
    """The onion_client role passes groups['all'] and hostvars (issue 41: no dict/zip/map over hostvars in the
    role): each host's onion_services, onion_service_addresses and onion_service_previous_addresses read from it,
    the same result as the three dicts; a host without onion_services has none; a string input is refused."""
    clients = [{'name': 'alice', 'hosts': ['a']}]
    hostvars = {'web1': {'onion_services': [_svc(clients, key=2, previous_until='2999-01-01')],
                         'onion_service_addresses': {'admin': ADDRESS},
                         'onion_service_previous_addresses': {'admin': OLD_ADDRESS}, 'ansible_host': '10.0.0.1'},
                'a': {}, 'b': {'onion_services': None}}
    by_name = onion_clients(['web1', 'a', 'b'], backup_dir=str(tmp_path), host='a', hostvars=hostvars)
    as_dicts = onion_clients({'web1': hostvars['web1']['onion_services'], 'a': [], 'b': []},
                             backup_dir=str(tmp_path), host='a', inventory=['web1', 'a', 'b'],
                             addresses={'web1': {'admin': ADDRESS}},
                             previous_addresses={'web1': {'admin': OLD_ADDRESS}})
    assert by_name == as_dicts and [e['address'] for e in by_name] == [ADDRESS + '.onion', OLD_ADDRESS + '.onion']
    with pytest.raises(AnsibleFilterError, match='with hostvars, the input must be a list of inventory host names'):
        onion_clients('web1', backup_dir=str(tmp_path), hostvars=hostvars)


def test_host_mode_client_name_and_label_as_the_role_gives_and_prints_them(tmp_path):
    """Issue 41: the onion_client role passes item.client_name (null for a removal: omitted) and prints item.label,
    no Jinja of its own; no key in either."""
    services = {'web1': [_svc([{'name': 'alice', 'hosts': ['a']}, {'name': 'bob', 'hosts': ['a'], 'state': 'absent'}])]}
    alice, bob = onion_clients(services, backup_dir=str(tmp_path), host='a', addresses={'web1': {'admin': ADDRESS}})
    assert (alice['client_name'], bob['client_name']) == ('alice', None)
    assert alice['label'] == 'web1/admin/alice %s.onion (present)' % ADDRESS
    assert bob['label'] == 'web1/admin/bob %s.onion (absent)' % ADDRESS
    (pending,) = onion_clients({'web1': [_svc([{'name': 'alice', 'hosts': ['a']}])]},
                               backup_dir=str(tmp_path), host='a', addresses={}, pending=True)
    assert pending['label'] == ('web1/admin/alice address not known yet: the service is made by the real run on web1 '
                                '(present)')


@pytest.mark.parametrize('backup_dir, playbook_dir, escrow', [
    (['/srv/client-keys', '/srv/keys'], '/play', '/srv/client-keys'),   # onion_client_backup_dir
    ([None, '/srv/keys'], '/play', '/srv/keys'),                         # else onion_service_backup_dir
    (['', None], '/play', '/play/onion-keys'),                           # else the onion_service role's default
    ('/srv/keys', None, '/srv/keys'),                                    # one directory, as before
])
def test_the_escrow_is_the_first_directory_set(tmp_path, backup_dir, playbook_dir, escrow):
    """The onion_client role passes [onion_client_backup_dir, onion_service_backup_dir] and playbook_dir."""
    services = {'web1': [_svc([{'name': 'alice', 'hosts': ['a']}])]}
    (entry,) = onion_clients(services, backup_dir=backup_dir, playbook_dir=playbook_dir, host='a',
                             addresses={'web1': {'admin': ADDRESS}})
    assert entry['escrow'] == escrow + '/web1/admin/clients/alice.1.x25519'


def test_no_escrow_directory_at_all_is_refused():
    with pytest.raises(AnsibleFilterError, match='backup_dir'):
        onion_clients({}, backup_dir=[None, None])
