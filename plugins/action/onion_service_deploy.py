# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of onionlab.tor.onion_service_deploy: the onion_service role's work on one host
in one task. The controller's part (checks of the play's variables, clients and their keys in
the escrow, key generations and profiles, escrow reads and writes) is done here in Python; the
host's part is one run of the module of the same name (module_utils/_onion_service_deploy.py).
Keys never reach the result, nor the module's raw output: the keys the host sends back are sealed to
this run's one-time key (module_utils/_tor/seal.py), opened here, written to the escrow and dropped."""

from __future__ import annotations

import os
import re

from ansible.module_utils.common.yaml import yaml_load

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.onionlab.tor.plugins.module_utils import _onion_service_deploy as deploy
from ansible_collections.onionlab.tor.plugins.module_utils._tor import config_value, onion, seal
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow as escrows, summary
from ansible_collections.onionlab.tor.plugins.plugin_utils.onion_services import (
    authorized_clients,
    clients,
    generations,
    unknown_variables,
)
from ansible_collections.onionlab.tor.plugins.plugin_utils.escrow import (
    HOSTNAME, KEY_FILE, REPLACED, Escrow, EscrowError, name_problem)

display = Display()

MODULE = "onionlab.tor.onion_service_deploy"
ROLE = "onion_service role"
# what the summary file (plugin_utils/summary.py) reads of each key generation served
SUMMARY_FIELDS = ("service", "name", "key", "generation", "ports", "previous_until", "onionbalance_frontend")
# the role's variables are its argument spec's options: the task passes each one, without the prefix
ROLE_SPEC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         "roles", "onion_service", "meta", "argument_specs.yml")
PREFIX = "onion_service_"
SHORT = {"onion_services": "services", "onion_service_dir": "service_dir"}   # the rest: without the prefix
KEY_BLOB_RE = re.compile(r"ED25519-V3:[A-Za-z0-9+/=]+")
BASE32_KEY_RE = re.compile(r"(?<![A-Za-z2-7])[A-Za-z2-7]{52}(?![A-Za-z2-7])")


def redacted(message):
    """A message with anything that looks like a key replaced (vault blobs, x25519 keys)."""
    return BASE32_KEY_RE.sub("<redacted>", KEY_BLOB_RE.sub("ED25519-V3:<redacted>", to_native(message)))


def combine(base, *others):
    """ansible.builtin.combine(recursive=True): nested dicts merged key by key, the later winning."""
    out = dict(base)
    for other in others:
        for key, value in other.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = combine(out[key], value)
            else:
                out[key] = value
    return out


def service_dir_problem(value):
    """Why onion_service_dir would not stay one path in the drop-in's quoted HiddenServiceDir lines (a line break or
    another control character, a quote or backslash, which the host refuses too, or no absolute path); else None."""
    said = config_value.problem(value, "torrc", "line")
    if said:
        return said
    if any(c in value for c in '"\\'):
        return "holds a double quote or a backslash"
    if not value.startswith("/") or value != value.strip():
        return "is not an absolute path (or has blanks around it)"
    if len(value.encode("utf-8", "surrogateescape")) > 4000:
        return "is longer than a path may be (4000 bytes here; Linux's PATH_MAX is 4096 with the service's name)"
    return None


def role_options(path=ROLE_SPEC):
    """The role's variables: the options of its argument spec (name to its spec)."""
    with open(path) as handle:
        return yaml_load(handle)["argument_specs"]["main"]["options"]


def task_argument_spec(path=ROLE_SPEC):
    """The task's arguments: the role's variables (the options of its argument spec, without the prefix;
    onion_services is services, onion_service_dir service_dir) with their type and default, and
    known_variables (the names the role sets itself, its vars' onion_service_internal_variables: with the argument
    spec's options, the onion_servi* names that are not a typo; empty: no such check)."""
    options = role_options(path)
    spec = dict(known_variables=dict(type="list", elements="str", default=[]))
    for name, option in options.items():
        short = SHORT.get(name, name[len(PREFIX):])
        default = option.get("default")
        spec[short] = dict((k, option[k]) for k in ("type", "elements", "choices") if k in option)
        spec[short]["default"] = None if isinstance(default, str) and "{{" in default else default
        spec[short]["no_log"] = short.endswith(("_keys", "password"))
    return spec


TASK_SPEC = task_argument_spec()
ROLE_VARIABLES = sorted(role_options())


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(TASK_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=TASK_SPEC,
                                                  mutually_exclusive=[("control_port", "control_socket")])
        host = task_vars.get("inventory_hostname")
        try:
            result.update(self._deploy(args, host, task_vars))
        except _Fail as exc:
            result.update(failed=True, msg=exc.msg, changed=False)
        except (AnsibleError, OSError, ValueError, seal.SealError) as exc:
            result.update(failed=True, msg="%s: %s on %s: %s" % (ROLE, type(exc).__name__, host, redacted(exc)))
        self._summary(args, host, result)
        return result

    def _summary(self, args, host, result):
        """This host's part of the summary file (plugin_utils/summary.py: merged under a lock, a failed host's
        entries kept and marked not refreshed) and its line in the run's output (addresses, never a key)."""
        ok = not result.get("failed") and not result.get("denied")
        facts = result.get("ansible_facts") or {}
        present = result.get("present") or []
        addresses = facts.get("onion_service_addresses") or {}
        previous = facts.get("onion_service_previous_addresses") or {}
        if args.get("summary_file") and not self._task.check_mode:
            # the run's id: the prefix of every task uuid of this ansible-playbook process (its per-run random part)
            run_id = str(self._task._uuid).rsplit("-", 1)[0]
            try:
                summary.merge(args["summary_file"], host, run_id,
                              summary.entries(host, present, addresses, previous, result.get("tor_version"))
                              if ok else None)
            except (OSError, ValueError) as exc:
                if ok:
                    result.update(failed=True, msg="%s: the summary file %s could not be written for %s: %s"
                                  % (ROLE, args["summary_file"], host, redacted(exc)))
                else:
                    result.setdefault("warnings", []).append(
                        "%s: the summary file %s could not be marked for %s: %s"
                        % (ROLE, args["summary_file"], host, redacted(exc)))
        if ok:
            display.display(summary.lines(host, present, addresses, previous))

    # -- the controller's part --------------------------------------------------------------------------------
    def _deploy(self, args, host, task_vars):
        self._check(args, host, task_vars)
        services = args["services"]
        service_dir = os.path.normpath(args["service_dir"])
        vault = self._escrow_vault(args, host, services)
        escrow = Escrow(args["backup_dir"], host, vault)
        try:
            generation_list = generations(services)
            authorized, key_files = self._clients(args, host, task_vars, services, vault)
        except _NeedAccess:
            denied = self._access(args, task_vars)
            if denied:
                return dict(changed=False, denied=denied)
            generation_list = generations(services)
            authorized, key_files = self._clients(args, host, task_vars, services, vault, create=True)
        present = [g for g in generation_list if g.get("state", "present") == "present"]
        absent = [{"path": os.path.join(service_dir, g["name"]), "purge": bool(g.get("purge", False))}
                  for g in generation_list if g.get("state", "present") != "present"]
        entries, keys = self._entries(args, service_dir, present, authorized)
        paths = dict((g["name"], os.path.join(service_dir, g["name"])) for g in present)
        escrowed = self._escrowed(escrow, host, present) if args["backup"] or args["restore"] else {}
        # the host's request: the role's variables of the same name as its fields, then what is made here
        module_args = dict((k, args[k]) for k in deploy.argument_spec() if args.get(k) is not None)
        module_args.update(entries=entries, absent=absent, keys=keys)
        if args["restore"]:
            module_args["escrow_keys"], module_args["escrow_refused"] = self._restorable(
                escrow, dict((name, escrowed[name]) for name in escrowed if name not in args["private_keys"]), paths)
        check_mode = self._task.check_mode
        opener = None
        if args["backup"] and not check_mode:
            module_args["escrow_sums"] = self._escrow_sums(escrowed, vault, paths)
            opener, module_args["escrow_seal"] = seal.new_key_pair()
        out = self._run_module(module_args, task_vars)
        updates = out.pop("escrow_updates", None) or {}
        out.pop("invocation", None)
        if out.get("denied"):
            return dict(changed=False, denied=out["denied"])
        if out.get("failed"):
            raise _Fail(self._failure(out, host))
        by_path = dict((s["path"], s) for s in out.get("services") or [])

        def address(g):
            return (by_path.get(paths[g["name"]]) or {}).get("onion_address")

        def clients(g):
            """The names of the clients tor authorizes for this generation now (the health check's probe client
            among them, named probe_client.NAME), never a key."""
            return sorted(c["name"] for c in (by_path.get(paths[g["name"]]) or {}).get("authorized_clients") or [])

        facts = dict(
            onion_service_addresses=dict((g["service"], address(g)) for g in present if g["generation"] == "current"),
            onion_service_previous_addresses=dict((g["service"], address(g)) for g in present
                                                  if g["generation"] == "previous"),
            onion_service_directory_addresses=dict((g["name"], address(g)) for g in present),
        )
        warnings = list(out.get("warnings") or [])
        if args["backup"] and not check_mode:
            warnings += self._escrow_back(escrow, host, paths, present, facts["onion_service_directory_addresses"],
                                          dict((path, seal.open_box(opener, box)) for path, box in updates.items()))
        if key_files:
            display.display("%s on %s: the keys of authorized_clients given without a public key are kept in %s"
                            % (ROLE, host, ", ".join(k["escrow"] for k in key_files)))
        return dict(
            changed=bool(out.get("changed")) or escrow.changed, ansible_facts=facts, denied=[],
            restored=out.get("restored", []), pruned=out.get("orphans", []), tor_version=out.get("tor_version"),
            client_key_files=[k["escrow"] for k in key_files],
            present=[dict([(k, g.get(k)) for k in SUMMARY_FIELDS] + [("clients", clients(g))]) for g in present],
            **dict((k, v) for k, v in (("diff", out.get("diff")), ("warnings", warnings)) if v))

    @staticmethod
    def _escrow_sums(escrowed, vault, paths):
        """{service directory: the sha256 of its escrowed key file} for the host, which sends back each key whose
        file differs (seal.py). None where the escrow holds no key, or holds it in plaintext while the run has a
        vault secret: the host sends it back, and it is written sealed (an older escrow sealed by the next run that
        writes)."""
        return dict((paths[name], deploy.file_sum(data) if data is not None and not (vault.active and not sealed)
                     else None) for name, (data, _hostname, sealed) in escrowed.items())

    @staticmethod
    def _escrow_back(escrow, host, paths, present, addresses, updates):
        """The keys the host sent back ({service directory: key file bytes}, opened) and every generation's address
        written to the escrow; the warnings (an escrowed key replaced, kept under replaced/)."""
        warnings = []
        by_name = dict((v, k) for k, v in paths.items())
        for path, data in sorted(updates.items()):
            name = by_name[path]
            replaced = escrow.write_key(name, data)
            if replaced:
                warnings.append(
                    "%s: %s on %s now serves %s, not the escrowed key of %s; the escrowed key is kept in %s "
                    "(restore it by putting it back in %s, or through onion_service_private_keys)"
                    % (ROLE, paths[name], host, addresses.get(name), replaced, escrow.path(name, REPLACED, replaced),
                       escrow.path(name)))
        for g in present:
            escrow.directories(g["name"])
        for name, value in sorted(addresses.items()):
            if value:
                escrow.write_hostname(name, value)
        return warnings

    def _check(self, args, host, task_vars):
        """The play's variables and the host's name, before anything is read (a _Fail naming the fix)."""
        unknown = unknown_variables(
            [name for name in task_vars if name.startswith("onion_servi")], ROLE_VARIABLES + args["known_variables"]) \
            if args["known_variables"] else []
        if unknown:
            raise _Fail("%s: unknown variable(s) %s. The role reads only the variables of its argument spec "
                        "(ansible-doc -t role onionlab.tor.onion_service); rename or remove them. Nothing was "
                        "changed on %s." % (ROLE, ", ".join(u["text"] for u in unknown), host))
        if not args["backup_dir"]:
            raise _Fail("%s: backup_dir (onion_service_backup_dir) is required" % ROLE)
        problem = name_problem(host, "inventory host name")
        if problem:
            raise _Fail("%s: %s; rename the host in the inventory (or give it an alias). Nothing was changed."
                        % (ROLE, problem))
        problem = service_dir_problem(args["service_dir"])
        if problem:
            raise _Fail("%s: onion_service_dir: the value %s %s; it begins every service's HiddenServiceDir line of the "
                        "drop-in. Nothing was changed on %s." % (ROLE, config_value.shown(args["service_dir"]), problem,
                                                                 host))

    def _clients(self, args, host, task_vars, services, escrow_vault, create=False):
        """onion_services[].clients and authorized_clients without a public key -> {service: authorized_clients}
        (public keys), and the escrow files of the latter. Raises _NeedAccess when a key must be made in
        the escrow first (the host is checked before anything is written)."""
        backup_dir, vault = args["backup_dir"], args["client_keys"]
        groups = task_vars.get("groups") or {}
        client_list = clients({host: services}, backup_dir=backup_dir, inventory=groups.get("all", []))
        needed = [c for c in client_list if c["needs_key"] and c["id"] not in vault]
        key_files = authorized_clients(services, server=host, backup_dir=backup_dir)
        needed_auth = [k for k in key_files if k["id"] not in vault]
        escrowed = {}
        for item in needed + needed_auth:
            key = escrows.read_client_key(item["escrow"], escrow_vault)
            if key is None:
                if not create:
                    raise _NeedAccess()
                key = escrows.client_key(item["escrow"], escrow_vault)
            escrowed[item["id"]] = key
        keys = dict(escrowed, **vault)
        authorized = clients({host: services}, backup_dir=backup_dir, private_keys=keys)
        if key_files:
            authorized.update(authorized_clients(services, server=host, backup_dir=backup_dir, private_keys=keys))
        return authorized, key_files

    def _escrow_vault(self, args, host, services):
        """The escrow's vault: the run's vault secrets (the loader's VaultLib) and onion_service_backup_vault_id.
        Without a vault secret, a run that would write keys to the escrow is refused inside a git work tree whose
        git does not ignore it (escrow.plaintext_problem), and warned once outside git."""
        writes = args["backup"] or any(s.get("clients") or s.get("authorized_clients") for s in services or []
                                       if isinstance(s, dict))
        try:
            vault, warning = escrows.run_vault(getattr(getattr(self, "_loader", None), "_vault", None),
                                               args.get("backup_vault_id"), args["backup_dir"],
                                               bool(args.get("backup_plaintext")), writes)
        except escrows.VaultIdWithoutPassword as exc:
            raise _Fail("%s: %s. Nothing was changed on %s." % (ROLE, exc, host))
        except escrows.EscrowError as exc:
            raise _Fail("%s: %s" % (ROLE, exc))
        if warning:
            display.warning("%s: %s" % (ROLE, warning))
        return vault

    def _run_module(self, module_args, task_vars):
        """One run of the module on the host. Its arguments hold escrowed keys and its output the host's keys
        (sealed to this run's key): the connection is told no_log too, so that ssh at -vvv prints neither
        ("censored due to no log"). ansible-core 2.19 gives the connection a play context of its own, apart
        from this action's: both are told, and both restored after."""
        contexts = [self._play_context]
        connection_context = getattr(self._connection, "_play_context", None)
        if connection_context is not None and connection_context is not self._play_context:
            contexts.append(connection_context)
        saved = [c.no_log for c in contexts]
        for context in contexts:
            context.no_log = True
        try:
            return self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        finally:
            for context, no_log in zip(contexts, saved):
                context.no_log = no_log

    def _access(self, args, task_vars):
        """Whether this user may write where the role writes (one run of the module that does nothing else)."""
        out = self._execute_module(module_name=MODULE, task_vars=task_vars, module_args=dict(
            service_dir=args["service_dir"], config_file=args["config_file"], access_only=True))
        if out.get("failed"):
            raise _Fail("%s: %s" % (ROLE, redacted(out.get("msg", "(no message)"))))
        return out.get("denied") or []

    def _entries(self, args, service_dir, present, authorized):
        """The module's entry of each present generation (the profile deep-merged under its options), and
        the vault keys by directory."""
        entries, keys = [], {}
        for g in present:
            path = os.path.join(service_dir, g["name"])
            entry = combine(args["defaults"], {"path": path, "ports": g.get("ports") or []}, g.get("options") or {})
            if g.get("onionbalance_frontend"):   # an Onionbalance backend instance (the role's PoW default left out)
                entry["onionbalance_frontend"] = g["onionbalance_frontend"]
            if g.get("authorized_clients") is not None:
                entry["authorized_clients"] = g["authorized_clients"]
            service = g.get("service", g["name"])
            if service in authorized:
                entry["authorized_clients"] = authorized[service]
            if g["name"] in args["private_keys"]:
                keys[path] = args["private_keys"][g["name"]]
            entries.append(entry)
        return entries, keys

    @staticmethod
    def _escrowed(escrow, host, present):
        """{directory name: (its escrowed key file's bytes, its hostname file's bytes, whether the key file is
        sealed)}, each None where there is no such file, read once before the host is asked anything; a link below
        the escrow's root (or a file that cannot be read) fails the run, naming the service."""
        out = {}
        for g in present:
            try:
                key = escrow.read_with_seal(g["name"], KEY_FILE)
                out[g["name"]] = (key[0], escrow.read(g["name"], HOSTNAME), key[1])
            except (EscrowError, OSError) as exc:
                raise _Fail("%s: the escrow of service %s of %s cannot be read: %s. Nothing was changed on %s."
                            % (ROLE, g["name"], host, redacted(exc), host))
        return out

    @staticmethod
    def _restorable(escrow, escrowed, paths):
        """({service directory: key blob} of the escrowed keys that give the escrowed address, {service directory:
        why not} of the others): a key that is not one, or that gives another address (the key of another
        service), is never sent; the host refuses the run if it would have restored it (a directory without a
        key), and ignores it otherwise (the host's own key then goes back to the escrow, the other kept under
        replaced/)."""
        keys, refused = {}, {}
        for name, (data, hostname, _sealed) in sorted(escrowed.items()):
            if data is None:
                continue
            problem = escrow.key_problem(name, data, hostname)
            if problem is None:
                keys[paths[name]] = onion.key_blob(data[len(onion.SECRET_HEADER):])
            else:
                refused[paths[name]] = (
                    "%s. Nothing was restored: put the service's own key and hostname back in %s, give its key in "
                    "onion_service_private_keys, or set onion_service_restore: false for the host to make a new key "
                    "(a new address)" % (problem, escrow.path(name)))
        return keys, refused

    @staticmethod
    def _failure(out, host):
        stage, message = out.get("stage"), redacted(out.get("msg", "(no message)"))
        if stage == "empty":
            return ("%s: onion_services is empty on %s, so this run would remove every service this role made there "
                    "from tor: %s. If that is meant, set onion_service_remove_all: true (keys are kept); otherwise "
                    "check the variable's name (onion_services) and where it is defined for this host. Nothing was "
                    "changed." % (ROLE, host, ", ".join(out.get("orphans") or [])))
        if stage == "refused":
            return ("%s: the services of %s were refused before anything was written on the host: %s"
                    % (ROLE, host, message))
        if stage != "apply":
            return "%s: onion_service_deploy failed on %s: %s" % (ROLE, host, message)
        restored = [os.path.basename(p) for p in out.get("restored") or []]
        return ("%s: tor_hidden_service failed on %s: %s%s" % (
            ROLE, host, message,
            (" Written on the host before this failure (kept, the escrow still holds each key): the keys of %s "
             "restored from escrow." % ", ".join(restored)) if restored else ""))


class _Fail(Exception):
    def __init__(self, msg):
        super(_Fail, self).__init__(msg)
        self.msg = msg


class _NeedAccess(Exception):
    """A client key must be made in the escrow: the host's access is checked first."""
