# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What tor_hidden_service does in each of its three modes: an ephemeral service
(ephemeral=true), one persistent service (path) or a list of them (services). Each takes the
module's parameters, maps them onto _tor/ephemeral.py or _tor/service_manager.py and returns
its result.

This is a private module_utils file of onionlab.tor; its API may change at any time.

The module keeps the argument spec, the connection and the shaping of its result. Errors are
the client's (TorError, OSError: the module's _common.fail) or a ParameterError, parameters
that do not go together once they are normalised (a plain fail_json with its message).
"""

from __future__ import annotations

from ansible_collections.onionlab.tor.plugins.module_utils._hidden_service_args import SERVICE_OPTIONS
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import ephemeral as _ephemeral
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_manager as sm


class ParameterError(Exception):
    """Parameters that do not go together; the module fails with this message."""


def _service_params(params):
    return {k: params.get(k) for k in list(SERVICE_OPTIONS) + ["path"]}


def _clients(params):
    clients = params.get("authorized_clients")
    if clients is None:
        return None
    return [{"name": c["name"], "public_key": c.get("public_key")} for c in clients]


# options of a persistent service that ADD_ONION has no keyword for (hidden_service.OPTIONS)
NOT_EPHEMERAL = _ephemeral.NOT_EPHEMERAL


def ephemeral(ctl, p, check_mode, run_command=None):
    """ADD_ONION or DEL_ONION: ephemeral.apply_ephemeral's result."""
    if p.get("onionbalance_frontend"):
        raise ParameterError("onionbalance_frontend is not available for an ephemeral service: ADD_ONION has no "
                             "flag or keyword for HiddenServiceOnionbalanceInstance (tor's control-spec), and tor "
                             "reads ob_config only from a HiddenServiceDir; use a persistent service (path)")
    if p.get("keep_key") and p.get("discard_pk"):
        raise ParameterError("keep_key keeps the service's key on the host, discard_pk tells tor to forget it: give "
                             "one of them")
    for name in NOT_EPHEMERAL:
        if p.get(name) is not None:
            raise ParameterError("%s is not available for an ephemeral service (ADD_ONION has no keyword for it); "
                                 "use a persistent service (path)" % name)
    return _ephemeral.apply_ephemeral(
        ctl, p["state"], ports=p["ports"], private_key=p["private_key"], service_id=p["service_id"],
        client_auth_v3=p["client_auth_v3"] or [],
        discard_pk=p["discard_pk"] or not (p["return_private_key"] or p.get("keep_key")),
        keep_key=bool(p.get("keep_key")), key_dir=p.get("key_dir") or _ephemeral.KEY_DIR,
        check_mode=check_mode, lock_timeout=p["lock_timeout"], run_command=run_command,
        **{name: p.get(name) for name in _ephemeral.ADD_ONION_SINGLE + _ephemeral.ADD_ONION_GROUPS})


def persistent_manager(ctl, p, check_mode, run_command=None):
    return sm.PersistentManager(ctl, config_file=p["config_file"], persist=p["persist"],
                                include=p["include_config_file"], check_mode=check_mode,
                                lock_timeout=p["lock_timeout"], run_command=run_command)


def services_list(manager, p):
    """The services in `services` present (exclusive, prune as asked): PersistentManager.apply's result."""
    if p["state"] == "absent":
        raise ParameterError("state=absent takes one path, not a services list")
    desired, clients, keys = [], {}, {}
    for entry in p["services"]:
        service = hs.normalize_service(_service_params(entry))
        if not service["ports"]:   # before anything is written (tor refuses a service without ports)
            raise ParameterError("the service %s in services needs at least one entry in ports" % service["path"])
        desired.append(service)
        if _clients(entry) is not None:
            clients[service["path"]] = _clients(entry)
        if entry.get("private_key"):
            keys[service["path"]] = onion.parse_key_blob(entry["private_key"])
    return manager.apply(desired, exclusive=p["exclusive"], clients=clients, keys=keys, prune=p["prune"])


def one_service(manager, p):
    """The service at `path` present or absent (purged as asked): (PersistentManager.apply's
    result, the canonical service asked for)."""
    service = hs.normalize_service(_service_params(p))
    if p["state"] == "absent":
        return manager.apply([], absent=[service["path"]], purge=p["purge"]), service
    if not service["ports"]:
        raise ParameterError("a present service needs at least one entry in ports")
    clients = {service["path"]: _clients(p)} if _clients(p) is not None else {}
    keys = {service["path"]: onion.parse_key_blob(p["private_key"])} if p["private_key"] else {}
    return manager.apply([service], clients=clients, keys=keys), service
