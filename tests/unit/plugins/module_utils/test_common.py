# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared connection options: argument spec (_common.py) and doc fragment (control.py)
must not drift apart; the glue maps client errors to one fail_json each."""

import errno
import importlib
import os

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.onionlab.tor.plugins.doc_fragments.control import ModuleDocFragment
from ansible_collections.onionlab.tor.plugins.module_utils import _common
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import (
    AuthenticationFailed,
    ConnectionFailed,
    OperationFailed,
    TorError,
)

DOC_OPTIONS = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
SPEC = _common.control_argument_spec()


def test_same_option_names():
    assert sorted(SPEC) == sorted(DOC_OPTIONS) == sorted(_common.CONTROL_OPTIONS)


@pytest.mark.parametrize("name", sorted(_common.CONTROL_OPTIONS))
def test_same_type_and_default(name):
    spec, doc = SPEC[name], DOC_OPTIONS[name]
    assert spec["type"] == doc["type"]
    assert spec.get("default") == doc.get("default")
    assert type(spec.get("default")) in (type(doc.get("default")), float)
    assert bool(spec.get("required")) == bool(doc.get("required"))
    assert spec.get("choices") == doc.get("choices")
    assert doc["description"]


@pytest.mark.parametrize("name", sorted(_common.CONTROL_OPTIONS))
def test_only_the_password_is_secret(name):
    assert bool(SPEC[name].get("no_log")) == (name == "control_password")


def test_documented_defaults():
    assert SPEC["control_host"]["default"] == "127.0.0.1"
    assert SPEC["timeout"]["default"] == 10


def test_mutually_exclusive_port_and_socket_is_documented():
    assert ("control_port", "control_socket") in _common.CONTROL_MUTUALLY_EXCLUSIVE
    text = " ".join(DOC_OPTIONS["control_port"]["description"] + DOC_OPTIONS["control_socket"]["description"])
    assert text.count("Mutually exclusive") == 2


def test_spec_validates_with_ansible():
    validator = ArgumentSpecValidator(SPEC, mutually_exclusive=_common.CONTROL_MUTUALLY_EXCLUSIVE)
    result = validator.validate({"control_password": "s3cret", "control_port": "9051"})
    assert result.error_messages == []
    assert result.validated_parameters == {"control_port": 9051, "control_host": "127.0.0.1", "control_socket": None,
                                           "control_password": "s3cret", "cookie_path": None, "timeout": 10.0}
    assert "s3cret" in result._no_log_values
    both = validator.validate({"control_port": 9051, "control_socket": "/run/tor/control"})
    assert "mutually exclusive" in " ".join(both.error_messages)


def test_extra_options_and_module_kwargs():
    spec = _common.control_argument_spec(name=dict(type="str", required=True))
    assert spec["name"] == {"type": "str", "required": True} and "control_port" in spec
    kwargs = _common.module_kwargs(spec, mutually_exclusive=[("a", "b")], supports_check_mode=True)
    assert kwargs == {"argument_spec": spec, "supports_check_mode": True,
                      "mutually_exclusive": [("control_port", "control_socket"), ("a", "b")]}


class Failed(Exception):
    pass


class FakeModule(object):
    def __init__(self, **params):
        self.params = dict(control_port=None, control_host="127.0.0.1", control_socket=None,
                           control_password=None, cookie_path=None, timeout=10.0)
        self.params.update(params)
        self.failed = None

    def fail_json(self, **kwargs):
        self.failed = kwargs
        raise Failed(kwargs["msg"])


@pytest.mark.parametrize("params, message", [
    (dict(control_port=0), "control_port must be between 1 and 65535, got 0"),
    (dict(control_port=65536), "control_port must be between 1 and 65535, got 65536"),
    (dict(timeout=0), "timeout must be a positive number of seconds"),
    (dict(timeout=-1.5), "timeout must be a positive number of seconds"),
])
def test_connect_module_checks_parameters(params, message):
    with pytest.raises(Failed, match=message):
        _common.connect_module(FakeModule(**params))


def test_connect_module_passes_the_options(monkeypatch):
    seen = {}
    monkeypatch.setattr(_common, "connect", lambda **kwargs: seen.update(kwargs) or "controller")
    module = FakeModule(control_port=9051, control_password="pw", cookie_path="/c", timeout=3.0)
    assert _common.connect_module(module) == "controller"
    assert seen == {"host": "127.0.0.1", "port": 9051, "socket_path": None, "password": "pw", "cookie_path": "/c",
                    "timeout": 3.0}


@pytest.mark.parametrize("exc, msg, error", [
    (ConnectionFailed("cannot connect to tor's control port 127.0.0.1:9051: Connection refused"),
     "cannot connect to tor's control port 127.0.0.1:9051: Connection refused", "ConnectionFailed"),
    (AuthenticationFailed("tor requires a password (it offers HASHEDPASSWORD); set control_password"),
     "tor requires a password (it offers HASHEDPASSWORD); set control_password", "AuthenticationFailed"),
    (OperationFailed("552", "Unrecognized key", "GETINFO"), "tor refused GETINFO: 552 Unrecognized key",
     "OperationFailed"),
    (KeyError("x"), "KeyError: 'x'", "KeyError"),
])
def test_fail(exc, msg, error):
    module = FakeModule()
    with pytest.raises(Failed):
        _common.fail(module, exc, changed=False)
    assert module.failed == {"msg": msg, "error": error, "changed": False}


@pytest.mark.parametrize("exc, msg", [
    (PermissionError(errno.EACCES, os.strerror(errno.EACCES), "/run/tor/control"),
     "Permission denied: /run/tor/control"),
    (OSError(errno.EMFILE, os.strerror(errno.EMFILE)), "Too many open files"),
    (OSError("cannot read the consensus file /x: Is a directory"), "cannot read the consensus file /x: Is a directory"),
    (OSError(), "OSError"),
])
def test_fail_os_error(exc, msg):
    """An OSError: its reason and file without errno number or quotes; error is OSError whatever the subclass."""
    module = FakeModule()
    with pytest.raises(Failed):
        _common.fail(module, exc)
    assert module.failed == {"msg": msg, "error": "OSError"}


def test_fail_with_a_message_of_the_module():
    module = FakeModule()
    with pytest.raises(Failed):
        _common.fail(module, ValueError("limit"), msg="limit must be 0 or more", line=3)
    assert module.failed == {"msg": "limit must be 0 or more", "error": "ValueError", "line": 3}


def test_module_errors():
    assert _common.MODULE_ERRORS == (TorError, OSError)


# -- every module maps the same errors the same way -------------------------------------------------

class ModuleFailed(Exception):
    pass


class RunModule(object):
    """Stands in for AnsibleModule in a module's main(): the parameters are the argument spec's
    defaults plus `args`; fail_json and exit_json stop the run and are recorded."""

    args = {}
    result = None

    def __init__(self, argument_spec, mutually_exclusive=(), **_kwargs):
        validated = ArgumentSpecValidator(argument_spec, mutually_exclusive=mutually_exclusive).validate(
            dict(type(self).args))
        assert validated.error_messages == []
        self.params = validated.validated_parameters
        self.check_mode = False

    def fail_json(self, **result):
        type(self).result = dict(result, failed=True)
        raise ModuleFailed(result["msg"])

    def exit_json(self, **result):
        type(self).result = result
        raise ModuleFailed("exited")

    def warn(self, text):
        pass


MODULES = {
    "tor_accounting_facts": {},
    "tor_consensus_facts": {},
    "tor_hidden_service_info": {},
}


@pytest.mark.parametrize("exc, msg, error", [
    (OSError(errno.EMFILE, os.strerror(errno.EMFILE)), "Too many open files", "OSError"),
    (PermissionError(errno.EACCES, os.strerror(errno.EACCES), "/run/tor/control"),
     "Permission denied: /run/tor/control", "OSError"),
    (ConnectionFailed("cannot connect to tor's control port 127.0.0.1:9051: Connection refused"),
     "cannot connect to tor's control port 127.0.0.1:9051: Connection refused", "ConnectionFailed"),
])
@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_maps_errors_alike(monkeypatch, name, exc, msg, error):
    """The same error from the connection gives the same clean failure in every module (no traceback)."""
    module = importlib.import_module("ansible_collections.onionlab.tor.plugins.modules." + name)

    def broken(_module):
        raise exc

    monkeypatch.setattr(module, "AnsibleModule", type("Run", (RunModule,), {"args": MODULES[name]}))
    monkeypatch.setattr(module, "connect_module", broken)
    with pytest.raises(ModuleFailed):
        module.main()
    result = module.AnsibleModule.result
    assert result["failed"] and result["msg"] == msg and result["error"] == error, result
