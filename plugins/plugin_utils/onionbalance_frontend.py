# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onionbalance role's frontend (issue 41: roles declare, Python decides): the command that runs the role's
files/frontend_key.py on the frontend host (its argv, its stdin with the keys, whether its task hides its output),
what that command's result says (changed, usable, the message when not, the onionbalance_key fact: never a key), and
Onionbalance's command line (the unit drop-in's ExecStart=). The filters onionbalance_key_command,
onionbalance_key_result and onionbalance_command are its faces.

Each decision is the one the role's Jinja made, word for word: the keys sent only when there is one (over ssh with a
tty, an empty stdin is never closed), a vault key sent when it is not empty, the output hidden when a vault key is set
at all or an escrowed key exists.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import json
import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor.torrc import role_bool

# what files/frontend_key.py prints when it succeeds, and all the onionbalance_key fact may hold
KEY_FACTS = ("changed", "generated", "restored", "onion_address")

# Ansible's bool filter (ansible.plugins.filter.core.to_bool): a string or a number by its lowercase text
_TRUE = frozenset(("yes", "on", "true", "1"))
_FALSE = frozenset(("no", "off", "false", "0"))


class FrontendError(ValueError):
    """The role passed something that is not what the role's tasks give; the message never holds a value."""


def as_bool(value):
    """A boolean as Ansible's bool filter reads it (an unknown value: whether it equals 1)."""
    text = value.lower() if isinstance(value, str) else str(value).lower() if isinstance(value, int) else value
    try:
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        return text == 1
    except TypeError:
        return False


def key_command(script, python, key_file, check_mode, user, group, host, escrow_key, restore, private_key,
                escrow_read):
    """{argv, stdin, no_log} of the task that runs frontend_key.py (script, its text) with the role's python:
    argv PYTHON -c SCRIPT KEY_FILE check|apply USER GROUP HOST ESCROW_KEY restore|no-restore stdin|no-stdin; stdin
    the JSON object {"vault": private_key (when not empty), "escrow": the escrowed key file's base64 (when the escrow
    holds one)}, "" when there is neither (the task then omits stdin); no_log true when a vault key is set or an
    escrowed key exists. stdin holds the keys: only that task, whose output no_log hides, may have this result."""
    if not isinstance(escrow_read, dict) or "exists" not in escrow_read:
        raise FrontendError("escrow_read must be the onionbalance_escrow read task's registered result")
    vault = None if private_key is None else str(private_key)   # a vaulted value: its text
    keys = {}
    if vault:
        keys["vault"] = vault
    if escrow_read["exists"]:
        if "content" not in escrow_read:
            raise FrontendError("escrow_read says the escrowed key exists but holds no content")
        keys["escrow"] = escrow_read["content"]
    argv = [python, "-c", script, key_file, "check" if check_mode else "apply", user, group, host, escrow_key,
            "restore" if as_bool(restore) else "no-restore", "stdin" if keys else "no-stdin"]
    return {"argv": argv, "stdin": json.dumps(keys) if keys else "",
            "no_log": private_key is not None or bool(escrow_read["exists"])}


def _said(stdout):
    """frontend_key.py's JSON object from its stdout (it begins with {), else None."""
    if not isinstance(stdout, str) or not stdout.startswith("{"):
        return None
    try:
        said = json.loads(stdout)
    except ValueError:
        return None
    return said if isinstance(said, dict) else None


def key_result(result, python):
    """{changed, ok, msg, key} from the registered result of key_command's task (rc, stdout, stderr_lines):
    changed as frontend_key.py says it; ok when it exited 0 with its JSON object, not a failure; msg, the role's
    message when not ok (frontend_key.py's msg, else that python could not run it, with stderr's last line); key,
    the onionbalance_key fact when ok (only KEY_FACTS: frontend_key.py never prints a key), else None.
    Where the role's Jinja stopped with a from_json error (exit status 0 without the JSON object, a stdout that
    begins with { and is no JSON: frontend_key.py prints neither), ok is false and msg says python could not run it."""
    if not isinstance(result, dict):
        raise FrontendError("the input must be the registered result of the frontend key's command task")
    said = _said(result.get("stdout"))
    if said is not None:
        msg = said.get("msg", "")
        msg = "" if msg is None else msg   # Ansible writes None into a message as nothing
    else:
        lines = result.get("stderr_lines") or []
        msg = "could not run %s with Onionbalance's libraries: %s" % (python, lines[-1] if lines else "")
    ok = result.get("rc") == 0 and said is not None and not said.get("failed")
    return {"changed": bool(said.get("changed", False)) if said is not None else False, "ok": ok,
            "msg": "onionbalance: %s" % (msg,),
            "key": dict((k, v) for k, v in said.items() if k in KEY_FACTS) if ok else None}


def command_line(binary, config_file, config_dir, control_socket, control_port, log_level, testnet):
    """Onionbalance's command line: its configuration, then tor's control port on 127.0.0.1 (control_port not None;
    -s then names a socket that is never there: Onionbalance tries its socket, its default one without -s, before the
    port) or tor's control socket, its log level, and --is-testnet when testnet is true as Ansible reads a boolean
    (the string "false" is false; the role's template had read it with Jinja's truth, as true). Every run of
    whitespace is one space, none at the ends (as the role's template wrote it)."""
    reach = ("-i 127.0.0.1 -p %s -s %s/no-control-socket" % (control_port, config_dir)
             if control_port is not None else "-s %s" % (control_socket,))
    flag = role_bool(testnet)
    testnet = flag if flag is not None else bool(testnet)
    line = "%s -c %s %s -v %s%s" % (binary, config_file, reach, log_level, " --is-testnet" if testnet else "")
    return re.sub(r"\s+", " ", line).strip()
