# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A client tor's credentials for v3 onion services with client authorization: the control
commands ONION_CLIENT_AUTH_ADD / _REMOVE / _VIEW (tor 0.4.3+) and the files of tor's
ClientOnionAuthDir.

This is a private module_utils file of onionlab.tor; its API may change at any time.

    with connect(port=9051) as ctl:
        view(ctl)                                   # [Credential(service_id=..., flags=['Permanent'])]
        add(ctl, sid, key, client_name="alice", permanent=True)
        remove(ctl, sid)                            # True, or False when tor had none

Grammar (control-spec 3.30-3.32, and tor 0.4.9's control_hs.c where they differ):

    C: ONION_CLIENT_AUTH_ADD <56-char id> x25519:<base64 key> [ClientName=<name>] [Flags=Permanent]
    S: 250 OK | 251 Client for onion existed and replaced | 252 Registered client and decrypted desc
    C: ONION_CLIENT_AUTH_REMOVE <id>
    S: 250 OK | 251 No credentials for "<id>"
    C: ONION_CLIENT_AUTH_VIEW [<id>]
    S: 250-ONION_CLIENT_AUTH_VIEW [<id>]
       250-CLIENT <id> x25519:<base64 key> [Flags=Permanent] [ClientName=<name>]   (tor's order)
       250 OK

Things tor does that the callers must know:

* The key travels in base64 on the control port and in base32 in the files; VIEW returns the
  private key. A Credential keeps it in memory (for comparison) and never shows it: not in its
  repr, not in as_entry(), not in an error message (tor's own 553 for an all-zero key quotes it).
* A ClientName longer than 16 characters makes tor 0.4.9 answer 512 and then carry on and answer
  again (two replies to one command): names are checked here before anything is sent.
* A Permanent credential is written as ClientOnionAuthDir/<id>.auth_private
  ("<id>:descriptor:x25519:<base32 key>", mode 0600, no newline); REMOVE deletes the first file
  that names the service, but only when the credential in memory is Permanent (one that replaced
  a Permanent one without the flag leaves the file behind).
* tor keeps no names on disk: a credential loaded from ClientOnionAuthDir has none. And at every
  configuration reload (SIGHUP, and any SETCONF) tor replaces all its credentials with the files'
  content: non-permanent credentials are dropped, names forgotten.
* Two files in ClientOnionAuthDir naming the same service make tor refuse that directory:
  "Duplicate authorization": tor does not start, and exits on its next reload.

Nothing here imports Ansible.
"""

from __future__ import annotations

import base64
import binascii
import errno
import hmac
import os
import re
import stat

from ansible_collections.onionlab.tor.plugins.module_utils._tor import files
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import (
    OperationFailed,
    ProtocolError,
    UnsafeValue,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.onion import (
    OnionKeyError,
    parse_onion_address,
    x25519_public,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.reply import (
    check_token,
    check_value,
    format_command,
    parse_mapping,
)

KEY_TYPE = "x25519"
PERMANENT = "Permanent"
NAME_MAX = 16                                   # tor's REND_CLIENTNAME_MAX_LEN
# tor takes the ClientName value up to the next space, unquoted, and VIEW writes it back as is:
# tor's old client-name set (letters, digits, '+', '-', '_') and the '.' of the collection's
# authorized_clients names
_NAME_RE = re.compile(r"[A-Za-z0-9+_.-]{1,%d}\Z" % NAME_MAX)
_B32_KEY_RE = re.compile(r"[A-Za-z2-7]{52}\Z")
_B64_KEY_RE = re.compile(r"[A-Za-z0-9+/]{43}=?\Z")
FILE_SUFFIX = ".auth_private"
AUTH_TYPE = "descriptor"
FILE_MAX = 4096                                 # a credential file is ~120 bytes
OLD_TOR_HINT = "client authorization over the control port needs tor 0.4.3 or later"

ADD, REMOVE, VIEW = "ONION_CLIENT_AUTH_ADD", "ONION_CLIENT_AUTH_REMOVE", "ONION_CLIENT_AUTH_VIEW"


class Credential:
    """One credential: service id (no .onion), the 32-byte private key, name, flags.

    The key is for comparison in memory: repr() and as_entry() never show it."""

    __slots__ = ("service_id", "private_key", "client_name", "flags", "path")

    def __init__(self, service_id, private_key, client_name=None, flags=(), path=None):
        self.service_id = service_id
        self.private_key = private_key
        self.client_name = client_name
        self.flags = list(flags)
        self.path = path

    @property
    def permanent(self):
        return PERMANENT in self.flags

    @property
    def address(self):
        return self.service_id + ".onion"

    def same_key(self, private_key):
        return hmac.compare_digest(self.private_key, private_key)

    def public_key(self):
        """The client's x25519 public key in base32: what the service's authorized_clients holds."""
        return _b32(x25519_public(self.private_key))

    def as_entry(self):
        """The shape that tor_onion_client_auth returns and takes back: no private key."""
        entry = {"address": self.address, "service_id": self.service_id, "client_name": self.client_name,
                 "permanent": self.permanent, "flags": list(self.flags), "public_key": self.public_key()}
        if self.path is not None:
            entry["path"] = self.path
        return entry

    def __repr__(self):
        return "Credential(service_id=%r, client_name=%r, flags=%r, path=%r, private_key=<hidden>)" % (
            self.service_id, self.client_name, self.flags, self.path)


# -- checks of what the user gives ---------------------------------------------------------------
def _b32(raw):
    return base64.b32encode(raw).decode("ascii").rstrip("=")


def check_service_id(address, what="address"):
    """A v3 onion address with or without '.onion' (checksum and version checked) -> its 56-char id."""
    if not isinstance(address, str):
        raise UnsafeValue("%s must be a string" % what)
    check_value(address, what)
    text = address.strip().lower()
    try:
        parse_onion_address(text)
    except OnionKeyError as exc:
        raise UnsafeValue("%s: %s" % (what, exc))
    return text[:-len(".onion")] if text.endswith(".onion") else text


def parse_private_key(text, service_id=None, what="private_key"):
    """A client's x25519 private key -> 32 bytes. Accepted: 52 base32 characters (as in an
    .auth_private file and tor_hidden_service's generated_clients[].private_key), with or without
    'descriptor:x25519:', or a whole auth_private line '<id>:descriptor:x25519:<key>' (its id must
    then be service_id). Never echoes the key."""
    if not isinstance(text, str):
        raise UnsafeValue("%s must be a string" % what)
    text = text.strip()                 # a key read from a file may end with a newline
    try:
        check_value(text, what)
    except UnsafeValue:
        raise UnsafeValue("%s contains a line break or a NUL byte" % what)
    fields = [f.strip() for f in text.split(":")]
    if len(fields) == 4:
        line_id = fields[0].lower()
        if line_id.endswith(".onion"):
            line_id = line_id[:-len(".onion")]
        if service_id is not None and line_id != service_id:
            raise UnsafeValue("%s is an auth_private line for another service than %s.onion" % (what, service_id))
        fields = fields[1:]
    if len(fields) == 3:
        if fields[0] != AUTH_TYPE or fields[1].lower() != KEY_TYPE:
            raise UnsafeValue("%s must be an x25519 key (descriptor:x25519:<base32 key>)" % what)
        fields = fields[2:]
    if len(fields) != 1:
        raise UnsafeValue("%s must be a base32 x25519 private key (52 characters), optionally as "
                          "descriptor:x25519:<key> or a whole <service id>:descriptor:x25519:<key> line" % what)
    key = fields[0]
    if not _B32_KEY_RE.match(key):
        raise UnsafeValue("%s must be 52 base32 characters (A-Z, 2-7): an x25519 private key of 32 bytes"
                          % what)
    try:
        raw = base64.b32decode(key.upper() + "====")
    except (binascii.Error, ValueError):
        raise UnsafeValue("%s is not base32" % what)
    if len(raw) != 32 or _b32(raw) != key.upper():
        raise UnsafeValue("%s does not decode to exactly 32 bytes" % what)
    if raw == bytes(32):
        raise UnsafeValue("%s is all zeros, which tor refuses" % what)
    return raw


def check_client_name(name, what="client_name"):
    if not isinstance(name, str):
        raise UnsafeValue("%s must be a string" % what)
    check_value(name, what)
    if not _NAME_RE.match(name):
        if not name or len(name) > NAME_MAX:
            raise UnsafeValue("%s must be 1 to %d characters long (tor's limit), not %d"
                              % (what, NAME_MAX, len(name)))
        raise UnsafeValue("%s %r may hold only letters, digits, '+', '-', '_' and '.'" % (what, name))
    return name


# -- the control commands --------------------------------------------------------------------------
def _refused(reply, command, secret=None):
    """OperationFailed from an error reply; the key (base64) is cut out of tor's message."""
    code, message = reply.code, reply.lines[-1].text
    for line in reply.lines:
        if not line.code.startswith("2"):
            code, message = line.code, line.text
            break
    if secret:
        message = message.replace(secret, "<private key>")
    if code == "510":
        message = "%s (%s)" % (message, OLD_TOR_HINT)
    return OperationFailed(code, message, command)


def _request(ctl, command, args, secret=None):
    reply = ctl.sock.request(format_command(command, args))
    if not reply.ok:
        raise _refused(reply, command, secret)
    return reply


def add(ctl, service_id, private_key, client_name=None, permanent=False):
    """ONION_CLIENT_AUTH_ADD. Returns tor's status: '250' added, '251' replaced one tor had,
    '252' added and a cached descriptor decrypted with it."""
    check_token(service_id, "service id")
    if len(private_key) != 32:
        raise UnsafeValue("an x25519 private key is 32 bytes")
    blob = base64.b64encode(private_key).decode("ascii")
    args = [service_id, "%s:%s" % (KEY_TYPE, blob)]
    if client_name is not None:
        args.append("ClientName=" + check_client_name(client_name))
    if permanent:
        args.append("Flags=" + PERMANENT)
    return _request(ctl, ADD, args, secret=blob).code


def remove(ctl, service_id):
    """ONION_CLIENT_AUTH_REMOVE: True when tor had a credential (250), False when not (251)."""
    check_token(service_id, "service id")
    return _request(ctl, REMOVE, [service_id]).code == "250"


def view(ctl, service_id=None):
    """ONION_CLIENT_AUTH_VIEW: tor's credentials (for one service when given), in tor's order."""
    args = []
    if service_id is not None:
        args.append(check_token(service_id, "service id"))
    return parse_view(_request(ctl, VIEW, args), service_id)


def parse_view(reply, service_id=None):
    """The credentials of a VIEW reply. Error messages never quote a CLIENT line (it holds a key)."""
    lines = reply.lines
    if len(lines) < 2 or lines[-1].text != "OK":
        raise ProtocolError("%s reply does not end with OK" % VIEW)
    head = lines[0].text.split(" ")
    if head[0] != VIEW or head[1:] != ([service_id] if service_id else []):
        raise ProtocolError("%s reply does not begin with %s%s" % (VIEW, VIEW, " " + service_id if service_id else ""))
    result = []
    for number, line in enumerate(lines[1:-1], 2):
        if line.sep == "+" or line.code != "250":
            raise ProtocolError("%s reply line %d is not a 250 CLIENT line" % (VIEW, number))
        result.append(_parse_client_line(line.text, number))
    for cred in result:
        if service_id is not None and cred.service_id != service_id:
            raise ProtocolError("%s for %s returned a credential of another service" % (VIEW, service_id))
    return result


def _parse_client_line(text, number):
    where = "%s reply line %d" % (VIEW, number)
    parts = text.split(" ", 3)
    if len(parts) < 3 or parts[0] != "CLIENT":
        raise ProtocolError("%s is not 'CLIENT <address> x25519:<key> ...'" % where)
    sid, key = parts[1], parts[2]
    try:
        parse_onion_address(sid)
    except OnionKeyError:
        raise ProtocolError("%s names no valid v3 service id" % where)
    if sid.endswith(".onion"):
        raise ProtocolError("%s names no valid v3 service id" % where)
    key_type, _colon, blob = key.partition(":")
    if key_type.lower() != KEY_TYPE or not _B64_KEY_RE.match(blob):
        raise ProtocolError("%s has no x25519:<base64 key> (the key is not shown)" % where)
    try:
        raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ProtocolError("%s has a key that is not base64 (the key is not shown)" % where)
    if len(raw) != 32:
        raise ProtocolError("%s has a key that is not 32 bytes (the key is not shown)" % where)
    try:
        positional, options = parse_mapping(parts[3] if len(parts) > 3 else "")
    except ProtocolError:
        raise ProtocolError("%s has malformed options" % where)
    if positional:
        raise ProtocolError("%s has unexpected words after the key" % where)
    flags = [f for f in options.get("Flags", "").split(",") if f]
    return Credential(sid, raw, options.get("ClientName") or None, flags)


def plan_control(service_id, private_key, client_name, present, permanent, current, own_file, mine):
    """What tor_onion_client_auth does over the control port, as data: (add, remove_first, strays, changed).
    current: tor's credential of service_id (view) or None; own_file: service_id's file in tor's ClientOnionAuthDir
    (None: tor has no such directory); mine: the credentials of service_id read from that directory's files (None:
    they cannot be seen). add: ONION_CLIENT_AUTH_ADD the key; remove_first: a permanent credential to make
    non-permanent is removed before (tor keeps its file otherwise); strays: files of service_id to delete."""
    if not present:
        strays = [c.path for c in mine or []]
        return False, current is not None, strays, bool(current is not None or strays)
    add = (current is None or not current.same_key(private_key) or current.client_name != client_name
           or current.permanent != permanent)
    # tor's file must hold this key, or the credential would change at the next start
    if permanent and mine is not None and not any(c.path == own_file and c.same_key(private_key) for c in mine):
        add = True
    remove_first = current is not None and current.permanent and not permanent
    strays = [c.path for c in mine or [] if not (permanent and c.path == own_file)]
    return add, remove_first, strays, bool(add or remove_first or strays)


def plan_files(service_id, private_key, present, creds, own_file):
    """What tor_onion_client_auth does in a ClientOnionAuthDir (auth_dir, tor not asked), as data: (current, mine,
    write, strays). creds: the credentials read from the directory's files; own_file: service_id's file there.
    current: the credential of own_file (None: no such file); mine: every credential of service_id; write: own_file
    is (re)written (missing, or another key; else only its mode and owner are checked); strays: the other files of
    service_id to delete (all of them when absent)."""
    current = next((c for c in creds if c.path == own_file), None)
    mine = [c for c in creds if c.service_id == service_id]
    if not present:
        return current, mine, False, [c.path for c in mine]
    write = current is None or not current.same_key(private_key)
    return current, mine, write, [c.path for c in mine if c.path != own_file]


def auth_dir(ctl):
    """tor's ClientOnionAuthDir, or None when unset."""
    values = ctl.get_conf_map("ClientOnionAuthDir").get("ClientOnionAuthDir") or []
    return values[0] if values else None


# -- ClientOnionAuthDir files ------------------------------------------------------------------------
def file_name(service_id):
    """The name tor itself gives the file of a Permanent credential."""
    return service_id + FILE_SUFFIX


def format_line(service_id, private_key):
    """A file's content as tor writes it (base32 lower case, no newline)."""
    return "%s:%s:%s:%s" % (service_id, AUTH_TYPE, KEY_TYPE, _b32(private_key).lower())


def parse_line(text):
    """A file's content as tor reads it (hs_client.c parse_auth_file_content) -> (id, key), or
    None when tor would ignore the file."""
    fields = [f.strip() for f in text.split(":")]
    if len(fields) != 4 or fields[1] != AUTH_TYPE or fields[2] != KEY_TYPE:
        return None
    sid, key = fields[0], fields[3]
    if not _B32_KEY_RE.match(key):
        return None
    try:
        parse_onion_address(sid)
        raw = base64.b32decode(key.upper() + "====")
    except (OnionKeyError, binascii.Error, ValueError):
        return None
    if sid.endswith(".onion") or len(raw) != 32 or raw == bytes(32):
        return None
    return sid, raw


def read_dir(path):
    """The credentials of a ClientOnionAuthDir: (credentials, names of *.auth_private files tor would
    ignore). Only regular files ending in .auth_private count, as for tor. A missing directory
    has none."""
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return [], []
        raise
    creds, ignored = [], []
    for name in names:
        if not name.endswith(FILE_SUFFIX) or name == FILE_SUFFIX:
            continue
        full = os.path.join(path, name)
        try:
            fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ELOOP):
                ignored.append(name)
                continue
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                ignored.append(name)
                continue
            data = os.read(fd, FILE_MAX + 1)
        finally:
            os.close(fd)
        parsed = parse_line(data.decode("ascii", "replace")) if len(data) <= FILE_MAX else None
        if parsed is None:
            ignored.append(name)
            continue
        # tor keeps no names on disk and marks every credential it loads from there Permanent
        creds.append(Credential(parsed[0], parsed[1], None, [PERMANENT], path=full))
    return creds, ignored


def write_file(path, content, uid=-1, gid=-1, dir_fd=None):
    """Write content to path atomically: a 0600 temporary file beside it (owner set before it holds
    the key name), then rename. With dir_fd (the directory opened without following a link: tor's
    user may own it), the file is that directory's entry of path's base name."""
    directory, base = os.path.split(path)
    tmp = ".%s.onionlab-new" % base
    if dir_fd is None:
        files.write_secret(path, content.encode("ascii"), os.path.join(directory, tmp), uid, gid)
    else:
        files.write_secret(base, content.encode("ascii"), tmp, uid, gid, dir_fd=dir_fd)


__all__ = ["Credential", "add", "remove", "view", "parse_view", "auth_dir", "check_service_id",
           "parse_private_key", "check_client_name", "file_name", "format_line", "parse_line", "read_dir",
           "write_file", "PERMANENT", "NAME_MAX"]
