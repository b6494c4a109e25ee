#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: tor_onion_client_auth_info
short_description: List a client tor's credentials for v3 onion services with client authorization
version_added: 0.1.0
description:
  - Lists the credentials a client tor holds (C(ONION_CLIENT_AUTH_VIEW), tor 0.4.3 or later), or with O(auth_dir) the
    credential files of a C(ClientOnionAuthDir), in the shape that M(onionlab.tor.tor_onion_client_auth) returns in
    RV(onionlab.tor.tor_onion_client_auth#module:credentials).
  - Each entry's C(address), C(client_name) and C(permanent) are options of M(onionlab.tor.tor_onion_client_auth), so
    a list can be given back to it in a loop (with the private keys from where they are kept) or removed
    (O(onionlab.tor.tor_onion_client_auth#module:state=absent) needs no key).
  - tor's answer holds the private keys; they stay in the module. Only the public half of each key is returned.
author:
  - onionlab.tor contributors (@onionlab)
extends_documentation_fragment:
  - onionlab.tor.control
  - onionlab.tor.attributes
  - onionlab.tor.attributes.INFO_MODULE
  - onionlab.tor.attributes.ACTIONGROUP_TOR
options:
  auth_dir:
    description:
      - Read the credential files of this C(ClientOnionAuthDir) instead of asking tor (tor need not run). Files that
        tor would not load are named in a warning; a missing directory has no credentials.
      - With O(auth_dir), the control connection options are not used (so that O(control_port) set for the
        whole C(group/onionlab.tor.tor) in C(module_defaults) does not get in the way); no connection is made.
    type: path
notes:
  - A credential's C(client_name) exists only in tor's memory; one loaded from C(ClientOnionAuthDir) has none.
seealso:
  - module: onionlab.tor.tor_onion_client_auth
"""

EXAMPLES = r"""
- name: Which onion services can this tor reach with a key?
  onionlab.tor.tor_onion_client_auth_info:
  register: client_auth

- name: Their addresses
  ansible.builtin.debug:
    msg: "{{ client_auth.credentials | map(attribute='address') | list }}"

- name: Drop every credential that does not last beyond a restart
  onionlab.tor.tor_onion_client_auth:
    address: "{{ item.address }}"
    state: absent
  loop: "{{ client_auth.credentials | rejectattr('permanent') | list }}"
"""

RETURN = r"""
credentials:
  description:
    - Every credential, in tor's order (by service id), or with O(auth_dir) by file name.
  returned: success
  type: list
  elements: dict
  contains:
    address:
      description: The service's address, with C(.onion).
      type: str
    service_id:
      description: The address without C(.onion).
      type: str
    client_name:
      description: tor's C(ClientName) of the credential, or null.
      type: str
    permanent:
      description: Whether tor keeps the credential in its C(ClientOnionAuthDir) (always true with O(auth_dir)).
      type: bool
    flags:
      description: tor's flags of the credential.
      type: list
      elements: str
    public_key:
      description: The client's x25519 public key (base32), what the service's C(authorized_clients) lists for it.
      type: str
    path:
      description: With O(auth_dir), the credential's file.
      type: str
  sample:
    - address: 3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd.onion
      service_id: 3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd
      client_name: laptop
      permanent: true
      flags: [Permanent]
      public_key: N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ
auth_dir:
  description: The C(ClientOnionAuthDir), O(auth_dir) or the one tor reports; null when tor has none.
  returned: success
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.onionlab.tor.plugins.module_utils._common import (
    MODULE_ERRORS,
    connect_module,
    control_argument_spec,
    fail,
    module_kwargs,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth as ca


def main():
    module = AnsibleModule(**module_kwargs(
        control_argument_spec(auth_dir=dict(type="path")),
        supports_check_mode=True,
    ))
    directory = module.params["auth_dir"]
    try:
        if directory is not None:
            directory = os.path.normpath(directory)
            if not os.path.isabs(directory):
                module.fail_json(msg="auth_dir must be an absolute path, not %r" % module.params["auth_dir"])
            creds, ignored = ca.read_dir(directory)
            if ignored:
                module.warn("tor cannot use these files of %s (not '<service id>:descriptor:x25519:<key>'): %s"
                            % (directory, ", ".join(ignored)))
        else:
            with connect_module(module) as ctl:
                creds = ca.view(ctl)
                directory = ca.auth_dir(ctl)
    except MODULE_ERRORS as exc:
        fail(module, exc)
    module.exit_json(changed=False, credentials=[c.as_entry() for c in creds], auth_dir=directory)


if __name__ == "__main__":
    main()
