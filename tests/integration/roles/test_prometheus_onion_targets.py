# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prometheus role's onion mode (issue 42, "monitoring that never needs the IP"), on the controller
(ansible-playbook; Debian's promtool checks what the role writes; no tor):

- a host that sets prometheus_metrics_onion is scraped at <address>.onion:<port> (its tor_metrics_port's port, its
  node_exporter port) in the jobs tor_onion / onionlab_watchdog_onion, through prometheus_onion_proxy_url, with the
  onion interval and timeout and the job label of the address jobs (the rules hold); its address is nowhere in the
  file; the other hosts are scraped as before;
- a second run changes nothing; a check-mode run with diff shows a new address and writes nothing;
- a bad address (wrong checksum, not an address) or a proxy that is not socks5://ADDRESS:PORT is refused with one
  message naming the host, before anything is written.
The same through a real tor, with client authorization, from a network namespace with no route to the service host:
test_metrics_onion_privnet.py.
"""

import json
import os

import yaml

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from harness import prometheus as prom
from harness.ansible_run import run_playbook

ROLE_VARS = {'prometheus_install': False, 'prometheus_manage_service': False}


def address():
    return onion.onion_address(onion.ed25519_public_from_expanded(os.urandom(64)))


def role(tmp_path, hosts, check=False, diff=False, **extra):
    inventory = tmp_path / 'hosts.json'
    inventory.write_text(json.dumps({'all': {'hosts': hosts}}))
    etc = tmp_path / 'etc'
    role_vars = dict(ROLE_VARS, role='onionlab.tor.prometheus', prometheus_config_dir=str(etc),
                     prometheus_tor_hosts=['web1', 'web2'], prometheus_watchdog_hosts=['web2', 'web3'], **extra)
    run = run_playbook([{'hosts': 'localhost', 'gather_facts': False, 'roles': [role_vars]}], tmp_path,
                       check=check, diff=diff, extra_args=['-i', str(inventory)])
    return etc, run


def test_onion_hosts_are_scraped_through_tor_and_never_at_their_address(tmp_path):
    secret = address()
    hosts = {'web1': {'ansible_host': '10.0.0.5', 'tor_metrics_port': 9035},
             'web2': {'ansible_host': '10.0.0.6', 'tor_metrics_port': '127.0.0.1:9036',
                      'prometheus_node_exporter_port': 9101, 'prometheus_metrics_onion': secret + '.onion'},
             'web3': {'ansible_host': '10.0.0.7'}}
    extra = {'prometheus_onion_proxy_url': 'socks5://127.0.0.1:9150', 'prometheus_onion_scrape_interval': '2m',
             'prometheus_onion_scrape_timeout': '45s'}
    etc, run = role(tmp_path, hosts, **extra)
    assert run.rc == 0, run.output
    text = (etc / 'prometheus.yml').read_text()
    assert '10.0.0.6' not in text and '127.0.0.1:9036' not in text
    rc, out = prom.promtool('check', 'config', str(etc / 'prometheus.yml'))
    assert rc == 0, out
    jobs = dict((j['job_name'], j) for j in yaml.safe_load(text)['scrape_configs'])
    assert sorted(jobs) == ['onionlab_watchdog', 'onionlab_watchdog_onion', 'tor', 'tor_onion']
    assert jobs['tor']['static_configs'] == [{'targets': ['10.0.0.5:9035'], 'labels': {'host': 'web1'}}]
    assert 'proxy_url' not in jobs['tor'] and 'proxy_url' not in jobs['onionlab_watchdog']
    assert jobs['onionlab_watchdog']['static_configs'] == [{'targets': ['10.0.0.7:9100'], 'labels': {'host': 'web3'}}]
    for name, port, job in (('tor_onion', 9036, 'tor'), ('onionlab_watchdog_onion', 9101, 'onionlab_watchdog')):
        assert jobs[name]['proxy_url'] == 'socks5://127.0.0.1:9150'
        assert (jobs[name]['scrape_interval'], jobs[name]['scrape_timeout']) == ('2m', '45s')
        assert jobs[name]['static_configs'] == [{'targets': ['%s.onion:%d' % (secret, port)],
                                                 'labels': {'job': job, 'host': 'web2'}}]

    # again, the address without .onion: the same target, nothing changed
    hosts['web2']['prometheus_metrics_onion'] = secret
    again = role(tmp_path, hosts, **extra)[1]
    assert again.rc == 0 and again.stats['localhost']['changed'] == 0, again.output
    # check mode with diff: another address is reported, nothing written
    other = address()
    hosts['web2']['prometheus_metrics_onion'] = other
    checked = role(tmp_path, hosts, check=True, diff=True, **extra)[1]
    assert checked.rc == 0 and checked.stats['localhost']['changed'] == 1, checked.output
    assert '+      - targets: ["%s.onion:9036"]' % other in checked.stdout, checked.stdout
    assert secret in (etc / 'prometheus.yml').read_text()


def test_a_bad_address_or_proxy_is_refused_before_anything_is_written(tmp_path):
    good = address()
    typo = good[:10] + ('a' if good[10] != 'a' else 'b') + good[11:]
    hosts = {'web1': {'tor_metrics_port': 9035, 'prometheus_metrics_onion': typo + '.onion'},
             'web2': {'tor_metrics_port': 9035, 'prometheus_metrics_onion': 'web2.example.org'},
             'web3': {'prometheus_metrics_onion': good}}
    etc, run = role(tmp_path, hosts)
    assert run.rc != 0
    said = ' '.join(run.stdout.split())
    assert ('prometheus: these variables must each name a v3 onion address (56 letters a-z and digits 2-7, then '
            '.onion): prometheus_metrics_onion of host web1: the value "%s.onion" has a wrong checksum (a character '
            'mistyped); prometheus_metrics_onion of host web2: the value "web2.example.org" is not 56 letters a-z and '
            'digits 2-7 (then .onion). Nothing was changed.' % typo) in said, run.output
    assert 'Traceback' not in run.output
    assert not etc.exists()

    hosts = {'web3': {'prometheus_metrics_onion': good}}
    etc, run = role(tmp_path, hosts, prometheus_onion_proxy_url='http://127.0.0.1:9050')
    assert run.rc != 0
    assert ('prometheus: prometheus_onion_proxy_url must be the SOCKS5 port of this host\'s tor, '
            'socks5://ADDRESS:PORT (socks5://127.0.0.1:9050), to scrape web3 at their prometheus_metrics_onion; got '
            '"http://127.0.0.1:9050"') in ' '.join(run.stdout.split()), run.output
    assert not etc.exists()
