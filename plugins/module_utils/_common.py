# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible glue shared by every module: the connection argument spec and error mapping.

This is a private module_utils file of onionlab.tor; its API may change at any time.
The options match plugins/doc_fragments/control.py; change both together.
"""

from __future__ import annotations

from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

CONTROL_OPTIONS = ("control_port", "control_host", "control_socket", "control_password", "cookie_path", "timeout")


def control_argument_spec(**extra):
    """The connection options of every module, plus the module's own (extra)."""
    spec = dict(
        control_port=dict(type="int"),
        control_host=dict(type="str", default="127.0.0.1"),
        control_socket=dict(type="path"),
        control_password=dict(type="str", no_log=True),
        cookie_path=dict(type="path"),
        timeout=dict(type="float", default=10.0),
    )
    spec.update(extra)
    return spec


CONTROL_MUTUALLY_EXCLUSIVE = [("control_port", "control_socket")]


def module_kwargs(argument_spec, mutually_exclusive=(), **kwargs):
    """Keyword arguments for AnsibleModule with the connection rules merged in."""
    kwargs["argument_spec"] = argument_spec
    kwargs["mutually_exclusive"] = list(CONTROL_MUTUALLY_EXCLUSIVE) + list(mutually_exclusive)
    return kwargs


def connect_module(module):
    """Open an authenticated control connection from the module's parameters."""
    p = module.params
    if p["control_port"] is not None and not 1 <= p["control_port"] <= 65535:
        module.fail_json(msg="control_port must be between 1 and 65535, got %d" % p["control_port"])
    if p["timeout"] is not None and p["timeout"] <= 0:
        module.fail_json(msg="timeout must be a positive number of seconds")
    return connect(host=p["control_host"], port=p["control_port"], socket_path=p["control_socket"],
                   password=p["control_password"], cookie_path=p["cookie_path"], timeout=p["timeout"])


def fail(module, exc, **result):
    """One clear fail_json for a client error; the message never holds a secret."""
    if isinstance(exc, TorError):
        msg = str(exc)
    else:
        msg = "%s: %s" % (type(exc).__name__, exc)
    module.fail_json(msg=msg, error=type(exc).__name__, **result)
