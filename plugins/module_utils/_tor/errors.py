# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one exception hierarchy of the control-protocol client.

This is a private module_utils file of onionlab.tor; its API may change at any time.

The client raises only these; each module turns them into one ``fail_json`` message.
No message ever carries a secret (password, cookie, private key).

    TorError
     +- ConnectionFailed       could not reach tor, or the connection broke
     |   +- ControlTimeout     tor stopped answering within the timeout
     +- ProtocolError          the peer sent something that is not the control protocol
     +- AuthenticationFailed   tor refused us, or we refused tor (SAFECOOKIE server hash)
     +- OperationFailed        tor answered a command with an error code (.code, .message)
     |   +- UnrecognizedKey    552 "Unrecognized key/option" style refusals
     +- UnsafeValue            a value or keyword we refuse to send (CR, LF, NUL, bad charset)
     +- DocumentError          a malformed consensus or key certificate (.line, .reason)
"""

from __future__ import annotations


class TorError(Exception):
    """Base of every error the client raises."""


class ConnectionFailed(TorError):
    """Tor could not be reached, or the connection was lost."""


class ControlTimeout(ConnectionFailed):
    """Tor did not answer (or not completely) within the timeout."""


class ProtocolError(TorError):
    """The peer's reply does not follow the control-protocol grammar, or breaks a limit."""


class AuthenticationFailed(TorError):
    """Authentication was refused by tor, or tor failed to prove it knows the cookie."""


class UnsafeValue(TorError, ValueError):
    """A value or keyword that could inject control-protocol syntax; nothing was sent."""


class OperationFailed(TorError):
    """Tor answered a command with an error status."""

    def __init__(self, code, message, command=None):
        self.code = code
        self.message = message
        self.command = command
        if command:
            text = "tor refused %s: %s %s" % (command, code, message)
        else:
            text = "tor refused the request: %s %s" % (code, message)
        super().__init__(text)


class ServiceError(TorError):
    """A service cannot be applied (unsafe directory, service defined elsewhere, ...)."""


class UnrecognizedKey(OperationFailed):
    """Tor does not know the GETINFO key or configuration option (552)."""


class DocumentError(TorError, ValueError):
    """A directory document (consensus, key certificate) that is malformed; ``line`` is the
    1-based line number when known, ``reason`` the message without it."""

    def __init__(self, message, line=None):
        self.line = line
        self.reason = message
        if line is not None:
            message = "line %d: %s" % (line, message)
        super().__init__(message)
