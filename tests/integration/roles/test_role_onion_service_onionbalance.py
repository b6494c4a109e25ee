# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_service role's per-service onionbalance_frontend (issue 18, the backend side) on this
machine against a throwaway tor: the module entry gets it, the role's PoW default stays off for a
balanced service, the summary says behind which address, explicit PoW is the module's refusal."""

import stat

import yaml

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from harness.ansible_run import onion_service_play, run_playbook
from harness.keys import new_expanded_key

FRONT_SID = onion.onion_address(onion.ed25519_public_from_expanded(new_expanded_key(b"role frontend")))


def test_balanced_service_through_the_role(tor, tmp_path):
    (tmp_path / "svc").mkdir(mode=0o700)
    services = [{"name": "shop", "ports": [{"port": 80, "target_port": 8080}], "onionbalance_frontend": FRONT_SID},
                {"name": "web", "ports": [{"port": 80}]}]
    first = run_playbook(onion_service_play(tor.control_port, tmp_path, services), tmp_path)
    assert first.rc == 0, first.output
    got = tor.service_options()
    # balanced: the flag, no PoW from the role's default; the plain service gets the default
    assert got["shop"] == {"HiddenServiceOnionBalanceInstance": "1"}, got
    assert got["web"].get("HiddenServicePoWDefensesEnabled") == "1", got
    ob_config = tmp_path / "svc" / "shop" / "ob_config"
    assert ob_config.read_text() == "MasterOnionAddress %s.onion\n" % FRONT_SID
    assert stat.S_IMODE(ob_config.stat().st_mode) == 0o600
    assert not (tmp_path / "svc" / "web" / "ob_config").exists()
    summary = dict((e["service"], e) for e in yaml.safe_load((tmp_path / "summary.yml").read_text()))
    assert summary["shop"]["onionbalance_frontend"] == FRONT_SID + ".onion"
    assert "onionbalance_frontend" not in summary["web"]
    # its key is escrowed like every service's
    escrowed = tmp_path / "escrow" / "localhost" / "shop" / "hs_ed25519_secret_key"
    assert escrowed.read_bytes() == (tmp_path / "svc" / "shop" / "hs_ed25519_secret_key").read_bytes()

    again = run_playbook(onion_service_play(tor.control_port, tmp_path, services), tmp_path)
    assert again.rc == 0 and again.stats["localhost"]["changed"] == 0, again.output

    # PoW asked for explicitly on the balanced service: the module refuses, nothing changes
    services[0]["options"] = {"pow": {"enabled": True}}
    refused = run_playbook(onion_service_play(tor.control_port, tmp_path, services), tmp_path)
    assert refused.rc != 0
    assert "pow.enabled is refused on the balanced service %s" % (tmp_path / "svc" / "shop") in refused.output
    assert tor.service_options() == got

    # no longer balanced: the flag and ob_config go, the role's PoW default comes
    del services[0]["options"], services[0]["onionbalance_frontend"]
    plain = run_playbook(onion_service_play(tor.control_port, tmp_path, services), tmp_path)
    assert plain.rc == 0, plain.output
    assert tor.service_options()["shop"] == {"HiddenServicePoWDefensesEnabled": "1"}
    assert not ob_config.exists()
