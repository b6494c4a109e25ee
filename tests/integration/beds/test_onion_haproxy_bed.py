# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Limits per client circuit in front of an onion service, for real (issue 30 part 2): one systemd-nspawn host
joined to the private network, Debian's haproxy from the bed's local apt repository, one site playbook:

- a tiny application on the host (127.0.0.1, testbed_app_ports[0]) that logs the X-Onion-CircuitID header of each
  request and answers with it;
- the onion_haproxy role: HAProxy on testbed_app_ports[1] (accept-proxy), 10 requests per 120 s and 4 open
  connections per circuit, HTTP 429 beyond, the application behind it;
- the onion_service role: service 'web', port 80 -> HAProxy, export_circuit_id haproxy (tor's PROXY line),
  max_streams 8 with max_streams_close_circuit.

Ready when tor_onion_probe (on the host, through the private network's client tor, wait: true) reaches the
service. Then, through the private network's client tor, whose SocksPort isolates streams by SOCKS username (one
username, one circuit): 'hammer' sends 40 requests (4 at a time) while 'calm' sends 5 one after the other: the
hammer is limited (429), the calm one served in full; 'holder' opens 6 connections at once: 4 served, 2 limited.
The application's log shows each circuit's identifier (distinct per client) and no request HAProxy limited.
Second run and check mode change nothing; a frontend line HAProxy refuses fails the run before the file is
replaced (HAProxy keeps serving); an onion_services entry without export_circuit_id haproxy is refused by name.
"""

import concurrent.futures
import json
import os
import re
import socket
import struct
import sys
import threading
import time

import pytest

from harness import hosts as hb
from harness.ansible_run import run_playbook
from harness.fixtures import SOCKS_ERRORS, SocksError, _recv_exact

pytestmark = pytest.mark.timeout(1200)
HOST = 'hap1'
RATE, PERIOD, CONNS = 10, 120, 4
DEADLINE = float(os.environ.get('ONIONLAB_FETCH_DEADLINE', '180'))
APP = r'''
import http.server, sys, threading
LOG = open(sys.argv[2], 'a', buffering=1)
LOCK = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        value = self.headers.get('X-Onion-CircuitID', '-')
        with LOCK:
            LOG.write('circuit=%s path=%s\n' % (value, self.path))
        body = value.encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
'''
APP_LOG = '/var/log/onionlab-circuit-app.log'
SOCKET = '/run/haproxy/onion-sock.sock'  # the second service: HAProxy on a unix socket, tor's target unix:


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)
    sys.stderr.flush()


def _ssh(bed, script, check=True, timeout=120):
    return bed.sh(script, check=check, timeout=timeout)


def socks_connect(socks_port, user, host, port=80, timeout=60.0):
    """A stream to host:port through tor's SocksPort, SOCKS5 with username/password (RFC 1929): tor puts streams
    with another username on another circuit (IsolateSOCKSAuth, on by default)."""
    sock = socket.create_connection(('127.0.0.1', socks_port), timeout=timeout)
    try:
        sock.sendall(b'\x05\x01\x02')
        if _recv_exact(sock, 2) != b'\x05\x02':
            raise SocksError('SOCKS proxy refused username/password')
        u, p = user.encode(), b'onionlab'
        sock.sendall(b'\x01' + struct.pack('B', len(u)) + u + struct.pack('B', len(p)) + p)
        if _recv_exact(sock, 2)[1] != 0:
            raise SocksError('SOCKS authentication refused')
        name = host.encode('ascii')
        sock.sendall(b'\x05\x01\x00\x03' + struct.pack('B', len(name)) + name + struct.pack('>H', port))
        _ver, rep, _, atyp = _recv_exact(sock, 4)
        if rep != 0:
            raise SocksError('SOCKS connect failed: %s (0x%02x)' % (SOCKS_ERRORS.get(rep, 'unknown'), rep))
        _recv_exact(sock, {1: 6, 4: 18}.get(atyp, 0) or _recv_exact(sock, 1)[0] + 2)
        return sock
    except BaseException:
        sock.close()
        raise


def http_on(sock, host, path):
    """(outcome, circuit id): outcome 200, 429, ... or 'closed' (no answer), on a connected stream."""
    with sock:
        sock.sendall(('GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' % (path, host)).encode())
        data = b''
        while True:
            try:
                chunk = sock.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
    m = re.match(br'HTTP/1\.[01] (\d{3})', data)
    if not m:
        return 'closed', None
    status = int(m.group(1))
    return status, data.partition(b'\r\n\r\n')[2].decode() if status == 200 else None


class Client(object):
    """One SOCKS username (one circuit): its requests' outcomes and the circuit id the application saw."""

    def __init__(self, socks_port, user, address):
        self.socks_port, self.user, self.address = socks_port, user, address
        self.outcomes, self.circuits, self.lock = [], set(), threading.Lock()
        self.times = []

    def get(self, i):
        t0 = time.monotonic()
        try:
            outcome, circuit = http_on(socks_connect(self.socks_port, self.user, self.address), self.address,
                                       '/%s/%d' % (self.user, i))
        except OSError as exc:
            outcome, circuit = 'error: %s' % exc, None
        with self.lock:
            self.outcomes.append(outcome)
            self.times.append(time.monotonic() - t0)
            if circuit:
                self.circuits.add(circuit)
        return outcome

    def counts(self):
        out = {}
        for o in self.outcomes:
            out[str(o)] = out.get(str(o), 0) + 1
        return out


class Site(object):
    def __init__(self, bed, tmp):
        self.bed, self.tmp = bed, tmp
        self.work = tmp / 'ansible-run'  # run_playbook's directory: host_vars beside its playbooks
        (self.work / 'host_vars').mkdir(parents=True)
        h = bed.hosts[0]
        self.app_port, self.listen_port = h['app_ports'][0], h['app_ports'][1]
        self.timings = {}
        self.vars(self.onion_services())

    def onion_services(self, **options):
        return [{'name': 'web', 'ports': [{'port': 80, 'target_port': self.listen_port}],
                 'options': dict({'export_circuit_id': 'haproxy', 'max_streams': 2 * CONNS,
                                  'max_streams_close_circuit': True}, **options)},
                {'name': 'sock', 'ports': [{'port': 80, 'target_address': 'unix:' + SOCKET}],
                 'options': {'export_circuit_id': 'haproxy'}}]

    def vars(self, onion_services, **extra):
        service = dict({'name': 'web', 'onion_service': 'web', 'listen_port': self.listen_port,
                        'backend': '127.0.0.1:%d' % self.app_port, 'rate_limit': RATE, 'rate_period': PERIOD,
                        'max_connections': CONNS, 'limit_action': 'deny'}, **extra)
        (self.work / 'host_vars' / ('%s.yml' % HOST)).write_text(json.dumps({
            'onion_services': onion_services,
            'onion_service_control_port': '{{ testbed_tor_control_port }}',
            'onion_service_backup_dir': str(self.tmp / 'escrow'),
            'onion_service_summary_file': '',
            'onion_haproxy_services': [service, {'name': 'sock', 'onion_service': 'sock', 'listen_socket': SOCKET,
                                                 'backend': '127.0.0.1:%d' % self.app_port}]}))

    def run(self, name, check=False):
        t0 = time.monotonic()
        run = run_playbook([{
            'name': 'an onion service behind HAProxy', 'hosts': HOST, 'gather_facts': False,
            'pre_tasks': [
                {'name': 'the application', 'ansible.builtin.copy': {
                    'content': APP, 'dest': '/usr/local/lib/onionlab-circuit-app.py', 'mode': '0644'}},
                {'name': 'the application runs', 'ansible.builtin.command': {
                    'argv': ['systemd-run', '--unit=onionlab-circuit-app', '/usr/bin/python3',
                             '/usr/local/lib/onionlab-circuit-app.py', '{{ testbed_app_ports[0] }}', APP_LOG],
                    'creates': '/run/systemd/transient/onionlab-circuit-app.service'}}],
            'roles': ['onionlab.tor.onion_haproxy', 'onionlab.tor.onion_service']}],
            self.tmp, check=check, extra_args=['-i', self.bed.inventory_path], timeout=600,
            extra_env={'ANSIBLE_HOST_KEY_CHECKING': 'False'})
        self.timings[name] = time.monotonic() - t0
        return run


@pytest.fixture(scope='module')
def bed(privnet):
    if os.geteuid() != 0:
        pytest.skip('the bed needs root (systemd-nspawn)')
    hb.ensure_packages()
    b = hb.HostBed(n=1, name_prefix='hap', privnet_join_lines=privnet.join_torrc_lines(), apt_packages=['haproxy'])
    b.up()
    _say('bed: 1 host up in %.1fs (apt repo %s)' % (b.timings['total'], 'built' if b.timings.get('apt_repo_built')
                                                     else 'cached'))
    try:
        yield b
    finally:
        b.down()


@pytest.fixture(scope='module')
def site(bed, privnet, tmp_path_factory):
    s = Site(bed, tmp_path_factory.mktemp('onion-haproxy'))
    first = s.run('first run')
    assert first.rc == 0, first.output
    said = [t for t in first.results(host=HOST) if t['task'].endswith("what tor must have (the onion_services "
                                                                      "entry's options)")]
    _say('site playbook: first run %.1fs; the role says %s' % (s.timings['first run'],
                                                                json.dumps(said[0]['result']['msg'])))
    s.address = _ssh(bed, 'cat /var/lib/tor/web/hostname')[1].strip()
    s.sock_address = _ssh(bed, 'cat /var/lib/tor/sock/hostname')[1].strip()
    # ready: tor_onion_probe on the host waits until the service answers through the private network's client
    t0 = time.monotonic()
    run = run_playbook([{'hosts': HOST, 'gather_facts': False, 'tasks': [
        {'name': 'reachable', 'onionlab.tor.tor_onion_probe': {
            'socks_port': privnet.socks_port, 'wait': True, 'deadline': DEADLINE,
            'targets': [{'address': a, 'path': '/probe'} for a in (s.address, s.sock_address)]}}]}],
        s.tmp, extra_args=['-i', bed.inventory_path], extra_env={'ANSIBLE_HOST_KEY_CHECKING': 'False'})
    assert run.rc == 0, run.output
    s.timings['reachable'] = time.monotonic() - t0
    _say('%s and %s reachable through HAProxy after %.1fs (tor_onion_probe wait)' % (
        s.address, s.sock_address, s.timings['reachable']))
    yield s
    _ssh(bed, 'systemctl stop onionlab-circuit-app', check=False)


def test_hammering_circuit_limited_other_circuit_served(site, privnet, bed):
    hammer = Client(privnet.socks_port, 'hammer', site.address)
    calm = Client(privnet.socks_port, 'calm', site.address)
    holder = Client(privnet.socks_port, 'holder', site.address)
    t0 = time.monotonic()
    hammer.get(0)   # its circuit first (one rendezvous), then 39 more, 4 at a time
    calm.get(0)
    warm = time.monotonic() - t0

    def calm_loop():
        for i in range(1, 5):
            calm.get(i)
    t1 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as ex:
        side = ex.submit(calm_loop)
        list(ex.map(hammer.get, range(1, 40), chunksize=1))
        side.result()
    burst = time.monotonic() - t1

    # 6 streams open at once on one circuit: CONNS served, the others 429
    t2 = time.monotonic()
    socks = [socks_connect(privnet.socks_port, 'holder', site.address) for _ in range(CONNS + 2)]
    opened = time.monotonic() - t2
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(socks)) as ex:
        results = list(ex.map(lambda x: http_on(x[1], site.address, '/holder/%d' % x[0]), enumerate(socks)))
    for outcome, circuit in results:
        holder.outcomes.append(outcome)
        if circuit:
            holder.circuits.add(circuit)

    log = _ssh(bed, 'cat %s' % APP_LOG)[1]
    seen = {}
    for m in re.finditer(r'^circuit=(\S+) path=/(\w+)/', log, re.M):
        seen.setdefault(m.group(2), []).append(m.group(1))
    table = dict((c.user, {'outcomes': c.counts(), 'circuit ids the app saw': sorted(set(seen.get(c.user, []))),
                           'requests in the app log': len(seen.get(c.user, []))})
                 for c in (hammer, calm, holder))
    _say('per circuit (rate %d per %ds, %d connections): %s\nfirst request of hammer and calm (circuits built) '
         '%.1fs; burst of 39 + 4 in %.1fs (median request %.2fs); %d streams opened in %.1fs'
         % (RATE, PERIOD, CONNS, json.dumps(table, indent=1), warm, burst,
            sorted(hammer.times)[len(hammer.times) // 2], len(socks), opened))
    # at most RATE served: HAProxy counts a request before its rule reads the count, so requests that come at once
    # (4 here, on HAProxy's threads) can each see the others' and be refused one or more early: a clean-clone run
    # served 9 (the application saw 9, the other 31 were 429)
    served = hammer.counts().get('200', 0)
    assert RATE - 3 <= served <= RATE and hammer.counts() == {'200': served, '429': 40 - served}, table
    assert calm.counts() == {'200': 5}, table
    assert holder.counts() == {'200': CONNS, '429': 2}, table
    ids = [seen.get(u, []) for u in ('hammer', 'calm', 'holder')]
    # one circuit id per client, all different; what HAProxy limited never reached the application
    assert [len(set(x)) for x in ids] == [1, 1, 1] and len({x[0] for x in ids}) == 3, table
    assert [len(x) for x in ids] == [served, 5, CONNS], table
    assert all(x[0].isdigit() for x in ids), table
    assert [sorted(c.circuits) for c in (hammer, calm, holder)] == [sorted(set(x)) for x in ids], table


def test_unix_socket_frontend(site, privnet, bed):
    """tor's PROXY line goes to a unix target too: the second service reaches HAProxy on a socket."""
    client = Client(privnet.socks_port, 'sockclient', site.sock_address)
    assert [client.get(i) for i in range(3)] == [200] * 3, client.outcomes
    log = _ssh(bed, 'grep path=/sockclient/ %s; stat -c "%%A %%U:%%G" %s' % (APP_LOG, SOCKET))[1]
    ids = set(re.findall(r'^circuit=(\S+) path=/sockclient/', log, re.M))
    _say('unix socket %s: 3 of 3 served, circuit ids the app saw: %s; socket %s'
         % (SOCKET, sorted(ids), log.strip().splitlines()[-1]))
    assert len(ids) == 1 and ids == client.circuits and list(ids)[0].isdigit(), log


def test_second_run_and_check_mode_change_nothing(site):
    again = site.run('second run')
    assert again.rc == 0, again.output
    checked = site.run('check mode', check=True)
    assert checked.rc == 0, checked.output
    for run in (again, checked):
        assert all(s['changed'] == 0 for s in run.stats.values()), run.output
    _say('second run %.1fs, check mode %.1fs: changed=0' % (site.timings['second run'], site.timings['check mode']))


def test_bad_config_never_replaces_the_working_one(site, bed, privnet):
    before = _ssh(bed, 'md5sum /etc/haproxy/haproxy.cfg; systemctl show -p MainPID haproxy')[1]
    site.vars(site.onion_services(), extra_frontend_lines=['no-such-keyword 1'])
    try:
        bad = site.run('a line HAProxy refuses')
    finally:
        site.vars(site.onion_services())
    assert bad.rc != 0
    failed = bad.task("onionlab.tor.onion_haproxy : HAProxy's configuration (checked by haproxy -c before it "
                      "replaces the old one)", host=HOST)
    assert failed['status'] == 'failed', failed
    after = _ssh(bed, 'md5sum /etc/haproxy/haproxy.cfg; systemctl show -p MainPID haproxy')[1]
    assert after == before, (before, after)
    still = Client(privnet.socks_port, 'after-bad-config', site.address)
    assert still.get(0) == 200, still.outcomes
    alerts = [line for line in failed['result'].get('stderr', '').splitlines() if 'ALERT' in line]
    assert any('no-such-keyword' in line for line in alerts), failed['result']
    _say('refused by haproxy -c: %s: %s; file and HAProxy unchanged (%s, %s); still served'
         % (failed['result'].get('msg'), alerts[0], before.split()[0], before.split()[-1]))

    site.vars(site.onion_services(export_circuit_id='none'))
    try:
        refused = site.run('no export_circuit_id')
    finally:
        site.vars(site.onion_services())
    assert refused.rc != 0
    assert "has export_circuit_id 'none', so tor sends no PROXY line" in refused.output, refused.output
    assert all(s['changed'] == 0 for s in refused.stats.values()), refused.output
    _say('an onion_services entry without export_circuit_id haproxy: refused by name, nothing changed')


def test_an_edited_configuration_is_never_replaced(site, bed):
    """A haproxy.cfg that is neither the role's (its marker on the first line) nor Debian's as packaged: refused by
    name, the file untouched; with the role's own again (its marker back), the run passes."""
    _ssh(bed, 'cp -p /etc/haproxy/haproxy.cfg /root/haproxy.cfg.role && sed -i 1d /etc/haproxy/haproxy.cfg')
    edited = _ssh(bed, 'md5sum /etc/haproxy/haproxy.cfg')[1]
    try:
        refused = site.run('an edited file')
        after = _ssh(bed, 'md5sum /etc/haproxy/haproxy.cfg')[1]
    finally:
        _ssh(bed, 'mv /root/haproxy.cfg.role /etc/haproxy/haproxy.cfg')
    assert refused.rc != 0
    assert "/etc/haproxy/haproxy.cfg on %s was not written by this role and is not Debian's packaged file" % HOST \
        in refused.output, refused.output
    assert after == edited and all(s['changed'] == 0 for s in refused.stats.values()), refused.output
    again = site.run('the role\'s file again')
    assert again.rc == 0 and all(s['changed'] == 0 for s in again.stats.values()), again.output
    _say("an edited haproxy.cfg: refused by name, left as it was; the role's own file: changed=0")


def test_change_reloads_never_restarts(site, bed, privnet):
    """A changed limit: the new file, HAProxy reloaded (the master keeps its PID, new workers), not restarted."""
    state = 'md5sum /etc/haproxy/haproxy.cfg; systemctl show -p MainPID -p NRestarts -p ExecMainStartTimestamp haproxy'
    before = _ssh(bed, state)[1]
    site.vars(site.onion_services(), rate_limit=RATE + 1)
    try:
        changed = site.run('a limit changed')
    finally:
        site.vars(site.onion_services())
    assert changed.rc == 0, changed.output
    reload = changed.task('onionlab.tor.onion_haproxy : Reload haproxy', host=HOST)
    after = _ssh(bed, state)[1]
    _say('a limit changed: handler %s; before %s; after %s' % (reload['status'], before.split(), after.split()))
    assert reload['status'] == 'changed', reload
    assert before.split()[0] != after.split()[0] and before.split()[2:] == after.split()[2:], (before, after)
    assert 'http_req_rate gt %d' % (RATE + 1) in _ssh(bed, 'cat /etc/haproxy/haproxy.cfg')[1]
    assert Client(privnet.socks_port, 'after-reload', site.address).get(0) == 200
    back = site.run('limit back')
    assert back.rc == 0, back.output
