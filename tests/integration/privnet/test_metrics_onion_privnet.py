# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Monitoring that never needs the IP (issue 42), for real on the private Tor network: the monitoring side has no
route to the service host's address, and Prometheus still scrapes the host's tor MetricsPort and node_exporter (the
watchdog's textfile series) through an onion service with client authorization, and an alert reaches the webhook.

- the service side, in this machine's network: a tor of the private network with a MetricsPort on 127.0.0.1,
  Debian's node_exporter on 127.0.0.1 serving the onion watchdog's textfile (the watchdog's own run, in report-only
  mode, checking the metrics service from the network);
- the monitoring side, in a network namespace this test makes (its own loopback and nothing else): a tor client, and
  Debian's Prometheus and Alertmanager and a webhook receiver. That tor reaches the private network's authorities and
  relays only through a forwarder (in the namespace a listener on 127.0.0.1:<each ORPort and DirPort>, whose
  connections this process relays to the same port of this machine's loopback): Tor relays, and nothing else;
- one ansible-playbook run (-vvv) of the collection's roles: onion_service on the service host (an onion service
  `metrics` whose ports lead to the MetricsPort and node_exporter, client `prometheus` for the monitoring host),
  onion_client on the monitoring host (the private key, from the controller's escrow, into its tor's
  ClientOnionAuthDir, through its ControlSocket), prometheus on the monitoring host with the service host's
  prometheus_metrics_onion set from onion_service_addresses: targets <address>.onion:<port> through the tor's
  SocksPort (prometheus_onion_proxy_url). The client's private key is never printed.
Asserted: from inside the namespace a TCP connect to the service host's MetricsPort, node_exporter and ControlPort
fails (the same ports answer outside it); both targets are up with instance <address>.onion:<port>, tor's series
and the watchdog's scraped with the onion label; OnionWatchdogStale fires and the webhook receives it with that
instance. Everything started here is stopped by its PID in a finally; all traffic stays on 127.0.0.1 of this
machine or of the namespace.
"""

import contextlib
import ctypes
import io
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import yaml

from ansible_collections.onionlab.tor.plugins.module_utils import _onion_watchdog as watchdog
from harness import hosts as _hosts
from harness import procs
from harness import prometheus as prom
from harness.ansible_run import run_playbook
from harness.ports import free_ports
from harness.reach import Reach

FETCH_DEADLINE = float(os.environ.get('ONIONLAB_FETCH_DEADLINE', '60'))
NODE_EXPORTER = '/usr/bin/prometheus-node-exporter'
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)
    sys.stderr.flush()


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, 'setns: %s' % os.strerror(err))


class NetNS(object):
    """A network namespace of its own (its loopback up, nothing else), held by a descriptor: closed, it goes with
    the last process in it. inside() puts the calling thread in it (sockets made there stay there; processes started
    there inherit it) and back. A network namespace is per thread, so nothing else of this process moves."""

    def __init__(self):
        self.root = os.open('/proc/thread-self/ns/net', os.O_RDONLY)
        made = {}

        def make():
            if _libc.unshare(CLONE_NEWNET) != 0:
                made['error'] = OSError(ctypes.get_errno(), 'unshare(CLONE_NEWNET)')
                return
            made['fd'] = os.open('/proc/thread-self/ns/net', os.O_RDONLY)

        thread = threading.Thread(target=make)
        thread.start()
        thread.join()
        if 'error' in made:
            os.close(self.root)
            raise made['error']
        self.fd = made['fd']
        with self.inside():
            subprocess.check_call(['ip', 'link', 'set', 'lo', 'up'])

    @contextlib.contextmanager
    def inside(self):
        _setns(self.fd)
        try:
            yield
        finally:
            _setns(self.root)

    def run(self, argv):
        with self.inside():
            return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                                  timeout=30).stdout

    def close(self):
        os.close(self.fd)
        os.close(self.root)


class Forwarder(object):
    """In the namespace, a listener on 127.0.0.1:P for each port P given (the private network's ORPorts and
    DirPorts); each connection is relayed to 127.0.0.1:P of this machine's network by threads of this process."""

    def __init__(self, ns, ports):
        self.ns, self.ports = ns, list(ports)
        self.listeners, self.conns, self.connections = [], [], 0
        self.stopped = threading.Event()
        with ns.inside():
            for port in self.ports:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(('127.0.0.1', port))
                sock.listen(64)
                self.listeners.append(sock)
        for sock in self.listeners:
            threading.Thread(target=self._accept, args=(sock,), daemon=True).start()

    def _accept(self, listener):
        _setns(self.ns.root)     # this thread's connections are made in this machine's network
        port = listener.getsockname()[1]
        while not self.stopped.is_set():
            try:
                conn, _peer = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(('127.0.0.1', port), timeout=10)
                upstream.settimeout(None)
            except OSError:
                conn.close()
                continue
            self.connections += 1
            self.conns += [conn, upstream]
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            try:
                b.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self):
        self.stopped.set()
        for sock in self.listeners + self.conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)   # wakes an accept() or recv() blocked on it
            except OSError:
                pass
            sock.close()


def connect_fails(port):
    """None when a TCP connect to 127.0.0.1:port succeeds here, else the error."""
    try:
        socket.create_connection(('127.0.0.1', port), timeout=3).close()
        return None
    except OSError as exc:
        return exc


def tail(path, n=20):
    try:
        with open(path, errors='replace') as f:
            return ''.join(f.readlines()[-n:])
    except OSError as exc:
        return '(%s)' % exc


@pytest.mark.timeout(900)
def test_prometheus_scrapes_a_host_it_has_no_route_to_through_an_onion_service(privnet, tmp_path):
    prom.ensure_prometheus()
    prom.ensure_alertmanager()
    _hosts.ensure_packages(('tests',))
    t_start = time.monotonic()
    timings = {}
    metrics_port, node_port = free_ports(2)
    textfile_dir = tmp_path / 'textfile'
    textfile_dir.mkdir()
    escrow = tmp_path / 'escrow'
    auth_dir = os.path.join(privnet.base_dir, 'monitor-auth')
    ctl_dir = os.path.join(privnet.base_dir, 'monitor-ctl')
    for d in (auth_dir, ctl_dir):
        os.makedirs(d, mode=0o700, exist_ok=True)
    control_socket = os.path.join(ctl_dir, 'control')
    ns = forwarder = service = monitor = node_exporter = reach = receiver = alertmanager = server = None
    try:
        # -- the monitoring side: a network namespace whose tor reaches the relays through the forwarder only ------
        ns = NetNS()
        relay_ports = [p for n in privnet.nodes if n.is_server() for p in (n.or_port, n.dir_port)]
        forwarder = Forwarder(ns, relay_ports)
        with ns.inside():
            receiver = prom.WebhookReceiver().__enter__()
            (am_port,) = free_ports(1)
            monitor = privnet.add_tor('monitor', ['ControlSocket %s' % control_socket,
                                                  'ClientOnionAuthDir %s' % auth_dir], socks=True)
        timings['monitoring tor bootstrapped'] = time.monotonic() - t_start

        # -- the service side, in this machine's network -----------------------------------------------------------
        service = privnet.add_tor('metricsvc', ['MetricsPort 127.0.0.1:%d' % metrics_port,
                                                'MetricsPortPolicy accept 127.0.0.1'])
        node_exporter = subprocess.Popen(
            [NODE_EXPORTER, '--web.listen-address=127.0.0.1:%d' % node_port, '--collector.disable-defaults',
             '--collector.textfile', '--collector.textfile.directory=%s' % textfile_dir],
            stdout=open(str(tmp_path / 'node_exporter.log'), 'wb'), stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True)
        reach = Reach(service)      # the service's uploads watched from before the role makes it
        with ns.inside():
            reach.add_client(monitor)

        # -- no route from the monitoring side to the service host: its ports answer here, not in the namespace ----
        for port in (metrics_port, node_port, service.control_port):
            deadline = time.monotonic() + 10
            while connect_fails(port) and time.monotonic() < deadline:   # node_exporter starting
                time.sleep(0.1)
            assert connect_fails(port) is None, 'port %d does not answer in the root namespace' % port
            with ns.inside():
                refused = connect_fails(port)
            assert isinstance(refused, ConnectionRefusedError), (port, refused)
        addresses = ns.run(['ip', '-o', 'address'])
        routes = ns.run(['ip', 'route']) + ns.run(['ip', '-6', 'route'])
        assert [line.split()[1] for line in addresses.splitlines()] == ['lo', 'lo'], addresses
        assert 'default' not in routes, routes

        # -- the collection's roles, one run at -vvv -------------------------------------------------------------
        local = {'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable}
        inventory = tmp_path / 'inventory.json'
        inventory.write_text(json.dumps({'all': {'vars': {'onion_service_backup_dir': str(escrow)}, 'hosts': {
            'web': dict(local, **{
                'tor_metrics_port': metrics_port, 'prometheus_node_exporter_port': node_port,
                'prometheus_metrics_onion': '{{ onion_service_addresses.metrics }}',
                'onion_service_control_port': service.control_port, 'onion_service_dir': str(tmp_path / 'svc'),
                'onion_service_tor_user': 'root', 'onion_service_config_file': str(tmp_path / 'onionlab.conf'),
                'onion_service_summary_file': str(tmp_path / 'summary.yml'),
                'onion_services': [{'name': 'metrics',
                                    'ports': [{'port': metrics_port, 'target_port': metrics_port},
                                              {'port': node_port, 'target_port': node_port}],
                                    'clients': [{'name': 'prometheus', 'hosts': ['monitor']}]}]}),
            'monitor': dict(local, onion_client_control_socket=control_socket)}}}))
        (tmp_path / 'svc').mkdir(mode=0o700)
        etc = tmp_path / 'etc-prometheus'
        prometheus_vars = {
            'role': 'onionlab.tor.prometheus', 'prometheus_install': False, 'prometheus_manage_service': False,
            'prometheus_config_dir': str(etc), 'prometheus_tor_hosts': ['web'], 'prometheus_watchdog_hosts': ['web'],
            'prometheus_onion_proxy_url': 'socks5://127.0.0.1:%d' % monitor.socks_port,
            'prometheus_scrape_interval': '2s', 'prometheus_evaluation_interval': '1s',
            'prometheus_scrape_timeout': '2s', 'prometheus_onion_scrape_interval': '3s',
            'prometheus_onion_scrape_timeout': '3s', 'prometheus_alert_watchdog_stale_seconds': 5,
            'prometheus_alertmanager_receiver': 'webhook', 'prometheus_alertmanager_webhook_url': receiver.url,
            'prometheus_alertmanager_listen_address': '127.0.0.1:%d' % am_port,
            'prometheus_alertmanager_group_wait': '1s', 'prometheus_alertmanager_group_interval': '1s'}
        t0 = time.monotonic()
        run = run_playbook([
            {'name': 'the service host', 'hosts': 'web', 'gather_facts': False,
             'roles': ['onionlab.tor.onion_service']},
            {'name': 'the monitoring host', 'hosts': 'monitor', 'gather_facts': False,
             'roles': ['onionlab.tor.onion_client', prometheus_vars]},
        ], tmp_path, extra_args=['-i', str(inventory), '-vvv'], timeout=600)
        timings['ansible-playbook'] = time.monotonic() - t0
        assert run.rc == 0, run.output
        with open(str(tmp_path / 'summary.yml')) as f:
            address = [e for e in yaml.safe_load(f) if e['service'] == 'metrics'][0]['onion_address']
        sid = address[:-len('.onion')]
        key_file = escrow / 'web' / 'metrics' / 'clients' / 'prometheus.1.x25519'
        private_key = key_file.read_text().strip()
        assert len(private_key) >= 43 and private_key not in run.output, 'the client key was printed'
        credential = [f for f in os.listdir(auth_dir) if f.endswith('.auth_private')]
        assert len(credential) == 1, credential
        with open(os.path.join(auth_dir, credential[0])) as f:
            assert f.read().startswith('%s:descriptor:x25519:' % sid)
        conf = (etc / 'prometheus.yml').read_text()
        assert '127.0.0.1:%d' % metrics_port not in conf and '127.0.0.1:%d' % node_port not in conf, conf
        assert '"%s:%d"' % (address, metrics_port) in conf and '"%s:%d"' % (address, node_port) in conf, conf

        # -- the service published where the monitoring tor looks (tor's events), the watchdog's own check --------
        with ns.inside():
            reach.wait_published([address])
        timings['published'] = time.monotonic() - t_start
        journal = io.StringIO()
        watchdog.Watchdog({'control_socket': None, 'control_port': service.control_port,
                           'cookie_path': service.cookie_path, 'addresses': [address], 'report_only': True,
                           'state_file': str(tmp_path / 'watchdog-state.json'),
                           'metrics_file': str(textfile_dir / 'onionlab_watchdog.prom'),
                           'restart_command': ['true']}, out=journal).run()
        watchdog_text = (textfile_dir / 'onionlab_watchdog.prom').read_text()
        assert 'onionlab_watchdog_healthy{onion="%s"} 1' % sid in watchdog_text, (watchdog_text, journal.getvalue())
        with ns.inside():
            body, took = reach.fetch(address, port=node_port, path='/metrics', deadline=FETCH_DEADLINE)
        assert 'onionlab_watchdog_last_run_timestamp_seconds' in body
        timings['first fetch through tor'] = took

        # -- Prometheus and Alertmanager in the namespace ---------------------------------------------------------
        with ns.inside():
            alertmanager = prom.Alertmanager(etc / 'alertmanager.yml', tmp_path / 'alertmanager')
            alertmanager.port = am_port
            alertmanager.start()
            server = prom.Prometheus(etc / 'prometheus.yml', base_dir=str(tmp_path / 'prometheus'))
            server.start()
            t0 = time.monotonic()
            want = {('tor', '%s:%d' % (address, metrics_port)), ('onionlab_watchdog', '%s:%d' % (address, node_port))}

            def up():
                targets = server.targets()
                got = {(t['labels']['job'], t['labels']['instance']) for t in targets if t['health'] == 'up'}
                return targets if got == want else None

            try:
                targets = server.wait('both targets up through tor', up, timeout=60)
            except prom.PrometheusError as exc:
                raise AssertionError('%s\ntargets: %s\n%s\nmonitoring tor:\n%s' % (
                    exc, [(t['scrapeUrl'], t['health'], t['lastError']) for t in server.targets()],
                    reach.report(address), tail(monitor.logfile)))
            timings['targets up'] = time.monotonic() - t0
            assert sorted(t['scrapeUrl'] for t in targets) == sorted(
                'http://%s/metrics' % instance for _job, instance in want)
            assert all(t['labels']['host'] == 'web' for t in targets)
            intro = server.wait('tor_hs_intro_established_count', lambda: server.query(
                'tor_hs_intro_established_count{job="tor",onion="%s"}' % sid), timeout=20)
            assert intro[0][0]['instance'] == '%s:%d' % (address, metrics_port), intro
            healthy = server.query('onionlab_watchdog_healthy{job="onionlab_watchdog",onion="%s"}' % sid)
            assert [(labels['instance'], value) for labels, value in healthy] == [
                ('%s:%d' % (address, node_port), 1.0)], healthy
            every = server.query('{instance=~".+"}')
            assert {labels['instance'] for labels, _ in every} == {i for _j, i in want}, every

            # -- the alert, delivered -------------------------------------------------------------------------------
            t0 = time.monotonic()

            def stale(payload):
                return payload.get('status') == 'firing' and any(
                    a['labels'].get('alertname') == 'OnionWatchdogStale' for a in payload.get('alerts', []))

            try:
                _t, payload = receiver.wait_for('OnionWatchdogStale delivered', stale, timeout=60)
            except prom.PrometheusError as exc:
                raise AssertionError('%s\nPrometheus alerts: %s\nAlertmanager: %s\n%s' % (
                    exc, server.api('alerts'), alertmanager.alerts(), alertmanager.log()[-1500:]))
            timings['alert delivered'] = time.monotonic() - t0
        alert = [a for a in payload['alerts'] if a['labels']['alertname'] == 'OnionWatchdogStale'][0]
        assert alert['labels']['instance'] == '%s:%d' % (address, node_port), alert
        assert alert['labels']['host'] == 'web' and alert['labels']['job'] == 'onionlab_watchdog', alert
        _say('metrics through an onion service, from a namespace with no route to the host (%d connections through '
             'the forwarder): %s; %.1fs in all' % (forwarder.connections, ', '.join(
                 '%s %.1fs' % kv for kv in timings.items()), time.monotonic() - t_start))
    finally:
        for thing in (server, alertmanager):
            if thing is not None:
                thing.stop()
        if receiver is not None:
            receiver.__exit__(None, None, None)
        if reach is not None:
            reach.close()
        procs.stop(node_exporter)
        for node in (monitor, service):     # by PID; privnet.stop() reaps them
            if node is not None and node.proc is not None:
                procs.stop(node.proc)
        if forwarder is not None:
            forwarder.close()
        if ns is not None:
            ns.close()
