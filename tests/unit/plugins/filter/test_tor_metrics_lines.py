# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_metrics_lines: the tor role's tor_metrics_port as torrc lines; what tor accepts and what is refused."""

import os
import subprocess
import tempfile

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.tor_metrics_lines import tor_metrics_lines


@pytest.mark.parametrize('port, policy, lines', [
    (9035, None, ['MetricsPort 127.0.0.1:9035', 'MetricsPortPolicy accept 127.0.0.1/32', 'MetricsPortPolicy reject *']),
    ('9035', ['127.0.0.1'], ['MetricsPort 127.0.0.1:9035', 'MetricsPortPolicy accept 127.0.0.1/32',
                             'MetricsPortPolicy reject *']),
    ('10.0.0.5:9035', ['10.0.0.2', '10.1.0.0/16'], [
        'MetricsPort 10.0.0.5:9035', 'MetricsPortPolicy accept 10.0.0.2/32', 'MetricsPortPolicy accept 10.1.0.0/16',
        'MetricsPortPolicy reject *']),
    ('[fd00::5]:9035', ['fd00::2', '[fd00:1::]/64'], [
        'MetricsPort [fd00::5]:9035', 'MetricsPortPolicy accept [fd00::2]/128',
        'MetricsPortPolicy accept [fd00:1::]/64', 'MetricsPortPolicy reject *']),
])
def test_lines(port, policy, lines):
    assert tor_metrics_lines(port, policy) == lines


@pytest.mark.parametrize('port', [None, '', '  ', 0])
def test_off(port):
    assert tor_metrics_lines(port) == []


@pytest.mark.parametrize('port, policy, allow, message', [
    ('metrics.example:9035', None, False, 'a host name is not accepted'),
    (':9035', None, False, 'must be a port'),
    ('10.0.0.5', None, False, 'must be a port'),
    (True, None, False, 'must be a port'),
    (70000, None, False, 'between 1 and 65535'),
    ('999.0.0.1:9035', None, False, 'is not an IP address'),
    (9035, ['*'], False, 'lets every address read'),
    (9035, ['0.0.0.0/0'], False, 'lets every address read'),
    (9035, ['::/0'], False, 'lets every address read'),
    (9035, ['accept 10.0.0.2'], False, 'without accept/reject or ports'),
    (9035, ['10.0.0.2:80'], False, 'without accept/reject or ports'),
    (9035, ['10.0.0.2\nControlPort 9999'], False, 'without accept/reject or ports'),
    (9035, [], False, 'is empty'),
    (9035, '127.0.0.1', False, 'must be a list'),
    (9035, [7], False, 'entries are IP addresses or networks'),
    ('10.0.0.5:9035', ['127.0.0.1'], False, 'admits only loopback'),
])
def test_refused(port, policy, allow, message):
    with pytest.raises(AnsibleFilterError, match=message) as info:
        tor_metrics_lines(port, policy, allow)
    assert str(info.value).startswith('tor_metrics_port: ')


def test_everyone_when_allowed():
    assert tor_metrics_lines(9035, ['*'], True)[1] == 'MetricsPortPolicy accept *'
    assert tor_metrics_lines(9035, ['0.0.0.0/0'], True)[1] == 'MetricsPortPolicy accept 0.0.0.0/0'


@pytest.mark.skipif(not os.path.exists('/usr/bin/tor'), reason='needs tor')
def test_tor_accepts_the_lines():
    """tor --verify-config reads every shape the filter writes."""
    lines = (tor_metrics_lines('10.0.0.5:9035', ['10.0.0.2', '10.1.0.0/16', 'fd00::2', 'fd00:1::/64'])
             + ['DisableNetwork 1', 'SocksPort 0'])
    with tempfile.TemporaryDirectory() as d:
        torrc = os.path.join(d, 'torrc')
        with open(torrc, 'w') as f:
            f.write('\n'.join(lines + ['DataDirectory %s/data' % d]) + '\n')
        p = subprocess.run(['/usr/bin/tor', '--verify-config', '-f', torrc, '--defaults-torrc', os.devnull],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        assert p.returncode == 0, p.stdout.decode()
