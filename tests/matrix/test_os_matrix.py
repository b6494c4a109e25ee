# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The OS matrix (issue 21): one host of each release the roles claim, booted from its own
debootstrapped tree (tests/harness/hosts.py, HostBed(suites=...)), joined to the private Tor
network; the tor and onion_service roles converge on all of them in one play, a second run
changes nothing, and every host's onion answers through the private network.

Run by tests/ci/47-matrix.sh (beside 10-pytest, not in it: the first run on a machine builds
the trees, about 6 minutes of download and debootstrap, cached in ~/.cache/onionlab after).
ONIONLAB_MATRIX_SUITES=bookworm,trixie picks releases.
"""

import json
import os
import re
import sys
import time

import pytest
import yaml

from harness import hosts as hb
from harness import privnet as pn
from harness.ansible_run import _tool
from harness.reach import Reach, bed_tor

# the first run on a machine builds three release trees (debootstrap, about 6 minutes in parallel)
pytestmark = pytest.mark.timeout(2400)

SUITES = [s for s in os.environ.get('ONIONLAB_MATRIX_SUITES', 'bookworm,trixie,noble,jammy').split(',') if s]
# what each release ships (measured: docs/maintaining.md "Other releases on the bed"); the roles must not need more
TOR_MAJOR = {'bookworm': '0.4.9', 'trixie': '0.4.9', 'noble': '0.4.8', 'jammy': '0.4.6'}


def _say(msg):
    sys.stderr.write('\n[onionlab] %s\n' % msg)


@pytest.fixture(scope='module')
def matrix(privnet):
    if os.geteuid() != 0:
        pytest.skip('the multi-host bed needs root (systemd-nspawn)')
    hb.ensure_packages()
    bed = hb.HostBed(n=len(SUITES), suites=SUITES, name_prefix='os', privnet_join_lines=privnet.join_torrc_lines())
    bed.up()
    _say('OS matrix up in %.1fs (%s; rootfs %s %.1fs, boot %.1fs)' % (
        bed.timings['total'], ', '.join(SUITES), 'built' if bed.timings['rootfs_built'] else 'cached',
        bed.timings['rootfs'], bed.timings['boot']))
    try:
        yield bed
    finally:
        bed.down()


def _play(escrow):
    return [{
        'hosts': 'all', 'gather_facts': True, 'gather_subset': ['min'],
        'vars': {
            'tor_control_port': '{{ testbed_tor_control_port }}',
            'tor_socks_port': '127.0.0.1:{{ testbed_tor_socks_port }}',
            'tor_config_lines': '{{ testbed_privnet_torrc_lines }}',
            # the bed's torrc is the harness's: the role replaces it, as on every bed host
            'tor_torrc_takeover': True,
            'onion_service_control_port': '{{ testbed_tor_control_port }}',
            'onion_services': [{'name': 'site', 'ports': [{'port': 80, 'target_port': '{{ testbed_app_ports[0] }}'}]}],
            'onion_service_backup_dir': escrow + '/onion-keys',
            'onion_service_summary_file': escrow + '/onion-services.yml',
            # the tor role's MetricsPort (a free port per host, from the test's inventory)
            'tor_metrics_port': '{{ matrix_metrics_port }}',
        },
        'pre_tasks': [
            {'name': 'release', 'ansible.builtin.debug': {
                'msg': 'release {{ inventory_hostname }} {{ ansible_distribution_release }}'}},
            {'name': 'a web server answering its host name', 'ansible.builtin.command':
             'systemd-run --unit=onionlab-web --property=WorkingDirectory=/etc '
             'python3 -m http.server --bind 127.0.0.1 {{ testbed_app_ports[0] }}',
             'args': {'creates': '/run/systemd/transient/onionlab-web.service'}},
        ],
        'roles': ['onionlab.tor.tor', 'onionlab.tor.onion_service'],
        'post_tasks': [
            {'name': 'tor version', 'ansible.builtin.command': 'tor --version', 'changed_when': False,
             'register': 'tor_version'},
            {'name': 'report tor', 'ansible.builtin.debug': {
                'msg': 'tor {{ inventory_hostname }} {{ tor_version.stdout_lines[0] }}'}},
            {'name': 'metrics', 'onionlab.tor.tor_metrics_facts': {'metrics_port': '{{ matrix_metrics_port }}'}},
            {'name': 'report metrics', 'ansible.builtin.debug': {
                'msg': 'metrics {{ inventory_hostname }} {{ tor_metrics.services | list | join(",") }}'}},
        ],
    }]


def _run(bed, book, extra_inventory):
    env = dict(os.environ, ANSIBLE_HOST_KEY_CHECKING='False', ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_DEPRECATION_WARNINGS='False', ANSIBLE_RETRY_FILES_ENABLED='False', ANSIBLE_PIPELINING='True')
    import subprocess
    t0 = time.monotonic()
    p = subprocess.run([_tool('ansible-playbook'), '-i', bed.inventory_path, '-i', str(extra_inventory), str(book)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, env=env, timeout=900, stdin=subprocess.DEVNULL, check=False)
    out = p.stdout.decode('utf-8', 'replace')
    recap = {m.group(1): {k: int(v) for k, v in re.findall(r'(\w+)=(\d+)', m.group(2))}
             for m in re.finditer(r'^(os\d+)\s+:\s+(.*)$', out, re.M)}
    return p.returncode, out, recap, time.monotonic() - t0


def test_roles_converge_idempotent_and_serve_on_every_release(matrix, privnet, tmp_path):
    escrow = tmp_path / 'controller'
    escrow.mkdir(mode=0o700)
    book = tmp_path / 'site.yml'
    book.write_text(json.dumps(_play(str(escrow))))
    names = [h['name'] for h in matrix.hosts]
    ports = pn.free_ports(len(names))
    inventory = tmp_path / 'metrics.json'
    inventory.write_text(json.dumps({'testbed': {'hosts': {n: {'matrix_metrics_port': p}
                                                           for n, p in zip(names, ports)}}}))

    rc, out, recap, first = _run(matrix, book, inventory)
    assert rc == 0, out[-6000:]
    releases = dict(re.findall(r'"msg": "release (os\d+) (\w+)"', out))
    assert releases == {h['name']: h['suite'] for h in matrix.hosts}, out[-3000:]
    versions = dict(re.findall(r'"msg": "tor (os\d+) Tor version (\d+\.\d+\.\d+)', out))
    assert all(versions.get(h['name'], '').startswith(TOR_MAJOR.get(h['suite'], '')) and h['name'] in versions
               for h in matrix.hosts), (versions, out[-3000:])
    assert set(recap) == set(names) and all(r['failed'] == 0 and r['unreachable'] == 0 for r in recap.values())

    rc, out, recap, second = _run(matrix, book, inventory)
    assert rc == 0, out[-6000:]
    assert {n: recap[n]['changed'] for n in names} == {n: 0 for n in names}, out[-6000:]

    summary = yaml.safe_load((escrow / 'onion-services.yml').read_text())
    by_host = {e['host']: e['onion_address'] for e in summary}
    assert set(by_host) == set(names)
    # each host's MetricsPort (the tor role's tor_metrics_port) has its onion service's metrics
    metrics = dict(re.findall(r'"msg": "metrics (os\d+) ([a-z2-7,]*)"', out))
    assert {n: metrics.get(n, '').split(',') for n in names} == {
        n: [by_host[n][:-len('.onion')]] for n in names}, out[-3000:]
    fetched = {}
    for h in matrix.hosts:
        # once the HSDirs the client asks serve the host's descriptor (harness.reach; the host's tor, whose torrc
        # the role wrote, is watched when the harness can reach it)
        with Reach(bed_tor(h), privnet.client, required=False) as reach:
            body, took = reach.fetch(by_host[h['name']], path='/hostname', deadline=120, since=None)
        assert body.strip() == h['name']
        fetched[h['name']] = '%s %.1fs' % (h['suite'], took)
    _say('OS matrix: first run %.1fs, second run %.1fs (changed=0 on %d hosts), onions fetched: %s' % (
        first, second, len(names), ', '.join('%s (%s)' % kv for kv in fetched.items())))
