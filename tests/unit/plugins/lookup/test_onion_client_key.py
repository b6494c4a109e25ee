# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_client_key lookup: client keys in the controller's escrow, generated once."""

import os
import stat
import subprocess
import sys
import textwrap
import time

import pytest
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader

from ansible_collections.onionlab.tor.plugins.filter.x25519_public_key import x25519_public_key
from ansible_collections.onionlab.tor.plugins.lookup import onion_client_key as ock
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion

B32 = set('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567')


def _lookup(*terms, basedir=None):
    loader = DataLoader()
    if basedir:
        loader.set_basedir(str(basedir))
    return ock.LookupModule(loader=loader).run(list(terms), variables={})


def _mode(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_generates_once_then_reads_with_private_modes(tmp_path):
    path = tmp_path / 'escrow' / 'web1' / 'admin' / 'clients' / 'alice.1.x25519'
    (key,) = _lookup(str(path))
    assert len(key) == 52 and set(key) <= B32
    raw = onion.unb32(key, 32, 'key')
    assert raw[0] & 7 == 0 and raw[31] & 128 == 0 and raw[31] & 64   # clamped
    assert path.read_text() == key + '\n'
    assert _mode(path) == 0o600
    for d in (path.parent, path.parent.parent, path.parent.parent.parent, tmp_path / 'escrow'):
        assert _mode(d) == 0o700, d
    assert _lookup(str(path)) == [key]                     # read back, never rewritten
    assert [p.name for p in path.parent.iterdir()] == ['alice.1.x25519']   # no temporary file left
    assert len(x25519_public_key(key)) == 52


def test_several_terms_and_a_relative_path(tmp_path):
    keys = _lookup('a.x25519', str(tmp_path / 'b.x25519'), basedir=tmp_path)
    assert len(set(keys)) == 2
    assert (tmp_path / 'a.x25519').read_text().strip() == keys[0]


def test_existing_key_is_returned_upper_case_and_kept(tmp_path):
    key = onion.b32(os.urandom(32))
    path = tmp_path / 'k'
    path.write_text(key.lower() + '\n')
    assert _lookup(str(path)) == [key]
    assert path.read_text() == key.lower() + '\n'


@pytest.mark.parametrize('content', [b'', b'not a key\n', b'A' * 51 + b'\n', b'\xff\xfe' * 30,
                                     b'A' * 52 + b'\nextra line\n', b'1' * 52])
def test_malformed_file_is_one_message_without_the_content(tmp_path, content):
    path = tmp_path / 'bad.x25519'
    path.write_bytes(content)
    with pytest.raises(AnsibleError) as info:
        _lookup(str(path))
    message = str(info.value)
    assert message.startswith('onion_client_key: the key file %s does not hold a client key' % path)
    assert '\n' not in message
    if len(content.strip()) > 3:
        assert content.strip().decode('ascii', 'replace')[:20] not in message
    assert path.read_bytes() == content                    # nothing written


def test_a_key_one_character_off_is_refused_and_not_echoed(tmp_path):
    key = onion.b32(os.urandom(32))
    bad = key[:-1] + ('1' if key[-1] != '1' else '8')
    path = tmp_path / 'k'
    path.write_text(bad)
    with pytest.raises(AnsibleError) as info:
        _lookup(str(path))
    assert bad not in str(info.value) and key[:10] not in str(info.value)


def test_bad_paths(tmp_path):
    for term in ('', '   ', 'a\nb', 'a\x00b'):
        with pytest.raises(AnsibleError, match='onion_client_key: '):
            _lookup(term, basedir=tmp_path)
    with pytest.raises(AnsibleError, match='is a directory'):
        _lookup(str(tmp_path))
    (tmp_path / 'file').write_text('x')
    with pytest.raises(AnsibleError, match='onion_client_key: cannot (read the key file|create the directory)'):
        _lookup(str(tmp_path / 'file' / 'sub' / 'k'))
    os.symlink(str(tmp_path / 'nowhere'), str(tmp_path / 'link'))
    with pytest.raises(AnsibleError, match='cannot read the key file'):
        _lookup(str(tmp_path / 'link'))
    assert not (tmp_path / 'nowhere').exists()


def test_two_processes_agree_on_one_key(tmp_path):
    """Many evaluations at once (two processes, each racing several rounds): every one returns the
    key that got into place first, and the file is never replaced."""
    repo_collections = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..',
                                    '.build', 'collections')
    script = textwrap.dedent('''
        import sys, time
        sys.path.insert(0, %r)
        from ansible_collections.onionlab.tor.plugins.lookup.onion_client_key import get_or_create
        start = float(sys.argv[1])
        while time.time() < start:
            pass
        print(",".join(get_or_create(sys.argv[2] + "/k%%d" %% i) for i in range(40)))
    ''' % os.path.abspath(repo_collections))
    start = str(time.time() + 1.0)
    procs = [subprocess.Popen([sys.executable, '-c', script, start, str(tmp_path / 'race')],
                              stdout=subprocess.PIPE) for dummy in range(2)]
    outs = []
    for p in procs:
        out = p.communicate(timeout=60)[0]
        assert p.returncode == 0
        outs.append(out.decode().strip().split(','))
    assert outs[0] == outs[1]
    assert len(set(outs[0])) == 40
    for i, key in enumerate(outs[0]):
        assert (tmp_path / 'race' / ('k%d' % i)).read_text().strip() == key
    assert sorted(os.listdir(str(tmp_path / 'race'))) == sorted('k%d' % i for i in range(40))


# -- a credential of the onion_clients filter (the onion_client role's one lookup per credential) --------------------
def _credential(tmp_path, state='present', id='web1/admin/alice'):
    return {'id': id, 'state': state, 'escrow': str(tmp_path / 'web1' / 'admin' / 'clients' / 'alice.1.x25519'),
            'address': 'x.onion', 'name': 'alice'}


def _lookup_credential(credential, **options):
    return ock.LookupModule(loader=DataLoader()).run([credential], variables={}, **options)


def test_a_credential_key_from_the_escrow_made_there(tmp_path):
    credential = _credential(tmp_path)
    (key,) = _lookup_credential(credential)
    assert len(key) == 52 and open(credential['escrow']).read() == key + '\n'
    assert _lookup_credential(credential, vault_keys=[{}, {'web1/admin/bob': 'B' * 52}]) == [key]


def test_a_credential_key_from_the_vault_the_later_dict_winning_nothing_written(tmp_path):
    credential = _credential(tmp_path)
    assert _lookup_credential(credential, vault_keys={'web1/admin/alice': 'A' * 52}) == ['A' * 52]
    assert _lookup_credential(credential, vault_keys=[{'web1/admin/alice': 'A' * 52},
                                                      {'web1/admin/alice': 'C' * 52}]) == ['C' * 52]
    assert not (tmp_path / 'web1').exists()


def test_a_credential_to_remove_has_no_key_and_no_file_is_made(tmp_path):
    assert _lookup_credential(_credential(tmp_path, state='absent'),
                              vault_keys={'web1/admin/alice': 'A' * 52}) == []
    assert not (tmp_path / 'web1').exists()


@pytest.mark.parametrize('credential, options, said', [
    ({'state': 'present', 'escrow': '/e/k'}, {}, 'a credential must be an entry of the onion_clients filter'),
    ({'id': 'w/s/c', 'state': 'gone', 'escrow': '/e/k'}, {}, 'a credential must be'),
    ({'id': 'w/s/c', 'state': 'present'}, {}, 'w/s/c: the credential has no escrow file'),
    ({'id': 'w/s/c', 'state': 'present', 'escrow': '/e/k'}, {'vault_keys': ['AAAA']}, 'vault_keys must be a dict'),
])
def test_a_wrong_credential_or_vault_is_refused_naming_no_key(credential, options, said):
    with pytest.raises(AnsibleError, match=said) as info:
        _lookup_credential(credential, **options)
    assert 'AAAA' not in str(info.value)
