# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of escrow_drill, shared by its module file (documentation, and the spec sanity compares with it) and
its action plugin (plugins/action/escrow_drill.py), which does the work on the controller.

This is a private module_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

ARGUMENT_SPEC = dict(
    backup_dir=dict(type="path"),
    hosts=dict(type="list", elements="str"),
    services_var=dict(type="str", default="onion_services"),
    summary_file=dict(type="path"),
    tor=dict(type="bool", default=True),
    tor_binary=dict(type="str", default="tor"),
)
