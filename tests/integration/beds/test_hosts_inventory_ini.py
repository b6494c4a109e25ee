# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 31 item 4c: `hosts.py up --privnet --inventory-out FILE.ini` crashed after the hosts were up
(ValueError: an INI inventory list cannot hold 'TestingTorNetwork 1') and left them running. The INI
inventory of a bed joined to the private network (lists of torrc lines, with spaces, in the group's vars)
is written, and ansible-inventory reads back every value as the JSON inventory has it. No bed is brought up:
the inventory is the shape HostBed.inventory() returns."""

import json
import os
import subprocess

from harness.hosts import inventory_ini

JOIN = ["TestingTorNetwork 1", "DirAuthority auth0 orport=5000 no-v2 v3ident=%s 127.0.0.1:7000 %s" % ("A" * 40, "B" * 40),
        "AssumeReachable 1", "PathsNeededToBuildCircuits 0.25"]


def bed_inventory():
    return {'all': {'children': {'testbed': {
        'hosts': {'host1': {'ansible_host': '127.0.0.1', 'ansible_port': 2201, 'testbed_app_ports': [18080, 18081],
                            'testbed_stock': True, 'testbed_apt_packages': ['onionbalance'],
                            'testbed_tor_control_socket': '/run/tor/control'}},
        'vars': {'ansible_user': 'root', 'ansible_host_key_checking': False,
                 'ansible_ssh_common_args': '-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null',
                 'testbed_privnet_joined': True, 'testbed_privnet_torrc_lines': JOIN,
                 'testbed_privnet_dirauthority_lines': [x for x in JOIN if x.startswith('DirAuthority ')]},
    }}}}


def test_a_privnet_bed_inventory_is_written_as_ini_and_read_back(tmp_path):
    inventory = bed_inventory()
    path = tmp_path / "bed.ini"
    path.write_text(inventory_ini(inventory))
    print(path.read_text())
    env = dict(os.environ, ANSIBLE_HOME=str(tmp_path / "home"), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_INVENTORY", None)
    out = subprocess.run(["ansible-inventory", "-i", str(path), "--host", "host1"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, env=env, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    group = inventory['all']['children']['testbed']
    for key, value in list(group['hosts']['host1'].items()) + list(group['vars'].items()):
        assert seen[key] == value, (key, seen.get(key))
