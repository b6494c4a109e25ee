# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Onion services watched from outside, for real (issue 28): a bed of its own (4 systemd-nspawn hosts joined
to the private network: probe1-3 of this machine's release, probe4 Debian 13; python3-venv, python3-packaging and
onionprobe in the bed's local apt repository), one site playbook:

- probe1, probe2 serve a web page each with the onion_service role (probe2 also a service with client
  authorization, whose key the onion_client role gives to probe3); probe3, the monitoring host, gets its tor
  from the tor role and Onionprobe 1.4.1 from the onionprobe role (PyPI's way, from a wheelhouse built on this
  machine: the hosts cannot reach PyPI, shown first), as a systemd service through that tor; probe4 the same
  with Debian 13's onionprobe package (the role's unit written before the package, whose own unit would start a
  tor of its own; a policy-rc.d there besides, so that no package script starts anything). A second run of the
  playbook changes nothing, and check mode after it neither.
- The prometheus role writes the configuration of Debian's Prometheus and Alertmanager (webhook receiver, the
  `for` of OnionServiceUnreachable shortened to 10s); the harness starts both here and stops them by PID.
- Every service: onion_service_reachable 1 in Prometheus, with host and onion labels. In the same window
  tor_onion_probe (on probe3, through the same tor) and Onionprobe measure the same services: latencies
  side by side (median, p90).
- The client-authorization service: the role says it is not probed; a one-shot Onionprobe run shows why
  (its log), while tor_onion_probe through probe3's tor, which holds the key, reaches it.
- probe1's tor stopped: Onionprobe marks it unreachable, the alert goes pending then firing, and the test's
  webhook receives it; tor started again: the alert resolves and the resolution is received. Times measured
  from the stop and from the start.
"""

import json
import os
import re
import statistics
import sys
import time
import urllib.request

import pytest
import yaml

from harness import hosts as hb
from harness import onionprobe as op
from harness import prometheus as prom
from harness.ansible_run import run_playbook

pytestmark = pytest.mark.timeout(1500)
SERVERS, MONITOR, TRIXIE = ('probe1', 'probe2'), 'probe3', 'probe4'
ALERT_FOR = '10s'
REACH_DEADLINE = float(os.environ.get('ONIONLAB_FETCH_DEADLINE', '180'))
SAMPLES = 10


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)
    sys.stderr.flush()


def _ssh(bed, name, script, check=True, timeout=120):
    return bed.sh(script, [x for x in bed.hosts if x['name'] == name][0], check=check, timeout=timeout)


def _quantiles(values):
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
    return {'n': len(values), 'median': statistics.median(values), 'p90': p90,
            'min': values[0], 'max': values[-1]}


class Site(object):
    """The inventory (the bed's, plus group_vars/host_vars beside the playbooks) and the site playbook."""

    def __init__(self, bed, tmp, wheels_dir):
        self.bed, self.tmp = bed, tmp
        self.work = tmp / 'ansible-run'
        self.escrow = tmp / 'escrow'
        hosts = dict((h['name'], h) for h in bed.hosts)
        self.web_ports = dict((n, hosts[n]['app_ports'][0]) for n in SERVERS)
        self.exporter_port = hosts[MONITOR]['app_ports'][0]
        (self.work / 'host_vars').mkdir(parents=True)
        (self.work / 'group_vars').mkdir()
        (self.work / 'group_vars' / 'all.yml').write_text(json.dumps({
            'onion_service_backup_dir': str(self.escrow),
            'onion_service_summary_file': '',
            'onion_service_control_port': '{{ testbed_tor_control_port }}',
            'onion_client_control_port': '{{ testbed_tor_control_port }}',
        }))
        for n in SERVERS:
            services = [{'name': 'web', 'ports': [{'port': 80, 'target_port': self.web_ports[n]}]}]
            if n == 'probe2':
                services.append({'name': 'admin', 'ports': [{'port': 80, 'target_port': self.web_ports[n]}],
                                 'clients': [{'name': 'monitor', 'hosts': [MONITOR]}]})
            (self.work / 'host_vars' / ('%s.yml' % n)).write_text(json.dumps({
                'onion_services': services,
                'onionprobe_checks': {'web': {'paths': [{'path': '/hostname', 'allowed_statuses': [200],
                                                         'pattern': n}]}}}))
        self.trixie_exporter_port = hosts[TRIXIE]['app_ports'][0]
        for name in (MONITOR, TRIXIE):
            (self.work / 'host_vars' / ('%s.yml' % name)).write_text(json.dumps(dict({
                # the tor role: the bed's ports, the private network's lines, the client keys' directory
                'tor_control_port': '{{ testbed_tor_control_port }}',
                'tor_socks_port': '127.0.0.1:{{ testbed_tor_socks_port }} ExtendedErrors',
                'tor_options': {'Nickname': name, 'ClientOnionAuthDir': hb.CLIENT_AUTH_DIR},
                'tor_config_lines': '{{ testbed_privnet_torrc_lines }}',
                'tor_torrc_takeover': True,
                'onionprobe_control_port': '{{ testbed_tor_control_port }}',
                'onionprobe_socks_port': '{{ testbed_tor_socks_port }}',
                'onionprobe_exporter_port': '{{ testbed_app_ports[0] }}',
                'onionprobe_hosts': list(SERVERS),
                'onionprobe_sleep': 3, 'onionprobe_interval': 1, 'onionprobe_randomize': False,
                'onionprobe_descriptor_timeout': 20, 'onionprobe_descriptor_max_retries': 2,
                'onionprobe_http_connect_timeout': 20, 'onionprobe_http_read_timeout': 20,
            }, **({
                # PyPI's way (the release's package is older than 1.4), from the wheelhouse
                'onionprobe_install_method': 'pip',
                'onionprobe_pip_environment': {'PIP_NO_INDEX': '1', 'PIP_FIND_LINKS': wheels_dir},
            } if name == MONITOR else {}))))
        self.timings = {}

    def run(self, plays, name, check=False):
        t0 = time.monotonic()
        run = run_playbook(plays, self.tmp, check=check, extra_args=['-i', self.bed.inventory_path], timeout=900,
                           extra_env={'ANSIBLE_HOST_KEY_CHECKING': 'False'})
        self.timings[name] = time.monotonic() - t0
        return run

    def site(self, name, check=False):
        return self.run([
            {'name': 'service hosts', 'hosts': ','.join(SERVERS), 'gather_facts': False,
             'pre_tasks': [{'name': 'backend', 'ansible.builtin.command': {
                 'argv': ['systemd-run', '--unit=onionlab-probe-web', '--property=WorkingDirectory=/etc',
                          '/usr/bin/python3', '-m', 'http.server', '--bind', '127.0.0.1',
                          '{{ testbed_app_ports[0] }}'],
                 'creates': '/run/systemd/transient/onionlab-probe-web.service'}}],
             'roles': ['onionlab.tor.onion_service']},
            {'name': 'monitoring hosts', 'hosts': '%s,%s' % (MONITOR, TRIXIE), 'gather_facts': False,
             'roles': ['onionlab.tor.tor', 'onionlab.tor.onion_client', 'onionlab.tor.onionprobe']},
        ], name, check=check)


@pytest.fixture(scope='module')
def bed(privnet):
    if os.geteuid() != 0:
        pytest.skip('the multi-host bed needs root (systemd-nspawn)')
    hb.ensure_packages()
    prom.ensure_prometheus()
    prom.ensure_alertmanager()
    # probe1-3 this machine's release (the wheelhouse is for its Python), probe4 Debian 13 (its onionprobe package)
    b = hb.HostBed(n=4, name_prefix='probe', privnet_join_lines=privnet.join_torrc_lines(),
                   suites=[hb.host_suite()] * 3 + ['trixie'],
                   apt_packages=['python3-venv', 'python3-packaging', 'onionprobe'], boot_timeout=300)
    b.up()
    _say('bed: 4 hosts up in %.1fs (apt repo %s)' % (b.timings['total'], 'built' if b.timings.get('apt_repo_built')
                                                      else 'cached'))
    try:
        yield b
    finally:
        b.down()


@pytest.fixture(scope='module')
def site(bed, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('onionprobe-bed')
    # The direct way first: pip inside a host cannot reach PyPI (shown, then the wheelhouse is used).
    rc, out = _ssh(bed, MONITOR, 'apt-get install -y -qq python3-venv >/dev/null && python3 -m venv /tmp/pypi-try && '
                   '/tmp/pypi-try/bin/pip install --retries 0 --timeout 5 onionprobe==1.4.1 2>&1 '
                   '| grep -E \"name resolution|No matching\" | tail -2; getent hosts pypi.org || echo getent pypi.org: rc $?; '
                   'rm -rf /tmp/pypi-try', check=False, timeout=180)
    _say('PyPI from inside %s (resolv.conf: 127.0.0.1 only): %s' % (MONITOR, out.strip().replace('\n', ' | ')))
    assert 'Temporary failure in name resolution' in out or 'No matching distribution' in out, out
    wheels, took, built = op.wheelhouse()
    _say('wheelhouse %s in %.1fs: %s' % ('built' if built else 'cached', took, ', '.join(sorted(
        w for w in os.listdir(wheels) if w.endswith('.whl')))))
    monitor_root = [h for h in bed.hosts if h['name'] == MONITOR][0]['root']
    s = Site(bed, tmp, op.give(monitor_root, wheels))
    # Belt and braces on the Debian 13 host: no package script starts a service (the role writes its unit before
    # the package, whose own unit would run Onionprobe's default configuration: a tor of its own, which on this
    # machine could reach the real network); the role starts Onionprobe itself.
    _ssh(bed, TRIXIE, "printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d")
    first = s.site('first run')
    assert first.rc == 0, first.output
    said = [t for t in first.results(host=MONITOR) if t['task'].endswith('What is probed, and what is not (and why)')]
    s.plan = said[0]['result']['msg']
    s.first = first
    _say('site playbook: first run %.1fs; the role says %s' % (s.timings['first run'], json.dumps(s.plan)))
    yield s
    s.run([{'hosts': MONITOR, 'gather_facts': False, 'tasks': [
        {'name': 'onionprobe stopped', 'ansible.builtin.systemd': {'name': 'onionprobe', 'state': 'stopped'},
         'ignore_errors': True}]}], 'teardown')


def test_second_run_and_check_mode_change_nothing(site):
    again = site.site('second run')
    assert again.rc == 0, again.output
    assert all(s['changed'] == 0 for s in again.stats.values()), again.output
    checked = site.site('check mode', check=True)
    assert checked.rc == 0, checked.output
    assert all(s['changed'] == 0 for s in checked.stats.values()), checked.output
    _say('second run %.1fs, check mode %.1fs: changed=0 on every host' % (
        site.timings['second run'], site.timings['check mode']))


def test_debian_package_on_debian_13(site, bed):
    """probe4 (Debian 13) gets Debian's onionprobe package (auto), its unit written before the package; it probes
    both services through probe4's own tor and no other tor runs there."""
    order = [t['task'].split(' : ')[-1] for t in site.first.results(host=TRIXIE)]
    assert order.index("Onionprobe's systemd unit") < order.index("Debian's onionprobe package"), order
    assert site.first.task("onionlab.tor.onionprobe : Debian's onionprobe package", host=TRIXIE)['status'] == 'changed'
    _rc, out = _ssh(bed, TRIXIE, "dpkg-query -W -f '${Version}\\n' onionprobe; systemctl show -p FragmentPath "
                    "-p ActiveState onionprobe; grep -E '^[^#]*launch_tor' /etc/onionprobe/onionprobe.yaml "
                    "|| echo 'package config: no launch_tor line (Onionprobe default: true)'; ps -o user=,args= -C tor")
    _say('%s: %s' % (TRIXIE, out.strip().replace('\n', ' | ')))
    assert out.startswith('1.4'), out
    assert 'FragmentPath=/etc/systemd/system/onionprobe.service' in out and 'ActiveState=active' in out, out
    assert len([line for line in out.splitlines() if '/usr/bin/tor' in line or line.split()[1:2] == ['tor']]) == 1, out
    url = 'http://127.0.0.1:%d/metrics' % site.trixie_exporter_port
    t0 = time.monotonic()
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                page = r.read().decode()
        except OSError as exc:
            page = str(exc)
        up = sorted(m.group(1) for m in re.finditer(r'^onion_service_reachable\{[^}]*name="([^"]+)"[^}]*\} 1\.0$', page,
                                                      re.M))
        if up == ['probe1/web:80', 'probe2/web:80']:
            break
        assert time.monotonic() - t0 < REACH_DEADLINE, page[-2000:]
        time.sleep(1)
    version = re.search(r'onionprobe_version_info\{version="([^"]+)"', page)
    _say('%s: Debian\'s Onionprobe %s: both services onion_service_reachable 1 after %.1fs'
         % (TRIXIE, version and version.group(1), time.monotonic() - t0))


def test_client_auth_service_is_stated_and_onionprobe_cannot(site, bed):
    reasons = dict(('%s/%s' % (x['host'], x['service']), x['reason']) for x in site.plan['not probed'])
    assert list(reasons) == ['probe2/admin'], site.plan
    assert reasons['probe2/admin'].startswith('client authorization: Onionprobe decrypts the descriptor without')
    assert sorted(site.plan['probed']) == ['probe1/web:80', 'probe2/web:80']
    address = yaml.safe_load(_ssh(bed, 'probe2', 'cat /var/lib/tor/admin/hostname')[1])
    # tor_onion_probe through probe3's tor, which has the key (onion_client role), reaches it
    run = site.run([{'hosts': MONITOR, 'gather_facts': False, 'tasks': [
        {'name': 'probe', 'register': 'probed', 'onionlab.tor.tor_onion_probe': {
            'socks_port': '{{ testbed_tor_socks_port }}', 'wait': True, 'deadline': REACH_DEADLINE,
            'targets': [{'address': address, 'path': '/hostname', 'body_contains': 'probe2'}]}}]}], 'client auth probe')
    assert run.rc == 0, run.output
    # Onionprobe once (no loop, no exporter) on the same service through the same tor
    conf = {'launch_tor': False, 'tor_address': '127.0.0.1', 'loop': False, 'prometheus_exporter': False,
            'control_port': '__CP__', 'socks_port': '__SP__', 'descriptor_max_retries': 0, 'shuffle': False,
            'randomize': False, 'endpoints': {'probe2/admin:80': {'address': address, 'protocol': 'http', 'port': 80,
                                                                  'paths': [{'path': '/hostname'}]}}}
    h = [x for x in bed.hosts if x['name'] == MONITOR][0]
    text = json.dumps(conf).replace('"__CP__"', str(h['tor_control_port'])).replace('"__SP__"', str(h['tor_socks_port']))
    rc, out = _ssh(bed, MONITOR, "cat > /tmp/clientauth.yaml <<'EOF'\n%s\nEOF\n"
                   # unbuffered: Onionprobe prints its exception and leaves with os._exit (a buffered stdout is lost)
                   "runuser -u onionprobe -- env PYTHONUNBUFFERED=1 /opt/onionprobe/bin/onionprobe "
                   "--config /tmp/clientauth.yaml > /tmp/clientauth.log 2>&1; echo \"exit status $?\" "
                   ">> /tmp/clientauth.log; tail -25 /tmp/clientauth.log; rm -f /tmp/clientauth.*" % text,
                   check=False, timeout=180)
    _say('Onionprobe one-shot on the client-authorization service %s:\n%s' % (address, out))
    # the descriptor is fetched, its inner layer cannot be decrypted without the client key, and the exception
    # ends Onionprobe (status 1): in its loop that would stop every other probe too
    assert 'Descriptor reachability: RECEIVED' in out and 'exit status 1' in out, out
    assert 'UnboundLocalError' in out or 'Malformed mac' in out, out


def test_outage_alert_delivered_and_resolved(site, bed, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('onionprobe-prometheus')
    etc = tmp / 'etc'
    with prom.WebhookReceiver() as hook:
        am_port = prom.free_ports(1)[0]
        inventory = tmp / 'prom.json'
        inventory.write_text(json.dumps({'all': {'hosts': {MONITOR: {
            'ansible_host': '127.0.0.1', 'onionprobe_exporter_port': site.exporter_port}}}}))
        run = run_playbook([{'hosts': 'localhost', 'gather_facts': False, 'roles': [dict(
            role='onionlab.tor.prometheus', prometheus_install=False, prometheus_manage_service=False,
            prometheus_config_dir=str(etc), prometheus_tor_hosts=[], prometheus_onionprobe_hosts=[MONITOR],
            prometheus_scrape_interval='1s', prometheus_evaluation_interval='1s', prometheus_scrape_timeout='1s',
            prometheus_alert_unreachable_for=ALERT_FOR, prometheus_alertmanager_targets=['127.0.0.1:%d' % am_port],
            prometheus_alertmanager_receiver='webhook', prometheus_alertmanager_webhook_url=hook.url,
            prometheus_alertmanager_group_wait='1s', prometheus_alertmanager_group_interval='1s')]}],
            tmp, extra_args=['-i', str(inventory)])
        assert run.rc == 0, run.output
        am = prom.Alertmanager(etc / 'alertmanager.yml', base_dir=tmp)
        am.port = am_port
        server = prom.Prometheus(etc / 'prometheus.yml', base_dir=str(tmp / 'run'))
        try:
            am.start()
            server.start()
            _say('alertmanager pid %d, prometheus pid %d ready' % (am.pid, server.pid))
            _watch(site, bed, server, am, hook)
        finally:
            server.stop()
            am.stop()
            for pid in (server.proc, am.proc):
                assert pid is None


def _watch(site, bed, server, am, hook):
    addresses = {}
    t0 = time.monotonic()
    up = server.wait('every service onion_service_reachable 1', lambda: (
        lambda s: s if len(s) == 2 else None)(server.query('onion_service_reachable{job="onionprobe"} == 1')),
        timeout=REACH_DEADLINE)
    for labels, _ in up:
        addresses[labels['host']] = labels['address']
        assert labels['onion'] + '.onion' == labels['address'] and labels['prober'] == MONITOR, labels
        assert labels['name'] == '%s/web:80' % labels['host'], labels
    assert sorted(addresses) == list(SERVERS)
    _say('every service onion_service_reachable 1 in %.1fs: %s' % (time.monotonic() - t0, addresses))

    # latencies, side by side: tor_onion_probe on probe3 (same tor), Onionprobe's gauge, the same minutes
    w0 = time.time()
    run = site.run([{'hosts': MONITOR, 'gather_facts': False, 'tasks': [
        {'name': 'probe', 'register': 'probed', 'loop': list(range(SAMPLES)), 'onionlab.tor.tor_onion_probe': {
            'socks_port': '{{ testbed_tor_socks_port }}', 'deadline': 60,
            'targets': [{'address': addresses[n], 'path': '/hostname', 'body_contains': n} for n in SERVERS]}}]}],
        'tor_onion_probe x%d' % SAMPLES)
    assert run.rc == 0, run.output
    ours = dict((n, []) for n in SERVERS)
    for item in run.task('probe', host=MONITOR)['result']['results']:
        for n, target in zip(SERVERS, item['targets']):
            assert target['reachable'], target
            ours[n].append(target['time_to_first_byte'])
    server.wait('%d Onionprobe rounds since the window began' % SAMPLES, lambda: all(
        v >= SAMPLES for _, v in server.query('changes(onion_service_latency_seconds{job="onionprobe"}[%ds])'
                                              % max(5, int(time.time() - w0) + 1))), timeout=180)
    w1 = time.time()
    theirs = dict((n, []) for n in SERVERS)
    for labels, values in server.query_range('onion_service_latency_seconds{job="onionprobe"}', w0, w1, '1s'):
        last = None
        for _, v in values:
            if v != last:
                theirs[labels['host']].append(v)
            last = v
    table = {}
    for n in SERVERS:
        table[n] = {'tor_onion_probe (time to first byte)': _quantiles(ours[n]),
                    'onionprobe (onion_service_latency_seconds)': _quantiles(theirs[n][1:] or theirs[n])}
    _say('latency, same services, same tor, %.0fs window:\n%s' % (w1 - w0, json.dumps(table, indent=1)))
    site.latency = table

    # the outage: probe1's tor stopped
    name, address = 'probe1', addresses['probe1']
    sel = 'ALERTS{alertname="OnionServiceUnreachable",host="%s"' % name
    firing_hook = lambda p: p.get('status') == 'firing' and any(  # noqa: E731
        a['labels'].get('alertname') == 'OnionServiceUnreachable' and a['labels'].get('host') == name
        for a in p.get('alerts', []))
    resolved_hook = lambda p: p.get('status') == 'resolved' and any(  # noqa: E731
        a['labels'].get('alertname') == 'OnionServiceUnreachable' and a['labels'].get('host') == name
        for a in p.get('alerts', []))
    assert not server.query(sel + '}'), 'an alert before the outage'
    t_stop = time.monotonic()
    _ssh(bed, name, 'systemctl stop tor@default')
    marks = {}
    server.wait('%s unreachable' % name, lambda: server.query(
        'onion_service_reachable{job="onionprobe",host="%s"} == 0' % name), timeout=240, interval=0.2)
    marks['reachable 0'] = time.monotonic() - t_stop
    server.wait('pending', lambda: server.query(sel + ',alertstate="pending"}'), timeout=120, interval=0.2)
    marks['pending'] = time.monotonic() - t_stop
    server.wait('firing', lambda: server.query(sel + ',alertstate="firing"}'), timeout=120, interval=0.2)
    marks['firing'] = time.monotonic() - t_stop
    t_hook, payload = hook.wait_for('firing webhook', firing_hook, timeout=120)
    marks['delivered'] = t_hook - t_stop
    _say('stop -> %s' % ', '.join('%s %.1fs' % kv for kv in marks.items()))
    alert = [a for a in payload['alerts'] if a['labels'].get('host') == name][0]
    assert alert['labels']['onion'] + '.onion' == address and alert['labels']['severity'] == 'critical', alert
    assert 'cannot be reached by a fresh client' in alert['annotations']['summary'], alert

    # back: tor started
    t_start = time.monotonic()
    _ssh(bed, name, 'systemctl start tor@default')
    back = {}
    server.wait('%s reachable again' % name, lambda: server.query(
        'onion_service_reachable{job="onionprobe",host="%s"} == 1' % name), timeout=600, interval=0.5)
    back['reachable 1'] = time.monotonic() - t_start
    server.wait('alert gone', lambda: not server.query(sel + '}'), timeout=120, interval=0.2)
    back['alert inactive'] = time.monotonic() - t_start
    t_hook, payload = hook.wait_for('resolved webhook', resolved_hook, timeout=120)
    back['resolution delivered'] = t_hook - t_start
    _say('start -> %s' % ', '.join('%s %.1fs' % kv for kv in back.items()))
    others = [a for a in am.alerts() if a['labels'].get('alertname') == 'OnionServiceUnreachable'
              and a['labels'].get('host') != name]
    assert not others, others
    site.outage = {'stop': marks, 'start': back}
