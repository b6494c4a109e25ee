# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's escrow of the onion_service role: DIR/HOST/SERVICE/... in 0700 directories,
files 0600, written through a uniquely named temporary file (hidden_service.atomic_write) and renamed, so
that two runs writing at once never remove each other's file and a reader never sees half a key.

An escrowed service key is never dropped: when a host serves another key in a directory whose
key is escrowed (restore off on a rebuilt host, a vault key that is not the escrowed one), the
escrowed key moves to SERVICE/replaced/<its address>/ first, and the run says so.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import errno
import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion

KEY_FILE = "hs_ed25519_secret_key"
REPLACED = "replaced"


def name_problem(name, what):
    """Why `name` cannot be one directory of the escrow (an inventory host name, a service name), or None."""
    text = str(name)
    if not text or text in (".", "..") or "/" in text or "\0" in text:
        return ("the %s %r cannot name a directory of the escrow (empty, '.', '..', or with '/' or a NUL "
                "character)" % (what, text))
    return None


def key_address(data):
    """The onion address of a tor secret key file's bytes, or None when they are not one."""
    header = onion.SECRET_HEADER
    if data is None or len(data) != len(header) + 64 or not data.startswith(header):
        return None
    return onion.onion_address(onion.ed25519_public_from_expanded(data[len(header):])) + ".onion"


class Escrow(object):
    """The escrow of one host."""

    def __init__(self, backup_dir, host):
        problem = name_problem(host, "inventory host name")
        if problem:
            raise ValueError(problem)
        self.root = backup_dir
        self.host_dir = os.path.join(backup_dir, host)
        self.changed = False

    def path(self, name, *rest):
        return os.path.join(self.host_dir, name, *rest)

    def read(self, name, filename):
        try:
            fd = os.open(self.path(name, filename), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return None
            raise
        with os.fdopen(fd, "rb") as handle:
            return handle.read(4096)

    def directory(self, path):
        parent = os.path.dirname(path)
        if parent != path and not os.path.isdir(parent):   # as ansible.builtin.file makes them: 0700
            self.directory(parent)
        try:
            os.mkdir(path, 0o700)
            self.changed = True
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise
        if os.stat(path).st_mode & 0o7777 != 0o700:
            os.chmod(path, 0o700)
            self.changed = True

    def directories(self, name):
        for path in (self.root, self.host_dir, self.path(name)):
            self.directory(path)

    def write(self, name, filename, data):
        """The file (0600), when its content or mode differs."""
        self.directories(name)
        path = self.path(name, filename)
        if self.read(name, filename) == data:
            if os.stat(path).st_mode & 0o7777 != 0o600:
                os.chmod(path, 0o600)
                self.changed = True
            return
        hs.atomic_write(path, data, 0o600)
        self.changed = True

    def write_key(self, name, data):
        """The host's key file for service directory `name`. An escrowed key that differs is kept under
        replaced/<its address>/ first; returns that address (None when nothing was replaced)."""
        old = self.read(name, KEY_FILE)
        if old is None or old == data:
            self.write(name, KEY_FILE, data)
            return None
        address = key_address(old) or "unreadable-key"
        kept = os.path.join(name, REPLACED, address)
        self.write(kept, KEY_FILE, old)
        old_host = self.read(name, "hostname")
        if old_host is not None:
            self.write(kept, "hostname", old_host)
        self.write(name, KEY_FILE, data)
        return address
