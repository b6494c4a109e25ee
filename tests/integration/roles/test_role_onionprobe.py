# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onionprobe role's configuration from an inventory, on the controller (ansible-playbook, the role with
onionprobe_install=false and onionprobe_manage_service=false: only Onionprobe's configuration is written):

- every host's onion_services become endpoints (each port 80/443, or the ports, paths and statuses of
  onionprobe_checks), the Onionbalance frontends too, an address from the run's facts or from the escrow;
- services with client authorization, without a web port or without a known address are left out and the role
  says why; launch_tor is false;
- a second run changes nothing, check mode after it neither; a service removed from the inventory leaves the
  configuration; a bad onionprobe_checks entry and a bad option are refused with one message each.
The same role on a real monitoring host of the private network: tests/integration/beds/test_onionprobe_bed.py.
"""

import json

import yaml

from ansible_collections.onionlab.tor.plugins.module_utils._tor.onion import onion_address
from harness.ansible_run import run_playbook

# real v3 addresses: the role's filter checks each with its checksum (onion.is_address)
A1, A2, A3, FRONT = (onion_address(bytes([n]) * 32) + '.onion' for n in (1, 2, 3, 4))
ROLE_VARS = {'onionprobe_install': False, 'onionprobe_manage_service': False}


def inventory(tmp_path, web1_services=None, checks=None):
    web1_services = web1_services if web1_services is not None else [
        {'name': 'shop', 'ports': ['80:8080', {'port': 443, 'target_port': 8443}]},
        {'name': 'ssh', 'ports': [22]},
        {'name': 'api', 'ports': [8080]},
    ]
    hosts = {
        'web1': {'onion_services': web1_services,
                 'onion_service_addresses': {'shop': A1, 'api': A3},
                 'onionprobe_checks': checks if checks is not None else {
                     'shop': {'paths': [{'path': '/health', 'allowed_statuses': [200, 204], 'pattern': 'ok'}],
                              'ports': [80]},
                     'api': {'ports': [8080], 'protocol': 'http'}}},
        'web2': {'onion_services': [
            {'name': 'admin', 'ports': [80], 'clients': [{'name': 'alice', 'hosts': ['monitor']}]},
            {'name': 'blog', 'ports': [80]},
            {'name': 'new', 'ports': [80]},
            {'name': 'old', 'ports': [80], 'state': 'absent'}]},
        'lb': {'onionbalance_address': FRONT, 'onionbalance_backends': ['web1']},
        'monitor': {},
    }
    path = tmp_path / 'inventory.json'
    path.write_text(json.dumps({'all': {'hosts': hosts}}))
    escrow = tmp_path / 'escrow' / 'web2' / 'blog'
    escrow.mkdir(parents=True, exist_ok=True)
    (escrow / 'hostname').write_text(A2 + '\n')
    return path


def play(tmp_path, inv, check=False, **extra):
    role = dict(ROLE_VARS, role='onionlab.tor.onionprobe', onionprobe_config_dir=str(tmp_path / 'etc'),
                onionprobe_backup_dir=str(tmp_path / 'escrow'), **extra)
    return run_playbook([{'hosts': 'localhost', 'gather_facts': False, 'roles': [role]}], tmp_path, check=check,
                        extra_args=['-i', str(inv)])


def config(tmp_path):
    return yaml.safe_load((tmp_path / 'etc' / 'onionlab.yaml').read_text())


def test_endpoints_from_the_inventory(tmp_path):
    inv = inventory(tmp_path)
    run = play(tmp_path, inv)
    assert run.rc == 0, run.output
    conf = config(tmp_path)
    assert conf['launch_tor'] is False and conf['loop'] is True and conf['prometheus_exporter'] is True
    assert (conf['tor_address'], conf['control_port'], conf['socks_port']) == ('127.0.0.1', 9051, 9050)
    assert conf['endpoints'] == {
        'web1/shop:80': {'address': A1, 'protocol': 'http', 'port': 80,
                         'paths': [{'path': '/health', 'allowed_statuses': [200, 204], 'pattern': 'ok'}]},
        'web1/api:8080': {'address': A3, 'protocol': 'http', 'port': 8080,
                          'paths': [{'path': '/', 'allowed_statuses': [200]}]},
        'web2/blog:80': {'address': A2, 'protocol': 'http', 'port': 80,
                         'paths': [{'path': '/', 'allowed_statuses': [200]}]},
        'lb/frontend:80': {'address': FRONT, 'protocol': 'http', 'port': 80,
                           'paths': [{'path': '/', 'allowed_statuses': [200]}]},
    }
    said = run.task('onionlab.tor.onionprobe : What is probed, and what is not (and why)')['result']['msg']
    reasons = dict(('%s/%s' % (s['host'], s['service']), s['reason']) for s in said['not probed'])
    assert sorted(reasons) == ['web1/ssh', 'web2/admin', 'web2/new'], said
    assert reasons['web2/admin'].startswith('client authorization: Onionprobe decrypts the descriptor without client')
    assert reasons['web1/ssh'].startswith('no web port (80 or 443)')
    assert reasons['web2/new'] == 'address not known yet (run onionlab.tor.onion_service on web2 first)'
    # idempotent, and check mode clean after it
    again = play(tmp_path, inv)
    assert again.rc == 0 and again.stats['localhost']['changed'] == 0, again.output
    checked = play(tmp_path, inv, check=True)
    assert checked.rc == 0 and checked.stats['localhost']['changed'] == 0, checked.output


def test_a_removed_service_leaves_the_probe(tmp_path):
    assert play(tmp_path, inventory(tmp_path)).rc == 0
    inv = inventory(tmp_path, web1_services=[{'name': 'api', 'ports': [8080]}], checks={'api': {'ports': [8080]}})
    checked = play(tmp_path, inv, check=True)
    assert checked.rc == 0 and checked.stats['localhost']['changed'] == 1, checked.output
    run = play(tmp_path, inv)
    assert run.rc == 0 and run.stats['localhost']['changed'] == 1, run.output
    assert sorted(config(tmp_path)['endpoints']) == ['lb/frontend:80', 'web1/api:8080', 'web2/blog:80']


def test_bad_checks_refused_with_one_message(tmp_path):
    cases = [
        ({'shop': {'path': '/'}}, "onionprobe: host web1, service shop: unknown key(s) path in onionprobe_checks "
                                  "(known: ports, protocol, paths, probe)"),
        ({'shopp': {}}, "onionprobe: host web1: onionprobe_checks names shopp, which is not one of its onion_services "
                        "(shop, ssh, api)"),
        ({'shop': {'ports': [81]}}, "onionprobe: host web1, service shop: port(s) 81 are not ports of the service "
                                    "(it has 80, 443)"),
        ({'shop': {'paths': [{'path': 'health'}]}}, "onionprobe: host web1, service shop: path must start with / and "
                                                    "be one line, got 'health'"),
        ({'shop': {'paths': [{'path': '/', 'allowed_statuses': [700]}]}},
         "onionprobe: host web1, service shop: allowed_statuses of / must be HTTP statuses (100-599), got [700]"),
        ({'shop': {'protocol': 'gopher'}}, "onionprobe: host web1, service shop: protocol must be http or https "
                                           "(Onionprobe probes nothing else), got 'gopher'"),
    ]
    for checks, msg in cases:
        run = play(tmp_path, inventory(tmp_path, checks=checks))
        assert run.rc != 0
        assert msg in run.stdout, (msg, run.output)
        assert 'Traceback' not in run.output
        assert not (tmp_path / 'etc' / 'onionlab.yaml').exists()
    run = play(tmp_path, inventory(tmp_path), onionprobe_install_method='docker')
    assert run.rc != 0 and 'onionprobe_install_method' in run.stdout and 'docker' in run.stdout, run.output
    run = play(tmp_path, inventory(tmp_path), onionprobe_exporter_port=9051)
    assert run.rc != 0 and "the exporter's differ from tor's" in run.stdout, run.output
