# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_onion_client_auth on the private network (harness/privnet.py), end to end: a service with
client authorization made by tor_hidden_service, a client tor that gets the key through the
module over its control port (no restart, no reload) and fetches the service, and no longer can
once the module removed it (issue 17)."""

import json
import os
import re
import socket
import struct
import sys
import time

from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth as ca
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness import privnet as pn
from harness.ansible_run import run_playbook
from harness.fixtures import SOCKS_ERRORS

FETCH_DEADLINE = float(os.environ.get('ONIONLAB_FETCH_DEADLINE', '60'))
REFUSAL_DEADLINE = float(os.environ.get('ONIONLAB_REFUSAL_DEADLINE', '25'))
MISSING_CLIENT_AUTH = 0xf4
MODULE = 'onionlab.tor.tor_onion_client_auth'


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)


class Refused(OSError):
    def __init__(self, code):
        OSError.__init__(self, 'SOCKS connect failed: %s (0x%02x)' % (SOCKS_ERRORS.get(code, 'unknown'), code))
        self.code = code


def _recv(sock, n):
    data = b''
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError('SOCKS proxy closed the connection')
        data += chunk
    return data


def socks_connect(socks_port, host, username=None, timeout=30.0):
    """A socket connected to host:80 through tor's SOCKS5 port; with username (RFC 1929, any
    password) tor puts the stream on circuits of its own (IsolateSOCKSAuth, on by default)."""
    sock = socket.create_connection(('127.0.0.1', socks_port), timeout=timeout)
    try:
        if username is None:
            sock.sendall(b'\x05\x01\x00')
            if _recv(sock, 2) != b'\x05\x00':
                raise OSError('SOCKS proxy refused the no-auth method')
        else:
            sock.sendall(b'\x05\x01\x02')
            if _recv(sock, 2) != b'\x05\x02':
                raise OSError('SOCKS proxy refused username/password')
            user = username.encode()
            sock.sendall(b'\x01' + struct.pack('B', len(user)) + user + b'\x01x')
            if _recv(sock, 2)[1] != 0:
                raise OSError('SOCKS proxy refused the username')
        name = host.encode('ascii')
        sock.sendall(b'\x05\x01\x00\x03' + struct.pack('B', len(name)) + name + struct.pack('>H', 80))
        _ver, rep, _rsv, atyp = _recv(sock, 4)
        if rep != 0:
            raise Refused(rep)
        _recv(sock, {1: 6, 4: 18}.get(atyp) or _recv(sock, 1)[0] + 2)
        return sock
    except BaseException:
        sock.close()
        raise


def http_request(sock, host):
    """(status, body) of GET / on a connected socket."""
    with sock:
        sock.sendall(('GET / HTTP/1.0\r\nHost: %s\r\n\r\n' % host).encode())
        data = b''
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _sep, body = data.partition(b'\r\n\r\n')
    match = re.match(br'HTTP/1\.[01] (\d{3})', head)
    if not match:
        raise OSError('no HTTP reply')
    return int(match.group(1)), body.decode('utf-8', 'replace')


def http_get(socks_port, host, username=None, timeout=30.0):
    return http_request(socks_connect(socks_port, host, username, timeout), host)


def refusal(socks_port, address, token, username=None, deadline=REFUSAL_DEADLINE):
    """The SOCKS reply code of tor's refusal (retrying other errors until deadline); getting the
    page fails the test at once. None when no refusal came."""
    t0 = time.monotonic()
    while True:
        try:
            status, body = http_get(socks_port, address, username, timeout=max(3.0, deadline - (time.monotonic() - t0)))
        except Refused as exc:
            if exc.code == MISSING_CLIENT_AUTH:
                return exc.code, time.monotonic() - t0
        except OSError:
            pass
        else:
            assert token not in body, 'the service answered (HTTP %d) a client tor without the key' % status
        if time.monotonic() - t0 + 1.0 > deadline:
            return None, time.monotonic() - t0
        time.sleep(1.0)


def _hs_lines(path, last=80):
    """The last onion-service lines of a tor info log (what a failed fetch needs to be understood)."""
    try:
        with open(str(path)) as handle:
            lines = [l.rstrip() for l in handle if re.search(r'hs_|rend|intro|onion|descriptor', l, re.I)]
    except OSError as exc:
        return '(no log: %s)' % exc
    return '\n'.join(lines[-last:])


def first_fetch(socks_port, address, client_log, deadline=2 * FETCH_DEADLINE, attempt_timeout=15.0):
    """The page through the client tor once it holds the key: (body, seconds, attempts). Each
    attempt has a SOCKS isolation of its own, so a circuit that stalls under load (seen once in CI:
    two 30 s attempts on one isolation timed out; alone it takes 0.2 s) is not waited on again.
    On timeout the client tor's onion-service log lines are in the error."""
    t0 = time.monotonic()
    attempts, last = 0, None
    while time.monotonic() - t0 < deadline:
        attempts += 1
        try:
            status, body = http_get(socks_port, address, username='first-fetch-%d' % attempts,
                                    timeout=attempt_timeout)
            if status == 200:
                return body, time.monotonic() - t0, attempts
            last = 'HTTP %d' % status
        except OSError as exc:
            last = exc
        time.sleep(1.0)
    raise AssertionError('no answer from %s after %d attempts in %.0fs: %s\nclient tor, onion-service lines '
                         'of its info log:\n%s' % (address, attempts, deadline, last, _hs_lines(client_log)))


def test_key_given_and_taken_over_the_control_port(privnet, http_backend, tmp_path):
    onion = privnet.onion
    base = tmp_path / 'services'
    base.mkdir(mode=0o700)
    service_dir = str(base / 'private')
    saved = tmp_path / 'made.json'
    made_task = {'name': 'service', 'no_log': True, 'register': 'made', 'onionlab.tor.tor_hidden_service': {
        'control_port': onion.control_port, 'cookie_path': onion.cookie_path, 'persist': False,
        'path': service_dir, 'ports': [{'port': 80, 'target_port': http_backend.port}],
        'authorized_clients': [{'name': 'laptop'}]}}
    save = {'name': 'save', 'no_log': True, 'ansible.builtin.copy': {
        'dest': str(saved), 'mode': '0600',
        'content': "{{ {'address': made.onion_address, 'client': made.generated_clients[0]} | to_json }}"}}
    auth_dir = tmp_path / 'client_auth'
    auth_dir.mkdir(mode=0o700)
    (extended,) = pn.free_ports(1)
    client = None
    t0 = time.monotonic()
    try:
        run = run_playbook([made_task, save], tmp_path)
        assert run.rc == 0, run.output
        made = json.loads(saved.read_text())
        address, laptop = made['address'], made['client']
        client_log = tmp_path / 'client-info.log'
        client = privnet.add_tor('caclient', ['SocksPort 127.0.0.1:%d ExtendedErrors' % extended,
                                              'ClientOnionAuthDir %s' % auth_dir,
                                              'Log info file %s' % client_log], socks=True)
        t_client = time.monotonic() - t0

        # no key yet: tor refuses the service (and keeps the descriptor it could not decrypt)
        code, took_refused = refusal(extended, address, http_backend.token)
        assert code == MISSING_CLIENT_AUTH, 'no refusal for missing client authorization in %.0fs' % took_refused

        # the key through the module, over the client tor's control port; the auth_private line as
        # tor_hidden_service returned it
        give = {'name': 'give', 'register': 'given', MODULE: {
            'control_port': client.control_port, 'cookie_path': client.cookie_path, 'address': address,
            'private_key': laptop['auth_private'], 'client_name': 'laptop'}}
        pid = client.pid
        run = run_playbook([give], tmp_path)
        assert run.rc == 0, run.output
        given = run.task('give')['result']
        assert given['changed'] is True and given['credential']['public_key'] == laptop['public_key']
        assert laptop['private_key'] not in run.output
        body, took_fetch, attempts = first_fetch(extended, address, client_log)
        assert body == http_backend.token
        assert client.pid == pid and client.running()          # no restart
        with open(os.path.join(str(auth_dir), address[:-len('.onion')] + '.auth_private')) as handle:
            assert ca.parse_line(handle.read())[0] == address[:-len('.onion')]

        # a stream opened now, before the removal
        open_stream = socks_connect(extended, address, username='opened-before')

        # taken away: a new request must fetch a new descriptor, which tor cannot decrypt
        run = run_playbook([{'name': 'take', MODULE: {
            'control_port': client.control_port, 'cookie_path': client.cookie_path, 'address': address,
            'state': 'absent'}}], tmp_path)
        assert run.rc == 0, run.output
        assert run.task('take')['result']['changed'] is True
        assert os.listdir(str(auth_dir)) == []
        with connect(port=client.control_port, cookie_path=client.cookie_path) as ctl:
            assert ca.view(ctl) == []
        outcomes = {}
        for label, username in (('same isolation', None), ('new isolation', 'after-removal')):
            code, took = refusal(extended, address, http_backend.token, username=username)
            outcomes[label] = (code, took)
        _say('client auth on privnet: client tor %.1fs; refused without key in %.1fs; module -> first fetch '
             '%.1fs (%d attempts); after removal: %s' % (
                 t_client, took_refused, took_fetch, attempts,
                 ', '.join('%s %s in %.1fs' % (k, '0x%02x' % c if c else 'no refusal', t)
                           for k, (c, t) in outcomes.items())))
        # tor forgot the descriptor with the key (ONION_CLIENT_AUTH_REMOVE removes it from its client
        # cache): every new stream, on the circuits of before or on new ones, needs a new descriptor
        # that tor cannot decrypt any more
        assert outcomes['new isolation'][0] == MISSING_CLIENT_AUTH
        assert outcomes['same isolation'][0] == MISSING_CLIENT_AUTH
        # a stream that was open stays open: its rendezvous circuit is not torn down
        assert http_request(open_stream, address) == (200, http_backend.token)
    finally:
        if client is not None:
            pn.kill_pids([(client.pid, client.starttime)], grace=5.0)
            client.proc.wait(timeout=10)
        with connect(port=onion.control_port, cookie_path=onion.cookie_path) as c:
            rest = [s for s in hs.services_from_conf(c.get_conf('HiddenServiceOptions')) if s['path'] != service_dir]
            c.set_conf(hs.block_to_conf(rest))
