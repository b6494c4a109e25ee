# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onionbalance role's backends resolved and checked in Python (plugin_utils/onionbalance_backends.py, issue 41),
each message as the role's Jinja gave it. Through the role: tests/integration/privnet/test_privnet_onionbalance.py."""

import os

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow as esc
from ansible_collections.onionlab.tor.plugins.plugin_utils import onionbalance_backends as ob


def _address():
    return esc.key_address(onion.SECRET_HEADER + os.urandom(64))[:-len(".onion")]


def _ok(backends, hostvars=None, backup_dir="/nonexistent", service=None, most=8):
    hostvars = hostvars or {}
    return ob.check(ob.resolve(backends, service, backup_dir, hostvars), hostvars, most)


def _refused(text, *args, **kwargs):
    with pytest.raises(ob.BackendsError) as err:
        _ok(*args, **kwargs)
    assert text in str(err.value), str(err.value)


def test_addresses_facts_and_escrow_resolve_in_order(tmp_path):
    a, b, c, d = _address(), _address(), _address(), _address()
    (tmp_path / "web3" / "www").mkdir(parents=True)
    (tmp_path / "web3" / "www" / "hostname").write_text(c + ".onion\n")
    hostvars = {"web2": {"onion_service_addresses": {"www": b + ".onion"}, "onion_services": [{"name": "www"}]},
                "web3": {}}
    out = _ok([a + ".onion", "web2", {"host": "web3", "service": "www"}, {"address": d}], hostvars,
              str(tmp_path), service="www")
    assert [x["address"] for x in out] == [a, b, c, d]
    assert [x["name"] for x in out] == ["backend1", "web2-www", "web3-www", "backend4"]
    assert out[2]["escrow_file"] == str(tmp_path / "web3" / "www" / "hostname") and out[0]["host"] is None


@pytest.mark.parametrize("backends, kwargs, text", [
    ([], {}, "onionbalance: onionbalance_backends is empty"),
    (["not-an-onion.onion"], {}, "onionbalance: backend host not-an-onion.onion has no address for service ?: set "
                                 "onionbalance_backend_service"),
    (["web1"], {"service": "www"}, "onionbalance: backend host web1 has no address for service www: run "
                                   "onionlab.tor.onion_service on that host in this play, or keep its escrowed"),
    (["a" * 56], {}, "onionbalance: backend %s is not a v3 onion address" % ("a" * 56)),   # its checksum
])
def test_refusals(backends, kwargs, text):
    _refused(text, backends, **kwargs)


def test_twice_too_many_and_services_onionbalance_cannot_carry():
    a = _address()
    _refused("onionbalance: a backend address is listed twice", [a, a + ".onion"])
    _refused("onionbalance: 3 backends, more than 2 (onionbalance_max_backends)", [_address() for _ in range(3)],
             most=2)
    with_clients = {"web1": {"onion_service_addresses": {"www": a}, "onion_services": [
        {"name": "www", "clients": [{"name": "alice"}]}]}}
    _refused("onionbalance: web1's service www has client authorization (clients/authorized_clients)", ["web1"],
             with_clients, service="www")
    with_pow = {"web1": {"onion_service_addresses": {"www": a}, "onion_services": [
        {"name": "www", "options": {"pow": {"enabled": True}}}]}}
    _refused("onionbalance: web1's service www has proof of work turned on (options.pow.enabled)", ["web1"], with_pow,
             service="www")


def test_the_frontend_is_no_backend_and_every_backend_host_names_it():
    a, front, other = _address(), _address(), _address()
    resolved = ob.resolve([a], None, "/nonexistent", {})
    with pytest.raises(ob.BackendsError, match="the frontend address %s.onion is also listed as a backend" % a):
        ob.check_frontend(resolved, {}, a + ".onion")
    assert ob.check_frontend(resolved, {}, front + ".onion") == resolved
    hostvars = {"web1": {"onion_service_addresses": {"www": a}, "onion_services": [{"name": "www"}]}}
    resolved = ob.resolve(["web1"], "www", "/nonexistent", hostvars)
    with pytest.raises(ob.BackendsError) as err:
        ob.check_frontend(resolved, hostvars, front + ".onion")
    assert ("backend host web1's service www has no onionbalance_frontend in its onion_services entry" in str(err.value)
            and "Fix: set onionbalance_frontend: %s.onion on the entry www" % front in str(err.value))
    hostvars["web1"]["onion_services"][0]["onionbalance_frontend"] = other + ".onion"
    with pytest.raises(ob.BackendsError, match="names another frontend, %s.onion," % other):
        ob.check_frontend(resolved, hostvars, front)
    with pytest.raises(ob.BackendsError, match="has no onionbalance_frontend in .* naming this frontend"):
        ob.check_frontend(resolved, {"web1": {"onion_services": [{"name": "www"}]}}, "")
    hostvars["web1"]["onion_services"][0]["onionbalance_frontend"] = front
    assert ob.check_frontend(resolved, hostvars, front + ".onion") == resolved
    assert ob.check_frontend(resolved, hostvars, "") == resolved      # not known yet: any frontend named will do


def test_the_config_and_the_addresses_fact_from_the_resolved_backends():
    """What the role's template writes (issue 41: was a dict2items/selectattr/items2dict chain in Jinja) and the
    onionbalance_backend_addresses fact: each backend's address and name only, in order; a bad input is one message."""
    from ansible.errors import AnsibleFilterError
    from ansible_collections.onionlab.tor.plugins.filter.onionbalance_config import onionbalance_config
    one, two = _address(), _address()
    resolved = _ok([one, {"host": "web2", "address": two}])
    out = onionbalance_config(resolved, key_file="/var/lib/onionbalance/key")
    assert out == {"config": {"services": [{"key": "/var/lib/onionbalance/key", "instances": [
        {"address": one, "name": "backend1"}, {"address": two, "name": "web2-None"}]}]},
        "addresses": [one + ".onion", two + ".onion"]}
    with pytest.raises(AnsibleFilterError, match="the input must be the list the onionbalance_backends filter"):
        onionbalance_config([{"address": one}], key_file="/k")
