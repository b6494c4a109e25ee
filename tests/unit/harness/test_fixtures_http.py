# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""harness.fixtures.http_exchange, the HTTP/1.0 GET on a connected socket that socks5_http_get, onionbalance's
isolated_get and the privnet tests share, against the other end of a socketpair; and socks5_http_get through a
fake SOCKS5 proxy on loopback that checks the username (the isolation tor keys circuits on)."""

import socket
import threading

import pytest

from harness.fixtures import SocksError, http_exchange, socks5_http_get


def _request(f):
    """The request's lines up to its blank line, read from a socket's file."""
    lines = [f.readline()]
    while lines[-1] not in (b'\r\n', b''):
        lines.append(f.readline())
    return b''.join(lines)


def _answer(peer, reply, seen):
    """Read the request, send reply, close: an HTTP/1.0 server's end."""
    with peer, peer.makefile('rb') as f:
        seen.append(_request(f))
        for i in range(0, len(reply), 7):      # in pieces: the answer is read to its end, not one recv
            peer.sendall(reply[i:i + 7])


def _exchange(reply, path='/'):
    ours, peer = socket.socketpair()
    seen = []
    server = threading.Thread(target=_answer, args=(peer, reply, seen), daemon=True)
    server.start()
    try:
        return http_exchange(ours, 'x.onion', path), seen, ours
    finally:
        server.join(5)


def test_status_and_body_and_the_request_sent():
    (status, body), seen, ours = _exchange(b'HTTP/1.0 404 Not Found\r\nContent-Type: text/plain\r\n\r\nno such \xc3\xa9 page\n',
                                           path='/hostname')
    assert (status, body) == (404, 'no such \u00e9 page\n')
    assert seen == [b'GET /hostname HTTP/1.0\r\nHost: x.onion\r\nConnection: close\r\n\r\n']
    assert ours.fileno() == -1      # closed afterwards


def test_not_an_http_answer_is_an_oserror():
    with pytest.raises(SocksError, match='no HTTP reply') as info:
        _exchange(b'SSH-2.0-OpenSSH_9.2\r\n')
    assert isinstance(info.value, OSError) and info.value.code is None


def _fake_socks(page, users):
    """A SOCKS5 proxy that takes username/password (RFC 1929), records the username, grants any CONNECT (ATYP 3)
    and answers the request itself with page."""
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen(4)

    def serve():
        conn, _ = server.accept()
        with conn:
            f = conn.makefile('rb')
            assert f.read(3) == b'\x05\x01\x02'
            conn.sendall(b'\x05\x02')
            _ver, ulen = f.read(2)
            users.append(f.read(ulen).decode())
            f.read(f.read(1)[0])
            conn.sendall(b'\x01\x00')
            _ver, _cmd, _rsv, atyp, nlen = f.read(5)
            assert atyp == 3
            f.read(nlen + 2)
            conn.sendall(b'\x05\x00\x00\x01' + bytes(6))
            _request(f)
            conn.sendall(b'HTTP/1.0 200 OK\r\n\r\n' + page)
        server.close()

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def test_socks5_http_get_through_a_proxy_with_its_isolation():
    users = []
    port = _fake_socks(b'backend b1\n', users)
    assert socks5_http_get(port, 'x' * 56 + '.onion', timeout=5, username='iso-1') == (200, 'backend b1\n')
    assert users == ['iso-1']


def test_onionbalance_isolated_get_strips_the_body_and_isolates_each_call():
    from harness import onionbalance as ob
    users = []
    assert ob.isolated_get(_fake_socks(b'\nbackend b2\n', users), 'y' * 56 + '.onion', timeout=5) == (200, 'backend b2')
    assert ob.isolated_get(_fake_socks(b'backend b3', users), 'y' * 56 + '.onion', timeout=5, tag='t1') == (200, 'backend b3')
    assert len(users[0]) == 16 and users[1] == 't1'
