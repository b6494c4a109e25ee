#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: escrow_drill
short_description: Prove the controller's escrow of onion service keys against the inventory, on a scratch tor
version_added: 0.2.0
description:
  - A restore drill, run on the controller (an action plugin; nothing runs on a host, nothing is written). For every
    host of O(hosts) and every key generation of its O(services_var) (the P(onionlab.tor.onion_service#role) role's
    C(onion_services)) that tor would serve, the escrow in O(backup_dir) must hold the key and its C(hostname), the
    key must be a whole tor key file giving that address (the check the role's restore makes), and a scratch tor
    on the controller (C(DisableNetwork 1), a temporary data directory, stopped by its PID) must load it with
    C(ADD_ONION) and give the same address. With O(summary_file), the role's summary must name the same address.
    Every client key the escrow must hold (C(onion_services[].clients), C(authorized_clients) without a public key)
    must be there and be an x25519 key. Every Onionbalance frontend key the escrow holds, and every frontend the
    inventory declares (a host that sets C(onionbalance_backends), its C(onionbalance_name)), is drilled the same way.
  - Escrowed keys sealed with ansible-vault are opened with the run's vault secrets.
  - "The task fails, listing each gap, when any declared service or client could not be restored from the escrow.
    Keys of no declared service (a service removed from the inventory, a host gone) are listed in RV(undeclared)
    and do not fail it: the role keeps them on purpose."
  - The playbook C(onionlab.tor.restore_drill) runs it (C(ansible-playbook onionlab.tor.restore_drill)).
  - No key is ever in its result or its messages.
author:
  - onionlab.tor contributors (@onionlab)
extends_documentation_fragment:
  - onionlab.tor.attributes
  - onionlab.tor.attributes.ACTION
attributes:
  check_mode:
    support: full
    details:
      - It writes nothing; check mode runs the same drill.
  diff_mode:
    support: N/A
    details:
      - It writes nothing.
options:
  backup_dir:
    description: The escrow (the onion_service role's C(onion_service_backup_dir)); by default the
      C(onion_service_backup_dir) of the first drilled host that sets it in the inventory.
    type: path
  hosts:
    description: The inventory hosts whose services are drilled; by default every host that has O(services_var).
    type: list
    elements: str
  services_var:
    description: The variable that holds each host's onion services.
    type: str
    default: onion_services
  summary_file:
    description: The onion_service role's summary file, whose addresses must agree with the escrow's (none when
      empty or absent).
    type: path
  tor:
    description: Load every key in a scratch tor on the controller (it needs tor there, C(apt-get install tor)). With
      V(false) only the files are checked, and the result says so (RV(tor_checked)).
    type: bool
    default: true
  tor_binary:
    description: The tor binary of the controller.
    type: str
    default: tor
seealso:
  - ref: ansible_collections.onionlab.tor.docsite.guide_key_backup
    description: Back up and restore onion service keys.
"""

EXAMPLES = r"""
- name: The escrow proved against the inventory
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Every declared service's key restorable from the escrow
      onionlab.tor.escrow_drill:
        backup_dir: "{{ playbook_dir }}/onion-keys"
        summary_file: "{{ playbook_dir }}/onion-services.yml"
"""

RETURN = r"""
services:
  description: One entry per key generation of a declared service.
  returned: always
  type: list
  elements: dict
  contains:
    host:
      description: The inventory host.
      type: str
    service:
      description: The service's name.
      type: str
    directory:
      description: Its directory in the escrow, the service's name or C(NAME.kN) for a later key.
      type: str
    generation:
      description: C(current) or C(previous).
      type: str
    address:
      description: The address the escrowed key gives.
      type: str
    tor_address:
      description: The address the scratch tor gave it, null when tor was not asked.
      type: str
    problem:
      description: Why a rebuilt host could not get this address back from the escrow; null when it could.
      type: str
clients:
  description: One entry per client key the escrow must hold (client, escrow path, problem).
  returned: always
  type: list
  elements: dict
frontends:
  description: One entry per Onionbalance frontend key (C(frontend), its C(onionbalance_name); C(escrow), C(address),
    C(tor_address), C(problem)), every one the escrow holds (C(onionbalance/NAME/)) and every one the inventory
    declares (a host that sets C(onionbalance_backends)).
  returned: always
  type: list
  elements: dict
undeclared:
  description: Escrowed keys of no declared service (host, directory, escrow path).
  returned: always
  type: list
  elements: dict
gaps:
  description: How many declared services and clients could not be restored.
  returned: always
  type: int
tor_checked:
  description: Whether every key was loaded in a scratch tor.
  returned: always
  type: bool
report:
  description: What the drill proved, a line each (the summary, then each escrowed key of no declared service).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.onionlab.tor.plugins.module_utils._escrow_drill_args import ARGUMENT_SPEC


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="onionlab.tor.escrow_drill runs on the controller only (its action plugin); it has nothing "
                         "to do on a host")


if __name__ == "__main__":
    main()
