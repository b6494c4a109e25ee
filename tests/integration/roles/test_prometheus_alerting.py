# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prometheus role's Onionprobe job, Onionprobe's alert rules beside ours in one rule file, and Alertmanager's
configuration, on the controller (ansible-playbook; Debian's promtool and amtool check what the role writes):

- the Onionprobe job scrapes each monitoring host's exporter (label prober; on loopback, the onionprobe role's
  default, when the host names no other address) and relabels host and onion from Onionprobe's endpoint name and
  address; Prometheus sends alerts to Alertmanager;
- without a receiver (the default) no Alertmanager is configured or named;
- `promtool check rules` finds the 14 rules of one file; `promtool test rules` fires each Onionprobe alert on
  synthetic series after the `for` given by the role's variables, with the labels an operator needs;
- Alertmanager's configuration for a webhook and for email passes `amtool check-config`; a receiver without its
  options is refused with one message before anything is written; a second run changes nothing.
The same with real Onionprobe, Prometheus and Alertmanager on the private network: test_onionprobe_bed.py.
"""

import json

import yaml

from harness import prometheus as prom
from harness.ansible_run import run_playbook

ROLE_VARS = {'prometheus_install': False, 'prometheus_manage_service': False}


def role(tmp_path, **extra):
    inventory = tmp_path / 'hosts.json'
    inventory.write_text(json.dumps({'all': {'hosts': {
        'web1': {'ansible_host': '10.0.0.5', 'tor_metrics_port': 9035},
        'monitor': {'ansible_host': '10.0.0.9', 'onionprobe_exporter_port': 19935,
                    'onionprobe_exporter_listen_address': '0.0.0.0'},
        'monitor2': {'onionprobe_exporter_address': 'fd00::9'},
        'monitor3': {'ansible_host': '10.0.0.11'}}}}))
    etc = tmp_path / 'etc'
    role_vars = dict(ROLE_VARS, role='onionlab.tor.prometheus', prometheus_config_dir=str(etc),
                     prometheus_tor_hosts=['web1'], prometheus_onionprobe_hosts=['monitor', 'monitor2', 'monitor3'], **extra)
    run = run_playbook([{'hosts': 'localhost', 'gather_facts': False, 'roles': [role_vars]}], tmp_path,
                       extra_args=['-i', str(inventory)])
    return etc, run


def test_onionprobe_job_rules_and_alertmanager(tmp_path):
    etc, run = role(tmp_path, prometheus_alertmanager_receiver='webhook',
                    prometheus_alertmanager_webhook_url='http://127.0.0.1:5001/hook')
    assert run.rc == 0, run.output
    rc, out = prom.promtool('check', 'config', str(etc / 'prometheus.yml'))
    assert rc == 0, out
    rc, out = prom.promtool('check', 'rules', str(etc / 'onionlab_tor_rules.yml'))
    assert rc == 0 and 'SUCCESS: 16 rules found' in out, out
    conf = yaml.safe_load((etc / 'prometheus.yml').read_text())
    assert conf['alerting'] == {'alertmanagers': [{'static_configs': [{'targets': ['127.0.0.1:9093']}]}]}
    job = [j for j in conf['scrape_configs'] if j['job_name'] == 'onionprobe'][0]
    # on every address: ansible_host; named: that address; the onionprobe role's default (loopback): this host's
    assert job['static_configs'] == [{'targets': ['10.0.0.9:19935'], 'labels': {'prober': 'monitor'}},
                                     {'targets': ['[fd00::9]:9935'], 'labels': {'prober': 'monitor2'}},
                                     {'targets': ['127.0.0.1:9935'], 'labels': {'prober': 'monitor3'}}]
    assert [(r['source_labels'], r['target_label']) for r in job['metric_relabel_configs']] == [
        (['name'], 'host'), (['address'], 'onion')]
    am = yaml.safe_load((etc / 'alertmanager.yml').read_text())
    assert am['receivers'] == [{'name': 'onionlab', 'webhook_configs': [
        {'url': 'http://127.0.0.1:5001/hook', 'send_resolved': True}]}]
    assert am['route']['receiver'] == 'onionlab'
    again = role(tmp_path, prometheus_alertmanager_receiver='webhook',
                 prometheus_alertmanager_webhook_url='http://127.0.0.1:5001/hook')[1]
    assert again.rc == 0 and again.stats['localhost']['changed'] == 0, again.output


def test_email_receiver_passes_amtool(tmp_path):
    etc, run = role(tmp_path, prometheus_alertmanager_receiver='email', prometheus_alertmanager_email_to='ops@example.org',
                    prometheus_alertmanager_email_from='prometheus@example.org',
                    prometheus_alertmanager_email_smarthost='mail.example.org:587',
                    prometheus_alertmanager_email_auth_username='prometheus',
                    prometheus_alertmanager_email_auth_password='s3cret-not-printed')
    assert run.rc == 0, run.output
    assert 's3cret-not-printed' not in run.output
    email = yaml.safe_load((etc / 'alertmanager.yml').read_text())['receivers'][0]['email_configs'][0]
    assert (email['to'], email['smarthost'], email['auth_password']) == (
        'ops@example.org', 'mail.example.org:587', 's3cret-not-printed')


def test_receiver_without_its_options_refused(tmp_path):
    for extra, msg in [
        ({'prometheus_alertmanager_receiver': 'webhook'},
         'prometheus: the receiver webhook needs prometheus_alertmanager_webhook_url, an http:// or https:// URL; '
         'got None'),
        ({'prometheus_alertmanager_receiver': 'webhook', 'prometheus_alertmanager_webhook_url': 'ftp://x'},
         'prometheus: the receiver webhook needs prometheus_alertmanager_webhook_url, an http:// or https:// URL; '
         'got "ftp://x"'),
        ({'prometheus_alertmanager_receiver': 'email', 'prometheus_alertmanager_email_to': 'ops@example.org',
          'prometheus_alertmanager_email_from': 'p@example.org'},
         'prometheus: the receiver email needs prometheus_alertmanager_email_smarthost, host:port; got None'),
    ]:
        etc, run = role(tmp_path, **extra)
        assert run.rc != 0 and msg in run.stdout, (msg, run.output)
        assert not (etc / 'alertmanager.yml').exists() and not (etc / 'prometheus.yml').exists()
    etc, run = role(tmp_path, prometheus_alertmanager_receiver='pager')
    assert run.rc != 0 and 'prometheus_alertmanager_receiver' in run.stdout and 'pager' in run.stdout, run.output
    # none (the default): no Alertmanager here, none named to Prometheus
    etc, run = role(tmp_path)
    assert run.rc == 0, run.output
    assert 'alerting' not in yaml.safe_load((etc / 'prometheus.yml').read_text())
    assert not (etc / 'alertmanager.yml').exists()


def test_bad_listen_address_flag_or_duration_refused_before_anything(tmp_path):
    """Issue 42: the services' flags and the durations written as they are into the YAML files are checked before
    anything is written (the conditions as ansible-playbook evaluates them; tests/unit/roles/test_prometheus_listeners.py
    has every case)."""
    for extra, msg in [
        ({'prometheus_listen_address': '127.0.0.1:9090\nARGS=--web.listen-address=0.0.0.0:9090'},
         'prometheus: these variables would not stay one value each in the systemd file they are written into: '
         'prometheus_listen_address: the value "127.0.0.1:9090\\nARGS=--web.listen-address=0.0.0.0:9090" holds a '
         'newline'),
        ({'prometheus_alertmanager_receiver': 'webhook', 'prometheus_alertmanager_webhook_url': 'http://x/',
          'prometheus_alertmanager_extra_args': ['--cluster.listen-address=0.0.0.0:9094']},
         "Alertmanager's --cluster.*: no cluster), got \"--cluster.listen-address=0.0.0.0:9094\""),
        ({'prometheus_listen_address': ':9090'}, 'prometheus: prometheus_listen_address must be an address and a port '
         '(127.0.0.1:9090, [::1]:9090; 0.0.0.0:9090 for every address, which shows every onion address beside its '
         'server\'s to whoever reaches it), got ":9090"'),
        ({'prometheus_alert_pow_for': '10m\n        labels: {severity: none}'},
         'prometheus: these variables must each be a Prometheus duration (15s, 1h30m): prometheus_alert_pow_for got '
         '"10m\\n        labels: {severity: none}"'),
    ]:
        etc, run = role(tmp_path, **extra)
        assert run.rc != 0 and msg in run.stdout, (msg, run.output)
        assert not etc.exists(), sorted(str(p) for p in etc.rglob('*'))


def test_onionprobe_alerts_fire(tmp_path):
    """promtool test rules: each Onionprobe alert fires after its `for` (shortened by the role's variables, as the
    bed test does), with name, address, host and onion; a healthy endpoint fires none."""
    etc, run = role(tmp_path, prometheus_alert_onionprobe_down_for='2m', prometheus_alert_unreachable_for='3m',
                    prometheus_alert_descriptor_unreachable_for='4m', prometheus_alert_unexpected_status_for='5m',
                    prometheus_alert_certificate_for='1m', prometheus_alert_certificate_expiry_days=7)
    assert run.rc == 0, run.output
    lab = 'job="onionprobe",prober="monitor",name="web1/shop:80",address="%s.onion",host="web1",onion="%s"' % (
        'a' * 56, 'a' * 56)
    ok = lab.replace('web1/shop', 'web2/blog').replace('host="web1"', 'host="web2"')
    http = ',protocol="http",port="80",path="/"'
    tls = ',port="443"'
    want = {'job': 'onionprobe', 'prober': 'monitor', 'name': 'web1/shop:80', 'address': 'a' * 56 + '.onion',
            'host': 'web1', 'onion': 'a' * 56}

    def alert(severity, summary, **more):
        return [{'exp_labels': dict(want, severity=severity, **more), 'exp_annotations': {'summary': summary}}]

    who = 'web1/shop:80 (%s.onion)' % ('a' * 56)
    tests = tmp_path / 'onionprobe_rules_test.yml'
    tests.write_text(json.dumps({
        'rule_files': [str(etc / 'onionlab_tor_rules.yml')],
        'evaluation_interval': '1m',
        'tests': [{
            'interval': '1m',
            'input_series': [
                {'series': 'up{job="onionprobe",prober="monitor",instance="10.0.0.9:19935"}', 'values': '1 1 0x10'},
                {'series': 'onion_service_reachable{%s%s}' % (lab, http), 'values': '1 1 0x10'},
                {'series': 'onion_service_reachable{%s%s}' % (ok, http), 'values': '1x12'},
                {'series': 'onion_service_descriptor_reachable{%s}' % lab, 'values': '1 1 0x10'},
                {'series': 'onion_service_unexpected_status_code{%s%s}' % (lab, http), 'values': '0 0 1x10'},
                {'series': 'onion_service_valid_certificate{%s%s}' % (lab, http), 'values': '1 1 0x10'},
                {'series': 'onion_service_certificate_expiry_seconds{%s%s}' % (lab, tls),
                 'values': '864000 864000 518400x10'},
                {'series': 'onion_service_certificate_expiry_seconds{%s%s}' % (ok, tls), 'values': '8640000x12'},
            ],
            'alert_rule_test': [
                {'eval_time': '4m', 'alertname': 'OnionprobeDown', 'exp_alerts': [{
                    'exp_labels': {'severity': 'critical', 'job': 'onionprobe', 'prober': 'monitor',
                                   'instance': '10.0.0.9:19935'},
                    'exp_annotations': {'summary': 'Onionprobe on monitor does not answer (10.0.0.9:19935): no onion '
                                                   'service is watched from outside'}}]},
                {'eval_time': '4m', 'alertname': 'OnionServiceUnreachable', 'exp_alerts': []},
                {'eval_time': '5m', 'alertname': 'OnionServiceUnreachable', 'exp_alerts': alert(
                    'critical', '%s cannot be reached by a fresh client: its descriptor was found but the connection '
                                'failed' % who, protocol='http', port='80', path='/')},
                {'eval_time': '5m', 'alertname': 'OnionServiceDescriptorUnreachable', 'exp_alerts': []},
                {'eval_time': '6m', 'alertname': 'OnionServiceDescriptorUnreachable', 'exp_alerts': alert(
                    'critical', '%s: no HSDir gives its descriptor, so no client can find it' % who)},
                {'eval_time': '7m', 'alertname': 'OnionServiceUnexpectedStatus', 'exp_alerts': alert(
                    'warning', '%s answers / with an unexpected HTTP status' % who, protocol='http', port='80',
                    path='/')},
                {'eval_time': '3m', 'alertname': 'OnionServiceCertificateInvalid', 'exp_alerts': alert(
                    'warning', '%s: its HTTPS certificate is not valid' % who, protocol='http', port='80', path='/')},
                {'eval_time': '3m', 'alertname': 'OnionServiceCertificateExpiring', 'exp_alerts': alert(
                    'warning', '%s: its HTTPS certificate expires in 6d 0h 0m 0s' % who, port='443')},
            ],
        }],
    }))
    rc, out = prom.promtool('test', 'rules', str(tests))
    assert rc == 0 and 'SUCCESS' in out, out


def test_watchdog_job_and_alerts_fire(tmp_path):
    """The onion watchdog's node_exporter job (one target per watchdog host, label host) and its four rules:
    unhealthy from the network for its `for`, repairs that did not help, a backend the clearnet can find (issue 42),
    a watchdog that stopped running."""
    inventory_extra = {'prometheus_watchdog_hosts': ['web1'], 'prometheus_alert_watchdog_unhealthy_for': '3m',
                       'prometheus_alert_watchdog_repairs_window': '10m', 'prometheus_alert_watchdog_stale_seconds': 300}
    etc, run = role(tmp_path, **inventory_extra)
    assert run.rc == 0, run.output
    rc, out = prom.promtool('check', 'config', str(etc / 'prometheus.yml'))
    assert rc == 0, out
    conf = yaml.safe_load((etc / 'prometheus.yml').read_text())
    job = [j for j in conf['scrape_configs'] if j['job_name'] == 'onionlab_watchdog'][0]
    assert job['static_configs'] == [{'targets': ['10.0.0.5:9100'], 'labels': {'host': 'web1'}}]
    onion = 'b' * 56
    lab = 'job="onionlab_watchdog",host="web1",instance="10.0.0.5:9100"'
    want = {'job': 'onionlab_watchdog', 'host': 'web1', 'instance': '10.0.0.5:9100', 'onion': onion}
    tests = tmp_path / 'watchdog_rules_test.yml'
    tests.write_text(json.dumps({
        'rule_files': [str(etc / 'onionlab_tor_rules.yml')],
        'evaluation_interval': '1m',
        'tests': [{
            'interval': '1m',
            'input_series': [
                {'series': 'onionlab_watchdog_healthy{%s,onion="%s"}' % (lab, onion), 'values': '1 1 0x10'},
                {'series': 'onionlab_watchdog_healthy{%s,onion="%s"}' % (lab, 'c' * 56), 'values': '1x12'},
                {'series': 'onionlab_watchdog_repairs_total{%s,onion="%s",step="repost"}' % (lab, onion),
                 'values': '0 0 0 1 1 1 2 2 2 2 2 2'},
                {'series': 'onionlab_watchdog_last_run_timestamp_seconds{%s}' % lab,
                 'values': '0 60 120 180 240 300 300 300 300 300 300 300'},
                {'series': 'onionlab_watchdog_backend_exposed{%s,onion="%s",port="80"}' % (lab, onion),
                 'values': '0 0 1x10'},
                {'series': 'onionlab_watchdog_backend_exposed{%s,onion="%s",port="443"}' % (lab, onion),
                 'values': '0x12'},
            ],
            'alert_rule_test': [
                {'eval_time': '4m', 'alertname': 'OnionServiceUnhealthyFromNetwork', 'exp_alerts': []},
                {'eval_time': '5m', 'alertname': 'OnionServiceUnhealthyFromNetwork', 'exp_alerts': [{
                    'exp_labels': dict(want, severity='critical'),
                    'exp_annotations': {'summary': '%s.onion on web1: its HSDirs do not serve its current descriptor, '
                                                   'clients cannot find it (journalctl -u onionlab-watchdog on the host '
                                                   'says what was tried)' % onion}}]},
                {'eval_time': '4m', 'alertname': 'OnionWatchdogRepairsNotHelping', 'exp_alerts': [{
                    'exp_labels': {'severity': 'critical', 'host': 'web1', 'onion': onion},
                    'exp_annotations': {'summary': "%s.onion on web1: the watchdog's repairs did not bring it back; a "
                                                   "person is needed" % onion}}]},
                {'eval_time': '1m', 'alertname': 'OnionServiceBackendExposed', 'exp_alerts': []},
                {'eval_time': '2m', 'alertname': 'OnionServiceBackendExposed', 'exp_alerts': [{
                    'exp_labels': dict(want, severity='critical', port='80'),
                    'exp_annotations': {
                        'summary': '%s.onion on web1: the backend of port 80 also listens on a non-loopback address; '
                                   'a scan of the host finds it' % onion,
                        'description': "The target of port 80 of %s.onion also answers on 0.0.0.0, :: or a public "
                                       "address of web1 (or the target itself is not a loopback address). A scanner "
                                       "that fetches the page, the TLS certificate or the SSH key from the host's "
                                       "addresses can match it with the onion service and so locate the service "
                                       "(OnionScan checks exactly this). Fix: bind the backend to 127.0.0.1 or a unix "
                                       "socket (and the service's port to that target); journalctl -u "
                                       "onionlab-watchdog on the host names the target and the addresses it listens "
                                       "on." % onion}}]},
                {'eval_time': '9m', 'alertname': 'OnionWatchdogStale', 'exp_alerts': []},
                {'eval_time': '11m', 'alertname': 'OnionWatchdogStale', 'exp_alerts': [{
                    'exp_labels': {'severity': 'warning', 'job': 'onionlab_watchdog', 'host': 'web1',
                                   'instance': '10.0.0.5:9100'},
                    'exp_annotations': {'summary': 'the onion watchdog on web1 has not run for 6m 0s (systemctl '
                                                   'status onionlab-watchdog.timer)'}}]},
            ],
        }],
    }))
    rc, out = prom.promtool('test', 'rules', str(tests))
    assert rc == 0 and 'SUCCESS' in out, out


def test_watchdog_layer_alerts_quote_the_reason(tmp_path):
    """Issue 38: reach and backend alert separately, each quoting the watchdog's reason (onionlab_watchdog_reason_info):
    a service no fresh client reaches while its backend accepts -> OnionServiceUnreachableFromHost only; a service whose
    backend refuses (which fails reach too) -> OnionServiceBackendDown only; neither is OnionServiceUnhealthyFromNetwork
    while its descriptor layer is ok; a descriptor failure still is."""
    etc, run = role(tmp_path, prometheus_watchdog_hosts=['web1'], prometheus_alert_watchdog_unhealthy_for='3m')
    assert run.rc == 0, run.output
    lab = 'job="onionlab_watchdog",host="web1",instance="10.0.0.5:9100"'
    want = {'job': 'onionlab_watchdog', 'host': 'web1', 'instance': '10.0.0.5:9100'}
    unreached, refusing, lost = 'd' * 56, 'e' * 56, 'f' * 56
    reach_reason = 'reach: 0 of 3 fresh connections in 60 s (SOCKS error 0xF2: introduction failed)'
    backend_reason = 'backend: 127.0.0.1:8080 refuses (Connection refused; port 80)'

    def layers(onion, **oks):
        return [{'series': 'onionlab_watchdog_layer_ok{%s,onion="%s",layer="%s"}' % (lab, onion, name),
                 'values': '%dx8' % ok} for name, ok in oks.items()]
    series = (layers(unreached, tor=1, backend=1, descriptor=1, introduction=1, reach=0)
              + layers(refusing, tor=1, backend=0, descriptor=1, introduction=1, reach=0)
              + layers(lost, tor=1, backend=1, descriptor=0, introduction=1, reach=0)
              + [{'series': 'onionlab_watchdog_healthy{%s,onion="%s"}' % (lab, o), 'values': '0x8'}
                 for o in (unreached, refusing, lost)]
              + [{'series': 'onionlab_watchdog_reason_info{%s,onion="%s",layer="reach",reason="%s"}' % (
                  lab, unreached, reach_reason.replace('"', '\\"')), 'values': '1x8'},
                 {'series': 'onionlab_watchdog_reason_info{%s,onion="%s",layer="backend",reason="%s"}' % (
                  lab, refusing, backend_reason), 'values': '1x8'}])
    tests = tmp_path / 'layer_rules_test.yml'
    tests.write_text(json.dumps({
        'rule_files': [str(etc / 'onionlab_tor_rules.yml')],
        'evaluation_interval': '1m',
        'tests': [{
            'interval': '1m',
            'input_series': series,
            'alert_rule_test': [
                {'eval_time': '2m', 'alertname': 'OnionServiceUnreachableFromHost', 'exp_alerts': []},
                {'eval_time': '4m', 'alertname': 'OnionServiceUnreachableFromHost', 'exp_alerts': [{
                    'exp_labels': dict(want, severity='critical', onion=unreached, layer='reach'),
                    'exp_annotations': {
                        'summary': "%s.onion on web1: no fresh client got an answer through the host's tor" % unreached,
                        'description': '%s (journalctl -u onionlab-watchdog on the host)' % reach_reason}}]},
                {'eval_time': '4m', 'alertname': 'OnionServiceBackendDown', 'exp_alerts': [{
                    'exp_labels': dict(want, severity='critical', onion=refusing, layer='backend'),
                    'exp_annotations': {
                        'summary': '%s.onion on web1: its backend refuses connections (tor and the onion are up, the '
                                   'application behind it is not)' % refusing,
                        'description': '%s (onion_watchdog_backend_units names a unit the watchdog '
                                       'restarts; journalctl -u onionlab-watchdog on the host)' % backend_reason}}]},
                {'eval_time': '4m', 'alertname': 'OnionServiceUnhealthyFromNetwork', 'exp_alerts': [{
                    'exp_labels': dict(want, severity='critical', onion=lost, layer='descriptor'),
                    'exp_annotations': {'summary': '%s.onion on web1: its HSDirs do not serve its current descriptor, '
                                                   'clients cannot find it (journalctl -u onionlab-watchdog on the host '
                                                   'says what was tried)' % lost}}]},
            ],
        }],
    }))
    rc, out = prom.promtool('test', 'rules', str(tests))
    assert rc == 0 and 'SUCCESS' in out, out
