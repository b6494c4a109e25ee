# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of onionbalance_escrow, shared by its module file (documentation, and the spec sanity compares with
it) and its action plugin (plugins/action/onionbalance_escrow.py), which does the work on the controller.

This is a private module_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

ARGUMENT_SPEC = dict(
    backup_dir=dict(type="path", required=True),
    name=dict(type="str", required=True),
    state=dict(type="str", choices=["read", "write"], default="read"),
    key=dict(type="str", no_log=True),
    vault_id=dict(type="str", default=""),
    plaintext=dict(type="bool", default=False),
)
