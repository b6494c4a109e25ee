# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service key rotation on the private Tor network (issue 17): the onion_service role with
key: 2 and an overlap serves the old and the new address side by side, each answering through
Tor from privnet's client; once the overlap is over, the new address still answers and the old
one has left the service's tor (and its key the escrow never)."""

import os
import sys

import yaml

from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import onion_service_play, run_playbook
from harness.reach import Reach

FETCH_DEADLINE = float(os.environ.get('ONIONLAB_FETCH_DEADLINE', '90'))


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)


def test_old_and_new_address_both_answer_during_the_overlap(privnet, http_backend, tmp_path):
    onion = privnet.onion
    (tmp_path / 'svc').mkdir(mode=0o700)
    shop = {'name': 'shop', 'ports': [{'port': 80, 'target_port': http_backend.port}]}

    def converge(service):
        run = run_playbook(onion_service_play(onion.control_port, tmp_path, [service],
                                              onion_service_pow_supported=False), tmp_path)
        assert run.rc == 0, run.output
        (entry,) = yaml.safe_load((tmp_path / 'summary.yml').read_text())
        return entry

    reach = Reach(onion, privnet.client)
    try:
        _rotate(reach, converge, shop, onion, http_backend, tmp_path)
    finally:
        reach.close()


def _rotate(reach, converge, shop, onion, http_backend, tmp_path):
    old = converge(shop)['onion_address']
    body, took = reach.fetch(old, deadline=FETCH_DEADLINE)
    assert body == http_backend.token
    _say('generation 1 %s answered %.1fs after its upload' % (old[:12], took))

    during = converge(dict(shop, key=2, previous_until='2999-01-01'))
    new = during['onion_address']
    assert new != old and during['previous_onion_address'] == old
    assert during['onion_location'] == 'http://' + new
    for label, address in (('new', new), ('old', old)):
        body, took = reach.fetch(address, deadline=FETCH_DEADLINE)
        assert body == http_backend.token, label
        _say('overlap: the %s address %s answered %.1fs after its upload' % (label, address[:12], took))

    after = converge(dict(shop, key=2, previous_until='2000-01-01'))
    assert after['onion_address'] == new and 'previous_onion_address' not in after
    with connect(port=onion.control_port, cookie_path=onion.cookie_path) as c:
        dirs = [v for k, v in c.get_conf('HiddenServiceOptions') if k == 'HiddenServiceDir']
    assert str(tmp_path / 'svc' / 'shop') not in dirs and str(tmp_path / 'svc' / 'shop.k2') in dirs
    body, took = reach.fetch(new, deadline=FETCH_DEADLINE)
    assert body == http_backend.token
    for name in ('shop', 'shop.k2'):
        assert (tmp_path / 'escrow' / 'localhost' / name / 'hs_ed25519_secret_key').exists()
        assert (tmp_path / 'escrow' / 'localhost' / name / 'hostname').read_text().strip() == \
            {'shop': old, 'shop.k2': new}[name]
