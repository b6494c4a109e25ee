# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Monitoring in the tests: a scripted MetricsPort stand-in and Debian's real Prometheus.

* ScriptedPort: a loopback TCP server that answers each connection with a script of bytes and pauses
  (a good page, garbage, a huge or endless body, a slow drip, a close without answer), on a real socket,
  so tor_metrics_facts and metrics.fetch() are tested as they run.
* Alertmanager: Debian's `prometheus-alertmanager` started the same way (clustering off), and
  WebhookReceiver, a loopback HTTP server recording what Alertmanager POSTs, with the time it arrived.
* Prometheus: Debian's `prometheus` binary (bookworm: 2.42; ensure_prometheus() apt-installs the package
  when it is missing, as hosts.ensure_packages() does, and never enables or starts Debian's service) started
  by us with --config.file, --storage.tsdb.path in a temp dir and --web.listen-address=127.0.0.1:<free port>,
  stopped by its PID; query() is /api/v1/query. promtool() runs `promtool check ...`.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

try:  # imported as harness.prometheus (pytest) or from this directory
    from . import procs
    from .http_backend import HttpBackend
    from .ports import free_ports
except ImportError:  # pragma: no cover
    import procs
    from http_backend import HttpBackend
    from ports import free_ports

PROMETHEUS = os.environ.get('ONIONLAB_PROMETHEUS', '/usr/bin/prometheus')
PROMTOOL = os.environ.get('ONIONLAB_PROMTOOL', '/usr/bin/promtool')


def _say(msg):
    sys.stderr.write('[prometheus] %s\n' % msg)
    sys.stderr.flush()


# ---------------------------------------------------------------------------
# a scripted MetricsPort
# ---------------------------------------------------------------------------

def http_ok(body, extra_headers=''):
    if isinstance(body, str):
        body = body.encode('utf-8')
    return (b'HTTP/1.0 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n%s\r\n'
            % (len(body), extra_headers.encode('ascii'))) + body


class ScriptedPort(object):
    """Each accepted connection reads the request, then plays script: a list of bytes (sent) and floats
    (seconds slept); a callable instead of a list is called with the connection number and returns one.
    The connection is closed at the end unless hold=True (then it stays open until stop())."""

    def __init__(self, script, hold=False):
        self.script = script
        self.hold = hold
        self.requests = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.url = 'http://127.0.0.1:%d/metrics' % self.port
        self._stop = threading.Event()
        self._conns = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self):
        n = 0
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._play, args=(conn, n), daemon=True).start()
            n += 1

    def _play(self, conn, n):
        try:
            conn.settimeout(5)
            data = b''
            while b'\r\n\r\n' not in data and len(data) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            self.requests.append(data)
            script = self.script(n) if callable(self.script) else self.script
            for step in script:
                if self._stop.is_set():
                    return
                if isinstance(step, (int, float)):
                    self._stop.wait(step)
                else:
                    conn.sendall(step)
            if self.hold:
                self._stop.wait()
        except OSError:
            pass   # the client gave up (what a bounded read does)
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)   # wakes the accept() of _serve (close alone does not)
        except OSError:
            pass
        self.sock.close()
        for conn in self._conns:
            try:
                conn.close()
            except OSError:
                pass
        self._thread.join(5)


# ---------------------------------------------------------------------------
# Debian's Prometheus
# ---------------------------------------------------------------------------

def ensure_prometheus():
    """apt-get install prometheus (it has promtool) if either binary is missing; returns what was installed.
    The package's own service is left as the package leaves it: our Prometheus is started by Prometheus()."""
    if os.access(PROMETHEUS, os.X_OK) and os.access(PROMTOOL, os.X_OK):
        return []
    sudo = [] if os.geteuid() == 0 else ['sudo']
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    _say('installing Debian package prometheus')
    install = sudo + ['apt-get', 'install', '-y', '-qq', '--no-install-recommends', 'prometheus']
    if subprocess.call(install, env=env, stdout=subprocess.DEVNULL) != 0:
        subprocess.check_call(sudo + ['apt-get', 'update', '-qq'], env=env)
        subprocess.check_call(install, env=env, stdout=subprocess.DEVNULL)
    return ['prometheus']


def promtool(*args, timeout=60):
    """(returncode, stdout+stderr) of promtool args."""
    proc = subprocess.run([PROMTOOL] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout)
    return proc.returncode, proc.stdout


class PrometheusError(RuntimeError):
    pass


class Prometheus(object):
    """Our own Prometheus on 127.0.0.1:<free port>, config and TSDB in base_dir; stop() by PID."""

    def __init__(self, config_file, base_dir=None, ready_timeout=60.0):
        self.config_file = str(config_file)
        self.created = base_dir is None
        self.base = base_dir or tempfile.mkdtemp(prefix='onionlab-prometheus-')
        self.port = None
        self.proc = None
        self.ready_timeout = ready_timeout
        self.log_path = os.path.join(self.base, 'prometheus.log')
        self.timings = {}

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def start(self):
        t0 = time.monotonic()
        self.port = free_ports(1)[0]
        tsdb = os.path.join(self.base, 'tsdb')
        os.makedirs(tsdb, exist_ok=True)
        argv = [PROMETHEUS, '--config.file=%s' % self.config_file, '--storage.tsdb.path=%s' % tsdb,
                '--web.listen-address=127.0.0.1:%d' % self.port, '--web.enable-lifecycle',
                '--log.level=info']
        with open(self.log_path, 'ab') as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        while True:
            if self.proc.poll() is not None:
                raise PrometheusError('prometheus exited with %s: %s' % (self.proc.returncode, self.log()[-1500:]))
            try:
                with urllib.request.urlopen(self.url + '/-/ready', timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() - t0 > self.ready_timeout:
                self.stop()
                raise PrometheusError('prometheus not ready in %.0fs: %s' % (self.ready_timeout, self.log()[-1500:]))
            time.sleep(0.1)
        self.timings['ready'] = time.monotonic() - t0
        return self

    def log(self):
        try:
            with open(self.log_path, errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def api(self, path, **params):
        url = '%s/api/v1/%s?%s' % (self.url, path, urllib.parse.urlencode(params))
        with urllib.request.urlopen(url, timeout=10) as r:
            answer = json.load(r)
        if answer.get('status') != 'success':
            raise PrometheusError('%s: %s' % (url, answer))
        return answer['data']

    def query(self, expr):
        """The instant vector of expr: [(labels dict, float value)]."""
        data = self.api('query', query=expr)
        return [(item['metric'], float(item['value'][1])) for item in data['result']]

    def targets(self):
        return self.api('targets')['activeTargets']

    def query_range(self, expr, start, end, step):
        """A range vector of expr between two Unix times: [(labels dict, [(unix time, float value)])]."""
        data = self.api('query_range', query=expr, start='%.3f' % start, end='%.3f' % end, step=step)
        return [(item['metric'], [(float(t), float(v)) for t, v in item['values']]) for item in data['result']]

    def wait(self, what, check, timeout=60.0, interval=0.5):
        """Poll check() until it returns something true; that value, or PrometheusError after timeout."""
        t0 = time.monotonic()
        last = None
        while True:
            try:
                last = check()
                if last:
                    return last
            except (OSError, PrometheusError) as exc:
                last = exc
            if time.monotonic() - t0 > timeout:
                raise PrometheusError('%s: not after %.0fs (last: %r)' % (what, timeout, last))
            time.sleep(interval)

    def reload(self):
        req = urllib.request.Request(self.url + '/-/reload', method='POST')
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status

    def stop(self, grace=10.0):
        proc, self.proc = self.proc, None
        procs.stop(proc, grace)
        if self.created:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


# ---------------------------------------------------------------------------
# Debian's Alertmanager, and a webhook receiver
# ---------------------------------------------------------------------------

ALERTMANAGER = os.environ.get('ONIONLAB_ALERTMANAGER', '/usr/bin/prometheus-alertmanager')
AMTOOL = os.environ.get('ONIONLAB_AMTOOL', '/usr/bin/amtool')


def ensure_alertmanager():
    """apt-get install prometheus-alertmanager (hosts.ensure_packages) if its binaries are missing. Its own
    service is left as the package leaves it: our Alertmanager is started by Alertmanager()."""
    if os.access(ALERTMANAGER, os.X_OK) and os.access(AMTOOL, os.X_OK):
        return []
    try:
        from . import hosts
    except ImportError:  # pragma: no cover
        import hosts
    return hosts.ensure_packages(('tests',))


class Alertmanager(object):
    """Our own Alertmanager on 127.0.0.1:<free port> (clustering off), data in base_dir; stop() by PID."""

    def __init__(self, config_file, base_dir, ready_timeout=60.0):
        self.config_file = str(config_file)
        self.base = str(base_dir)
        self.port = None
        self.proc = None
        self.ready_timeout = ready_timeout
        self.log_path = os.path.join(self.base, 'alertmanager.log')
        self.timings = {}

    @property
    def url(self):
        return 'http://127.0.0.1:%d' % self.port

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def start(self):
        t0 = time.monotonic()
        if self.port is None:
            self.port = free_ports(1)[0]
        data = os.path.join(self.base, 'data')
        os.makedirs(data, exist_ok=True)
        argv = [ALERTMANAGER, '--config.file=%s' % self.config_file, '--storage.path=%s' % data,
                '--web.listen-address=127.0.0.1:%d' % self.port, '--cluster.listen-address=', '--log.level=info']
        with open(self.log_path, 'ab') as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        while True:
            if self.proc.poll() is not None:
                raise PrometheusError('alertmanager exited with %s: %s' % (self.proc.returncode, self.log()[-1500:]))
            try:
                with urllib.request.urlopen(self.url + '/-/ready', timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() - t0 > self.ready_timeout:
                self.stop()
                raise PrometheusError('alertmanager not ready in %.0fs: %s' % (self.ready_timeout, self.log()[-1500:]))
            time.sleep(0.1)
        self.timings['ready'] = time.monotonic() - t0
        return self

    def log(self):
        try:
            with open(self.log_path, errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def alerts(self):
        with urllib.request.urlopen(self.url + '/api/v2/alerts', timeout=10) as r:
            return json.load(r)

    def stop(self, grace=10.0):
        proc, self.proc = self.proc, None
        procs.stop(proc, grace)


class WebhookReceiver(object):
    """An HTTP server on 127.0.0.1 that records every POST body (Alertmanager's webhook JSON) with the
    monotonic time it arrived: received = [(t, payload)]; wait_for(pred) polls until one matches."""

    def __init__(self):
        import http.server
        receiver = self
        self.received = []
        self._cond = threading.Condition()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get('Content-Length') or 0)
                body = self.rfile.read(length)
                try:
                    payload = json.loads(body.decode('utf-8'))
                except ValueError:
                    payload = {'unparsed': body.decode('utf-8', 'replace')}
                with receiver._cond:
                    receiver.received.append((time.monotonic(), payload))
                    receiver._cond.notify_all()
                self.send_response(200)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = HttpBackend(Handler)
        self.port = self.server.port
        self.url = 'http://127.0.0.1:%d/hook' % self.port

    def wait_for(self, what, pred, timeout):
        """The first (t, payload) received for which pred(payload) is true, waiting up to timeout seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for t, payload in self.received:
                    if pred(payload):
                        return t, payload
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PrometheusError('%s: not received in %.0fs (received: %s)' % (
                        what, timeout, [(p.get('status'), [a['labels'].get('alertname') for a in p.get('alerts', [])])
                                        for _, p in self.received]))
                self._cond.wait(min(left, 1.0))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.stop()
