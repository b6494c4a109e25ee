# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An x25519 client key for v3 client authorization, kept in a file on the controller (escrow):
read when the file exists, generated and written once (O_EXCL, no overwrite) when it does not."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onion_client_key
short_description: A client authorization key from the controller's escrow, generated when missing
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Returns the x25519 private key (52 base32 characters, as in tor's C(.auth_private) files) held in each file
    given, for v3 onion service client authorization, in the manner of the C(ansible.builtin.password) lookup.
  - When a file does not exist, a new key is generated (32 random bytes from C(os.urandom), clamped as
    RFC 7748 does), written to the file, mode C(0600), and returned. Missing directories are created with mode
    C(0700). The file appears complete or not at all (written under a temporary name, then linked into place
    without replacing anything), so that evaluations running at the same time, in several forks or several
    runs, all return the one key that got there first.
  - An existing file is never rewritten. A file that does not hold a key is an error naming the file, never its
    content.
  - Runs on the controller, also in check mode (generating a key there is not a change of a managed host).
  - The public half, for the service's C(authorized_clients), is P(onionlab.tor.x25519_public_key#filter).
  - The P(onionlab.tor.onion_service#role) and P(onionlab.tor.onion_client#role) roles keep client keys as
    C(<onion_service_backup_dir>/<server>/<service>/clients/<client>.<key>.x25519).
options:
  _terms:
    description:
      - The key files. An absolute path, or one relative to the playbook's directory (C(~) is expanded).
    type: list
    elements: path
    required: true
seealso:
  - plugin: onionlab.tor.x25519_public_key
    plugin_type: filter
  - module: onionlab.tor.tor_onion_client_auth
  - ref: ansible_collections.onionlab.tor.docsite.guide_client_rotation
    description: Clients and key rotation.
notes:
  - Use C(no_log=true) on every task that handles the key.
"""

EXAMPLES = r"""
- name: Give this host's tor alice's key to the admin service (generated on the controller on the first run)
  onionlab.tor.tor_onion_client_auth:
    address: "{{ admin_address }}"
    private_key: "{{ lookup('onionlab.tor.onion_client_key', playbook_dir ~ '/onion-keys/web1/admin/clients/alice.1.x25519') }}"
    client_name: alice
  no_log: true

- name: The public half, for the service
  ansible.builtin.set_fact:
    alice_public: "{{ lookup('onionlab.tor.onion_client_key', 'onion-keys/web1/admin/clients/alice.1.x25519')
                      | onionlab.tor.x25519_public_key }}"
  no_log: true
"""

RETURN = r"""
_raw:
  description: One x25519 private key per file, 52 base32 characters (upper case).
  type: list
  elements: str
"""

import errno
import os

from ansible.errors import AnsibleLookupError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.lookup import LookupBase

from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

KEY_SUFFIX_HINT = "52 base32 characters, an x25519 private key"


def new_private_key():
    """32 random bytes clamped as RFC 7748's decodeScalar25519 (tor clamps again; same key)."""
    raw = bytearray(os.urandom(32))
    raw[0] &= 248
    raw[31] &= 127
    raw[31] |= 64
    return onion.b32(bytes(raw))


def read_key(path):
    """The key in path (checked), or None when the file does not exist."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise AnsibleLookupError("onion_client_key: cannot read the key file %s: %s" % (path, exc.strerror))
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(4096)
    except OSError as exc:
        raise AnsibleLookupError("onion_client_key: cannot read the key file %s: %s" % (path, exc.strerror))
    try:
        text = data.decode("ascii").strip()
        raw = client_auth.parse_private_key(text, what="the key")
    except (UnicodeDecodeError, TorError, ValueError):
        raise AnsibleLookupError("onion_client_key: the key file %s does not hold a client key (%s)"
                                 % (path, KEY_SUFFIX_HINT))
    return onion.b32(raw)


def _makedirs(directory):
    if os.path.isdir(directory):
        return
    parent = os.path.dirname(directory)
    if parent and parent != directory:
        _makedirs(parent)
    try:
        os.mkdir(directory, 0o700)
    except OSError as exc:
        if exc.errno != errno.EEXIST or not os.path.isdir(directory):
            raise


def get_or_create(path):
    """The key in path, generating and linking it into place when missing. The temporary file has a
    unique name (O_EXCL); os.link() never replaces an existing file, so of two writers the second
    reads the first one's key."""
    key = read_key(path)
    if key is not None:
        return key
    directory = os.path.dirname(path) or "."
    try:
        _makedirs(directory)
    except OSError as exc:
        raise AnsibleLookupError("onion_client_key: cannot create the directory %s: %s" % (directory, exc.strerror))
    key = new_private_key()
    tmp = None
    try:
        for dummy in range(100):
            name = ".%s.%d.%s.tmp" % (os.path.basename(path), os.getpid(), os.urandom(4).hex())
            candidate = os.path.join(directory, name)
            try:
                fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            except OSError as exc:
                if exc.errno == errno.EEXIST:
                    continue
                raise
            tmp = candidate
            break
        else:
            raise AnsibleLookupError("onion_client_key: no temporary file could be made in %s" % directory)
        try:
            os.fchmod(fd, 0o600)
            data = (key + "\n").encode("ascii")
            while data:
                data = data[os.write(fd, data):]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise
            key = None  # another evaluation was first: its key wins
    except OSError as exc:
        raise AnsibleLookupError("onion_client_key: cannot write the key file %s: %s" % (path, exc.strerror))
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    if key is None:
        key = read_key(path)
        if key is None:
            raise AnsibleLookupError("onion_client_key: the key file %s vanished while it was written" % path)
    return key


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        keys = []
        for term in terms:
            if not isinstance(term, str) or not term.strip():
                raise AnsibleLookupError("onion_client_key: each term must be a non-empty path, not %s"
                                         % type(term).__name__)
            if "\n" in term or "\x00" in term:
                raise AnsibleLookupError("onion_client_key: a path must not contain a line break or a NUL byte")
            path = os.path.expanduser(to_native(term))
            if not os.path.isabs(path):
                path = os.path.join(self._loader.get_basedir(), path)
            path = os.path.normpath(path)
            if os.path.isdir(path):
                raise AnsibleLookupError("onion_client_key: %s is a directory, not a key file" % path)
            keys.append(get_or_create(path))
        return keys
