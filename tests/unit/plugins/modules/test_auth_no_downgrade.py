# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 42 at the module level: every module connects through _common.connect_module -> client.connect ->
auth.authenticate, so a module given control_password or cookie_path refuses a peer that offers NULL (the
stateful fake control port of conftest.py offers only NULL) before any AUTHENTICATE, and the module's
result names what the peer offered and never holds the password. Without credentials it still works."""

import json

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.modules import (
    tor_accounting_facts,
    tor_consensus_facts,
    tor_hidden_service,
    tor_hidden_service_info,
    tor_onion_client_auth,
    tor_onion_client_auth_info,
    tor_onion_health,
)

PASSWORD = "s3cret-never-sent"
ADDRESS = onion.onion_address(bytes(range(32))) + ".onion"
CLIENT_KEY = onion.generate_client_keypair()[0]     # the private half: what a NULL peer got in issue 42


def _args(module, tmp_path):
    """The smallest arguments under which each module connects to tor."""
    return {
        tor_accounting_facts: {},
        tor_hidden_service_info: {},
        tor_onion_client_auth_info: {},
        tor_onion_health: {},
        tor_consensus_facts: {"flavor": "microdesc"},
        tor_hidden_service: {"ephemeral": True, "ports": [{"port": 80}]},
        tor_onion_client_auth: {"address": ADDRESS, "private_key": CLIENT_KEY},
    }[module]


MODULES = [tor_accounting_facts, tor_hidden_service_info, tor_onion_client_auth_info, tor_onion_health,
           tor_consensus_facts, tor_hidden_service, tor_onion_client_auth]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
@pytest.mark.parametrize("given", ["control_password", "cookie_path"])
def test_a_module_given_credentials_refuses_a_null_peer(runner, fake, tmp_path, module, given):
    cookie = tmp_path / "cookie"
    cookie.write_bytes(bytes(range(32)))
    credentials = {"control_password": PASSWORD} if given == "control_password" else {"cookie_path": str(cookie)}
    result = runner.fails(module, control_port=fake.port, **dict(_args(module, tmp_path), **credentials))
    assert result["error"] == "AuthenticationFailed"
    assert result["msg"].startswith("refusing to authenticate to the peer at port 127.0.0.1:%d: it offers NULL, but "
                                    "%s was given" % (fake.port, given)), result["msg"]
    assert fake.commands() == ["PROTOCOLINFO"]          # no AUTHENTICATE, no command with a key after it
    assert PASSWORD not in json.dumps(result) and CLIENT_KEY not in json.dumps(result)


def test_a_module_without_credentials_still_takes_null(runner, fake):
    runner.ok(tor_hidden_service_info, control_port=fake.port)
    assert fake.commands()[:2] == ["PROTOCOLINFO", "AUTHENTICATE"]
