# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The private Tor network of tests/harness/privnet.py, end to end.

Fixtures come from harness.fixtures (privnet, http_backend).
"""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness import privnet as pn
from harness.fixtures import fetch_onion

HARNESS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'harness', 'privnet.py')
FETCH_DEADLINE = float(os.environ.get('ONIONLAB_FETCH_DEADLINE', '60'))


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)


def test_consensus_lists_every_relay(privnet):
    servers = {n.name for n in privnet.nodes if n.is_server()}
    for a in privnet.authorities:
        with open(os.path.join(a.datadir, 'cached-consensus')) as f:
            routers, _ = pn.parse_consensus(f.read())
        assert servers <= set(routers)
        for name in servers:
            assert {'Running', 'Valid', 'HSDir', 'Guard'} <= routers[name], (name, routers[name])
    assert privnet.timings['ready'] < privnet.ready_timeout
    _say('privnet timings: %s' % json.dumps({k: round(v, 2) for k, v in privnet.timings.items()}))


def test_only_loopback_and_our_authorities(privnet):
    assert len(privnet.dirauthority_lines) == 3
    for line in privnet.dirauthority_lines:
        assert ' 127.0.0.1:' in line
    for n in privnet.nodes:
        with open(n.torrc) as f:
            torrc = f.read()
        assert 'TestingTorNetwork 1' in torrc
        assert '__OwningControllerProcess %d' % os.getpid() in torrc
        for line in torrc.splitlines():
            if line.split(' ', 1)[0].endswith('Port') and line.split()[1] not in ('0',):
                assert line.split()[1].startswith('127.0.0.1:'), line
    with connect(port=privnet.client.control_port, cookie_path=privnet.client.cookie_path) as c:
        info = c.get_info('net/listeners/socks', 'status/bootstrap-phase', 'ns/all')
    assert info['net/listeners/socks'].strip('"') == '127.0.0.1:%d' % privnet.socks_port
    assert 'PROGRESS=100' in info['status/bootstrap-phase']
    # the client knows our 6 servers and nothing else
    addresses = [re.findall(r' (\d+\.\d+\.\d+\.\d+) ', line) for line in info['ns/all'].splitlines()
                 if line.startswith('r ')]
    assert len(addresses) == len(privnet.authorities) + len(privnet.relays)
    assert all(addr == ['127.0.0.1'] for addr in addresses), addresses


def test_onion_service_via_add_onion(privnet, http_backend):
    """ADD_ONION with our control-protocol client, fetched through the client's SocksPort."""
    onion = privnet.onion
    with connect(port=onion.control_port, cookie_path=onion.cookie_path) as c:
        t0 = time.monotonic()
        svc = c.add_onion([(80, '127.0.0.1:%d' % http_backend.port)], flags=['DiscardPK'])
        address = svc['service_id'] + '.onion'
        body, took, attempts = fetch_onion(privnet.socks_port, address, deadline=FETCH_DEADLINE)
        c.del_onion(svc['service_id'])
    assert body == http_backend.token
    _say('privnet ready in %.1fs; ADD_ONION -> first fetch %.1fs (%d attempts)'
         % (privnet.timings['ready'], time.monotonic() - t0, attempts))


def _playbook(tmp_path, tasks):
    book = tmp_path / 'play.yml'
    book.write_text(json.dumps([{'hosts': 'localhost', 'gather_facts': False, 'tasks': tasks}]))
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_RETRY_FILES_ENABLED='False',
               ANSIBLE_DEPRECATION_WARNINGS='False', ANSIBLE_LOCAL_TEMP=str(tmp_path / 'tmp'),
               ANSIBLE_CONFIG=str(tmp_path / 'ansible.cfg'))
    (tmp_path / 'ansible.cfg').write_text('')
    p = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                        '-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable, str(book)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=300, cwd=str(tmp_path))
    return p.returncode, p.stdout.decode('utf-8', 'replace')


def test_onion_service_via_module(privnet, http_backend, tmp_path):
    """onionlab.tor.tor_hidden_service (ephemeral) on the onion-service tor, fetched over Tor."""
    onion = privnet.onion
    out_file = tmp_path / 'address'
    t0 = time.monotonic()
    rc, out = _playbook(tmp_path, [
        {'name': 'onion service', 'onionlab.tor.tor_hidden_service': {
            'ephemeral': True, 'control_port': onion.control_port, 'cookie_path': onion.cookie_path,
            'ports': [{'port': 80, 'target_port': http_backend.port}]}, 'register': 'svc'},
        {'ansible.builtin.copy': {'content': '{{ svc.onion_address }}', 'dest': str(out_file)}},
    ])
    assert rc == 0, out
    address = out_file.read_text().strip()
    assert address.endswith('.onion')
    body, took, attempts = fetch_onion(privnet.socks_port, address, deadline=FETCH_DEADLINE)
    assert body == http_backend.token
    _say('tor_hidden_service -> first fetch %.1fs (%d attempts; module run %.1fs)'
         % (time.monotonic() - t0, attempts, time.monotonic() - t0 - took))


def test_extra_tor_joins(privnet):
    """A tor that only gets the join lines bootstraps in the network (what a bed host does)."""
    node = privnet.add_tor('joiner', socks=True)
    assert node.bootstrapped()
    with open(node.torrc) as f:
        torrc = f.read()
    for line in privnet.join_torrc_lines():
        assert line in torrc


def test_cli_start_env_status_stop(tmp_path):
    """The command-line entry point: start (detached supervisor), env, status, stop by PID."""
    d = str(tmp_path / 'net')
    run = [sys.executable, HARNESS]
    t0 = time.monotonic()
    p = subprocess.run(run + ['start', '--dir', d, '--no-onion', '--relays', '3'], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    try:
        assert p.returncode == 0, p.stderr.decode()
        out = p.stdout.decode()
        assert "export PRIVNET_SOCKS_PORT=" in out
        _say('CLI privnet start -> ready %.1fs' % (time.monotonic() - t0))
        state = pn.read_state(d)
        assert state['status'] == 'ready'
        assert pn.pid_alive(state['supervisor_pid'], state['supervisor_starttime'])
        torrc = subprocess.run(run + ['env', '--dir', d, '--format', 'torrc'], stdout=subprocess.PIPE,
                               check=True).stdout.decode()
        assert torrc.count('DirAuthority ') == 3
        assert subprocess.run(run + ['status', '--dir', d], stdout=subprocess.DEVNULL).returncode == 0
        for n in state['nodes']:
            with open(n['torrc']) as f:
                assert '__OwningControllerProcess %d' % state['supervisor_pid'] in f.read()
    finally:
        subprocess.run(run + ['stop', '--dir', d], timeout=60)
    state = pn.read_state(d)
    assert state['status'] == 'stopped'
    assert not pn.pid_alive(state['supervisor_pid'], state['supervisor_starttime'])
    assert not [n['name'] for n in state['nodes'] if pn.pid_alive(n['pid'], n['starttime'])]


def test_start_failure_stops_everything(tmp_path, monkeypatch):
    """A network that cannot become ready is stopped by PID, nothing left running."""
    net = pn.PrivNet(base_dir=str(tmp_path / 'bad'), n_relays=1, with_onion=False, ready_timeout=3)
    with pytest.raises(pn.PrivNetError):
        net.start()
    started = [n for n in net.nodes if n.proc is not None]
    assert started
    assert all(n.proc.poll() is not None for n in started)
