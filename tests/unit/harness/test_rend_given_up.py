# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A request through a client is given up at the service's own event, its tor logging that it gave the rendezvous
up (harness.fixtures.unless_rend_given_up; used by harness.reach.Reach and test_privnet_client_auth), against a
SOCKS proxy on a real socket that accepts and never answers."""

import socket
import threading
import time

from harness.fixtures import SocksError, socks5_http_get, unless_rend_given_up

LINE = ('Dec 07 10:00:00.000 [info] hs_circ_retry_service_rendezvous_point(): Attempt to build a rendezvous circuit '
        'to $8D65AAAA has failed with 2 attempts. Giving up.\n')


def _silent_proxy():
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen(4)
    held = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)           # accepted, never answered: tor waiting on a rendezvous

    threading.Thread(target=serve, daemon=True).start()
    return server, held


def test_given_up_when_the_service_logs_it_else_the_request_runs_to_its_answer(tmp_path):
    server, held = _silent_proxy()
    log = tmp_path / 'rend.log'
    log.write_text('an older give-up, before the request: ' + LINE)
    port = server.getsockname()[1]
    try:
        threading.Timer(1.0, lambda: log.open('a').write(LINE)).start()
        t0 = time.monotonic()
        result, error, gave_up = unless_rend_given_up(
            lambda opened: socks5_http_get(port, 'x' * 56 + '.onion', timeout=60, opened=opened), str(log))
        took = time.monotonic() - t0
        assert result is None and error is None and 'has failed with 2 attempts' in gave_up
        assert 1.0 <= took < 5.0, took
        # no log (a tor without one): the request runs to its own timeout and its error comes back
        t0 = time.monotonic()
        result, error, gave_up = unless_rend_given_up(
            lambda opened: socks5_http_get(port, 'x' * 56 + '.onion', timeout=1.5, opened=opened), None)
        assert result is None and gave_up is None and isinstance(error, OSError) and not isinstance(error, SocksError)
        assert 1.0 <= time.monotonic() - t0 < 5.0
    finally:
        server.close()
        for conn in held:
            conn.close()
