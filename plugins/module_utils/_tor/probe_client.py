# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health check's own client of an onion service with client authorization (issue 38): the reach layer needs
to get through like an authorized client, with a key of its own.

One x25519 key per service, made on the host and kept there only: ``<DataDirectory>/onionlab-probe-clients/<a hash
of the service directory>.key``, mode 0600 in a directory 0700 of the module's user (root's with become), never
escrowed, never returned. Its public half is one more authorized client of the service, named ``probe``
(``authorized_clients/probe.auth``), so it shows in every list of the service's clients. The reach layer gives the
private half to tor's client side (ONION_CLIENT_AUTH_ADD, not permanent) for its probe and removes it after.

Only a service whose clients are managed and that admits at least one other authorized client gets it: a probe
client on a public service would make that service private and lock everyone out; when the last other client of a
service goes, so does the probe (the service is public again). A client the user named ``probe`` is theirs: then no
probe of ours is added. A rotation of the other clients keeps it (the same key, kept on the host).

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

import hashlib
import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import files
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion

NAME = "probe"
DIR_NAME = "onionlab-probe-clients"
_LIMIT = 256


def directory(data_dir):
    """Where a tor's probe keys are kept: in its DataDirectory."""
    return os.path.join(data_dir, DIR_NAME)


def _name(service_path):
    return hashlib.sha256(os.path.normpath(service_path).encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".key"


def private_key(key_dir, service_path):
    """The probe's 32-byte x25519 private key of a service, or None (none kept, or not readable as one)."""
    fd = files.private_dir(key_dir, False, "the directory of probe keys")
    if fd is None:
        return None
    name = _name(service_path)
    try:
        data = files.read_regular(name, _LIMIT, dir_fd=fd, shown=os.path.join(key_dir, name))[0]
    except FileNotFoundError:
        return None
    finally:
        os.close(fd)
    try:
        return onion.unb32(data.decode("ascii", "replace"), 32, "a probe key")
    except onion.OnionKeyError:
        return None


def public_key(key_dir, service_path, write):
    """The probe's public key (base32, as authorized_clients holds it) of a service: its kept key's, or a new key's,
    which is kept when write (in check mode it is not: the plan shows the probe client it would add)."""
    private = private_key(key_dir, service_path)
    if private is None:
        private = os.urandom(32)
        if write:
            fd = files.private_dir(key_dir, True, "the directory of probe keys")
            name = _name(service_path)
            try:
                files.write_secret(name, (onion.b32(private) + "\n").encode("ascii"), "." + name + ".tmp", dir_fd=fd)
            finally:
                os.close(fd)
    return onion.b32(onion.x25519_public(private))


def with_probe(clients, key_dir, write):
    """clients ({service path: [client dicts]}, the managed lists) with our probe client added to each list that
    has another client and none named probe."""
    out = {}
    for path, wanted in clients.items():
        wanted = list(wanted or [])
        if wanted and all(c.get("name") != NAME for c in wanted):
            wanted.append({"name": NAME, "public_key": public_key(key_dir, path, write)})
        out[path] = wanted
    return out


def forget(key_dir, service_path):
    """Remove a service's probe key (its service removed); True when there was one."""
    fd = files.private_dir(key_dir, False, "the directory of probe keys")
    if fd is None:
        return False
    try:
        os.unlink(_name(service_path), dir_fd=fd)
        return True
    except FileNotFoundError:
        return False
    finally:
        os.close(fd)
