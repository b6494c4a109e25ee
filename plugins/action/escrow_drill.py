# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of onionlab.tor.escrow_drill: the restore drill on the controller (plugin_utils/drill.py), the
inventory's services read from hostvars, the escrow opened with the run's vault secrets. Nothing runs on a host."""

from __future__ import annotations

from ansible.module_utils.common.yaml import yaml_load
from ansible.plugins.action import ActionBase

from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError
from ansible_collections.onionlab.tor.plugins.module_utils._escrow_drill_args import ARGUMENT_SPEC
from ansible_collections.onionlab.tor.plugins.plugin_utils import drill, escrow


class ActionModule(ActionBase):
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        hostvars = task_vars.get("hostvars") or {}
        names = args["hosts"] if args["hosts"] is not None else list((task_vars.get("groups") or {}).get("all", []))
        unknown = [h for h in names if h not in hostvars]
        if unknown:
            return dict(result, failed=True, msg="escrow_drill: hosts not in the inventory: %s" % ", ".join(unknown))
        services = {}
        for host in names:
            value = hostvars[host].get(args["services_var"])
            if value is not None or args["hosts"] is not None:
                services[host] = value or []
        backup_dir = args["backup_dir"] or next(
            (hostvars[h]["onion_service_backup_dir"] for h in names if hostvars[h].get("onion_service_backup_dir")), None)
        if not backup_dir:
            return dict(result, failed=True, msg="escrow_drill: no escrow directory: give backup_dir (the playbook: -e "
                                                 "restore_drill_backup_dir=DIR), or set onion_service_backup_dir in the "
                                                 "inventory")
        summary = None
        if args["summary_file"]:
            try:
                with open(args["summary_file"]) as f:
                    summary = yaml_load(f) or []
            except FileNotFoundError:
                summary = None
            except (OSError, ValueError) as exc:
                return dict(result, failed=True, msg="escrow_drill: the summary file %s cannot be read: %s"
                                                     % (args["summary_file"], exc))
        vault = escrow.Vault(getattr(self._loader, "_vault", None))
        # the Onionbalance frontends the inventory declares: hosts that give the onionbalance role its backends
        frontends = sorted(set(str(hostvars[h].get("onionbalance_name") or "frontend") for h in names
                               if hostvars[h].get("onionbalance_backends")))
        try:
            if args["tor"]:
                with drill.ScratchTor(args["tor_binary"]) as tor:
                    found = drill.examine(backup_dir, services, vault, summary, tor,
                                          inventory=list(hostvars), frontends=frontends)
            else:
                found = drill.examine(backup_dir, services, vault, summary, None, inventory=list(hostvars),
                                      frontends=frontends)
        except (OSError, TorError) as exc:
            return dict(result, failed=True, msg="escrow_drill: %s" % exc)
        result.update(found, changed=False)
        problems = ["%s %s%s: %s" % (f.get("host"), f.get("service") or "",
                                     (" client %s" % f["client"]) if f.get("client") else "", f["problem"])
                    for f in found["services"] + found["clients"] if f.get("problem")]
        problems += ["Onionbalance frontend %s: %s" % (f["frontend"], f["problem"]) for f in found["frontends"]
                     if f.get("problem")]
        drilled = len([f for f in found["services"] if f.get("service")])
        if problems:
            result.update(failed=True, msg="escrow_drill: %d of %d key generations and %d client keys drilled, %d "
                                           "gaps: %s" % (drilled - len([f for f in found["services"] if f.get("problem")]),
                                                         drilled, len(found["clients"]), len(problems), "; ".join(problems)))
        else:
            result["msg"] = ("escrow_drill: every declared service restorable: %d key generations%s, %d client keys, "
                             "%d Onionbalance frontend keys; %d escrowed keys of no declared service" % (
                                 drilled, " loaded by a scratch tor" if found["tor_checked"] else
                                 " (files only: tor not asked)", len(found["clients"]), len(found["frontends"]),
                                 len(found["undeclared"])))
        result["report"] = [result["msg"]] + ["escrowed, declared nowhere: %s" % u["escrow"]
                                              for u in found["undeclared"]]
        return result
