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


# -- kept keys: an ephemeral service's key on the host (keep_key), for the watchdog to add it back --------------
KEY_DIR = "/var/lib/onionlab/ephemeral-keys"
_KEY_LIMIT = 4096


def _open_key_dir(key_dir, create):
    return files.private_dir(key_dir, create, "the directory of kept keys")


def kept_key(key_dir, sid):
    """The kept key ('ED25519-V3:...') of a service, or None. Never put into a message."""
    fd = _open_key_dir(key_dir, False)
    if fd is None:
        return None
    try:
        data = files.read_regular(sid + ".key", _KEY_LIMIT, dir_fd=fd, shown=os.path.join(key_dir, sid + ".key"))[0]
    except FileNotFoundError:
        return None
    finally:
        os.close(fd)
    text = data.decode("ascii", "replace").strip()
    try:
        if onion.service_id_of_key(text) != sid:
            return None
    except onion.OnionKeyError:
        return None
    return text


def keep_key(key_dir, sid, key):
    """Write the service's key to key_dir/<sid>.key (0600, atomically, never through a link)."""
    fd = _open_key_dir(key_dir, True)
    try:
        files.write_secret(sid + ".key", (key + "\n").encode("ascii"), "." + sid + ".key.tmp", dir_fd=fd)
    finally:
        os.close(fd)


def drop_key(key_dir, sid):
    """Remove a kept key; True when there was one."""
    fd = _open_key_dir(key_dir, False)
    if fd is None:
        return False
    try:
        os.unlink(sid + ".key", dir_fd=fd)
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(fd)


def _names(rows, groups):
    """The names in a service of OPTIONS rows, in OPTIONS' order: the groups' (groups=True) or
    the single options'."""
    names = []
    for option in rows:
        group, dot, _member = option.key.partition(".")
        if bool(dot) == groups and group not in names:
            names.append(group)
    return tuple(names)


# ADD_ONION's options (OPTIONS' add_onion column) by their names in a service: single options and
# groups (a group is sent whole when it is not tor's default)
ADD_ONION_SINGLE = _names([o for o in hs.OPTIONS if o.add_onion], groups=False)
ADD_ONION_GROUPS = _names([o for o in hs.OPTIONS if o.add_onion], groups=True)
# the options an ephemeral service cannot have: no ADD_ONION keyword, and added by a newer tor (those
# every supported tor has are ignored for an ephemeral service, as they always were); groups first
_REFUSED = [o for o in hs.OPTIONS if o.add_onion is None and o.since]
NOT_EPHEMERAL = _names(_REFUSED, groups=True) + _names(_REFUSED, groups=False)
# a view: what we asked tor for (the record's entries, the results' keys after the service's id)
VIEW_KEYS = ("ports",) + ADD_ONION_SINGLE + ("client_auth_v3",) + ADD_ONION_GROUPS


def _options(options):
    """The ADD_ONION options of plan_ephemeral's/apply_ephemeral's keyword arguments ({name: value};
    a group also as <group>_options, the name it had first); another name is a TypeError."""
    out = {}
    for name, value in options.items():
        name = name[:-len("_options")] if name.endswith("_options") and name[:-len("_options")] in ADD_ONION_GROUPS \
            else name
        if name not in ADD_ONION_SINGLE + ADD_ONION_GROUPS:
            raise TypeError("unexpected keyword argument %r" % name)
        out[name] = value
    return out


def _ephemeral_view(ports, client_auth, options):
    view = {"ports": ports}
    view.update((name, options.get(name)) for name in ADD_ONION_SINGLE)
    view["client_auth_v3"] = sorted(client_auth)
    view.update((group, hs.normalize_group(group, options.get(group))) for group in ADD_ONION_GROUPS)
    return view


def recorded_view(view):
    """A view from the record; one written before a group existed (pow) had tor's default."""
    if not isinstance(view, dict):
        return view
    defaults = hs.default_service("/")
    return dict(view, **{group: view.get(group) or defaults[group] for group in ADD_ONION_GROUPS})


def _describe_ephemeral(sid, view):
    out = {"type": "ephemeral", "service_id": sid, "onion_address": sid + ".onion", "detached": True}
    out.update((key, view[key] if view else None) for key in VIEW_KEYS)
    return out


def add_onion_keywords(view):
    """[(ADD_ONION keyword, value)] of a view, in OPTIONS' order: a single option when not None, a
    group's members when the group is not tor's default (older tors refuse keywords they lack)."""
    defaults = hs.default_service("/")
    keywords = []
    for option in hs.OPTIONS:
        if not option.add_onion:
            continue
        if "." not in option.key:
            if view.get(option.key) is not None:
                keywords.append((option.add_onion, view[option.key]))
            continue
        group, member = option.key.split(".")
        values = view.get(group) or defaults[group]
        if values != defaults[group]:
            keywords.append((option.add_onion, values[member]))
    return keywords


_NOT_ADD_ONION = ("ports", "private_key", "service_id", "client_auth_v3", "discard_pk", "keep_key", "key_dir")


def apply_ephemeral(ctl, state, check_mode=False, lock_timeout=DEFAULT_TIMEOUT, run_command=None, **options):
    """Create (ADD_ONION, always detached) or remove (DEL_ONION) an ephemeral service.
    options: ports, private_key, service_id, client_auth_v3, discard_pk, and the ADD_ONION options of
    OPTIONS by name (max_streams; the pow group, also as pow_options: ADD_ONION's PoW keywords, tor
    0.4.9.2-alpha and later); a keyword this tor lacks is refused before anything.

    Returns {'changed', 'service', 'private_key' (only a key tor generated), 'diff'}. A change
    holds the tor's lock: the record of configurations in the DataDirectory is a
    read-modify-write shared with every other run."""
    facts = TorFacts(ctl)
    wanted = _options({k: v for k, v in options.items() if k not in _NOT_ADD_ONION})
    if state != "absent" and capabilities.add_onion_to_check(wanted):   # before anything, check mode too
        capabilities.Capabilities.read(ctl, facts.version, run_command).check_add_onion(wanted)
    if check_mode:
        out = _apply_ephemeral(ctl, facts, state, check_mode=True, **options)
    else:
        with tor_lock(ctl, facts, lock_timeout):
            out = _apply_ephemeral(ctl, facts, state, **options)
    return dict(out, tor=facts.summary())


def _apply_ephemeral(ctl, facts, state, check_mode=False, keep_key=False, key_dir=KEY_DIR, **options):
    record = read_ephemeral_record(facts.data_dir) if facts.data_dir else {}
    onions = ctl.list_onions()
    running = set(onions["detached"]) | set(onions["current"])
    record = {sid: recorded_view(view) for sid, view in record.items() if sid in running}
    if keep_key and options.get("discard_pk") and options.get("private_key") is None:
        raise ServiceError("keep_key keeps the service's key on the host: give private_key, or let tor return the "
                           "key it generates (discard_pk false)")
    steps = plan_ephemeral(record, running, state, **options)
    # the kept key follows the service: kept with keep_key, removed with the service or without keep_key
    sid = steps.service_id
    kept = bool(sid) and kept_key(key_dir, sid) is not None
    keep_change = bool(sid) and steps.action != "add" and kept != bool(keep_key and state != "absent")
    if check_mode or (steps.action is None and not keep_change):
        return dict(steps.result, changed=steps.result["changed"] or keep_change)
    if steps.action is None:
        if keep_key and state != "absent":
            keep_key_of_plan(key_dir, steps)
        else:
            drop_key(key_dir, sid)
        return dict(steps.result, changed=True)
    if steps.action == "remove":
        ctl.del_onion(steps.service_id)
        record.pop(steps.service_id, None)
        _save_record(facts, record)
        drop_key(key_dir, steps.service_id)
        return steps.result
    sid, returned_key = _check_added(ctl, steps, _add_onion(ctl, steps))
    record[sid] = steps.view
    _save_record(facts, record)
    if keep_key:
        keep_key_of_plan(key_dir, steps, sid, returned_key)
    return {"changed": True, "service": _describe_ephemeral(sid, steps.view), "private_key": returned_key,
            "diff": {"before": steps.result["diff"]["before"], "after": _describe_ephemeral(sid, steps.view)}}


def keep_key_of_plan(key_dir, steps, sid=None, returned_key=None):
    """Keep the key of a planned service: the one given (the plan's key) or the one tor returned."""
    key = "%s:%s" % (steps.key_type, steps.key_blob) if steps.own_key else returned_key
    if key:
        keep_key(key_dir, sid or steps.service_id, key)


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


def plan_ephemeral(record, running, state, ports=None, private_key=None, service_id=None, client_auth_v3=(),
                   discard_pk=False, **options):
    """An EphemeralPlan from the record of configurations ({service id: view} of the running
    services) and the ids tor runs, or a ServiceError (an OnionKeyError for a bad key).
    options: the ADD_ONION options by name (see apply_ephemeral)."""
    options = _options(options)
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
    view = _ephemeral_view([hs.normalize_port(p) for p in ports or []],
                           [onion.check_client_public_key(k) for k in client_auth_v3 or []], options)
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
        return ctl.add_onion([(p["port"], hs.port_to_add_onion(p).split(",", 1)[1]) for p in view["ports"]],
                             key_type=steps.key_type, key_blob=steps.key_blob, flags=steps.flags,
                             client_auth_v3=view["client_auth_v3"], keywords=add_onion_keywords(view))

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


def add_back(ctl, sid, view, key):
    """ADD_ONION of a recorded ephemeral service (its view) with its kept key, detached, tor told to forget the key
    again; the service id tor answers must be sid (else it is removed again and refused)."""
    key_type, _sep, key_blob = key.partition(":")
    view = recorded_view(view)
    reply = ctl.add_onion([(p["port"], hs.port_to_add_onion(p).split(",", 1)[1]) for p in view["ports"]],
                          key_type=key_type, key_blob=key_blob, flags=["Detach", "DiscardPK"],
                          client_auth_v3=view.get("client_auth_v3") or (), keywords=add_onion_keywords(view))
    if reply["service_id"] != sid:
        ctl.del_onion(reply["service_id"])
        raise ProtocolError("tor returned a ServiceID that does not belong to the kept key")
    return sid


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
