# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ephemeral onion services: ADD_ONION (always detached) and DEL_ONION, planned from the record
of what we asked tor for (tor cannot tell us the ports), which is kept in tor's DataDirectory.

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

import json
import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import capabilities
from ansible_collections.onionlab.tor.plugins.module_utils._tor import files
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import OperationFailed, ProtocolError, ServiceError, TorError
from ansible_collections.onionlab.tor.plugins.module_utils._tor.lock import DEFAULT_TIMEOUT
from ansible_collections.onionlab.tor.plugins.module_utils._tor.tor_facts import TorFacts, tor_lock

# -- the record: what we asked tor for (tor cannot tell us the ports) ---------------------------
EPHEMERAL_RECORD = "onionlab-ephemeral-services.json"


def read_ephemeral_record(data_dir):
    """The record in tor's DataDirectory ({} when none or unreadable): read as a regular file only,
    never through a link tor's user put there, never from a FIFO."""
    try:
        record = json.loads(files.read_regular(os.path.join(data_dir, EPHEMERAL_RECORD), 1 << 22)[0].decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def write_ephemeral_record(data_dir, record):
    files.atomic_write(os.path.join(data_dir, EPHEMERAL_RECORD), json.dumps(record, sort_keys=True, indent=1), 0o600)


def _ephemeral_view(ports, max_streams, client_auth, pow_options=None):
    return {"ports": ports, "max_streams": max_streams, "client_auth_v3": sorted(client_auth),
            "pow": hs.normalize_group("pow", pow_options)}


def recorded_view(view):
    """A view from the record; one written before pow existed had tor's default."""
    if not isinstance(view, dict):
        return view
    return dict(view, pow=view.get("pow") or capabilities.default_pow())


def _describe_ephemeral(sid, view):
    return {"type": "ephemeral", "service_id": sid, "onion_address": sid + ".onion", "detached": True,
            "ports": view["ports"] if view else None, "max_streams": view["max_streams"] if view else None,
            "client_auth_v3": view["client_auth_v3"] if view else None, "pow": view["pow"] if view else None}


def apply_ephemeral(ctl, state, check_mode=False, lock_timeout=DEFAULT_TIMEOUT, run_command=None, **options):
    """Create (ADD_ONION, always detached) or remove (DEL_ONION) an ephemeral service.
    options: ports, private_key, service_id, max_streams, client_auth_v3, discard_pk, pow_options (the
    pow group: ADD_ONION's PoW keywords, tor 0.4.9.2-alpha and later; checked before anything).

    Returns {'changed', 'service', 'private_key' (only a key tor generated), 'diff'}. A change
    holds the tor's lock: the record of configurations in the DataDirectory is a
    read-modify-write shared with every other run."""
    facts = TorFacts(ctl)
    wanted_pow = hs.normalize_group("pow", options.get("pow_options"))
    if state != "absent" and wanted_pow != capabilities.default_pow():   # before anything, check mode too
        capabilities.Capabilities.read(ctl, facts.version, run_command).check_add_onion_pow(wanted_pow)
    if check_mode:
        out = _apply_ephemeral(ctl, facts, state, check_mode=True, **options)
    else:
        with tor_lock(ctl, facts, lock_timeout):
            out = _apply_ephemeral(ctl, facts, state, **options)
    return dict(out, tor=facts.summary())


def _apply_ephemeral(ctl, facts, state, check_mode=False, **options):
    record = read_ephemeral_record(facts.data_dir) if facts.data_dir else {}
    onions = ctl.list_onions()
    running = set(onions["detached"]) | set(onions["current"])
    record = {sid: recorded_view(view) for sid, view in record.items() if sid in running}
    steps = plan_ephemeral(record, running, state, **options)
    if check_mode or steps.action is None:
        return steps.result
    if steps.action == "remove":
        ctl.del_onion(steps.service_id)
        record.pop(steps.service_id, None)
        _save_record(facts, record)
        return steps.result
    sid, returned_key = _check_added(ctl, steps, _add_onion(ctl, steps))
    record[sid] = steps.view
    _save_record(facts, record)
    return {"changed": True, "service": _describe_ephemeral(sid, steps.view), "private_key": returned_key,
            "diff": {"before": steps.result["diff"]["before"], "after": _describe_ephemeral(sid, steps.view)}}


class EphemeralPlan:
    """What plan_ephemeral() decided. action: None (nothing to do), 'remove' (DEL_ONION
    service_id) or 'add' (ADD_ONION of view with key and flags, after DEL_ONION of the running
    service_id when replace; old_view is its configuration, put back when tor refuses the new one).
    result: the module's result as far as it is known before tor answers (all of it for None and
    'remove', the check-mode result for 'add')."""

    def __init__(self, action, service_id, result, view=None, old_view=None, replace=False, flags=(),
                 key=("NEW", "ED25519-V3"), own_key=False):
        self.action = action
        self.service_id = service_id
        self.result = result
        self.view = view
        self.old_view = old_view
        self.replace = replace
        self.flags = list(flags)
        self.key_type, self.key_blob = key
        self.own_key = own_key


def plan_ephemeral(record, running, state, ports=None, private_key=None, service_id=None, max_streams=None,
                   client_auth_v3=(), discard_pk=False, pow_options=None):
    """An EphemeralPlan from the record of configurations ({service id: view} of the running
    services) and the ids tor runs, or a ServiceError (an OnionKeyError for a bad key)."""
    record = {sid: recorded_view(view) for sid, view in record.items()}
    if private_key is not None:
        sid_of_key = onion.service_id_of_key(private_key)
        if service_id and service_id != sid_of_key:
            raise ServiceError("service_id does not belong to private_key")
        service_id = sid_of_key
    if service_id is not None and not onion.is_service_id(service_id):
        raise ServiceError("service_id must be a v3 service id (56 base32 characters, no .onion)")
    if state == "absent":
        if service_id is None:
            raise ServiceError("removing an ephemeral service needs service_id or private_key")
        present = service_id in running
        before = _describe_ephemeral(service_id, record.get(service_id)) if present else {}
        return EphemeralPlan("remove" if present else None, service_id,
                             {"changed": present, "service": None, "private_key": None,
                              "diff": {"before": before, "after": {}}})
    view = _ephemeral_view([hs.normalize_port(p) for p in ports or []], max_streams,
                           [onion.check_client_public_key(k) for k in client_auth_v3 or []], pow_options)
    if not view["ports"]:
        raise ServiceError("an ephemeral service needs at least one port")
    if service_id is not None and private_key is None:
        raise ServiceError("service_id alone cannot create an ephemeral service; give private_key (or neither "
                           "to let tor generate a key)")
    replace = service_id is not None and service_id in running
    if replace and record.get(service_id) == view:
        same = _describe_ephemeral(service_id, view)
        return EphemeralPlan(None, service_id, {"changed": False, "service": same, "private_key": None,
                                                "diff": {"before": same, "after": same}})
    result = {"changed": True, "service": _describe_ephemeral(service_id, view) if service_id else None,
              "private_key": None,
              "diff": {"before": _describe_ephemeral(service_id, record.get(service_id)) if replace else {},
                       "after": _describe_ephemeral(service_id or "(new)", view)}}
    own_key = private_key is not None
    return EphemeralPlan("add", service_id, result, view=view, old_view=record.get(service_id) if replace else None,
                         replace=replace, flags=["Detach"] + (["DiscardPK"] if discard_pk or own_key else []),
                         key=(onion.key_blob(onion.parse_key_blob(private_key)).split(":", 1) if own_key
                              else ("NEW", "ED25519-V3")), own_key=own_key)


def _add_onion(ctl, steps):
    """ADD_ONION of the plan's service, after DEL_ONION of the one it replaces (same key, new
    configuration: tor has no way to change it in place); a refused change must not cost the
    running service: its old configuration is added back. Returns tor's reply."""
    def add(view):
        pow_options = view.get("pow") or capabilities.default_pow()
        pow_args = {} if pow_options == capabilities.default_pow() else dict(
            pow_defenses_enabled=pow_options["enabled"], pow_queue_rate=pow_options["queue_rate"],
            pow_queue_burst=pow_options["queue_burst"])   # only sent when asked for: older tors refuse them
        return ctl.add_onion([(p["port"], hs.port_to_add_onion(p).split(",", 1)[1]) for p in view["ports"]],
                             key_type=steps.key_type, key_blob=steps.key_blob, flags=steps.flags,
                             max_streams=view["max_streams"], client_auth_v3=view["client_auth_v3"], **pow_args)

    if steps.replace:
        ctl.del_onion(steps.service_id)
    try:
        return add(steps.view)
    except OperationFailed:
        if steps.old_view:
            try:
                add(steps.old_view)
            except TorError:
                pass
        raise


def _check_added(ctl, steps, reply):
    """(service id, key tor generated or None) of an ADD_ONION reply; a service whose id or key
    does not belong together with what we gave is removed again and refused."""
    sid = reply["service_id"]
    if not onion.is_service_id(sid):
        raise ProtocolError("tor returned a ServiceID that is not a valid v3 address")
    if steps.own_key:
        if sid != steps.service_id:
            ctl.del_onion(sid)
            raise ProtocolError("tor returned a ServiceID that does not belong to the key we gave it")
        return sid, None
    if reply.get("private_key") is None:
        return sid, None
    try:
        if onion.service_id_of_key(reply["private_key"]) != sid:
            raise onion.OnionKeyError("mismatch")
    except onion.OnionKeyError:
        ctl.del_onion(sid)
        raise ProtocolError("tor returned a PrivateKey that does not belong to its ServiceID; removed it")
    return sid, reply["private_key"]


def _save_record(facts, record):
    # Only into a directory that is a running tor's DataDirectory (tor holds its "lock" file
    # there): a peer that is not tor must not make us write into /etc or the like.
    if not facts.data_dir or not os.path.isfile(os.path.join(facts.data_dir, "lock")):
        return
    try:
        write_ephemeral_record(facts.data_dir, record)
    except OSError:
        pass
