# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the running tor can do, for the options that newer tors added: the one place that decides
whether a service option or an ADD_ONION keyword may be sent, before anything is changed.

This is a private module_utils file of onionlab.tor; its API may change at any time.

Three sources, each used when there is one:
* the version tor reports (GETINFO version) against the version that added the option
  (hidden_service.OPTIONS' since and add_onion_since columns);
* the options tor knows (GETINFO config/names): an option it does not list is missing whatever
  its version says;
* the modules the tor binary was built with (tor --list-modules), when the tor we talk to runs on
  this host (GETINFO process/pid, /proc/PID/exe is a tor binary) and the caller gives a way to run
  it (the module's run_command): a tor without its pow module cannot enable proof of work. Over
  the network, or when that is unreadable, tor's own refusal at SETCONF time is the check left.
"""

from __future__ import annotations

import os
import re

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?")


class CapabilityError(TorError, ValueError):
    """The running tor lacks what an option needs; nothing was changed."""


def parse_version(text):
    """'0.4.9.11', '0.4.8.1-alpha', '0.4.9.2-alpha-dev (git-...)' -> (0, 4, 9, 11); None when unreadable.
    A version's status tag is left out: the first release of a version is its -alpha, which is
    what an option's 'added in' names."""
    m = _VERSION_RE.match((text or "").strip())
    if not m:
        return None
    return tuple(int(g or 0) for g in m.groups())


def _module_list(text):
    """`tor --list-modules` output ('relay: yes' lines) -> {name: bool}."""
    modules = {}
    for line in (text or "").splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip() and value.strip() in ("yes", "no"):
            modules[name.strip()] = value.strip() == "yes"
    return modules


def local_modules(pid, run):
    """{module: built in} of the tor binary of process `pid` on this host, or None when that is
    not readable or not a tor binary. run(argv) -> its standard output (the module's run_command)."""
    if run is None:
        return None
    try:
        exe = os.readlink("/proc/%d/exe" % int(pid))
    except (OSError, TypeError, ValueError):
        return None
    exe = exe[:-len(" (deleted)")] if exe.endswith(" (deleted)") else exe
    if not os.path.basename(exe).startswith("tor") or not os.path.isfile(exe):
        return None   # not a tor binary (a fake, a wrapper): never run it
    try:
        text = run([exe, "--list-modules"])
    except (OSError, ValueError):
        return None
    return _module_list(text) or None


def binary_modules(tor_binary, run):
    """{module: built in} of the tor binary `tor_binary` (a name on PATH or a path) on this host, or None
    when it cannot be run or says nothing readable. run(argv) -> its standard output."""
    try:
        text = run([tor_binary, "--list-modules"])
    except (OSError, ValueError):
        return None
    return _module_list(text) or None


def pow_by_default(told, tor_binary, run):
    """Whether the onion_service role turns proof of work on by default: `told` (its
    onion_service_pow_supported) unless None; else whether `tor_binary` was built with its pow
    module (no tor, a tor too old for --list-modules, a failure: no)."""
    if told is not None:
        return bool(told)
    return bool((binary_modules(tor_binary, run) or {}).get("pow"))


class Capabilities:
    """version: tor's version text; config_names: the option names tor knows (lowercase), or None;
    modules: {module: built in}, or None when unknown."""

    def __init__(self, version, config_names=None, modules=None):
        self.version_text = version or "?"
        self.version = parse_version(version)
        self.config_names = set(n.lower() for n in config_names) if config_names is not None else None
        self.modules = modules

    @classmethod
    def read(cls, ctl, version=None, run=None):
        """From a controller: GETINFO version (unless given), config/names and process/pid; run: as
        local_modules' (None: the modules stay unknown)."""
        keys = ["config/names", "process/pid"] + ([] if version else ["version"])
        info = {}
        for key in keys:   # one at a time: an older or restricted tor may refuse one of them
            try:
                info.update(ctl.get_info(key))
            except TorError:
                pass
        names = None
        if "config/names" in info:
            names = [line.split(" ", 1)[0] for line in info["config/names"].splitlines() if line.strip()]
        modules = local_modules(info["process/pid"], run) if info.get("process/pid") else None
        return cls(version or info.get("version"), names, modules)

    def _missing(self, what, since, tor_name=None, module=None):
        """The refusal of one option (None: tor has it)."""
        needed = parse_version(since) if since else None
        if needed and self.version and self.version < needed:
            return "%s needs tor %s or later; this tor is %s" % (what, since, self.version_text)
        if tor_name and self.config_names is not None and tor_name.lower() not in self.config_names:
            return "%s needs tor %s or later (this tor, %s, does not know %s)" % (
                what, since, self.version_text, tor_name)
        if module and self.modules is not None and not self.modules.get(module, False):
            return ("%s needs tor's %s module; this tor (%s) was built without it (tor --list-modules: %s: no)"
                    % (what, module, self.version_text, module))
        return None

    def service_refusals(self, service):
        """What a canonical service sends that this tor lacks, one message per option."""
        refusals = []
        for option in hs.OPTIONS:
            if option.since is None or hs.option_value(service, option.key) == option.default:
                continue   # a default is never sent
            what = "%s (%s) of %s" % (option.key, option.tor_name, service["path"])
            refusal = self._missing(what, option.since, option.tor_name, hs.NEEDS_MODULE.get(option.tor_name))
            if refusal:
                refusals.append(refusal)
        return refusals

    def check_services(self, services):
        refusals = []
        for service in services:
            refusals.extend(self.service_refusals(service))
        if refusals:
            raise CapabilityError("%s; nothing was changed" % "; ".join(refusals))

    def check_add_onion(self, options):
        """options: {name: value} of an ephemeral service's ADD_ONION options (OPTIONS' add_onion
        column; a group's value is the whole group); only what is sent (not tor's default) is
        checked, against the tor version that added its keyword."""
        refusals = []
        for name, first in add_onion_to_check(options):
            refusal = self._missing("%s of an ephemeral service (ADD_ONION %s=)" % (name, first.add_onion),
                                    first.add_onion_since, None, hs.NEEDS_MODULE.get(first.tor_name))
            if refusal:
                refusals.append(refusal)
        if refusals:
            raise CapabilityError("%s; nothing was changed" % "; ".join(refusals))

    def check_add_onion_pow(self, pow_options):
        """pow_options: the ephemeral service's pow group; only a non-default one is sent."""
        self.check_add_onion({"pow": pow_options})


def default_pow():
    return hs.default_service("/")["pow"]


def needs_check(services):
    """Whether any service sends an option that some supported tor lacks (else no need to ask tor)."""
    for service in services:
        for option in hs.OPTIONS:
            if option.since is not None and hs.option_value(service, option.key) != option.default:
                return True
    return False


def add_onion_to_check(options):
    """[(name, its first OPTIONS row)] of the ADD_ONION options in `options` ({name: value}, a
    group's value the whole group) whose keyword some supported tor lacks and that are sent (a
    single option when not None and not tor's default, a group when not tor's default)."""
    out = []
    seen = set()
    defaults = hs.default_service("/")
    for option in hs.OPTIONS:
        name = option.key.split(".")[0]
        if option.add_onion_since is None or name in seen or name not in options:
            continue
        seen.add(name)
        value = options[name]
        if "." in option.key:
            value = hs.normalize_group(name, value)
        if value is not None and value != defaults[name]:
            out.append((name, option))
    return out
