#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: onion_adopt
short_description: Make the onion services a host's tor runs into onion_service role entries, and import vanity keys
version_added: 0.2.0
description:
  - The first step of adopting existing onion services (an action plugin; the playbook C(onionlab.tor.adopt) runs it,
    then the P(onionlab.tor.onion_service#role) role with C(onion_service_adopt) and the P(onionlab.tor.tor#role)
    role). It asks the host's tor what it runs (M(onionlab.tor.tor_hidden_service_info)) and makes each persistent
    service an entry of C(onion_services) exactly as tor runs it, with the same name (its directory's), ports,
    options (proof of work stated even when off) and clients (C(name) and C(public_key) of each file of its
    C(authorized_clients) directory). It writes them to O(host_vars_dir)C(/HOST/onion_services.yml) (with
    C(onion_service_dir) when the services are not in C(/var/lib/tor)) and sets them as the facts
    C(onion_adopt_services) and C(onion_adopt_service_dir).
  - Refused, before anything is written, naming the fix, are services in more than one directory (the role keeps a host's
    services in one), a directory name the role cannot keep, a client file name the role cannot keep, a service whose
    address cannot be read, a host that declares C(onion_services) already (the adoption writes a host's first
    declaration; its entries are returned for merging by hand), an existing host_vars file that says otherwise.
  - Ephemeral services are left out (their keys live in tor's memory), listed in RV(left_out); so are services
    the host declares already.
  - O(import_keys) brings keys made elsewhere (a vanity generator such as mkp224o or Onionmine, an C(ED25519-V3:)
    blob); each is verified first (the address the secret key gives must be the given hostname's, checksum and
    version byte included, and the public key file, when there, must be the secret key's; else one refusal and
    nothing written), then written to the escrow (sealed with ansible-vault when the run has a vault password)
    for the role to restore on the host, and declared like the adopted ones.
  - No key is ever in its result, its messages or the host_vars file.
author:
  - onionlab.tor contributors (@onionlab)
extends_documentation_fragment:
  - onionlab.tor.attributes
  - onionlab.tor.attributes.ACTION
attributes:
  check_mode:
    support: full
    details:
      - Says what it would write (RV(adopted), RV(imported), the diff), writes nothing.
  diff_mode:
    support: full
    details:
      - The host_vars file it writes (no key is in it).
options:
  backup_dir:
    description: The escrow (the onion_service role's C(onion_service_backup_dir)); required. Not a directory below
      C(playbook_dir) of the collection's own playbook (that is the installed collection).
    type: path
  backup_vault_id:
    description: The vault id imported keys are sealed with (C(onion_service_backup_vault_id)); empty for the run's
      first vault secret.
    type: str
    default: ""
  backup_plaintext:
    description: As the role's C(onion_service_backup_plaintext), for imported keys written without a vault password.
    type: bool
    default: false
  host_vars_dir:
    description: The inventory's C(host_vars) directory; by default C(host_vars) beside the inventory (C(inventory_dir)).
    type: path
  write_host_vars:
    description: Write the host_vars file. With V(false) the entries are only returned (RV(adopted)) and set as facts.
    type: bool
    default: true
  declared:
    description: The host's C(onion_services) from the inventory (the playbook passes them); services of those names
      are left out.
    type: list
    elements: raw
    default: []
  service_dir_default:
    description: The role's default C(onion_service_dir); the host_vars file names the services' directory only when it
      differs.
    type: path
    default: /var/lib/tor
  import_keys:
    description: Keys made elsewhere, each a service of its own on the host.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The service's name (its directory under C(onion_service_dir)).
        type: str
        required: true
      ports:
        description: Its ports, as the role's C(onion_services[].ports).
        type: list
        elements: raw
        required: true
      key_dir:
        description: A directory on the controller as a vanity generator writes it (C(hs_ed25519_secret_key),
          C(hostname), and C(hs_ed25519_public_key) checked when there).
        type: path
      private_key:
        description: The key as an C(ED25519-V3:) blob (what C(ADD_ONION) returns); needs O(import_keys[].hostname).
        type: str
      hostname:
        description: The address the O(import_keys[].private_key) must give.
        type: str
  control_port:
    description: The host tor's control port (by default the info module's).
    type: int
  control_socket:
    description: The host tor's control socket.
    type: path
  control_password:
    description: The control port's password.
    type: str
seealso:
  - ref: ansible_collections.onionlab.tor.docsite.guide_adopt
    description: Adopting existing onion services.
  - module: onionlab.tor.tor_hidden_service_info
"""

EXAMPLES = r"""
- name: What the host's tor runs, made into onion_services
  onionlab.tor.onion_adopt:
    backup_dir: "{{ inventory_dir }}/onion-keys"
    declared: "{{ onion_services | default([]) }}"
  become: true
"""

RETURN = r"""
adopted:
  description: The role's entries made of the services the host's tor runs (no key in them).
  returned: always
  type: list
  elements: dict
imported:
  description: The imported keys' services (C(name), C(onion_address)).
  returned: always
  type: list
  elements: dict
left_out:
  description: Services not adopted (C(service), C(why)).
  returned: always
  type: list
  elements: dict
host_vars_file:
  description: The host_vars file written, or that holds the same already; null when none was written.
  returned: always
  type: str
backup_dir:
  description: The escrow.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.onionlab.tor.plugins.module_utils._onion_adopt_args import ARGUMENT_SPEC


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="onionlab.tor.onion_adopt runs from its action plugin; it has nothing to do alone on a host")


if __name__ == "__main__":
    main()
