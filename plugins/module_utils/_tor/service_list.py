# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every onion service a tor runs, in the shape tor_hidden_service takes back (the logic of
tor_hidden_service_info): tor's block with each service directory's address, client files and
ob_config, and the ephemeral services with what the record says of them.

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import ephemeral
from ansible_collections.onionlab.tor.plugins.module_utils._tor import files
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.tor_facts import TorFacts

AUTH_DIR = "authorized_clients"


def _open_auth_dir(path):
    """A descriptor of <path>/authorized_clients, each of the two opened without following a link
    (tor's user owns both the service directory and its parent)."""
    service_fd = files.open_dir(path)
    try:
        return files.open_dir(AUTH_DIR, service_fd, os.path.join(path, AUTH_DIR))
    finally:
        os.close(service_fd)


def read_authorized_clients(path):
    """[{'name', 'public_key'}] from <path>/authorized_clients/*.auth (None when unreadable).
    Only regular files are read (no link followed, no FIFO waited on); others are left out."""
    try:
        auth_fd = _open_auth_dir(path)
    except OSError:
        return None
    try:
        names = sorted(os.listdir(auth_fd))
        clients = []
        for name in names:
            if not name.endswith(".auth"):
                continue
            try:
                data, _st = files.read_regular(name, 1024, dir_fd=auth_fd)
            except OSError:
                continue
            text = data.decode("utf-8", "replace").strip()
            key = text.rsplit(":", maxsplit=1)[-1] if text.startswith("descriptor:x25519:") else None
            clients.append({"name": name[:-5], "public_key": key})
        return clients
    except OSError:
        return None
    finally:
        os.close(auth_fd)


def read_ob_config(path):
    """The text of a service directory's ob_config (None: no such file, or unreadable, or not a
    regular file)."""
    try:
        return files.read_regular(os.path.join(path, hs.OB_CONFIG), 4096)[0].decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def describe_persistent(service, read_files=True):
    """A service dict for results: its config plus onion_address and authorized_clients, and the
    frontend of a balanced service (from its ob_config when the service comes from tor's block)."""
    out = hs.config_view(service)
    out["type"] = "persistent"
    out["onion_address"] = None
    out["authorized_clients"] = None
    if out["onionbalance_frontend"] is hs.OB_FLAG:
        out["onionbalance_frontend"] = hs.parse_ob_config(read_ob_config(service["path"])) if read_files else None
    if read_files:
        try:
            out["onion_address"] = onion.service_dir_address(service["path"])
        except (OSError, onion.OnionKeyError):
            out["onion_address"] = None
        out["authorized_clients"] = read_authorized_clients(service["path"])
    return out


def list_services(ctl, facts=None):
    """Every service tor runs now: persistent (GETCONF) and ephemeral (onions/*)."""
    facts = facts or TorFacts(ctl)
    persistent = hs.services_from_conf(ctl.get_conf("HiddenServiceOptions"))
    onions = ctl.list_onions()
    record = ephemeral.read_ephemeral_record(facts.data_dir) if facts.data_dir else {}
    result = [describe_persistent(s) for s in persistent]
    for kind in ("detached", "current"):
        for sid in onions[kind]:
            known = ephemeral.recorded_view(record.get(sid)) or {}
            entry = {"type": "ephemeral", "service_id": sid, "onion_address": sid + ".onion",
                     "detached": kind == "detached"}
            entry.update((key, known.get(key)) for key in ephemeral.VIEW_KEYS)
            result.append(entry)
    return result
