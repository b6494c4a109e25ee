# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 42, "Monitoring bound to loopback by default", the onionprobe role: Onionprobe 1.4's exporter listens on
every address (prometheus_client's start_http_server(port), no option for the address), so the role's unit runs it
through roles/onionprobe/files/onionprobe-bind.py with onionprobe_exporter_listen_address (127.0.0.1 by default).

- the unit (rendered by Ansible's Templar with the role's defaults) runs the launcher with 127.0.0.1;
- the launcher, run as the unit runs it against a stand-in prometheus_client whose start_http_server binds a real
  socket (its default address 0.0.0.0, as the real one), makes a script that calls it as Onionprobe does listen on
  the address given, and refuses to start the script when prometheus_client has no such function;
- bad addresses are refused by the role's checks (its first tasks, run here as the role runs them)."""

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.ansible_template import render

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "onionprobe"
LAUNCHER = ROLE / "files" / "onionprobe-bind.py"

# a stand-in for prometheus_client: start_http_server binds a socket on (addr, port) as the real one does (default
# address 0.0.0.0) and prints what it bound; exposition holds the same function, as in the real package
FAKE_CLIENT = {
    "prometheus_client/__init__.py": "from .exposition import start_http_server, start_wsgi_server\n",
    "prometheus_client/exposition.py": (
        "import json, socket, sys\n"
        "def start_wsgi_server(port, addr='0.0.0.0', registry=None):\n"
        "    family = socket.AF_INET6 if ':' in addr else socket.AF_INET\n"
        "    s = socket.socket(family)\n"
        "    s.bind((addr, port))\n"
        "    s.listen(1)\n"
        "    print(json.dumps({'bound': s.getsockname()[:2], 'registry': registry}))\n"
        "    s.close()\n"
        "start_http_server = start_wsgi_server\n"),
}
# Onionprobe's way (onionprobe/metrics.py): the function imported when the exporter starts, called with the port
ONIONPROBE = (
    "import sys\n"
    "def initialize_prometheus_exporter(port):\n"
    "    from prometheus_client import start_http_server\n"
    "    start_http_server(port)\n"
    "if __name__ == '__main__':\n"
    "    assert sys.argv[1:] == ['--config', '/etc/onionprobe/onionlab.yaml'], sys.argv\n"
    "    initialize_prometheus_exporter(0)\n")


def fake(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    script = tmp_path / "onionprobe"
    script.write_text(ONIONPROBE)
    return script


def launch(tmp_path, address, script):
    return subprocess.run([sys.executable, str(LAUNCHER), address, str(script), "--config",
                           "/etc/onionprobe/onionlab.yaml"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60, env={"PYTHONPATH": str(tmp_path)})


def test_the_unit_runs_onionprobe_through_the_launcher_on_loopback():
    variables = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    variables.update(yaml.safe_load((ROLE / "vars" / "main.yml").read_text()))
    variables.update(ansible_managed="Ansible managed", onionprobe_settings={
        "binary": "/opt/onionprobe/bin/onionprobe", "python": "/opt/onionprobe/bin/python3"})
    text = render([{"template": "roles/onionprobe/templates/onionprobe.service.j2", "vars": variables}])[0]["text"]
    exec_start = [line for line in text.splitlines() if line.startswith("ExecStart=")]
    assert exec_start == ["ExecStart=/opt/onionprobe/bin/python3 /usr/local/lib/onionlab-onionprobe/onionprobe-bind.py "
                          "127.0.0.1 /opt/onionprobe/bin/onionprobe --config /etc/onionprobe/onionlab.yaml"]


@pytest.mark.parametrize("address", ["127.0.0.1", "::1"])
def test_the_exporter_listens_on_the_address_given(tmp_path, address):
    if address == "::1" and not socket.has_ipv6:
        pytest.skip("no IPv6")
    script = fake(tmp_path, FAKE_CLIENT)
    p = launch(tmp_path, address, script)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["bound"][0] == address


def test_without_the_launcher_it_would_listen_on_every_address(tmp_path):
    """The stand-in is faithful: the same script run directly binds 0.0.0.0."""
    script = fake(tmp_path, FAKE_CLIENT)
    p = subprocess.run([sys.executable, str(script), "--config", "/etc/onionprobe/onionlab.yaml"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60,
                       env={"PYTHONPATH": str(tmp_path)})
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["bound"][0] == "0.0.0.0"


def test_a_prometheus_client_without_the_function_does_not_start_onionprobe(tmp_path):
    script = fake(tmp_path, {"prometheus_client/__init__.py": "", "prometheus_client/exposition.py": ""})
    p = launch(tmp_path, "127.0.0.1", script)
    assert p.returncode != 0 and "not starting Onionprobe" in p.stderr, (p.stdout, p.stderr)
    assert p.stdout == ""


def test_usage(tmp_path):
    p = subprocess.run([sys.executable, str(LAUNCHER), "127.0.0.1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60)
    assert p.returncode != 0 and "usage:" in p.stderr


def role_checks():
    """The role's checks of its variables: the filter onionprobe_settings' (as the role calls it) and the unit's words."""
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    name = "The role's variables written into Onionprobe's unit, one word each"
    that = [t for t in tasks if t.get("name") == name][0]["ansible.builtin.assert"]["that"]
    return ["(_onionprobe_variables | onionlab.tor.onionprobe_settings) is mapping"] + (
        [that] if isinstance(that, str) else that)


ADDRESSES = [
    ("127.0.0.1", True), ("::1", True), ("0.0.0.0", True), ("::", True), ("10.0.0.9", True), ("fd00::9", True),
    ("127.0.0.1\nExecStartPre=/bin/sh -c id", False), ("127.0.0.1 --config", False), ("localhost", False),
    ("[::1]", False), ("127.0.0.1:9935", False), ("", False), ("127.0.0.1\\", False), ("%H", False),
]


@pytest.fixture(scope="module")
def checked():
    """{address: every check passed}, all in one child."""
    checks, jobs = role_checks(), []
    for address, _ in ADDRESSES:
        variables = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
        variables.update(yaml.safe_load((ROLE / "vars" / "main.yml").read_text()))
        variables["onionprobe_exporter_listen_address"] = address
        jobs += [{"data": "{{ %s }}" % c, "vars": variables} for c in checks]
    got = iter(render(jobs))
    return dict((address, all(next(got).get("value") is True for _ in checks)) for address, _ in ADDRESSES)


@pytest.mark.parametrize("address, accepted", ADDRESSES)
def test_the_listen_address_is_checked(checked, address, accepted):
    assert checked[address] == accepted
