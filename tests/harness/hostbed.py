"""``HostBed``: N systemd-nspawn hosts over ssh (tests/harness/hosts.py describes the bed; this is its
core): each host's tree, torrc (``host_torrc``, or Debian's stock one: ``stock_defaults_torrc``),
ports, boot, inventory, registry entry (``beds_dir``) and teardown (``teardown_state``)."""


from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid

try:  # imported as harness.* (pytest) or from this directory (hosts.py run as a script)
    from . import procs
    from .aptrepo import APT_REPO_MOUNT, AptRepo, give_apt_repo
    from .cgroups import enter_cgroups, ensure_inotify_instances, overlay_supported, own_cgroups, remove_cgroups
    from .inventory import inventory_ini
    from .ports import choose_ssh_ports, free_ports
    from .rootfs import STOCK_TORRC, RootfsCache, _write, cache_dir, host_suite, log, mask_units
except ImportError:  # pragma: no cover
    import procs
    from aptrepo import APT_REPO_MOUNT, AptRepo, give_apt_repo
    from cgroups import enter_cgroups, ensure_inotify_instances, overlay_supported, own_cgroups, remove_cgroups
    from inventory import inventory_ini
    from ports import choose_ssh_ports, free_ports
    from rootfs import STOCK_TORRC, RootfsCache, _write, cache_dir, host_suite, log, mask_units


def beds_dir():
    d = os.path.join(cache_dir(), 'beds')
    os.makedirs(d, exist_ok=True)
    return d


APP_PORTS = 4  # backend ports per host (testbed_app_ports)


def claimed_ports(exclude_state=None):
    """Ports held by the registered beds (their sshd may not listen yet)."""
    ports = set()
    for reg in glob.glob(os.path.join(beds_dir(), 'bed-*.json')):
        try:
            with open(reg) as f:
                path = json.load(f)['state']
            if path == exclude_state:
                continue
            with open(path) as f:
                for h in json.load(f).get('hosts', []):
                    ports.update(h.get(k) for k in ('ssh_port', 'tor_control_port', 'tor_socks_port',
                                                    'tor_or_port'))
                    ports.update(h.get('app_ports') or [])
        except (OSError, ValueError, KeyError):
            continue
    ports.discard(None)
    return ports


CLIENT_AUTH_DIR = '/var/lib/tor/onion_auth'
# A shell command for a stock host: wait (up to 30 s) until tor's ControlSocket accepts a connection
# (after boot or a restart tor opens it about a second after systemd calls it started).
def wait_control_socket_script(timeout=30):
    """A shell command for a stock host: wait until tor's ControlSocket accepts a connection (tor
    opens it about a second after systemd calls it started, and the file exists from bind(), before
    listen()); on failure it prints the unit's status and exits 1."""
    return ("python3 - <<'EOF' || { systemctl status tor@default --no-pager; exit 1; }\n"
            "import socket, sys, time\n"
            "deadline = time.monotonic() + %d\n"
            "while True:\n"
            "    try:\n"
            "        s = socket.socket(socket.AF_UNIX); s.connect('/run/tor/control'); s.close(); break\n"
            "    except OSError as exc:\n"
            "        if time.monotonic() > deadline: sys.exit('tor control socket: %%s' %% exc)\n"
            "        time.sleep(0.1)\n"
            "EOF" % timeout)


WAIT_CONTROL_SOCKET = wait_control_socket_script(30)
# Restart a stock host's tor and wait until its control socket accepts a connection (the socket
# file exists from bind(); `test -S` alone let a test connect before listen()).
RESTART_TOR = 'systemctl restart tor@default && ' + WAIT_CONTROL_SOCKET
START_TOR = 'systemctl start tor@default && ' + WAIT_CONTROL_SOCKET
DEFAULTS_TORRC = '/usr/share/tor/tor-service-defaults-torrc'


# A shell command for a stock host (run as root): what its tor runs now, read over /run/tor/control with the
# cookie (one python3 of the host, no Ansible run: about 0.05 CPU-s instead of 1.5): one JSON line
# {"services": ["DIR ADDRESS", ...] (persistent, HiddenServiceDir and its hostname file),
#  "ephemeral": ["ID", ...] (GETINFO onions/detached), "credentials": ["ID", ...] (ONION_CLIENT_AUTH_VIEW,
#  permanent ones: tor keeps the others in memory only)}; exits 1 with tor's reply when it refuses.
def tor_state_script(control="/run/tor/control", cookie="/run/tor/control.authcookie"):
    """The command above for a tor at CONTROL (a unix socket) with its CONTROL cookie file."""
    return (r"""python3 - <<'EOF'
import binascii, json, os, socket, sys
CONTROL, COOKIE = @PATHS@
s = socket.socket(socket.AF_UNIX)
s.settimeout(30)
s.connect(CONTROL)
cookie = binascii.hexlify(open(COOKIE, 'rb').read())
s.sendall(b'AUTHENTICATE ' + cookie + b'\r\nGETCONF HiddenServiceDir\r\nGETINFO onions/detached\r\n'
          b'ONION_CLIENT_AUTH_VIEW\r\nQUIT\r\n')
out = b''
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    out += chunk
s.close()
dirs, ephemeral, creds, block = [], [], [], None
for line in out.decode('utf-8', 'replace').split('\r\n'):
    if block is not None:
        if line == '.':
            block = None
        elif line:
            ephemeral.append(line)
        continue
    if line[:1] in ('4', '5'):
        sys.exit('tor refused: %r' % out[:500])
    if line[4:].startswith('HiddenServiceDir='):
        dirs.append(line[4:].split('=', 1)[1])
    elif line.startswith('250+onions/detached='):
        block = True
    elif line.startswith('250-onions/detached=') and line.split('=', 1)[1]:
        ephemeral.append(line.split('=', 1)[1])
    elif line[4:].startswith('CLIENT ') and 'Flags=Permanent' in line:
        creds.append(line[4:].split()[1])
def address(d):
    try:
        return open(os.path.join(d, 'hostname')).read().strip()
    except OSError as exc:
        return 'no hostname (%s)' % exc.strerror
print(json.dumps({'services': sorted('%s %s' % (d, address(d)) for d in dirs), 'ephemeral': sorted(ephemeral),
                  'credentials': sorted(creds)}))
EOF""").replace("@PATHS@", repr((control, cookie)))


TOR_STATE = tor_state_script()

# Ansible's ssh_args without its -C: the bed's hosts are on loopback, where compressing every module sent costs
# CPU and saves nothing (measured: 6 runs of 10 tasks to one bed host, 17.1 machine CPU-s instead of
# 18.0, twice each); the connection kept open between tasks as Ansible's default does.
SSH_ARGS = '-o ControlMaster=auto -o ControlPersist=60s'


def _tor_ids(root):
    """uid and gid of debian-tor in the host's tree (-1, -1 when it has none)."""
    try:
        with open(os.path.join(root, 'etc/passwd')) as f:
            for line in f:
                fields = line.split(':')
                if fields[0] == 'debian-tor' and len(fields) > 3:
                    return int(fields[2]), int(fields[3])
    except OSError:
        pass
    return -1, -1


def host_torrc(host, join_lines):
    lines = [
        '# written by tests/harness/hosts.py for %s' % host['name'],
        'Nickname %s' % host['name'].replace('-', ''),
        # ExtendedErrors: tor's onion service reply codes (0xf0-0xf7, e.g. missing client authorization)
        'SocksPort 127.0.0.1:%d ExtendedErrors' % host['tor_socks_port'],
        'ControlPort 127.0.0.1:%d' % host['tor_control_port'],
        'CookieAuthentication 1',
        # client authorization keys given with Flags=Permanent (the onion_client role) live here
        'ClientOnionAuthDir %s' % CLIENT_AUTH_DIR,
    ]
    if join_lines:
        lines += ['# joins the private test network (privnet.py)'] + list(join_lines)
    else:
        lines += ['# no private network: stay offline', 'DisableNetwork 1']
    return '\n'.join(lines) + '\n'


# Offline without DisableNetwork: with `User` set and DisableNetwork 1 at start, tor 0.4.9 never
# opens a unix ControlSocket (it defers unix listeners past the privileged phase and retries
# listeners only while the network is enabled; measured: the socket appears 1 s after start
# without DisableNetwork, never with it). So a stock host's tor knows one directory authority, on
# 127.0.0.1:1 where nothing listens, and no fallback directories: all it ever dials is that.
STOCK_OFFLINE_LINES = (
    'UseDefaultFallbackDirs 0',
    'DirAuthority onionlaboffline orport=1 127.0.0.1:1 0000000000000000000000000000000000000000',
)


def stock_defaults_torrc(text, host, join_lines):
    """Debian's tor-service-defaults-torrc for a stock host: as packaged (ControlSocket
    /run/tor/control, cookie /run/tor/control.authcookie, DataDirectory /var/lib/tor) except
    that its TCP SocksPort 9050, which every host would share, becomes the host's own port on
    127.0.0.1, and the lines that keep tor off the real network come last."""
    out = []
    for line in text.splitlines():
        if line.split() == ['SocksPort', '9050']:
            line = 'SocksPort 127.0.0.1:%d ExtendedErrors' % host['tor_socks_port']
        out.append(line)
    out.append('# onionlab testbed: the network this host may use (/etc/tor/torrc is the stock one)')
    out += list(join_lines) if join_lines else list(STOCK_OFFLINE_LINES)
    return '\n'.join(out) + '\n'


class HostBed:
    """N hosts; ``with HostBed(n=3) as bed: bed.inventory_path ...``"""

    def __init__(self, n=3, base_dir=None, privnet_join_lines=None, name_prefix='host',
                 boot_timeout=120.0, grace=15.0, layout=None, stock=False, suites=None, apt_packages=None):
        """stock: the hosts run tor as Debian ships it (stock /etc/tor/torrc, ControlSocket
        /run/tor/control and its cookie, no ControlPort, no ClientOnionAuthDir), kept off the
        real network by the last lines of the defaults torrc (see stock_defaults_torrc).
        apt_packages: Debian packages the hosts can apt-get install from a local repository
        (AptRepo, built once per suite on the controller), e.g. ['onionbalance']."""
        if n < 1:
            raise ValueError('n must be >= 1')
        # 'overlay': an overlayfs per host over the cached tree (instant, a few MB each);
        # 'copy': cp -a of the tree (~330 MB and 1-4 s per host).
        self.layout = layout or os.environ.get('ONIONLAB_HOSTS_LAYOUT') or (
            'overlay' if overlay_supported() else 'copy')
        self.n = n
        self.created_dir = base_dir is None
        self.base_dir = os.path.abspath(base_dir or tempfile.mkdtemp(prefix='onionlab-hosts-', dir='/var/tmp'))
        os.makedirs(self.base_dir, mode=0o700, exist_ok=True)
        self.join_lines = list(privnet_join_lines or [])
        self.name_prefix = name_prefix
        self.stock = stock
        # host i runs suites[i % len(suites)] (default: this machine's release)
        self.suites = list(suites or [host_suite()])
        self.apt_packages = sorted(set(apt_packages or []))
        self.apt_repos = {}  # suite -> path of its AptRepo
        self.boot_timeout = boot_timeout
        self.grace = grace
        self.run_id = uuid.uuid4().hex[:6]
        self.hosts = []
        self.procs = {}
        self.timings = {}
        self.key = os.path.join(self.base_dir, 'id_ed25519')
        self.state_path = os.path.join(self.base_dir, 'state.json')
        self.inventory_path = os.path.join(self.base_dir, 'inventory.yml')
        self.registry = os.path.join(beds_dir(), 'bed-%s.json' % self.run_id)
        self.owner_pid = os.getpid()

    # -- state -----------------------------------------------------------
    def state(self):
        return {
            'run_id': self.run_id, 'dir': self.base_dir, 'created_dir': self.created_dir,
            'owner_pid': self.owner_pid,
            'owner_starttime': procs.proc_starttime(self.owner_pid) if self.owner_pid else None,
            'key': self.key, 'inventory': self.inventory_path, 'hosts': self.hosts,
            'joined_privnet': bool(self.join_lines), 'stock': self.stock, 'timings': self.timings, 'layout': self.layout,
            'apt_packages': self.apt_packages, 'apt_repos': self.apt_repos,
        }

    def save(self):
        tmp = self.state_path + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(self.state(), f, indent=2)
        os.replace(tmp, self.state_path)
        # Atomically too: other beds read it (claimed_ports) while this one saves.
        tmp = '%s.%d.tmp' % (self.registry, os.getpid())
        with open(tmp, 'w') as f:
            json.dump({'state': self.state_path, 'dir': self.base_dir}, f)
        os.replace(tmp, self.registry)

    # -- lifecycle -------------------------------------------------------
    def up(self):
        t0 = time.monotonic()
        try:
            self._up(t0)
        except BaseException:
            self.down()
            raise
        return self

    def _up(self, t0):
        self.save()
        caches = {s: RootfsCache(s) for s in dict.fromkeys(self.suites)}
        errors = []

        repos = {s: AptRepo(self.apt_packages, c) for s, c in caches.items()} if self.apt_packages else {}

        def ensure(c):
            try:
                c.ensure()
                if c.suite in repos:
                    self.apt_repos[c.suite] = repos[c.suite].ensure()
            except BaseException as e:  # noqa: BLE001  (re-raised below)
                errors.append(e)
        import threading
        threads = [threading.Thread(target=ensure, args=(c,)) for c in caches.values()]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if errors:
            raise errors[0]
        self.timings['rootfs'] = time.monotonic() - t0
        self.timings['rootfs_built'] = any(c.built for c in caches.values())
        if repos:
            self.timings['apt_repo'] = sum(r.seconds for r in repos.values())
            self.timings['apt_repo_built'] = any(r.built for r in repos.values())
        for old in (self.key, self.key + '.pub'):
            if os.path.exists(old):
                os.unlink(old)
        subprocess.check_call(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'onionlab-testbed',
                               '-f', self.key])
        with open(self.key + '.pub') as f:
            pubkey = f.read()
        # Choose and record the ports under a lock: two beds starting together
        # (e.g. both waiting for the same rootfs build) must not pick the same.
        with open(os.path.join(cache_dir(), 'ports.lock'), 'a') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            claimed = claimed_ports(self.state_path)
            self._assign_ports(claimed)
            log('ports: ssh %s (claimed by other beds: %d)' % ([h['ssh_port'] for h in self.hosts], len(claimed)))
            self.save()
        self._give_trees(caches, pubkey, t0)

    def _assign_ports(self, claimed):
        ssh_ports = choose_ssh_ports(self.n, claimed)
        per_host = 3 + APP_PORTS
        tor_ports = [p for p in free_ports(per_host * self.n + len(claimed)) if p not in claimed]
        tor_ports = iter(tor_ports[:per_host * self.n])
        for i in range(self.n):
            name = '%s%d' % (self.name_prefix, i + 1)
            self.hosts.append({
                'suite': self.suites[i % len(self.suites)], 'name': name, 'machine': 'onionlab-%s-%s' % (self.run_id, name),
                'root': os.path.join(self.base_dir, name, 'root'), 'ssh_port': ssh_ports[i],
                'tor_control_port': next(tor_ports), 'tor_socks_port': next(tor_ports),
                'tor_or_port': next(tor_ports), 'app_ports': [next(tor_ports) for _ in range(APP_PORTS)],
                'pid': None, 'starttime': None,
                'log': os.path.join(self.base_dir, name + '.console.log'), 'mount': None,
            })

    def _give_trees(self, caches, pubkey, t0):
        # Give each host its tree, under shared locks so the caches are not rebuilt meanwhile.
        import contextlib
        t1 = time.monotonic()
        with contextlib.ExitStack() as locks:
            for cache in caches.values():
                locks.enter_context(cache._lock(fcntl.LOCK_SH))
                if not cache.complete():
                    raise RuntimeError('rootfs cache %s vanished' % cache.path)
            if self.layout == 'overlay':
                for h in self.hosts:
                    self._mount_overlay(h, caches[h['suite']].path)
            else:
                for h in self.hosts:
                    os.makedirs(os.path.dirname(h['root']), exist_ok=True)
                cps = [subprocess.Popen(['cp', '-a', '--reflink=auto', caches[h['suite']].path, h['root']])
                       for h in self.hosts]
                for h, p in zip(self.hosts, cps):
                    if p.wait() != 0:
                        raise RuntimeError('copying the rootfs for %s failed' % h['name'])
        self.timings['copy'] = time.monotonic() - t1
        for h in self.hosts:
            self._personalise(h, pubkey)
        t2 = time.monotonic()
        ensure_inotify_instances()
        for h in self.hosts:
            self._boot(h)
        self.save()
        self._wait_ssh()
        if self.stock:
            self._wait_control_socket()
        self.timings['boot'] = time.monotonic() - t2
        self.write_inventory()
        self.timings['total'] = time.monotonic() - t0
        self.save()
        log('%d hosts up in %.1fs (rootfs %.1fs%s, %s %.1fs, boot to ssh+systemd %.1fs)' % (
            self.n, self.timings['total'], self.timings['rootfs'], ' built' if self.timings['rootfs_built'] else ' cached',
            self.layout, self.timings['copy'], self.timings['boot']))

    def _mount_overlay(self, h, rootfs):
        top = os.path.dirname(h['root'])
        for sub in ('upper', 'work', 'root'):
            os.makedirs(os.path.join(top, sub), exist_ok=True)
        h['mount'] = h['root']
        self.save()  # the mount is recorded before it exists: teardown/cleanup find it
        subprocess.check_call(['mount', '-t', 'overlay', 'overlay', '-o',
                               'lowerdir=%s,upperdir=%s,workdir=%s' % (rootfs, os.path.join(top, 'upper'),
                                                                       os.path.join(top, 'work')),
                               h['root']])

    def _personalise(self, h, pubkey):
        root = h['root']
        mask_units(root)  # again: the cached tree may come from an older recipe
        _write(os.path.join(root, 'etc/hostname'), h['name'] + '\n')
        _write(os.path.join(root, 'etc/hosts'), '127.0.0.1\tlocalhost %s\n::1\tlocalhost\n' % h['name'])
        _write(os.path.join(root, 'etc/machine-id'), uuid.uuid4().hex + '\n', 0o444)
        os.makedirs(os.path.join(root, 'root/.ssh'), mode=0o700, exist_ok=True)
        _write(os.path.join(root, 'root/.ssh/authorized_keys'), pubkey, 0o600)
        _write(os.path.join(root, 'etc/ssh/sshd_config.d/onionlab-testbed.conf'),
               'Port %d\nListenAddress 127.0.0.1\nPermitRootLogin prohibit-password\n'
               'PasswordAuthentication no\nUseDNS no\n' % h['ssh_port'])
        if self.stock:
            shutil.copy2(os.path.join(root, STOCK_TORRC.lstrip('/')), os.path.join(root, 'etc/tor/torrc'))
            defaults = os.path.join(root, DEFAULTS_TORRC.lstrip('/'))
            with open(defaults) as f:
                text = f.read()
            _write(defaults, stock_defaults_torrc(text, h, self.join_lines))
            h['stock'] = True
        else:
            _write(os.path.join(root, 'etc/tor/torrc'), host_torrc(h, self.join_lines))
        # tor refuses to start when its ClientOnionAuthDir is missing: made here, tor's, 0700
        auth_dir = os.path.join(root, CLIENT_AUTH_DIR.lstrip('/'))
        os.makedirs(auth_dir, mode=0o700, exist_ok=True)
        os.chmod(auth_dir, 0o700)
        os.chown(auth_dir, *_tor_ids(root))
        if h['suite'] in self.apt_repos:
            give_apt_repo(root, self.apt_repos[h['suite']])
        # A host of the bed has no way out, as on CI machines: apt inside it fails at once
        # (a proxy nobody listens on) instead of reaching a mirror, so a role that would
        # download anything when the package is already there fails here too.
        _write(os.path.join(root, 'etc/apt/apt.conf.d/99onionlab-offline'),
               'Acquire::http::Proxy "http://127.0.0.1:9/";\n'
               'Acquire::https::Proxy "http://127.0.0.1:9/";\n'
               'Acquire::Retries "0";\n')

    def _boot(self, h):
        h['cgroups'] = own_cgroups(h['machine'])
        cmd = ['systemd-nspawn', '-q', '--keep-unit', '--register=no', '-D', h['root'], '-M', h['machine'],
               '--hostname=' + h['name'], '--resolv-conf=off', '--timezone=off', '--link-journal=no',
               '-b', '--console=passive']
        if h['suite'] in self.apt_repos:
            cmd.insert(-2, '--bind-ro=%s:%s' % (self.apt_repos[h['suite']], APT_REPO_MOUNT))
        with open(h['log'], 'wb') as lf:
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT,
                                 start_new_session=True, close_fds=True,
                                 preexec_fn=lambda: enter_cgroups(h['cgroups']))
        self.procs[h['name']] = p
        h['pid'] = p.pid
        h['starttime'] = procs.proc_starttime(p.pid)

    def ssh_cmd(self, h, *command):
        return ['ssh', '-q', '-i', self.key, '-p', str(h['ssh_port']), '-o', 'BatchMode=yes',
                '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
                '-o', 'ConnectTimeout=5', 'root@127.0.0.1'] + list(command)

    def sh(self, script, h=None, check=True, timeout=300):
        """(rc, output) of a shell script run as root on host h (the first host by default) over ssh, stderr in the
        output; with check, a non-zero rc raises AssertionError naming the host, the script and what it printed.
        The one way the bed tests run a command on a host."""
        h = self.hosts[0] if h is None else h
        p = subprocess.run(self.ssh_cmd(h, script), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, universal_newlines=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError("on %s: %s\nrc=%d\n%s" % (h["name"], script[:300], p.returncode, p.stdout))
        return p.returncode, p.stdout

    def _wait_ssh(self):
        deadline = time.monotonic() + self.boot_timeout
        pending = list(self.hosts)
        while pending:
            for h in list(pending):
                p = self.procs.get(h['name'])
                if p is not None and p.poll() is not None:
                    with open(h['log'], errors='replace') as f:
                        tail = f.read()[-1500:]
                    raise RuntimeError('systemd-nspawn for %s exited (rc %s):\n%s' % (h['name'], p.returncode, tail))
                if _ssh_banner(h['ssh_port']):
                    # Boot finished (tor started or failed): 'running' or 'degraded'.
                    r = subprocess.run(self.ssh_cmd(h, 'systemctl', 'is-system-running', '--wait'),
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                                       stdin=subprocess.DEVNULL)
                    status = r.stdout.decode().strip()
                    h['last_ssh'] = 'rc %d: %s %s' % (r.returncode, status, r.stderr.decode(errors='replace')[-300:])
                    if status in ('running', 'degraded'):
                        h['system_state'] = status
                        pending.remove(h)
            if pending and time.monotonic() > deadline:
                raise RuntimeError('hosts did not come up in %.0fs: %s' % (
                    self.boot_timeout, '; '.join('%s (port %d, last ssh: %s)' % (
                        h['name'], h['ssh_port'], h.get('last_ssh', 'no sshd yet')) for h in pending)))
            time.sleep(0.1)

    def _wait_control_socket(self, timeout=60.0):
        """A stock host is ready once tor's ControlSocket accepts a connection: systemd calls tor started when it
        signals readiness, and tor opens its unix listeners about a second later (after dropping
        privileges), so a module run right after boot finds no /run/tor/control."""
        script = wait_control_socket_script(int(timeout))
        for h in self.hosts:
            r = subprocess.run(self.ssh_cmd(h, script), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, timeout=timeout + 30)
            if r.returncode != 0:
                raise RuntimeError('%s: tor opened no /run/tor/control in %.0fs:\n%s'
                                   % (h['name'], timeout, r.stdout.decode(errors='replace')[-1500:]))

    def inventory(self):
        hosts = {}
        for h in self.hosts:
            hosts[h['name']] = {
                'ansible_host': '127.0.0.1', 'ansible_port': h['ssh_port'],
                'testbed_machine': h['machine'],
                'testbed_tor_socks_port': h['tor_socks_port'],
                'testbed_tor_or_port': h['tor_or_port'],
                # free loopback ports of this host's own for the services' backends (the hosts share
                # the machine's network, and other beds and runs share the machine)
                'testbed_app_ports': list(h.get('app_ports') or []),
                'testbed_stock': bool(h.get('stock')),
                'testbed_suite': h['suite'],
                'testbed_apt_packages': self.apt_packages if h['suite'] in self.apt_repos else [],
            }
            if h.get('stock'):
                hosts[h['name']]['testbed_tor_control_socket'] = '/run/tor/control'
            else:
                hosts[h['name']]['testbed_tor_control_port'] = h['tor_control_port']
        return {'all': {'children': {'testbed': {
            'hosts': hosts,
            'vars': {
                'ansible_user': 'root',
                'ansible_ssh_private_key_file': self.key,
                'ansible_host_key_checking': False,
                'ansible_ssh_common_args': '-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null',
                'ansible_ssh_args': SSH_ARGS,
                'ansible_python_interpreter': '/usr/bin/python3',
                'testbed_privnet_joined': bool(self.join_lines),
                'testbed_privnet_torrc_lines': self.join_lines,
                'testbed_privnet_dirauthority_lines': [x for x in self.join_lines
                                                       if x.startswith('DirAuthority ')],
            },
        }}}}

    def write_inventory(self, path=None):
        """The inventory to self.inventory_path (JSON, which YAML reads) and to path, in the format its
        name says: INI for .ini (inventory_ini), else JSON."""
        for p in filter(None, [self.inventory_path, path]):
            text = inventory_ini(self.inventory()) if p.endswith('.ini') else json.dumps(self.inventory(), indent=2) + '\n'
            with open(p, 'w') as f:
                f.write(text)

    def down(self):
        t0 = time.monotonic()
        teardown_state(self.state(), self.grace, children=self.procs)
        self.timings['down'] = time.monotonic() - t0
        log('hosts down in %.1fs' % self.timings['down'])
        try:
            os.unlink(self.registry)
        except FileNotFoundError:
            pass

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        self.down()


def _ssh_banner(port):
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=1) as s:
            s.settimeout(1)
            return s.recv(8).startswith(b'SSH-')
    except OSError:
        return False


def _mounts_under(path):
    out = []
    try:
        with open('/proc/self/mountinfo') as f:
            for line in f:
                mp = line.split()[4].replace('\\040', ' ')
                if mp == path or mp.startswith(path.rstrip('/') + '/'):
                    out.append(mp)
    except OSError:
        pass
    return sorted(out, key=len, reverse=True)


def teardown_state(state, grace=15.0, children=None):
    """Stop every nspawn of a state (by PID + start time), unmount and remove its dir."""
    t0 = time.monotonic()
    pids = [(h['pid'], h['starttime']) for h in state.get('hosts', []) if h.get('pid')]
    left = procs.kill_pids(pids, grace=grace, again=3.0)
    if left:
        log('SIGKILLed nspawn %s' % left)
    for p in (children or {}).values():  # reap our own children
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    t1 = time.monotonic()
    for h in state.get('hosts', []):
        remove_cgroups(h.get('cgroups', []))
    d = state.get('dir')
    if d and os.path.isdir(d):
        for mp in _mounts_under(d):
            if subprocess.call(['umount', mp], stderr=subprocess.DEVNULL) != 0:
                subprocess.call(['umount', '-l', mp])
        doomed = [d] if state.get('created_dir', True) else [os.path.dirname(h['root'])
                                                             for h in state.get('hosts', [])]
        rms = [subprocess.Popen(['rm', '-rf', '--one-file-system', x]) for x in doomed if os.path.lexists(x)]
        for rm in rms:
            rm.wait()
    if pids:
        log('teardown: machines stopped in %.1fs, files removed in %.1fs' % (t1 - t0, time.monotonic() - t1))
