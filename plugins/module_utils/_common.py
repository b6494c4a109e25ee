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


# What every module catches around its work and hands to fail(): the client's errors and the
# operating system's (a file it reads, a descriptor it cannot get). Anything else is a bug and
# keeps its traceback.
MODULE_ERRORS = (TorError, OSError)


def error_message(exc):
    """One line for an error: the client's own text, an OSError as 'reason: file' (no errno
    number, no repr quotes), anything else prefixed with its type."""
    if isinstance(exc, TorError):
        return str(exc)
    if isinstance(exc, OSError):
        if exc.strerror:
            return exc.strerror if exc.filename is None else "%s: %s" % (exc.strerror, exc.filename)
        return str(exc) or type(exc).__name__
    return "%s: %s" % (type(exc).__name__, exc)


def fail(module, exc, msg=None, **result):
    """One clear fail_json for an error (MODULE_ERRORS, or a module's own); the message never
    holds a secret. msg replaces the default message (a module that adds context); error is
    the exception's type, OSError for every OSError (the kind is in the message)."""
    error = "OSError" if isinstance(exc, OSError) else type(exc).__name__
    module.fail_json(msg=error_message(exc) if msg is None else msg, error=error, **result)
