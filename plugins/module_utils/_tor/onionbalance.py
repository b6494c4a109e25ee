# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Onionbalance part of a persistent-service plan: a backend's ob_config file (written before
the SETCONF, removed once tor runs without the flag), and what a balanced service cannot have.

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import ServiceError


def plan_onionbalance(state, steps, desired, clients, keys):
    """The ob_config files of the desired services (steps.ob_writes, steps.ob_removes), after
    refusing what a balanced service cannot have: its own address as frontend, client
    authorization (Onionbalance 0.2.2 fetches a backend's descriptor knowing only its address
    and publishes the frontend's without client entries, so it can carry neither)."""
    for service in desired:
        path, frontend = service["path"], service["onionbalance_frontend"]
        current = state.ob_configs.get(path)
        if not frontend:
            if current is not None:
                steps.ob_removes.append(path)
            continue
        own = state.addresses.get(path)
        if path in keys:
            own = onion.onion_address(onion.ed25519_public_from_expanded(keys[path])) + ".onion"
        if own == frontend:
            raise ServiceError("onionbalance_frontend of %s is the service's own address %s: give the address of "
                               "the Onionbalance frontend (its own key), not the backend's" % (path, frontend))
        managed = clients.get(path)
        on_disk = [c["name"] for c in state.clients.get(path) or []]
        if managed or (managed is None and on_disk):
            raise ServiceError(
                "authorized_clients on the balanced service %s (onionbalance_frontend) is refused: Onionbalance "
                "0.2.2 cannot carry client authorization (it fetches and decrypts a backend's descriptor knowing "
                "only the backend's address, and publishes the frontend's descriptor without auth-client entries "
                "for your clients, readable by anyone who knows the address); %s" % (
                    path, "remove authorized_clients" if managed else
                    "its directory has client files (%s); give authorized_clients: [] to remove them"
                    % ", ".join(sorted(on_disk))))
        text = hs.render_ob_config(frontend)
        if current != text:
            steps.ob_writes[path] = text
    for service in steps.after:   # the balanced services of tor's block that this run leaves as they are
        if service["onionbalance_frontend"] is hs.OB_FLAG and service["path"] not in steps.ob_writes \
                and hs.parse_ob_config(state.ob_configs.get(service["path"])) is None:
            raise ServiceError(
                "the balanced service %s (HiddenServiceOnionbalanceInstance 1) has no valid ob_config (a line "
                "MasterOnionAddress <frontend>.onion); tor re-reads it on every change of the onion services and "
                "refuses a missing one, and tor 0.4.9.11 crashes (SIGSEGV in hs_ob_parse_config_file) on one without "
                "that line; nothing was changed. Give the service its onionbalance_frontend in this run, or fix %s"
                % (service["path"], os.path.join(service["path"], hs.OB_CONFIG)))
