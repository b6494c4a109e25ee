# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Clients and key rotation end to end (issue 17): the onion_service role on host1 serves a service
whose onion_services[].clients say who may reach it, the onion_client role gives the client hosts
their keys (from the controller's escrow), and tor_onion_probe run on each client host through its
own tor's SocksPort shows who gets in. host2 = client A (alice), host3 = client B (bob).

One bed (hostbed, 3 systemd-nspawn hosts joined to privnet) for the whole scenario, in order:
A reaches the service, B (no key) is refused; B gets its key and reaches it; A's key is rotated
(A reaches it with the new key, the old key is refused, B untouched); B is revoked and refused;
a last run changes nothing. Bad input fails with one message and writes nothing. curl through
host2's SocksPort is the outside check once.
"""

import json
import os
import stat
import subprocess
import sys
import time

from harness import privnet as pn
from harness.ansible_run import run_playbook

FETCH_DEADLINE = float(os.environ.get('ONIONLAB_FETCH_DEADLINE', '120'))
REFUSAL_DEADLINE = float(os.environ.get('ONIONLAB_REFUSAL_DEADLINE', '120'))
MISSING_AUTH, WRONG_AUTH = 0xf4, 0xf5
SERVER, CLIENT_A, CLIENT_B = 'host1', 'host2', 'host3'


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)


class Scenario(object):
    def __init__(self, bed, tmp_path, web_port, token):
        self.bed = bed
        self.tmp = tmp_path
        self.work = tmp_path / 'ansible-run'
        self.escrow = tmp_path / 'escrow'
        self.web_port = web_port
        self.token = token
        (self.work / 'host_vars').mkdir(parents=True)
        (self.work / 'group_vars').mkdir()
        (self.work / 'group_vars' / 'all.yml').write_text(json.dumps({
            'onion_service_backup_dir': str(self.escrow),
            'onion_service_summary_file': '',
            'onion_service_control_port': '{{ testbed_tor_control_port }}',
            'onion_client_control_port': '{{ testbed_tor_control_port }}',
        }))
        self.address = None
        self.timings = []

    def set_clients(self, clients, **service):
        svc = dict({'name': 'admin', 'ports': [{'port': 80, 'target_port': self.web_port}], 'clients': clients},
                   **service)
        (self.work / 'host_vars' / ('%s.yml' % SERVER)).write_text(json.dumps({'onion_services': [svc]}))

    def run(self, plays, check=False, diff=False, extra_vars=None):
        t0 = time.monotonic()
        run = run_playbook(plays, self.tmp, check=check, diff=diff, extra_vars=extra_vars,
                           extra_args=['-i', self.bed.inventory_path], timeout=600)
        self.timings.append(time.monotonic() - t0)
        return run

    def site(self, **kw):
        """The site playbook: servers first (with their web backend), then the clients."""
        return self.run([
            {'name': 'servers', 'hosts': SERVER, 'gather_facts': False,
             'pre_tasks': [
                 {'name': 'site dir', 'ansible.builtin.file': {
                     'path': '/srv/clientrot', 'state': 'directory', 'mode': '0755'}},
                 {'name': 'page', 'ansible.builtin.copy': {
                     'dest': '/srv/clientrot/index.html', 'content': self.token, 'mode': '0644'}},
                 {'name': 'backend', 'ansible.builtin.command': {
                     'argv': ['systemd-run', '--unit=onionlab-clientrot', '/usr/bin/python3', '-m', 'http.server',
                              str(self.web_port), '--bind', '127.0.0.1', '--directory', '/srv/clientrot'],
                     'creates': '/run/systemd/transient/onionlab-clientrot.service'}}],
             'roles': [{'role': 'onionlab.tor.onion_service'}]},
            {'name': 'clients', 'hosts': '%s:%s' % (CLIENT_A, CLIENT_B), 'gather_facts': False,
             'roles': [{'role': 'onionlab.tor.onion_client'}]},
        ], **kw)

    def probe(self, host, reach, deadline):
        """tor_onion_probe on host through its tor's SocksPort. reach=True: until it answers (the page);
        reach=False: one attempt at a time until tor refuses for client authorization."""
        target = {'address': self.address, 'body_contains': self.token}
        task = {'name': 'probe', 'register': 'probed', 'onionlab.tor.tor_onion_probe': {
            'socks_port': '{{ testbed_tor_socks_port }}', 'targets': [target],
            'deadline': deadline if reach else 0, 'timeout': 30}}
        if not reach:
            task.update({'until': 'probed.targets[0].reachable or probed.targets[0].socks_reply in [244, 245]',
                         'retries': int(deadline // 3), 'delay': 2})
        run = self.run([{'hosts': host, 'gather_facts': False, 'tasks': [task]}])
        assert run.rc == 0, run.output
        return run.task('probe', host=host)['result']['targets'][0]

    def assert_reaches(self, host):
        out = self.probe(host, True, FETCH_DEADLINE)
        assert out['reachable'], out
        return out

    def assert_refused(self, host):
        out = self.probe(host, False, REFUSAL_DEADLINE)
        assert not out['reachable'], '%s reached the service: %r' % (host, out)
        assert out['socks_reply'] in (MISSING_AUTH, WRONG_AUTH), out
        return out


def _credential_task(run, host):
    """The per-item results of the onion_client role's module task on host."""
    name = "This host's tor gets each client key (permanent), or loses a revoked one"
    found = [r for r in run.results(host=host) if r['task'].endswith(name)]
    assert found, run.output
    return found[0]


def _mode(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_clients_and_key_rotation(hostbed, privnet, tmp_path):
    (web_port,) = pn.free_ports(1)
    token = 'clientrot-%s' % os.urandom(8).hex()
    sc = Scenario(hostbed, tmp_path, web_port, token)
    t_start = time.monotonic()
    clients_dir = sc.escrow / SERVER / 'admin' / 'clients'

    # -- bad input first: one message each, nothing written -----------------------------------------
    for clients, extra, expected in (
            ([{'name': 'alice', 'hosts': [CLIENT_A]}], {'authorized_clients': [{'name': 'x'}]},
             'clients and authorized_clients are mutually exclusive'),
            ([{'name': 'alice/../../x', 'hosts': [CLIENT_A]}], {}, 'name must be 1 to 16'),
            ([{'name': 'alice', 'hosts': ['no-such-host']}], {}, 'hosts not in the inventory: no-such-host'),
            ([{'name': 'alice', 'public_key': 'NOTAKEY' * 7}], {}, 'public_key is not an x25519 public key')):
        sc.set_clients(clients, **extra)
        run = sc.site()
        assert run.rc != 0, run.output
        assert expected in run.stdout + run.stderr, run.output
        assert 'Traceback' not in run.output
        assert not sc.escrow.exists(), 'bad input wrote %r' % sorted(os.listdir(str(sc.escrow)))
    # a malformed key in the vault: refused, never echoed, nothing written
    sc.set_clients([{'name': 'alice', 'hosts': [CLIENT_A]}])
    bad_vault = 'QUITE' + 'SECRETBUTMALFORMED' * 3
    run = sc.site(extra_vars={'onion_service_client_keys': {'%s/admin/alice' % SERVER: bad_vault}})
    assert run.rc != 0 and bad_vault not in run.output and 'Traceback' not in run.output, run.output
    assert not sc.escrow.exists()

    # -- 1. A (alice, host2) holds key 1 and reaches the service; B (host3) holds nothing -------------
    sc.set_clients([{'name': 'alice', 'hosts': [CLIENT_A]}])
    run = sc.site()
    assert run.rc == 0, run.output
    alice1 = (clients_dir / 'alice.1.x25519').read_text().strip()
    assert alice1 not in run.output
    assert _mode(clients_dir / 'alice.1.x25519') == 0o600
    assert all(_mode(d) == 0o700 for d in (clients_dir, clients_dir.parent, clients_dir.parent.parent, sc.escrow))
    sc.address = (sc.escrow / SERVER / 'admin' / 'hostname').read_text().strip()
    assert sc.address.endswith('.onion') and len(sc.address) == 62
    assert _credential_task(run, CLIENT_A)['status'] == 'changed'
    first = sc.assert_reaches(CLIENT_A)
    refused_b = sc.assert_refused(CLIENT_B)
    assert refused_b['socks_reply'] == MISSING_AUTH

    # the outside check: curl through host2's tor (its SocksPort, on the shared loopback)
    socks_a = next(h['tor_socks_port'] for h in hostbed.hosts if h['name'] == CLIENT_A)
    curl = subprocess.run(['curl', '-sS', '--max-time', '60', '--retry', '3', '--retry-all-errors',
                           '--socks5-hostname', '127.0.0.1:%d' % socks_a, 'http://%s/' % sc.address],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=240, check=False)
    assert curl.returncode == 0 and curl.stdout.decode() == token, curl.stderr

    # -- 2. B gets its key (bob) in one run: B reaches it, A untouched --------------------------------
    sc.set_clients([{'name': 'alice', 'hosts': [CLIENT_A]}, {'name': 'bob', 'hosts': [CLIENT_B]}])
    run = sc.site()
    assert run.rc == 0, run.output
    assert _credential_task(run, CLIENT_A)['status'] == 'ok'
    assert _credential_task(run, CLIENT_B)['status'] == 'changed'
    bob1 = (clients_dir / 'bob.1.x25519').read_text().strip()
    assert bob1 not in run.output
    sc.assert_reaches(CLIENT_B)

    # -- 3. A's key rotated (key: 2): new key works, old key refused, B untouched, old key kept ---------
    sc.set_clients([{'name': 'alice', 'hosts': [CLIENT_A], 'key': 2}, {'name': 'bob', 'hosts': [CLIENT_B]}])
    check = sc.site(check=True, diff=True)
    assert check.rc == 0, check.output
    assert _credential_task(check, CLIENT_A)['status'] == 'changed'
    assert _credential_task(check, CLIENT_B)['status'] == 'ok'
    run = sc.site()
    assert run.rc == 0, run.output
    assert _credential_task(run, CLIENT_A)['status'] == 'changed'
    assert _credential_task(run, CLIENT_B)['status'] == 'ok'
    alice2 = (clients_dir / 'alice.2.x25519').read_text().strip()
    assert alice2 != alice1 and (clients_dir / 'alice.1.x25519').read_text().strip() == alice1
    assert alice1 not in run.output and alice2 not in run.output
    sc.assert_reaches(CLIENT_A)
    # the old key, given back to host2's tor by hand (in memory), is refused once the service's new
    # descriptor is at the HSDirs (each round forgets the cached descriptor with the key first)
    old_key_task = [
        {'name': 'forget', 'onionlab.tor.tor_onion_client_auth': {
            'control_port': '{{ testbed_tor_control_port }}', 'address': sc.address, 'state': 'absent'}},
        {'name': 'old key', 'no_log': True, 'onionlab.tor.tor_onion_client_auth': {
            'control_port': '{{ testbed_tor_control_port }}', 'address': sc.address, 'permanent': False,
            'private_key': alice1}},
    ]
    t0, old = time.monotonic(), None
    while True:
        run = sc.run([{'hosts': CLIENT_A, 'gather_facts': False, 'tasks': old_key_task}])
        assert run.rc == 0, run.output
        old = sc.probe(CLIENT_A, False, 30)
        if not old['reachable']:
            break
        assert time.monotonic() - t0 < REFUSAL_DEADLINE, 'the old key still reaches the service: %r' % old
        time.sleep(3)
    assert old['socks_reply'] in (MISSING_AUTH, WRONG_AUTH), old
    t_old = time.monotonic() - t0
    # the site playbook puts the new key back (only on host2)
    run = sc.site()
    assert run.rc == 0, run.output
    assert _credential_task(run, CLIENT_A)['status'] == 'changed'
    assert _credential_task(run, CLIENT_B)['status'] == 'ok'
    sc.assert_reaches(CLIENT_A)
    sc.assert_reaches(CLIENT_B)

    # -- 4. B revoked: off the service and off host3; B refused, A still in ----------------------------
    sc.set_clients([{'name': 'alice', 'hosts': [CLIENT_A], 'key': 2},
                    {'name': 'bob', 'hosts': [CLIENT_B], 'state': 'absent'}])
    run = sc.site()
    assert run.rc == 0, run.output
    assert _credential_task(run, CLIENT_A)['status'] == 'ok'
    assert _credential_task(run, CLIENT_B)['status'] == 'changed'
    assert (clients_dir / 'bob.1.x25519').read_text().strip() == bob1          # kept in escrow
    listing = sc.run([{'hosts': SERVER, 'gather_facts': False, 'tasks': [
        {'name': 'ls', 'register': 'ls', 'changed_when': False,
         'ansible.builtin.command': 'ls /var/lib/tor/admin/authorized_clients'}]}])
    assert listing.rc == 0, listing.output
    assert listing.task('ls', host=SERVER)['result']['stdout'].split() == ['alice.auth', 'probe.auth']
    sc.assert_refused(CLIENT_B)
    sc.assert_reaches(CLIENT_A)

    # -- 5. the same again changes nothing ------------------------------------------------------------
    run = sc.site()
    assert run.rc == 0, run.output
    assert {h: run.stats[h]['changed'] for h in (SERVER, CLIENT_A, CLIENT_B)} == {SERVER: 0, CLIENT_A: 0, CLIENT_B: 0}, \
        run.output

    _say('client rotation scenario: %.1fs in all, %d playbook runs (%s), first fetch %.1fs, old key refused after '
         '%.1fs' % (time.monotonic() - t_start, len(sc.timings), ', '.join('%.0f' % t for t in sc.timings),
                    first['elapsed'], t_old))
