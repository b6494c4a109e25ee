# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    # Connection options shared by every module; their argument spec is
    # plugins/module_utils/_common.py control_argument_spec(). Change both together.
    DOCUMENTATION = r"""
options:
  control_port:
    description:
      - TCP port of tor's ControlPort.
      - Mutually exclusive with O(control_socket).
      - With neither O(control_port) nor O(control_socket), the module uses the unix socket
        C(/run/tor/control) when it exists (the default of the tor that Debian and Ubuntu package) and
        otherwise C(127.0.0.1:9051); the error message names both when neither answers.
      - That fallback port is only a guess (any local user can listen there while tor restarts), so the module
        accepts the peer there only when it proves itself with C(SAFECOOKIE); a tor on that port without
        authentication, or with only a password, is used when O(control_port) names it.
    type: int
  control_host:
    description:
      - Address of tor's ControlPort, used with O(control_port).
    type: str
    default: 127.0.0.1
  control_socket:
    description:
      - Path of tor's ControlSocket (a unix domain socket).
      - Mutually exclusive with O(control_port).
    type: path
  control_password:
    description:
      - Password for tor's C(HashedControlPassword) authentication.
      - C(SAFECOOKIE) goes first whenever tor offers it and the cookie is readable (O(cookie_path), else the file tor
        names); tor proves that it knows the cookie before anything is revealed, and the password is not sent. The
        password is sent only to a tor that offers no C(SAFECOOKIE) or whose cookie cannot be read.
      - When given, a peer that offers no authentication (C(NULL)) is refused before anything is sent, since a tor that
        asks for a password never offers C(NULL). Omit it for a tor that runs without authentication.
      - When omitted, cookie authentication (SAFECOOKIE) is used if tor offers it, and no authentication if tor asks
        for none.
    type: str
  cookie_path:
    description:
      - Path of tor's authentication cookie, overriding the C(COOKIEFILE) that tor reports
        (for a chroot or a container whose paths differ).
      - Required to use plain C(COOKIE) authentication with a peer that does not offer C(SAFECOOKIE); that method
        sends the cookie's bytes to the peer, so the module does not read a file the peer names for it.
      - When given, a peer that offers no authentication (C(NULL)) is refused before anything is sent.
      - When omitted, the C(COOKIEFILE) that the peer names is used for C(SAFECOOKIE) only when it looks like tor's
        cookie - an absolute path to a regular file of 32 bytes that belongs to root, the module's user or tor's user
        (C(debian-tor), C(toranon), C(tor) or C(_tor)) and that no one else may read or write (tor writes it 0600, or
        0640 with C(CookieAuthFileGroupReadable)). A peer that is not tor could name a file whose content it knows and
        so pass C(SAFECOOKIE)'s proof; any other file is refused before anything is sent, unread. Set this option for
        a tor that runs as another user.
    type: path
  timeout:
    description:
      - Seconds to wait for tor to accept the connection and for each complete reply.
    type: float
    default: 10
notes:
  - The modules speak tor's control protocol with the Python standard library only; nothing is installed on
    the target.
  - With SAFECOOKIE authentication the module verifies that tor knows the cookie before it reveals anything.
  - The order of authentication methods is SAFECOOKIE (with a readable cookie), then no authentication (C(NULL), only
    when neither O(control_password) nor O(cookie_path) is given), then the password, then plain C(COOKIE) (only with
    O(cookie_path)). A refusal names what the peer offered and what was expected, never a secret.
"""
