# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of onionlab.tor.onion_adopt (issue 40, 2): the host's tor asked what it runs
(tor_hidden_service_info), the onion_service role's entries made of it on the controller (plugin_utils/adopt.py),
keys from a vanity generator verified into the escrow, the host_vars file written. The role itself (with
onion_service_adopt) escrows the host's keys and writes the drop-in; the tor role takes torrc over afterwards."""

from __future__ import annotations

import errno
import os

from ansible.module_utils.common.yaml import yaml_dump
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.onionlab.tor.plugins.module_utils._onion_adopt_args import ARGUMENT_SPEC
from ansible_collections.onionlab.tor.plugins.module_utils._tor import files, onion
from ansible_collections.onionlab.tor.plugins.plugin_utils import adopt
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow as escrows
from ansible_collections.onionlab.tor.plugins.plugin_utils.onion_services import GENERATION_SUFFIX_RE

display = Display()
NAME = "onion_adopt"
COLLECTION_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOST_VARS_FILE = "onion_services.yml"


def _read_file(path):
    """A file of a vanity generator's directory on the controller (never through a link), or None when absent."""
    try:
        return files.read_regular(path, 4096)[0]
    except FileNotFoundError:
        return None


def _dump(data):
    return yaml_dump(data, default_flow_style=False, sort_keys=False, width=1000)


def _declared_names(declared):
    return set(GENERATION_SUFFIX_RE.sub("", str(e.get("name"))) for e in declared if isinstance(e, dict))


class _Fail(Exception):
    pass


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_diff = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC,
                                                  mutually_exclusive=[("control_port", "control_socket")])
        host = task_vars.get("inventory_hostname")
        try:
            result.update(self._adopt(args, host, task_vars))
        except _Fail as exc:
            result.update(failed=True, changed=False, msg="%s: %s" % (NAME, exc))
        except (adopt.AdoptError, escrows.EscrowError) as exc:
            result.update(failed=True, changed=False, msg="%s: %s. Nothing was changed." % (NAME, exc))
        except OSError as exc:
            result.update(failed=True, changed=False, msg="%s: %s: %s" % (NAME, exc.filename or host, exc.strerror))
        return result

    def _running(self, args, task_vars):
        module_args = dict((k, args[k]) for k in ("control_port", "control_socket", "control_password")
                           if args[k] is not None)
        out = self._execute_module(module_name="onionlab.tor.tor_hidden_service_info", module_args=module_args,
                                   task_vars=task_vars)
        if out.get("failed"):
            raise _Fail("the host's tor could not be asked what it runs: %s" % out.get("msg"))
        return out.get("hidden_services") or []

    def _adopt(self, args, host, task_vars):
        if not args["backup_dir"]:
            raise _Fail("no escrow directory for %s: set onion_service_backup_dir in the inventory, or give -e "
                        "adopt_backup_dir=DIR (not the role's default below playbook_dir: a playbook of the "
                        "collection lives in the installed collection). Nothing was changed." % host)
        root = os.path.realpath(COLLECTION_ROOT)
        if os.path.realpath(args["backup_dir"]).startswith(root + os.sep):
            raise _Fail("the escrow %s is inside the installed collection (a playbook of the collection has its "
                        "playbook_dir there, even when imported); set onion_service_backup_dir in the inventory to a "
                        "directory of yours, or give -e adopt_backup_dir=DIR. Nothing was changed." % args["backup_dir"])
        declared = [e for e in args["declared"] if isinstance(e, dict)]
        running = self._running(args, task_vars)
        service_dir, found, left_out = adopt.entries(host, running)
        known = _declared_names(declared)
        to_adopt = [e for e in found if e["name"] not in known]
        left_out += [(e["name"], "declared in onion_services already") for e in found if e["name"] in known]
        if to_adopt and declared:
            raise _Fail("%s declares onion_services already, and the adoption writes a host's first declaration; add "
                        "the entries of %s to it by hand (they are in this task's result, adopted), then run "
                        "again. Nothing was changed." % (host, ", ".join(e["name"] for e in to_adopt)))
        imports = self._imports(args, host, running)
        # an import of an earlier run: declared already, or running already and adopted above
        taken = known | set(e["name"] for e in found)
        entries = to_adopt + [entry for _expanded, _address, entry in imports if entry["name"] not in taken]
        path, text = self._host_vars(args, host, task_vars, service_dir, entries)   # refused before any write
        changed = self._escrow_imports(args, host, imports)
        written, diff = self._write_host_vars(path, text)
        facts = {"onion_adopt_services": declared + entries,
                 "onion_adopt_service_dir": (service_dir if to_adopt else None)
                 or task_vars.get("onion_service_dir") or args["service_dir_default"]}
        out = dict(changed=changed or written, adopted=to_adopt, imported=[
            {"name": entry["name"], "onion_address": address} for _e, address, entry in imports],
            left_out=[{"service": what, "why": why} for what, why in left_out], host_vars_file=path,
            ansible_facts=facts, backup_dir=args["backup_dir"])
        if diff is not None and self._task.diff:
            out["diff"] = diff
        out["msg"] = "adopted: %d (%s); keys imported: %d; left out: %d%s" % (
            len(to_adopt), ", ".join(e["name"] for e in to_adopt) or "none", len(imports), len(left_out),
            ("; declared in %s" % path) if path and entries else "")
        return out

    def _imports(self, args, host, running):
        """The keys to import, verified: (expanded key, address, entry) each. A name the host's tor runs with another
        address is refused; one it runs with the imported key's address (an import of an earlier run) is checked
        against the escrow (_escrow_imports) and not declared again."""
        out, seen = [], set()
        addresses = dict((os.path.basename(s["path"]), s.get("onion_address")) for s in running
                         if s.get("type") == "persistent")
        for item in args["import_keys"]:
            if item["name"] in seen:
                raise _Fail("import %s: named twice in import_keys. Nothing was changed." % item["name"])
            seen.add(item["name"])
            expanded, address, entry = adopt.imported(item, _read_file)
            if item["name"] in addresses and addresses[item["name"]] != address:
                raise _Fail("import %s: %s runs a service of that name already, with the address %s; import the key "
                            "under another name. Nothing was changed." % (item["name"], host, addresses[item["name"]]))
            out.append((expanded, address, entry))
        return out

    def _escrow_imports(self, args, host, imports):
        """The imported keys into the escrow (sealed when the run has a vault password), where the onion_service role
        restores them from; one the escrow holds differently for that name is refused before anything is written."""
        if not imports:
            return False
        vault, warning = escrows.run_vault(getattr(self._loader, "_vault", None), args["backup_vault_id"],
                                           args["backup_dir"], args["backup_plaintext"], True)
        escrow = escrows.Escrow(args["backup_dir"], host, vault)
        writes = []
        for expanded, address, entry in imports:
            data = onion.SECRET_HEADER + expanded
            held = escrow.read(entry["name"], escrows.KEY_FILE)
            if held is not None and held != data:
                raise _Fail("import %s: the escrow %s holds another key for that service (%s); nothing was written"
                            % (entry["name"], escrow.path(entry["name"]), escrows.key_address(held) or "unreadable"))
            if held is None:
                writes.append((entry["name"], data, address))
        if writes and not self._task.check_mode:
            if warning:
                display.warning("%s: %s" % (NAME, warning))
            for name, data, address in writes:
                escrow.directories(name)
                escrow.write_key(name, data)
                escrow.write_hostname(name, address)
        return bool(writes)

    def _host_vars(self, args, host, task_vars, service_dir, entries):
        """(path, the text to write or None) of host_vars_dir/HOST/onion_services.yml: written when absent; the same
        text again is no change; another text is refused (nothing lost). (None, None): nothing to write."""
        if not entries or not args["write_host_vars"]:
            return None, None
        base = args["host_vars_dir"] or (os.path.join(task_vars["inventory_dir"], "host_vars")
                                         if task_vars.get("inventory_dir") else None)
        if not base:
            raise _Fail("no host_vars directory: give host_vars_dir (the playbook: -e adopt_host_vars_dir=DIR)")
        path = os.path.join(base, host, HOST_VARS_FILE)
        text = adopt.host_vars_text(service_dir, entries, args["service_dir_default"], _dump)
        try:
            old = _read_file(path)
        except OSError as exc:
            raise _Fail("%s cannot be read: %s" % (path, exc.strerror))
        if old is not None and old.decode("utf-8", "replace") == text:
            return path, None
        if old is not None:
            raise _Fail("%s exists and declares something else; the adoption does not overwrite it. Move it away "
                        "(or merge the entries of this task's result, adopted, into it by hand) and run again. "
                        "Nothing was changed." % path)
        return path, text

    def _write_host_vars(self, path, text):
        """(written, diff): the file written (not in check mode), its directories made."""
        if text is None:
            return False, None
        diff = {"before_header": path, "before": "", "after_header": path, "after": text}
        if not self._task.check_mode:
            base = os.path.dirname(os.path.dirname(path))
            for directory in (base, os.path.dirname(path)):
                try:
                    os.mkdir(directory, 0o755)
                except OSError as exc:
                    if exc.errno != errno.EEXIST:
                        raise
            files.atomic_write(path, text.encode("utf-8"), 0o644)
        return True, diff
