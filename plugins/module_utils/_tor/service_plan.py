# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Persistent onion services: plan() (pure) from a PersistentState (plain data) to a PersistentPlan, the steps
service_manager.PersistentManager carries out (it reads the state and executes; this file decides). No I/O, no
Ansible imports.

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

import stat

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import ServiceError
from ansible_collections.onionlab.tor.plugins.module_utils._tor.onionbalance import plan_onionbalance


# -- what plan() looks at ----------------------------------------------------------------------
class PersistentState:
    """What plan() looks at: plain data, read in one go by PersistentManager.read_state() (or
    written down by a test).

    block: the services tor runs now (GETCONF HiddenServiceOptions), in tor's order.
    persist, drop_in, include: the manager's settings: keep the services in the file drop_in,
      and %include it from tor's torrc.
    drop_in_text: the drop-in's text (None: no such file); drop_in_services: its services.
    config_file: tor's torrc (None: unknown); torrc_dirs: {HiddenServiceDir: file} that torrc and
      its includes define (the drop-in aside); included: whether they %include the drop-in;
      torrc_refusal: why no %include line may be appended to config_file (None: it may).
    uid, user: tor's user (uid None: unknown).
    dirs: {path: its os.lstat() (None: nothing there)} of each desired service.
    is_dir: {path: os.path.isdir()} of each path that may be purged.
    clients: {path: read_authorized_clients()} of each service in the block or desired.
    keys: {path: the 64-byte key the directory holds (None: none)} of each key to install;
      key_addresses: {path: the address of that key} where it is not the key to install.
    ob_configs: {path: the text of its ob_config (None: none)} of each service in the block or desired.
    addresses: {path: the address of the key it holds (None: none, or unreadable)} of each desired balanced
      service (its onionbalance_frontend must not be its own address).
    sandbox: where tor may write (sandbox.Sandbox; None: not known, nothing is refused).
    """

    def __init__(self, block, persist=False, drop_in=None, include=True, drop_in_text=None, config_file=None,
                 torrc_dirs=None, included=True, torrc_refusal=None, uid=None, user=None, dirs=None,
                 is_dir=None, clients=None, keys=None, key_addresses=None, sandbox=None, ob_configs=None,
                 addresses=None):
        self.block = block
        self.persist = persist
        self.drop_in = drop_in
        self.include = include
        self.drop_in_text = drop_in_text
        self.drop_in_services = hs.parse_drop_in(drop_in_text) if drop_in_text is not None else None
        self.config_file = config_file
        self.torrc_dirs = torrc_dirs or {}
        self.included = included
        self.torrc_refusal = torrc_refusal
        self.uid = uid
        self.user = user
        self.dirs = dirs or {}
        self.is_dir = is_dir or {}
        self.clients = clients or {}
        self.keys = keys or {}
        self.key_addresses = key_addresses or {}
        self.sandbox = sandbox
        self.ob_configs = ob_configs or {}
        self.addresses = addresses or {}

    def drop_in_paths(self):
        return [s["path"] for s in self.drop_in_services or []]


# -- persistent services: the plan ---------------------------------------------------------------
class PersistentPlan:
    """The steps from a PersistentState to what was asked, made by plan() and carried out by
    PersistentManager.execute().

    before, after: tor's block now and the block it is to run (in tor's order).
    make_dirs: service directories to create (0700, tor's user); key_writes: {path: 64-byte key}
      to install; client_plans: {path: (files to write {name: public key}, names to delete,
      generated clients [{name, public_key, private_key}])} of the services whose clients are managed.
    ob_writes: {path: ob_config text} written before the SETCONF (tor reads the file when it loads the
      service); ob_removes: ob_config files of services no longer balanced, removed once tor runs without
      the flag.
    set_conf: whether `after` is sent to tor (the block changed, or files tor reads at SETCONF did).
    drop_in_text: the drop-in's new text (None: not persisted); drop_in_change and include_change:
      whether it and torrc's %include line are written.
    purge_dirs: the directories removed at the end.
    changed, diff: for the result; warnings: for the module to show.
    """

    def __init__(self, before, after, desired_paths):
        self.before = before
        self.after = after
        self.desired_paths = desired_paths
        self.make_dirs = []
        self.key_writes = {}
        self.client_plans = {}
        self.ob_writes = {}
        self.ob_removes = []
        self.set_conf = False
        self.drop_in_text = None
        self.drop_in_change = False
        self.include_change = False
        self.purge_dirs = []
        self.changed = False
        self.diff = None
        self.warnings = []

    def result(self, services):
        return {"changed": self.changed, "diff": self.diff, "generated_clients": [], "purged": self.purge_dirs,
                "services": services}


def plan(state, desired, absent=(), exclusive=False, purge=False, clients=None, keys=None, prune=False,
         adopt=False):
    """The steps that take tor from `state` (a PersistentState) to what is asked (the arguments
    of PersistentManager.apply), or a ServiceError saying why not. Reads and writes nothing (the
    keys of generated clients are made here). adopt: desired services that torrc declares are taken
    over (_check_adopted): written to the drop-in as tor runs them, torrc left alone."""
    clients = clients or {}
    paths = [s["path"] for s in desired]
    if prune:
        absent = list(absent) + [p for p in state.drop_in_paths() if p not in paths]
    repeated = sorted(set(p for p in paths if paths.count(p) > 1))
    if repeated:
        raise ServiceError("the same path is given for more than one service: %s; give each service its own "
                           "directory" % ", ".join(repeated))
    for path in absent:
        if path in paths:
            raise ServiceError("%s is both present and absent" % path)
    steps = PersistentPlan(state.block, _after_block(state.block, desired, absent, exclusive), paths)
    after_paths = [s["path"] for s in steps.after]
    adopted = _check_adopted(state, desired) if adopt else []
    _check_not_in_torrc(state, [s for s in desired if s["path"] not in adopted])
    _check_sandbox(state, desired)
    for service in desired:
        _check_dir(service["path"], state.dirs.get(service["path"]), state, service["dir_group_readable"])
        for client in clients.get(service["path"], []):
            _check_client_name(client["name"])
        if state.dirs.get(service["path"]) is None:
            steps.make_dirs.append(service["path"])
    for service in desired:
        if service["path"] in clients:
            steps.client_plans[service["path"]] = _client_files_plan(state.clients.get(service["path"]),
                                                                     clients[service["path"]])
    removed = [s for s in state.block if s["path"] not in after_paths]
    _plan_drop_in(state, steps, _managed_after(state, desired, steps.after, removed, exclusive), bool(adopted))
    if purge:
        steps.purge_dirs = [p for p in absent if state.is_dir.get(p) and p not in after_paths]
    steps.key_writes = _key_writes(state, keys or {})
    plan_onionbalance(state, steps, desired, clients, keys or {})
    clients_change = any(write or delete for write, delete, _generated in steps.client_plans.values())
    steps.set_conf = (config_views(steps.before) != config_views(steps.after) or clients_change or bool(steps.key_writes)
                      or bool(steps.ob_writes))
    steps.changed = (steps.set_conf or steps.drop_in_change or steps.include_change or bool(steps.purge_dirs)
                     or bool(steps.ob_removes))
    steps.diff = {"before": {"services": [_diff_view(s, state) for s in steps.before]},
                  "after": {"services": [_diff_view(s, state, steps.client_plans) for s in steps.after]}}
    if steps.include_change:   # the lines appended to torrc, so that --diff and --check show them
        steps.diff["before"]["torrc"] = {"path": state.config_file, "appended": []}
        steps.diff["after"]["torrc"] = {"path": state.config_file, "appended": include_lines(state.drop_in)}
    return steps


def include_lines(drop_in):
    """The lines appended to torrc so that it %includes the drop-in."""
    return ["# Added by onionlab.tor: the onion services it manages", "%%include %s" % drop_in]


def _after_block(before, desired, absent, exclusive):
    """Tor's block to be: `desired` replacing the services of the same path where they are and
    added at the end, `absent` left out (exclusive: `desired` alone)."""
    if exclusive:
        return [dict(s) for s in desired]
    wanted = {s["path"]: s for s in desired}
    after = [wanted.pop(s["path"], s) for s in before if s["path"] not in absent]
    return after + [s for s in desired if s["path"] in wanted]


def _managed_after(state, desired, after, removed, exclusive):
    """The services the drop-in is to hold: those it holds and those asked for, less the ones
    removed (exclusive: those asked for), in the order of `after`."""
    if exclusive:
        managed = set(s["path"] for s in desired)
    else:
        managed = (set(state.drop_in_paths()) | set(s["path"] for s in desired)) - set(s["path"] for s in removed)
    return [s for s in after if s["path"] in managed]


def _plan_drop_in(state, steps, managed, adopting=False):
    if not state.persist:
        return
    steps.drop_in_text = hs.render_drop_in(managed)
    steps.drop_in_change = state.drop_in_text != steps.drop_in_text
    if not state.config_file or state.included or adopting:
        # adopting: torrc declares the adopted services and must not %include them a second time; the tor
        # role's torrc, which %includes the drop-in's directory instead, replaces it
        return
    if state.include:
        if state.torrc_refusal:
            raise ServiceError(state.torrc_refusal)
        steps.include_change = True
    else:
        steps.warnings.append("%s does not %%include %s: the services will not survive a tor restart"
                              % (state.config_file, state.drop_in))


def _check_adopted(state, services):
    """The paths of `services` that torrc declares and that may be adopted: each must be in tor's block exactly
    as given (adoption changes no service), and torrc must not %include the drop-in already (tor would read
    each service twice and refuse to start). A ServiceError otherwise, before anything is written."""
    running = dict((s["path"], s) for s in state.block)
    adopted = []
    for service in services:
        path = service["path"]
        if path not in state.torrc_dirs:
            continue
        if state.included:
            raise ServiceError("cannot adopt the service %s: %s declares it and %%includes %s already, so tor would "
                               "read it twice and refuse to start; move its lines from %s into %s by hand"
                               % (path, state.torrc_dirs[path], state.drop_in, state.torrc_dirs[path], state.drop_in))
        if path not in running:
            raise ServiceError("cannot adopt the service %s: %s declares it but tor does not run it (reload tor, or "
                               "remove its lines)" % (path, state.torrc_dirs[path]))
        have, want = config_views([running[path]])[0], config_views([service])[0]
        differ = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
        if differ:
            raise ServiceError("cannot adopt the service %s: adoption takes a service as tor runs it, and it differs "
                               "in %s; adopt it as it is, then change it" % (path, ", ".join(differ)))
        adopted.append(path)
    return adopted


def _check_not_in_torrc(state, services):
    for service in services:
        if service["path"] in state.torrc_dirs and service["path"] in state.drop_in_paths():
            raise ServiceError("the service %s is adopted (%s holds it) and %s still declares it: run the "
                               "onionlab.tor.tor role first, whose torrc %%includes the drop-in's directory instead"
                               % (service["path"], state.drop_in, state.torrc_dirs[service["path"]]))
        if service["path"] in state.torrc_dirs:
            raise ServiceError("the service %s is defined in %s; manage it there, or remove it from that file "
                               "first (writing it to %s too would make tor refuse to start)"
                               % (service["path"], state.torrc_dirs[service["path"]], state.drop_in))


def _check_sandbox(state, services):
    """Refuse a new service directory that tor may not write (its unit's sandbox, AppArmor):
    tor would exit on the SETCONF or the next reload. One that tor runs already is its own
    proof that it may."""
    if state.sandbox is None:
        return
    running = set(s["path"] for s in state.block)
    for service in services:
        if service["path"] not in running:
            refusal = state.sandbox.refusal(service["path"])
            if refusal:
                raise ServiceError(refusal)


def _check_dir(path, st, state, group_readable):
    """Refuse a service directory (st: its os.lstat(), None when there is none) that tor would
    refuse or that is not a plain directory."""
    if st is None:
        return
    if stat.S_ISLNK(st.st_mode):
        raise ServiceError("%s is a symbolic link; give the real directory as path" % path)
    if not stat.S_ISDIR(st.st_mode):
        raise ServiceError("%s exists and is not a directory" % path)
    problems = []
    if state.uid is not None and st.st_uid != state.uid:
        problems.append("owned by uid %d, not by tor's user %s (uid %d)" % (st.st_uid, state.user or "?", state.uid))
    allowed = 0o750 if group_readable else 0o700
    if stat.S_IMODE(st.st_mode) & ~allowed & 0o777:
        problems.append("mode %04o, more open than %04o" % (stat.S_IMODE(st.st_mode), allowed))
    if problems:
        raise ServiceError("service directory %s is unsafe: %s; tor refuses such a directory. Fix it (or "
                           "remove it) yourself: the module does not change an existing key directory"
                           % (path, "; ".join(problems)))


def _check_client_name(name):
    if not name or not all(c.isalnum() or c in "-_." for c in name) or name.startswith(".") or len(name) > 64:
        raise ServiceError("authorized client name %r must be 1-64 letters, digits, '-', '_' or '.'" % (name,))


def _client_files_plan(current, wanted):
    """current: the clients on disk (read_authorized_clients); wanted: the client dicts asked for.
    (files to write {name: public key}, names to delete, generated [{name, public_key, private_key}])."""
    current_map = {c["name"]: c["public_key"] for c in current or []}
    write, generated = {}, []
    names = set()
    for client in wanted:
        name = client["name"]
        names.add(name)
        if client.get("public_key"):
            key = onion.check_client_public_key(client["public_key"])
            if current_map.get(name) != key:
                write[name] = key
        elif name in current_map and current_map[name]:
            continue
        else:
            private, public = onion.generate_client_keypair()
            write[name] = public
            generated.append({"name": name, "public_key": public, "private_key": private})
    delete = sorted(n for n in current_map if n not in names)
    return write, delete, generated


def _key_writes(state, keys):
    """{path: key} of the keys to install: where a directory holds none. A different key is refused."""
    writes = {}
    for path, expanded in keys.items():
        existing = state.keys.get(path)
        if existing is None:
            writes[path] = expanded
        elif existing != expanded:
            raise ServiceError("%s already holds a different key (%s); refusing to overwrite a key: remove "
                               "the directory yourself if you mean to replace it"
                               % (path, state.key_addresses.get(path)))
    return writes


def config_views(services):
    """What is compared: the configuration (a balanced service's frontend only as the flag that
    tor's block holds; the address is in ob_config, see onionbalance.py)."""
    views = []
    for service in services:
        view = hs.config_view(service)
        view["onionbalance_frontend"] = bool(view.get("onionbalance_frontend"))
        views.append(view)
    return views


def _diff_view(service, state, client_plans=None):
    view = hs.config_view(service)
    if view.get("onionbalance_frontend") is hs.OB_FLAG:
        view["onionbalance_frontend"] = hs.parse_ob_config(state.ob_configs.get(service["path"]))
    names = sorted(c["name"] for c in (state.clients.get(service["path"]) or []))
    client_plan = (client_plans or {}).get(service["path"])
    if client_plan is not None:
        write, delete, _generated = client_plan
        names = sorted((set(names) | set(write)) - set(delete))
    view["authorized_clients"] = names
    return view
