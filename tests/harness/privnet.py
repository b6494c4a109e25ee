#!/usr/bin/env python3
"""A private Tor network on 127.0.0.1 for the tests (standard library only).

Layout: 3 directory authorities, 3 (or more) relays that exit only to
127.0.0.0/8, one client tor with a SocksPort and, optionally, one tor meant to
host onion services (ControlPort only, ``SocksPort 0``).  Everything lives in
one directory, every key is generated fresh (``tor-gencert`` for the authority
certificates, ``tor --list-fingerprint`` for the identity keys), every port is
a free port on 127.0.0.1, and no node knows any directory authority but ours
(``TestingTorNetwork 1`` + our ``DirAuthority`` lines), so nothing can reach
the real Tor network.  Relays resolve DNS through a resolv.conf that names
only 127.0.0.1.

Every tor carries ``__OwningControllerProcess <pid>``: it exits by itself when
that process dies.  The owner is

* in-process use (``PrivNet`` as a context manager, the pytest fixture in
  ``tests/harness/fixtures.py``): the Python process that created the network;
* the CLI ``start``: a small *supervisor* process (``privnet_cli.py _supervise``)
  that ``start`` spawns in its own session.  The supervisor starts the tors,
  writes ``DIR/state.json``, then sleeps until ``stop`` sends it SIGTERM; it
  then stops every tor by PID (SIGTERM, SIGKILL after a grace period) and
  exits.  If the supervisor is killed outright, the tors notice their owner is
  gone and exit on their own; ``stop`` also signals any tor PID listed in the
  state file that is still alive (checking the process start time first, so a
  recycled PID is never hit).

Readiness is watched, not slept for:

1. the authorities' ``cached-consensus`` lists every authority and relay as
   Running, Valid and HSDir (relays also Exit);
2. every relay is sent SIGHUP (= ``SIGNAL RELOAD``) so it fetches that
   consensus at once, then its DirPort is polled until it serves the
   microdesc consensus listing every node and every microdescriptor in it;
3. only then are the client and the onion-service tor started, and their
   logs are watched for ``Bootstrapped 100%``.

The first vote is placed on the wall-clock grid ~8 s after start: votes run
on a grid of ``TestingV3AuthInitialVotingInterval 10``, and
``TestingV3AuthVotingStartOffset`` = (start time + 8) mod 10, so the first
consensus comes once the relays have uploaded their descriptors and already
lists every one (with a 5 s interval the first vote often came too early, and
that incomplete consensus stuck for ~10 s more).

The CLI (a network in the background, for molecule and a person) is ``privnet_cli.py``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

try:  # imported as harness.privnet (pytest) or from this directory (run as a script)
    from .ports import free_ports
    from .procs import kill_pids, proc_starttime
except ImportError:  # pragma: no cover
    from ports import free_ports
    from procs import kill_pids, proc_starttime

TOR = os.environ.get('ONIONLAB_TOR', shutil.which('tor') or '/usr/sbin/tor')
TOR_GENCERT = shutil.which('tor-gencert') or '/usr/bin/tor-gencert'
STATE_FILE = 'state.json'
JOIN_FILE = 'join.torrc'

# Options for every node of the network (and for tors that join it).
COMMON_OPTIONS = [
    'TestingTorNetwork 1',
    'PathsNeededToBuildCircuits 0.67',
    'AddressDisableIPv6 1',
    'ClientUseIPv6 0',
    'SafeLogging 0',
    'ShutdownWaitLength 0',
]
# Only meaningful for authorities, harmless elsewhere (kept on every node of
# the harness so the network behaves like the measured one).
VOTE_OPTIONS = [
    'TestingDirAuthVoteExit *',
    'TestingDirAuthVoteHSDir *',
    'TestingDirAuthVoteGuard *',
    'TestingMinExitFlagThreshold 0',
    'V3AuthNIntervalsValid 2',
]


class PrivNetError(RuntimeError):
    pass


def log(msg):
    print('[privnet %7.2f] %s' % (time.monotonic() % 10000, msg), file=sys.stderr, flush=True)


def cache_dir():
    """~/.cache/onionlab (or $ONIONLAB_CACHE): the harnesses' registries and caches."""
    d = os.environ.get('ONIONLAB_CACHE') or os.path.join(os.path.expanduser('~'), '.cache', 'onionlab')
    os.makedirs(d, exist_ok=True)
    return d


def _registry_entry(d):
    reg = os.path.join(cache_dir(), 'privnets')
    os.makedirs(reg, exist_ok=True)
    return os.path.join(reg, 'privnet-%s.json' % hashlib.sha256(d.encode()).hexdigest()[:12])


def parse_consensus(text):
    """Minimal parse: {nickname: set(flags)} plus 'm' digests (microdesc flavour)."""
    routers, digests, nick = {}, [], None
    for line in text.splitlines():
        if line.startswith('r '):
            nick = line.split()[1]
            routers[nick] = set()
        elif line.startswith('s ') and nick is not None:
            routers[nick] = set(line.split()[1:])
        elif line.startswith('m ') and nick is not None:
            digests.append(line.split()[1])
    return routers, digests


def http_get(port, path, timeout=3.0):
    url = 'http://127.0.0.1:%d%s' % (port, path)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read().decode('utf-8', 'replace')
    except (urllib.error.URLError, OSError, ValueError):
        return None


class Node:
    """One tor process of the network."""

    def __init__(self, net, name, role, datadir, control_port, or_port=None, dir_port=None,
                 socks_port=None, extra=None):
        self.net = net
        self.name = name
        self.role = role  # authority | relay | client | onion | extra
        self.datadir = datadir
        self.control_port = control_port
        self.or_port = or_port
        self.dir_port = dir_port
        self.socks_port = socks_port
        self.extra = list(extra or [])
        self.fingerprint = None
        self.v3ident = None
        self.proc = None
        self.starttime = None

    @property
    def torrc(self):
        return os.path.join(self.datadir, 'torrc')

    @property
    def logfile(self):
        return os.path.join(self.datadir, 'notice.log')

    @property
    def rend_logfile(self):
        return os.path.join(self.datadir, 'rend.log')

    @property
    def cookie_path(self):
        return os.path.join(self.datadir, 'control_auth_cookie')

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def is_server(self):
        return self.role in ('authority', 'relay')

    def torrc_lines(self):
        net = self.net
        lines = [
            '# generated by tests/harness/privnet.py',
            'DataDirectory %s' % self.datadir,
            'Nickname %s' % self.name,
            'ControlPort 127.0.0.1:%d' % self.control_port,
            'CookieAuthentication 1',
            '__OwningControllerProcess %d' % net.owner_pid,
            'Log notice file %s' % self.logfile,
            'RunAsDaemon 0',
        ] + COMMON_OPTIONS + VOTE_OPTIONS + net.dirauthority_lines
        if self.is_server():
            lines += [
                'SocksPort 0',
                'Address 127.0.0.1',
                'ORPort 127.0.0.1:%d' % self.or_port,
                'DirPort 127.0.0.1:%d' % self.dir_port,
                'AssumeReachable 1',
                'ContactInfo privnet@test.invalid',
                'ServerDNSDetectHijacking 0',
                'ServerDNSTestAddresses',
                'ServerDNSResolvConfFile %s' % net.resolv_conf,
                # a directory cache makes a diff from each consensus it keeps to every new one: at a vote every 10 s
                # its work grew each minute (6 servers: 2.0 CPU-s in the first minute, 6-7 by the fifth; the whole
                # suite's networks took about a fifth of its CPU); diffs only from the last minute's keep it flat (~2)
                'MaxConsensusAgeForDiffs 1 minute',
            ]
        if self.role == 'relay':
            lines += [
                'ExitRelay 1',
                'ExitPolicyRejectPrivate 0',
                'ExitPolicy accept 127.0.0.0/8:*',
                'ExitPolicy reject *:*',
            ]
        elif self.role == 'authority':
            lines += [
                'AuthoritativeDirectory 1',
                'V3AuthoritativeDirectory 1',
                'ExitRelay 0',
                'ExitPolicy reject *:*',
                'TestingV3AuthInitialVotingInterval 10',
                'TestingV3AuthVotingStartOffset %d' % net.vote_offset,
                'TestingV3AuthInitialVoteDelay 2',
                'TestingV3AuthInitialDistDelay 2',
                'V3AuthVotingInterval %d' % net.voting_interval,
                'V3AuthVoteDelay 2',
                'V3AuthDistDelay 2',
            ]
        elif self.role == 'client':
            # onion-service steps (descriptor fetches, introduction failures) for a test's diagnosis
            lines += ['SocksPort 127.0.0.1:%d' % self.socks_port,
                      'Log [rend]info file %s' % self.rend_logfile]
        elif self.role in ('onion', 'extra'):
            # the onion-service steps of both sides (uploads, intro circuits; a client's fetches and introductions)
            lines += ['SocksPort %s' % ('127.0.0.1:%d' % self.socks_port if self.socks_port else '0'),
                      'Log [rend]info file %s' % self.rend_logfile]
        return lines + self.extra

    def write_torrc(self):
        with open(self.torrc, 'w') as f:
            f.write('\n'.join(self.torrc_lines()) + '\n')

    def start(self):
        self.write_torrc()
        self.proc = subprocess.Popen(
            [TOR, '-f', self.torrc, '--defaults-torrc', '/dev/null'],
            # tor writes what stops it before its log is open (bad torrc, a taken port) to stdout
            stdin=subprocess.DEVNULL, stdout=open(os.path.join(self.datadir, 'stderr.log'), 'wb'),
            stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True)
        self.starttime = proc_starttime(self.proc.pid)

    def read_fingerprint(self):
        try:
            with open(os.path.join(self.datadir, 'fingerprint')) as f:
                self.fingerprint = f.read().split()[1]
        except (OSError, IndexError):
            pass
        return self.fingerprint

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def log_text(self):
        try:
            with open(self.logfile, errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def stdout_text(self):
        """What tor wrote to stdout: what stopped it before its log was open (a taken port, a bad torrc)."""
        try:
            with open(os.path.join(self.datadir, 'stderr.log'), errors='replace') as f:
                return f.read()
        except OSError:
            return ''

    def bootstrapped(self):
        return 'Bootstrapped 100%' in self.log_text()

    def info(self):
        return {
            'name': self.name, 'role': self.role, 'pid': self.pid, 'starttime': self.starttime,
            'datadir': self.datadir, 'control_port': self.control_port,
            'cookie_path': self.cookie_path, 'or_port': self.or_port, 'dir_port': self.dir_port,
            'socks_port': self.socks_port, 'fingerprint': self.fingerprint, 'torrc': self.torrc,
            'log': self.logfile,
        }


class PrivNet:
    """The private network.  Use as ``with PrivNet() as net: ...`` or call
    ``start()``/``stop()``; ``stop()`` is also run when ``start()`` fails."""

    def __init__(self, base_dir=None, n_authorities=3, n_relays=3, with_onion=True,
                 owner_pid=None, ready_timeout=60.0, grace=5.0, keep=False, voting_interval=10,
                 authority_extra=()):
        """voting_interval: seconds between the authorities' votes once running (the first
        consensus still comes on the 10 s initial grid); 20 for Onionbalance (harness.onionbalance).
        authority_extra: torrc lines every authority gets besides its own (e.g. the Stable flag's
        uptime rule)."""
        if n_authorities < 1 or n_relays < 1:
            raise ValueError('need at least one authority and one relay')
        self.created_dir = base_dir is None
        self.base_dir = os.path.abspath(base_dir or tempfile.mkdtemp(prefix='onionlab-privnet-'))
        os.makedirs(self.base_dir, mode=0o700, exist_ok=True)
        self.n_authorities = n_authorities
        self.n_relays = n_relays
        self.with_onion = with_onion
        self.owner_pid = owner_pid or os.getpid()
        self.ready_timeout = ready_timeout
        self.grace = grace
        self.keep = keep
        self.nodes = []
        self.dirauthority_lines = []
        self.vote_offset = 0
        self.voting_interval = int(voting_interval)
        self.authority_extra = list(authority_extra)
        self.timings = {}
        self.resolv_conf = os.path.join(self.base_dir, 'resolv.conf')
        self._t0 = None

    # -- accessors -------------------------------------------------------
    def by_role(self, role):
        return [n for n in self.nodes if n.role == role]

    @property
    def authorities(self):
        return self.by_role('authority')

    @property
    def relays(self):
        return self.by_role('relay')

    @property
    def client(self):
        return self.by_role('client')[0]

    @property
    def onion(self):
        nodes = self.by_role('onion')
        return nodes[0] if nodes else None

    @property
    def socks_port(self):
        return self.client.socks_port

    def join_torrc_lines(self):
        """torrc lines a further tor needs to join this network as a client or
        onion-service host (it adds its own DataDirectory/ControlPort/...)."""
        return join_torrc_lines(self.dirauthority_lines)

    # -- lifecycle -------------------------------------------------------
    def _mkdir(self, name):
        d = os.path.join(self.base_dir, name)
        if os.path.isdir(d):  # a previous run's keys and caches: never reused
            shutil.rmtree(d)
        os.makedirs(d, mode=0o700)
        os.chmod(d, 0o700)
        return d

    def _gen_authority_keys(self, nodes):
        procs = []
        for n in nodes:
            keys = os.path.join(n.datadir, 'keys')
            os.makedirs(keys, mode=0o700, exist_ok=True)
            p = subprocess.Popen(
                [TOR_GENCERT, '--create-identity-key', '--passphrase-fd', '0',
                 '-i', os.path.join(keys, 'authority_identity_key'),
                 '-s', os.path.join(keys, 'authority_signing_key'),
                 '-c', os.path.join(keys, 'authority_certificate'),
                 '-m', '12', '-a', '127.0.0.1:%d' % n.dir_port],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                cwd=n.datadir)
            procs.append(p)
        for p in procs:
            p.stdin.write(b'\n')  # empty passphrase
            p.stdin.close()
        for n, p in zip(nodes, procs):
            err = p.stderr.read()
            p.stderr.close()
            p.wait(timeout=60)
            if p.returncode != 0:
                raise PrivNetError('tor-gencert failed for %s: %s' % (n.name, err.decode(errors='replace')))
            with open(os.path.join(n.datadir, 'keys', 'authority_certificate')) as f:
                for line in f:
                    if line.startswith('fingerprint '):
                        n.v3ident = line.split()[1].strip()
            if not n.v3ident:
                raise PrivNetError('no fingerprint in certificate of %s' % n.name)

    def _gen_fingerprints(self, nodes):
        procs = [subprocess.Popen(
            [TOR, '--ignore-missing-torrc', '-f', '/dev/null', '--defaults-torrc', '/dev/null',
             '--orport', '1', '--nickname', n.name, '--datadirectory', n.datadir, '--list-fingerprint',
             '--log', 'err stderr'],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n in nodes]
        for n, p in zip(nodes, procs):
            out, err = p.communicate(timeout=60)
            lines = out.decode().strip().splitlines()
            if p.returncode != 0 or not lines:
                raise PrivNetError('tor --list-fingerprint failed for %s: %s' % (n.name, err.decode(errors='replace')))
            n.fingerprint = ''.join(lines[-1].split()[1:])
            if len(n.fingerprint) != 40:
                raise PrivNetError('odd fingerprint for %s: %r' % (n.name, lines[-1]))

    def start(self, attempts=3):
        """Start the network; when a tor could not bind a port another process took between free_ports() and
        tor's bind (the CI's lanes pick ports at once: seen at a clean-clone run, "Could not bind to
        127.0.0.1:24834: Address already in use"), every tor is stopped and the network made again with new
        ports, up to ``attempts`` times."""
        self._t0 = time.monotonic()
        for attempt in range(1, attempts + 1):
            try:
                self._start()
                return self
            except PrivNetError as exc:
                if attempt < attempts and 'Address already in use' in str(exc):
                    log('attempt %d: a port was taken before tor bound it; again with new ports: %s'
                        % (attempt, str(exc).splitlines()[0:3]))
                    self._stop_nodes()
                    self.nodes = []
                    continue
                self.stop()
                raise
            except BaseException:
                self.stop()
                raise
        return self

    def _start(self):
        with open(self.resolv_conf, 'w') as f:
            f.write('nameserver 127.0.0.1\n')
        n_servers = self.n_authorities + self.n_relays
        n_ports = n_servers * 3 + 2 + (1 if self.with_onion else 0)
        ports = iter(free_ports(n_ports))
        for i in range(self.n_authorities):
            name = 'auth%d' % i
            self.nodes.append(Node(self, name, 'authority', self._mkdir(name), next(ports),
                                   or_port=next(ports), dir_port=next(ports), extra=self.authority_extra))
        for i in range(self.n_relays):
            name = 'relay%d' % i
            extra = ['AccountingMax 1 GBytes', 'AccountingStart day 00:00'] if i == 0 else []
            self.nodes.append(Node(self, name, 'relay', self._mkdir(name), next(ports),
                                   or_port=next(ports), dir_port=next(ports), extra=extra))
        self.nodes.append(Node(self, 'client', 'client', self._mkdir('client'), next(ports),
                               socks_port=next(ports)))
        if self.with_onion:
            self.nodes.append(Node(self, 'onion', 'onion', self._mkdir('onion'), next(ports)))

        servers = [n for n in self.nodes if n.is_server()]
        # Only the authorities' fingerprints are needed up front (DirAuthority
        # lines); relays make their keys when they start.
        self._gen_authority_keys(self.authorities)
        self._gen_fingerprints(self.authorities)
        self.dirauthority_lines = [
            'DirAuthority %s orport=%d no-v2 v3ident=%s 127.0.0.1:%d %s'
            % (a.name, a.or_port, a.v3ident, a.dir_port, a.fingerprint) for a in self.authorities]
        with open(os.path.join(self.base_dir, JOIN_FILE), 'w') as f:
            f.write('\n'.join(self.join_torrc_lines()) + '\n')
        self.timings['keys'] = time.monotonic() - self._t0

        start_wall = int(time.time())
        self.vote_offset = (start_wall + 8) % 10
        for n in servers:
            n.start()
        log('started %d authorities + %d relays (keys %.2fs, vote offset %d)'
            % (self.n_authorities, self.n_relays, self.timings['keys'], self.vote_offset))

        names = {n.name for n in servers}
        self._wait('authorities publish a consensus listing every relay',
                   lambda: all(self._authority_consensus_ok(a, names) for a in self.authorities))
        self.timings['consensus'] = time.monotonic() - self._t0
        for r in self.relays:
            r.read_fingerprint()
        log('consensus published at %.2fs' % self.timings['consensus'])

        for r in self.relays:  # SIGHUP == SIGNAL RELOAD: fetch the consensus now
            os.kill(r.pid, signal.SIGHUP)
        self._wait('relays serve the consensus and all microdescriptors',
                   lambda: all(self._relay_serves(r, names) for r in self.relays))
        self.timings['relays_serving'] = time.monotonic() - self._t0
        log('relays serve consensus + microdescs at %.2fs' % self.timings['relays_serving'])

        late = [n for n in self.nodes if not n.is_server()]
        for n in late:
            n.start()
        self._wait('client%s bootstrapped' % (' and onion tor' if self.with_onion else ''),
                   lambda: all(n.bootstrapped() for n in late))
        self.timings['ready'] = time.monotonic() - self._t0
        log('ready at %.2fs' % self.timings['ready'])

    def _check_alive(self):
        dead = [n for n in self.nodes if n.proc is not None and not n.running()]
        if dead:
            details = []
            for n in dead:
                tail = n.log_text().splitlines()[-5:]
                try:
                    with open(os.path.join(n.datadir, 'stderr.log'), errors='replace') as f:
                        tail += f.read().splitlines()[-5:]
                except OSError:
                    pass
                details.append('%s (rc %s):\n    %s' % (n.name, n.proc.returncode, '\n    '.join(tail)))
            raise PrivNetError('tor exited early: ' + '\n'.join(details))

    def _wait(self, what, cond, interval=0.1):
        """Until cond(); each stage (consensus, relays serving it, clients bootstrapped) has ready_timeout counted
        from its own start, the event it waits after: on a loaded machine an earlier stage that took long left a
        later one too little of a deadline counted from the network's start (a client killed at 95% bootstrap)."""
        start = time.monotonic()
        deadline = start + self.ready_timeout
        while True:
            self._check_alive()
            if cond():
                return
            if time.monotonic() > deadline:
                late = ['%s: %s' % (n.name, ' | '.join(n.log_text().splitlines()[-3:]))
                        for n in self.nodes if n.proc is not None and not n.is_server() and not n.bootstrapped()]
                raise PrivNetError('timed out after %.0fs waiting until %s (%.0fs after the network started; logs '
                                   'in %s)%s' % (self.ready_timeout, what, time.monotonic() - self._t0, self.base_dir,
                                                 ''.join('\n  ' + line for line in late)))
            time.sleep(interval)

    @staticmethod
    def _flags_ok(routers, names, relays):
        if not names <= set(routers):
            return False
        for nick in names:
            need = {'Running', 'Valid', 'HSDir'} | ({'Exit'} if nick in relays else set())
            if not need <= routers[nick]:
                return False
        return True

    def _authority_consensus_ok(self, a, names):
        try:
            with open(os.path.join(a.datadir, 'cached-consensus'), errors='replace') as f:
                text = f.read()
        except OSError:
            return False
        routers, _ = parse_consensus(text)
        ok = self._flags_ok(routers, names, {r.name for r in self.relays})
        seen = (len(routers), ok)
        if not ok and getattr(a, '_seen', None) != seen:  # say why we wait another round
            a._seen = seen
            log('%s: consensus lists %d/%d nodes (%d Running) at %.1fs; waiting for the next vote'
                % (a.name, len(set(routers) & names), len(names),
                   sum(1 for f in routers.values() if 'Running' in f), time.monotonic() - self._t0))
        return ok

    def _relay_serves(self, r, names):
        text = http_get(r.dir_port, '/tor/status-vote/current/consensus-microdesc')
        if not text:
            return False
        routers, digests = parse_consensus(text)
        if not self._flags_ok(routers, names, {x.name for x in self.relays}):
            return False
        if len(digests) < len(names):
            return False
        mds = http_get(r.dir_port, '/tor/micro/d/' + '-'.join(digests))
        if not mds:
            return False
        return sum(1 for line in mds.splitlines() if line == 'onion-key' or line.startswith('onion-key')) \
            >= len(digests)

    def add_tor(self, name, extra_lines=(), socks=False):
        """Start one more tor that joins the network as a client/onion-service
        host (role 'extra'), with its own ControlPort (and SocksPort if socks).
        Returns the Node once it has bootstrapped. A port of its own another process took before it bound it:
        started again with new ones (up to 3 times; see start)."""
        for attempt in (1, 2, 3):
            ports = free_ports(2)
            node = Node(self, name, 'extra', self._mkdir(name), ports[0],
                        socks_port=ports[1] if socks else None, extra=extra_lines)
            self.nodes.append(node)
            node.start()
            t0 = time.monotonic()
            while not node.bootstrapped() and node.running() and time.monotonic() - t0 < 5:
                time.sleep(0.1)
            said = node.log_text() + node.stdout_text()
            taken = [p for p in (ports[0], node.socks_port) if p and 'Could not bind to 127.0.0.1:%d:' % p in said]
            if node.running() or not taken or attempt == 3:
                break
            log('extra tor %s: port %s taken before it bound it; again with new ports' % (name, taken))
            node.proc.wait(timeout=10)
            self.nodes.remove(node)
        while not node.bootstrapped():
            if not node.running():
                raise PrivNetError('extra tor %s exited: %s' % (name, node.log_text()[-500:]))
            if time.monotonic() - t0 > self.ready_timeout:
                raise PrivNetError('extra tor %s did not bootstrap' % name)
            time.sleep(0.1)
        return node

    def reload(self, node):
        """SIGNAL RELOAD (by SIGHUP to the PID)."""
        os.kill(node.pid, signal.SIGHUP)

    def stop(self):
        self._stop_nodes()
        if self.created_dir and not self.keep:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def _stop_nodes(self):
        """Every tor of the network stopped by its PID (its directory kept)."""
        procs = [n for n in self.nodes if n.proc is not None]
        left = kill_pids([(n.pid, n.starttime) for n in procs], self.grace)
        for n in procs:
            try:
                n.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            if n.proc.stderr:
                n.proc.stderr.close()
        if left:
            log('had to SIGKILL: %s' % left)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def info(self):
        """JSON-serialisable description (what the CLI's state.json holds)."""
        onion = self.onion
        return {
            'dir': self.base_dir,
            'created_dir': self.created_dir,
            'owner_pid': self.owner_pid,
            'owner_starttime': proc_starttime(self.owner_pid),
            'dirauthority_lines': self.dirauthority_lines,
            'join_torrc': os.path.join(self.base_dir, JOIN_FILE),
            'join_torrc_lines': self.join_torrc_lines(),
            'socks_port': self.client.socks_port if self.by_role('client') else None,
            'client': self.client.info() if self.by_role('client') else None,
            'onion': onion.info() if onion else None,
            'nodes': [n.info() for n in self.nodes],
            'timings': {k: round(v, 3) for k, v in self.timings.items()},
        }


def join_torrc_lines(dirauthority_lines):
    """torrc lines for a tor outside the harness (e.g. on a multi-host bed
    host) to join the network: TestingTorNetwork + our DirAuthority lines."""
    return list(COMMON_OPTIONS) + list(dirauthority_lines)
