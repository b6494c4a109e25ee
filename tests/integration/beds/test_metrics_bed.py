# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Watching the hosts of the bed (hostbed: systemd-nspawn hosts with Debian's packaged tor joined to the
private network): each host's tor gets a MetricsPort (a marked block in /etc/tor/torrc, written by this test's
own playbook: the tor role has no tor_metrics_port yet) and one onion service (tor_hidden_service); the
prometheus role writes the scrape config from the inventory; Debian's Prometheus, started and stopped by
harness.prometheus by PID on the controller, scrapes every host.

- Prometheus's /api/v1/query has every host's onion-service metrics, with the host and onion labels;
- tor_metrics_facts, run on each host over ssh, returns the values of a direct scrape, and Prometheus's;
- clients fetching a host's service raise its circuit counters, in the facts and in Prometheus.
Every host is put back as found (block, service, web server removed, tor restarted) in a finally.
"""

import json
import os
import sys
import time

import pytest

from harness import prometheus as prom
from harness.ansible_run import run_playbook
from harness.reach import Reach, bed_tor
from harness.ports import free_ports

# shared with the private network's metrics test, in the room beside this one
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'privnet'))
from test_metrics_privnet import ROLE_VARS, STABLE, direct, flatten, isolated_fetch  # noqa: E402

FETCH_DEADLINE = float(os.environ.get('ONIONLAB_FETCH_DEADLINE', '60'))
SERVICE_DIR = '/var/lib/tor/onionlab_metrics_web'
MARKER = '# {mark} onionlab test_metrics_bed'


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)


def bed_play(hostbed, tmp_path, plays, extra_inventory):
    env = {'ANSIBLE_HOST_KEY_CHECKING': 'False'}
    return run_playbook(plays, tmp_path, extra_env=env, timeout=600,
                        extra_args=['-i', hostbed.inventory_path, '-i', str(extra_inventory)])


SET_UP = [
    {'name': 'MetricsPort', 'ansible.builtin.blockinfile': {
        'path': '/etc/tor/torrc', 'marker': MARKER,
        'block': 'MetricsPort 127.0.0.1:{{ tor_metrics_port }}\nMetricsPortPolicy accept 127.0.0.1\n'}},
    {'name': 'tor restarted', 'ansible.builtin.systemd': {'name': 'tor@default', 'state': 'restarted'}},
    {'name': 'web server', 'ansible.builtin.command':
        'systemd-run --unit=onionlab-metrics-web --property=WorkingDirectory=/etc '
        'python3 -m http.server --bind 127.0.0.1 {{ metrics_web_port }}'},
    {'name': 'onion service', 'onionlab.tor.tor_hidden_service': {
        'path': SERVICE_DIR, 'ports': [{'port': 80, 'target_port': '{{ metrics_web_port }}'}]},
     'register': 'svc'},
    {'name': 'address', 'ansible.builtin.set_fact': {'metrics_onion': '{{ svc.onion_address }}'}},
]
TEAR_DOWN = [
    {'name': 'onion service removed', 'onionlab.tor.tor_hidden_service': {'path': SERVICE_DIR, 'state': 'absent'},
     'ignore_errors': True},
    {'name': 'web server stopped', 'ansible.builtin.command': 'systemctl stop onionlab-metrics-web',
     'ignore_errors': True},
    {'name': 'MetricsPort removed', 'ansible.builtin.blockinfile': {
        'path': '/etc/tor/torrc', 'marker': MARKER, 'state': 'absent'}},
    {'name': 'service directory removed', 'ansible.builtin.file': {'path': SERVICE_DIR, 'state': 'absent'}},
    {'name': 'tor restarted', 'ansible.builtin.systemd': {'name': 'tor@default', 'state': 'restarted'}},
]


class Bed(object):
    pass


@pytest.fixture(scope='module')
def watched_bed(hostbed, privnet, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('metrics-bed')
    names = [h['name'] for h in hostbed.hosts]
    ports = free_ports(2 * len(names))
    bed = Bed()
    bed.hosts = dict((n, {'tor_metrics_port': ports[i], 'metrics_web_port': ports[len(names) + i]})
                     for i, n in enumerate(names))
    bed.inventory = tmp / 'metrics.json'
    bed.inventory.write_text(json.dumps({'testbed': {'hosts': bed.hosts}}))
    bed.tmp = tmp
    t0 = time.monotonic()
    try:
        run = bed_play(hostbed, tmp, [{'hosts': 'testbed', 'gather_facts': False, 'tasks': SET_UP}], bed.inventory)
        assert run.rc == 0, run.output
        for n in names:
            bed.hosts[n]['address'] = run.task('onion service', host=n)['result']['onion_address']
            bed.hosts[n]['onion'] = bed.hosts[n]['address'][:-len('.onion')]
            bed.hosts[n]['url'] = 'http://127.0.0.1:%d/metrics' % bed.hosts[n]['tor_metrics_port']
        for n in names:   # once the HSDirs the client asks serve the host's descriptor (harness.reach)
            host = next(h for h in hostbed.hosts if h['name'] == n)
            with Reach(bed_tor(host), privnet.client) as reach:
                reach.fetch(bed.hosts[n]['address'], path='/hostname', deadline=FETCH_DEADLINE, since=None)
        _say('%d hosts with MetricsPort and a service, reachable, in %.1fs' % (len(names), time.monotonic() - t0))
        yield bed
    finally:
        run = bed_play(hostbed, tmp, [{'hosts': 'testbed', 'gather_facts': False, 'tasks': TEAR_DOWN}],
                       bed.inventory)
        assert run.rc == 0, run.output


@pytest.fixture(scope='module')
def bed_prometheus(watched_bed, hostbed):
    prom.ensure_prometheus()
    tmp = watched_bed.tmp
    etc = tmp / 'etc-prometheus'
    run = bed_play(hostbed, tmp, [{'hosts': 'localhost', 'gather_facts': False, 'roles': [dict(
        role='onionlab.tor.prometheus', prometheus_config_dir=str(etc), prometheus_tor_hosts="{{ groups['testbed'] }}",
        **ROLE_VARS)]}], watched_bed.inventory)
    assert run.rc == 0, run.output
    rc, out = prom.promtool('check', 'config', str(etc / 'prometheus.yml'))
    assert rc == 0, out
    server = prom.Prometheus(etc / 'prometheus.yml', base_dir=str(tmp / 'run'))
    try:
        server.start()
        _say('prometheus %s ready in %.1fs (pid %d)' % (server.url, server.timings['ready'], server.pid))
        yield server
    finally:
        server.stop()


def host_facts(hostbed, bed, names=None):
    """tor_metrics_facts run on every host over ssh: {host: facts}."""
    args = {'metrics_port': '{{ tor_metrics_port }}'}
    if names:
        args['names'] = names
    run = bed_play(hostbed, bed.tmp, [{'hosts': 'testbed', 'gather_facts': False, 'tasks': [
        {'name': 'facts', 'onionlab.tor.tor_metrics_facts': args}]}], bed.inventory)
    assert run.rc == 0, run.output
    return dict((n, run.task('facts', host=n)['result']['ansible_facts']['tor_metrics']) for n in bed.hosts)


def test_facts_on_each_host_equal_a_direct_scrape(watched_bed, hostbed):
    for attempt in range(5):
        before = dict((n, direct(h['url'])) for n, h in watched_bed.hosts.items())
        got = host_facts(hostbed, watched_bed)
        after = dict((n, direct(h['url'])) for n, h in watched_bed.hosts.items())
        if before == after:
            break
    assert before == after, 'the pages kept changing'
    for n, h in watched_bed.hosts.items():
        assert list(got[n]['services']) == [h['onion']]
        assert flatten(got[n]['services']) == before[n]


def test_prometheus_has_every_host(bed_prometheus, watched_bed, hostbed):
    server = bed_prometheus
    t0 = time.monotonic()
    server.wait('every host up', lambda: len(server.query('up{job="tor"} == 1')) == len(watched_bed.hosts),
                timeout=60)
    want = {(n, h['onion']) for n, h in watched_bed.hosts.items()}
    for name in ('tor_hs_intro_num_total', 'tor_hs_rdv_num_total', 'tor_hs_intro_established_count',
                 'tor_hs_pow_suggested_effort', 'tor_hs_app_read_bytes_total',
                 'tor_hs_intro_circ_build_time_bucket'):
        series = server.wait(name, lambda: server.query(name), timeout=30)
        assert {(labels['host'], labels['onion']) for labels, _ in series} == want, (name, series)
    _say('prometheus: %d hosts, every tor_hs_ metric per host and service in %.1fs'
         % (len(want), time.monotonic() - t0))
    got = host_facts(hostbed, watched_bed, names=list(STABLE))
    for n, f in got.items():
        expect = flatten(f['services'])

        def agree():
            seen = {}
            for name in STABLE:
                for labels, value in server.query('%s{host="%s"}' % (name, n)):
                    rest = tuple(sorted((k, v) for k, v in labels.items()
                                        if k not in ('__name__', 'onion', 'host', 'instance', 'job')))
                    seen[(name, labels['onion'], rest)] = value
            return seen == expect

        server.wait('%s: Prometheus equal to the facts' % n, agree, timeout=20)


def test_fetches_raise_counters_on_one_host(bed_prometheus, watched_bed, hostbed, privnet):
    server = bed_prometheus
    name = sorted(watched_bed.hosts)[0]
    h = watched_bed.hosts[name]
    before = host_facts(hostbed, watched_bed, names=['tor_hs_rdv_num_total'])
    for _ in range(3):
        isolated_fetch(privnet.socks_port, h['address'])
    after = host_facts(hostbed, watched_bed, names=['tor_hs_rdv_num_total'])
    for n in watched_bed.hosts:
        b = before[n]['services'][watched_bed.hosts[n]['onion']]['tor_hs_rdv_num_total']
        a = after[n]['services'][watched_bed.hosts[n]['onion']]['tor_hs_rdv_num_total']
        assert (a >= b + 3) if n == name else (a == b), (n, b, a)
    a = after[name]['services'][h['onion']]['tor_hs_rdv_num_total']
    expr = 'tor_hs_rdv_num_total{host="%s",onion="%s"}' % (name, h['onion'])
    server.wait('Prometheus sees the new circuits', lambda: [v for _, v in server.query(expr) if v >= a], timeout=20)
    rising = server.query('increase(tor_hs_rdv_num_total{job="tor"}[1m]) > 0')
    assert [(labels['host'], labels['onion']) for labels, _ in rising] == [(name, h['onion'])], rising
