#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: tor_hidden_service
short_description: Create, change and remove Tor onion services (v3)
version_added: 0.1.0
description:
  - Manages v3 onion services of a running tor through its control port.
  - B(Persistent) services (a C(HiddenServiceDir) with its keys) are applied live with one atomic C(SETCONF)
    of tor's whole HiddenService block, so other services keep running and tor is not restarted. So that they
    survive a restart without rewriting the operator's torrc, the module keeps the services it manages in a
    drop-in file (O(config_file)) and makes sure that torrc C(%include)s it (one line appended, once;
    see O(include_config_file)). Services defined in torrc itself are left alone and cannot be managed here.
  - B(Ephemeral) services (O(ephemeral=true)) are created with C(ADD_ONION), always detached (C(Flags=Detach)) so
    that they outlive the module's control connection; they last until tor stops.
  - A key directory is never removed unless O(purge=true).
author:
  - onionlab.tor contributors (@onionlab)
extends_documentation_fragment:
  - onionlab.tor.control
  - onionlab.tor.hidden_service
  - onionlab.tor.hidden_service.services
  - onionlab.tor.attributes
  - onionlab.tor.attributes.ACTIONGROUP_TOR
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details:
      - The diff shows the services' configuration before and after, client names and the lines appended to torrc
        (the C(%include) of O(config_file)); never a key.
options:
  path:
    description:
      - The service directory (C(HiddenServiceDir)) of a persistent service, an absolute path.
      - A missing directory is created with mode C(0700) and owned by tor's C(User), so that a tor that drops
        privileges can use it; its parent must exist. An existing directory with a wrong owner or mode is
        reported, not changed.
      - Mutually exclusive with O(services) and O(ephemeral).
    type: path
  state:
    description:
      - Whether the service should exist.
      - With V(absent), a persistent service is removed from tor's configuration and its directory is kept
        unless O(purge=true); an ephemeral one is removed with C(DEL_ONION).
    type: str
    choices: [present, absent]
    default: present
  purge:
    description:
      - With O(state=absent), also delete the service directory and its keys. The .onion address is lost
        for good.
    type: bool
    default: false
  prune:
    description:
      - With O(services), also remove the persistent services that this module manages (those in O(config_file))
        but that are not in O(services). Services defined elsewhere (torrc) are left alone. Keys are kept.
    type: bool
    default: false
  exclusive:
    description:
      - With O(services), make tor's HiddenService configuration exactly that list, atomically; every other
        persistent service is removed from tor's configuration (its keys are kept).
    type: bool
    default: false
  ephemeral:
    description:
      - Create an ephemeral service with C(ADD_ONION) instead of a persistent one.
      - With O(private_key) the module derives the address locally and does nothing when tor already runs that
        service with that configuration. Without it tor generates a key and every run creates a new service.
    type: bool
    default: false
  private_key:
    description:
      - The service's key as tor writes it, C(ED25519-V3:) followed by the base64 of the 64-byte expanded ed25519 key
        (what C(ADD_ONION) returns). Never logged or returned.
      - For an ephemeral service, the key to create it with.
      - For a persistent service, installed in its directory (C(hs_ed25519_secret_key), mode C(0600)) when the
        directory has no key yet, for example from a vault. A directory that holds a different key is an error;
        a key is never overwritten.
    type: str
  service_id:
    description:
      - For O(state=absent) of an ephemeral service, its address without C(.onion) (or give O(private_key)).
    type: str
  discard_pk:
    description:
      - For an ephemeral service whose key tor generates, do not even ask tor for the key (C(Flags=DiscardPK)).
    type: bool
    default: false
  return_private_key:
    description:
      - For an ephemeral service whose key tor generates, return it as RV(private_key). Use C(no_log) on the
        task.
    type: bool
    default: false
  keep_key:
    description:
      - For an ephemeral service, keep its key on the host (O(private_key), or the key tor generates) in
        O(key_dir)C(/<service id>.key), mode C(0600) in a directory C(0700) of the module's user (root's with
        C(become)), written atomically and never through a link; never returned or logged. The
        P(onionlab.tor.onion_watchdog#role) role's watchdog adds the service back from it, with the same address,
        after tor restarts (an ephemeral service is otherwise gone with the tor that ran it).
      - V(false) removes a kept key of the service; removing the service (O(state=absent)) removes it too.
    type: bool
    default: false
  key_dir:
    description:
      - The directory of the keys O(keep_key) keeps (the watchdog reads the same one).
    type: path
    default: /var/lib/onionlab/ephemeral-keys
  client_auth_v3:
    description:
      - For an ephemeral service, the x25519 public keys (base32) of the clients allowed to reach it.
    type: list
    elements: str
  persist:
    description:
      - Keep the persistent services this module manages in O(config_file) so that they survive a restart of tor.
      - With V(false) they live only in tor's running configuration.
    type: bool
    default: true
  config_file:
    description:
      - The drop-in file that holds the managed services; written atomically, never partially.
      - Use one file per tor instance.
    type: path
    default: /etc/tor/torrc.d/onionlab_hidden_services.conf
  lock_timeout:
    description:
      - How long, in seconds, a run waits for the other runs of this collection that are changing the same tor's
        services (every change holds one lock per tor on the host, whatever O(config_file) it uses, so that runs at
        the same moment lose nothing).
      - The lock is released when its holder exits, however it exits; only a run that hangs while holding it
        makes others wait. After this time the run fails, changing nothing, with the PID and command line of the
        process that holds the lock.
    type: float
    default: 120
  include_config_file:
    description:
      - Append a C(%include) line for O(config_file) to tor's torrc (C(GETINFO config-file)) when neither it nor a
        file it includes names it yet. The rest of torrc is never rewritten.
      - With V(false) the module warns when the include is missing.
    type: bool
    default: true
notes:
  - Tor can only use a service directory it may write. Debian's C(tor@default) unit lets it write only below
    C(/var/lib/tor), C(/var/log/tor) and C(/run) (C(ProtectSystem=full), C(ReadOnlyDirectories=/)), and its AppArmor
    profile C(system_tor), where AppArmor is active, only below C(/var/lib/tor/); given another directory, tor exits.
    So before anything is sent, when tor runs on the target, the module reads where it may write (the mounts of
    tor's mount namespace, C(/proc/PID/mountinfo), and its AppArmor profile) and refuses a new O(path) outside it,
    naming the allowed places and the fix (a directory below C(/var/lib/tor), or a C(ReadWritePaths=) drop-in for
    the unit).
  - Tor does not report the ports of ephemeral services; the module records what it asked for in
    C(onionlab-ephemeral-services.json) in tor's DataDirectory (no keys) to answer idempotently.
seealso:
  - module: onionlab.tor.tor_hidden_service_info
  - name: Tor manual, hidden service options
    description: HiddenServiceDir, HiddenServicePort and related options.
    link: https://2019.www.torproject.org/docs/tor-manual.html.en#_hidden_service_options
"""

EXAMPLES = r"""
- name: An onion service for the local web server
  onionlab.tor.tor_hidden_service:
    path: /var/lib/tor/web
    ports:
      - port: 80
        target_port: 8080
  register: web

- name: Show its address
  ansible.builtin.debug:
    msg: "{{ web.onion_address }}"

- name: The same ports in their short forms (22 to 127.0.0.1:22, 80 to 127.0.0.1:8080, 443 to a unix socket)
  onionlab.tor.tor_hidden_service:
    path: /var/lib/tor/short
    ports:
      - 22
      - "80:8080"
      - "443:unix:/run/web-tls.sock"

- name: SSH and HTTP on one service, two clients allowed (one key generated and returned once)
  onionlab.tor.tor_hidden_service:
    path: /var/lib/tor/admin
    ports:
      - port: 22
      - port: 80
        target_address: unix:/run/admin-web.sock
    authorized_clients:
      - name: alice
        public_key: N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ
      - name: bob
  no_log: true
  register: admin

- name: A backend of an Onionbalance frontend (writes ob_config, sets HiddenServiceOnionbalanceInstance 1)
  onionlab.tor.tor_hidden_service:
    path: /var/lib/tor/shop
    ports:
      - "80:8080"
    onionbalance_frontend: 3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd.onion

- name: Remove a service but keep its keys
  onionlab.tor.tor_hidden_service:
    path: /var/lib/tor/old
    state: absent

- name: An ephemeral service with a key from the vault
  onionlab.tor.tor_hidden_service:
    ephemeral: true
    private_key: "{{ vault_onion_key }}"
    ports:
      - port: 80
        target_port: 8080

- name: Recreate exactly the services another host had
  onionlab.tor.tor_hidden_service:
    services: "{{ info.hidden_services | selectattr('type', 'equalto', 'persistent') | list }}"
    exclusive: true
"""

RETURN = r"""
onion_address:
  description: The service's address (56 base32 characters and C(.onion)), read from its C(hostname) file and checked
    against its public key; in check mode also the address of a key to be installed (O(private_key)); null when it
    could not be read or is not known yet (check mode, tor to generate the key) or for an absent service.
  returned: success
  type: str
  sample: 3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd.onion
service:
  description: The service's whole configuration, in the shape M(onionlab.tor.tor_hidden_service_info) returns;
    null for an absent service.
  returned: success, when one service is managed
  type: dict
  sample: {"type": "persistent", "path": "/var/lib/tor/web", "ports": [{"port": 80, "target_address": "127.0.0.1",
    "target_port": 8080}], "onion_address": "3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd.onion"}
services:
  description: With O(services), every persistent service tor runs afterwards, in tor's order.
  returned: success, with O(services)
  type: list
  elements: dict
private_key:
  description: The key tor generated for an ephemeral service, only with O(return_private_key=true).
  returned: when tor generated a key and O(return_private_key=true)
  type: str
generated_clients:
  description: Client key pairs generated for O(authorized_clients) entries without a public key, returned only on the
    run that created them. The C(auth_private) line goes into the client's C(ClientOnionAuthDir).
  returned: success
  type: list
  elements: dict
  contains:
    service:
      description: The service directory.
      type: str
    name:
      description: The client's name.
      type: str
    public_key:
      description: The client's x25519 public key (base32).
      type: str
    private_key:
      description: The client's x25519 private key (base32). A secret.
      type: str
    auth_private:
      description: The client's C(.auth_private) line.
      type: str
tor:
  description: What the services depend on tor-wide.
  returned: success
  type: dict
  contains:
    version:
      description: The version of the tor the module talked to.
      type: str
      sample: 0.4.9.11
    non_anonymous:
      description:
        - Whether that tor runs with C(HiddenServiceNonAnonymousMode 1), so that every one of its onion services
          is single-hop and B(not anonymous) (its location is not hidden). Set in torrc, never by this module.
      type: bool
      sample: false
purged:
  description: Service directories deleted because of O(purge=true); in check mode, those that would be deleted.
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.onionlab.tor.plugins.module_utils import _hidden_service_backend as backend
from ansible_collections.onionlab.tor.plugins.module_utils._common import (
    MODULE_ERRORS,
    connect_module,
    control_argument_spec,
    fail,
    module_kwargs,
)
from ansible_collections.onionlab.tor.plugins.module_utils._hidden_service_args import (
    SERVICE_OPTIONS,
    services_element_spec,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor import tor_facts
from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc


def _ephemeral_result(module, result, out):
    p = module.params
    result.update(changed=out["changed"], service=out["service"], tor=out["tor"],
                  onion_address=(out["service"] or {}).get("onion_address"))
    if out["private_key"] and p["return_private_key"]:
        result["private_key"] = out["private_key"]
    if module._diff:
        result["diff"] = out["diff"]


def _persistent_result(module, result, out, warnings):
    result["changed"] = out["changed"]
    result["purged"] = out["purged"]
    result["generated_clients"] = out["generated_clients"]
    if any(g["auth_private"] is None for g in out["generated_clients"]):
        module.warn("the address of a service with generated client keys could not be read, so their "
                    "auth_private lines are null: build them as <service id>:descriptor:x25519:<private_key>")
    if module._diff:
        result["diff"] = out["diff"]
    for warning in warnings:
        module.warn(warning)


def _stdout_of(module):
    """run(argv) -> its standard output, for the capability check's tor --list-modules."""
    def run(argv):
        _rc, out, _err = module.run_command(argv)
        return out
    return run


def main():
    spec = control_argument_spec(
        path=dict(type="path"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        purge=dict(type="bool", default=False),
        services=dict(type="list", elements="dict", options=services_element_spec()),
        exclusive=dict(type="bool", default=False),
        prune=dict(type="bool", default=False),
        ephemeral=dict(type="bool", default=False),
        private_key=dict(type="str", no_log=True),
        service_id=dict(type="str"),
        discard_pk=dict(type="bool", default=False),
        return_private_key=dict(type="bool", default=False),
        client_auth_v3=dict(type="list", elements="str"),
        keep_key=dict(type="bool", default=False),
        key_dir=dict(type="path", default="/var/lib/onionlab/ephemeral-keys"),
        persist=dict(type="bool", default=True),
        config_file=dict(type="path", default=torrc.DEFAULT_SERVICES_FILE),
        include_config_file=dict(type="bool", default=True),
        lock_timeout=dict(type="float", default=tor_facts.DEFAULT_LOCK_TIMEOUT),
    )
    spec.update(SERVICE_OPTIONS)
    module = AnsibleModule(**module_kwargs(
        spec,
        mutually_exclusive=[("path", "services"), ("ephemeral", "services"), ("path", "ephemeral")],
        supports_check_mode=True,
    ))
    p = module.params
    if p["path"] is None and p["services"] is None and not p["ephemeral"]:
        # not required_one_of: ephemeral (a bool with a default) would always count as given
        module.fail_json(msg="give path (one persistent service), services (a list of them) or ephemeral=true")
    if p["keep_key"] and not p["ephemeral"]:
        module.fail_json(msg="keep_key is for an ephemeral service (ephemeral=true); a persistent service's key is in "
                             "its directory already")
    if p["lock_timeout"] <= 0:
        module.fail_json(msg="lock_timeout must be a positive number of seconds")
    result = {"changed": False, "onion_address": None, "service": None, "generated_clients": [], "purged": []}
    try:
        with connect_module(module) as ctl:
            if p["ephemeral"]:
                _ephemeral_result(module, result, backend.ephemeral(ctl, p, module.check_mode, _stdout_of(module)))
                module.exit_json(**result)
            manager = backend.persistent_manager(ctl, p, module.check_mode, _stdout_of(module))
            result["tor"] = manager.facts.summary()
            if p["services"] is not None:
                out = backend.services_list(manager, p)
                result["services"] = out["services"]
            else:
                out, service = backend.one_service(manager, p)
                if p["state"] == "present":
                    mine = [s for s in out["services"] if s["path"] == service["path"]]
                    result["service"] = mine[0] if mine else None
                    result["onion_address"] = result["service"]["onion_address"] if mine else None
            _persistent_result(module, result, out, manager.warnings)
    except backend.ParameterError as exc:
        module.fail_json(msg=str(exc))
    except MODULE_ERRORS as exc:
        fail(module, exc)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
