# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prometheus role's scrape targets (filter prometheus_targets over plugin_utils/prometheus_targets)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.prometheus_targets import prometheus_targets

ONION = 'pg6mmjiyjmcrsslvykfwnntlaru7p5svn6y2ymmju6nubxndf4pscryd.onion'


def test_tor_hosts_by_metrics_port_address_and_onion():
    hv = {'a': {'tor_metrics_port': 9035, 'ansible_host': '10.0.0.5'},
          'b': {'tor_metrics_port': '127.0.0.1:9035', 'ansible_host': '10.0.0.6'},
          'c': {'tor_metrics_port': '[::]:9035', 'ansible_host': 'fd00::7'},
          'd': {'tor_metrics_port': 9036, 'tor_metrics_address': 'metrics.example'},
          'e': {'tor_metrics_port': 9037, 'prometheus_metrics_onion': ONION},
          'f': {'ansible_host': '10.0.0.9'}}
    out = prometheus_targets(['a', 'b', 'c', 'd', 'e', 'f', 'not-in-inventory'], hostvars=hv)
    assert out['tor'] == [
        {'host': 'a', 'onion': False, 'target': '10.0.0.5:9035'},
        {'host': 'b', 'onion': False, 'target': '127.0.0.1:9035'},
        {'host': 'c', 'onion': False, 'target': '[fd00::7]:9035'},
        {'host': 'd', 'onion': False, 'target': 'metrics.example:9036'},
        {'host': 'e', 'onion': True, 'target': ONION + ':9037'}]
    assert out['onionprobe'] == [] and out['watchdog'] == []


def test_onionprobe_and_watchdog_hosts():
    hv = {'p': {'ansible_host': '10.0.0.8'}, 'q': {'onionprobe_exporter_port': '9999',
                                                   'onionprobe_exporter_listen_address': '0.0.0.0'},
          'w': {'ansible_host': '10.0.0.10', 'prometheus_node_exporter_port': 9200},
          'x': {'prometheus_metrics_onion': ONION[:-6]}}
    out = prometheus_targets([], hostvars=hv, onionprobe_hosts=['p', 'q'], watchdog_hosts=['w', 'x', 'gone'],
                             node_exporter_port=9100)
    assert out['onionprobe'] == [{'host': 'p', 'target': '127.0.0.1:9935'}, {'host': 'q', 'target': 'q:9999'}]
    assert out['watchdog'] == [{'host': 'w', 'onion': False, 'target': '10.0.0.10:9200'},
                               {'host': 'x', 'onion': True, 'target': ONION + ':9100'}]


@pytest.mark.parametrize('hosts, hv, message', [
    ({'tor': ['web1']}, {'web1': {'tor_metrics_port': '9035\n- job: x'}},
     "host web1: tor_metrics_port must be its tor's MetricsPort, a port (9035) or an IP address and port"),
    ({'tor': ['web1']}, {'web1': {'tor_metrics_port': 70000}}, 'host web1: tor_metrics_port must be'),
    ({'onionprobe_hosts': ['p']}, {'p': {'onionprobe_exporter_port': 'x'}},
     'host p: onionprobe_exporter_port must be a port (1-65535), got x'),
    ({'onionprobe_hosts': ['p']}, {'p': {'onionprobe_exporter_port': 0}}, 'host p: onionprobe_exporter_port must be'),
    ({'watchdog_hosts': ['w']}, {'w': {'prometheus_node_exporter_port': 'nine'}},
     'host w: prometheus_node_exporter_port must be a port (1-65535), got nine'),
])
def test_a_wrong_port_names_the_host(hosts, hv, message):
    with pytest.raises(AnsibleFilterError) as e:
        prometheus_targets(hosts.get('tor', []), hostvars=hv, onionprobe_hosts=hosts.get('onionprobe_hosts'),
                           watchdog_hosts=hosts.get('watchdog_hosts'))
    assert message in str(e.value)
