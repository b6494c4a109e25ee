#!/usr/bin/env python3
"""Research script for issue 21 (OS matrix): can this machine build and boot a bed host of
another release?  Standalone (standard library + tests/harness/hosts.py's helpers); it never
touches the shared rootfs cache (~/.cache/onionlab) nor hosts.py's state.

    python tests/harness/suites.py build SUITE DIR [--mirror URL] [--keyring FILE]
    python tests/harness/suites.py probe DIR          # boot once, print facts as JSON
    python tests/harness/suites.py verify DIR         # tor --verify-config of hosts.py's torrcs
    python tests/harness/suites.py bed SUITE=DIR ...  # a bed of those trees; the modules over ssh
    python tests/harness/suites.py remove DIR

``build`` runs the same ``debootstrap --variant=minbase --include=<hosts.PACKAGES>`` as
``hosts.RootfsCache._build`` with what a release needs on top (``SUITES`` below): the
Ubuntu ``universe`` component (tor lives there) and, for a release newer than this
debootstrap knows, the script of a related release passed as debootstrap's 4th argument
(no change under /usr/share/debootstrap).  It prints the time and the size.

``probe`` reads the packaged files (tor's unit, its defaults torrc, its AppArmor profile),
then boots the tree with ``systemd-nspawn --keep-unit --register=no -b`` as hosts.py does
(own cgroups below ours), with a torrc of ``DisableNetwork 1`` / ``SocksPort 0`` (nothing
leaves the machine: the host network is shared), runs commands inside through ``nsenter``
into the container's PID 1, and stops it by the nspawn PID with SIGTERM.

Findings (2026-12-04, this machine: Debian 12 host, debootstrap 1.0.128+nmu2+deb12u2, 2 cores)::

    suite     build  size    tor                   python  systemd  debian-tor uid
    bookworm   47 s  323 MB  0.4.9.11-0+deb12u1    3.11.2  (cache)  100   (multi-host-testbed.md)
    trixie     99 s  274 MB  0.4.9.15-0+deb13u1    3.13.5  257      100
    noble      89 s  262 MB  0.4.8.10-1build2      3.12.3  255      100   (built in parallel with jammy)
    jammy      93 s  236 MB  0.4.6.10-1            3.10.4  249      103

  * Every release: units tor.service (oneshot master) + tor@default.service (Type=notify, same
    sandbox: ProtectSystem=full, ReadOnlyDirectories=/, ReadWriteDirectories=-/var/lib/tor
    -/var/log/tor -/run, AppArmorProfile=-system_tor), the same tor-service-defaults-torrc
    (User debian-tor, ControlSocket /run/tor/control, CookieAuthFile /run/tor/control.authcookie,
    DataDirectory /var/lib/tor) and the same stock /etc/tor/torrc; hosts.py's torrcs (bed and
    stock, offline and privnet) pass tor --verify-config on each.
  * AppArmor: abstractions/tor allows ``/etc/tor/** r`` on bookworm and trixie but only
    ``/etc/tor/* r`` on noble and jammy, so on an Ubuntu host with AppArmor enforcing, tor cannot
    read drop-ins under /etc/tor/torrc.d/ (the tor role's %include). Not testable here: this
    kernel has no AppArmor (ansible_apparmor.status is 'disabled' in every container).
  * Ubuntu trees come from the release pocket only (no -updates / -security): the versions above.
  * Ubuntu's keyring: not in bookworm; Debian trixie ships ``ubuntu-keyring`` (see
    ubuntu_keyring()); debootstrap then checks the Ubuntu Release signature (key F6ECB376...).
    ``--no-check-gpg`` was not needed.
  * ``bed --roles --privnet`` with one host of each of the four releases: the tor and
    onion_service roles converge, the second run reports changed=0, and every host's onion
    answers through the private network.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: harness.*
import hosts  # noqa: E402  (tests/harness/hosts.py)

DEBIAN = 'http://deb.debian.org/debian'
UBUNTU = 'http://archive.ubuntu.com/ubuntu'
SCRIPTS = '/usr/share/debootstrap/scripts'

# suite -> what debootstrap needs besides hosts.PACKAGES
SUITES = {
    'bookworm': {'mirror': DEBIAN, 'components': 'main'},
    'trixie': {'mirror': DEBIAN, 'components': 'main'},
    'jammy': {'mirror': UBUNTU, 'components': 'main,universe', 'keyring': 'ubuntu'},
    # debootstrap 1.0.128 (bookworm) has no 'noble' script: jammy's (-> gutsy) fits it.
    'noble': {'mirror': UBUNTU, 'components': 'main,universe', 'keyring': 'ubuntu', 'script': 'jammy'},
}
UBUNTU_KEYRING = '/usr/share/keyrings/ubuntu-archive-keyring.gpg'


def ubuntu_keyring(debian_root, dest_dir, mirror=DEBIAN):
    """Ubuntu's archive keyring from Debian's own ``ubuntu-keyring`` package (in trixie; not in
    bookworm): its Filename and SHA256 come from the Packages index in a debootstrapped Debian
    tree (which debootstrap verified against debian-archive-keyring), the .deb from the same
    Debian mirror, checked against that SHA256 and unpacked with dpkg-deb. Returns the path of
    ubuntu-archive-keyring.gpg under dest_dir."""
    import glob
    import hashlib
    import urllib.request
    lists = glob.glob(os.path.join(debian_root, 'var/lib/apt/lists/*_main_binary-*_Packages'))
    if not lists:
        raise RuntimeError('no Packages index in %s' % debian_root)
    with open(lists[0], errors='replace') as f:
        stanzas = f.read().split('\n\n')
    fields = None
    for stanza in stanzas:
        if re.search(r'^Package: ubuntu-keyring$', stanza, re.M):
            fields = dict(re.findall(r'^(Filename|SHA256|Version): (.*)$', stanza, re.M))
            break
    if not fields:
        raise RuntimeError('%s has no ubuntu-keyring package' % lists[0])
    os.makedirs(dest_dir, exist_ok=True)
    deb = os.path.join(dest_dir, os.path.basename(fields['Filename']))
    with urllib.request.urlopen('%s/%s' % (mirror.rstrip('/'), fields['Filename']), timeout=60) as r:
        data = r.read()
    if hashlib.sha256(data).hexdigest() != fields['SHA256']:
        raise RuntimeError('%s: SHA256 differs from the signed index' % deb)
    with open(deb, 'wb') as f:
        f.write(data)
    subprocess.check_call(['dpkg-deb', '-x', deb, dest_dir])
    path = os.path.join(dest_dir, 'usr/share/keyrings/ubuntu-archive-keyring.gpg')
    print(json.dumps({'ubuntu-keyring': fields['Version'], 'sha256': fields['SHA256'], 'keyring': path}))
    return path


def du(path):
    out = subprocess.run(['du', '-sxm', path], stdout=subprocess.PIPE, check=True).stdout.decode()
    return int(out.split()[0])


def build(suite, root, mirror=None, keyring=None):
    spec = SUITES[suite]
    mirror = mirror or spec['mirror']
    cmd = ['debootstrap', '--variant=minbase', '--components=' + spec['components'],
           '--include=' + ','.join(hosts.PACKAGES)]
    if spec.get('keyring'):
        keyring = keyring or UBUNTU_KEYRING
    if keyring:
        cmd.append('--keyring=' + keyring)
    cmd += [suite, root, mirror]
    script = spec.get('script')
    if script and not os.path.exists(os.path.join(SCRIPTS, suite)):
        cmd.append(os.path.realpath(os.path.join(SCRIPTS, script)))
    print('$ ' + ' '.join(cmd), flush=True)
    t0 = time.monotonic()
    log = root.rstrip('/') + '.debootstrap.log'
    with open(log, 'wb') as lf:
        rc = subprocess.call(cmd, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    took = time.monotonic() - t0
    if rc != 0:
        with open(log, errors='replace') as lf:
            print(lf.read()[-3000:])
        print(json.dumps({'suite': suite, 'rc': rc, 'seconds': round(took, 1)}))
        return rc
    hosts.RootfsCache._customise(root)  # the cache's own changes: masked units, DisableNetwork torrc
    print(json.dumps({'suite': suite, 'rc': 0, 'seconds': round(took, 1), 'mb': du(root),
                      'debs': len(os.listdir(os.path.join(root, 'var/lib/dpkg/info')))}))
    return 0


def _read(root, path):
    try:
        with open(os.path.join(root, path.lstrip('/')), errors='replace') as f:
            return f.read()
    except OSError as e:
        return None if e.errno == 2 else str(e)


def _dpkg_version(root, pkg):
    text = _read(root, 'var/lib/dpkg/status') or ''
    for stanza in text.split('\n\n'):
        if re.search(r'^Package: %s$' % re.escape(pkg), stanza, re.M):
            m = re.search(r'^Version: (.*)$', stanza, re.M)
            return m.group(1) if m else None
    return None


def static_facts(root):
    facts = {'os': dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', _read(root, 'etc/os-release') or '', re.M)),
             'tor': _dpkg_version(root, 'tor'), 'python3': _dpkg_version(root, 'python3'),
             'systemd': _dpkg_version(root, 'systemd'), 'openssh-server': _dpkg_version(root, 'openssh-server')}
    units = {}
    for d in ('usr/lib/systemd/system', 'lib/systemd/system'):
        for name in ('tor.service', 'tor@default.service', 'tor@.service'):
            text = _read(root, os.path.join(d, name))
            if text is not None and name not in units:
                units[name] = [ln for ln in text.splitlines()
                               if re.match(r'(Exec\w*|Protect\w+|ReadOnly\w*|ReadWrite\w*|AppArmorProfile|'
                                           r'CapabilityBoundingSet|NoNewPrivileges|Type|User|PrivateTmp|'
                                           r'PrivateDevices|RuntimeDirectory\w*|PartOf|ReloadPropagatedFrom)=', ln)]
    facts['units'] = units
    defaults = _read(root, hosts.DEFAULTS_TORRC) or ''
    facts['defaults_torrc'] = [ln for ln in defaults.splitlines() if ln.strip() and not ln.startswith('#')]
    aa = _read(root, 'etc/apparmor.d/system_tor')
    facts['apparmor_profile'] = None if aa is None else [
        ln.strip() for ln in aa.splitlines() if re.search(r'profile|/run/tor|/var/lib/tor|include', ln)]
    facts['apparmor_abstraction'] = _read(root, 'etc/apparmor.d/abstractions/tor') is not None
    passwd = _read(root, 'etc/passwd') or ''
    facts['tor_users'] = [ln.split(':')[0] + ':' + ln.split(':')[2] for ln in passwd.splitlines()
                          if 'tor' in ln.split(':')[0]]
    return facts


def _leader(nspawn_pid, timeout=30):
    """The container's PID 1: the (only) child of the nspawn process."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open('/proc/%d/task/%d/children' % (nspawn_pid, nspawn_pid)) as f:
                kids = f.read().split()
        except OSError:
            kids = []
        if kids:
            return int(kids[0])
        time.sleep(0.1)
    raise RuntimeError('no container PID 1 below nspawn %d' % nspawn_pid)


def _in(leader, *cmd, timeout=60):
    r = subprocess.run(['nsenter', '-t', str(leader), '-a', '--'] + list(cmd), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout)
    return r.returncode, r.stdout.decode(errors='replace').strip()


def probe(root):
    facts = static_facts(root)
    machine = 'suites-%d' % os.getpid()
    hosts._write(os.path.join(root, 'etc/tor/torrc'), 'DisableNetwork 1\nSocksPort 0\n')
    # The host network is shared: sshd as hosts.py sets it up, on 127.0.0.1 and a free port only,
    # root with a key made here (never *:22).
    for unit in ('ssh.service', 'ssh.socket', 'sshd.service'):
        link = os.path.join(root, 'etc/systemd/system', unit)
        if os.path.islink(link) and os.readlink(link) == '/dev/null':
            os.unlink(link)
    port = hosts.choose_ssh_ports(1)[0] + 700  # 29NN: outside the beds' 22NN blocks
    ssh_key = root.rstrip('/') + '.ssh-key'
    if not os.path.exists(ssh_key):
        subprocess.check_call(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', ssh_key])
    os.makedirs(os.path.join(root, 'root/.ssh'), mode=0o700, exist_ok=True)
    shutil.copy(ssh_key + '.pub', os.path.join(root, 'root/.ssh/authorized_keys'))
    hosts._write(os.path.join(root, 'etc/ssh/sshd_config.d/onionlab-testbed.conf'),
                 'Port %d\nListenAddress 127.0.0.1\nPermitRootLogin prohibit-password\n'
                 'PasswordAuthentication no\nUseDNS no\n' % port)
    hosts._write(os.path.join(root, 'etc/machine-id'), '%032x\n' % os.getpid(), 0o444)
    cgroups = hosts.own_cgroups(machine)
    cmd = ['systemd-nspawn', '-q', '--keep-unit', '--register=no', '-D', root, '-M', machine,
           '--resolv-conf=off', '--timezone=off', '--link-journal=no', '-b', '--console=passive']
    t0 = time.monotonic()
    logpath = root.rstrip('/') + '.boot.log'
    with open(logpath, 'wb') as lf:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT,
                             start_new_session=True, close_fds=True,
                             preexec_fn=lambda: hosts.enter_cgroups(cgroups))
    try:
        leader = _leader(p.pid)
        deadline = time.monotonic() + 120
        while True:  # the system bus appears a moment after PID 1
            rc, state = _in(leader, 'systemctl', 'is-system-running', '--wait', timeout=120)
            if state in ('running', 'degraded') or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        facts['boot'] = {'state': state, 'seconds': round(time.monotonic() - t0, 1)}
        time.sleep(3)  # tor@default: let it open its sockets
        for key, c in [
            ('failed_units', ['systemctl', '--failed', '--no-legend', '--plain']),
            ('tor_units', ['systemctl', 'list-units', '--all', '--no-legend', '--plain', 'tor*']),
            ('tor_default_active', ['systemctl', 'is-active', 'tor@default.service']),
            ('tor_main_user', ['sh', '-c', 'ps -o user= -p "$(systemctl show -p MainPID --value tor@default)"'
                               ' 2>/dev/null || echo no-ps']),
            ('run_tor', ['ls', '-la', '/run/tor']),
            ('tor_log', ['journalctl', '-b', '-u', 'tor@default', '--no-pager', '-q', '-o', 'cat']),
            ('python3', ['python3', '--version']),
            ('tor_version', ['tor', '--version']),
            ('apparmor_in_container', ['cat', '/proc/self/attr/current']),
        ]:
            facts[key] = _in(leader, *c)[1]
        t1 = time.monotonic()
        r = subprocess.run(['ssh', '-q', '-i', ssh_key, '-p', str(port), '-o', 'BatchMode=yes',
                            '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null',
                            '-o', 'ConnectTimeout=5', 'root@127.0.0.1', 'systemctl is-active tor@default; '
                            'python3 -c "import sys; print(sys.version.split()[0])"'],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=60)
        facts['ssh'] = 'rc %d in %.1fs: %s' % (r.returncode, time.monotonic() - t1,
                                                r.stdout.decode(errors='replace').strip().replace('\n', ' '))
    finally:
        t1 = time.monotonic()
        os.kill(p.pid, signal.SIGTERM)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGTERM)
            p.wait(10)
        facts['stop_seconds'] = round(time.monotonic() - t1, 1)
        for d in reversed(cgroups):
            try:
                os.rmdir(d)
            except OSError:
                pass
    return facts


def verify(root):
    """tor --verify-config (in a chroot, no network) of the torrcs hosts.py writes: a bed host's
    (offline and joined to a private network), and a stock host's defaults torrc."""
    host = {'name': 'host1', 'tor_socks_port': 29050, 'tor_control_port': 29051}
    dirauth = ['DirAuthority auth1 orport=5001 no-v2 v3ident=%s 127.0.0.1:7001 %s' % ('A' * 40, 'B' * 40)]
    join = hosts.privnet.join_torrc_lines(dirauth)
    auth_dir = os.path.join(root, hosts.CLIENT_AUTH_DIR.lstrip('/'))
    os.makedirs(auth_dir, mode=0o700, exist_ok=True)
    os.chown(auth_dir, *hosts._tor_ids(root))
    with open(os.path.join(root, hosts.DEFAULTS_TORRC.lstrip('/'))) as f:
        packaged = f.read()
    cases = {
        'bed-offline': (hosts.host_torrc(host, []), packaged),
        'bed-privnet': (hosts.host_torrc(host, join), packaged),
        'stock-offline': (_read(root, hosts.STOCK_TORRC), hosts.stock_defaults_torrc(packaged, host, [])),
        'stock-privnet': (_read(root, hosts.STOCK_TORRC), hosts.stock_defaults_torrc(packaged, host, join)),
    }
    out = {}
    for name, (torrc, defaults) in cases.items():
        hosts._write(os.path.join(root, 'tmp/verify.torrc'), torrc)
        hosts._write(os.path.join(root, 'tmp/verify.defaults'), defaults)
        r = subprocess.run(['chroot', root, 'tor', '--verify-config', '--defaults-torrc', '/tmp/verify.defaults',
                            '-f', '/tmp/verify.torrc'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=60)
        text = r.stdout.decode(errors='replace')
        out[name] = 'ok' if r.returncode == 0 else 'rc %d: %s' % (r.returncode, ' / '.join(
            ln for ln in text.splitlines() if '[warn]' in ln or '[err]' in ln)[-600:])
    return out


class MatrixBed(hosts.HostBed):
    """A bed whose hosts are of different releases: host i boots an overlay of roots[i][1]
    (a tree made by ``build``), otherwise exactly as hosts.HostBed does (ports, ssh key,
    _personalise, nspawn, teardown by PID)."""

    def __init__(self, roots, **kw):
        super().__init__(n=len(roots), name_prefix='mx', layout='overlay', **kw)
        self.roots = list(roots)

    def _up(self, t0):
        self.save()
        subprocess.check_call(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'onionlab-testbed',
                               '-f', self.key])
        with open(self.key + '.pub') as f:
            pubkey = f.read()
        with open(os.path.join(hosts.cache_dir(), 'ports.lock'), 'a') as lock:
            hosts.fcntl.flock(lock, hosts.fcntl.LOCK_EX)
            self._assign_ports(hosts.claimed_ports(self.state_path))
            self.save()
        for h, (suite, root) in zip(self.hosts, self.roots):
            h['suite'] = suite
            self._mount_overlay(h, root)
        for h in self.hosts:
            self._personalise(h, pubkey)
        t2 = time.monotonic()
        for h in self.hosts:
            self._boot(h)
        self.save()
        self._wait_ssh()
        self.timings['boot'] = time.monotonic() - t2
        self.write_inventory()
        self.timings['total'] = time.monotonic() - t0
        self.save()


def bed(roots, with_roles=False, with_privnet=False):
    """Boot one host per (suite, root) and run the collection against them over ssh: ansible
    ping, tor_hidden_service_info, a persistent tor_hidden_service twice (the second changes
    nothing). Prints what each step gave per host."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    venv = os.path.join(repo, '.venv', 'bin')
    env = dict(os.environ, ANSIBLE_HOST_KEY_CHECKING='False', ANSIBLE_NOCOLOR='1',
               ANSIBLE_DEPRECATION_WARNINGS='False', ANSIBLE_RETRY_FILES_ENABLED='False',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(repo, '.build', 'collections'),
               PATH=venv + os.pathsep + os.environ.get('PATH', ''))
    report = {}
    net = None
    if with_privnet:  # the private Tor network of the harness (privnet.py): onions answer through it
        net = hosts.privnet.PrivNet(ready_timeout=90)
        net.start()
        report['privnet_ready_seconds'] = round(net.timings['ready'], 1)
    try:
        return _bed(roots, with_roles, net, venv, env, report)
    finally:
        if net is not None:
            net.stop()


def _bed(roots, with_roles, net, venv, env, report):
    join = net.join_torrc_lines() if net is not None else None
    with MatrixBed(roots, privnet_join_lines=join) as b:
        report['boot_seconds'] = round(b.timings['boot'], 1)
        book = os.path.join(b.base_dir, 'play.yml')
        with open(book, 'w') as f:
            json.dump([{'hosts': 'all', 'gather_facts': True, 'module_defaults': {
                'group/onionlab.tor.tor': {'control_port': '{{ testbed_tor_control_port }}'}}, 'tasks': [
                {'name': 'facts', 'ansible.builtin.debug': {
                    'msg': '{{ ansible_distribution }} {{ ansible_distribution_version }} '
                           'python {{ ansible_python_version }} apparmor {{ ansible_apparmor.status }}'}},
                {'name': 'info', 'onionlab.tor.tor_hidden_service_info': {}},
                {'name': 'service', 'onionlab.tor.tor_hidden_service': {
                    'path': '/var/lib/tor/web', 'ports': [{'port': 80, 'target_port': 8080}]},
                 'register': 'svc'},
                {'name': 'again', 'onionlab.tor.tor_hidden_service': {
                    'path': '/var/lib/tor/web', 'ports': [{'port': 80, 'target_port': 8080}]},
                 'register': 'again'},
                {'name': 'idempotent', 'ansible.builtin.assert': {
                    'that': ['svc is changed', 'again is not changed', 'svc.onion_address == again.onion_address']}},
                {'name': 'tor still runs', 'ansible.builtin.command': 'systemctl is-active tor@default',
                 'changed_when': False},
            ]}], f)
        t0 = time.monotonic()
        r = subprocess.run([os.path.join(venv, 'ansible-playbook'), '-i', b.inventory_path, book],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=600,
                           stdin=subprocess.DEVNULL)
        out = r.stdout.decode(errors='replace')
        report['playbook'] = {'rc': r.returncode, 'seconds': round(time.monotonic() - t0, 1)}
        report['facts'] = re.findall(r'"msg": "([^"]+)"', out)
        report['recap'] = [ln.strip() for ln in out.splitlines() if re.match(r'^mx\d+\s+:', ln)]
        report['hosts'] = {h['name']: h['suite'] for h in b.hosts}
        if with_roles:  # the site playbook of the molecule scenarios, offline (DisableNetwork 1)
            rbook = os.path.join(b.base_dir, 'roles.yml')
            escrow = os.path.join(b.base_dir, 'controller')
            os.makedirs(escrow, mode=0o700)
            with open(rbook, 'w') as f:
                json.dump([{'hosts': 'all', 'gather_facts': True, 'gather_subset': ['min'], 'vars': {
                    'tor_control_port': '{{ testbed_tor_control_port }}',
                    'tor_socks_port': '127.0.0.1:{{ testbed_tor_socks_port }}',
                    'tor_config_lines': '{{ testbed_privnet_torrc_lines if testbed_privnet_joined '
                                        'else ["DisableNetwork 1"] }}',
                    'tor_torrc_takeover': True,
                    'onion_service_control_port': '{{ testbed_tor_control_port }}',
                    'onion_services': [{'name': 'site', 'ports': [{'port': 80,
                                                                   'target_port': '{{ testbed_app_ports[0] }}'}]}],
                    'onion_service_backup_dir': escrow + '/onion-keys',
                    'onion_service_summary_file': escrow + '/onion-services.yml'},
                    'pre_tasks': [{'name': 'a web server answering its host name', 'ansible.builtin.command':
                                   'systemd-run --unit=onionlab-web --property=WorkingDirectory=/etc '
                                   'python3 -m http.server --bind 127.0.0.1 {{ testbed_app_ports[0] }}',
                                   'args': {'creates': '/run/systemd/transient/onionlab-web.service'}}],
                    'roles': ['onionlab.tor.tor', 'onionlab.tor.onion_service']}], f)
            runs = []
            for _ in range(2):  # converge, then idempotence
                r = subprocess.run([os.path.join(venv, 'ansible-playbook'), '-i', b.inventory_path, rbook],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=600,
                                   stdin=subprocess.DEVNULL)
                out = r.stdout.decode(errors='replace')
                changed, task = {}, None
                for ln in out.splitlines():
                    m = re.match(r'^TASK \[(.*)\]', ln)
                    if m:
                        task = m.group(1)
                    m = re.match(r'^changed: \[(mx\d+)', ln)
                    if m:
                        changed.setdefault(task, []).append(m.group(1))
                runs.append({'rc': r.returncode, 'changed': changed, 'recap': [
                    ln.strip() for ln in out.splitlines() if re.match(r'^mx\d+\s+:', ln)]})
                if r.returncode:
                    runs[-1]['failed'] = [ln for ln in out.splitlines() if ln.startswith(('fatal:', 'failed:'))
                                          or '"msg"' in ln][:12]
            report['roles'] = runs
            if net is not None and not any(r['rc'] for r in runs):
                import yaml
                from harness.fixtures import fetch_onion
                with open(os.path.join(escrow, 'onion-services.yml')) as f:
                    summary = yaml.safe_load(f)
                fetched = {}
                for e in summary:
                    try:
                        body, took, attempts = fetch_onion(net.socks_port, e['onion_address'], path='/hostname',
                                                           deadline=120)
                        fetched[e['host']] = '%s in %.1fs (%d attempts)' % (body.strip(), took, attempts)
                    except Exception as exc:  # noqa: BLE001  (a report, not a test)
                        fetched[e['host']] = 'FAILED: %r' % exc
                report['fetched_through_privnet'] = fetched
        if r.returncode:
            report['output_tail'] = out[-4000:]
    return report


def main(argv=None):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest='cmd', required=True)
    b = sub.add_parser('build')
    b.add_argument('suite', choices=sorted(SUITES))
    b.add_argument('dir')
    b.add_argument('--mirror')
    b.add_argument('--keyring')
    pr = sub.add_parser('probe')
    pr.add_argument('dir')
    k = sub.add_parser('keyring')
    k.add_argument('debian_root')
    k.add_argument('dest')
    v = sub.add_parser('verify')
    v.add_argument('dir')
    bd = sub.add_parser('bed')
    bd.add_argument('roots', nargs='+', metavar='SUITE=DIR')
    bd.add_argument('--roles', action='store_true', help='converge the tor and onion_service roles twice')
    bd.add_argument('--privnet', action='store_true', help='join the harness private Tor network, fetch the onions')
    rm = sub.add_parser('remove')
    rm.add_argument('dir')
    a = ap.parse_args(argv)
    if a.cmd == 'build':
        return build(a.suite, a.dir, a.mirror, a.keyring)
    if a.cmd == 'probe':
        print(json.dumps(probe(a.dir), indent=1))
        return 0
    if a.cmd == 'keyring':
        ubuntu_keyring(a.debian_root, a.dest)
        return 0
    if a.cmd == 'bed':
        res = bed([tuple(x.split('=', 1)) for x in a.roots], a.roles, a.privnet)
        print(json.dumps(res, indent=1))
        return 0 if res['playbook']['rc'] == 0 else 1
    if a.cmd == 'verify':
        res = verify(a.dir)
        print(json.dumps(res, indent=1))
        return 0 if all(v == 'ok' for v in res.values()) else 1
    shutil.rmtree(a.dir)
    return 0


if __name__ == '__main__':
    sys.exit(main())
