#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: onion_service_deploy
short_description: The onion_service role's work on one host, in one task
version_added: 0.2.0
description:
  - What the P(onionlab.tor.onion_service#role) role does on a host, as one task with an action plugin. It is
    meant to be called by that role; use the role. The task takes the role's variables without the
    C(onion_service_) prefix (C(services) for O(onionlab.tor.onion_service#role:main:onion_services), C(service_dir)
    for O(onionlab.tor.onion_service#role:main:onion_service_dir)), checked against the role's argument spec;
    the options below are the request the action plugin sends the host.
  - "On the controller: play variables that look like the role's but are not, the clients of the services and their
    keys in the controller's escrow (made there when missing), each service's key generations and profile (the
    role's O(onionlab.tor.onion_service#role:main:onion_service_defaults), proof of work). Then one run on the host,
    where M(onionlab.tor.tor_hidden_service)'s code does the work: whether this user may write the service directory
    and the drop-in's directory (nothing else is done when not: RV(denied)); the role's record (O(state_file)) for
    pruning; every entry checked by tor's rules before anything is written; the services marked absent and the
    pruned ones removed (keys kept); the listed services in one atomic change, an escrowed key installed only where
    a directory holds none (never over a key) and only when it gives the escrowed address (checked on the
    controller; otherwise the run is refused before anything is written); the record written back; the keys that
    the escrow lacks or holds differently sent back. Last, on the controller, those keys (0600 in 0700 directories)
    and each service's C(hostname) in the escrow."
  - Keys never appear in its result, its messages or its diff.
author:
  - onionlab.tor contributors (@onionlab)
extends_documentation_fragment:
  - onionlab.tor.control
  - onionlab.tor.attributes
  - onionlab.tor.attributes.FACTS
  - onionlab.tor.attributes.ACTION
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details:
      - One diff per change of tor's services (removals, then the listed services); never a key.
options:
  service_dir:
    description: The role's O(onionlab.tor.onion_service#role:main:onion_service_dir).
    type: path
    default: /var/lib/tor
  prune:
    description: The role's O(onionlab.tor.onion_service#role:main:onion_service_prune).
    type: bool
    default: true
  remove_all:
    description: The role's O(onionlab.tor.onion_service#role:main:onion_service_remove_all).
    type: bool
    default: false
  state_file:
    description: The role's O(onionlab.tor.onion_service#role:main:onion_service_state_file); none kept when not given.
    type: path
  restore:
    description: The role's O(onionlab.tor.onion_service#role:main:onion_service_restore).
    type: bool
    default: true
  adopt:
    description: The role's O(onionlab.tor.onion_service#role:main:onion_service_adopt).
    type: bool
    default: false
  config_file:
    description: The role's O(onionlab.tor.onion_service#role:main:onion_service_config_file).
    type: path
    default: /etc/tor/torrc.d/onionlab_hidden_services.conf
  pow:
    description: The role's O(onionlab.tor.onion_service#role:main:onion_service_pow).
    type: bool
    default: true
  pow_supported:
    description: The role's O(onionlab.tor.onion_service#role:main:onion_service_pow_supported).
    type: bool
  tor_binary:
    description: The role's O(onionlab.tor.onion_service#role:main:onion_service_tor_binary).
    type: str
    default: tor
  entries:
    description: Set by the action plugin (the services for the host, as M(onionlab.tor.tor_hidden_service)'s
      O(onionlab.tor.tor_hidden_service#module:services) without keys); what a task gives is replaced.
    type: list
    elements: dict
    default: []
  absent:
    description: Set by the action plugin (the service directories marked absent).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: A service directory.
        type: path
        required: true
      purge:
        description: Delete its keys on the host too.
        type: bool
        default: false
  keys:
    description: Set by the action plugin (the vault keys by service directory).
    type: dict
    default: {}
  escrow_keys:
    description: Set by the action plugin (the escrowed keys by service directory, installed only where a
      directory holds no key).
    type: dict
    default: {}
  escrow_refused:
    description: Set by the action plugin (why the escrowed key of a service directory was not sent in
      O(escrow_keys), a key file that is not one or a key that does not give the escrowed address). Where such a
      directory holds no key, the run is refused before anything is written.
    type: dict
    default: {}
  escrow_sums:
    description: Set by the action plugin (the SHA-256 of each escrowed key file by service directory; the
      keys that differ are sent back, sealed to O(escrow_seal)). Not given, nothing is sent back.
    type: dict
  escrow_seal:
    description: Set by the action plugin (the controller's one-time x25519 public key, base64; the keys sent
      back are sealed to it, so that no key crosses the connection in clear). Required with O(escrow_sums).
    type: str
  access_only:
    description: Set by the action plugin (only check whether this user may write where the role writes).
    type: bool
    default: false
notes:
  - The controller's escrow is written by the action plugin, never by the host.
seealso:
  - module: onionlab.tor.tor_hidden_service
"""

EXAMPLES = r"""
# The role calls it with its variables (without the onion_service_ prefix); as a task of its own:
- name: The services of this host
  onionlab.tor.onion_service_deploy:
    services:
      - name: web
        ports: [{port: 80, target_port: 8080}]
    backup_dir: "{{ playbook_dir }}/onion-keys"
    state_file: /etc/tor/torrc.d/.onionlab_hidden_services.conf.role-owned.json
  become: true
"""

RETURN = r"""
ansible_facts:
  description: The facts the role sets.
  returned: success
  type: dict
  contains:
    onion_service_addresses:
      description: Service name to its address (current key generation).
      type: dict
    onion_service_previous_addresses:
      description: Service name to the address of its previous key generation, while that is served.
      type: dict
    onion_service_directory_addresses:
      description: Service directory name to its address.
      type: dict
denied:
  description: The paths this user cannot write (nothing else was done); empty when it can.
  returned: always
  type: list
  elements: str
present:
  description: The key generations served, for the role's summary (service, key, generation, ports, previous_until).
  returned: success
  type: list
  elements: dict
tor_version:
  description: The version of the tor that runs the services (C(GETINFO version)), for the role's summary file.
  returned: success
  type: str
  sample: 0.4.9.11
restored:
  description: The service directories whose key came back from the controller's escrow.
  returned: success
  type: list
  elements: str
pruned:
  description: The services the role made that are no longer listed (removed from tor when O(prune)).
  returned: success
  type: list
  elements: str
client_key_files:
  description: Where the keys of authorized clients given without a public key are kept in the escrow.
  returned: success
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.onionlab.tor.plugins.module_utils import _onion_service_deploy as deploy
from ansible_collections.onionlab.tor.plugins.module_utils._common import MODULE_ERRORS, connect_module, fail
from ansible_collections.onionlab.tor.plugins.module_utils._hidden_service_args import services_element_spec
from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_manager as sm


def _entries(module):
    """The entries checked and typed as tor_hidden_service's services (without keys)."""
    spec = services_element_spec()
    spec.pop("private_key", None)
    validator = ArgumentSpecValidator(spec)
    out = []
    for entry in module.params["entries"]:
        checked = validator.validate(entry)
        if checked.error_messages:
            module.fail_json(msg="the service %s: %s" % (entry.get("path"), "; ".join(checked.error_messages)),
                             stage="refused")
        huge = _huge_numbers(checked.validated_parameters)
        if huge:
            # a number of thousands of digits is beyond every limit of tor, and Python refuses to write it out
            # (int_max_str_digits): fail_json would crash on the parameters that hold it
            module.params["entries"] = []
            module.fail_json(msg="the service %s: %s must be between tor's limits, got a number of %d bits"
                             % (entry.get("path"), huge[0][0], huge[0][1]), stage="refused")
        out.append(checked.validated_parameters)
    return out


def _huge_numbers(value, name=""):
    """[(the option's name, its bits)] of every integer beyond 64 bits in value (a dict or list, nested)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [(name, value.bit_length())] if value.bit_length() > 64 else []
    if isinstance(value, dict):
        return [h for k in value for h in _huge_numbers(value[k], "%s.%s" % (name, k) if name else str(k))]
    if isinstance(value, (list, tuple)):
        return [h for i, v in enumerate(value) for h in _huge_numbers(v, "%s[%d]" % (name, i))]
    return []


def _stdout_of(module):
    def run(argv):
        rc, out, _err = module.run_command(argv, handle_exceptions=False)   # OSError: no such program
        return out if rc == 0 else ""
    return run


def main():
    module = AnsibleModule(argument_spec=deploy.argument_spec(),
                           mutually_exclusive=[("control_port", "control_socket")],
                           required_by={"escrow_sums": "escrow_seal"}, supports_check_mode=True)
    p = module.params
    denied = deploy.denied([p["service_dir"], os.path.dirname(p["config_file"])])
    if denied or p["access_only"]:
        module.exit_json(changed=False, denied=denied)
    p["entries"] = _entries(module)
    try:
        with connect_module(module) as ctl:
            def manager_for(check_mode):
                return sm.PersistentManager(ctl, config_file=p["config_file"], check_mode=check_mode,
                                            run_command=_stdout_of(module), adopt=p["adopt"])
            result = deploy.deploy(p, manager_for, module.check_mode, module._diff, _stdout_of(module))
    except deploy.Refused as exc:
        module.fail_json(msg=str(exc), stage=exc.stage, **exc.details)
    except deploy.ApplyFailed as exc:
        module.fail_json(msg=str(exc), stage="apply", restored=exc.restored)
    except MODULE_ERRORS as exc:
        fail(module, exc, stage="apply", restored=[])
    for warning in result.pop("warnings"):
        module.warn(warning)
    if not module._diff:
        result.pop("diff")
    module.exit_json(denied=[], **result)


if __name__ == "__main__":
    main()
