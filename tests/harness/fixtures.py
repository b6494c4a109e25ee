# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""pytest fixtures and helpers for the two test beds (registered by
tests/conftest.py: ``from harness.fixtures import *``).

Fixtures (session scoped; each starts its bed once and stops it at the end,
also when tests fail):

* ``privnet`` -- a ``harness.privnet.PrivNet``: 3 authorities, 3 relays, a
  client (``privnet.socks_port``) and an onion-service tor (``privnet.onion``,
  with ``.control_port`` and ``.cookie_path``).  Skipped without tor.
* ``hostbed`` -- a ``harness.hosts.HostBed`` of 3 systemd-nspawn hosts whose
  tors have joined ``privnet``; ``hostbed.inventory_path`` is an Ansible
  inventory (group ``testbed``).  Skipped without root or systemd-nspawn.
* ``http_backend`` -- a tiny HTTP server on 127.0.0.1 answering every GET with
  ``http_backend.token``; ``http_backend.port``.

Helpers: ``socks5_http_get(socks_port, host, port, path)`` (SOCKS5 with the
host name sent to tor, RFC 1928 ATYP 3; its two halves ``socks5_connect`` and
``http_exchange(sock, host, path)``) and ``ansible_adhoc(...)``. A test that
reaches an onion service does it with ``harness.reach.Reach``: it waits for tor's
own events before it fetches, and says what both sides saw when it fails.

Timings go to the terminal (``pytest -s``) and to the ``onionlab_timings``
user property of the test report.
"""

import http.server
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import uuid

import pytest

from harness import hosts as _hosts
from harness import privnet as _privnet
from harness.http_backend import HttpBackend

BIN = os.path.dirname(sys.executable)

# What `from harness.fixtures import *` (tests/conftest.py) registers; the
# helpers are imported by name where needed.
__all__ = ['privnet', 'hostbed', 'stockbed', 'http_backend']


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)
    sys.stderr.flush()


def running_privnet(default_timeout=60.0, **options):
    """A started private network for a fixture to ``yield from``: skipped without tor and tor-gencert, its ready
    timeout from ONIONLAB_PRIVNET_TIMEOUT (else default_timeout), kept with ONIONLAB_KEEP, its timings printed, and
    stopped (by PID) afterwards. options go to PrivNet (n_relays, with_onion, authority_extra, ...)."""
    if not (shutil.which('tor') or os.path.exists(_privnet.TOR)) or not shutil.which('tor-gencert'):
        pytest.skip('tor and tor-gencert are needed for the private network')
    net = _privnet.PrivNet(ready_timeout=float(os.environ.get('ONIONLAB_PRIVNET_TIMEOUT', default_timeout)),
                           keep=bool(os.environ.get('ONIONLAB_KEEP')), **options)
    net.start()
    _say('privnet (%d relays) ready in %.1fs (%s)' % (net.n_relays, net.timings['ready'],
                                                      ', '.join('%s %.1fs' % kv for kv in net.timings.items())))
    try:
        yield net
    finally:
        net.stop()


@pytest.fixture(scope='session')
def privnet():
    yield from running_privnet()


def running_bed(n, name_prefix, privnet=None, **options):
    """Bed hosts for a fixture to ``yield from``: skipped without root, their Debian packages ensured, joined to
    privnet when one is given, and stopped (by PID) afterwards. options go to HostBed (stock, apt_packages, ...)."""
    if os.geteuid() != 0:
        pytest.skip('the bed needs root (systemd-nspawn)')
    _hosts.ensure_packages()
    bed = _hosts.HostBed(n=n, name_prefix=name_prefix,
                         privnet_join_lines=privnet.join_torrc_lines() if privnet is not None else None, **options)
    bed.up()
    try:
        yield bed
    finally:
        bed.down()


@pytest.fixture(scope='session')
def hostbed(privnet):
    if os.geteuid() != 0:
        pytest.skip('the multi-host bed needs root (systemd-nspawn)')
    _hosts.ensure_packages()
    if not shutil.which('systemd-nspawn'):
        pytest.skip('systemd-nspawn is not available')
    bed = _hosts.HostBed(n=int(os.environ.get('ONIONLAB_HOSTS', '3')),
                         privnet_join_lines=privnet.join_torrc_lines())
    bed.up()
    _say('%d hosts up in %.1fs (rootfs %s %.1fs, copy %.1fs, boot %.1fs)' % (
        bed.n, bed.timings['total'], 'built' if bed.timings['rootfs_built'] else 'cached',
        bed.timings['rootfs'], bed.timings['copy'], bed.timings['boot']))
    try:
        yield bed
    finally:
        bed.down()


@pytest.fixture(scope='session')
def stockbed():
    """Hosts with tor as Debian ships it (stock /etc/tor/torrc, ControlSocket /run/tor/control,
    cookie auth, the packaged systemd unit and its sandbox), offline (DisableNetwork 1): what an
    operator's own Debian host looks like. ONIONLAB_STOCK_HOSTS hosts (default 1). A test that
    breaks a host's tor must leave it as it found it."""
    if os.geteuid() != 0:
        pytest.skip('the multi-host bed needs root (systemd-nspawn)')
    _hosts.ensure_packages()
    if not shutil.which('systemd-nspawn'):
        pytest.skip('systemd-nspawn is not available')
    bed = _hosts.HostBed(n=int(os.environ.get('ONIONLAB_STOCK_HOSTS', '1')), name_prefix='stock', stock=True)
    bed.up()
    _say('%d stock hosts up in %.1fs' % (bed.n, bed.timings['total']))
    try:
        yield bed
    finally:
        bed.down()


@pytest.fixture(scope='session')
def http_backend():
    token = 'onionlab-%s' % uuid.uuid4().hex

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = token.encode()
            self.send_response(200)
            self.send_header('Content-Type', 'text/plain')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HttpBackend(Handler)
    server.token = token
    try:
        yield server
    finally:
        server.stop()


# ---------------------------------------------------------------------------
# SOCKS5 (RFC 1928) with the host name resolved by tor
# ---------------------------------------------------------------------------

SOCKS_ERRORS = {1: 'general failure', 2: 'not allowed', 3: 'network unreachable', 4: 'host unreachable',
                5: 'connection refused', 6: 'TTL expired', 7: 'command not supported',
                8: 'address type not supported',
                0xf0: 'onion service descriptor not found', 0xf1: 'onion service descriptor invalid',
                0xf2: 'onion service introduction failed', 0xf3: 'onion service rendezvous failed',
                0xf4: 'onion service missing client authorization',
                0xf5: 'onion service wrong client authorization', 0xf6: 'onion address invalid',
                0xf7: 'onion service introduction timed out'}


class SocksError(OSError):
    """A SOCKS failure; .code is the proxy's reply code when it refused the connect (tor's 0xf0-0xf7 included)."""

    def __init__(self, message, code=None):
        OSError.__init__(self, message)
        self.code = code


def _recv_exact(sock, n):
    data = b''
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise SocksError('SOCKS proxy closed the connection')
        data += chunk
    return data


def socks5_connect(socks_port, host, port, timeout=30.0, socks_host='127.0.0.1', username=None, opened=None):
    """A socket connected to host:port through the SOCKS5 proxy (no auth; with username, RFC 1929 with any
    password: tor puts the stream on circuits of its own, IsolateSOCKSAuth being on by default). opened: called
    with the socket once it is connected to the proxy (another thread may then close it to give the request up)."""
    sock = socket.create_connection((socks_host, socks_port), timeout=timeout)
    if opened is not None:
        opened(sock)
    try:
        if username is None:
            sock.sendall(b'\x05\x01\x00')
            if _recv_exact(sock, 2) != b'\x05\x00':
                raise SocksError('SOCKS proxy refused the no-auth method')
        else:
            sock.sendall(b'\x05\x01\x02')
            if _recv_exact(sock, 2) != b'\x05\x02':
                raise SocksError('SOCKS proxy refused username/password')
            user = username.encode()
            sock.sendall(b'\x01' + struct.pack('B', len(user)) + user + b'\x01x')
            if _recv_exact(sock, 2)[1] != 0:
                raise SocksError('SOCKS proxy refused the username')
        name = host.encode('idna') if not host.endswith('.onion') else host.encode('ascii')
        sock.sendall(b'\x05\x01\x00\x03' + struct.pack('B', len(name)) + name + struct.pack('>H', port))
        ver, rep, _, atyp = _recv_exact(sock, 4)
        if ver != 5:
            raise SocksError('not a SOCKS5 reply')
        if rep != 0:
            raise SocksError('SOCKS connect failed: %s (0x%02x)' % (SOCKS_ERRORS.get(rep, 'unknown'), rep), rep)
        if atyp == 1:
            _recv_exact(sock, 4 + 2)
        elif atyp == 4:
            _recv_exact(sock, 16 + 2)
        elif atyp == 3:
            _recv_exact(sock, _recv_exact(sock, 1)[0] + 2)
        return sock
    except BaseException:
        sock.close()
        raise


def http_exchange(sock, host, path='/'):
    """(status, body text) of an HTTP/1.0 GET of path on a connected socket (e.g. socks5_connect's), read to the
    end of the answer; the socket is closed afterwards. Not an HTTP answer: a SocksError (an OSError) saying so."""
    with sock:
        sock.sendall(('GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n' % (path, host)).encode())
        data = b''
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b'\r\n\r\n')
    m = re.match(br'HTTP/1\.[01] (\d{3})', head)
    if not m:
        raise SocksError('no HTTP reply: %r' % head[:100])
    return int(m.group(1)), body.decode('utf-8', 'replace')


def socks5_http_get(socks_port, host, port=80, path='/', timeout=30.0, username=None, opened=None):
    """(status, body) of an HTTP/1.0 GET through the proxy (username: a SOCKS isolation of its own; opened: as
    socks5_connect's)."""
    return http_exchange(socks5_connect(socks_port, host, port, timeout, username=username, opened=opened), host, path)


# The service's tor gives a rendezvous up (src/feature/hs/hs_circuit.c): its client, which got the introduction's
# ack, then waits on its rendezvous circuit until SocksTimeout (120 s) and answers 0x06 (TTL expired). That log line
# is the event a request through a client waits on besides tor's own SOCKS answer.
REND_GAVE_UP = re.compile(r'Attempt to build a rendezvous circuit to .* has failed with \d+ attempts')


def log_size(path):
    try:
        return os.path.getsize(path)
    except (OSError, TypeError):
        return 0


def log_since(path, mark, keep=60):
    """The last keep lines of a tor log written after mark."""
    try:
        with open(path, errors='replace') as f:
            f.seek(mark)
            lines = f.read().splitlines()
    except (OSError, TypeError) as exc:
        return '  (%s)' % exc
    return '\n'.join('  ' + line for line in lines[-keep:]) or '  (nothing)'


def unless_rend_given_up(request, service_log, name='request'):
    """(result, error, gave_up) of request(opened) run in a thread (opened: called with each socket it opens). When
    the service's tor logs meanwhile that it gave a rendezvous up (REND_GAVE_UP in service_log, its [rend] info
    log), the request's sockets are closed, which ends it at once: gave_up is that line and result None. Without
    service_log the request simply runs to its own answer."""
    mark, box, opened = log_size(service_log), {}, []

    def run():
        try:
            box['result'] = request(opened.append)
        except Exception as exc:  # noqa: BLE001 - handed to the caller
            box['error'] = exc

    worker = threading.Thread(target=run, name='unless_rend_given_up-' + name, daemon=True)
    worker.start()
    gave_up = None
    while worker.is_alive():
        worker.join(0.5)
        if worker.is_alive() and gave_up is None and service_log:
            gave_up = REND_GAVE_UP.search(log_since(service_log, mark, keep=100000))
            if gave_up:
                for sock in opened:
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    sock.close()
    if gave_up:
        result = box.get('result')
        if hasattr(result, 'close'):
            result.close()
        return None, None, gave_up.group(0)[:200]
    return box.get('result'), box.get('error'), None


# ---------------------------------------------------------------------------
# ansible ad-hoc
# ---------------------------------------------------------------------------

_RESULT_RE = re.compile(r'^(\S+) \| (SUCCESS|CHANGED|FAILED!?|UNREACHABLE!?)', re.M)


def ansible_adhoc(inventory, pattern, module, args=None, timeout=120, extra=()):
    """Run the venv's ``ansible`` ad-hoc; returns (rc, {host: status}, output)."""
    cmd = [os.path.join(BIN, 'ansible'), '-i', inventory, pattern, '-m', module]
    if args:
        cmd += ['-a', args]
    cmd += list(extra)
    env = dict(os.environ, ANSIBLE_HOST_KEY_CHECKING='False', ANSIBLE_DEPRECATION_WARNINGS='False',
               ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0', ANSIBLE_RETRY_FILES_ENABLED='False',
               ANSIBLE_PIPELINING='True', PATH=BIN + os.pathsep + os.environ.get('PATH', ''))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    out = p.stdout.decode('utf-8', 'replace')
    return p.returncode, {h: s.rstrip('!') for h, s in _RESULT_RE.findall(out)}, out
