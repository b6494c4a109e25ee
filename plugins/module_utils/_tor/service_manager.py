# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Persistent onion services applied to a running tor: read the state (PersistentManager.read_state),
plan() (pure, service_plan.py), execute; the logic behind tor_hidden_service's persistent modes. No Ansible imports:
the modules only map parameters onto this.

This is a private module_utils file of onionlab.tor; its API may change at any time.

Persistent services are applied live with one atomic SETCONF of the whole HiddenService
block (other services keep running, tor is not restarted) and kept in a managed drop-in
file that torrc %includes, so they survive a restart without rewriting the operator's torrc.
Order of work, so that a failed or interrupted run loses nothing: directories and client
files first, then SETCONF (tor validates; on refusal nothing changed), then the drop-in
(atomic rename; if it cannot be written the previous block is SETCONF'd back). Key
directories are only ever removed by an explicit purge.

The other concerns have files of their own: service_plan.py (the PersistentState, plan() and the
PersistentPlan it makes: what to do, decided without I/O), tor_facts.py (what we know of the tor, its lock),
service_list.py (every service tor runs, for tor_hidden_service_info), onionbalance.py (the ob_config part of a
plan), ephemeral.py (ADD_ONION / DEL_ONION and their record).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import time

from ansible_collections.onionlab.tor.plugins.module_utils._tor import capabilities
from ansible_collections.onionlab.tor.plugins.module_utils._tor import files
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor import probe_client
from ansible_collections.onionlab.tor.plugins.module_utils._tor import sandbox as _sandbox
from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_plan as sp
from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc_tree
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import (
    ConnectionFailed, OperationFailed, ProtocolError, ServiceError, TorError)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.lock import DEFAULT_TIMEOUT
from ansible_collections.onionlab.tor.plugins.module_utils._tor.service_list import (
    AUTH_DIR, describe_persistent, read_authorized_clients, read_ob_config)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.tor_facts import TorFacts, tor_lock

_TORRC_KEYWORD_RE = re.compile(r"^%?[A-Za-z_][A-Za-z0-9_]*\Z")


class _Raced(Exception):
    """tor's HiddenService block changed under us (a writer outside the collection)."""

    def __init__(self, when, expected, found):
        super().__init__(when)
        self.when = when
        self.expected = expected
        self.found = found


RACE_ATTEMPTS = 3


def _lstat(path):
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _existing_key(path):
    """The 64-byte expanded key a service directory holds, or None."""
    key_path = os.path.join(path, "hs_ed25519_secret_key")
    if not os.path.exists(key_path):
        return None
    return onion.read_secret_key_file(key_path)


def _torrc_refusal(path):
    """Why no line may be appended to the file tor names as its config-file (GETINFO
    config-file), or None: it must be a regular file made of torrc lines, so that a peer that
    is not tor cannot make us append to /etc/shadow or the like. The message never quotes the file."""
    try:
        st = os.stat(path)
        with open(path, "rb") as handle:
            text = handle.read(4 * 1024 * 1024).decode("utf-8")
    except FileNotFoundError:
        return ("tor's config-file %s does not exist; cannot add the %%include line "
                "(set include_config_file=false)" % path)
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        return "cannot read tor's config-file %s: %s" % (path, reason)
    if not stat.S_ISREG(st.st_mode) or not all(
            _TORRC_KEYWORD_RE.match(key) for key, _value in hs.parse_torrc_lines(text)):
        return ("tor's config-file %s does not look like a torrc (a file of tor options); not "
                "adding an %%include line to it" % path)
    return None


# -- persistent services: carrying a plan out ------------------------------------------------------
def _tor_owner(facts):
    """(uid, gid) to give what we make to tor's user, when we are root and tor is not; else (-1, -1)."""
    if facts.uid is not None and os.geteuid() == 0 and facts.uid != 0:
        return facts.uid, facts.gid if facts.gid is not None else -1
    return -1, -1


def _held(services):
    """What must be the same in tor after our SETCONF: each service's path, ports and typed
    options in order, and its other options with tor's spelling of names and booleans
    forgiven (tor may echo "HiddenServiceFoo 1" for "hiddenservicefoo true")."""
    def spelled(value):
        return str(hs._as_bool(value)) if value.lower() in ("0", "1", "true", "false") else value

    held = []
    for view in sp.config_views(services):
        extra = view.pop("extra_options", {}) or {}
        view["extra_options"] = sorted((k.lower(), [spelled(v) for v in values]) for k, values in extra.items())
        held.append(view)
    return held


def _remove_made_dir(path):
    """Undo a directory this run made, unless a secret key is in it by now.

    When the connection dies after SETCONF went out, tor may have applied it (and written the
    service's new key) without the reply reaching us: such a key is tor's, possibly live, and is
    never deleted; the rerun takes it up. A directory without a key holds nothing and goes."""
    if os.path.lexists(os.path.join(path, "hs_ed25519_secret_key")):
        return
    shutil.rmtree(path, ignore_errors=True)


def _left_behind(made_dirs, keys_written, key_writes):
    """What a failed execute() leaves on disk, for its message: the keys it installed (kept: a
    key is never deleted) and the directories it made that are still there; None when nothing is."""
    kept = []
    for path in keys_written:
        if os.path.lexists(os.path.join(path, "hs_ed25519_secret_key")):
            address = onion.onion_address(onion.ed25519_public_from_expanded(key_writes[path])) + ".onion"
            made = " (a directory this run made)" if path in made_dirs else ""
            kept.append("the key of %s in %s%s" % (address, path, made))
    kept.extend("the new directory %s" % path for path in made_dirs
                if os.path.isdir(path) and path not in keys_written)
    if not kept:
        return None
    return ("This run wrote, and kept so that no key is lost: %s; a rerun with the same key uses it"
            % "; ".join(kept))


def _make_dir(path, facts):
    """A new service directory, 0700, tor's user's: its mode and owner are set through its
    descriptor (opened without following a link), never by path: tor's user can write the parent."""
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise ServiceError("the parent directory %s of %s does not exist" % (parent, path))
    os.close(files.make_dir(path, 0o700, *_tor_owner(facts)))


def _unlink_in(path, name):
    """Remove a file of a service directory (opened without following a link); none is fine."""
    try:
        dir_fd = files.open_dir(path)
    except FileNotFoundError:
        return
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(dir_fd)


_AUTH_FILE_MAX = 1 << 16


def _saved_client_file(name, auth_fd, shown):
    """What undo needs to put a client file back exactly: None (there is none), ("file", bytes,
    stat) or ("link", target, stat). Anything else (a FIFO, a directory, a file too large to be a
    client's) is refused before this run changes anything in the directory."""
    try:
        st = os.stat(name, dir_fd=auth_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(name, dir_fd=auth_fd), st)
    data, st = files.read_regular(name, _AUTH_FILE_MAX + 1, dir_fd=auth_fd, shown=shown)
    if len(data) > _AUTH_FILE_MAX:
        raise ServiceError("%s is larger than %d bytes: not a client file; move it away" % (shown, _AUTH_FILE_MAX))
    return ("file", data, st)


def _put_back_client_file(name, saved, auth_fd):
    """One client file as it was before this run: content, owner, group and mode (or no file)."""
    tmp = name + ".onionlab-new"
    if saved is None:
        try:
            os.unlink(name, dir_fd=auth_fd)
        except FileNotFoundError:
            pass
        return
    kind, what, st = saved
    if kind == "file":
        files.write_secret(name, what, tmp, st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), dir_fd=auth_fd)
        return
    try:
        os.unlink(tmp, dir_fd=auth_fd)
    except FileNotFoundError:
        pass
    os.symlink(what, tmp, dir_fd=auth_fd)
    try:
        os.chown(tmp, st.st_uid, st.st_gid, dir_fd=auth_fd, follow_symlinks=False)
        os.rename(tmp, name, src_dir_fd=auth_fd, dst_dir_fd=auth_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=auth_fd)
        except OSError:
            pass
        raise


def _restore_client_files(path, saved, made):
    """Put <path>/authorized_clients back as tor could read it before this run (see
    PersistentManager._write_clients); the directory goes when this run made it. Best effort:
    what cannot be put back does not hide the error that made the run stop."""
    try:
        service_fd = files.open_dir(path)
    except OSError:
        return
    try:
        try:
            auth_fd = files.open_dir(AUTH_DIR, service_fd)
        except OSError:
            return
        try:
            for name, entry in saved.items():
                try:
                    _put_back_client_file(name, entry, auth_fd)
                except OSError:
                    pass
        finally:
            os.close(auth_fd)
        if made:
            try:
                os.rmdir(AUTH_DIR, dir_fd=service_fd)
            except OSError:
                pass
    finally:
        os.close(service_fd)


def set_conf_explained(ctl, pairs):
    """SETCONF; when tor refuses it ("See logs for details"), the warnings tor logged while
    refusing (asked for with SETEVENTS WARN around the command) are put on the error as
    .explanation."""
    first = ctl.event_mark()
    ctl.request("SETEVENTS", ["WARN"])
    try:
        ctl.set_conf(pairs)
    except OperationFailed as exc:
        ctl.request("SETEVENTS", [])  # its reply comes after the queued WARN events
        warnings = []
        for event in ctl.events_since(first):
            text = event.lines[0].text
            if text.startswith("WARN ") and "Controller gave us config lines" not in text:
                warnings.append(text[5:].strip())
        exc.explanation = "%s %s%s" % (exc.code, exc.message, "; tor says: " + " ".join(warnings) if warnings else "")
        raise
    ctl.request("SETEVENTS", [])


def _add_auth_private(result):
    """Each generated client's ClientOnionAuthDir line, "<service id>:descriptor:x25519:<key>",
    from the address of its own service."""
    addresses = {s["path"]: s["onion_address"] for s in result["services"]}
    for client in result["generated_clients"]:
        address = addresses.get(client["service"])
        client["auth_private"] = ("%s:descriptor:x25519:%s" % (address[:-len(".onion")], client["private_key"])
                                  if address else None)


class PersistentManager:
    def __init__(self, ctl, config_file=None, persist=True, include=True, check_mode=False,
                 lock_timeout=DEFAULT_TIMEOUT, run_command=None, probe=True, adopt=False):
        self.ctl = ctl
        self.adopt = adopt   # services that torrc declares are taken over (plan's adopt)
        self.probe = probe   # the health check's probe client on services with client authorization (probe_client)
        self.run_command = run_command   # for capabilities.local_modules (tor --list-modules)
        self.check_mode = check_mode
        self.lock_timeout = lock_timeout
        self.facts = TorFacts(ctl)
        self.persist = persist and bool(config_file)
        self.drop_in = config_file
        self.include = include
        self.warnings = []

    def current(self):
        return hs.services_from_conf(self.ctl.get_conf("HiddenServiceOptions"))

    def apply(self, desired, absent=(), exclusive=False, purge=False, clients=None, keys=None, prune=False):
        """desired: canonical services to be present (replacing those with the same path);
        absent: paths to remove; exclusive: tor's block becomes exactly `desired`;
        prune: also remove the managed services (in the drop-in) that are not desired;
        clients: {path: [client dicts]} for services whose authorized_clients are managed;
        keys: {path: 64-byte expanded key} to install where a service has no key yet.
        Returns a result dict (changed, diff, services, generated_clients).

        Runs of this collection are serialised by the tor's lock (read, SETCONF and drop-in
        are one read-modify-write). A writer outside the collection that changes tor's block
        between our read and our SETCONF, or right after it, is noticed: the run starts again
        from what tor holds then (up to RACE_ATTEMPTS times), and otherwise fails saying so."""
        clients = self._with_probe(clients)
        request = dict(desired=desired, absent=absent, exclusive=exclusive, purge=purge, clients=clients,
                       keys=keys, prune=prune)
        if capabilities.needs_check(desired):   # before anything, check mode too: nothing half-applied
            capabilities.Capabilities.read(self.ctl, self.facts.version, self.run_command).check_services(desired)
        if self.check_mode:
            return self._apply_once(request)
        with tor_lock(self.ctl, self.facts, self.lock_timeout):
            for attempt in range(RACE_ATTEMPTS):
                try:
                    return self._apply_once(request)
                except _Raced as raced:
                    last = raced
        if last.when == "before":
            outcome = "this run sent nothing and changed nothing"
        else:
            outcome = ("tor now holds %d services where this run set %d; the drop-in was not changed"
                       % (len(last.found), len(last.expected)))
        raise ServiceError("tor's onion-service configuration was changed by another controller (not a run of "
                           "this collection) while this run applied its own, %d times in a row; %s. Stop the "
                           "other writer or let it finish, then run again" % (RACE_ATTEMPTS, outcome))

    def _with_probe(self, clients):
        """The managed client lists with the health check's probe client (probe_client.with_probe), its key kept in
        tor's DataDirectory; without one (no probe, no DataDirectory of a running tor, not writable) as given."""
        data_dir = self.facts.data_dir
        if not (clients and self.probe and data_dir and os.path.isfile(os.path.join(data_dir, "lock"))):
            return clients
        try:
            return probe_client.with_probe(clients, probe_client.directory(data_dir), write=not self.check_mode)
        except OSError as exc:
            self.warnings.append("no probe client for the health check's reach layer (%s: %s): services with client "
                                 "authorization are not probed end to end" % (exc.filename or data_dir, exc.strerror))
            return clients

    def _apply_once(self, request):
        state = self.read_state(request["desired"], request["absent"], request["keys"])
        steps = sp.plan(state, adopt=self.adopt, **request)
        self.warnings.extend(steps.warnings)
        if self.check_mode or not steps.changed:
            services = [describe_persistent(s) for s in steps.after]
            for service in services:   # check mode: a key to be installed gives the address it will have
                if service["onion_address"] is None and service["path"] in steps.key_writes:
                    service["onion_address"] = onion.onion_address(
                        onion.ed25519_public_from_expanded(steps.key_writes[service["path"]])) + ".onion"
            return steps.result(services)
        return self.execute(steps)

    def read_state(self, desired, absent=(), keys=None):
        """The PersistentState plan() needs for a request: tor's block, the drop-in, torrc and
        the files of the service directories involved. Writes nothing."""
        facts = self.facts
        block = self.current()
        drop_in_text = _read_text(self.drop_in) if self.persist else None
        torrc_dirs, included, torrc_refusal = {}, True, None
        if self.persist and facts.config_file:
            torrc_dirs = torrc_tree.torrc_service_dirs(facts.config_file, self.drop_in)
            included = torrc_tree.includes(facts.config_file, self.drop_in)
            if self.include and not included:
                torrc_refusal = _torrc_refusal(facts.config_file)
        state = sp.PersistentState(block, persist=self.persist, drop_in=self.drop_in, include=self.include,
                                   drop_in_text=drop_in_text, config_file=facts.config_file, torrc_dirs=torrc_dirs,
                                   included=included, torrc_refusal=torrc_refusal, uid=facts.uid, user=facts.user,
                                   sandbox=_sandbox.Sandbox.read(facts.pid) if facts.pid else None)
        paths = [s["path"] for s in desired]
        state.dirs = {path: _lstat(path) for path in paths}
        state.clients = {path: read_authorized_clients(path) for path in [s["path"] for s in block] + paths}
        state.is_dir = {path: os.path.isdir(path) for path in list(absent) + state.drop_in_paths()}
        state.ob_configs = {path: read_ob_config(path) for path in [s["path"] for s in block] + paths}
        for service in desired:
            if service.get("onionbalance_frontend"):
                try:
                    state.addresses[service["path"]] = onion.service_dir_address(service["path"])
                except (OSError, onion.OnionKeyError):
                    state.addresses[service["path"]] = None
        for path, expanded in (keys or {}).items():
            state.keys[path] = _existing_key(path)
            if state.keys[path] not in (None, expanded):
                state.key_addresses[path] = onion.service_dir_address(path)
        return state

    def execute(self, steps):
        """Carry a PersistentPlan out, in the order of this file's docstring: directories, keys
        and client files; the SETCONF; the drop-in and torrc's %include; the purge. Returns the
        result dict."""
        result = steps.result(None)
        made_dirs, keys_written, undo_clients = [], [], []
        undo_ob = {}
        try:
            for path in steps.make_dirs:
                _make_dir(path, self.facts)
                made_dirs.append(path)
            for path, expanded in steps.key_writes.items():
                keys_written.append(path)   # before: a write that fails half-way may leave the key file
                self._write_key(path, expanded)
            for path, (write, delete, generated) in steps.client_plans.items():
                if path in made_dirs or write or delete:
                    undo_clients.append(self._write_clients(path, write, delete))
                result["generated_clients"].extend(dict(g, service=path) for g in generated)
            for path, text in steps.ob_writes.items():
                undo_ob[path] = read_ob_config(path)
                self._write_ob_config(path, text)
            if steps.set_conf:
                self._set_block(steps.before, steps.after)
        except BaseException as exc:
            for undo in undo_clients:
                undo()
            self._undo_ob_configs(undo_ob, made_dirs)
            for path in made_dirs:
                _remove_made_dir(path)
            kept = _left_behind(made_dirs, keys_written, steps.key_writes)
            if isinstance(exc, (TorError, OSError)) and kept:
                what = str(exc) if isinstance(exc, TorError) else (
                    "%s: %s" % (exc.strerror, exc.filename) if exc.strerror and exc.filename else str(exc))
                raise ServiceError("%s. %s" % (what.rstrip("."), kept))
            raise
        try:
            self._persist(steps)
        except ServiceError:   # tor has its previous block back: the previous ob_config files too
            self._undo_ob_configs(undo_ob, made_dirs)
            raise
        for path in steps.ob_removes:   # only once tor runs without the flag (or never had it)
            _unlink_in(path, hs.OB_CONFIG)
        for path in steps.purge_dirs:   # only what was asked, only after tor let go of it
            shutil.rmtree(path)
        if made_dirs:
            self._wait_hostnames(steps.desired_paths)
        result["services"] = [describe_persistent(s) for s in steps.after]
        _add_auth_private(result)
        return result

    def _set_block(self, before, after):
        """The live config in one atomic SETCONF, tor's block re-read right before (it must still
        be `before`) and right after (it must hold `after`): else _Raced."""
        now = self.current()
        if sp.config_views(now) != sp.config_views(before):
            raise _Raced("before", after, now)
        try:
            set_conf_explained(self.ctl, hs.block_to_conf(after))
        except OperationFailed as exc:
            raise ServiceError("tor refused the onion-service configuration (%s); tor's configuration was not "
                               "changed. Check that tor's user (%s) can write the service directories and that "
                               "the options are valid" % (exc.explanation, self.facts.user or "?"))
        except (ConnectionFailed, ProtocolError) as exc:
            raise ServiceError("%s after the new onion-service configuration was sent: tor may have "
                               "applied it, or died applying it (is tor running? systemctl status tor; its "
                               "log says why). The drop-in was not changed and no key was deleted" % exc)
        now = self.current()
        if _held(now) != _held(after):
            raise _Raced("after", after, now)

    def _persist(self, steps):
        """The drop-in and torrc's %include line; when either cannot be written, tor gets its
        previous block back."""
        try:
            if steps.drop_in_change:
                directory = os.path.dirname(self.drop_in)
                if not os.path.isdir(directory):
                    os.makedirs(directory, 0o755)
                # through hidden_service, whose file the drop-in is (a test replaces the writer there)
                files.atomic_write(self.drop_in, steps.drop_in_text, 0o644)
            if steps.include_change:
                self._add_include()
        except OSError as exc:
            rollback = "restored the previous configuration"
            try:
                self.ctl.set_conf(hs.block_to_conf(steps.before))
            except TorError as exc2:
                rollback = "could not restore the previous configuration: %s" % exc2
            raise ServiceError("cannot write %s: %s; %s" % (self.drop_in, exc.strerror or exc, rollback))

    def _write_clients(self, path, write, delete):
        """Write the client files `write` ({name: public key}, 0600, tor's user's) and delete
        `delete` in <path>/authorized_clients (made when missing). Returns the undo, which puts
        the directory back exactly as tor could read it before: each file's content, owner, group
        and mode, the files this run added removed, the directory removed when this run made it
        (tor enables client authorization only when a client file loads: a file put back that
        tor's user cannot read would publish the service to everyone at the next reload). A
        failure half-way undoes itself. tor's user owns the service directory and this one:
        every name is resolved against their descriptors, opened without following a link."""
        uid, gid = _tor_owner(self.facts)
        directory = os.path.join(path, AUTH_DIR)
        service_fd = files.open_dir(path)
        made = False
        try:
            try:
                auth_fd = files.open_dir(AUTH_DIR, service_fd, directory)
            except FileNotFoundError:
                auth_fd = files.make_dir(AUTH_DIR, 0o700, uid, gid, dir_fd=service_fd, shown=directory)
                made = True
        finally:
            os.close(service_fd)
        saved = {}

        def undo():
            _restore_client_files(path, saved, made)
        try:
            for name in list(write) + list(delete):
                file_name = name + ".auth"
                saved[file_name] = _saved_client_file(file_name, auth_fd, os.path.join(directory, file_name))
            for name, key in write.items():
                file_name = name + ".auth"
                files.write_secret(file_name, ("descriptor:x25519:%s\n" % key).encode("ascii"),
                                   file_name + ".onionlab-new", uid, gid, dir_fd=auth_fd)
            for name in delete:
                os.unlink(name + ".auth", dir_fd=auth_fd)
        except BaseException:
            os.close(auth_fd)
            auth_fd = None
            undo()
            raise
        finally:
            if auth_fd is not None:
                os.close(auth_fd)
        return undo

    def _write_ob_config(self, path, text):
        """ob_config (0600, tor's user) written to ob_config.onionlab-new and renamed, in the
        service directory opened without following a link."""
        dir_fd = files.open_dir(path)
        try:
            files.write_secret(hs.OB_CONFIG, text.encode("ascii"), hs.OB_CONFIG + ".onionlab-new",
                               *_tor_owner(self.facts), dir_fd=dir_fd)
        finally:
            os.close(dir_fd)

    def _undo_ob_configs(self, saved, made_dirs):
        """Put back the ob_config files this run replaced (a directory this run made goes as a whole)."""
        for path, text in saved.items():
            if path in made_dirs:
                continue
            try:
                if text is None:
                    _unlink_in(path, hs.OB_CONFIG)
                else:
                    self._write_ob_config(path, text)
            except OSError:
                pass

    def _write_key(self, path, expanded):
        """Install a secret key (and its public key) in a service directory that has none.

        Each file is written to NAME.onionlab-new and renamed. A leftover of that name is ours
        from a run that died mid-write (runs hold the tor's lock, so none is writing it now):
        it is removed first; a failed write removes its own."""
        public = onion.ed25519_public_from_expanded(expanded)
        dir_fd = files.open_dir(path)   # tor's user owns it and its parent: no link followed
        try:
            for name, data in (("hs_ed25519_secret_key", onion.SECRET_HEADER + expanded),
                               ("hs_ed25519_public_key", onion.PUBLIC_HEADER + public)):
                files.write_secret(name, data, name + ".onionlab-new", *_tor_owner(self.facts), dir_fd=dir_fd)
            try:
                os.unlink("hostname", dir_fd=dir_fd)  # tor writes it anew from the key
            except FileNotFoundError:
                pass
        finally:
            os.close(dir_fd)

    def _add_include(self):
        with open(self.facts.config_file) as handle:
            text = handle.read()
        addition = ("" if text.endswith("\n") or not text else "\n") + "".join(
            line + "\n" for line in sp.include_lines(self.drop_in))
        with open(self.facts.config_file, "a") as handle:
            handle.write(addition)

    def _wait_hostnames(self, paths, timeout=5.0):
        deadline = time.monotonic() + timeout
        for path in paths:
            while not os.path.exists(os.path.join(path, "hostname")) and time.monotonic() < deadline:
                time.sleep(0.05)
