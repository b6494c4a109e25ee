# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A file's text from ansible.builtin.slurp's content (base64), for the filters that read what a role slurped.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import base64
import binascii


def text(content):
    """slurp's base64 content as text (UTF-8; a byte that is not is replaced). Raises ValueError when content is not
    base64 (strictly: no character outside the alphabet)."""
    try:
        return base64.b64decode(str(content), validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        raise ValueError("not base64")
