# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin of onionlab.tor.onionbalance_escrow: the onionbalance role's frontend key in the controller's escrow
(DIR/onionbalance/NAME/, the layout and writer of plugin_utils/escrow.py), sealed with ansible-vault whenever the run
has a vault password (issue 40), read back opened. Nothing runs on a host."""

from __future__ import annotations

import base64
import binascii

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.onionlab.tor.plugins.module_utils._onionbalance_escrow_args import ARGUMENT_SPEC
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow as escrows

display = Display()
NAME = "onionbalance"
HOST = "onionbalance"   # the escrow's directory of the frontends: DIR/onionbalance/<onionbalance_name>/


def key_file_bytes(text):
    """The bytes of a tor secret key file from the role's forms of a key: ED25519-V3:<base64 of the 64-byte expanded
    key> (onionbalance_private_key) or the base64 of a whole hs_ed25519_secret_key file (the host's, slurped); None
    when it is neither. Never says the key."""
    text = (text or "").strip()
    if text.startswith("ED25519-V3:"):
        text = text[len("ED25519-V3:"):]
    try:
        data = base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error):
        return None
    if len(data) == 64:
        data = onion.SECRET_HEADER + data
    return data if escrows.key_address(data) else None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        dummy, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        problem = escrows.name_problem(args["name"], "onionbalance_name")
        if problem:
            return dict(result, failed=True, msg="%s: %s" % (NAME, problem))
        lib = getattr(self._loader, "_vault", None)
        try:
            if args["state"] == "read":
                return dict(result, **self._read(args, escrows.Vault(lib, args["vault_id"] or None)))
            vault, warning = escrows.run_vault(lib, args["vault_id"], args["backup_dir"], args["plaintext"], True)
            if warning:
                display.warning("%s: %s" % (NAME, warning))
            return dict(result, **self._write(args, vault))
        except (escrows.EscrowError, ValueError, OSError) as exc:
            # read: the role's next task says it (this one's output is hidden, it holds the key)
            what = dict(failed=True) if args["state"] == "write" else dict(exists=None, content=None, sealed=None)
            return dict(result, changed=False, problem="%s: the escrowed frontend key of %s: %s"
                        % (NAME, args["name"], exc), msg="%s: %s" % (NAME, exc), **what)

    def _read(self, args, vault):
        """{exists, content: the base64 of the key file (opened), sealed, address}; an older plaintext key is sealed
        in place when the run has a vault password (not in check mode)."""
        escrow = escrows.Escrow(args["backup_dir"], HOST, vault)
        found = escrow.read(args["name"], escrows.KEY_FILE)
        if found is None:
            return dict(changed=False, exists=False, content=None, sealed=None, address=None, problem=None)
        if not self._task.check_mode:   # 0600, and sealed when the run has a vault password (an older escrow)
            escrow.write(args["name"], escrows.KEY_FILE, found)
        return dict(changed=escrow.changed, exists=True, content=base64.b64encode(found).decode("ascii"),
                    sealed=escrow.sealed(args["name"], escrows.KEY_FILE), address=escrows.key_address(found),
                    problem=None)

    def _write(self, args, vault):
        """The key escrowed (sealed when the run has a vault password) with its hostname; never over another key."""
        data = key_file_bytes(args["key"])
        if data is None:
            raise escrows.EscrowError("the key to escrow is not a tor ed25519 secret key; nothing was written")
        escrow = escrows.Escrow(args["backup_dir"], HOST, vault)
        held = escrow.read(args["name"], escrows.KEY_FILE)
        address = escrows.key_address(data)
        if held is not None and held != data:
            raise escrows.EscrowError(
                "%s holds another key (%s, not %s: another host or run with the same onionbalance_name?); nothing "
                "was written. Run again: the host's key is then checked against it"
                % (escrow.path(args["name"], escrows.KEY_FILE), escrows.key_address(held) or "unreadable", address))
        if self._task.check_mode:
            return dict(changed=held is None, address=address)
        if held is None:   # linked into place, never over a key another run escrowed meanwhile
            escrow.directories(args["name"])
            path = escrow.path(args["name"], escrows.KEY_FILE)
            if not escrows.put(path, vault.seal(data, path) if vault.active else data, replace=False):
                return self._write(args, vault)
            escrow.changed = True
        else:   # unchanged, but 0600 and sealed when the run has a vault password
            escrow.write(args["name"], escrows.KEY_FILE, data)
        escrow.write_hostname(args["name"], address)
        return dict(changed=escrow.changed, address=address)
