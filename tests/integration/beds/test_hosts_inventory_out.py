# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``tests/harness/hosts.py up --inventory-out FILE`` writes the format FILE's name says (issue 14, point 12):
INI for ``.ini`` (ansible-inventory reads it back to the same hosts and vars as the JSON one, and
Ansible reaches the host through it), JSON (= YAML) otherwise."""

import json
import os
import shutil
import subprocess
import sys

import pytest

HOSTS_PY = os.path.join(os.path.dirname(__file__), "..", "..", "harness", "hosts.py")
BIN = os.path.dirname(sys.executable)


def _inventory_list(path):
    out = subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", path, "--list"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, timeout=60, check=False)
    assert out.returncode == 0 and "[WARNING]" not in out.stderr, out.stderr
    return json.loads(out.stdout)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"), reason="the bed needs root and nspawn")
def test_inventory_out_ini_and_yaml(tmp_path):
    bed_dir = tmp_path / "bed"
    ini, yml = str(tmp_path / "bed.ini"), str(tmp_path / "bed.yml")
    up = subprocess.run([sys.executable, HOSTS_PY, "up", "--stock", "-n", "1", "--dir", str(bed_dir),
                         "--inventory-out", ini], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        universal_newlines=True, timeout=300, check=False)
    try:
        assert up.returncode == 0, up.stdout
        text = open(ini).read()
        assert text.startswith("[testbed]\n") and "[testbed:vars]\n" in text, text
        with pytest.raises(ValueError):
            json.loads(text)
        from_ini = _inventory_list(ini)
        state = json.load(open(str(bed_dir / "state.json")))
        from_json = _inventory_list(state["inventory"])
        assert from_ini["testbed"]["hosts"] == from_json["testbed"]["hosts"] == [state["hosts"][0]["name"]]
        # every var of every host, typed as in the JSON inventory (ints, booleans, lists)
        assert from_ini["_meta"]["hostvars"] == from_json["_meta"]["hostvars"]
        hv = from_ini["_meta"]["hostvars"][state["hosts"][0]["name"]]
        assert hv["testbed_stock"] is True and isinstance(hv["ansible_port"], int)
        ports = hv["testbed_app_ports"]  # a list in an INI inventory too
        assert len(set(ports)) == 4 and all(isinstance(p, int) for p in ports), ports
        assert hv["testbed_privnet_torrc_lines"] == []
        ping = subprocess.run([os.path.join(BIN, "ansible"), "-i", ini, "all", "-m", "ping"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=120, check=False,
                              env=dict(os.environ, ANSIBLE_HOST_KEY_CHECKING="False"))
        assert ping.returncode == 0 and "SUCCESS" in ping.stdout, ping.stdout
        # another name: JSON, which is YAML
        subprocess.run([sys.executable, HOSTS_PY, "inventory", "--dir", str(bed_dir)], check=True,
                       stdout=open(yml, "w"), timeout=60)
        assert json.load(open(yml))["all"]["children"]["testbed"]["hosts"]
    finally:
        subprocess.run([sys.executable, HOSTS_PY, "down", "--dir", str(bed_dir)], timeout=120, check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
