# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running a module's main() in-process, against the stateful fake control port
(tests/harness/fake_controller.py) over a real loopback socket: no tor, no ansible-playbook.

The module runs unpatched: its arguments go in the way Ansible hands them over
(ansible.module_utils.testing.patch_module_args where ansible-core has it, else
basic._ANSIBLE_ARGS), and exit_json/fail_json run for real, so no_log values are scrubbed,
warnings collected and the JSON printed as on a managed host; the runner reads that JSON back
and the SystemExit code. An exception escaping main() is a test error: every failure must be a
fail_json with one message.
"""

import contextlib
import io
import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common import warnings as ansible_warnings

from harness.fake_controller import FakeController

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core before 2.19
    patch_module_args = None

try:
    from ansible.module_utils import _internal as ansible_internal
except ImportError:  # ansible-core before 2.19
    ansible_internal = None


@contextlib.contextmanager
def _module_args(args):
    if patch_module_args is not None:
        with patch_module_args(args):
            yield
        return
    saved = basic._ANSIBLE_ARGS
    basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode("utf-8")
    try:
        yield
    finally:
        basic._ANSIBLE_ARGS = saved


def _warning_text(warning):
    """A warning's message: ansible-core 2.19 serialises a WarningSummary (its event's msg),
    older ones a plain string."""
    if isinstance(warning, dict):
        return warning.get("event", {}).get("msg", "")
    return warning


class Result(dict):
    """A module's result as Ansible would receive it (warnings as plain messages); .rc is its
    exit code."""

    rc = None


class ModuleRunner(object):
    def run(self, module, check_mode=False, diff=False, **args):
        """main() of module with args; returns the Result whatever it says."""
        if check_mode:
            args["_ansible_check_mode"] = True
        if diff:
            args["_ansible_diff"] = True
        for name in ("_global_warnings", "_global_deprecations"):
            collected = getattr(ansible_warnings, name, None)
            if collected is not None:
                collected.clear()   # a run reports its own warnings only
        # other tests in the same process may have imported controller code, which makes
        # module_utils send warnings to the controller's display instead of the result
        was_controller = getattr(ansible_internal, "is_controller", None)
        if was_controller:
            ansible_internal.is_controller = False
        out = io.StringIO()
        try:
            with _module_args(args), contextlib.redirect_stdout(out):
                try:
                    module.main()
                except SystemExit as exc:
                    code = exc.code
                else:
                    raise AssertionError("%s.main() returned without exit_json or fail_json" % module.__name__)
        finally:
            if was_controller:
                ansible_internal.is_controller = True
        result = Result(json.loads(out.getvalue()))
        if "warnings" in result:
            result["warnings"] = [_warning_text(w) for w in result["warnings"]]
        result.rc = code
        assert (code == 1) == bool(result.get("failed")), (code, result)
        return result

    def ok(self, module, **kwargs):
        """A successful run's result (the test fails with the module's message otherwise)."""
        result = self.run(module, **kwargs)
        assert result.rc == 0 and not result.get("failed"), result.get("msg", result)
        return result

    def fails(self, module, **kwargs):
        """The message of a run that must fail: one fail_json, one plain message."""
        result = self.run(module, **kwargs)
        assert result.rc == 1 and result.get("failed") is True, result
        msg = result["msg"]
        assert isinstance(msg, str) and msg.strip(), result
        assert "Traceback" not in msg
        return result


@pytest.fixture
def runner():
    return ModuleRunner()


@pytest.fixture
def torrc(tmp_path):
    """The torrc the fake tor names as its config-file."""
    path = tmp_path / "torrc"
    path.write_text("SocksPort 0\nDataDirectory %s\n" % (tmp_path / "tordata"))
    return path


@pytest.fixture
def fake(tmp_path, torrc):
    """A fresh stateful fake control port (auth NULL); it must not have hit a fault of its own."""
    with FakeController(tmp_path / "tordata", torrc) as controller:
        yield controller
    assert controller.errors == []
