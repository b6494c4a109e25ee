# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 42 against real tors (harness/tor_instance.py, DisableNetwork 1), every line the client sends
recorded by harness/tap.py:

* a tor with CookieAuthentication 1 and a HashedControlPassword offers COOKIE, SAFECOOKIE and
  HASHEDPASSWORD: the module path (connect_module in-process, and modules in a real ansible-playbook)
  given control_password authenticates with SAFECOOKIE, and the password never crosses the wire;
* a tor without authentication (NULL): a module given control_password or cookie_path refuses it before
  any AUTHENTICATE; without credentials it works; reached as connect()'s fallback, it is refused.
"""

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils import _common
from ansible_collections.onionlab.tor.plugins.module_utils._tor import client
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import AuthenticationFailed
from harness.ansible_run import run_playbook
from harness.tap import ControlTap
from harness.tor_fixtures import PASSWORD
from harness.tor_instance import TorInstance

NO_GEOIP = ["GeoIPFile /dev/null", "GeoIPv6File /dev/null"]


class Module(object):
    """What connect_module reads of an AnsibleModule: its parameters (the control options' defaults)."""

    def __init__(self, **params):
        self.params = dict({"control_port": None, "control_host": "127.0.0.1", "control_socket": None,
                            "control_password": None, "cookie_path": None, "timeout": 10.0}, **params)

    def fail_json(self, **kwargs):
        raise AssertionError("fail_json(%r)" % kwargs)


def auth_lines(tap):
    """The lines of each connection's authentication: from its PROTOCOLINFO to its first AUTHENTICATE
    included (the modules here open their connections one after the other)."""
    out, seen = [], None
    for line in tap.lines:
        if line.startswith(b"PROTOCOLINFO"):
            seen = []
        if seen is not None:
            seen.append(line)
            if line.startswith(b"AUTHENTICATE"):
                out.append(seen)
                seen = None
    return out


@pytest.fixture
def cookie_and_password_tor(tmp_path):
    with TorInstance(tmp_path / "tor", password=PASSWORD, extra=NO_GEOIP) as instance:
        yield instance


@pytest.mark.parametrize("with_cookie_path", [False, True], ids=["password", "password+cookie_path"])
def test_connect_module_takes_safecookie_before_the_password(cookie_and_password_tor, with_cookie_path):
    tor = cookie_and_password_tor
    params = {"control_password": PASSWORD}
    if with_cookie_path:
        params["cookie_path"] = tor.cookie_path
    with ControlTap(tor.control_port) as tap:
        with _common.connect_module(Module(control_port=tap.port, **params)) as ctl:
            assert set(ctl.protocol_info.methods) == {"COOKIE", "SAFECOOKIE", "HASHEDPASSWORD"}
            assert ctl.auth_method == "SAFECOOKIE"
            assert ctl.get_info("version")["version"]
    [first] = auth_lines(tap)
    assert [line.split(b" ")[0] for line in first] == [b"PROTOCOLINFO", b"AUTHCHALLENGE", b"AUTHENTICATE"]
    assert len(first[2].split(b" ")[1]) == 64                 # the HMAC, not a quoted password
    assert not any(PASSWORD.encode() in line for line in tap.lines)


def test_modules_in_a_playbook_take_safecookie_before_the_password(cookie_and_password_tor, tmp_path):
    tor = cookie_and_password_tor
    with ControlTap(tor.control_port) as tap:
        run = run_playbook([
            {"name": "info", "onionlab.tor.tor_hidden_service_info": {"control_port": tap.port,
                                                                     "control_password": PASSWORD}},
            {"name": "facts", "onionlab.tor.tor_accounting_facts": {"control_port": tap.port,
                                                                   "control_password": PASSWORD,
                                                                   "cookie_path": tor.cookie_path}},
        ], tmp_path)
    assert run.rc == 0, run.output
    connections = auth_lines(tap)
    assert len(connections) == 2, tap.lines
    for lines in connections:
        assert [line.split(b" ")[0] for line in lines] == [b"PROTOCOLINFO", b"AUTHCHALLENGE", b"AUTHENTICATE"]
    assert not any(PASSWORD.encode() in line for line in tap.lines)
    assert PASSWORD not in run.output


@pytest.mark.parametrize("given", ["control_password", "cookie_path"])
def test_a_tor_without_authentication_is_refused_when_credentials_are_given(tor_open, tmp_path, given):
    cookie = tmp_path / "cookie"
    cookie.write_bytes(bytes(range(32)))
    value = PASSWORD if given == "control_password" else str(cookie)
    with ControlTap(tor_open.control_port) as tap:
        with pytest.raises(AuthenticationFailed) as info:
            _common.connect_module(Module(control_port=tap.port, **{given: value}))
    text = str(info.value)
    assert text.startswith("refusing to authenticate to the peer at port 127.0.0.1:%d: it offers NULL, but %s was "
                           "given" % (tap.port, given)), text
    assert PASSWORD not in text
    assert tap.lines == [b"PROTOCOLINFO 1"]
    # without credentials the same tor works (how test tors run)
    with _common.connect_module(Module(control_port=tor_open.control_port)) as ctl:
        assert ctl.auth_method == "NULL"


def test_a_tor_without_authentication_found_by_the_fallback_is_refused(tor_open, tmp_path, monkeypatch):
    monkeypatch.setattr(client, "DEFAULT_SOCKET", str(tmp_path / "no-control-socket"))
    with ControlTap(tor_open.control_port) as tap:
        monkeypatch.setattr(client, "DEFAULT_PORT", tap.port)
        with pytest.raises(AuthenticationFailed) as info:
            _common.connect_module(Module())
    text = str(info.value)
    assert "it was reached only as the fallback (no control socket at %s) and offers NULL" % (
        tmp_path / "no-control-socket") in text
    assert text.endswith("If your tor listens there, set control_port to use it")
    assert tap.lines == [b"PROTOCOLINFO 1"]
    with _common.connect_module(Module(control_port=tor_open.control_port)) as ctl:   # named: used
        assert ctl.auth_method == "NULL"
