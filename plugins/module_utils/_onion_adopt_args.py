# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of onion_adopt, shared by its module file (documentation, and the spec sanity compares with it) and
its action plugin (plugins/action/onion_adopt.py), which does the work.

This is a private module_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

ARGUMENT_SPEC = dict(
    backup_dir=dict(type="path"),
    backup_vault_id=dict(type="str", default=""),
    backup_plaintext=dict(type="bool", default=False),
    host_vars_dir=dict(type="path"),
    write_host_vars=dict(type="bool", default=True),
    declared=dict(type="list", elements="raw", default=[]),
    service_dir_default=dict(type="path", default="/var/lib/tor"),
    import_keys=dict(type="list", elements="dict", default=[], no_log=False, options=dict(
        name=dict(type="str", required=True),
        ports=dict(type="list", elements="raw", required=True),
        key_dir=dict(type="path"),
        private_key=dict(type="str", no_log=True),
        hostname=dict(type="str"),
    ), mutually_exclusive=[("key_dir", "private_key")], required_one_of=[("key_dir", "private_key")]),
    control_port=dict(type="int"),
    control_socket=dict(type="path"),
    control_password=dict(type="str", no_log=True),
)
