# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 31 items 2 and 3 on a stock Debian host over ssh, as an ordinary user who becomes root (su): two
inventory names for the one stock host (both serve the same services on its tor; the controller keeps them
apart). With a misspelt variable for the second name, the summary file keeps its entries, marked
refreshed: false; each run prints, at default verbosity, one line per host of its services' onion addresses,
and no key."""

import json
import os
import re

import yaml

from harness import hosts as hb
from harness.ansible_run import run_playbook

OPERATOR = "onionlab-summary"


def _restore_and_ssh():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "stock_role", os.path.join(os.path.dirname(__file__), "test_stock_role_onion_service.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_failed_host_keeps_its_summary_entries_over_ssh_with_become(stockbed, tmp_path):
    stock = _restore_and_ssh()
    bed = stockbed
    password = "sum-%s" % os.urandom(6).hex()
    stock._ssh(bed, "set -e; cp -a /etc/shadow /etc/shadow.onionlab-summary; "
                    "id %(u)s >/dev/null 2>&1 || useradd -m -s /bin/bash %(u)s; "
                    "install -d -m 0700 -o %(u)s -g %(u)s /home/%(u)s/.ssh; "
                    "install -m 0600 -o %(u)s -g %(u)s /root/.ssh/authorized_keys /home/%(u)s/.ssh/authorized_keys; "
                    "echo 'root:%(p)s' | chpasswd" % {"u": OPERATOR, "p": password})
    stock._ssh(bed, hb.WAIT_CONTROL_SOCKET)
    before = stock._ssh(bed, stock._SNAPSHOT)
    inventory = bed.inventory()
    group = inventory["all"]["children"]["testbed"]
    (only,) = group["hosts"].values()
    group["hosts"] = {"web1": dict(only), "web2": dict(only)}
    group["vars"].update(ansible_user=OPERATOR, ansible_become_method="su", ansible_become_password=password)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(inventory))
    group["hosts"]["web2"]["onion_service_prots"] = 80
    misspelt = tmp_path / "misspelt.json"
    misspelt.write_text(json.dumps(inventory))
    book = [{"hosts": "testbed", "gather_facts": False, "become": True, "vars": {
        "onion_service_backup_dir": str(tmp_path / "escrow"),
        "onion_service_summary_file": str(tmp_path / "onion-services.yml"),
        "onion_services": [{"name": "web", "ports": [{"port": 80, "target_port": 8080}]}]},
        "roles": ["onionlab.tor.onion_service"]}]
    env = {"ANSIBLE_REMOTE_TEMP": "/tmp/.ansible-%s" % OPERATOR}
    try:
        first = run_playbook(book, tmp_path, extra_args=["-i", str(good), "-f", "1"], extra_env=env)
        assert first.rc == 0, first.output
        entries = yaml.safe_load((tmp_path / "onion-services.yml").read_text())
        address = entries[0]["onion_address"]
        print([(e["host"], e["service"], e["onion_address"], e.get("refreshed")) for e in entries])
        assert [(e["host"], e["service"]) for e in entries] == [("web1", "web"), ("web2", "web")]
        assert all(re.match(r"^0\.4\.\d+\.\d+", e["tor_version"]) for e in entries), entries   # GETINFO version

        failed = run_playbook(book, tmp_path, extra_args=["-i", str(misspelt), "-f", "1"], extra_env=env)
        assert failed.rc != 0 and "onion_service_prots" in failed.output, failed.output
        after = yaml.safe_load((tmp_path / "onion-services.yml").read_text())
        print([(e["host"], e["service"], e.get("refreshed"), e.get("refreshed_at")) for e in after])
        assert [(e["host"], e["service"], e["onion_address"], e.get("refreshed")) for e in after] == [
            ("web1", "web", address, True), ("web2", "web", address, False)]
        assert all(e["refreshed"] is True for e in entries)
        assert after[1]["refreshed_at"] == entries[1]["refreshed_at"]
        for host in ("web1", "web2"):      # item 3: at default verbosity
            line = "onion_service on %s: web -> %s" % (host, address)
            assert line in first.output, first.output
            print(line)

        key = (tmp_path / "escrow" / "web1" / "web" / "hs_ed25519_secret_key").read_bytes()[32:]
        for text in stock._encodings(key):
            assert text not in first.output and text not in failed.output
    finally:
        stock._restore(bed, before)
        stock._ssh(bed, "cp -a /etc/shadow.onionlab-summary /etc/shadow && rm -f /etc/shadow.onionlab-summary; "
                        "userdel -r %s 2>/dev/null; rm -rf /tmp/.ansible-%s; true" % (OPERATOR, OPERATOR),
                   check=False)
