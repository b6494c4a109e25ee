# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The private network made again with new ports when a port it picked was taken before its tor bound it
(a clean-clone run: the beds lane's network failed at "Could not bind to 127.0.0.1:24834: Address already in
use" and every test of the lane errored): what a real tor says then, and PrivNet.start's retry on it."""

import socket
import subprocess

import pytest

from harness import privnet as pn


def test_a_real_tor_on_a_taken_port_says_address_already_in_use(tmp_path):
    with socket.socket() as held:
        held.bind(('127.0.0.1', 0))
        held.listen(1)
        port = held.getsockname()[1]
        data = tmp_path / 'data'
        data.mkdir(mode=0o700)
        p = subprocess.run([pn.TOR, '--ignore-missing-torrc', '-f', '/dev/null', '--defaults-torrc', '/dev/null',
                            '--DataDirectory', str(data), '--DisableNetwork', '1', '--SocksPort', '0',
                            '--ControlPort', '127.0.0.1:%d' % port, '--GeoIPFile', '/dev/null',
                            '--GeoIPv6File', '/dev/null'],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
    assert p.returncode != 0
    assert 'Could not bind to 127.0.0.1:%d: Address already in use' % port in p.stdout, p.stdout


def _scripted(net, errors):
    calls = []

    def _start():
        calls.append(len(net.nodes))
        net.nodes.append(object())          # a node of this attempt, which a retry must drop
        if errors:
            raise errors.pop(0)
    net._start = _start
    net._stop_nodes = lambda: None
    return calls


def test_start_again_with_new_ports_after_a_taken_port(tmp_path):
    net = pn.PrivNet(base_dir=str(tmp_path / 'net'))
    taken = pn.PrivNetError('tor exited early: auth2 (rc 1):\n    [warn] Could not bind to 127.0.0.1:24834: '
                            'Address already in use. Is Tor already running?')
    calls = _scripted(net, [taken, taken])
    assert net.start() is net
    assert calls == [0, 0, 0]               # three attempts, each from no nodes


def test_a_taken_port_three_times_or_another_failure_is_raised(tmp_path):
    net = pn.PrivNet(base_dir=str(tmp_path / 'net'))
    taken = pn.PrivNetError('tor exited early: relay1: Address already in use')
    calls = _scripted(net, [taken, taken, taken])
    with pytest.raises(pn.PrivNetError, match='Address already in use'):
        net.start()
    assert calls == [0, 0, 0]
    net = pn.PrivNet(base_dir=str(tmp_path / 'net2'))
    calls = _scripted(net, [pn.PrivNetError('timed out after 60s waiting until ...')])
    with pytest.raises(pn.PrivNetError, match='timed out'):
        net.start()
    assert calls == [0]
