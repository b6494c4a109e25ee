# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""advice.py and its users (client.connect, auth.read_cookie): a connection or cookie failure
says what to do: use become: true (not root, tor's file not readable) or is tor running?"""

import errno
import os
import socket

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import advice
from ansible_collections.onionlab.tor.plugins.module_utils._tor import auth
from ansible_collections.onionlab.tor.plugins.module_utils._tor import client
from ansible_collections.onionlab.tor.plugins.module_utils._tor import transport
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import AuthenticationFailed, ConnectionFailed


@pytest.fixture
def not_root(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 4321)
    monkeypatch.setattr(advice, "_user", lambda: "alice")


def _group(path):
    import grp
    return grp.getgrgid(os.stat(path).st_gid).gr_name


def test_permission_names_the_file_and_become(not_root, tmp_path):
    path = tmp_path / "control.authcookie"
    path.write_bytes(b"x" * 32)
    assert advice.for_errno(errno.EACCES, str(path)) == (
        "the module runs as alice, who may not open %s: use become: true (or run it as a member of tor's group %s)"
        % (path, _group(str(path))))
    assert advice.for_errno(errno.EPERM, str(tmp_path / "gone")).endswith("(or run it as a member of tor's group)")


@pytest.mark.parametrize("number", [errno.ENOENT, errno.ECONNREFUSED])
def test_not_running(number):
    assert advice.for_errno(number, "/run/tor/control") == "is tor running? (systemctl status tor)"
    assert advice.explain("cannot connect", number) == "cannot connect; is tor running? (systemctl status tor)"
    assert advice.explain("cannot connect", errno.ETIMEDOUT) == "cannot connect"


def test_cookie_not_readable(not_root, tmp_path, monkeypatch):
    path = str(tmp_path / "control.authcookie")
    with open(path, "wb") as handle:
        handle.write(b"x" * 32)

    real_open = os.open

    def denied(name, flags, *args, **kwargs):   # read_cookie opens with os.open (O_NONBLOCK: no FIFO waits)
        if name == path:
            raise PermissionError(errno.EACCES, "Permission denied", name)
        return real_open(name, flags, *args, **kwargs)
    monkeypatch.setattr(auth.os, "open", denied)
    with pytest.raises(AuthenticationFailed) as err:
        auth.read_cookie(path)
    assert str(err.value) == ("cannot read tor's authentication cookie %s: Permission denied; the module runs as "
                              "alice, who may not open %s: use become: true (or run it as a member of tor's group "
                              "%s)" % (path, path, _group(path)))


def test_cookie_missing(tmp_path):
    with pytest.raises(AuthenticationFailed) as err:
        auth.read_cookie(str(tmp_path / "nothing"))
    assert str(err.value).endswith(": No such file or directory; set cookie_path to tor's cookie file")


def _refuse_unix(number):
    def unix(path, timeout=None, **kwargs):
        raise transport._connect_error(OSError(number, os.strerror(number)), "socket %s" % path, path)
    return unix


def test_socket_not_openable(not_root, monkeypatch, tmp_path):
    path = str(tmp_path / "control")
    open(path, "w").close()
    monkeypatch.setattr(client.ControlSocket, "unix", staticmethod(_refuse_unix(errno.EACCES)))
    with pytest.raises(ConnectionFailed) as err:
        client.connect(socket_path=path)
    assert str(err.value) == ("cannot connect to tor's control socket %s: Permission denied; the module runs as "
                              "alice, who may not open %s: use become: true (or run it as a member of tor's group "
                              "%s)" % (path, path, _group(path)))
    # found by default (no control options): the same advice, instead of "is tor running?"
    monkeypatch.setattr(client, "DEFAULT_SOCKET", path)
    monkeypatch.setattr(client, "DEFAULT_PORT", _closed_port())
    with pytest.raises(ConnectionFailed) as err:
        client.connect()
    assert "Permission denied; cannot connect to tor's control port" in str(err.value)
    assert str(err.value).endswith("who may not open %s: use become: true (or run it as a member of tor's group %s). "
                                   "If tor listens elsewhere, set control_port or control_socket" % (path, _group(path)))


def _closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_tor_stopped(tmp_path, monkeypatch):
    missing = str(tmp_path / "run" / "control")
    with pytest.raises(ConnectionFailed) as err:
        client.connect(socket_path=missing)
    assert str(err.value) == ("cannot connect to tor's control socket %s: No such file or directory; is tor "
                              "running? (systemctl status tor)" % missing)
    monkeypatch.setattr(client, "DEFAULT_SOCKET", missing)
    port = _closed_port()
    monkeypatch.setattr(client, "DEFAULT_PORT", port)
    with pytest.raises(ConnectionFailed) as err:
        client.connect()
    assert str(err.value) == ("could not find tor's control interface: no control socket at %s; cannot connect to "
                              "tor's control port 127.0.0.1:%d: Connection refused; is tor running? (systemctl "
                              "status tor). If tor listens elsewhere, set control_port or control_socket"
                              % (missing, port))
