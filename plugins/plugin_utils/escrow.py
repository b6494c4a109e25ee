# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's escrow of the onion_service and onion_client roles, the one place that knows its layout
and writes its files:

  DIR/HOST/SERVICE/hs_ed25519_secret_key            a service's key (SERVICE: the directory, NAME or NAME.kN)
  DIR/HOST/SERVICE/hostname                         its address
  DIR/HOST/SERVICE/replaced/ADDRESS/...             an escrowed key the host no longer serves
  DIR/HOST/SERVICE/clients/CLIENT.KEY.x25519        a client's x25519 private key (KEY: its generation)

Directories 0700, files 0600, every file written by `put` (through files.atomic_write, a uniquely
named temporary file renamed into place), so that two runs writing at once never remove each other's file
and a reader never sees half a key; a client key is linked into place instead, never replacing one.

An escrowed service key is never dropped: when a host serves another key in a directory whose
key is escrowed (restore off on a rebuilt host, a vault key that is not the escrowed one), the
escrowed key moves to SERVICE/replaced/<its address>/ first, and the run says so.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import errno
import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import files
from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth, onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

KEY_FILE = "hs_ed25519_secret_key"
HOSTNAME = "hostname"
REPLACED = "replaced"
CLIENTS = "clients"


class EscrowError(ValueError):
    """A file of the escrow that cannot be read, made or written; the message names the file, never a key."""


def client_key_file(backup_dir, server, service, client, key=1):
    """Where the escrow keeps the private key of `client` (generation `key`) of `service` on `server`."""
    return os.path.join(backup_dir, server, service, CLIENTS, "%s.%d.x25519" % (client, key))


def hostname_file(backup_dir, server, directory):
    """Where the escrow keeps the address of the service directory `directory` on `server`."""
    return os.path.join(backup_dir, server, directory, HOSTNAME)


def read_hostname(backup_dir, server, directory):
    """(the address in the escrow's hostname file or None, the file's path)."""
    path = hostname_file(backup_dir, server, directory)
    try:
        with open(path, "rb") as handle:
            return handle.read(200).decode("ascii", "replace").strip(), path
    except OSError:
        return None, path


def make_dirs(directory):
    """The missing directories of `directory`, 0700 (existing ones are left as they are)."""
    if os.path.isdir(directory):
        return
    parent = os.path.dirname(directory)
    if parent and parent != directory:
        make_dirs(parent)
    try:
        os.mkdir(directory, 0o700)
    except OSError as exc:
        if exc.errno != errno.EEXIST or not os.path.isdir(directory):
            raise


def put(path, data, replace=True):
    """The escrow's one writer: `data` (bytes) in the file `path`, 0600, complete or not at all. With
    replace=False an existing file is kept (written under a unique name, then linked into place: os.link
    never replaces a file); returns whether `data` got there."""
    if replace:
        files.atomic_write(path, data, 0o600)
        return True
    tmp = os.path.join(os.path.dirname(path) or ".",
                       ".%s.%d.%s.tmp" % (os.path.basename(path), os.getpid(), os.urandom(4).hex()))
    files.atomic_write(tmp, data, 0o600)
    try:
        os.link(tmp, path)
        return True
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise
        return False
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


# -- client keys (x25519): read, or made once ---------------------------------------------------------------
def new_client_key():
    """32 random bytes clamped as RFC 7748's decodeScalar25519 (tor clamps again; same key), base32."""
    raw = bytearray(os.urandom(32))
    raw[0] &= 248
    raw[31] &= 127
    raw[31] |= 64
    return onion.b32(bytes(raw))


def read_client_key(path):
    """The client key in `path` (checked, base32 upper case), or None when the file does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise EscrowError("cannot read the key file %s: %s" % (path, exc.strerror))
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(4096)
    except OSError as exc:
        raise EscrowError("cannot read the key file %s: %s" % (path, exc.strerror))
    try:
        raw = client_auth.parse_private_key(data.decode("ascii").strip(), what="the key")
    except (UnicodeDecodeError, TorError, ValueError):
        raise EscrowError("the key file %s does not hold a client key (52 base32 characters, an x25519 private "
                          "key)" % path)
    return onion.b32(raw)


def client_key(path):
    """The client key in `path`, made there (missing directories 0700) when there is none. Of two runs making
    it at once, the second reads the first one's key (put(replace=False))."""
    key = read_client_key(path)
    if key is not None:
        return key
    directory = os.path.dirname(path) or "."
    try:
        make_dirs(directory)
    except OSError as exc:
        raise EscrowError("cannot create the directory %s: %s" % (directory, exc.strerror))
    key = new_client_key()
    try:
        if put(path, (key + "\n").encode("ascii"), replace=False):
            return key
    except OSError as exc:
        raise EscrowError("cannot write the key file %s: %s" % (path, exc.strerror))
    key = read_client_key(path)   # another run was first: its key wins
    if key is None:
        raise EscrowError("the key file %s vanished while it was written" % path)
    return key


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
        put(path, data)
        self.changed = True

    def write_hostname(self, name, address):
        """The address of service directory `name` (its hostname file)."""
        self.write(name, HOSTNAME, (address + "\n").encode("ascii"))

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
        old_host = self.read(name, HOSTNAME)
        if old_host is not None:
            self.write(kept, HOSTNAME, old_host)
        self.write(name, KEY_FILE, data)
        return address
