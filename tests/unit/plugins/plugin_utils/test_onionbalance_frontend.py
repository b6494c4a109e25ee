# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onionbalance role's frontend decisions in Python (plugin_utils/onionbalance_frontend.py, issue 41): the frontend
key command's argv, stdin and no_log, what its result says, Onionbalance's command line; each as the role's Jinja
decided it. The keys appear in the command's stdin and nowhere else: not in argv, not in anything read from the
result (run against the role's own files/frontend_key.py where the host's python has Onionbalance's libraries).
Through the role: tests/integration/roles/test_role_onion_service_onionbalance.py and
tests/integration/privnet/test_privnet_onionbalance.py."""

import base64
import grp
import json
import os
import pwd
import subprocess
from pathlib import Path

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow as esc
from ansible_collections.onionlab.tor.plugins.plugin_utils import onionbalance_frontend as fe
from harness.keys import new_expanded_key

REPO = Path(__file__).resolve().parents[4]
SCRIPT = (REPO / "roles" / "onionbalance" / "files" / "frontend_key.py").read_text()
PYTHON = "/usr/bin/python3"
NO_ESCROW = {"changed": False, "exists": False, "content": None, "sealed": None, "address": None, "problem": None}


def _address(expanded):
    return esc.key_address(onion.SECRET_HEADER + expanded)


def _vault(expanded):
    return "ED25519-V3:" + base64.b64encode(expanded).decode()


def _escrow(expanded):
    return dict(NO_ESCROW, exists=True, content=base64.b64encode(onion.SECRET_HEADER + expanded).decode())


def _command(check=False, restore=True, private_key=None, escrow=None, key_file="/etc/onionbalance/k.key",
             user="onionbalance", group="onionbalance"):
    return fe.key_command(SCRIPT, PYTHON, key_file, check, user, group, "lb1",
                          "/srv/keys/onionbalance/frontend/hs_ed25519_secret_key", restore, private_key,
                          escrow or NO_ESCROW)


@pytest.mark.parametrize("check, restore, words", [
    (True, True, ["check", "restore"]), (False, False, ["apply", "no-restore"]), (False, "yes", ["apply", "restore"]),
    (False, "no", ["apply", "no-restore"]), (True, "True", ["check", "restore"]), (False, 0, ["apply", "no-restore"]),
    (False, 1, ["apply", "restore"]), (False, "maybe", ["apply", "no-restore"]),
])
def test_argv_words(check, restore, words):
    out = _command(check=check, restore=restore)
    assert out["argv"] == [PYTHON, "-c", SCRIPT, "/etc/onionbalance/k.key", words[0], "onionbalance", "onionbalance",
                           "lb1", "/srv/keys/onionbalance/frontend/hs_ed25519_secret_key", words[1], "no-stdin"]
    assert out["stdin"] == "" and out["no_log"] is False


@pytest.mark.parametrize("private_key, exists, sent, no_log", [
    (None, False, [], False), ("", False, [], True), ("V", False, ["vault"], True), (None, True, ["escrow"], True),
    ("", True, ["escrow"], True), ("V", True, ["vault", "escrow"], True),
])
def test_stdin_carries_the_keys_there_are_and_no_log_hides_them(private_key, exists, sent, no_log):
    escrow = dict(NO_ESCROW, exists=True, content="PT0g") if exists else NO_ESCROW
    out = _command(private_key=private_key, escrow=escrow)
    assert out["argv"][-1] == ("stdin" if sent else "no-stdin")
    expected = dict((k, {"vault": private_key, "escrow": "PT0g"}[k]) for k in sent)
    # Ansible's to_json: the vault key first, json.dumps' separators
    assert out["stdin"] == (json.dumps(expected) if sent else "")
    assert out["no_log"] is no_log


def test_a_vaulted_value_is_sent_as_its_text():
    class Vaulted(object):  # the shape of an EncryptedString: its text on str()
        def __str__(self):
            return "ED25519-V3:abc"
    assert json.loads(_command(private_key=Vaulted())["stdin"]) == {"vault": "ED25519-V3:abc"}


@pytest.mark.parametrize("escrow", [None, [], {"content": "x"}, {"exists": True}])
def test_a_wrong_escrow_read_is_refused_without_saying_a_key(escrow):
    with pytest.raises(fe.FrontendError) as err:
        fe.key_command(SCRIPT, PYTHON, "/k", False, "u", "g", "h", "/e", True, "ED25519-V3:SECRET", escrow)
    assert "SECRET" not in str(err.value)


@pytest.mark.parametrize("result, changed, ok, msg", [
    ({"rc": 0, "stdout": '{"changed": true, "generated": true, "restored": false, "onion_address": null}'},
     True, True, "onionbalance: "),
    ({"rc": 0, "stdout": '{"changed": false, "generated": false, "restored": true, "onion_address": "a.onion"}'},
     False, True, "onionbalance: "),
    ({"rc": 1, "stdout": '{"failed": true, "msg": "the key on lb1 is not the escrowed one"}', "stderr_lines": []},
     False, False, "onionbalance: the key on lb1 is not the escrowed one"),
    ({"rc": 1, "stdout": '{"failed": true, "msg": null}'}, False, False, "onionbalance: "),
    ({"rc": 1, "stdout": '{"failed": true}'}, False, False, "onionbalance: "),
    ({"rc": 1, "stdout": "", "stderr_lines": ["Traceback (most recent call last):", "ImportError: no onionbalance"]},
     False, False, "onionbalance: could not run /usr/bin/python3 with Onionbalance's libraries: ImportError: no "
                   "onionbalance"),
    ({"rc": 2, "stdout": "", "stderr_lines": []}, False, False,
     "onionbalance: could not run /usr/bin/python3 with Onionbalance's libraries: "),
    ({"rc": 1, "stdout": "Traceback"}, False, False,
     "onionbalance: could not run /usr/bin/python3 with Onionbalance's libraries: "),
    # what frontend_key.py never prints (the role's Jinja stopped with a from_json error): refused at the assert
    ({"rc": 0, "stdout": "", "stderr_lines": ["x"]}, False, False,
     "onionbalance: could not run /usr/bin/python3 with Onionbalance's libraries: x"),
    ({"rc": 1, "stdout": "{garbage"}, False, False,
     "onionbalance: could not run /usr/bin/python3 with Onionbalance's libraries: "),
    ({"rc": 0, "stdout": '{"failed": true, "msg": "m"}'}, False, False, "onionbalance: m"),
    ({"stdout": '{"changed": true}'}, True, False, "onionbalance: "),
])
def test_the_result_read(result, changed, ok, msg):
    out = fe.key_result(result, PYTHON)
    assert (out["changed"], out["ok"], out["msg"]) == (changed, ok, msg)
    assert (out["key"] is not None) is ok


def test_the_fact_holds_what_frontend_key_py_prints_and_nothing_else():
    printed = {"changed": True, "generated": False, "restored": True, "onion_address": "a.onion"}
    out = fe.key_result({"rc": 0, "stdout": json.dumps(dict(printed, key="SECRET", msg="m"))}, PYTHON)
    assert out["key"] == printed and list(out["key"]) == list(fe.KEY_FACTS)


@pytest.mark.parametrize("port, testnet, line", [
    (None, False, "/usr/sbin/onionbalance -c /etc/onionbalance/config.yaml -s /run/tor/control -v warning"),
    (9051, False, "/usr/sbin/onionbalance -c /etc/onionbalance/config.yaml -i 127.0.0.1 -p 9051 -s "
                  "/etc/onionbalance/no-control-socket -v warning"),
    ("9051", True, "/usr/sbin/onionbalance -c /etc/onionbalance/config.yaml -i 127.0.0.1 -p 9051 -s "
                   "/etc/onionbalance/no-control-socket -v warning --is-testnet"),
    (None, "false", "/usr/sbin/onionbalance -c /etc/onionbalance/config.yaml -s /run/tor/control -v warning"),
    (None, "yes", "/usr/sbin/onionbalance -c /etc/onionbalance/config.yaml -s /run/tor/control -v warning "
                  "--is-testnet"),
    (None, 0, "/usr/sbin/onionbalance -c /etc/onionbalance/config.yaml -s /run/tor/control -v warning"),
])
def test_command_line(port, testnet, line):
    assert fe.command_line("/usr/sbin/onionbalance", "/etc/onionbalance/config.yaml", "/etc/onionbalance",
                           "/run/tor/control", port, "warning", testnet) == line


def test_command_line_whitespace_is_one_space_as_the_template_wrote_it():
    assert fe.command_line(" /ob\tx ", "/a  b\xa0c", "/d", "/s\u3000t", None, "info", False) == \
        "/ob x -c /a b c -s /s t -v info"


# -- against the role's files/frontend_key.py, run by the host's python as the role runs it ---------------------------


def _onionbalance_python():
    try:
        return subprocess.run([PYTHON, "-c", "import onionbalance.hs_v3.tor_ed25519, stem"], timeout=60).returncode == 0
    except OSError:
        return False


def _run(command):
    p = subprocess.run(command["argv"], input=command["stdin"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=120)
    return {"rc": p.returncode, "stdout": p.stdout.rstrip("\r\n"), "stderr_lines": p.stderr.splitlines()}


def _secrets(*expanded):
    """Every form a key of the role takes: the vault's blob and its base64, the escrowed file's base64, hex."""
    out = []
    for e in expanded:
        out += [_vault(e), base64.b64encode(e).decode(), base64.b64encode(onion.SECRET_HEADER + e).decode(), e.hex()]
    return out


@pytest.mark.skipif(not _onionbalance_python(), reason="needs /usr/bin/python3 with Onionbalance's libraries")
def test_with_frontend_key_py_the_keys_go_only_into_stdin(tmp_path):
    vault, escrowed, other = new_expanded_key(), new_expanded_key(), new_expanded_key()
    key_file = tmp_path / "frontend.key"
    runs = []
    # check mode: the vault's key, the same one escrowed (its address, nothing written)
    command = _command(check=True, private_key=_vault(vault), escrow=_escrow(vault), key_file=str(key_file))
    runs.append((command, _run(command)))
    assert not key_file.exists()
    # refused: the vault's key is not the escrowed one
    command = _command(private_key=_vault(vault), escrow=_escrow(escrowed), key_file=str(key_file))
    runs.append((command, _run(command)))
    # apply: the escrowed key restored
    command = _command(escrow=_escrow(other), key_file=str(key_file), user=pwd.getpwuid(os.getuid()).pw_name,
                       group=grp.getgrgid(os.getgid()).gr_name)
    runs.append((command, _run(command)))
    assert key_file.read_bytes() == onion.SECRET_HEADER + other
    said = [fe.key_result(result, PYTHON) for _, result in runs]
    assert [s["ok"] for s in said] == [True, False, True], said
    assert said[0]["key"] == {"changed": True, "generated": False, "restored": False, "onion_address": _address(vault)}
    assert said[2]["key"] == {"changed": True, "generated": False, "restored": True, "onion_address": _address(other)}
    assert _address(vault) in said[1]["msg"] and _address(escrowed) in said[1]["msg"]
    assert "is not the escrowed one" in said[1]["msg"] and "nothing was changed" in said[1]["msg"]
    secrets = _secrets(vault, escrowed, other)
    for command, result in runs:
        assert command["no_log"] is True
        assert any(s in command["stdin"] for s in secrets)   # the keys are sent ...
        assert not any(s in w for s in secrets for w in command["argv"])   # ... on stdin alone
        assert not any(s in json.dumps(result) for s in secrets)   # the script never prints one
    for s in said:
        assert not any(secret in json.dumps(s) for secret in secrets)
