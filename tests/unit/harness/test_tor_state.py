# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""hostbed.tor_state_script, the docs run's reading of what a bed host's tor runs (its outcome before and after
the site playbook and a restart, and a host put back clean), against a real tor (DisableNetwork 1): a
persistent service, a detached ephemeral one, a permanent and a non-permanent client credential."""

import base64
import json
import os
import subprocess

from harness import hostbed
from harness.tor_instance import TorInstance

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect

# x25519 private keys (32 bytes, base64 as tor takes them) and two service addresses with their checksums
KEY_A = base64.b64encode(b"\x41" * 32).decode()
KEY_B = base64.b64encode(b"\x42" * 32).decode()
PEER_A = onion.onion_address(onion.ed25519_public_from_expanded(b"\x01" * 64))
PEER_B = onion.onion_address(onion.ed25519_public_from_expanded(b"\x02" * 64))


def _state(tor):
    out = subprocess.run(hostbed.tor_state_script(tor.control_socket, tor.cookie_path), shell=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_services_ephemeral_and_permanent_credentials(tmp_path):
    auth = tmp_path / "auth"
    auth.mkdir(mode=0o700)
    with TorInstance(base_dir=str(tmp_path / "tor"), extra=["ClientOnionAuthDir %s" % auth]) as tor:
        assert _state(tor) == {"services": [], "ephemeral": [], "credentials": []}
        hs = tmp_path / "tor" / "data" / "web"
        with connect(port=tor.control_port) as ctl:
            ctl.set_conf([("HiddenServiceDir", str(hs)), ("HiddenServicePort", "80 127.0.0.1:8080")])
            detached = [ctl.add_onion([(80, "127.0.0.1:8080")], flags=("Detach",))["service_id"]]
            ctl.request("ONION_CLIENT_AUTH_ADD", [PEER_A, "x25519:" + KEY_A, "Flags=Permanent"])
            ctl.request("ONION_CLIENT_AUTH_ADD", [PEER_B, "x25519:" + KEY_B])
        state = _state(tor)
        address = (hs / "hostname").read_text().strip()
        assert state == {"services": ["%s %s" % (hs, address)], "ephemeral": detached, "credentials": [PEER_A]}
        assert os.path.exists(str(auth / ("%s.auth_private" % PEER_A)))


def test_refusal_is_said(tmp_path):
    with TorInstance(base_dir=str(tmp_path / "tor")) as tor:
        bad = tmp_path / "cookie"
        bad.write_bytes(b"\x00" * 32)
        out = subprocess.run(hostbed.tor_state_script(tor.control_socket, str(bad)), shell=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        assert out.returncode == 1 and "tor refused" in out.stderr, (out.stdout, out.stderr)
