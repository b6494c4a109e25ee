# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The escrow encrypted at rest (issue 40): with the run's vault secret the secret files (service keys, client keys)
are written with ansible-vault (ansible-core's VaultLib) and read back transparently; an older plaintext file keeps
working and is sealed by the next run that writes; a sealed file is never written back as plaintext; a run without
the vault password (or with the wrong one) is refused naming the file and how to give it; no message holds a key."""

import os
import stat

import pytest
from ansible.parsing.vault import VaultLib, VaultSecret

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow as esc


def _vault(password=b"correct horse", vault_id="ops"):
    return esc.Vault(VaultLib([(vault_id, VaultSecret(password))]))


def _key():
    return onion.SECRET_HEADER + os.urandom(64)


def test_a_key_is_sealed_read_back_and_0600(tmp_path):
    e = esc.Escrow(str(tmp_path), "web1", _vault())
    key = _key()
    e.write_key("web", key)
    e.write_hostname("web", "x.onion")
    path = tmp_path / "web1" / "web" / esc.KEY_FILE
    raw = path.read_bytes()
    assert raw.startswith(b"$ANSIBLE_VAULT;1.2;AES256;ops\n") and key not in raw
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert (tmp_path / "web1" / "web" / esc.HOSTNAME).read_bytes() == b"x.onion\n"   # an address is public
    assert esc.Escrow(str(tmp_path), "web1", _vault()).read("web", esc.KEY_FILE) == key


def test_the_same_key_again_changes_nothing(tmp_path):
    e = esc.Escrow(str(tmp_path), "web1", _vault())
    key = _key()
    e.write_key("web", key)
    before = (tmp_path / "web1" / "web" / esc.KEY_FILE).read_bytes()
    again = esc.Escrow(str(tmp_path), "web1", _vault())
    assert again.write_key("web", key) is None
    assert not again.changed and (tmp_path / "web1" / "web" / esc.KEY_FILE).read_bytes() == before


def test_an_older_plaintext_key_works_and_is_sealed_by_the_next_run_that_writes(tmp_path):
    key = _key()
    esc.Escrow(str(tmp_path), "web1").write_key("web", key)
    path = tmp_path / "web1" / "web" / esc.KEY_FILE
    assert path.read_bytes() == key
    assert esc.Escrow(str(tmp_path), "web1", _vault()).read("web", esc.KEY_FILE) == key   # read as it is
    e = esc.Escrow(str(tmp_path), "web1", _vault())
    e.write_key("web", key)
    assert e.changed and esc.is_sealed(path.read_bytes())
    assert esc.Escrow(str(tmp_path), "web1", _vault()).read("web", esc.KEY_FILE) == key


def test_without_the_vault_password_a_sealed_key_is_refused_and_never_replaced(tmp_path):
    key = _key()
    esc.Escrow(str(tmp_path), "web1", _vault()).write_key("web", key)
    path = tmp_path / "web1" / "web" / esc.KEY_FILE
    sealed = path.read_bytes()
    plain = esc.Escrow(str(tmp_path), "web1")
    with pytest.raises(esc.EscrowError, match="encrypted with ansible-vault and this run has no vault password: "
                                              "give the run a vault password") as info:
        plain.write_key("web", _key())
    assert str(path) in str(info.value)
    assert path.read_bytes() == sealed


def test_a_wrong_vault_password_is_refused_naming_the_file_and_the_vault_ids(tmp_path):
    esc.Escrow(str(tmp_path), "web1", _vault()).write_key("web", _key())
    with pytest.raises(esc.EscrowError, match=r"none of this run's vault secrets \(vault ids: ops\) opens it"):
        esc.Escrow(str(tmp_path), "web1", _vault(b"wrong")).read("web", esc.KEY_FILE)


def test_a_vault_id_the_run_lacks_is_one_clear_refusal(tmp_path):
    vault = esc.Vault(VaultLib([("ops", VaultSecret(b"pw"))]), vault_id="escrow")
    with pytest.raises(esc.EscrowError, match="no vault secret of vault id 'escrow' \\(its vault ids: ops\\)"):
        esc.Escrow(str(tmp_path), "web1", vault).write_key("web", _key())
    assert not (tmp_path / "web1" / "web" / esc.KEY_FILE).exists()


def test_the_chosen_vault_id_seals(tmp_path):
    vault = esc.Vault(VaultLib([("ops", VaultSecret(b"a")), ("escrow", VaultSecret(b"b"))]), vault_id="escrow")
    esc.Escrow(str(tmp_path), "web1", vault).write_key("web", _key())
    assert (tmp_path / "web1" / "web" / esc.KEY_FILE).read_bytes().startswith(b"$ANSIBLE_VAULT;1.2;AES256;escrow\n")


def test_a_replaced_key_is_kept_sealed_too(tmp_path):
    first, second = _key(), _key()
    e = esc.Escrow(str(tmp_path), "web1", _vault())
    e.write_key("web", first)
    address = e.write_key("web", second)
    kept = tmp_path / "web1" / "web" / esc.REPLACED / address / esc.KEY_FILE
    assert esc.is_sealed(kept.read_bytes())
    assert e.read(os.path.join("web", esc.REPLACED, address), esc.KEY_FILE) == first


def test_client_keys_sealed_made_once_and_older_ones_sealed(tmp_path):
    path = esc.client_key_file(str(tmp_path), "web1", "web", "alice")
    key = esc.client_key(path, _vault())
    raw = open(path, "rb").read()
    assert esc.is_sealed(raw) and key.encode() not in raw
    assert esc.client_key(path, _vault()) == key
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with pytest.raises(esc.EscrowError, match="no vault password"):
        esc.read_client_key(path)
    older = esc.client_key_file(str(tmp_path), "web1", "web", "bob")
    plain = esc.client_key(older)
    assert open(older, "rb").read() == (plain + "\n").encode()
    assert esc.read_client_key(older, _vault()) == plain
    assert esc.is_sealed(open(older, "rb").read())


def test_no_vault_secret_means_plaintext_as_before(tmp_path):
    vault = esc.Vault(VaultLib([]))
    assert not vault.active
    key = _key()
    esc.Escrow(str(tmp_path), "web1", vault).write_key("web", key)
    assert (tmp_path / "web1" / "web" / esc.KEY_FILE).read_bytes() == key


def test_plaintext_outside_git_is_a_warning_inside_git_a_refusal_unless_ignored_or_allowed(tmp_path):
    import subprocess
    outside = tmp_path / "plain" / "onion-keys"
    problem, warning = esc.plaintext_problem(str(outside))
    assert problem is None and "holds onion service and client keys in plaintext" in warning
    repo = tmp_path / "site"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    inside = repo / "inventories" / "onion-keys"          # not made yet: its nearest existing ancestor is asked
    problem, warning = esc.plaintext_problem(str(inside))
    assert warning is None and "is inside the git work tree %s and git does not ignore it" % repo in problem
    assert "set a vault password for the run (--ask-vault-pass" in problem and "Nothing was changed." in problem
    assert esc.plaintext_problem(str(inside), allowed=True) == (None, None)
    (repo / ".gitignore").write_text("onion-keys/\n")
    assert esc.plaintext_problem(str(inside)) == (None, None)
    # git missing or failing: refused, saying git could not tell
    problem, _ = esc.plaintext_problem(str(repo / "keys"), run=lambda argv, cwd: 127)
    assert "(git could not say: rc 127)" in problem
