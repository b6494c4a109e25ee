# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 26 A9: every shape of an onion_services[].ports entry that the role's argument spec accepts (elements
raw: a port, "PORT", "PORT:TARGET_PORT", "PORT:ADDRESS:TARGET_PORT", "PORT:unix:/path", a dict) works through
the whole role against a throwaway tor: the services applied as tor_hidden_service takes them (a port N alone
goes to 127.0.0.1:N), the summary (ports, Onion-Location) right, a second run changed=0. Before, `ports: [80]`
was applied, then the summary template failed ("object of type 'int' has no attribute 'port'")."""

import pytest
import yaml

from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import onion_service_play, run_playbook

DEPLOY = "onionlab.tor.onion_service : Apply the services to tor, with the controller's key escrow"


def tor_ports(tor):
    """{service directory name: [HiddenServicePort values]} as tor runs them."""
    out, current = {}, None
    with connect(port=tor.control_port) as ctl:
        for key, value in ctl.get_conf("HiddenServiceOptions"):
            if key == "HiddenServiceDir":
                current = value.rstrip("/").rsplit("/", 1)[-1]
                out[current] = []
            elif key == "HiddenServicePort":
                out[current].append(value)
    return out


@pytest.mark.parametrize("ports, tor_sees, summary_ports, location", [
    ([80], ["80 127.0.0.1:80"], [80], "http"),
    (["80"], ["80 127.0.0.1:80"], [80], "http"),
    ([{"port": 80}], ["80 127.0.0.1:80"], [80], "http"),
    ([{"port": 443, "target_port": 8443}], ["443 127.0.0.1:8443"], [443], "https"),
    (["443:8443", 22], ["443 127.0.0.1:8443", "22 127.0.0.1:22"], [443, 22], "https"),
    (["80:127.0.0.1:8080"], ["80 127.0.0.1:8080"], [80], "http"),
    (["8080:unix:/run/onionlab-test.sock"], ["8080 unix:/run/onionlab-test.sock"], [8080], None),
], ids=["int", "str", "dict", "dict-target", "str-target+int", "str-address", "str-unix"])
def test_every_ports_shape_the_spec_accepts_works(tor, tmp_path, ports, tor_sees, summary_ports, location):
    (tmp_path / "svc").mkdir(mode=0o700)
    services = [{"name": "web", "ports": ports}]
    first = run_playbook(onion_service_play(tor.control_port, tmp_path, services), tmp_path)
    assert first.rc == 0, first.output
    assert first.task(DEPLOY)["status"] == "changed", first.output
    assert tor_ports(tor) == {"web": tor_sees}
    summary = yaml.safe_load((tmp_path / "summary.yml").read_text())
    address = (tmp_path / "svc" / "web" / "hostname").read_text().strip()
    assert [(e["host"], e["service"], e["onion_address"], e["ports"], e["onion_location"]) for e in summary] == [
        ("localhost", "web", address, summary_ports, "%s://%s" % (location, address) if location else None)], summary
    again = run_playbook(onion_service_play(tor.control_port, tmp_path, services), tmp_path)
    assert again.rc == 0 and again.stats["localhost"]["changed"] == 0, again.output
    print("ports %r: tor runs %r, summary ports %r, second run changed=0" % (ports, tor_sees, summary_ports))
