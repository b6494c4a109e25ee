# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restore drill's decisions (plugin_utils/drill.py, issue 40) on hand-made escrows: a good escrow has no gap;
a missing, torn or mismatched key, a missing client key, a summary that disagrees and a key tor gives another address
are each one gap naming the service, never the key; keys of no declared service are listed, not gaps; a sealed
escrow is read with the vault and without it is a gap; the drill writes nothing (an older plaintext client key is not
sealed by it)."""

import os

from ansible.parsing.vault import VaultLib, VaultSecret

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils import drill, escrow as esc

SERVICES = {"web1": [{"name": "web", "ports": [80]}],
            "web2": [{"name": "shop", "ports": [443], "clients": [{"name": "alice"}]}]}


def _escrow(root, vault=esc.NO_VAULT):
    keys = {}
    for host, name in (("web1", "web"), ("web2", "shop"), ("web1", "gone")):
        key = onion.SECRET_HEADER + os.urandom(64)
        e = esc.Escrow(str(root), host, vault)
        e.write_key(name, key)
        e.write_hostname(name, esc.key_address(key))
        keys[(host, name)] = key
    esc.client_key(esc.client_key_file(str(root), "web2", "shop", "alice"), vault)
    return keys


class _Tor(object):
    """Stands in for the scratch tor: the address our parser gives, or another one for a key it names."""

    def __init__(self, liar=None):
        self.liar, self.loaded = liar, 0

    def load(self, data):
        self.loaded += 1
        return "a" * 56 + ".onion" if data == self.liar else esc.key_address(data)


def _problems(found):
    return sorted(f["problem"] for f in found["services"] + found["clients"] if f["problem"])


def test_a_good_escrow_has_no_gap_and_lists_the_undeclared_key(tmp_path):
    keys = _escrow(tmp_path)
    tor = _Tor()
    found = drill.examine(str(tmp_path), SERVICES, tor=tor)
    assert found["gaps"] == 0 and tor.loaded == 2 and found["tor_checked"], found
    assert [u["directory"] for u in found["undeclared"]] == ["gone"]
    assert found["services"][0]["address"] == esc.key_address(keys[("web1", "web")])


def test_each_gap_named_and_no_key_in_a_message(tmp_path):
    keys = _escrow(tmp_path)
    (tmp_path / "web1" / "web" / esc.KEY_FILE).write_bytes(keys[("web1", "web")][:50])          # torn
    (tmp_path / "web2" / "shop" / esc.HOSTNAME).write_text(esc.key_address(keys[("web1", "gone")]) + "\n")  # mismatch
    os.unlink(esc.client_key_file(str(tmp_path), "web2", "shop", "alice"))
    found = drill.examine(str(tmp_path), SERVICES, tor=_Tor())
    problems = _problems(found)
    assert found["gaps"] == 3 and len(problems) == 3, problems
    assert any("truncated or damaged" in p for p in problems)
    assert any("a key of another service" in p for p in problems)
    assert any("no client key in the escrow" in p for p in problems)
    text = repr(found)
    for key in keys.values():
        assert onion.key_blob(key[len(onion.SECRET_HEADER):]).split(":")[1] not in text


def test_a_service_without_a_key_and_a_summary_that_disagrees(tmp_path):
    _escrow(tmp_path)
    services = dict(SERVICES, web3=[{"name": "blog", "ports": [80]}])
    summary = [{"host": "web1", "service": "web", "onion_address": "b" * 56 + ".onion"}]
    problems = _problems(drill.examine(str(tmp_path), services, summary=summary))
    assert len(problems) == 2, problems
    assert any("no key in the escrow" in p and "web3/blog" in p for p in problems)
    assert any(p.startswith("the summary file says %s" % ("b" * 56)) for p in problems)


def test_tor_giving_another_address_is_a_gap(tmp_path):
    keys = _escrow(tmp_path)
    found = drill.examine(str(tmp_path), SERVICES, tor=_Tor(liar=keys[("web2", "shop")]))
    assert _problems(found) == ["tor gives the key the address %s.onion, not %s" % (
        "a" * 56, esc.key_address(keys[("web2", "shop")]))]


def test_a_sealed_escrow_needs_the_vault_and_the_drill_writes_nothing(tmp_path):
    vault = esc.Vault(VaultLib([("default", VaultSecret(b"pw"))]))
    _escrow(tmp_path, vault)
    assert drill.examine(str(tmp_path), SERVICES, vault=vault)["gaps"] == 0
    problems = _problems(drill.examine(str(tmp_path), SERVICES))
    assert len(problems) == 3 and all("no vault password" in p for p in problems), problems
    plain = tmp_path / "plain"
    _escrow(plain)
    client = esc.client_key_file(str(plain), "web2", "shop", "alice")
    before = open(client, "rb").read()
    assert drill.examine(str(plain), SERVICES, vault=vault)["gaps"] == 0
    assert open(client, "rb").read() == before        # not sealed by the drill


def test_onionbalance_frontend_keys_are_drilled_held_and_declared(tmp_path):
    """Every frontend key the escrow holds (onionbalance/NAME/) is drilled; a frontend the inventory declares and the
    escrow lacks is a gap; a torn frontend key is one."""
    _escrow(tmp_path)
    front = esc.Escrow(str(tmp_path), drill.FRONTENDS)
    key = onion.SECRET_HEADER + os.urandom(64)
    front.write_key("shop", key)
    front.write_hostname("shop", esc.key_address(key))
    tor = _Tor()
    found = drill.examine(str(tmp_path), SERVICES, tor=tor, frontends=["shop"])
    assert found["gaps"] == 0 and tor.loaded == 3, found
    assert found["frontends"] == [{"frontend": "shop", "escrow": front.path("shop"), "address": esc.key_address(key),
                                   "tor_address": esc.key_address(key), "problem": None}]
    assert [u["directory"] for u in found["undeclared"]] == ["gone"]     # a frontend is not an undeclared key
    missing = drill.examine(str(tmp_path), SERVICES, tor=_Tor(), frontends=["shop", "blog"])
    assert missing["gaps"] == 1 and "no key in the escrow" in missing["frontends"][0]["problem"], missing
    (tmp_path / drill.FRONTENDS / "shop" / esc.KEY_FILE).write_bytes(key[:40])
    torn = drill.examine(str(tmp_path), SERVICES, tor=_Tor())
    assert torn["gaps"] == 1 and "not a tor ed25519 secret key file" in torn["frontends"][0]["problem"], torn
