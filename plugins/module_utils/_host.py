# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible glue for modules that run commands of the host (tor_setup, tor_upgrade): one runner that the
library's helpers (``_tor/tor_version.py``) are given, so that the library never imports Ansible. Kept apart
from ``_common.py`` so that a module without a control connection does not carry the control client.

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations


def command_runner(module):
    """run(argv, cwd=None, env=None) -> (rc, out, err): a command of the host found on its PATH (argv[0] a name)
    or given by path; (127, '', why) when it is not there. What tor_version's helpers are given."""
    def run(argv, cwd=None, env=None):
        exe = module.get_bin_path(argv[0]) if not argv[0].startswith("/") else argv[0]
        if not exe:
            return 127, "", "No such file or directory: %s" % argv[0]
        return module.run_command([exe] + list(argv[1:]), cwd=cwd, environ_update=env or {})
    return run
