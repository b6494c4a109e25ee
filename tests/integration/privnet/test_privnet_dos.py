# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 16 on the private Tor network: the DoS defences tor_hidden_service sets are the ones tor
runs, proved from outside the module.

* Proof of work is in the descriptor: rend-spec's ``pow-params v1 <seed> <suggested effort>
  <expiration>`` line of the encrypted inner layer. The test decrypts the descriptor as a client
  does (Stem, with the onion address), once from the client tor that fetched the service
  (the ``HS_DESC_CONTENT`` event of its fetch, ``harness.reach``) and from the service's tor
  (``hs/service/desc/id/<id>``).
* The queue rate and burst are not in the descriptor (pow-params has type, seed, effort and
  expiration only): they are proved by tor's own config (``GETCONF HiddenServiceOptions``), and
  PoW on/off by the line appearing in / leaving a newly published descriptor.
* The intro-point DoS defence travels to the intro points in ESTABLISH_INTRO (the DoS extension),
  never in the descriptor: proved by tor's own config, as issue 16 allows.
* Ephemeral services (ADD_ONION's PoWDefensesEnabled=/PoWQueueRate=/PoWQueueBurst=, tor
  0.4.9.2-alpha and later): the same descriptor check through ``hs/service/desc/id`` and a client.
"""

import base64
import os
import re
import sys
import time

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import client as tor_client
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import run_playbook
from harness.reach import Reach

HiddenServiceDescriptorV3 = pytest.importorskip('stem.descriptor.hidden_service').HiddenServiceDescriptorV3
pytest.importorskip('cryptography')  # Stem decrypts the layers with it

FETCH_DEADLINE = float(os.environ.get('ONIONLAB_FETCH_DEADLINE', '60'))
REPUBLISH_DEADLINE = float(os.environ.get('ONIONLAB_REPUBLISH_DEADLINE', '60'))
POW_PARAMS = re.compile(r'^pow-params v1 (\S+) (\d+) (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)$', re.M)


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)


def _dos(pow=None, intro_dos=None):
    """The module options of a service with these defences."""
    out = {}
    if pow is not None:
        out['pow'] = pow
    if intro_dos is not None:
        out['intro_dos'] = intro_dos
    return out


def _service_task(onion, path, port, **options):
    args = dict({'control_port': onion.control_port, 'cookie_path': onion.cookie_path, 'persist': False,
                 'path': path, 'ports': [{'port': 80, 'target_port': port}]}, **options)
    return {'name': 'service', 'register': 'svc', 'onionlab.tor.tor_hidden_service': args}


def _apply(tmp_path, task):
    t0 = time.monotonic()
    run = run_playbook([task], tmp_path)
    assert run.rc == 0, run.output
    return run.task('service')['result'], time.monotonic() - t0


def _block(node, path):
    """tor's own HiddenServiceOptions lines of the service at path, as {option: value}."""
    with connect(port=node.control_port, cookie_path=node.cookie_path) as c:
        lines = c.get_conf('HiddenServiceOptions')
    out, mine = {}, False
    for key, value in lines:
        if key == 'HiddenServiceDir':
            mine = value == path
        elif mine and key != 'HiddenServicePort':
            out[key] = value
    return out


def _descriptor(node, service_id, which):
    """The outer descriptor tor holds for service_id ('service': the one it publishes, 'client':
    the one it fetched), or None."""
    key = 'hs/%s/desc/id/%s' % (which, service_id)
    with connect(port=node.control_port, cookie_path=node.cookie_path) as c:
        try:
            return c.get_info(key)[key]
        except Exception:  # 552: tor has none (yet)
            return None


def _inner(text, address):
    """The decrypted inner layer's text, as a client reads it."""
    desc = HiddenServiceDescriptorV3(text.encode('ascii'), validate=True)
    return str(desc.decrypt(address))


def _revision(text):
    return int(re.search(r'^revision-counter (\d+)$', text, re.M).group(1))


def _keywords(inner):
    """The keywords of the inner layer's lines, object bodies (certificates) left out."""
    out, in_object = set(), False
    for line in inner.splitlines():
        if line.startswith('-----BEGIN '):
            in_object = True
        elif line.startswith('-----END '):
            in_object = False
        elif line and not in_object:
            out.add(line.split(' ', 1)[0])
    return out


# rend-spec's second-layer keywords: the intro-point DoS parameters are not among them (they go to
# each intro point in ESTABLISH_INTRO's DoS extension)
INNER_KEYWORDS = {'create2-formats', 'intro-auth-required', 'single-onion-service', 'flow-control', 'pow-params',
                  'introduction-point', 'onion-key', 'auth-key', 'enc-key', 'enc-key-cert', 'legacy-key',
                  'legacy-key-cert'}


def _pow_params(inner):
    lines = POW_PARAMS.findall(inner)
    assert len(lines) <= 1, lines
    return lines[0] if lines else None


def _wait_descriptor(node, service_id, address, cond, deadline=REPUBLISH_DEADLINE):
    """Poll the service's own descriptor until cond(inner text) holds; (text, inner, seconds)."""
    t0 = time.monotonic()
    last = None
    while True:
        text = _descriptor(node, service_id, 'service')
        if text:
            last = _inner(text, address)
            if cond(last):
                return text, last, time.monotonic() - t0
        if time.monotonic() - t0 > deadline:
            raise AssertionError('no such descriptor in %.0fs; last inner layer:\n%s' % (deadline, last))
        time.sleep(0.5)


def _client_tor(privnet, name):
    node = privnet.add_tor(name, socks=True)
    return node


def test_pow_in_the_fetched_descriptor_rate_in_config_off_removes_it(privnet, http_backend, tmp_path):
    onion = privnet.onion
    base = tmp_path / 'services'
    base.mkdir(mode=0o700)
    path = str(base / 'powsvc')
    timings = {}

    # a client tor that has never seen the service (started first: its events and the service's are watched from
    # before the service exists, so the fetch waits for tor's own upload to the HSDirs this client asks)
    client = _client_tor(privnet, 'dosclient')
    reach = Reach(onion, client)
    late = _client_tor(privnet, 'dosclientlate')
    late_reach = Reach(onion, late)
    try:
        _pow_on_rate_off(onion, client, reach, late, late_reach, path, http_backend, tmp_path, timings)
    finally:
        reach.close()
        late_reach.close()
    _say('timings: %s' % ', '.join('%s %.1fs' % kv for kv in timings.items()))


def _pow_on_rate_off(onion, client, reach, late, late_reach, path, http_backend, tmp_path, timings):
    # on, with a queue rate and burst, and the intro-point defence
    made, timings['module on'] = _apply(tmp_path, _service_task(
        onion, path, http_backend.port,
        **_dos(pow={'enabled': True, 'queue_rate': 50, 'queue_burst': 120},
               intro_dos={'enabled': True, 'rate_per_sec': 30, 'burst_per_sec': 90})))
    assert made['changed'], made
    address = made['onion_address']
    service_id = address[:-len('.onion')]
    with open(os.path.join(path, 'hostname')) as f:
        assert f.read().strip() == address

    block = _block(onion, path)
    assert block.get('HiddenServicePoWDefensesEnabled') == '1', block
    assert block.get('HiddenServicePoWQueueRate') == '50', block
    assert block.get('HiddenServicePoWQueueBurst') == '120', block
    assert block.get('HiddenServiceEnableIntroDoSDefense') == '1', block
    assert block.get('HiddenServiceEnableIntroDoSRatePerSec') == '30', block
    assert block.get('HiddenServiceEnableIntroDoSBurstPerSec') == '90', block

    # the new client reaches it, and the descriptor it fetched says PoW
    body, timings['first fetch'] = reach.fetch(address, deadline=FETCH_DEADLINE)
    assert body == http_backend.token
    fetched = reach.received(address)
    assert fetched, 'the client tor holds no descriptor of %s after fetching it' % address
    fetched_inner = _inner(fetched, address)
    params = _pow_params(fetched_inner)
    assert params, 'no pow-params line in the descriptor the client fetched:\n%s' % fetched_inner
    seed, effort, expiration = params
    assert len(base64.b64decode(seed)) == 32 and int(effort) >= 0, params
    pow_line = [ln for ln in fetched_inner.splitlines() if ln.startswith('pow-params ')][0]
    _say('descriptor fetched by the client (revision %d): %s' % (_revision(fetched), pow_line))
    assert _keywords(fetched_inner) <= INNER_KEYWORDS, _keywords(fetched_inner) - INNER_KEYWORDS
    # the service's tor publishes the same parameters (same seed until it rotates)
    _text, own_inner, _ = _wait_descriptor(onion, service_id, address, lambda inner: _pow_params(inner))
    assert _pow_params(own_inner)[0] == seed or _pow_params(own_inner)[2] >= expiration

    # the same again: nothing to change
    again, _ = _apply(tmp_path, _service_task(
        onion, path, http_backend.port,
        **_dos(pow={'enabled': True, 'queue_rate': 50, 'queue_burst': 120},
               intro_dos={'enabled': True, 'rate_per_sec': 30, 'burst_per_sec': 90})))
    assert not again['changed'], again

    # another queue rate: tor's config has it, PoW stays in the descriptor
    rated, timings['module rate'] = _apply(tmp_path, _service_task(
        onion, path, http_backend.port,
        **_dos(pow={'enabled': True, 'queue_rate': 80, 'queue_burst': 120},
               intro_dos={'enabled': True, 'rate_per_sec': 30, 'burst_per_sec': 90})))
    assert rated['changed'], rated
    block = _block(onion, path)
    assert block.get('HiddenServicePoWQueueRate') == '80', block
    assert block.get('HiddenServicePoWDefensesEnabled') == '1', block
    _text, rated_inner, _ = _wait_descriptor(onion, service_id, address, lambda inner: _pow_params(inner))
    _say('after queue rate 80: %s' % [ln for ln in rated_inner.splitlines() if ln.startswith('pow-params')][0])

    # off: gone from tor's config and from the next descriptor tor publishes
    before = _descriptor(onion, service_id, 'service')
    off, timings['module off'] = _apply(tmp_path, _service_task(
        onion, path, http_backend.port, **_dos(pow={'enabled': False})))
    assert off['changed'], off
    block = _block(onion, path)
    assert 'HiddenServicePoWQueueRate' not in block and \
        block.get('HiddenServicePoWDefensesEnabled', '0') == '0', block
    text, off_inner, timings['republished without pow'] = _wait_descriptor(
        onion, service_id, address, lambda inner: _pow_params(inner) is None)
    assert 'pow-params' not in off_inner
    assert text != before
    _say('PoW off: revision %d -> %d, no pow-params line' % (_revision(before), _revision(text)))
    # tor uploads the new descriptor once every intro circuit is established, which may take a while after a
    # reconfiguration; until then the HSDirs serve the one with PoW. The client that has not fetched it yet waits
    # until the HSDirs it asks serve the descriptor the service's tor holds now (it asks them itself: Reach's
    # since=None), then gets the descriptor without PoW. (Waiting for an upload begun after the change was not
    # enough: at a clean-clone run at e188cf2 an upload begun after the mark still carried the descriptor with PoW,
    # built before tor applied the new config, and the client fetched that one.)
    # ... and serve it without PoW: when the service's tor holds the other period's descriptor as its current one
    # (between the SRV run's start and the period's), it cannot say which revision the client's period should have,
    # and an HSDir serving the one with PoW counted as serving the current one: a clean-clone run at a0a170b fetched
    # PoW so. The HSDirs' answers are read as the client reads them (decrypted).
    t0 = time.monotonic()
    late_reach.wait_published([address], since=None, accept=lambda text: _pow_params(_inner(text, address)) is None)
    timings['uploaded without pow'] = time.monotonic() - t0
    body, timings['fetch without pow'] = late_reach.fetch(address, deadline=FETCH_DEADLINE, since=None)
    assert body == http_backend.token
    late_inner = _inner(late_reach.received(address), address)
    assert _pow_params(late_inner) is None, late_inner
    _say('a new client fetched the descriptor without pow-params and was served')


ADD_ONION_POW = 'pow_defenses_enabled' in tor_client.Controller.add_onion.__code__.co_varnames


@pytest.mark.skipif(not ADD_ONION_POW, reason='the module does not send ADD_ONION PoW parameters yet')
def test_ephemeral_pow_in_the_descriptor(privnet, http_backend, tmp_path):
    """An ephemeral service made with pow on (ADD_ONION PoWDefensesEnabled=1, tor 0.4.9.2+): its
    descriptor, from the service's tor and from a client that fetched it, has pow-params; one made
    without has none."""
    onion = privnet.onion
    made = {}
    client = _client_tor(privnet, 'dosephclient')
    reach = Reach(onion, client)
    try:
        for name, pow in (('pow', {'enabled': True, 'queue_rate': 60, 'queue_burst': 150}), ('plain', None)):
            args = {'control_port': onion.control_port, 'cookie_path': onion.cookie_path, 'ephemeral': True,
                    'discard_pk': True, 'ports': [{'port': 80, 'target_port': http_backend.port}]}
            if pow:
                args['pow'] = pow
            result, took = _apply(tmp_path, {'name': 'service', 'register': 'svc',
                                             'onionlab.tor.tor_hidden_service': args})
            assert result['changed'], result
            made[name] = result['onion_address']
            _say('ephemeral %s: module %.1fs' % (name, took))
        sids = dict((k, v[:-len('.onion')]) for k, v in made.items())

        _text, own, took = _wait_descriptor(onion, sids['pow'], made['pow'], lambda inner: True)
        assert _pow_params(own), 'no pow-params in the ephemeral service\'s own descriptor:\n%s' % own
        _text, plain, _ = _wait_descriptor(onion, sids['plain'], made['plain'], lambda inner: True)
        assert _pow_params(plain) is None, plain

        for name in ('pow', 'plain'):
            body, took = reach.fetch(made[name], deadline=FETCH_DEADLINE)
            assert body == http_backend.token
            fetched = reach.received(made[name])
            assert fetched, name
            params = _pow_params(_inner(fetched, made[name]))
            assert bool(params) == (name == 'pow'), (name, params)
            if params:
                _say('ephemeral descriptor fetched by the client: pow-params v1 %s %s %s (first fetch %.1fs)'
                     % (params + (took,)))
    finally:
        reach.close()
        with connect(port=onion.control_port, cookie_path=onion.cookie_path) as c:
            for address in made.values():
                c.del_onion(address[:-len('.onion')])
