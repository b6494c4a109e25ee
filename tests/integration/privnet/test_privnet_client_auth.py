# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_onion_client_auth on the private network (harness/privnet.py), end to end: a service with
client authorization made by tor_hidden_service, a client tor that gets the key through the
module over its control port (no restart, no reload) and fetches the service, and no longer can
once the module removed it (issue 17); and a run of tor_hidden_service that fails after writing a
service's client files leaves the service private for a tor that runs as its own user (issue 26)."""

import json
import os
import pwd
import shutil
import signal
import stat
import sys
import tempfile
import time

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth as ca
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_manager as sm
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness import privnet as pn
from harness import procs
from harness.ansible_run import run_playbook
from harness.fixtures import SocksError, http_exchange, log_since, log_size, socks5_connect, unless_rend_given_up
from harness.reach import Reach
from harness.tap import ControlTap

FETCH_DEADLINE = float(os.environ.get('ONIONLAB_FETCH_DEADLINE', '60'))
REFUSAL_DEADLINE = float(os.environ.get('ONIONLAB_REFUSAL_DEADLINE', '25'))
MISSING_CLIENT_AUTH = 0xf4
MODULE = 'onionlab.tor.tor_onion_client_auth'


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)


# tor answers every SOCKS request within its SocksTimeout (120 s by default): a stream, or a reply code saying why
# not (ExtendedErrors: 0xf2 introduction failed, 0xf3 rendezvous failed, ...); a stream is waited for until tor's
# own answer or the service's tor giving the rendezvous up (harness.fixtures.REND_GAVE_UP), not a deadline of the
# test's (a 30 s one timed out at a clean-clone run with no word of why)
TOR_SOCKS_TIMEOUT = 120.0


def open_stream(socks_port, address, username, client, service, attempts=3):
    """A connected stream to address:80 on circuits of its own (username), after tor's own answer. When the service's
    tor logs that it gave up the rendezvous of the request (REND_GAVE_UP: a clean-clone run saw both of its attempts
    fail in the same second, under load), the request is given up at that event and made again on circuits of
    their own, up to attempts times: tor's client would wait 120 s for a rendezvous that never comes. On failure the
    onion-service lines ([rend] at info) the client tor and the service's tor logged meanwhile."""
    marks = [log_size(client.rend_logfile), log_size(service.rend_logfile)]
    t0, why = time.monotonic(), []
    for attempt in range(1, attempts + 1):
        isolation = username if attempt == 1 else '%s-%d' % (username, attempt)
        sock, reason = _stream_unless_rend_given_up(socks_port, address, isolation, service)
        if sock is not None:
            return sock
        why.append('%s after %.1fs: %s' % (isolation, time.monotonic() - t0, reason))
        if 'gave the rendezvous up' not in reason:
            break
    raise AssertionError('no stream to %s (%s)\nthe client tor logged:\n%s\nthe service\'s tor logged:\n%s' % (
        address, '; '.join(why), log_since(client.rend_logfile, marks[0]), log_since(service.rend_logfile, marks[1])))


def _stream_unless_rend_given_up(socks_port, address, isolation, service):
    """(socket, None), or (None, why): tor's SOCKS answer, or the service's log saying it gave the rendezvous up
    (the request is then closed, which ends its thread)."""
    sock, error, gave_up = unless_rend_given_up(
        lambda opened: socks5_connect(socks_port, address, 80, timeout=TOR_SOCKS_TIMEOUT + 10, username=isolation,
                                      opened=opened), service.rend_logfile, 'open_stream-' + isolation)
    if gave_up:
        return None, 'the service gave the rendezvous up: %s' % gave_up
    return sock, str(error)


def refusal(socks_port, address, token, username=None, deadline=REFUSAL_DEADLINE):
    """The SOCKS reply code of tor's refusal (retrying other errors until deadline); getting the
    page fails the test at once. None when no refusal came."""
    t0 = time.monotonic()
    while True:
        try:
            sock = socks5_connect(socks_port, address, 80, timeout=max(3.0, deadline - (time.monotonic() - t0)),
                                  username=username)
            status, body = http_exchange(sock, address)
        except SocksError as exc:     # .code: tor's reply code of a refused connect
            if exc.code == MISSING_CLIENT_AUTH:
                return exc.code, time.monotonic() - t0
        except OSError:
            pass
        else:
            assert token not in body, 'the service answered (HTTP %d) a client tor without the key' % status
        if time.monotonic() - t0 + 1.0 > deadline:
            return None, time.monotonic() - t0
        time.sleep(1.0)


def test_key_given_and_taken_over_the_control_port(privnet, http_backend, tmp_path):
    onion = privnet.onion
    base = tmp_path / 'services'
    base.mkdir(mode=0o700)
    service_dir = str(base / 'private')
    saved = tmp_path / 'made.json'
    made_task = {'name': 'service', 'no_log': True, 'register': 'made', 'onionlab.tor.tor_hidden_service': {
        'control_port': onion.control_port, 'cookie_path': onion.cookie_path, 'persist': False,
        'path': service_dir, 'ports': [{'port': 80, 'target_port': http_backend.port}],
        'authorized_clients': [{'name': 'laptop'}]}}
    save = {'name': 'save', 'no_log': True, 'ansible.builtin.copy': {
        'dest': str(saved), 'mode': '0600',
        'content': "{{ {'address': made.onion_address, 'client': made.generated_clients[0]} | to_json }}"}}
    auth_dir = tmp_path / 'client_auth'
    auth_dir.mkdir(mode=0o700)
    (extended,) = pn.free_ports(1)
    client = None
    t0 = time.monotonic()
    reach = Reach(onion)     # the service's uploads from before the module makes it
    try:
        run = run_playbook([made_task, save], tmp_path)
        assert run.rc == 0, run.output
        made = json.loads(saved.read_text())
        address, laptop = made['address'], made['client']
        client_log = tmp_path / 'client-info.log'
        client = privnet.add_tor('caclient', ['SocksPort 127.0.0.1:%d ExtendedErrors' % extended,
                                              'ClientOnionAuthDir %s' % auth_dir,
                                              'Log info file %s' % client_log], socks=True)
        t_client = time.monotonic() - t0

        # no key yet: tor refuses the service (and keeps the descriptor it could not decrypt)
        code, took_refused = refusal(extended, address, http_backend.token)
        assert code == MISSING_CLIENT_AUTH, 'no refusal for missing client authorization in %.0fs' % took_refused

        # the key through the module, over the client tor's control port; the auth_private line as
        # tor_hidden_service returned it
        give = {'name': 'give', 'register': 'given', MODULE: {
            'control_port': client.control_port, 'cookie_path': client.cookie_path, 'address': address,
            'private_key': laptop['auth_private'], 'client_name': 'laptop'}}
        pid = client.pid
        run = run_playbook([give], tmp_path)
        assert run.rc == 0, run.output
        given = run.task('give')['result']
        assert given['changed'] is True and given['credential']['public_key'] == laptop['public_key']
        assert laptop['private_key'] not in run.output
        body, took_fetch = reach.fetch(address, deadline=FETCH_DEADLINE, client=client)
        assert body == http_backend.token
        assert client.pid == pid and client.running()          # no restart
        with open(os.path.join(str(auth_dir), address[:-len('.onion')] + '.auth_private')) as handle:
            assert ca.parse_line(handle.read())[0] == address[:-len('.onion')]

        # a stream opened now, before the removal
        stream = open_stream(extended, address, 'opened-before', client, onion)

        # taken away: a new request must fetch a new descriptor, which tor cannot decrypt
        run = run_playbook([{'name': 'take', MODULE: {
            'control_port': client.control_port, 'cookie_path': client.cookie_path, 'address': address,
            'state': 'absent'}}], tmp_path)
        assert run.rc == 0, run.output
        assert run.task('take')['result']['changed'] is True
        assert os.listdir(str(auth_dir)) == []
        with connect(port=client.control_port, cookie_path=client.cookie_path) as ctl:
            assert ca.view(ctl) == []
        outcomes = {}
        for label, username in (('same isolation', None), ('new isolation', 'after-removal')):
            code, took = refusal(extended, address, http_backend.token, username=username)
            outcomes[label] = (code, took)
        _say('client auth on privnet: client tor %.1fs; refused without key in %.1fs; module -> answered %.1fs '
             'after the gate; after removal: %s' % (
                 t_client, took_refused, took_fetch,
                 ', '.join('%s %s in %.1fs' % (k, '0x%02x' % c if c else 'no refusal', t)
                           for k, (c, t) in outcomes.items())))
        # tor forgot the descriptor with the key (ONION_CLIENT_AUTH_REMOVE removes it from its client
        # cache): every new stream, on the circuits of before or on new ones, needs a new descriptor
        # that tor cannot decrypt any more
        assert outcomes['new isolation'][0] == MISSING_CLIENT_AUTH
        assert outcomes['same isolation'][0] == MISSING_CLIENT_AUTH
        # a stream that was open stays open: its rendezvous circuit is not torn down
        assert http_exchange(stream, address) == (200, http_backend.token)
    finally:
        reach.close()
        if client is not None:
            procs.kill_pids([(client.pid, client.starttime)], grace=5.0)
            client.proc.wait(timeout=10)
        with connect(port=onion.control_port, cookie_path=onion.cookie_path) as c:
            rest = [s for s in hs.services_from_conf(c.get_conf('HiddenServiceOptions')) if s['path'] != service_dir]
            c.set_conf(hs.block_to_conf(rest))


# -- issue 26 A3: a failed run keeps a client-auth service private -------------------------------------------
RELOADED = 'Received reload signal (hup)'
RELOAD_DEADLINE = float(os.environ.get('ONIONLAB_RELOAD_DEADLINE', '60'))


def _tor_user():
    """Debian's account for tor (the account this host's tor package made), or a skip."""
    if os.geteuid() != 0:
        pytest.skip('tor is started as root and drops to its User (as Debian\'s unit does): needs root')
    for name in ('debian-tor', 'tor', '_tor'):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    pytest.skip('no tor account (debian-tor) on this host')


def _start_tor_as(privnet, name, user, extra_lines):
    """A tor of the private network started as root with `User <user>`, as Debian's tor.service
    runs it: its DataDirectory (like /var/lib/tor) belongs to the user, the services live in it."""
    datadir = tempfile.mkdtemp(prefix='onionlab-%s-' % name)
    os.chown(datadir, user.pw_uid, user.pw_gid)
    os.chmod(datadir, 0o700)
    (control_port,) = pn.free_ports(1)
    node = pn.Node(privnet, name, 'extra', datadir, control_port, extra=['User %s' % user.pw_name] + extra_lines)
    with open(node.logfile, 'w'):
        pass                                  # tor reopens it as its user at a reload
    os.chown(node.logfile, user.pw_uid, user.pw_gid)
    node.start()
    t0 = time.monotonic()
    while not node.bootstrapped():
        if not node.running() or time.monotonic() - t0 > privnet.ready_timeout:
            raise AssertionError('tor as %s did not bootstrap: %s' % (user.pw_name, node.log_text()[-1500:]))
        time.sleep(0.2)
    return node


def _files(directory):
    """authorized_clients as tor's user sees it: each file's owner, group, mode and content."""
    out = {}
    for name in sorted(os.listdir(directory)):
        st = os.lstat(os.path.join(directory, name))
        with open(os.path.join(directory, name), 'rb') as handle:
            out[name] = (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), handle.read())
    return out


def _service_descriptor(node, service_id):
    key = 'hs/service/desc/id/%s' % service_id
    with connect(port=node.control_port, cookie_path=node.cookie_path) as c:
        try:
            return c.get_info(key)[key]
        except Exception:   # 552: none built yet
            return None


def _readable_without_key(text, address):
    """Whether a client without a key can read the descriptor's inner layer (Stem knows no client
    keys: it decrypts only a descriptor without client authorization)."""
    from stem.descriptor.hidden_service import HiddenServiceDescriptorV3
    try:
        HiddenServiceDescriptorV3(text.encode('ascii'), validate=True).decrypt(address)
    except ValueError:
        return False
    return True


def test_failed_run_keeps_the_service_private_for_tor_as_its_user(privnet, http_backend, tmp_path):
    """issue 26 A3. A service with client authorization on a tor that runs as its own user (Debian:
    debian-tor); a run that changes its clients fails after writing the client files (another
    controller changes tor's block right before each of its SETCONFs: RACE_ATTEMPTS attempts, each
    writes the client files and undoes them). Then tor reloads (SIGHUP, as at the next `systemctl
    reload tor` or logrotate): it must read the client files of before - a file put back as
    root:root 0600 is ignored by tor's user ("can't be read ... Ignoring"), and with no client
    file loaded tor publishes the service to everyone. A client without the key is refused
    (0xF4), one with the key is served."""
    user = _tor_user()
    etc = tempfile.mkdtemp(prefix='onionlab-etc-')    # root's, readable (/etc/tor): the drop-in
    os.chmod(etc, 0o755)
    node = client = reach = None
    try:
        node = _start_tor_as(privnet, 'a3svc', user, [])
        service_dir = os.path.join(node.datadir, 'private')
        drop_in = os.path.join(etc, 'torrc.d', 'onionlab.conf')
        control = {'control_port': node.control_port, 'cookie_path': node.cookie_path, 'config_file': drop_in}
        ports = [{'port': 80, 'target_port': http_backend.port}]
        saved = tmp_path / 'made.json'
        run = run_playbook([
            {'name': 'service', 'no_log': True, 'register': 'made', 'onionlab.tor.tor_hidden_service': dict(
                control, path=service_dir, ports=ports, authorized_clients=[{'name': 'laptop'}])},
            {'name': 'save', 'no_log': True, 'ansible.builtin.copy': {
                'dest': str(saved), 'mode': '0600',
                'content': "{{ {'address': made.onion_address, 'client': made.generated_clients[0]} | to_json }}"}},
        ], tmp_path)
        assert run.rc == 0, run.output
        made = json.loads(saved.read_text())
        address, laptop = made['address'], made['client']
        sid = address[:-len('.onion')]
        auth = os.path.join(service_dir, 'authorized_clients')
        before = _files(auth)
        assert sorted(before) == ['laptop.auth', 'probe.auth']   # probe: the health check's own client
        assert set((uid, gid, mode) for uid, gid, mode, _ in before.values()) == {(user.pw_uid, user.pw_gid, 0o600)}
        with open(node.torrc) as handle:
            assert '%%include %s' % drop_in in handle.read()     # the service survives a reload
        t0 = time.monotonic()
        while _service_descriptor(node, sid) is None:
            assert time.monotonic() - t0 < RELOAD_DEADLINE, 'the service built no descriptor'
            time.sleep(0.5)
        first = _service_descriptor(node, sid)
        assert not _readable_without_key(first, address)    # the check below can tell the two apart
        (extended,) = pn.free_ports(1)
        client = privnet.add_tor('a3client', ['SocksPort 127.0.0.1:%d ExtendedErrors' % extended,
                                             'Log info file %s' % (tmp_path / 'a3client.log')], socks=True)

        # the run that fails after writing the client files (laptop replaced by phone): each time it
        # re-reads tor's block right before its SETCONF, another controller has just changed it
        # (a recording tap on the control connection makes that writer act at that moment)
        raced = []

        def other_controller(line):
            if line.startswith(b'GETCONF HiddenServiceOptions') and os.path.exists(os.path.join(auth, 'phone.auth')):
                raced.append(_files(auth))
                with connect(port=node.control_port, cookie_path=node.cookie_path) as other:
                    block = hs.services_from_conf(other.get_conf('HiddenServiceOptions'))
                    block.append(hs.normalize_service({'path': os.path.join(node.datadir, 'other%d' % len(raced)),
                                                       'ports': [{'port': 99}]}))
                    other.set_conf(hs.block_to_conf(block))
        with ControlTap(node.control_port, on_line=other_controller) as tap:
            run = run_playbook([{'name': 'fails', 'onionlab.tor.tor_hidden_service': dict(
                control, control_port=tap.port, path=service_dir, ports=ports,
                authorized_clients=[{'name': 'phone'}])}], tmp_path)
        assert run.rc != 0, run.output
        failed = run.task('fails')['result']
        assert 'changed by another controller' in failed['msg'] and 'this run sent nothing' in failed['msg'], \
            failed['msg']
        assert len(raced) == sm.RACE_ATTEMPTS        # each attempt wrote phone's file, then undid it
        assert all(sorted(files) == ['phone.auth', 'probe.auth'] for files in raced), raced   # probe: the check's
        assert all(files['phone.auth'][:3] == (user.pw_uid, user.pw_gid, 0o600) for files in raced), raced
        after = _files(auth)
        _say('client files before %s, after the failed run %s' % (
            [(n, u, g, '%04o' % m) for n, (u, g, m, _c) in before.items()],
            [(n, u, g, '%04o' % m) for n, (u, g, m, _c) in after.items()]))

        # tor reloads
        reach = Reach(node, client)       # the service's HS_DESC events from before the reload
        mark = reach.mark()
        reloads = node.log_text().count(RELOADED)
        os.kill(node.pid, signal.SIGHUP)
        t0 = time.monotonic()
        while node.log_text().count(RELOADED) == reloads:
            assert node.running() and time.monotonic() - t0 < RELOAD_DEADLINE, 'no reload: %s' % node.log_text()[-800:]
            time.sleep(0.1)
        with connect(port=node.control_port, cookie_path=node.cookie_path) as c:
            c.get_info('version')         # answered once the reload (a step of tor's main loop) is over
        log_after = node.log_text().split(RELOADED)[-1]
        ignored = [line for line in log_after.splitlines()
                   if 'authorized_clients' in line or 'Client authorization file' in line]
        # what tor publishes from now on: it encodes its descriptor with the client keys it loaded at
        # the reload. A descriptor readable without a key is uploaded at once (the service changed):
        # the keyless client must meet that one, so the uploads begun since the reload are waited for
        now = _service_descriptor(node, sid)
        public = now is not None and _readable_without_key(now, address)
        t0 = time.monotonic()
        while True:
            begun, answered, uploaded = reach.uploads(sid, since=mark)
            if answered >= begun and (uploaded or not public):
                break
            assert time.monotonic() - t0 < RELOAD_DEADLINE, 'uploads after the reload: %s' % reach.report(address)
            time.sleep(0.2)
        _say('after the reload: %d descriptor uploads answered in %.1fs, the descriptor %s; tor said: %s' % (
            answered, time.monotonic() - t0,
            'readable WITHOUT a client key' if public else 'for authorized clients only',
            ignored or 'nothing of the client files'))

        code, took = refusal(extended, address, http_backend.token, username='a3-without-key')
        assert code == MISSING_CLIENT_AUTH, 'no refusal for missing client authorization in %.0fs' % took
        assert after == before
        assert ignored == []
        assert not public
        with connect(port=client.control_port, cookie_path=client.cookie_path) as c:
            ca.add(c, sid, ca.parse_private_key(laptop['auth_private'], sid))
        # once the HSDirs the client asks serve the descriptor the service's tor holds now (the client asks them:
        # published before the watch). An upload after the reload can be rejected by every HSDir (its revision
        # counter lower than the one they hold, near an SRV run's boundary): then the next period's is waited for.
        body, took_fetch = reach.fetch(address, deadline=FETCH_DEADLINE, since=None, socks_port=extended)
        assert body == http_backend.token
        _say('refused without the key in %.1fs; served with it %.1fs after the gate' % (took, took_fetch))
    finally:
        if reach is not None:
            reach.close()
        for n in (client, node):
            if n is not None:
                procs.kill_pids([(n.pid, n.starttime)], grace=5.0)
                n.proc.wait(timeout=10)
        if node is not None:
            shutil.rmtree(node.datadir, ignore_errors=True)
        shutil.rmtree(etc, ignore_errors=True)
