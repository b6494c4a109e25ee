# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Onion service keys for tests: an expanded ed25519 secret key as tor makes one, from a seed or at random."""

import hashlib
import os


def new_expanded_key(seed=None):
    """A 64-byte expanded ed25519 secret key as tor makes one (SHA-512 of a seed, clamped); seed None: a random one."""
    raw = bytearray(hashlib.sha512(seed if seed is not None else os.urandom(32)).digest())
    raw[0] &= 248
    raw[31] = (raw[31] & 127) | 64
    return bytes(raw)
