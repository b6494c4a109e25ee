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


def test_every_wrong_metrics_onion_is_named_in_one_message():
    typo = ONION[:10] + ('a' if ONION[10] != 'a' else 'b') + ONION[11:]
    hv = {'a': {'tor_metrics_port': 9035, 'prometheus_metrics_onion': typo},
          'b': {'prometheus_metrics_onion': 'b.example.org'}, 'c': {'prometheus_metrics_onion': ONION}}
    with pytest.raises(AnsibleFilterError) as e:
        prometheus_targets(['a'], hostvars=hv, watchdog_hosts=['b', 'c'], onion_proxy_url='socks5://127.0.0.1:9050')
    assert str(e.value) == (
        'prometheus: these variables must each name a v3 onion address (56 letters a-z and digits 2-7, then .onion): '
        'prometheus_metrics_onion of host a: the value "%s" has a wrong checksum (a character mistyped); '
        'prometheus_metrics_onion of host b: the value "b.example.org" is not 56 letters a-z and digits 2-7 (then '
        '.onion). Nothing was changed.' % typo)


@pytest.mark.parametrize('proxy', ['http://127.0.0.1:9050', 'socks5://127.0.0.1', 'socks5://127.0.0.1:0', None, 9050])
def test_a_host_scraped_through_tor_needs_a_socks5_proxy(proxy):
    hv = {'a': {'tor_metrics_port': 9035, 'prometheus_metrics_onion': ONION}, 'b': {'tor_metrics_port': 9035}}
    with pytest.raises(AnsibleFilterError) as e:
        prometheus_targets(['a', 'b'], hostvars=hv, onion_proxy_url=proxy)
    assert str(e.value).startswith("prometheus: prometheus_onion_proxy_url must be the SOCKS5 port of this host's tor, "
                                   "socks5://ADDRESS:PORT (socks5://127.0.0.1:9050), to scrape a at their "
                                   "prometheus_metrics_onion; got "), str(e.value)
    # no host scraped through tor: the proxy is not used, not checked
    assert prometheus_targets(['b'], hostvars=hv, onion_proxy_url=proxy)['tor'][0]['target'] == 'b:9035'
    assert prometheus_targets(['a'], hostvars=hv, onion_proxy_url='socks5://[::1]:9050')['tor'][0]['onion']


def test_targets_as_the_scrape_config_is_written():
    """The template only writes lines: the targets at their address and the jobs through tor come split here."""
    hv = {'a': {'tor_metrics_port': 9035, 'prometheus_metrics_onion': ONION}, 'b': {'tor_metrics_port': 9035},
          'w': {'ansible_host': '10.0.0.9'}}
    out = prometheus_targets(['a', 'b'], hostvars=hv, watchdog_hosts=['a', 'w'], onion_proxy_url='socks5://127.0.0.1:9050',
                             tor_job='tors', watchdog_job='dogs')
    assert [t['host'] for t in out['tor_direct']] == ['b']
    assert [t['host'] for t in out['watchdog_direct']] == ['w']
    assert [(j['job'], j['label'], [t['host'] for t in j['targets']]) for j in out['onion_jobs']] == [
        ('tors_onion', 'tors', ['a']), ('dogs_onion', 'dogs', ['a'])]
    plain = prometheus_targets(['b'], hostvars=hv)
    assert plain['onion_jobs'] == [] and plain['tor_direct'] == plain['tor']
