"""Onionbalance on the private Tor network (tests/harness/privnet.py).

Why the network needs a 20 s voting interval (measured, see the docstring of
``BalancedPrivNet``): under ``TestingTorNetwork 1`` tor ignores the consensus
parameter ``hsdir-interval`` and makes the onion-service time period as long as
one shared-random protocol run (24 voting rounds; src/feature/hs/hs_common.c
``get_time_period_length()``) and its rotation offset one SR phase (12 rounds).
Onionbalance 0.2.2/0.2.4 run with ``--is-testnet`` hard-code chutney's 20 s
round instead (onionbalance/hs_v3/consensus.py: period ``(24 * 20) // 60`` = 8
minutes, offset ``(12 * 20) // 60`` = 4 minutes).  The privnet votes every 10 s
(4-minute periods): the blinded key onionbalance signs with (it mixes the period
length and number in) is then not the one clients derive, and clients never
find the frontend descriptor.  With ``V3AuthVotingInterval 20`` both agree.

Helpers (standard library only; onionbalance itself is Debian's package):

* ``BalancedPrivNet`` -- a PrivNet whose authorities vote every 20 s;
* ``write_frontend_key(path)`` -- a new frontend key in tor's
  ``hs_ed25519_secret_key`` format (onionbalance reads it); returns the address;
* ``add_backend(net, name, frontend, http_port)`` -- a tor hosting one service
  with ``HiddenServiceOnionbalanceInstance 1`` and ``ob_config``;
* ``Onionbalance`` -- one ``onionbalance`` process against a frontend tor's
  ControlPort, stopped by PID;
* ``NamedHTTP`` -- a loopback HTTP server whose page names it;
* ``until_steady`` / ``until_seen`` -- request the frontend address until every request succeeds
  again (from the backends still up) / until given backends served; what the failover figures are.

From the command line: ``tests/harness/frontend_requests.py``.
"""

from __future__ import annotations

import http.server
import os
import re
import shutil
import subprocess
import sys
import time

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion as onionkeys

from . import privnet, procs
from .ports import free_ports
from .http_backend import HttpBackend
from .keys import new_expanded_key

ONIONBALANCE = shutil.which('onionbalance') or '/usr/sbin/onionbalance'
VOTING_INTERVAL = 20  # what onionbalance --is-testnet assumes (chutney's)


def onionbalance_version():
    try:
        out = subprocess.run([ONIONBALANCE, '--version'], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=30).stdout.decode()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.strip().split()[-1] if out.strip() else None


class BalancedPrivNet(privnet.PrivNet):
    """The private network with authorities voting every 20 s (the first
    consensus still comes on the 10 s initial grid, so start-up is as fast).  From the command
    line: ``privnet_cli.py start --voting-interval 20``."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault('voting_interval', VOTING_INTERVAL)
        super().__init__(*args, **kwargs)


def write_frontend_key(path, expanded=None):
    """Write tor's hs_ed25519_secret_key format (0600); return the address (no .onion)."""
    expanded = expanded or new_expanded_key()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'wb') as f:
        f.write(onionkeys.SECRET_HEADER + expanded)
    return onionkeys.onion_address(onionkeys.ed25519_public_from_expanded(expanded))


def backend_lines(hs_dir, http_port, virtual_port=80):
    return ['HiddenServiceDir %s' % hs_dir,
            'HiddenServicePort %d 127.0.0.1:%d' % (virtual_port, http_port),
            'HiddenServiceOnionbalanceInstance 1']


def add_backend(net, name, frontend, http_port):
    """Start a tor hosting one balanced service (its own key, ob_config naming
    the frontend). Returns (node, address)."""
    # beside the tor's data directory (PrivNet.add_tor empties that one); tor
    # refuses to start when HiddenServiceOnionbalanceInstance 1 has no ob_config
    hs_dir = os.path.join(net.base_dir, name + '-hs')
    os.makedirs(hs_dir, mode=0o700, exist_ok=True)
    os.chmod(hs_dir, 0o700)
    with open(os.path.join(hs_dir, 'ob_config'), 'w') as f:
        f.write('MasterOnionAddress %s.onion\n' % frontend.replace('.onion', ''))
    node = net.add_tor(name, extra_lines=backend_lines(hs_dir, http_port))
    deadline = time.monotonic() + 30
    host = os.path.join(hs_dir, 'hostname')
    while not os.path.exists(host):
        if time.monotonic() > deadline:
            raise privnet.PrivNetError('%s wrote no hostname' % name)
        time.sleep(0.1)
    with open(host) as f:
        return node, f.read().strip()


def restart_tor(net, node, attempts=3, quiet=60.0):
    """Start a stopped node's tor again with the same torrc (same keys), until its log says Bootstrapped 100% again.
    Its deadline counts from tor's last log line (a tor still bootstrapping is waited for; one silent for `quiet`
    seconds is not). While it was stopped its control or SOCKS port is free for anyone: another lane's network took
    one at a clean-clone run (the tor exited at once, "Address already in use", and the error showed only the old
    log's tail); then the node gets new ports of those two kinds (not an ORPort: the consensus names it) and starts
    again, up to `attempts` times."""
    for attempt in range(1, attempts + 1):
        size = node.log_text().count('Bootstrapped 100%')
        node.start()
        seen, quiet_since = len(node.log_text()), time.monotonic()
        while True:
            text = node.log_text()
            if text.count('Bootstrapped 100%') > size:
                return node
            if len(text) != seen:
                seen, quiet_since = len(text), time.monotonic()
            if not node.running():
                said = node.stdout_text()
                if 'Address already in use' in said and not node.is_server() and attempt < attempts:
                    ports = free_ports(2)
                    node.control_port = ports[0]
                    node.socks_port = ports[1] if node.socks_port else node.socks_port
                    privnet.log('%s: a port was taken while it was stopped; again with new ones: %s'
                                % (node.name, said.strip()[-200:]))
                    break
                raise privnet.PrivNetError('%s did not come back: it exited (%s): %s; its log: %s' % (
                    node.name, node.proc.returncode, said.strip()[-500:], text[-300:]))
            if time.monotonic() - quiet_since > quiet:
                raise privnet.PrivNetError('%s did not come back: nothing logged for %.0f s: %s'
                                           % (node.name, quiet, text[-500:]))
            time.sleep(0.1)
    raise privnet.PrivNetError('%s did not come back after %d starts' % (node.name, attempts))


def stop_tor(node, grace=5.0):
    procs.kill_pids([(node.pid, node.starttime)], grace)
    try:
        node.proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def write_config(path, key_path, addresses):
    """config.yaml (YAML is a superset of JSON-ish flow style; written by hand)."""
    lines = ['services:', '- key: %s' % key_path, '  instances:']
    for i, a in enumerate(addresses):
        lines += ['  - address: %s' % a.replace('.onion', ''), '    name: node%d' % (i + 1)]
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


class Onionbalance:
    """``onionbalance --is-testnet`` against one frontend tor (ControlPort,
    cookie auth).  ``-s`` names a socket that does not exist so it never
    talks to a system tor's /var/run/tor/control."""

    def __init__(self, workdir, frontend_node, config_path, verbosity='info', argv=None):
        self.argv = argv  # a command line to run as given (the role's unit drop-in ExecStart)
        self.workdir = workdir
        self.node = frontend_node
        self.config_path = config_path
        self.verbosity = verbosity
        self.log_path = os.path.join(workdir, 'onionbalance.log')
        self.proc = None
        self.starttime = None

    def start(self):
        argv = self.argv or [
            ONIONBALANCE, '--is-testnet', '-v', self.verbosity, '-c', self.config_path,
            '-i', '127.0.0.1', '-p', str(self.node.control_port),
            '-s', os.path.join(self.workdir, 'no-such-control-socket')]
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL, stdout=open(self.log_path, 'ab'), stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True, cwd=self.workdir)
        self.starttime = procs.proc_starttime(self.proc.pid)
        return self

    def log_text(self):
        try:
            with open(self.log_path, errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        procs.kill_pids([(self.proc.pid, self.starttime)], 5.0)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.proc = None


class NamedHTTP:
    """A loopback HTTP server answering 'backend <name>' to every GET."""

    def __init__(self, name):
        body = ('backend %s\n' % name).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header('Content-Type', 'text/plain')
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.name = name
        self.server = HttpBackend(Handler)
        self.port = self.server.port

    def close(self):
        self.server.stop()


__all__ = ['BalancedPrivNet', 'Onionbalance', 'NamedHTTP', 'add_backend', 'write_frontend_key',
           'write_config', 'stop_tor', 'restart_tor', 'onionbalance_version', 'Frontend', 'until_steady',
           'until_seen', 'client_intro_keys', 'client_fetch', 'live_intro_keys']


def isolated_get(socks_port, address, timeout=20.0, tag=None):
    """(status, body) of GET / on address through the client's SocksPort, with
    a SOCKS5 username/password of its own (IsolateSOCKSAuth, tor's default):
    a fresh circuit and rendezvous each time, so the client picks an
    introduction point of the frontend descriptor anew. Failures: OSError
    (harness.fixtures.SocksError)."""
    import uuid
    from .fixtures import http_exchange, socks5_connect
    sock = socks5_connect(socks_port, address, 80, timeout, username=tag or uuid.uuid4().hex[:16])
    status, body = http_exchange(sock, address)
    return status, body.strip()


def forget_descriptors(net):
    """See forget_client_descriptors; net is a running PrivNet."""
    forget_client_descriptors(net.client.control_port, net.client.cookie_path)


def forget_client_descriptors(control_port, cookie_path):
    """SIGNAL NEWNYM to the client tor: besides new circuits, it purges the client's onion-service
    state (descriptor cache, intro-point failures), so the next request fetches the frontend
    descriptor again.  A client that still reaches one backend never refetches by itself before
    the cached descriptor expires; this is what makes a restarted backend visible to this client."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
    ctl = connect(port=control_port, cookie_path=cookie_path)
    try:
        ctl.signal('NEWNYM')
    finally:
        ctl.close()


def _descriptor(control_port, cookie_path, key):
    """The descriptor text of GETINFO key (hs/client/desc/id/... or hs/service/desc/id/...), or None."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
    from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import OperationFailed
    with connect(port=control_port, cookie_path=cookie_path) as ctl:
        try:
            return ctl.get_info(key)[key] or None
        except OperationFailed:
            return None


def intro_keys(text, address):
    """The auth keys (raw, 32 bytes) of the introduction points of a descriptor, decrypted as a client does with
    the address. Onionbalance copies a backend's introduction points into the frontend's descriptor and certifies
    their auth keys again with its own signing key: the certified key stays the backend's."""
    from stem.descriptor.hidden_service import HiddenServiceDescriptorV3
    inner = HiddenServiceDescriptorV3(text.encode('ascii'), validate=True).decrypt(address)
    return {ip.auth_key_cert.key for ip in inner.introduction_points}


def client_intro_keys(net, address):
    """The auth keys of the introduction points of the descriptor of address the private network's client holds now
    (empty when it holds none)."""
    text = _descriptor(net.client.control_port, net.client.cookie_path,
                       'hs/client/desc/id/' + address.replace('.onion', ''))
    return intro_keys(text, address) if text else set()


def live_intro_keys(backends, net=None):
    """The auth keys of the introduction points the backends' tors keep now. A service keeps two descriptors, one for
    each of two time periods, each with introduction points of its own, and ``GETINFO hs/service/desc/id`` gives only
    the one tor calls current, which in half of each period is not the one clients fetch (measured: the frontend named
    only the other descriptor's introduction points and answered every request, while this key set alone said "0 of 6
    live" until the period ended, up to 8 minutes). With net (a running PrivNet), the keys of the backends'
    descriptors as its client fetches them now are added: the ones Onionbalance's tor fetches too."""
    keys = set()
    for b in backends:
        text = _descriptor(b['node'].control_port, b['node'].cookie_path,
                           'hs/service/desc/id/' + b['address'].replace('.onion', ''))
        if text:
            keys |= intro_keys(text, b['address'])
    if net is not None:
        for held in client_fetch(net, [b['address'] for b in backends]).values():
            keys |= held
    return keys


def client_fetch(net, addresses, timeout=20.0):
    """The private network's client fetches each address's descriptor anew (HSFETCH): {address: intro auth keys} of
    the descriptors tor received (its HS_DESC_CONTENT events; a missing address: none came within timeout, which
    only bounds tor's own fetch attempts)."""
    from .reach import Watch
    sids = {a.replace('.onion', ''): a for a in addresses}     # service id -> the address as the caller gave it
    watch = Watch(net.client, ['HS_DESC', 'HS_DESC_CONTENT'])
    try:
        for sid in sids:
            watch.ctl.request('HSFETCH', [sid])
        got, t0 = {}, time.monotonic()
        while len(got) < len(sids) and time.monotonic() - t0 < timeout:
            watch.poll()
            for _seconds, words, text in watch.contents:
                if len(words) > 1 and words[1] in sids and sids[words[1]] not in got and text.strip():
                    got[sids[words[1]]] = intro_keys(text, words[1] + '.onion')
            if len(got) < len(sids):
                time.sleep(0.2)
        return got
    finally:
        watch.close()


def until_live_descriptor(net, address, backends, deadline, every=5.0, front=None, enough='all'):
    """Make the private network's client drop its descriptors and fetch address's again (HSFETCH) until the
    descriptor it holds names only introduction points the backends keep now (live_intro_keys: both descriptors of
    each backend, the one its tor calls current and the one clients fetch): a rebuilt frontend's upload reaches the
    HSDirs one by one, and an HSDir that still has the old frontend's descriptor (of this time period, or of the
    next, uploaded before it stopped) serves dead introduction points. A revision counter cannot tell them apart: it
    counts from the start of the descriptor's SRV run, so a descriptor of the next period has a lower one (a
    clean-clone run failed on exactly that: revision 16198532 after 21856717). Returns (seconds, fetches);
    AssertionError at deadline, with what the client held and what the backends keep. front: a harness.reach.Watch
    of the frontend's tor opened before Onionbalance started (its HS_DESC events: which HSDirs took the upload, which
    refused it and why), printed with the client's answers either way. enough='any': a descriptor naming at least
    one live introduction point will do (a client tries them in turn until one answers)."""
    from harness.reach import Watch
    sid = address.replace('.onion', '')
    client = Watch(net.client, ['HS_DESC'])
    try:
        return _until_live(net, address, backends, deadline, every, front, client, sid, enough)
    finally:
        client.close()


def _upload_story(front, client, sid):
    """The frontend tor's uploads and the client's fetches of sid, one line each, from their HS_DESC events."""
    lines = []
    for who, watch in (('frontend', front), ('client', client)):
        if watch is None:
            continue
        for t, text in watch.poll():
            words = text.split()
            if len(words) >= 5 and words[0] == 'HS_DESC' and words[2] == sid and words[1] != 'REQUESTED':
                lines.append('%s %7.1f %s %s %s' % (who, t, words[1], words[4][:20], ' '.join(words[5:7])[:60]))
    return lines


def _until_live(net, address, backends, deadline, every, front, client, sid, enough='all'):
    t0, fetches, held, live = time.monotonic(), 0, None, set()
    while time.monotonic() - t0 < deadline:
        forget_descriptors(net)
        fetches += 1
        got = client_fetch(net, [address], timeout=30.0)
        live = live_intro_keys(backends, net)
        if address in got:
            held = got[address]
            if held and (held <= live if enough == 'all' else held & live):
                sys.stderr.write('\n[onionlab] the frontend\'s uploads and the client\'s fetches:\n%s\n'
                                 % '\n'.join(_upload_story(front, client, sid)[-60:]))
                return round(time.monotonic() - t0, 1), fetches
        time.sleep(every)
    raise AssertionError('the client never held a descriptor of %s naming only live introduction points within %.0fs '
                         '(%d fetches; the last named %s of which %d live; the backends publish %d)\n%s'
                         % (address, deadline, fetches, None if held is None else len(held),
                            len((held or set()) & live), len(live), '\n'.join(_upload_story(front, client, sid)[-80:])))


def dropin_command(path):
    """The argv of the last non-empty ExecStart= line of a systemd drop-in."""
    import shlex
    argv = None
    with open(path) as f:
        for line in f:
            if line.startswith('ExecStart=') and line.strip() != 'ExecStart=':
                argv = shlex.split(line.strip()[len('ExecStart='):])
    if not argv:
        raise AssertionError('no ExecStart command in %s' % path)
    return argv


PAGE_NAME = r'(?:host|backend) (\S+)'  # prepare.yml's 'host H service S' and NamedHTTP's 'backend NAME'


class Frontend:
    """Requests to a frontend address through the private network's client (isolated_get)."""

    def __init__(self, socks_port, address, control_port=None, cookie_path=None, pattern=PAGE_NAME, timeout=20.0):
        self.socks_port, self.address, self.timeout = socks_port, address, timeout
        self.control_port, self.cookie_path = control_port, cookie_path
        self.pattern = re.compile(pattern)

    def get(self):
        """(backend name or None, what happened)"""
        try:
            status, body = isolated_get(self.socks_port, self.address, timeout=self.timeout)
        except OSError as e:
            return None, str(e)
        m = self.pattern.search(body)
        if status != 200 or not m:
            return None, 'HTTP %d: %s' % (status, body[:80])
        return m.group(1), 'HTTP 200'

    def forget(self):
        forget_client_descriptors(self.control_port, self.cookie_path)


def until_steady(get, allowed, t0, deadline, steady=6, sleep=time.sleep, forget=None, forget_after=3):
    """Request (get() -> (name or None, why)) until `steady` answers in a row come from backends in
    allowed (every request succeeds again); returns {'seconds': from t0 to the first of those
    answers, 'failures', 'pages': answers per backend, 'slowest': the longest request, 'forgets'}
    (a client falls back to another introduction point within one request).  With forget, it is
    called after every forget_after failures in a row, as a user would ask for a new identity: a
    client that found every introduction point of its descriptor failing asks the HSDirs again,
    and one that asked them all lately waits (tor's "No more HSDir available to query").  Raises
    AssertionError at the deadline."""
    run, run_start, failures, pages, slowest, in_row, forgets = 0, None, 0, {}, 0.0, 0, 0
    why, first, requests = None, None, 0
    while time.monotonic() - t0 < deadline:
        t = time.monotonic()
        first = t - t0 if first is None else first
        requests += 1
        name, why = get()
        slowest = max(slowest, time.monotonic() - t)
        if name is not None:
            pages[name] = pages.get(name, 0) + 1
        if name is not None and (not allowed or name in allowed):
            if run == 0:
                run_start = t
            run += 1
            in_row = 0
            if run >= steady:
                return {'seconds': round(run_start - t0, 1), 'failures': failures, 'pages': pages,
                        'slowest': round(slowest, 1), 'forgets': forgets}
        else:
            failures += 1
            in_row += 1
            run = 0
            if forget and in_row % forget_after == 0:
                forget()
                forgets += 1
            sleep(1)
    raise AssertionError('no %d answers in a row from %s within %.0fs (%d requests, the first %s s after the start, '
                         'the slowest took %.1f s; %d failures, %d forgets, pages %s; last: %s)'
                         % (steady, sorted(allowed or ['any backend']), deadline, requests,
                            'none' if first is None else '%.1f' % first, slowest, failures, forgets, pages, why))


def until_seen(get, names, t0, deadline, forget=None, forget_every=15.0, sleep=time.sleep):
    """Request until every backend in names served a page; forget() (the client's descriptors)
    every forget_every seconds: a client that still reaches a backend keeps its descriptor, which
    never lists a backend started again.  Returns {'seconds', 'pages'}; AssertionError at the deadline."""
    pages, forgot = {}, 0.0
    while time.monotonic() - t0 < deadline:
        if forget and time.monotonic() - forgot > forget_every:
            forget()
            forgot = time.monotonic()
        name, _ = get()
        if name is not None:
            pages[name] = pages.get(name, 0) + 1
            if set(names) <= set(pages):
                return {'seconds': round(time.monotonic() - t0, 1), 'pages': pages}
        else:
            sleep(1)
    raise AssertionError('%s never served within %.0fs (pages %s)' % (sorted(set(names) - set(pages)), deadline, pages))
