#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: tor_onion_client_auth
short_description: Give a client tor its key to a v3 onion service with client authorization, or take it away
version_added: 0.1.0
description:
  - Manages the credential that a B(client) tor uses to reach one v3 onion service whose descriptor is encrypted for
    authorized clients (the service side is O(onionlab.tor.tor_hidden_service#module:authorized_clients)).
  - B(Over the control port) (the default), with C(ONION_CLIENT_AUTH_ADD), C(ONION_CLIENT_AUTH_REMOVE) and
    C(ONION_CLIENT_AUTH_VIEW) (tor 0.4.3 or later). The running tor uses the key at once, without a restart or reload.
    With O(permanent=true) tor also writes it to its C(ClientOnionAuthDir), so that it survives a restart.
  - B(As files) (O(auth_dir) given), when tor is not running or not reachable. The module writes the
    C(ClientOnionAuthDir) itself, one C(<service id>.auth_private) file per service (the name tor gives such a file),
    mode C(0600) in a C(0700) directory. tor reads them when it starts or reloads.
  - tor holds at most one credential per service; the module manages the one for O(address) and leaves the others
    alone. M(onionlab.tor.tor_onion_client_auth_info) lists them all, in the shape of RV(credentials).
  - The private key is compared in memory and never returned, shown in a diff or put in a message.
author:
  - onionlab.tor contributors (@onionlab)
extends_documentation_fragment:
  - onionlab.tor.control
  - onionlab.tor.attributes
  - onionlab.tor.attributes.ACTIONGROUP_TOR
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details:
      - The diff shows the address, client name, whether the credential is permanent, the client's B(public) key and
        the files naming the service; never a private key.
options:
  address:
    description:
      - The onion service's v3 address, with or without C(.onion).
    type: str
    required: true
  state:
    description:
      - V(present) gives the client tor the key for O(address); V(absent) removes the credential, and every file of the
        C(ClientOnionAuthDir) that names the service, so that it does not come back at tor's next start.
    type: str
    choices: [present, absent]
    default: present
  private_key:
    description:
      - The client's x25519 private key, 52 base32 characters, as in an C(.auth_private) file and in
        RV(onionlab.tor.tor_hidden_service#module:generated_clients[].private_key). A C(descriptor:x25519:) prefix or
        a whole C(<service id>:descriptor:x25519:<key>) line (RV(onionlab.tor.tor_hidden_service#module:generated_clients[].auth_private))
        is accepted too; the line must then name O(address).
      - Required with O(state=present).
    type: str
  client_name:
    description:
      - A nickname for the credential (tor's C(ClientName)), 1 to 16 letters, digits, C(+), C(-), C(_) or C(.).
      - tor keeps names in memory only. After tor restarts or reloads its configuration, a permanent credential has
        no name; a run that asks for one then reports a change and gives it back.
      - Not kept with O(auth_dir) (tor has no place for names in its files); a warning says it was ignored.
    type: str
  permanent:
    description:
      - Whether tor also stores the credential in its C(ClientOnionAuthDir) (C(Flags=Permanent)), so that it survives
        a restart. tor must have a C(ClientOnionAuthDir) for that; the module fails, before changing anything, when it
        has none.
      - With V(false), the credential lives in tor's memory only, until tor stops B(or reloads its configuration)
        (C(SIGHUP), or any C(SETCONF), such as a M(onionlab.tor.tor_hidden_service) run on the same tor). tor then
        keeps only what its C(ClientOnionAuthDir) holds. A file left there for the service is removed.
      - Must be V(true) with O(auth_dir).
    type: bool
    default: true
  auth_dir:
    description:
      - Manage the files of this C(ClientOnionAuthDir) directly instead of talking to tor, an absolute path. The
        directory is created (mode C(0700)) when missing; its parent must exist. tor reads it when it starts and on
        a reload (C(SIGHUP)); tor must be configured with C(ClientOnionAuthDir) set to this path.
      - With O(auth_dir), the control connection options are not used (so that O(control_port) set for the
        whole C(group/onionlab.tor.tor) in C(module_defaults) does not get in the way); no connection is made.
      - Without it, the module uses the control port. Files that tor writes there are then tor's own, but when the
        directory tor names is readable here (a local tor), the module also removes other files naming the same
        service, because two files for one service make tor refuse the whole directory (tor does not start, and
        exits on its next reload).
    type: path
  owner:
    description:
      - With O(auth_dir), the user (name or uid) who owns the directory and the files; tor checks that its
        C(ClientOnionAuthDir) belongs to the user it runs as.
      - When omitted and the module runs as root, the owner of the existing directory, or when it is created, the
        owner of its parent (tor's C(DataDirectory), for example C(/var/lib/tor), belongs to tor's user). When not
        root, files belong to the user the module runs as; giving them to another user needs root (the module
        refuses before writing anything).
    type: str
notes:
  - tor replaces a service's credential as a whole; the module does that when the key, the name or O(permanent)
    differ (dropping the permanence removes tor's file first, since tor would keep it otherwise).
  - After O(state=absent) the client tor refuses new connections to the service at once (SOCKS error C(0xf4), missing
    client authorization), on old and new circuits alike, because tor forgets the service's descriptor with the key.
    Connections already open stay open. Revoking a client for good is done on the B(service), by removing it from
    O(onionlab.tor.tor_hidden_service#module:authorized_clients).
seealso:
  - module: onionlab.tor.tor_onion_client_auth_info
  - module: onionlab.tor.tor_hidden_service
  - ref: ansible_collections.onionlab.tor.docsite.guide_client_auth
    description: Client authorization, from the service to its clients.
"""

EXAMPLES = r"""
- name: Give this host's tor its key to the admin service, now and after restarts
  onionlab.tor.tor_onion_client_auth:
    address: 3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd.onion
    private_key: "{{ vault_admin_client_key }}"
    client_name: laptop

- name: The same key straight from the service's run (an auth_private line names its service)
  onionlab.tor.tor_onion_client_auth:
    address: "{{ hostvars['admin-host'].admin.onion_address }}"
    private_key: "{{ (hostvars['admin-host'].admin.generated_clients | selectattr('name', 'equalto', 'bob') | first).auth_private }}"

- name: Before tor is installed or started, write its ClientOnionAuthDir
  onionlab.tor.tor_onion_client_auth:
    auth_dir: /var/lib/tor/onion_auth
    owner: debian-tor
    address: 3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd
    private_key: "{{ vault_admin_client_key }}"

- name: This client no longer reaches the admin service
  onionlab.tor.tor_onion_client_auth:
    address: 3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd.onion
    state: absent

- name: Every credential tor has ...
  onionlab.tor.tor_onion_client_auth_info:
  register: client_auth

- name: ... given again to another client tor (the keys come from the vault, never from the list)
  onionlab.tor.tor_onion_client_auth:
    control_socket: /run/tor-other/control
    address: "{{ item.address }}"
    client_name: "{{ item.client_name | default(omit, true) }}"
    permanent: "{{ item.permanent }}"
    private_key: "{{ vault_client_keys[item.service_id] }}"
  loop: "{{ client_auth.credentials }}"
  loop_control:
    label: "{{ item.address }}"
"""

RETURN = r"""
credential:
  description: The credential for O(address) after the run (predicted in check mode), or null when there is none.
  returned: success
  type: dict
  contains:
    address:
      description: The service's address, with C(.onion).
      type: str
    service_id:
      description: The address without C(.onion).
      type: str
    client_name:
      description: tor's C(ClientName) of the credential, or null.
      type: str
    permanent:
      description: Whether tor keeps the credential in its C(ClientOnionAuthDir).
      type: bool
    flags:
      description: tor's flags of the credential (C(Permanent) is the only one tor has).
      type: list
      elements: str
    public_key:
      description: The client's x25519 B(public) key (base32), derived from the private key; it is what the
        service's C(authorized_clients/NAME.auth) must hold (after C(descriptor:x25519:)).
      type: str
    path:
      description: With O(auth_dir), the credential's file.
      type: str
  sample:
    address: 3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd.onion
    service_id: 3zctsvlipa2huw7m6aue2pgg5smygco7l5wq4f4wfc4zuox473k7i7qd
    client_name: laptop
    permanent: true
    flags: [Permanent]
    public_key: N2NU7BSRL6YODZCYPN4CREB54TYLKGIE2KYOQWLFYC23ZJVCE5DQ
credentials:
  description:
    - Every credential of the client tor after the run (predicted in check mode), each as RV(credential), in tor's order
      (with O(auth_dir), by file name); the shape M(onionlab.tor.tor_onion_client_auth_info) returns.
  returned: success
  type: list
  elements: dict
auth_dir:
  description: The C(ClientOnionAuthDir) in use, O(auth_dir) or the one tor reports; null when tor has none.
  returned: success
  type: str
removed_files:
  description: Files of the C(ClientOnionAuthDir) the run removed (or would remove, in check mode) because they named
    the service; tor's own removal of its file is not listed.
  returned: success
  type: list
  elements: str
"""

import ipaddress
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.onionlab.tor.plugins.module_utils._common import (
    MODULE_ERRORS,
    connect_module,
    control_argument_spec,
    fail,
    module_kwargs,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth as ca
from ansible_collections.onionlab.tor.plugins.module_utils._tor import files


class _Refusal(Exception):
    """A parameter that cannot be honoured; one message, nothing changed."""


def _wanted(p):
    """The user's input, checked before anything is read or written."""
    sid = ca.check_service_id(p["address"])
    key = None
    if p["state"] == "present":
        if p["private_key"] is None:
            raise _Refusal("private_key is required with state=present")
        key = ca.parse_private_key(p["private_key"], sid)
    name = ca.check_client_name(p["client_name"]) if p["client_name"] is not None else None
    return sid, key, name


def _view_state(cred, files):
    """What a diff shows of a credential: never the private key."""
    if cred is None:
        state = {"state": "absent"}
    else:
        state = {"state": "present", "client_name": cred.client_name, "permanent": cred.permanent,
                 "public_key": cred.public_key()}
    if files is not None:
        state["files"] = sorted(files)
    return state


# -- over the control port ---------------------------------------------------------------------------------
def _is_local(p):
    if p["control_socket"] is not None or p["control_port"] is None:
        return True        # a unix socket, or the default: /run/tor/control or 127.0.0.1:9051
    host = (p["control_host"] or "").strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _local_files(module, tor_dir):
    """The credentials in tor's ClientOnionAuthDir when it is a directory readable here, else None."""
    p = module.params
    if not tor_dir or not _is_local(p) or not os.path.isdir(tor_dir) or not os.access(tor_dir, os.R_OK | os.X_OK):
        return None
    try:
        creds, ignored = ca.read_dir(tor_dir)
    except OSError:
        return None
    if ignored:
        module.warn(_IGNORED % (tor_dir, ", ".join(ignored)))
    return creds


_IGNORED = ("tor cannot use these files of %s (not '<service id>:descriptor:x25519:<key>'): %s; tor 0.4.9 may even "
            "refuse to start with such a file")


def _control(module, sid, key, name):
    p = module.params
    present = p["state"] == "present"
    permanent = p["permanent"]
    with connect_module(module) as ctl:
        before = ca.view(ctl)
        current = next((c for c in before if c.service_id == sid), None)
        tor_dir = ca.auth_dir(ctl)
        files = _local_files(module, tor_dir)
        mine = [c for c in files or [] if c.service_id == sid]
        own_file = os.path.join(tor_dir, ca.file_name(sid)) if tor_dir else None

        if present and permanent and not tor_dir:
            raise _Refusal("permanent=true needs tor's ClientOnionAuthDir, which this tor does not have: set "
                           "ClientOnionAuthDir in its torrc (a directory of mode 0700 owned by tor's user), or "
                           "use permanent=false")
        add, remove_first, strays, changed = ca.plan_control(sid, key, name, present, permanent, current, own_file,
                                                             mine if files is not None else None)

        wanted = ca.Credential(sid, key, name, [ca.PERMANENT] if permanent else []) if present else None
        before_files = after_files = None
        if files is not None:          # the files are shown when they can be seen
            before_files = [c.path for c in mine]
            after_files = [own_file] if present and permanent else []
        diff = {"before": _view_state(current, before_files), "after": _view_state(wanted, after_files),
                "before_header": sid + ".onion", "after_header": sid + ".onion"}

        if changed and not module.check_mode:
            if remove_first:
                ca.remove(ctl, sid)
            for path in strays:
                _unlink(path)
            if add:
                ca.add(ctl, sid, key, name, permanent)
            after = ca.view(ctl)
        else:
            after = [c for c in before if c.service_id != sid]
            if wanted is not None:
                after = sorted(after + [wanted], key=_tor_sort_key)
    return _result(changed, after, sid, tor_dir, strays, diff)


def _tor_sort_key(cred):
    """tor sorts VIEW's lines as strings: by 'CLIENT <id> x25519:...', i.e. by service id."""
    return cred.service_id


def _unlink(path):
    """Remove a file of tor's ClientOnionAuthDir, its directory opened without following a link
    (tor's user owns it, often its parent too)."""
    try:
        dir_fd = files.open_dir(os.path.dirname(path))
    except FileNotFoundError:
        return
    try:
        os.unlink(os.path.basename(path), dir_fd=dir_fd)
    except FileNotFoundError:
        pass            # tor's REMOVE took it
    finally:
        os.close(dir_fd)


# -- as files ------------------------------------------------------------------------------------------------
def _owner(p, directory):
    """(uid, gid) the directory and files must have, or None to leave them as they come."""
    if p["owner"] is not None:
        text = p["owner"].strip()
        try:
            entry = pwd.getpwuid(int(text)) if text.isdigit() else pwd.getpwnam(text)
        except (KeyError, ValueError, OverflowError):
            if text.isdigit() and os.geteuid() in (0, int(text)):
                return int(text), -1
            if text.isdigit():
                raise _Refusal("owner %s: only root can give the files to another user than the one the module "
                               "runs as" % p["owner"])
            raise _Refusal("owner %r is not a user on this host" % p["owner"])
        owner = entry.pw_uid, entry.pw_gid
        if os.geteuid() not in (0, owner[0]):
            raise _Refusal("owner %s: only root can give the files to another user than the one the module runs as"
                           % p["owner"])
        return owner
    if os.geteuid() != 0:
        return None
    try:
        st = os.stat(directory)
    except FileNotFoundError:
        st = os.stat(os.path.dirname(directory))
    return st.st_uid, st.st_gid


def _files(module, sid, key, name):
    p = module.params
    present = p["state"] == "present"
    directory = os.path.normpath(p["auth_dir"])
    if not os.path.isabs(directory):
        raise _Refusal("auth_dir must be an absolute path, not %r" % p["auth_dir"])
    if present and not p["permanent"]:
        raise _Refusal("permanent=false needs tor's control port: a file in auth_dir is permanent")
    if name is not None:
        module.warn("client_name %r is not kept with auth_dir: tor has no place for names in its "
                    "ClientOnionAuthDir files" % name)
        name = None
    exists = os.path.lexists(directory)
    if exists and (os.path.islink(directory) or not os.path.isdir(directory)):
        raise _Refusal("auth_dir %s exists and is not a directory" % directory)
    if not exists and present and not os.path.isdir(os.path.dirname(directory)):
        raise _Refusal("the parent of auth_dir, %s, is not a directory" % os.path.dirname(directory))
    owner = _owner(p, directory) if present else None
    creds, ignored = ca.read_dir(directory) if exists else ([], [])
    if ignored:
        module.warn(_IGNORED % (directory, ", ".join(ignored)))
    own_file = os.path.join(directory, ca.file_name(sid))
    current, mine, write, strays = ca.plan_files(sid, key, present, creds, own_file)
    make_dir = present and not exists
    fix_dir = _fix(directory, 0o700, owner) if present and exists else None
    fix_file = _fix(own_file, 0o600, owner) if present and not write else None
    changed = bool(make_dir or fix_dir or write or fix_file or strays)

    wanted = ca.Credential(sid, key, None, [ca.PERMANENT], path=own_file) if present else None
    before = _view_state(current if present else (mine[0] if mine else None), [c.path for c in mine])
    after = _view_state(wanted, [own_file] if present else [])
    if present:
        before["directory"] = _describe(directory) if exists else "missing"
        after["directory"] = _describe(directory, 0o700, owner)
        if current is not None:
            before["file"] = _describe(own_file)
        after["file"] = _describe(own_file, 0o600, owner)
    diff = {"before": before, "after": after, "before_header": directory, "after_header": directory}

    if changed and not module.check_mode:
        # tor's user may own the directory and its parent: every change goes through the
        # directory's descriptor (opened without following a link), none through a path
        uid, gid = owner if owner else (-1, -1)
        dir_fd = files.make_dir(directory, 0o700, uid, gid) if make_dir else files.open_dir(directory)
        try:
            if fix_dir:
                files.set_owner_mode(dir_fd, 0o700, uid, gid)
            for path in strays:
                try:
                    os.unlink(os.path.basename(path), dir_fd=dir_fd)
                except FileNotFoundError:
                    pass
            if write:
                ca.write_file(own_file, ca.format_line(sid, key), uid, gid, dir_fd=dir_fd)
            elif fix_file:
                files.fix_file(os.path.basename(own_file), 0o600, uid, gid, dir_fd=dir_fd, shown=own_file)
        finally:
            os.close(dir_fd)
        listed = ca.read_dir(directory)[0]
    else:
        listed = [c for c in creds if c.service_id != sid] + ([wanted] if wanted else [])
        listed.sort(key=lambda c: os.path.basename(c.path))
    return _result(changed, listed, sid, directory, strays, diff)


def _describe(path, mode=None, owner=None):
    """'mode 0700, owner 107' of path as it is, or as it will be (mode and owner given)."""
    if mode is None:
        st = os.lstat(path)
        return "mode %04o, owner %d" % (stat.S_IMODE(st.st_mode), st.st_uid)
    if owner is None:
        try:
            uid = os.lstat(path).st_uid
        except FileNotFoundError:
            uid = os.geteuid()
    else:
        uid = owner[0]
    return "mode %04o, owner %d" % (mode, uid)


def _fix(path, mode, owner):
    """What is wrong with path's mode or owner ('mode 0755 -> 0700', ...), or None."""
    st = os.lstat(path)
    wrong = []
    if stat.S_IMODE(st.st_mode) != mode:
        wrong.append("mode %04o -> %04o" % (stat.S_IMODE(st.st_mode), mode))
    if owner and st.st_uid != owner[0]:
        wrong.append("owner %d -> %d" % (st.st_uid, owner[0]))
    return ", ".join(wrong) or None


def _result(changed, after, sid, directory, removed, diff):
    mine = next((c for c in after if c.service_id == sid), None)
    return {"changed": changed, "credential": mine.as_entry() if mine else None,
            "credentials": [c.as_entry() for c in after], "auth_dir": directory, "removed_files": sorted(removed),
            "diff": diff}


def main():
    spec = control_argument_spec(
        address=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        private_key=dict(type="str", no_log=True),
        client_name=dict(type="str"),
        permanent=dict(type="bool", default=True),
        auth_dir=dict(type="path"),
        owner=dict(type="str"),
    )
    module = AnsibleModule(**module_kwargs(
        spec,
        required_by={"owner": "auth_dir"},
        supports_check_mode=True,
    ))
    p = module.params
    try:
        sid, key, name = _wanted(p)
        if p["auth_dir"] is not None:
            result = _files(module, sid, key, name)
        else:
            result = _control(module, sid, key, name)
    except _Refusal as exc:
        module.fail_json(msg=str(exc))
    except MODULE_ERRORS as exc:
        fail(module, exc)
    if not module._diff:
        result.pop("diff")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
