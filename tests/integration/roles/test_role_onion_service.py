# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_service role on this machine against a throwaway tor (fast; the multi-host runs
are the molecule scenarios): vault keys, escrow and restore, prune, check mode, summary."""

import os
import shutil
import stat

import yaml

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import onion_service_play, run_playbook
from harness.keys import new_expanded_key


def play(tor, tmp_path, services, **extra):
    return onion_service_play(tor.control_port, tmp_path, services, **extra)


def tor_paths(tor):
    with connect(port=tor.control_port) as ctl:
        return [v for k, v in ctl.get_conf("HiddenServiceOptions") if k == "HiddenServiceDir"]


def test_vault_key_escrow_restore_prune(tor, tmp_path):
    (tmp_path / "svc").mkdir(mode=0o700)
    blob = onion.key_blob(new_expanded_key())
    vault_address = onion.service_id_of_key(blob) + ".onion"
    services = [{"name": "web", "ports": [{"port": 80, "target_port": 8080}]},
                {"name": "blog", "ports": [{"port": 80, "target_port": 8081}], "options": {"num_intro_points": 4}}]
    first = run_playbook(play(tor, tmp_path, services, onion_service_private_keys={"blog": blob}), tmp_path)
    assert first.rc == 0, first.output
    assert blob.split(":")[1] not in first.output
    summary = yaml.safe_load((tmp_path / "summary.yml").read_text())
    assert [(e["host"], e["service"], e["ports"]) for e in summary] == [("localhost", "blog", [80]),
                                                                       ("localhost", "web", [80])]
    addresses = dict((e["service"], e["onion_address"]) for e in summary)
    assert addresses["blog"] == vault_address
    for name in ("web", "blog"):
        key = tmp_path / "escrow" / "localhost" / name / "hs_ed25519_secret_key"
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
        assert key.read_bytes() == (tmp_path / "svc" / name / "hs_ed25519_secret_key").read_bytes()
    assert stat.S_IMODE((tmp_path / "escrow").stat().st_mode) == 0o700

    again = run_playbook(play(tor, tmp_path, services, onion_service_private_keys={"blog": blob}), tmp_path)
    assert again.rc == 0 and again.stats["localhost"]["changed"] == 0, again.output

    # the host loses web's directory: the escrowed key comes back, with the same address
    shutil.rmtree(str(tmp_path / "svc" / "web"))
    restored = run_playbook(play(tor, tmp_path, services, onion_service_private_keys={"blog": blob}), tmp_path)
    assert restored.rc == 0, restored.output
    assert onion.service_dir_address(str(tmp_path / "svc" / "web")) == addresses["web"]

    # web dropped from the list: removed from tor, keys kept on the host and in escrow
    pruned = run_playbook(play(tor, tmp_path, services[1:], onion_service_private_keys={"blog": blob}), tmp_path)
    assert pruned.rc == 0, pruned.output
    assert tor_paths(tor) == [str(tmp_path / "svc" / "blog")]
    assert (tmp_path / "svc" / "web" / "hs_ed25519_secret_key").exists()
    assert (tmp_path / "escrow" / "localhost" / "web" / "hs_ed25519_secret_key").exists()
    assert [e["service"] for e in yaml.safe_load((tmp_path / "summary.yml").read_text())] == ["blog"]


def test_a_host_key_that_is_not_the_escrowed_one_never_drops_the_escrowed_key(tor, tmp_path):
    """Issue 26 A7: restore off on a rebuilt host (the host makes a new key), then a vault key that is neither:
    each time the escrow keeps the key it held, under replaced/<its address>/, and the run warns naming both
    addresses. The escrow used to be overwritten: the only copy of the old identity was gone."""
    (tmp_path / "svc").mkdir(mode=0o700)
    services = [{"name": "web", "ports": [{"port": 80, "target_port": 8080}]}]
    first = run_playbook(play(tor, tmp_path, services), tmp_path)
    assert first.rc == 0, first.output
    escrowed = tmp_path / "escrow" / "localhost" / "web"
    old_key = (escrowed / "hs_ed25519_secret_key").read_bytes()
    old_address = (escrowed / "hostname").read_text().strip()

    shutil.rmtree(str(tmp_path / "svc" / "web"))          # a rebuilt host (tor runs no service), told not to restore
    with connect(port=tor.control_port) as ctl:
        ctl.set_conf(hs.block_to_conf([]))
    rebuilt = run_playbook(play(tor, tmp_path, services, onion_service_restore=False), tmp_path)
    assert rebuilt.rc == 0, rebuilt.output
    new_address = onion.service_dir_address(str(tmp_path / "svc" / "web"))
    assert new_address != old_address
    kept = escrowed / "replaced" / old_address
    assert (kept / "hs_ed25519_secret_key").read_bytes() == old_key
    assert (kept / "hostname").read_text().strip() == old_address
    assert stat.S_IMODE((kept / "hs_ed25519_secret_key").stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.stat().st_mode) == 0o700
    assert (escrowed / "hs_ed25519_secret_key").read_bytes() == \
        (tmp_path / "svc" / "web" / "hs_ed25519_secret_key").read_bytes()
    assert (escrowed / "hostname").read_text().strip() == new_address
    warning = " ".join(rebuilt.output.split())
    assert "now serves %s, not the escrowed key of %s; the escrowed key is kept in %s" % (
        new_address, old_address, kept) in warning, rebuilt.output
    print("warning: %s" % warning[warning.index("now serves"):][:300])

    again = run_playbook(play(tor, tmp_path, services, onion_service_restore=False), tmp_path)
    assert again.rc == 0 and again.stats["localhost"]["changed"] == 0, again.output
    assert "not the escrowed key" not in again.output
    assert sorted(os.listdir(str(escrowed / "replaced"))) == [old_address]


def test_check_mode_changes_nothing(tor, tmp_path):
    (tmp_path / "svc").mkdir(mode=0o700)
    run = run_playbook(play(tor, tmp_path, [{"name": "web", "ports": [{"port": 80}]}]), tmp_path, check=True, diff=True)
    assert run.rc == 0, run.output
    assert run.stats["localhost"]["changed"] >= 1
    assert tor_paths(tor) == []
    assert not (tmp_path / "svc" / "web").exists()
    assert not (tmp_path / "escrow").exists()


def test_absent_with_purge(tor, tmp_path):
    (tmp_path / "svc").mkdir(mode=0o700)
    web = {"name": "web", "ports": [{"port": 80}]}
    assert run_playbook(play(tor, tmp_path, [web]), tmp_path).rc == 0
    gone = dict(web, state="absent", purge=True)
    run = run_playbook(play(tor, tmp_path, [gone]), tmp_path)
    assert run.rc == 0, run.output
    assert tor_paths(tor) == []
    assert not (tmp_path / "svc" / "web").exists()
    assert (tmp_path / "escrow" / "localhost" / "web" / "hs_ed25519_secret_key").exists()  # escrow stays


def test_service_dir_with_trailing_and_doubled_slashes(tor, tmp_path):
    """onion_service_dir written as '.../svc/' or '...//svc/./': the module gets, and reports, the same
    paths as for '.../svc', so the addresses reach the summary and the fact (the report looks the
    services up by path), the keys are escrowed, and a rerun with the plain spelling changes nothing."""
    (tmp_path / "svc").mkdir(mode=0o700)
    services = [{"name": "web", "ports": [{"port": 80, "target_port": 8080}]},
                {"name": "blog", "ports": [{"port": 80, "target_port": 8081}]}]
    spelled = [str(tmp_path / "svc") + "/", str(tmp_path) + "//svc/./"]
    for n, service_dir in enumerate(spelled):
        book = play(tor, tmp_path, services, onion_service_dir=service_dir,
                    onion_service_summary_file=str(tmp_path / ("summary-%d.yml" % n)))
        book[0]["tasks"] = [{"name": "addresses", "ansible.builtin.debug": {"var": "onion_service_addresses"}}]
        run = run_playbook(book, tmp_path)
        assert run.rc == 0, run.output
        addresses = dict((name, onion.service_dir_address(str(tmp_path / "svc" / name))) for name in ("web", "blog"))
        assert all(a and a.endswith(".onion") for a in addresses.values()), addresses
        assert run.task("addresses")["result"]["onion_service_addresses"] == addresses, run.output
        summary = yaml.safe_load((tmp_path / ("summary-%d.yml" % n)).read_text())
        assert [(e["service"], e["onion_address"]) for e in summary] == [("blog", addresses["blog"]),
                                                                         ("web", addresses["web"])]
        assert sorted(tor_paths(tor)) == sorted(str(tmp_path / "svc" / name) for name in ("web", "blog"))
        for name in ("web", "blog"):
            assert (tmp_path / "escrow" / "localhost" / name / "hs_ed25519_secret_key").read_bytes() == \
                (tmp_path / "svc" / name / "hs_ed25519_secret_key").read_bytes()

    plain = run_playbook(play(tor, tmp_path, services, onion_service_summary_file=str(tmp_path / "summary-1.yml")),
                         tmp_path)
    assert plain.rc == 0 and plain.stats["localhost"]["changed"] == 0, plain.output


def pow_on(block):
    return block.get("HiddenServicePoWDefensesEnabled", "0") == "1"


DOS_PROFILE = {"max_streams": 10, "intro_dos": {"enabled": True, "rate_per_sec": 30, "burst_per_sec": 90}}


def test_dos_profile_inherited_and_overridden_pow_on_by_default(tor, tmp_path):
    """Issue 16: every service inherits onion_service_defaults and the role's PoW default (this tor
    has the pow module); a service's own options win key by key (deep merge): shop keeps PoW from
    the default with its own queue rate, blog turns PoW off and sets its own stream limit."""
    (tmp_path / "svc").mkdir(mode=0o700)
    services = [{"name": "web", "ports": [{"port": 80}]},
                {"name": "blog", "ports": [{"port": 80}], "options": {"pow": {"enabled": False}, "max_streams": 3}},
                {"name": "shop", "ports": [{"port": 80}], "options": {"pow": {"queue_rate": 40},
                                                                      "intro_dos": {"rate_per_sec": 5}}}]
    first = run_playbook(play(tor, tmp_path, services, onion_service_defaults=DOS_PROFILE), tmp_path)
    assert first.rc == 0, first.output
    blocks = tor.service_options()
    assert sorted(blocks) == ["blog", "shop", "web"], blocks
    web, blog, shop = blocks["web"], blocks["blog"], blocks["shop"]
    assert pow_on(web) and web.get("HiddenServiceMaxStreams") == "10", web
    assert (web.get("HiddenServiceEnableIntroDoSDefense"), web.get("HiddenServiceEnableIntroDoSRatePerSec"),
            web.get("HiddenServiceEnableIntroDoSBurstPerSec")) == ("1", "30", "90"), web
    assert not pow_on(blog) and blog.get("HiddenServiceMaxStreams") == "3", blog
    assert blog.get("HiddenServiceEnableIntroDoSDefense") == "1", blog
    assert pow_on(shop) and shop.get("HiddenServicePoWQueueRate") == "40", shop
    assert (shop.get("HiddenServiceMaxStreams"), shop.get("HiddenServiceEnableIntroDoSRatePerSec"),
            shop.get("HiddenServiceEnableIntroDoSBurstPerSec")) == ("10", "5", "90"), shop

    again = run_playbook(play(tor, tmp_path, services, onion_service_defaults=DOS_PROFILE), tmp_path)
    assert again.rc == 0 and again.stats["localhost"]["changed"] == 0, again.output


def test_pow_default_turned_off(tor, tmp_path):
    """onion_service_pow=false: the role adds no PoW (tor's default, off) and asks tor nothing; PoW
    asked for in the profile still reaches tor."""
    (tmp_path / "svc").mkdir(mode=0o700)
    services = [{"name": "web", "ports": [{"port": 80}]}]
    run = run_playbook(play(tor, tmp_path, services, onion_service_pow=False), tmp_path)
    assert run.rc == 0, run.output
    assert not pow_on(tor.service_options()["web"])
    assert not run.results("Whether tor can do proof of work (tor --list-modules), unless told", status="ok")

    # the same service, PoW on from the role default: changed; then off again: changed back
    on = run_playbook(play(tor, tmp_path, services), tmp_path)
    assert on.rc == 0 and on.stats["localhost"]["changed"] >= 1, on.output
    assert pow_on(tor.service_options()["web"])
    off = run_playbook(play(tor, tmp_path, services, onion_service_pow=False), tmp_path)
    assert off.rc == 0, off.output
    assert not pow_on(tor.service_options()["web"])

    explicit = run_playbook(play(tor, tmp_path, services, onion_service_pow=False,
                                 onion_service_defaults={"pow": {"enabled": True, "queue_burst": 300}}), tmp_path)
    assert explicit.rc == 0, explicit.output
    web = tor.service_options()["web"]
    assert pow_on(web) and web.get("HiddenServicePoWQueueBurst") == "300", web


def test_pow_default_left_off_where_tor_cannot(tor, tmp_path):
    """A tor without the pow module (a `tor --list-modules` that says 'pow: no'), a tor too old to
    know --list-modules (exit status 1), no tor program, or onion_service_pow_supported=false: the
    role applies the services without PoW instead of failing."""
    (tmp_path / "svc").mkdir(mode=0o700)
    services = [{"name": "web", "ports": [{"port": 80}]}]
    no_pow = tmp_path / "tor-no-pow"
    no_pow.write_text("#!/bin/sh\nprintf 'relay: yes\\ndirauth: yes\\ndircache: yes\\npow: no\\n'\n")
    old = tmp_path / "tor-old"
    old.write_text("#!/bin/sh\necho '[warn] Command-line option --list-modules not recognized.' >&2\nexit 1\n")
    for script in (no_pow, old):
        script.chmod(0o755)
    cases = [{"onion_service_tor_binary": str(no_pow)}, {"onion_service_tor_binary": str(old)},
             {"onion_service_tor_binary": str(tmp_path / "no-such-tor")},
             {"onion_service_pow_supported": False}]
    for extra in cases:
        run = run_playbook(play(tor, tmp_path, services, **extra), tmp_path)
        assert run.rc == 0, (extra, run.output)
        assert not pow_on(tor.service_options()["web"]), extra
    told = run_playbook(play(tor, tmp_path, services, onion_service_pow_supported=True,
                             onion_service_tor_binary=str(no_pow)), tmp_path)
    assert told.rc == 0, told.output
    assert pow_on(tor.service_options()["web"])


def _summary(tmp_path):
    return dict((e["service"], e) for e in yaml.safe_load((tmp_path / "summary.yml").read_text()))


def test_service_key_rotation_old_and_new_side_by_side_then_old_removed_keys_kept(tor, tmp_path):
    """key: 2 gives the service a new key (a new address, directory shop.k2) while the old one is
    still served until previous_until; once that has passed the old one leaves tor, and its key
    stays on the host and in the escrow. Every run twice: the second changes nothing."""
    (tmp_path / "svc").mkdir(mode=0o700)
    shop = {"name": "shop", "ports": [{"port": 80, "target_port": 8080}]}
    other = {"name": "blog", "ports": [{"port": 443, "target_port": 8443}]}
    svc, escrow = tmp_path / "svc", tmp_path / "escrow" / "localhost"

    def converge(services, label):
        for attempt in ("first", "second"):
            book = play(tor, tmp_path, services)
            book[0]["tasks"] = [{"name": "addresses", "ansible.builtin.debug": {
                "msg": "{{ [onion_service_addresses, onion_service_previous_addresses] }}"}}]
            run = run_playbook(book, tmp_path)
            assert run.rc == 0, (label, attempt, run.output)
            if attempt == "second":
                assert run.stats["localhost"]["changed"] == 0, (label, run.output)
        return run.task("addresses")["result"]["msg"]

    (current, previous) = converge([shop, other], "generation 1")
    old = current["shop"]
    assert previous == {} and old == onion.service_dir_address(str(svc / "shop"))
    summary = _summary(tmp_path)
    assert summary["shop"]["onion_location"] == "http://" + old and "previous_onion_address" not in summary["shop"]
    assert summary["blog"]["onion_location"] == "https://" + current["blog"]     # port 443 only

    # rotation: the new generation beside the old one
    rotating = dict(shop, key=2, previous_until="2999-01-01")
    (current, previous) = converge([rotating, other], "overlap")
    new = current["shop"]
    assert new != old and new == onion.service_dir_address(str(svc / "shop.k2"))
    assert previous == {"shop": old}
    assert sorted(tor_paths(tor)) == sorted(str(svc / n) for n in ("blog", "shop", "shop.k2"))
    summary = _summary(tmp_path)
    assert (summary["shop"]["onion_address"], summary["shop"]["previous_onion_address"],
            summary["shop"]["previous_until"], summary["shop"]["key"]) == (new, old, "2999-01-01", 2)
    assert summary["shop"]["onion_location"] == "http://" + new
    for name in ("shop", "shop.k2"):             # the escrow holds both keys
        assert (escrow / name / "hs_ed25519_secret_key").read_bytes() == \
            (svc / name / "hs_ed25519_secret_key").read_bytes()

    # the overlap is over: the old generation leaves tor; its key stays on the host and in escrow
    (current, previous) = converge([dict(rotating, previous_until="2000-01-01"), other], "after")
    assert current["shop"] == new and previous == {}
    assert sorted(tor_paths(tor)) == sorted(str(svc / n) for n in ("blog", "shop.k2"))
    assert (svc / "shop" / "hs_ed25519_secret_key").exists()
    assert (escrow / "shop" / "hs_ed25519_secret_key").exists()
    assert "previous_onion_address" not in _summary(tmp_path)["shop"]


def test_bad_rotation_input_fails_before_anything_changes(tor, tmp_path):
    (tmp_path / "svc").mkdir(mode=0o700)
    for bad, message in (({"key": 0}, "key must be a whole number"),
                         ({"key": 2, "previous_until": "soon"}, "previous_until must be a UTC date")):
        run = run_playbook(play(tor, tmp_path, [dict({"name": "shop", "ports": [{"port": 80}]}, **bad)]), tmp_path)
        assert run.rc != 0 and message in run.output, run.output
        assert "Traceback" not in run.output
        assert tor_paths(tor) == [] and not (tmp_path / "svc" / "shop").exists()


# ---- issue 14: client keys escrowed and never printed; pruning only what the role made; checks before writing


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_authorized_client_without_public_key_escrowed_never_printed(tor, tmp_path):
    """An authorized_clients entry without public_key: the key pair is made on the controller, in the escrow
    (0600 in 0700 directories), never by the module, and no private key appears in the output of a -vvv run
    (nor in the recorded results); the service gets its public half; a rerun keeps it and changes nothing."""
    (tmp_path / "svc").mkdir(mode=0o700)
    services = [{"name": "admin", "ports": [{"port": 80, "target_port": 8080}],
                 "authorized_clients": [{"name": "alice"}, {"name": "bob", "public_key": onion.generate_client_keypair()[1]}]}]
    run = run_playbook(play(tor, tmp_path, services), tmp_path, extra_args=["-vvv"])
    assert run.rc == 0, run.output
    escrow = tmp_path / "escrow" / "localhost" / "admin" / "clients" / "alice.1.x25519"
    assert escrow.exists(), run.output
    assert _mode(escrow) == 0o600
    for directory in (escrow.parent, escrow.parent.parent, escrow.parent.parent.parent, tmp_path / "escrow"):
        assert _mode(directory) == 0o700, directory
    private = escrow.read_text().strip()
    assert len(private) == 52
    record = "\n".join(p.read_text() for p in (tmp_path / "ansible-run").glob("record-*.json"))
    for text in (run.stdout, run.stderr, record):
        assert private not in text and private.lower() not in text
    assert str(escrow) in run.stdout                                 # the role says where the key is
    from ansible_collections.onionlab.tor.plugins.filter.x25519_public_key import x25519_public_key
    auth = (tmp_path / "svc" / "admin" / "authorized_clients" / "alice.auth").read_text()
    assert x25519_public_key(private) in auth
    again = run_playbook(play(tor, tmp_path, services), tmp_path, extra_args=["-vvv"])
    assert again.rc == 0 and again.stats["localhost"]["changed"] == 0, again.output
    assert escrow.read_text().strip() == private and private not in again.output


def _module_service(tor, tmp_path, name):
    """A service made with the single module (as a guide does), in the role's drop-in."""
    run = run_playbook([{"onionlab.tor.tor_hidden_service": {
        "path": str(tmp_path / "svc" / name), "ports": [{"port": 80}], "control_port": tor.control_port,
        "config_file": str(tmp_path / "onionlab.conf")}}], tmp_path)
    assert run.rc == 0, run.output


def test_prune_removes_only_what_the_role_made(tor, tmp_path):
    """A service made with the module alone into the role's drop-in is never pruned by the role; a service
    the role made and that is dropped from the list is. The record is 0600 beside the drop-in."""
    (tmp_path / "svc").mkdir(mode=0o700)
    _module_service(tor, tmp_path, "manual")
    web = {"name": "web", "ports": [{"port": 80}]}
    blog = {"name": "blog", "ports": [{"port": 80}]}
    run = run_playbook(play(tor, tmp_path, [web, blog]), tmp_path)
    assert run.rc == 0, run.output
    assert sorted(tor_paths(tor)) == sorted(str(tmp_path / "svc" / n) for n in ("blog", "manual", "web"))
    record = tmp_path / ".onionlab.conf.role-owned.json"
    assert _mode(record) == 0o600
    assert yaml.safe_load(record.read_text())["services"] == sorted(str(tmp_path / "svc" / n) for n in ("blog", "web"))
    pruned = run_playbook(play(tor, tmp_path, [web]), tmp_path)
    assert pruned.rc == 0, pruned.output
    assert sorted(tor_paths(tor)) == sorted(str(tmp_path / "svc" / n) for n in ("manual", "web"))
    assert yaml.safe_load(record.read_text())["services"] == [str(tmp_path / "svc" / "web")]
    assert (tmp_path / "svc" / "blog" / "hs_ed25519_secret_key").exists()  # pruned from tor, key kept
    again = run_playbook(play(tor, tmp_path, [web]), tmp_path)
    assert again.rc == 0 and again.stats["localhost"]["changed"] == 0, again.output


def test_misspelt_variable_and_empty_list_fail_naming_the_fix(tor, tmp_path):
    """onion_service (or onion_servics) for onion_services fails naming it and the right name; an empty
    onion_services where the role's services run fails naming them unless onion_service_remove_all; tor
    keeps its services meanwhile."""
    (tmp_path / "svc").mkdir(mode=0o700)
    web = {"name": "web", "ports": [{"port": 80}]}
    assert run_playbook(play(tor, tmp_path, [web]), tmp_path).rc == 0
    web_path = str(tmp_path / "svc" / "web")
    for typo in ("onion_service", "onion_servics"):
        run = run_playbook(play(tor, tmp_path, [], **{typo: [web]}), tmp_path)
        assert run.rc != 0, run.output
        assert "unknown variable(s) %s (did you mean onion_services?)" % typo in run.output, run.output
        assert run.stats["localhost"]["changed"] == 0
        assert tor_paths(tor) == [web_path]
    empty = run_playbook(play(tor, tmp_path, []), tmp_path)
    assert empty.rc != 0, empty.output
    assert "onion_services is empty on localhost" in empty.output and web_path in empty.output, empty.output
    assert "onion_service_remove_all: true" in empty.output
    assert tor_paths(tor) == [web_path]
    meant = run_playbook(play(tor, tmp_path, [], onion_service_remove_all=True), tmp_path)
    assert meant.rc == 0, meant.output
    assert tor_paths(tor) == []
    assert (tmp_path / "svc" / "web" / "hs_ed25519_secret_key").exists()


def test_internal_variable_list_names_every_variable_the_role_sets():
    """tasks/checks.yml fails on onion_servi* names that are neither options nor in vars/main.yml's list
    of the role's own names: every fact, register, loop and task variable of the tasks must be listed."""
    import re
    role = __import__("pathlib").Path(__file__).resolve().parents[3] / "roles" / "onion_service"
    listed = set(yaml.safe_load((role / "vars" / "main.yml").read_text())["onion_service_internal_variables"])
    listed |= set(yaml.safe_load((role / "vars" / "main.yml").read_text()))
    options = set(yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())
                  ["argument_specs"]["main"]["options"])
    found = set()
    for path in (role / "tasks").glob("*.yml"):
        text = path.read_text()
        found |= set(re.findall(r"^\s+(onion_servi\w*):", text, re.M))
        found |= set(re.findall(r"(?:register|loop_var|index_var):\s*(onion_servi\w*)", text))
    missing = sorted(found - listed - options)
    assert not missing, missing


def test_bad_entry_fails_before_anything_is_written(tor, tmp_path):
    """Issue 14 point 5: a present service without ports fails the spec at the role's start (a vault key of
    another service is not installed); an entry tor's limits refuse fails the module's check-mode pass
    before restore.yml writes the escrowed key of a service whose directory the host lost; the message is
    the module's (readable although the task is no_log), with no key in it."""
    (tmp_path / "svc").mkdir(mode=0o700)
    blob = onion.key_blob(new_expanded_key())
    vaulted = {"name": "vaulted2", "ports": [{"port": 80}]}
    run = run_playbook(play(tor, tmp_path, [vaulted, {"name": "noports"}],
                            onion_service_private_keys={"vaulted2": blob}), tmp_path)
    assert run.rc != 0, run.output
    assert "state is present but all of the following are missing: ports" in run.output, run.output
    assert blob.split(":")[1] not in run.output
    assert tor_paths(tor) == [] and not (tmp_path / "svc" / "vaulted2").exists()
    # an absent entry needs no ports
    assert run_playbook(play(tor, tmp_path, [{"name": "old", "state": "absent"}]), tmp_path).rc == 0

    web = {"name": "web", "ports": [{"port": 80}]}
    assert run_playbook(play(tor, tmp_path, [web]), tmp_path).rc == 0
    shutil.rmtree(str(tmp_path / "svc" / "web"))
    bad = {"name": "blog", "ports": [{"port": 80}], "options": {"num_intro_points": 99}}
    run = run_playbook(play(tor, tmp_path, [web, bad], onion_service_private_keys={"blog": blob}), tmp_path)
    assert run.rc != 0, run.output
    assert "were refused before anything was written on the host" in run.output, run.output
    assert "num_intro_points" in run.output, run.output
    assert blob.split(":")[1] not in run.output and "Traceback" not in run.output
    assert not (tmp_path / "svc" / "web").exists()          # the escrowed key was not restored
    assert not (tmp_path / "svc" / "blog").exists()
    assert tor_paths(tor) == [str(tmp_path / "svc" / "web")]
