# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor's MetricsPort, for real: tor_metrics_facts (through ansible-playbook) and Debian's Prometheus (started
by harness.prometheus, stopped by PID) watching two tors of the private network, each with one onion service.

- the facts equal a direct scrape of the same port (read between two scrapes that agree);
- the role onionlab.tor.prometheus writes the scrape config and alert rules for both tors from an inventory,
  promtool checks them, and Prometheus's /api/v1/query has every tor's onion-service metrics with the onion
  and host labels, equal to the facts;
- clients fetching a service through the network raise its circuit counters, in the facts and in Prometheus;
- a tor with DisableNetwork 1 opens no MetricsPort (the module says what is wrong).
"""

import json
import os
import signal
import sys
import time
import uuid

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import metrics
from harness import prometheus as prom
from harness.ansible_run import run_playbook
from harness.fixtures import http_exchange, socks5_connect
from harness.reach import Reach
from harness.ports import free_ports
from harness.tor_instance import TorInstance

FETCH_DEADLINE = float(os.environ.get('ONIONLAB_FETCH_DEADLINE', '60'))
ROLE_VARS = {'prometheus_install': False, 'prometheus_manage_service': False, 'prometheus_scrape_interval': '1s',
             'prometheus_evaluation_interval': '1s', 'prometheus_scrape_timeout': '1s'}
STABLE = ('tor_hs_intro_num_total', 'tor_hs_rdv_num_total', 'tor_hs_app_read_bytes_total',
          'tor_hs_app_write_bytes_total', 'tor_hs_pow_suggested_effort', 'tor_hs_rend_circ_build_time_count')


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)


class Watched(object):
    """A tor of the private network with a MetricsPort and one onion service (HiddenServiceDir)."""

    def __init__(self, name, node, port, service_dir):
        self.name = name
        self.node = node
        self.port = port
        self.url = 'http://127.0.0.1:%d/metrics' % port
        with open(os.path.join(service_dir, 'hostname')) as f:
            self.address = f.read().strip()
        self.onion = self.address[:-len('.onion')]


@pytest.fixture(scope='module')
def watched(privnet, http_backend):
    tors = []
    ports = free_ports(2)
    for i, port in enumerate(ports):
        name = 'metrics%d' % (i + 1)
        service_dir = os.path.join(privnet.base_dir, '%s-web' % name)
        node = privnet.add_tor(name, ['MetricsPort 127.0.0.1:%d' % port, 'MetricsPortPolicy accept 127.0.0.1',
                                      'HiddenServiceDir %s' % service_dir,
                                      'HiddenServicePort 80 127.0.0.1:%d' % http_backend.port])
        tors.append(Watched(name, node, port, service_dir))
    for t in tors:   # published where the client asks, and reachable, before anything is measured
        # (the service is in the tor's torrc: published before a watch could begin, so the client asks the HSDirs)
        with Reach(t.node, privnet.client) as reach:
            _body, took = reach.fetch(t.address, deadline=FETCH_DEADLINE, since=None)
        _say('%s: %s answered %.1fs after its descriptor was on the HSDirs' % (t.name, t.address, took))
    return tors


def isolated_fetch(socks_port, address, deadline=FETCH_DEADLINE):
    """GET / of address through tor's SocksPort with a SOCKS username never used before: tor
    (IsolateSOCKSAuth, its default) builds a new rendezvous circuit for it, so the service's circuit counters
    rise by one per call. Retries until deadline."""
    t0 = time.monotonic()
    user = uuid.uuid4().hex
    while True:
        try:
            status, body = http_exchange(socks5_connect(socks_port, address, 80, timeout=15, username=user), address)
            if status == 200:
                return time.monotonic() - t0
            raise OSError('answer: HTTP %d %r' % (status, body[:60]))
        except OSError as exc:
            if time.monotonic() - t0 > deadline:
                raise AssertionError('no answer from %s in %.0fs: %s' % (address, deadline, exc))
            time.sleep(1)


def facts(tmp_path, url, **args):
    run = run_playbook([{'name': 'facts', 'onionlab.tor.tor_metrics_facts': dict(metrics_url=url, **args)}],
                       tmp_path)
    assert run.rc == 0, run.output
    return run.task('facts')['result']['ansible_facts']['tor_metrics']


def direct(url):
    """{(name, onion, other labels): value} of the tor_hs_ samples of one scrape."""
    out = {}
    for name, labels, value, _ts in metrics.scrape(url, timeout=5).samples:
        if name.startswith('tor_hs_') and 'onion' in labels:
            rest = tuple(sorted((k, v) for k, v in labels.items() if k != 'onion'))
            out[(name, labels['onion'], rest)] = value
    return out


def flatten(services):
    """The facts' services in direct()'s shape."""
    out = {}
    for onion, table in services.items():
        for name, value in table.items():
            entries = value if isinstance(value, list) else [{'labels': {}, 'value': value}]
            for e in entries:
                out[(name, onion, tuple(sorted(e['labels'].items())))] = float(e['value'])
    return out


def test_facts_equal_a_direct_scrape(watched, tmp_path):
    for t in watched:
        for attempt in range(5):
            before = direct(t.url)
            got = facts(tmp_path, t.url)
            after = direct(t.url)
            if before == after:
                break
        assert before == after, 'the page kept changing'
        assert flatten(got['services']) == before
        assert list(got['services']) == [t.onion]
        assert got['services'][t.onion]['tor_hs_intro_num_total'] >= 1
        assert got['types']['tor_hs_rend_circ_build_time'] == 'histogram'


def test_fetches_raise_the_circuit_counters(watched, privnet, tmp_path):
    """Three clients (three SOCKS identities) fetch the first service: three more introductions and
    rendezvous circuits, more bytes; the other service's counters do not move."""
    t, u = watched
    names = list(STABLE)
    before = facts(tmp_path, t.url, names=names)['services'][t.onion]
    other_before = facts(tmp_path, u.url, names=names)['services'][u.onion]
    took = [isolated_fetch(privnet.socks_port, t.address) for _ in range(3)]
    after = facts(tmp_path, t.url, names=names)['services'][t.onion]
    other_after = facts(tmp_path, u.url, names=names)['services'][u.onion]
    assert after['tor_hs_rdv_num_total'] >= before['tor_hs_rdv_num_total'] + 3, (before, after)
    assert after['tor_hs_intro_num_total'] >= before['tor_hs_intro_num_total'] + 3, (before, after)
    assert after['tor_hs_rend_circ_build_time_count'] >= before['tor_hs_rend_circ_build_time_count'] + 3
    assert after['tor_hs_app_write_bytes_total'][0]['value'] > before['tor_hs_app_write_bytes_total'][0]['value']
    assert after['tor_hs_app_read_bytes_total'][0]['value'] > before['tor_hs_app_read_bytes_total'][0]['value']
    assert other_after == other_before
    _say('3 isolated fetches in %s s: rdv %d -> %d, intro %d -> %d' % (
        ', '.join('%.1f' % x for x in took), before['tor_hs_rdv_num_total'], after['tor_hs_rdv_num_total'],
        before['tor_hs_intro_num_total'], after['tor_hs_intro_num_total']))


def test_disable_network_opens_no_metricsport(tmp_path):
    """Measured: tor 0.4.9 with DisableNetwork 1 (every TorInstance) never opens its MetricsPort."""
    port = free_ports(1)[0]
    with TorInstance(extra=['MetricsPort 127.0.0.1:%d' % port, 'MetricsPortPolicy accept 127.0.0.1']) as t:
        run = run_playbook([{'name': 'facts', 'onionlab.tor.tor_metrics_facts': {'metrics_port': port, 'timeout': 3},
                             'ignore_errors': True}], tmp_path)
        assert 'Opened Metrics listener' not in t.log()
    result = run.task('facts')['result']
    assert result['msg'] == ("cannot read tor's MetricsPort at http://127.0.0.1:%d/metrics: Connection refused (torrc "
                             "needs MetricsPort on this address and a MetricsPortPolicy that accepts this host)" % port)


# -- Prometheus ---------------------------------------------------------------------------------------------

def role_config(tmp_path, tors, **extra):
    """Run the prometheus role on localhost for an inventory of tors; the config and rules dir."""
    inventory = tmp_path / 'tors.json'
    # both forms of tor_metrics_port: the first tor's as in its torrc (address:port), the others' a port
    inventory.write_text(json.dumps({'tor': {'hosts': dict(
        (t.name, {'ansible_host': '127.0.0.1', 'tor_metrics_port': '127.0.0.1:%d' % t.port if i == 0 else t.port})
        for i, t in enumerate(tors))}}))
    etc = tmp_path / 'etc-prometheus'
    role_vars = dict(ROLE_VARS, prometheus_config_dir=str(etc), prometheus_tor_hosts="{{ groups['tor'] }}", **extra)
    run = run_playbook([{'hosts': 'localhost', 'gather_facts': False,
                         'roles': [dict(role='onionlab.tor.prometheus', **role_vars)]}],
                       tmp_path, extra_args=['-i', str(inventory)])
    assert run.rc == 0, run.output
    return etc, run


@pytest.fixture(scope='module')
def prometheus_server(watched, tmp_path_factory):
    prom.ensure_prometheus()
    tmp = tmp_path_factory.mktemp('prometheus')
    etc, _run = role_config(tmp, watched)
    server = prom.Prometheus(etc / 'prometheus.yml', base_dir=str(tmp / 'run'))
    try:
        server.start()
        _say('prometheus %s ready in %.1fs (pid %d)' % (server.url, server.timings['ready'], server.pid))
        yield server
    finally:
        pid = server.pid
        server.stop()
        assert pid is None or not os.path.exists('/proc/%d' % pid) or \
            open('/proc/%d/stat' % pid).read().split()[2] == 'Z'


def test_role_config_passes_promtool(watched, tmp_path):
    etc, run = role_config(tmp_path, watched)
    rc, out = prom.promtool('check', 'config', str(etc / 'prometheus.yml'))
    assert rc == 0 and 'SUCCESS: 1 rule files found' in out, out
    rc, out = prom.promtool('check', 'rules', str(etc / 'onionlab_tor_rules.yml'))
    assert rc == 0 and 'SUCCESS: 16 rules found' in out, out
    text = (etc / 'prometheus.yml').read_text()
    for t in watched:
        assert '"127.0.0.1:%d"' % t.port in text and 'host: "%s"' % t.name in text
    # a second run changes nothing
    _etc, again = role_config(tmp_path, watched)
    assert again.stats['localhost']['changed'] == 0, again.output


def test_role_refuses_a_bad_port(watched, tmp_path):
    inventory = tmp_path / 'bad.json'
    inventory.write_text(json.dumps({'tor': {'hosts': {'web1': {'tor_metrics_port': 'web1.example:9035'},
                                                       'web2': {'tor_metrics_port': '10.0.0.2:9035'}}}}))
    run = run_playbook([{'hosts': 'localhost', 'gather_facts': False, 'roles': [dict(
        role='onionlab.tor.prometheus', prometheus_config_dir=str(tmp_path / 'etc'),
        prometheus_tor_hosts="{{ groups['tor'] }}", **ROLE_VARS)]}], tmp_path, extra_args=['-i', str(inventory)])
    assert run.rc != 0
    assert ("host web1: tor_metrics_port must be its tor's MetricsPort, a port (9035) or an IP address and port "
            "(10.0.0.5:9035, [fd00::5]:9035) as in torrc, got web1.example:9035" in run.stdout), run.output
    assert not (tmp_path / 'etc' / 'prometheus.yml').exists()


def test_alert_rules_fire(tmp_path, watched):
    """promtool test rules: synthetic series for each alert (tor down, no introduction point, a service gone,
    PoW effort rising) fire it with the labels an operator needs; a healthy service fires none."""
    etc, _run = role_config(tmp_path, watched[:1], prometheus_alert_tor_down_for='2m',
                            prometheus_alert_no_intro_for='10m', prometheus_alert_pow_for='5m',
                            prometheus_alert_pow_window='10m')
    tests = tmp_path / 'rules_test.yml'
    tests.write_text(json.dumps({
        'rule_files': [str(etc / 'onionlab_tor_rules.yml')],
        'evaluation_interval': '1m',
        'tests': [{
            'interval': '1m',
            'input_series': [
                {'series': 'up{job="tor",host="web1",instance="10.0.0.1:9035"}', 'values': '1 1 0x10'},
                {'series': 'tor_hs_intro_established_count{job="tor",host="web1",onion="aaa"}', 'values': '3x5 0x20'},
                {'series': 'tor_hs_intro_established_count{job="tor",host="web1",onion="ok"}', 'values': '3x30'},
                {'series': 'tor_hs_intro_established_count{job="tor",host="web1",onion="gone"}',
                 'values': '3x5 stale'},
                {'series': 'tor_hs_pow_suggested_effort{job="tor",host="web1",onion="ddos"}',
                 'values': '0x5 10+10x25'},
                {'series': 'tor_hs_pow_suggested_effort{job="tor",host="web1",onion="ok"}', 'values': '0x30'},
            ],
            'alert_rule_test': [
                {'eval_time': '1m', 'alertname': 'TorDown', 'exp_alerts': []},
                {'eval_time': '6m', 'alertname': 'TorDown', 'exp_alerts': [{
                    'exp_labels': {'severity': 'critical', 'job': 'tor', 'host': 'web1', 'instance': '10.0.0.1:9035'},
                    'exp_annotations': {'summary': 'tor on web1 does not answer on its MetricsPort (10.0.0.1:9035)'}}]},
                {'eval_time': '20m', 'alertname': 'OnionServiceNoIntroductionPoints', 'exp_alerts': [{
                    'exp_labels': {'severity': 'critical', 'job': 'tor', 'host': 'web1', 'onion': 'aaa'},
                    'exp_annotations': {'summary': 'aaa.onion on web1 has no introduction point: its descriptor '
                                                   'lists none, clients cannot reach it'}}]},
                {'eval_time': '25m', 'alertname': 'OnionServiceGone', 'exp_alerts': [{
                    'exp_labels': {'severity': 'warning', 'job': 'tor', 'host': 'web1', 'onion': 'gone'},
                    'exp_annotations': {'summary': 'gone.onion on web1 is no longer served by its tor (it was in '
                                                   'the last hour)'}}]},
                {'eval_time': '20m', 'alertname': 'OnionServicePoWEffortRising', 'exp_alerts': [{
                    'exp_labels': {'severity': 'warning', 'job': 'tor', 'host': 'web1', 'onion': 'ddos'},
                    'exp_annotations': {'summary': 'ddos.onion on web1: the proof-of-work effort its clients must '
                                                   'pay is rising (150); it is under load or attack'}}]},
            ],
        }],
    }))
    rc, out = prom.promtool('test', 'rules', str(tests))
    assert rc == 0 and 'SUCCESS' in out, out


def prom_series(server, name):
    """{(host, onion, other labels): value} of name in Prometheus now."""
    out = {}
    for labels, value in server.query(name):
        rest = tuple(sorted((k, v) for k, v in labels.items()
                            if k not in ('__name__', 'onion', 'host', 'instance', 'job')))
        out[(labels.get('host'), labels.get('onion'), rest)] = value
    return out


def test_prometheus_scrapes_every_tor(prometheus_server, watched, tmp_path):
    t0 = time.monotonic()
    targets = prometheus_server.wait('both targets up', lambda: [
        x for x in prometheus_server.targets() if x['health'] == 'up'] if len([
            x for x in prometheus_server.targets() if x['health'] == 'up']) == len(watched) else None, timeout=30)
    assert sorted(x['labels']['host'] for x in targets) == [t.name for t in watched]
    for name in ('tor_hs_intro_num_total', 'tor_hs_intro_established_count', 'tor_hs_pow_suggested_effort',
                 'tor_hs_rend_circ_build_time_bucket', 'tor_hs_rdv_error_count'):
        series = prometheus_server.wait(name, lambda: prom_series(prometheus_server, name), timeout=30)
        assert {(h, o) for h, o, _ in series} == {(t.name, t.onion) for t in watched}, (name, series)
    assert set(prometheus_server.query('up{job="tor"} == 1')[0][0]) >= {'host', 'instance', 'job'}
    _say('prometheus: both tors scraped, every tor_hs_ metric with onion and host labels in %.1fs'
         % (time.monotonic() - t0))

    # the facts and Prometheus agree on the counters once Prometheus has scraped after the facts were read
    for t in watched:
        got = flatten(facts(tmp_path, t.url, names=list(STABLE))['services'])

        def agree():
            seen = {}
            for name in STABLE:
                for (host, onion, rest), value in prom_series(prometheus_server, name).items():
                    if host == t.name:
                        seen[(name, onion, rest)] = value
            return seen == got

        prometheus_server.wait('%s: Prometheus equal to the facts' % t.name, agree, timeout=20)


def test_fetches_seen_in_prometheus_and_facts(prometheus_server, watched, privnet, tmp_path):
    """Clients fetch the second service: its rendezvous counter rises in the facts, then Prometheus scrapes
    the same value, and increase() over the last minute names only that service."""
    t = watched[1]
    expr = 'tor_hs_rdv_num_total{host="%s",onion="%s"}' % (t.name, t.onion)
    prometheus_server.wait('the series exists', lambda: prometheus_server.query(expr), timeout=30)
    time.sleep(1.5)   # one more scrape interval: the value before the fetches
    before_prom = prometheus_server.query(expr)[0][1]
    before = facts(tmp_path, t.url, names=['tor_hs_rdv_num_total'])['services'][t.onion]['tor_hs_rdv_num_total']
    for _ in range(3):
        isolated_fetch(privnet.socks_port, t.address)
    after = facts(tmp_path, t.url, names=['tor_hs_rdv_num_total'])['services'][t.onion]['tor_hs_rdv_num_total']
    assert after >= before + 3
    t0 = time.monotonic()
    got = prometheus_server.wait('Prometheus sees the new circuits',
                                 lambda: [v for _, v in prometheus_server.query(expr) if v >= after], timeout=20)
    assert got[0] >= before_prom + 3
    increase = prometheus_server.query('increase(tor_hs_rdv_num_total{job="tor"}[1m]) > 0')
    assert [(labels['host'], labels['onion']) for labels, _ in increase] == [(t.name, t.onion)], increase
    _say('Prometheus: rdv %d -> %d for %s, seen %.1fs after the facts' % (before_prom, got[0], t.name,
                                                                           time.monotonic() - t0))


def test_policy_that_refuses_us(privnet, tmp_path):
    """A MetricsPort whose MetricsPortPolicy does not accept the reader: tor accepts the connection and closes
    it without a byte (measured); the module says so and names the two torrc lines."""
    port = free_ports(1)[0]
    node = privnet.add_tor('metricsdeny', ['MetricsPort 127.0.0.1:%d' % port, 'MetricsPortPolicy accept 10.0.0.1'])
    try:
        run = run_playbook([{'name': 'facts', 'onionlab.tor.tor_metrics_facts': {'metrics_port': port, 'timeout': 5},
                             'ignore_errors': True}], tmp_path)
    finally:
        os.kill(node.pid, signal.SIGTERM)   # by PID; privnet.stop() reaps it
    result = run.task('facts')['result']
    assert result['msg'] == ("cannot read tor's MetricsPort at http://127.0.0.1:%d/metrics: the connection was closed "
                             "without an answer (torrc needs MetricsPort on this address and a MetricsPortPolicy "
                             "that accepts this host)" % port), result
