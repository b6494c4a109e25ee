# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Onionbalance (Debian's package) on the private network, end to end (issue 18): three backend
tors each host a service with HiddenServiceOnionbalanceInstance 1 + ob_config and serve a page
naming themselves; a frontend tor with a ControlPort and one onionbalance process publish the
frontend address; the private network's client fetches it.  Then one backend's tor is stopped
(by PID), then a second: the address still answers, and the time until every request succeeds
again is measured and printed; both come back and serve again.  Last, the frontend is rebuilt
(new tor, new data directory, new onionbalance) from the same key: the same address answers.

The network votes every 20 s (harness/onionbalance.py says why: onionbalance --is-testnet
assumes chutney's 20 s round for the time-period length; with privnet's 10 s the client finds
no descriptor)."""

import base64
import os
import shutil
import stat
import sys
import time

import pytest

from harness import onionbalance as ob
from harness.ansible_run import run_playbook

DEADLINE = float(os.environ.get('ONIONLAB_OB_DEADLINE', '240'))
STEADY = 6  # consecutive answers that count as "every request succeeds again"
# a network, 3 backends, onionbalance's first publication, failover waits and role runs on a shared 2-core machine
pytestmark = pytest.mark.timeout(1200)


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)


@pytest.fixture(scope='module')
def balanced(tmp_path_factory):
    if not os.path.exists(ob.ONIONBALANCE):
        pytest.skip('onionbalance is not installed (apt-get install onionbalance)')
    if not shutil.which('tor-gencert'):
        pytest.skip('tor and tor-gencert are needed for the private network')
    base = tmp_path_factory.mktemp('obnet')
    net = ob.BalancedPrivNet(base_dir=str(base / 'net'), with_onion=False,
                             ready_timeout=float(os.environ.get('ONIONLAB_PRIVNET_TIMEOUT', '60')))
    servers, state = [], {'balancer': None}
    net.start()
    try:
        workdir = str(base / 'frontend')
        os.makedirs(workdir, mode=0o700)
        key = os.path.join(workdir, 'frontend.key')
        frontend = ob.write_frontend_key(key)
        front_tor = net.add_tor('frontend')
        backends = []
        for i in range(3):
            server = ob.NamedHTTP('b%d' % i)
            servers.append(server)
            node, address = ob.add_backend(net, 'backend%d' % i, frontend, server.port)
            backends.append({'name': 'b%d' % i, 'node': node, 'address': address})
        config = os.path.join(workdir, 'config.yaml')
        ob.write_config(config, key, [b['address'] for b in backends])
        state['balancer'] = ob.Onionbalance(workdir, front_tor, config).start()
        state.update({'net': net, 'frontend': frontend + '.onion', 'key': key, 'backends': backends,
                      'front_tor': front_tor, 'started': time.monotonic(),
                      'version': ob.onionbalance_version()})
        yield state
    finally:
        if state['balancer']:
            state['balancer'].stop()
        for s in servers:
            s.close()
        net.stop()


def _get(net, address):
    try:
        status, body = ob.isolated_get(net.socks_port, address)
    except OSError as e:
        return None, str(e)
    return (body if status == 200 else None), 'HTTP %d' % status


def _diagnose(st):
    try:
        with open(st['net'].client.rend_logfile) as f:
            rend = f.read()[-4000:]
    except OSError as e:
        rend = str(e)
    return 'onionbalance log tail:\n%s\nclient tor onion-service log tail:\n%s' % (
        st['balancer'].log_text()[-3000:], rend)


def _until_steady(st, allowed, t0, deadline=DEADLINE):
    """Request until STEADY answers in a row come from backends in allowed (harness until_steady);
    returns (seconds from t0 to the first of those answers, failures seen, pages seen); pages['slowest']
    is the longest request (a client falls back to another introduction point within one request),
    pages['forgets'] how often the client was told to drop its descriptors (after 3 failures in a row)."""
    try:
        r = ob.until_steady(ob.Frontend(st['net'].socks_port, st['frontend']).get, allowed, t0, deadline, STEADY,
                            forget=lambda: ob.forget_descriptors(st['net']))
    except AssertionError as e:
        # the message again after the log: CI shows the tail of the output
        raise AssertionError('%s\n%s\n(%s)' % (e, _diagnose(st), e))
    return r['seconds'], r['failures'], dict(r['pages'], slowest=r['slowest'], forgets=r['forgets'])


def test_frontend_answers_with_backend_pages(balanced):
    st = balanced
    names = {b['name'] for b in st['backends']}
    first, failures, _ = _until_steady(st, names, st['started'])
    _say('onionbalance %s: frontend %s answered %.1fs after onionbalance started (%d failed tries before)'
         % (st['version'], st['frontend'], first, failures))
    seen = {}
    t0 = time.monotonic()
    while len(seen) < len(names) and time.monotonic() - t0 < 120:
        page, why = _get(st['net'], st['frontend'])
        assert page is not None, why
        name = page.split()[-1]
        assert name in names, page
        seen[name] = seen.get(name, 0) + 1
    _say('pages by backend over %d requests (fresh circuit each): %s' % (sum(seen.values()), seen))
    assert len(seen) >= 2, 'every request went to one backend: %s' % seen


def test_failover_when_backends_stop(balanced):
    st = balanced
    b0, b1, b2 = st['backends']
    try:
        ob.stop_tor(b0['node'])
        t_stop = time.monotonic()
        after1, fails1, pages1 = _until_steady(st, {'b1', 'b2'}, t_stop)
        _say('backend b0 stopped: every request succeeds again after %.1fs (%d failed requests; pages %s)'
             % (after1, fails1, pages1))
        ob.stop_tor(b1['node'])
        t_stop = time.monotonic()
        after2, fails2, pages2 = _until_steady(st, {'b2'}, t_stop)
        _say('backend b1 stopped too: every request succeeds again after %.1fs (%d failed requests; pages %s)'
             % (after2, fails2, pages2))
    finally:
        for b in (b0, b1):
            if not b['node'].running():
                ob.restart_tor(st['net'], b['node'])
    t_back = time.monotonic()
    seen, purged = set(), 0.0
    while time.monotonic() - t_back < DEADLINE and not {'b0', 'b1'} <= seen:
        if time.monotonic() - purged > 15:  # the client would keep its descriptor (b2 still answers)
            ob.forget_descriptors(st['net'])
            purged = time.monotonic()
        page, _ = _get(st['net'], st['frontend'])
        if page is not None:
            seen.add(page.split()[-1])
        else:
            time.sleep(1)
    assert {'b0', 'b1'} <= seen, 'restarted backends never served again (pages %s)\n%s' % (seen, _diagnose(st))
    _say('b0 and b1 started again: both served through the frontend within %.1fs' % (time.monotonic() - t_back))


def _role_vars(st, root, **extra):
    """The onionbalance role on localhost, every path under root (its 'host' side) and the escrow
    under root.parent / 'escrow' (the controller's, which outlives a rebuilt host)."""
    role_vars = {
        'onionbalance_backends': [b['address'] for b in st['backends']],
        'onionbalance_install': False,  # Debian's package is on this machine already (apt is shared)
        'onionbalance_config_dir': str(root / 'etc'),
        'onionbalance_unit_dropin': str(root / 'onionbalance.service.d' / 'onionlab.conf'),
        'onionbalance_user': 'root', 'onionbalance_group': 'root',
        'onionbalance_backup_dir': str(root.parent / 'escrow'),
        'onionbalance_control_port': st['front_tor'].control_port,
        'onionbalance_testnet': True, 'onionbalance_log_level': 'info',
        'onionbalance_service_manager': 'none',
    }
    role_vars.update(extra)
    return role_vars


def _role(role_vars, tmp_path, pre_tasks=()):
    return run_playbook([{'hosts': 'localhost', 'gather_facts': False, 'vars': role_vars,
                          'pre_tasks': list(pre_tasks), 'roles': ['onionlab.tor.onionbalance']}], tmp_path)


def _fails_with(run, text):
    assert run.rc != 0, run.stdout[-2000:]
    assert text in run.stdout, run.stdout[-3000:]


def test_role_checks(balanced, tmp_path):
    st = balanced
    addresses = [b['address'] for b in st['backends']]
    run = _role(_role_vars(st, tmp_path / 'h1', onionbalance_backends=[]), tmp_path)
    _fails_with(run, 'onionbalance: onionbalance_backends is empty')
    nine = [_valid_address(i) for i in range(9)]
    run = _role(_role_vars(st, tmp_path / 'h2', onionbalance_backends=nine), tmp_path)
    _fails_with(run, 'onionbalance: 9 backends, more than 8 (onionbalance_max_backends)')
    run = _role(_role_vars(st, tmp_path / 'h3', onionbalance_backends=addresses + addresses[:1]), tmp_path)
    _fails_with(run, 'onionbalance: a backend address is listed twice')
    run = _role(_role_vars(st, tmp_path / 'h4', onionbalance_backends=['not-an-onion.onion']), tmp_path)
    _fails_with(run, 'onionbalance: backend host not-an-onion.onion has no address for service ?')
    add = {'ansible.builtin.add_host': {'name': 'web1', 'ansible_connection': 'local',
                                        'onion_services': [{'name': 'www', 'ports': [80],
                                                            'clients': [{'name': 'alice'}]}]}}
    run = _role(_role_vars(st, tmp_path / 'h5', onionbalance_backends=[{'host': 'web1', 'service': 'www'}]),
                tmp_path, pre_tasks=[add])
    _fails_with(run, 'onionbalance: backend host web1 has no address for service www')
    escrow = tmp_path / 'escrow' / 'web1' / 'www'
    escrow.mkdir(parents=True)
    (escrow / 'hostname').write_text(addresses[0] + '\n')
    run = _role(_role_vars(st, tmp_path / 'h6', onionbalance_backends=['web1'], onionbalance_backend_service='www'),
                tmp_path, pre_tasks=[add])
    _fails_with(run, "onionbalance: web1's service www has client authorization (clients/authorized_clients)")
    add['ansible.builtin.add_host']['onion_services'][0].pop('clients')
    add['ansible.builtin.add_host']['onion_services'][0]['options'] = {'pow': {'enabled': True}}
    run = _role(_role_vars(st, tmp_path / 'h7', onionbalance_backends=['web1'], onionbalance_backend_service='www'),
                tmp_path, pre_tasks=[add])
    _fails_with(run, "onionbalance: web1's service www has proof of work turned on (options.pow.enabled)")
    run = _role(_role_vars(st, tmp_path / 'h8', onionbalance_control_port=None,
                           onionbalance_control_socket=str(tmp_path / 'none')), tmp_path)
    _fails_with(run, 'onionbalance: tor\'s control socket %s does not exist' % (tmp_path / 'none'))
    # a backend host whose address comes from its escrowed hostname, its service naming this frontend (the
    # harness's key, given as from a vault): accepted, written into config.yaml
    add['ansible.builtin.add_host']['onion_services'][0].pop('options')
    add['ansible.builtin.add_host']['onion_services'][0]['onionbalance_frontend'] = st['frontend']
    with open(st['key'], 'rb') as f:
        blob = 'ED25519-V3:' + base64.b64encode(f.read()[-64:]).decode()
    run = _role(_role_vars(st, tmp_path / 'h9', onionbalance_backends=['web1'], onionbalance_backend_service='www',
                           onionbalance_private_key=blob), tmp_path, pre_tasks=[add])
    assert run.rc == 0, run.stdout[-3000:]
    assert 'address: %s\n' % addresses[0].replace('.onion', '') in (tmp_path / 'h9' / 'etc' / 'config.yaml').read_text()
    # a backend host (here the frontend's own host, localhost) whose service is not made a backend of this
    # frontend (onionbalance_frontend missing, or naming another address): refused, naming the fix
    front = (tmp_path / 'escrow' / 'onionbalance' / 'frontend' / 'hostname').read_text().strip()   # h9's key
    assert front == st['frontend']
    mine = tmp_path / 'escrow' / 'localhost' / 'www'
    mine.mkdir(parents=True)
    (mine / 'hostname').write_text(addresses[1] + '\n')
    for n, (frontend, text) in enumerate([
            (None, "onionbalance: backend host localhost's service www has no onionbalance_frontend in its "
                   "onion_services entry, so its tor runs it without HiddenServiceOnionbalanceInstance 1 and an "
                   "ob_config naming %s, and refuses every client that the frontend address sends to it. Fix: "
                   "set onionbalance_frontend: %s on the entry www of onion_services for localhost" % (front, front)),
            (addresses[2], "onionbalance: backend host localhost's service www names another frontend, %s, in its "
                           "onion_services entry" % addresses[2]),
            (front.replace('.onion', ''), None)]):
        entry = {'name': 'www', 'ports': [80]}
        if frontend:
            entry['onionbalance_frontend'] = frontend
        run = _role(_role_vars(st, tmp_path / ('h11-%d' % n), onionbalance_backends=['localhost'],
                               onionbalance_backend_service='www'), tmp_path,
                    pre_tasks=[{'ansible.builtin.set_fact': {'onion_services': [entry]}}])
        if text:   # ansible wraps the error line: compare with whitespace collapsed
            assert run.rc != 0, run.stdout[-2000:]
            assert ' '.join(text.split()) in ' '.join(run.stdout.split()), run.stdout[-3000:]
        else:
            assert run.rc == 0, run.stdout[-3000:]
    # a host whose key is not the escrowed one: refused, its key left as it was
    other_dir = tmp_path / 'h10' / 'etc' / 'private_keys'
    other_dir.mkdir(parents=True, mode=0o700)
    other = ob.write_frontend_key(str(other_dir / 'frontend.key'))
    before = (other_dir / 'frontend.key').read_bytes()
    run = _role(_role_vars(st, tmp_path / 'h10'), tmp_path)
    _fails_with(run, 'onionbalance: the frontend key on localhost (%s, address %s.onion) is not the escrowed one'
                % (other_dir / 'frontend.key', other))
    assert (other_dir / 'frontend.key').read_bytes() == before


def _valid_address(i):
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
    return onion.onion_address(bytes([i + 1]) * 32)


def test_role_rebuilds_frontend_from_escrow(balanced, tmp_path):
    """The role writes the harness's frontend key (given as from a vault), escrows it, and on a
    second run changes nothing.  Then the frontend host is rebuilt from nothing (its files gone,
    a new tor): the role restores the key from the escrow, and onionbalance started with the
    role's ExecStart publishes the same address, which answers.  The backends' tors are
    restarted meanwhile, so the old frontend's descriptor (still on the HSDirs and in the
    client's cache) names only dead introduction points: only the rebuilt frontend can answer."""
    st = balanced
    t_test = time.monotonic()
    with open(st['key'], 'rb') as f:
        expanded = f.read()[-64:]
    blob = 'ED25519-V3:' + base64.b64encode(expanded).decode()
    host = tmp_path / 'frontend-host'
    first = _role(_role_vars(st, host, onionbalance_private_key=blob), tmp_path)
    assert first.rc == 0, first.stdout[-3000:]
    escrowed = tmp_path / 'escrow' / 'onionbalance' / 'frontend' / 'hs_ed25519_secret_key'
    assert escrowed.read_bytes()[-64:] == expanded
    assert stat.S_IMODE(escrowed.stat().st_mode) == 0o600
    assert stat.S_IMODE(escrowed.parent.stat().st_mode) == 0o700
    assert (escrowed.parent / 'hostname').read_text().strip() == st['frontend']
    key_file = host / 'etc' / 'private_keys' / 'frontend.key'
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    config = (host / 'etc' / 'config.yaml').read_text()
    assert all('address: %s\n' % b['address'].replace('.onion', '') in config for b in st['backends'])
    assert blob not in first.stdout + first.stderr
    again = _role(_role_vars(st, host, onionbalance_private_key=blob), tmp_path)
    assert again.rc == 0 and again.stats['localhost']['changed'] == 0, again.stdout[-3000:]

    _say('role: first run and a second (changed=0) in %.1fs' % (time.monotonic() - t_test))
    # rebuild: the old frontend goes, the host's files go, the backends get new intro points
    old_revision = ob.client_descriptor_revision(st['net'].client.control_port, st['net'].client.cookie_path,
                                                 st['frontend'])
    st['balancer'].stop()
    ob.stop_tor(st['front_tor'])
    shutil.rmtree(str(host))
    for b in st['backends']:
        ob.stop_tor(b['node'])
        ob.restart_tor(st['net'], b['node'])
    st['front_tor'] = st['net'].add_tor('frontend2')
    t_role = time.monotonic()
    rebuilt = _role(_role_vars(st, host), tmp_path)
    assert rebuilt.rc == 0, rebuilt.stdout[-3000:]
    _say('rebuilt frontend host: role run (key restored from escrow) in %.1fs' % (time.monotonic() - t_role))
    assert key_file.read_bytes()[-64:] == expanded
    argv = ob.dropin_command(str(host / 'onionbalance.service.d' / 'onionlab.conf'))
    assert argv[:3] == [ob.ONIONBALANCE, '-c', str(host / 'etc' / 'config.yaml')], argv
    st['balancer'] = ob.Onionbalance(str(host), st['front_tor'], None, argv=argv).start()
    t0 = time.monotonic()
    # The client still holds the old frontend's descriptor (dead introduction points now); once
    # the rebuilt frontend has uploaded its own, the client drops its copy, as its expiry would,
    # and fetches again until it holds the new one.  (Dropped before that upload, the client
    # fetched the old one again and needed 199 s, 10 requests timing out at 20 s, to get past it;
    # dropped once right after the upload began, it once fetched the old one from an HSDir the
    # upload had not reached and never answered in 240 s: measured.)
    while 'Uploading first descriptor for %s' % st['frontend'] not in st['balancer'].log_text():
        assert time.monotonic() - t0 < DEADLINE, 'the rebuilt frontend never published\n' + _diagnose(st)
        assert st['balancer'].running(), 'onionbalance exited\n' + _diagnose(st)
        time.sleep(1)
    published = time.monotonic() - t0
    fetched, fetches = ob.until_newer_descriptor(st['net'], st['frontend'], old_revision, DEADLINE)
    first_ok, failures, pages = _until_steady(st, {'b0', 'b1', 'b2'}, t0)
    _say('rebuilt frontend (new tor, key restored by the role from escrow): published %.1fs after onionbalance '
         'started; the client held its descriptor (revision above %s) %.1fs later after %d fetches; '
         '%s answered again after %.1fs (%d failures; %s)'
         % (published, old_revision, fetched, fetches, st['frontend'], first_ok, failures, pages))
    assert 'Loaded onion %s' % st['frontend'] in st['balancer'].log_text()
