# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A torrc and the files it %includes, read off disk: which files tor reads, whether they include
the drop-in of tor_hidden_service, which service directories they define; the drop-in's services.

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

import glob
import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs


def read_drop_in(path):
    """Services in our drop-in (None when the file does not exist)."""
    try:
        with open(path) as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    return hs.parse_drop_in(text)


def torrc_files(config_file, skip=None):
    """config_file and every file it %includes (recursively), in order, skipping `skip`."""
    out = []
    seen = set()

    def visit(path, depth):
        real = os.path.realpath(path)
        if real in seen or depth > 8 or (skip and real == os.path.realpath(skip)):
            return
        seen.add(real)
        try:
            with open(path) as handle:
                text = handle.read()
        except OSError:
            return
        out.append((path, text))
        for key, value in hs.parse_torrc_lines(text):
            if key.lower() != "%include":
                continue
            if os.path.isdir(value):
                names = sorted(n for n in os.listdir(value) if not n.startswith("."))
                targets = [os.path.join(value, n) for n in names]
            else:
                targets = sorted(glob.glob(value))
            for target in targets:
                if os.path.isfile(target):
                    visit(target, depth + 1)

    visit(config_file, 0)
    return out


def includes(config_file, drop_in):
    """Whether config_file (with its includes) %includes the drop-in file."""
    want = os.path.realpath(drop_in)
    for _path, text in torrc_files(config_file):
        for key, value in hs.parse_torrc_lines(text):
            if key.lower() != "%include":
                continue
            if os.path.isdir(value):
                if os.path.dirname(want) == os.path.realpath(value):
                    return True
            elif os.path.realpath(value) == want or want in [os.path.realpath(p) for p in glob.glob(value)]:
                return True
    return False


def torrc_service_dirs(config_file, drop_in):
    """HiddenServiceDir paths that torrc (and its includes, but not our drop-in) defines."""
    dirs = {}
    for path, text in torrc_files(config_file, skip=drop_in):
        for key, value in hs.parse_torrc_lines(text):
            if key.lower() == "hiddenservicedir":
                dirs[os.path.normpath(value)] = path
    return dirs
