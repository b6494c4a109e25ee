# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sealed boxes: secrets a module sends back to its controller, readable by that controller only.

Whatever prints a module's raw output prints it whole: the ssh connection at -vvv when its own copy
of the play context is not told no_log (ansible-core 2.19 keeps one apart from the action's),
ANSIBLE_DEBUG, a connection plugin that ignores no_log. So a key the controller must receive
(the onion_service role's escrow) never crosses in clear: the controller makes a one-time x25519
key pair for the run and sends the module the public half; the module seals each secret to it
with a fresh x25519 key of its own. The shared secret (RFC 7748) and both public keys, through
SHAKE-256, give a MAC key and a key stream as long as the secret; the box is

    base64( ephemeral public key (32) || secret XOR key stream || HMAC-SHA256(MAC key, public || ciphertext) )

Every box has its own ephemeral key, so no key stream is ever used twice. Standard library only.

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

CONTEXT = b"onionlab.tor sealed box v1"
_TAG = 32


class SealError(TorError):
    """A box or a public key that is not what this file makes."""


def new_key_pair():
    """(private key bytes, public key as base64 text) for one run."""
    private = os.urandom(32)
    return private, base64.b64encode(onion.x25519_public(private)).decode("ascii")


def _public_key(text):
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raw = b""
    if len(raw) != 32:
        raise SealError("the sealing key must be the base64 of a 32-byte x25519 public key")
    return raw


def _keys(private, peer_public, ephemeral_public, recipient_public, length):
    """(MAC key, key stream of `length` bytes) from our private key and the peer's public one."""
    shared = onion._x25519(private, peer_public)
    if not any(shared):   # a low-order point: no secret shared
        raise SealError("the sealing key is not a usable x25519 public key")
    stream = hashlib.shake_256(CONTEXT + shared + ephemeral_public + recipient_public).digest(_TAG + length)
    return stream[:_TAG], stream[_TAG:]


def _xor(data, stream):
    return bytes(a ^ b for a, b in zip(data, stream))


def seal(recipient, data):
    """data sealed to the recipient's public key (base64 text), as base64 text."""
    recipient_public = _public_key(recipient)
    ephemeral = os.urandom(32)
    ephemeral_public = onion.x25519_public(ephemeral)
    mac_key, stream = _keys(ephemeral, recipient_public, ephemeral_public, recipient_public, len(data))
    body = ephemeral_public + _xor(data, stream)
    return base64.b64encode(body + hmac.new(mac_key, body, hashlib.sha256).digest()).decode("ascii")


def open_box(private, box):
    """The bytes a box (base64 text from seal()) holds, with the private key its recipient made."""
    try:
        raw = base64.b64decode(box, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raw = b""
    if len(raw) < 32 + _TAG:
        raise SealError("a sealed box is base64 of at least %d bytes" % (32 + _TAG))
    body, tag = raw[:-_TAG], raw[-_TAG:]
    ephemeral_public = body[:32]
    recipient_public = onion.x25519_public(private)
    mac_key, stream = _keys(private, ephemeral_public, ephemeral_public, recipient_public, len(body) - 32)
    if not hmac.compare_digest(hmac.new(mac_key, body, hashlib.sha256).digest(), tag):
        raise SealError("a sealed box does not open with this run's key (altered, or sealed to another key)")
    return _xor(body[32:], stream)
