# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 31 items 2 and 3: the onion_service role's summary file over two hosts (two inventory names on this
machine, each with a throwaway tor of its own): a host that fails keeps its entries, marked not refreshed;
under strategy free a rerun changes nothing; each host's addresses are printed at default verbosity, no key."""

import base64

import yaml

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from harness.ansible_run import _python, run_playbook
from harness.tor_instance import TorInstance


def two_hosts(tor, tor2, tmp_path, misspelt=False):
    """An inventory of host1 and host2 (both this machine, local connection), each with its tor, service
    directory and drop-in; host2 optionally with a misspelt role variable."""
    lines = ["[onion]"]
    for name, instance in (("host1", tor), ("host2", tor2)):
        (tmp_path / name / "svc").mkdir(mode=0o700, parents=True, exist_ok=True)
        line = ("%s ansible_connection=local ansible_python_interpreter=%s onion_service_control_port=%d "
                "onion_service_dir=%s onion_service_config_file=%s"
                % (name, _python(), instance.control_port, tmp_path / name / "svc", tmp_path / name / "onion.conf"))
        if misspelt and name == "host2":
            line += " onion_service_prots=80"
        lines.append(line)
    inventory = tmp_path / ("hosts-%s.ini" % ("misspelt" if misspelt else "ok"))
    inventory.write_text("\n".join(lines) + "\n")
    return ["-i", str(inventory)]


def play(tmp_path, strategy="linear"):
    # under free, host2 reaches the role 2 s after host1 (the order a slower host gives; with the old run_once
    # template, host1 wrote the file without host2's entries, then host2 with them: changed on both, every run)
    pre_tasks = [{"name": "host2 is slower", "ansible.builtin.command": "sleep 2", "changed_when": False,
                  "when": "inventory_hostname == 'host2'"}] if strategy == "free" else []
    return [{"hosts": "onion", "gather_facts": False, "strategy": strategy, "pre_tasks": pre_tasks, "vars": {
        "onion_service_tor_user": "root",
        "onion_service_backup_dir": str(tmp_path / "escrow"),
        "onion_service_summary_file": str(tmp_path / "summary.yml"),
        "onion_services": [{"name": "web", "ports": [{"port": 80, "target_port": 8080}], "clients": [{"name": "laptop"}]},
                           {"name": "blog", "ports": [{"port": 443, "target_port": 8443}]}],
    }, "roles": ["onionlab.tor.onion_service"]}]


def summary(tmp_path):
    return dict(((e["host"], e["service"]), e) for e in yaml.safe_load((tmp_path / "summary.yml").read_text()))


def test_a_failed_host_keeps_its_entries_marked_not_refreshed(tor, tmp_path):
    with TorInstance(tmp_path / "tor2") as tor2:
        first = run_playbook(play(tmp_path), tmp_path, extra_args=two_hosts(tor, tor2, tmp_path))
        assert first.rc == 0, first.output
        before = summary(tmp_path)
        print("first run:", sorted((k, e["onion_address"], e.get("refreshed")) for k, e in before.items()))
        assert sorted(before) == [("host1", "blog"), ("host1", "web"), ("host2", "blog"), ("host2", "web")]
        assert all(e.get("refreshed") is not False for e in before.values())
        # client authorization: the clients by name, the health check's probe client among them (issue 38)
        assert before[("host1", "web")]["clients"] == ["laptop", "probe"], before
        assert "clients" not in before[("host1", "blog")]

        failed = run_playbook(play(tmp_path), tmp_path, extra_args=two_hosts(tor, tor2, tmp_path, misspelt=True))
        assert failed.rc != 0 and failed.stats["host2"]["failures"] == 1, failed.output
        assert "onion_service_prots" in failed.output
        after = summary(tmp_path)
        print("host2 failing:", sorted((k, e["onion_address"], e.get("refreshed"), e.get("refreshed_at"))
                                      for k, e in after.items()))
        # host2 still serves both: its entries stay, as they were, marked not refreshed since their last refresh
        assert sorted(after) == sorted(before)
        for key in (("host2", "web"), ("host2", "blog")):
            assert after[key]["onion_address"] == before[key]["onion_address"]
            assert after[key]["refreshed"] is False
            assert after[key]["refreshed_at"] == before[key]["refreshed_at"]
        assert after[("host1", "web")]["refreshed"] is True

        # a later good run refreshes host2 again
        again = run_playbook(play(tmp_path), tmp_path, extra_args=two_hosts(tor, tor2, tmp_path))
        assert again.rc == 0, again.output
        assert all(e["refreshed"] is True for e in summary(tmp_path).values())


def test_strategy_free_rerun_changes_nothing_and_the_addresses_are_printed(tor, tmp_path):
    with TorInstance(tmp_path / "tor2") as tor2:
        inventory = two_hosts(tor, tor2, tmp_path)
        first = run_playbook(play(tmp_path, "free"), tmp_path, extra_args=inventory)
        assert first.rc == 0, first.output
        again = run_playbook(play(tmp_path, "free"), tmp_path, extra_args=inventory)
        assert again.rc == 0, again.output
        print("strategy free: first run", first.stats, "rerun:", again.stats)
        assert again.stats["host1"]["changed"] == 0 and again.stats["host2"]["changed"] == 0, again.output
        entries = summary(tmp_path)
        assert len(entries) == 4 and all(e.get("refreshed") is not False for e in entries.values())

        # item 3: at default verbosity, one line per host: service -> onion address; no key material
        for host in ("host1", "host2"):
            line = "onion_service on %s: blog -> %s; web -> %s" % (
                host, entries[(host, "blog")]["onion_address"], entries[(host, "web")]["onion_address"])
            print(line)
            assert line in again.output
            for name in ("web", "blog"):
                secret = (tmp_path / "escrow" / host / name / "hs_ed25519_secret_key").read_bytes()
                expanded = secret[len(onion.SECRET_HEADER):]
                for text in (base64.b64encode(expanded).decode(), onion.key_blob(expanded).split(":")[1]):
                    assert text not in again.output and text not in first.output
        assert "ED25519-V3" not in again.output + first.output


def test_a_refused_port_names_its_service(tor, tmp_path):
    """Issue 31 item 4a: "port must be a port number between 1 and 65535, got '80/tcp'" said which value but not
    which service."""
    from harness.ansible_run import onion_service_play
    (tmp_path / "svc").mkdir(mode=0o700)
    services = [{"name": "web", "ports": [80]}, {"name": "blog", "ports": [{"port": "80/tcp", "target_port": 8080}]}]
    run = run_playbook(onion_service_play(tor.control_port, tmp_path, services), tmp_path)
    line = [l for l in run.output.splitlines() if "port number between" in l and "fatal:" in l][0]
    print(line)
    assert run.rc != 0 and "service blog (%s): port must be a port number" % (tmp_path / "svc" / "blog") in line
    assert not (tmp_path / "svc" / "web").exists()
