# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host side of the onion_service role (module onion_service_deploy, called by its action
plugin): in one run on the host, the access check, the role's record (pruning), the services
marked absent and the pruned ones, the atomic change of the listed services (escrowed keys
installed only where a directory holds none), the record written back, and the keys the
controller's escrow lacks.

This is a private module_utils file of onionlab.tor; its API may change at any time.

The argument spec is the host's request only; the action plugin (plugins/action/onion_service_deploy.py)
takes the role's variables, checked against the role's own argument spec, and fills the request in.
"""

from __future__ import annotations

import hashlib
import json
import os

from ansible_collections.onionlab.tor.plugins.module_utils._common import control_argument_spec, error_message
from ansible_collections.onionlab.tor.plugins.module_utils._hidden_service_args import SERVICE_OPTIONS
from ansible_collections.onionlab.tor.plugins.module_utils._tor import capabilities
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import files
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion, seal, torrc
from ansible_collections.onionlab.tor.plugins.module_utils._tor.tor_facts import tor_lock
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import ServiceError, TorError

KEY_FILE = "hs_ed25519_secret_key"


def argument_spec():
    """What the host is asked (the module's options): the part of the role's variables the host reads and
    what the action plugin (plugins/action/onion_service_deploy.py) makes for it on the controller (entries,
    absent, keys, the escrow's keys and sums). The role's variables themselves are the task's arguments, checked
    by the action plugin against the role's argument spec."""
    return control_argument_spec(
        service_dir=dict(type="path", default="/var/lib/tor"),
        prune=dict(type="bool", default=True),
        remove_all=dict(type="bool", default=False),
        state_file=dict(type="path"),
        restore=dict(type="bool", default=True),
        adopt=dict(type="bool", default=False),
        config_file=dict(type="path", default=torrc.DEFAULT_SERVICES_FILE),
        pow=dict(type="bool", default=True),
        pow_supported=dict(type="bool"),
        tor_binary=dict(type="str", default="tor"),
        entries=dict(type="list", elements="dict", default=[]),
        absent=dict(type="list", elements="dict", default=[],
                    options=dict(path=dict(type="path", required=True), purge=dict(type="bool", default=False))),
        keys=dict(type="dict", default={}, no_log=True),
        escrow_keys=dict(type="dict", default={}, no_log=True),
        escrow_refused=dict(type="dict", default={}),
        escrow_sums=dict(type="dict", no_log=True),
        escrow_seal=dict(type="str"),
        access_only=dict(type="bool", default=False),
    )


# -- before anything is read: may this user write where the role writes -------------------------------------
def denied(paths):
    """The paths (each, or its nearest existing parent) this user cannot write, in order, once each."""
    out = []
    for path in paths:
        while not os.path.exists(path) and path != os.path.dirname(path):
            path = os.path.dirname(path)
        if not (os.access(path, os.W_OK) and os.access(path, os.X_OK)) and path not in out:
            out.append(path)
    return out


# -- the role's record of the services it made -------------------------------------------------------------
def read_owned(state_file):
    """The service directories in the record ([] when there is none yet)."""
    try:
        with open(state_file) as handle:
            data = json.load(handle)
    except FileNotFoundError:
        return []
    except ValueError:
        raise ServiceError("the role's record %s is not JSON; remove it (the next run records the listed "
                           "services and prunes nothing)" % state_file)
    services = data.get("services", []) if isinstance(data, dict) else []
    return [str(s) for s in services or []]


def record_text(paths):
    """The record as the role always wrote it (to_nice_json and a newline)."""
    return json.dumps({"services": paths}, indent=4, sort_keys=True, separators=(",", ": "), ensure_ascii=False) + "\n"


def write_record(state_file, text):
    """Write the record (0600) when its content or mode differs; True when it did."""
    try:
        with open(state_file) as handle:
            same = handle.read() == text
        mode_ok = (os.stat(state_file).st_mode & 0o7777) == 0o600
    except FileNotFoundError:
        same, mode_ok = False, False
    if same and mode_ok:
        return False
    if same:
        os.chmod(state_file, 0o600)
        return True
    files.write_secret(state_file, text.encode("utf-8"), state_file + ".onionlab-new")
    return True


# -- proof of work by default, where this tor can do it -----------------------------------------------------
def pow_supported(told, tor_binary, run):
    """told (the role's onion_service_pow_supported) unless None; else what capabilities.py says of
    tor_binary (its pow module; no tor, an old tor or a failure: no)."""
    return capabilities.pow_by_default(told, tor_binary, run)


def with_pow_default(entries):
    """Each entry with pow.enabled=true unless it says otherwise (the role's profile, deep-merged under
    onion_service_defaults and the service's options)."""
    out = []
    for entry in entries:
        pow_options = dict(entry.get("pow") or {})
        if pow_options.get("enabled") is None:
            pow_options["enabled"] = True
        out.append(dict(entry, pow=pow_options))
    return out


# -- keys ---------------------------------------------------------------------------------------------------
def host_key(path):
    """The raw bytes of a service directory's secret key file (a regular file, never through a link), or None."""
    try:
        return files.read_regular(os.path.join(path, KEY_FILE), 4096)[0]
    except FileNotFoundError:
        return None


def file_sum(data):
    return hashlib.sha256(data).hexdigest()


def escrow_updates(paths, sums, recipient):
    """{path: the key file sealed to the controller's one-time key (seal.py)} of each host key that the escrow
    lacks or holds differently: no key crosses the connection in clear, whatever prints the module's output."""
    out = {}
    for path in paths:
        data = host_key(path)
        if data is not None and file_sum(data) != sums.get(path):
            out[path] = seal.seal(recipient, data)
    return out


def restorable(escrow_keys, vault_paths, refused=None):
    """{path: expanded key} of the escrowed keys for directories that hold no key (never over one). refused:
    {path: why} of the escrowed keys the controller did not send (not a key file, or not the escrowed address:
    checked there, where both are); one that would have been restored refuses the run (ServiceError, naming the
    service) before anything is written."""
    out, refused = {}, refused or {}
    for path in sorted(set(escrow_keys) | set(refused)):
        if path in vault_paths or os.path.lexists(os.path.join(path, KEY_FILE)):
            continue
        if path in refused:
            raise ServiceError("service %s (%s): its escrowed key cannot be restored: %s"
                               % (os.path.basename(path), path, refused[path]))
        out[path] = onion.parse_key_blob(escrow_keys[path])
    return out


def _clients(entry):
    clients = entry.get("authorized_clients")
    if clients is None:
        return None
    return [{"name": c["name"], "public_key": c.get("public_key")} for c in clients]


def _normalized(entries):
    """The module's canonical services and their authorized clients, checked before anything is written."""
    desired, clients = [], {}
    for entry in entries:
        try:
            service = hs.normalize_service(dict((k, entry.get(k)) for k in list(SERVICE_OPTIONS) + ["path"]))
        except hs.ServiceConfigError as exc:   # which service: the directory's name (the service's, .k<N> a key)
            raise hs.ServiceConfigError("service %s (%s): %s" % (os.path.basename(str(entry.get("path"))),
                                                                 entry.get("path"), exc))
        if not service["ports"]:
            raise ServiceError("the service %s needs at least one entry in ports" % service["path"])
        desired.append(service)
        if _clients(entry) is not None:
            clients[service["path"]] = _clients(entry)
    return desired, clients


def deploy(p, manager_for, check_mode, diff, run):
    """The host's part of the role, in the order the role always took (a failure says what was written).

    p: the module's parameters; manager_for(check_mode) -> a service_manager.PersistentManager;
    run(argv) -> standard output (tor --list-modules). Raises Refused before anything is written,
    ApplyFailed after; returns the result (changed, services, diff, restored, escrow_updates, ...)."""
    entries = p["entries"]
    if p["pow"] and entries and pow_supported(p["pow_supported"], p["tor_binary"], run):
        entries = [e if e.get("onionbalance_frontend") else with_pow_default([e])[0] for e in entries]
    manager = manager_for(check_mode)
    if check_mode:
        return _deploy(p, entries, manager_for, manager, check_mode, diff)
    # the record is read, the services changed and the record written back under the tor's lock: two runs at
    # once on one host (two playbooks) each see the other's services in the record
    with tor_lock(manager.ctl, manager.facts, manager.lock_timeout):
        return _deploy(p, entries, manager_for, manager, check_mode, diff)


def _deploy(p, entries, manager_for, manager, check_mode, diff):
    present = [e["path"] for e in entries]
    absent = [(os.path.normpath(a["path"]), a["purge"]) for a in p["absent"]]
    listed = present + [a for a, _purge in absent]
    owned = read_owned(p["state_file"]) if p["state_file"] else []
    orphans = [o for o in owned if o not in listed] if p["prune"] else []
    if p["prune"] and not listed and orphans and not p["remove_all"]:
        raise Refused("empty", "onion_services is empty", orphans=orphans)
    try:
        vault = dict((path, onion.parse_key_blob(blob)) for path, blob in p["keys"].items())
        escrowed = restorable(p["escrow_keys"], vault, p["escrow_refused"]) if p["restore"] else {}
        keys = dict(vault, **escrowed)
        desired, clients = _normalized(entries)
        if desired:   # every entry, checked by tor's rules, before anything is written
            manager_for(True).apply(desired, clients=clients, keys=keys)
    except (TorError, ValueError, OSError) as exc:
        raise Refused("refused", error_message(exc))
    result = {"changed": False, "services": [], "diff": [], "restored": sorted(escrowed), "orphans": orphans,
              "purged": [], "escrow_updates": {}}
    steps = []
    for purge in (True, False):
        gone = [a for a, flag in absent if flag == purge] + ([] if purge else orphans)
        if gone:
            steps.append(dict(desired=[], absent=gone, purge=purge))
    if desired:
        steps.append(dict(desired=desired, clients=clients, keys=keys))
    for step in steps:
        try:
            out = manager.apply(**step)
        except (TorError, OSError) as exc:
            raise ApplyFailed(error_message(exc), result["restored"] if step.get("keys") is not None else [])
        result["changed"] = result["changed"] or out["changed"]
        result["purged"].extend(out.get("purged") or [])
        if diff and out.get("diff"):
            result["diff"].append(out["diff"])
        if step.get("keys") is not None:
            result["services"] = out["services"]
    result["warnings"] = list(manager.warnings)
    # the running tor's own version (GETINFO version), for the summary file (issue 39)
    result["tor_version"] = (manager.facts.version or "").split(" ")[0] or None
    if check_mode:
        return result
    removed = set([a for a, _purge in absent] + orphans)
    record = sorted(set(o for o in owned + present if o not in removed))
    if p["state_file"] and write_record(p["state_file"], record_text(record)):
        result["changed"] = True
    if p["escrow_sums"] is not None:
        result["escrow_updates"] = escrow_updates(present, p["escrow_sums"], p["escrow_seal"])
    return result


class Refused(Exception):
    """The run stopped before anything was written: stage ('empty', 'refused') and details."""

    def __init__(self, stage, message, **details):
        super(Refused, self).__init__(message)
        self.stage = stage
        self.details = details


class ApplyFailed(Exception):
    """The change failed after the checks: what was restored from escrow before it."""

    def __init__(self, message, restored):
        super(ApplyFailed, self).__init__(message)
        self.restored = restored
