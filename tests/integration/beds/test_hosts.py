# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The multi-host bed of tests/harness/hosts.py: 3 systemd-nspawn hosts, one Ansible inventory.

Fixtures come from harness.fixtures (hostbed, privnet, http_backend).
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness import hosts as hb
from harness import privnet as pn
from harness import procs
from harness.fixtures import ansible_adhoc
from harness.reach import Reach, bed_tor

FETCH_DEADLINE = float(os.environ.get('ONIONLAB_FETCH_DEADLINE', '60'))


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)


def test_ansible_ping_all_hosts(hostbed):
    t0 = time.monotonic()
    rc, results, out = ansible_adhoc(hostbed.inventory_path, 'all', 'ping')
    assert rc == 0, out
    assert results == {h['name']: 'SUCCESS' for h in hostbed.hosts}, out
    _say('ansible all -m ping over %d hosts: %.1fs' % (hostbed.n, time.monotonic() - t0))


def test_each_host_is_its_own_machine(hostbed):
    rc, results, out = ansible_adhoc(hostbed.inventory_path, 'all', 'shell',
                                     'echo "$(hostname) $(cat /etc/machine-id) $(ps -p 1 -o comm=)"')
    assert rc == 0, out
    lines = [line for line in out.splitlines() if line.startswith('host')]
    seen = {line.split()[0]: line.split()[1:] for line in lines if len(line.split()) == 3}
    assert set(seen) == {h['name'] for h in hostbed.hosts}, out
    assert len({mid for mid, _ in seen.values()}) == hostbed.n
    assert all(init == 'systemd' for _, init in seen.values())


def test_each_host_runs_tor(hostbed):
    rc, results, out = ansible_adhoc(hostbed.inventory_path, 'all', 'command', 'systemctl is-active tor@default')
    assert rc == 0, out
    assert set(results) == {h['name'] for h in hostbed.hosts}
    # and its ControlPort answers from the controller (shared network, distinct ports)
    for h in hostbed.hosts:
        with connect(port=h['tor_control_port'], authenticate=False) as c:
            assert c.protocol_info is not None


def test_stock_host_is_debian_as_shipped(stockbed):
    """A stock host: Debian's packaged torrc byte for byte, the packaged unit and its sandbox, the
    control socket and cookie where Debian puts them, no ControlPort; the modules find them with
    no control parameters at all."""
    h = stockbed.hosts[0]
    root = h['root']
    with open(os.path.join(root, 'etc/tor/torrc'), 'rb') as f, \
            open(os.path.join(root, hb.STOCK_TORRC.lstrip('/')), 'rb') as g:
        stock = f.read()
        assert stock == g.read()
    assert all(not line.strip() or line.startswith(b'#') for line in stock.splitlines())
    rc, _results, out = ansible_adhoc(stockbed.inventory_path, 'all', 'shell',
                                      'systemctl is-active tor@default && stat -c %F /run/tor/control '
                                      '&& systemctl show -p ReadWritePaths tor@default '
                                      '&& ss -Htlnp | grep \'"tor"\'')
    assert rc == 0, out
    assert 'socket' in out and '/var/lib/tor' in out, out
    # tor's own TCP listeners (the network is shared: only its PID namespace tells them apart):
    # the host's SocksPort instead of the packaged 9050, and no ControlPort
    listening = set(re.findall(r'127\.0\.0\.1:(\d+) .*"tor"', out))
    assert listening == {str(h['tor_socks_port'])}, out
    rc, results, out = ansible_adhoc(stockbed.inventory_path, 'all', 'onionlab.tor.tor_hidden_service_info')
    assert rc == 0 and set(results.values()) == {'SUCCESS'}, out
    assert '"hidden_services": []' in out, out


def test_no_host_reaches_a_package_mirror(hostbed):
    """apt inside a host fails at once, as it does on CI machines without a way out."""
    t0 = time.monotonic()
    rc, results, out = ansible_adhoc(hostbed.inventory_path, 'all', 'shell',
                                     'apt-get update -q --error-on=any; echo "apt-rc=$?"', timeout=120)
    assert rc == 0, out
    assert len(re.findall(r'apt-rc=100', out)) == hostbed.n, out
    assert '127.0.0.1:9' in out, out
    _say('apt-get update refused on %d hosts in %.1fs' % (hostbed.n, time.monotonic() - t0))


def test_each_host_joined_the_private_network(hostbed):
    """Every host's tor bootstraps in privnet (it knows only our DirAuthorities)."""
    rc, results, out = ansible_adhoc(
        hostbed.inventory_path, 'all', 'shell',
        'timeout 90 sh -c "until journalctl -u tor@default --no-pager | grep -q \'Bootstrapped 100%\'; '
        'do sleep 0.5; done" && grep -c "^DirAuthority .* 127.0.0.1:" /etc/tor/torrc', timeout=150)
    assert rc == 0, out
    assert len(re.findall(r'\| CHANGED \| rc=0 >>\s*\n3\s*$', out, re.M)) == hostbed.n, out


def test_onion_service_on_a_host_reachable_from_controller(hostbed, privnet, tmp_path):
    """tor_hidden_service (persistent) on host1 over ssh, fetched through privnet's client."""
    h = hostbed.hosts[0]
    web_port = h['tor_or_port']  # a port reserved for this host, free on the shared network
    book = tmp_path / 'play.yml'
    address_file = tmp_path / 'address'
    book.write_text(json.dumps([{
        'hosts': h['name'], 'gather_facts': False,
        'tasks': [
            {'name': 'web server', 'ansible.builtin.command':
                'systemd-run --unit=onionlab-web --property=WorkingDirectory=/etc '
                'python3 -m http.server --bind 127.0.0.1 %d' % web_port},
            {'name': 'onion service', 'onionlab.tor.tor_hidden_service': {
                'path': '/var/lib/tor/web', 'ports': [{'port': 80, 'target_port': web_port}]},
             'register': 'svc'},
            {'ansible.builtin.copy': {'content': '{{ svc.onion_address }}', 'dest': str(address_file)},
             'delegate_to': 'localhost', 'vars': {'ansible_connection': 'local',
                                                  'ansible_python_interpreter': sys.executable}},
        ]}]))
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_HOST_KEY_CHECKING='False',
               ANSIBLE_DEPRECATION_WARNINGS='False', ANSIBLE_RETRY_FILES_ENABLED='False')
    t0 = time.monotonic()
    p = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'),
                        '-i', hostbed.inventory_path, str(book)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=300)
    out = p.stdout.decode('utf-8', 'replace')
    assert p.returncode == 0, out
    address = address_file.read_text().strip()
    with Reach(bed_tor(h), privnet.client) as reach:   # once the HSDirs the client asks serve its descriptor
        body, took = reach.fetch(address, path='/hostname', deadline=FETCH_DEADLINE, since=None)
    assert body.strip() == h['name']
    _say('onion service on %s: playbook + first answer %.1fs (%.1fs after the gate)'
         % (h['name'], time.monotonic() - t0, took))


def test_up_down_leaves_nothing(tmp_path):
    """A bed of its own (1 host, offline tor): up, then down removes processes, cgroups, files."""
    if os.geteuid() != 0:
        pytest.skip('needs root')
    bed = hb.HostBed(n=1)
    t0 = time.monotonic()
    bed.up()
    up = time.monotonic() - t0
    try:
        h = bed.hosts[0]
        assert procs.pid_alive(h['pid'], h['starttime'])
        with open(os.path.join(h['root'], 'etc/tor/torrc')) as f:
            assert 'DisableNetwork 1' in f.read()
        assert os.path.exists(bed.registry)
    finally:
        t1 = time.monotonic()
        bed.down()
    _say('1-host bed: up %.1fs, down %.1fs' % (up, time.monotonic() - t1))
    assert not procs.pid_alive(h['pid'], h['starttime'])
    assert not os.path.exists(bed.base_dir)
    assert not os.path.exists(bed.registry)
    assert not any(os.path.exists(d) for d in h['cgroups'])
    assert not hb._mounts_under(bed.base_dir)


def test_failed_up_tears_down():
    """When the hosts do not come up in time, up() stops what it started before raising."""
    if os.geteuid() != 0:
        pytest.skip('needs root')
    bed = hb.HostBed(n=1, boot_timeout=0.01)
    with pytest.raises(RuntimeError, match='did not come up'):
        bed.up()
    h = bed.hosts[0]
    assert h['pid'] and not procs.pid_alive(h['pid'], h['starttime'])
    assert not os.path.exists(bed.base_dir)
    assert not os.path.exists(bed.registry)


def test_cleanup_finds_leftovers_by_state_file(tmp_path):
    """A bed whose owner was SIGKILLed is found by `cleanup` through its state file and torn down."""
    if os.geteuid() != 0:
        pytest.skip('needs root')
    d = str(tmp_path / 'bed')
    tests = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    owner = subprocess.Popen(
        [sys.executable, '-c', 'import sys, time; sys.path.insert(0, %r); from harness import hosts; '
         'bed = hosts.HostBed(n=1, base_dir=%r); bed.up(); print("up", flush=True); time.sleep(600)'
         % (tests, d)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert owner.stdout.readline().strip() == b'up'
    finally:
        owner.send_signal(signal.SIGKILL)  # no teardown: a leftover
        owner.wait()
    with open(os.path.join(d, 'state.json')) as f:
        state = json.load(f)
    h = state['hosts'][0]
    assert procs.pid_alive(h['pid'], h['starttime'])
    subprocess.run([sys.executable, os.path.join(tests, 'harness', 'hosts.py'), 'cleanup'], check=True,
                   stdout=subprocess.DEVNULL, timeout=120)
    assert not procs.pid_alive(h['pid'], h['starttime'])
    assert not os.path.exists(h['root'])
