# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onionbalance role's frontend key in the escrow (plugins/action/onionbalance_escrow.py, issue 40): sealed with
the run's vault password, read back opened, an older plaintext key sealed by the next read, never written over
another key, no message with a key. Through the role over ssh at -vvv: tests/integration/privnet/test_privnet_onionbalance.py."""

import base64
import stat
import types

import pytest
from ansible.parsing.vault import VaultLib, VaultSecret

from ansible_collections.onionlab.tor.plugins.action import onionbalance_escrow as action
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow as esc
from harness.keys import new_expanded_key


def _vault(password=b"correct horse"):
    return esc.Vault(VaultLib([("ops", VaultSecret(password))]))


def _key():
    return onion.SECRET_HEADER + new_expanded_key()


def _action(check_mode=False):
    act = action.ActionModule.__new__(action.ActionModule)
    act._task = types.SimpleNamespace(check_mode=check_mode)
    return act


def _args(tmp_path, key=None, name="shop"):
    return {"backup_dir": str(tmp_path), "name": name, "key": key, "vault_id": "", "plaintext": True}


def test_written_sealed_read_back_opened_and_never_over_another(tmp_path):
    key = _key()
    blob = "ED25519-V3:" + base64.b64encode(key[len(onion.SECRET_HEADER):]).decode()
    out = _action()._write(_args(tmp_path, blob), _vault())
    path = tmp_path / "onionbalance" / "shop" / esc.KEY_FILE
    assert out["changed"] and out["address"] == esc.key_address(key)
    raw = path.read_bytes()
    assert raw.startswith(b"$ANSIBLE_VAULT;") and key[32:] not in raw and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert (tmp_path / "onionbalance" / "shop" / esc.HOSTNAME).read_text() == out["address"] + "\n"
    read = _action()._read(_args(tmp_path), _vault())
    assert read["exists"] and base64.b64decode(read["content"]) == key and read["sealed"] and not read["changed"]
    again = _action()._write(_args(tmp_path, base64.b64encode(key).decode()), _vault())   # the host's whole file
    assert not again["changed"]
    other = _key()
    with pytest.raises(esc.EscrowError) as err:
        _action()._write(_args(tmp_path, base64.b64encode(other).decode()), _vault())
    assert "holds another key (%s, not %s" % (esc.key_address(key), esc.key_address(other)) in str(err.value)
    assert base64.b64encode(other).decode()[:20] not in str(err.value) and path.read_bytes() == raw


def test_an_older_plaintext_key_is_sealed_by_the_next_read_not_in_check_mode(tmp_path):
    key = _key()
    _action()._write(_args(tmp_path, base64.b64encode(key).decode()), esc.NO_VAULT)
    path = tmp_path / "onionbalance" / "shop" / esc.KEY_FILE
    assert path.read_bytes() == key
    checked = _action(check_mode=True)._read(_args(tmp_path), _vault())
    assert not checked["changed"] and not checked["sealed"] and path.read_bytes() == key
    read = _action()._read(_args(tmp_path), _vault())
    assert read["changed"] and read["sealed"] and path.read_bytes().startswith(b"$ANSIBLE_VAULT;")
    assert base64.b64decode(read["content"]) == key


def test_a_sealed_key_without_the_password_is_an_error_naming_the_file(tmp_path):
    _action()._write(_args(tmp_path, base64.b64encode(_key()).decode()), _vault())
    with pytest.raises(esc.EscrowError) as err:
        _action()._read(_args(tmp_path), esc.NO_VAULT)
    assert "onionbalance/shop/hs_ed25519_secret_key" in str(err.value) and "vault password" in str(err.value)
    with pytest.raises(esc.EscrowError):
        _action()._read(_args(tmp_path), _vault(b"wrong"))


@pytest.mark.parametrize("text", ["", "not base64!", base64.b64encode(b"x" * 64 + b"y").decode(),
                                  base64.b64encode(b"== ed25519v1-secret: type0 ==\0\0\0" + b"z" * 10).decode()])
def test_not_a_key_is_refused_and_nothing_written(tmp_path, text):
    assert action.key_file_bytes(text) is None
    with pytest.raises(esc.EscrowError, match="not a tor ed25519 secret key; nothing was written"):
        _action()._write(_args(tmp_path, text), esc.NO_VAULT)
    assert not (tmp_path / "onionbalance").exists()
