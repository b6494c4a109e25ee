# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""service_plan.plan() and ephemeral.plan_ephemeral(): from a state written down here (no tor, no
files) to the steps a run would take, and each refusal. Carrying the steps out is tested
through the modules (tests/unit/plugins/modules) and against real tors (tests/integration)."""

import os
import stat

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor import ephemeral
from ansible_collections.onionlab.tor.plugins.module_utils._tor import service_plan as sp
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import ServiceError

TOR_UID = 4242
DROP_IN = "/etc/tor/torrc.d/onionlab.conf"
TORRC = "/etc/tor/torrc"
KEY = bytes(range(64))
OTHER_KEY = bytes(range(1, 65))
CLIENT_PRIVATE, CLIENT_PUBLIC = onion.generate_client_keypair()


def service(name, port=80, **options):
    params = {"path": "/var/lib/tor/" + name, "ports": [{"port": port}]}
    params.update(options)
    return hs.normalize_service(params)


def a_dir(mode=0o700, uid=TOR_UID, kind=stat.S_IFDIR):
    """What os.lstat() says of a service directory."""
    return os.stat_result((kind | mode, 0, 0, 1, uid, uid, 4096, 0, 0, 0))


def state(block=(), managed=None, dirs=None, **fields):
    """A persisted state: tor runs `block`, the drop-in holds `managed` (None: no drop-in yet),
    torrc includes the drop-in, and every service of the block has its directory."""
    block = list(block)
    fields.setdefault("persist", True)
    fields.setdefault("drop_in", DROP_IN)
    fields.setdefault("config_file", TORRC)
    if managed is not None:
        fields.setdefault("drop_in_text", hs.render_drop_in(managed))
    all_dirs = dict((s["path"], a_dir()) for s in block)
    all_dirs.update(dirs or {})
    return sp.PersistentState(block, uid=TOR_UID, user="debian-tor", dirs=all_dirs, **fields)


def paths(services):
    return [s["path"] for s in services]


def refused(message, *args, **kwargs):
    with pytest.raises(ServiceError) as err:
        sp.plan(*args, **kwargs)
    assert message in str(err.value), str(err.value)
    return str(err.value)


# -- the block tor is to run ------------------------------------------------------------------------
def test_add_to_empty_tor():
    web = service("web")
    steps = sp.plan(state(), [web])
    assert steps.before == [] and steps.after == [web]
    assert steps.make_dirs == [web["path"]]
    assert steps.set_conf and steps.changed
    assert steps.drop_in_text == hs.render_drop_in([web]) and steps.drop_in_change
    assert not steps.include_change and steps.purge_dirs == [] and steps.key_writes == {}
    assert steps.warnings == []


def test_add_keeps_the_others_in_their_order():
    a, b, c = service("a"), service("b"), service("c")
    steps = sp.plan(state([a, b], managed=[a, b]), [c])
    assert paths(steps.after) == paths([a, b, c])
    assert steps.make_dirs == [c["path"]]
    assert steps.drop_in_text == hs.render_drop_in([a, b, c])


def test_replacement_keeps_its_place():
    a, b = service("a"), service("b")
    new_a = service("a", port=443, max_streams=5)
    steps = sp.plan(state([a, b], managed=[a, b]), [new_a])
    assert steps.after == [new_a, b]
    assert steps.make_dirs == []            # its directory is there
    assert steps.set_conf and steps.changed
    assert steps.drop_in_text == hs.render_drop_in([new_a, b])


def test_as_asked_is_unchanged():
    a = service("a")
    steps = sp.plan(state([a], managed=[a]), [service("a")])
    assert steps.after == [a]
    assert not steps.set_conf and not steps.drop_in_change and not steps.changed
    assert steps.diff["before"] == steps.diff["after"]
    assert steps.result(["described"]) == {"changed": False, "diff": steps.diff, "generated_clients": [],
                                           "purged": [], "services": ["described"]}


def test_absent_removes_it_from_tor_and_the_drop_in():
    a, b = service("a"), service("b")
    steps = sp.plan(state([a, b], managed=[a, b], is_dir={a["path"]: True}), [], absent=[a["path"]])
    assert steps.after == [b] and steps.changed and steps.set_conf
    assert steps.drop_in_text == hs.render_drop_in([b])
    assert steps.purge_dirs == []           # its directory stays without purge


def test_absent_of_an_unknown_path_changes_nothing():
    a = service("a")
    steps = sp.plan(state([a], managed=[a]), [], absent=["/var/lib/tor/gone"])
    assert steps.after == [a] and not steps.changed


def test_purge_removes_the_directory_only_when_there_is_one():
    a, b = service("a"), service("b")
    st = state([a, b], managed=[a, b], is_dir={a["path"]: True, b["path"]: False})
    assert sp.plan(st, [], absent=[a["path"]], purge=True).purge_dirs == [a["path"]]
    assert sp.plan(st, [], absent=[b["path"]], purge=True).purge_dirs == []
    # a directory that is no service any more is purged alone, and that is a change
    gone = "/var/lib/tor/gone"
    steps = sp.plan(state([], managed=[], is_dir={gone: True}), [], absent=[gone], purge=True)
    assert steps.purge_dirs == [gone] and steps.changed and not steps.set_conf


def test_exclusive_leaves_only_what_is_asked():
    a, b, c = service("a"), service("b"), service("c")
    steps = sp.plan(state([a, b], managed=[a]), [c, a], exclusive=True)
    assert steps.after == [c, a]
    assert steps.drop_in_text == hs.render_drop_in([c, a])


def test_prune_removes_only_the_managed_services():
    mine_kept, mine_gone, foreign = service("kept"), service("gone"), service("foreign")
    st = state([foreign, mine_kept, mine_gone], managed=[mine_kept, mine_gone], is_dir={mine_gone["path"]: True})
    steps = sp.plan(st, [mine_kept], prune=True)
    assert steps.after == [foreign, mine_kept]   # the service the drop-in does not hold stays
    assert steps.drop_in_text == hs.render_drop_in([mine_kept])
    assert steps.purge_dirs == []
    assert sp.plan(st, [mine_kept], prune=True, purge=True).purge_dirs == [mine_gone["path"]]
    # without prune, the other managed service stays
    assert sp.plan(st, [mine_kept]).after == [foreign, mine_kept, mine_gone]


def test_not_persisted():
    a = service("a")
    steps = sp.plan(state([], persist=False), [a])
    assert steps.drop_in_text is None and not steps.drop_in_change and not steps.include_change
    assert steps.after == [a] and steps.changed


# -- the drop-in and torrc ------------------------------------------------------------------------
def test_drop_in_text():
    a = service("a", port=443, max_streams=5, intro_dos={"enabled": True})
    steps = sp.plan(state(), [a])
    assert steps.drop_in_text == (
        hs.DROP_IN_HEADER + '\nHiddenServiceDir "/var/lib/tor/a"\nHiddenServicePort 443 127.0.0.1:443\n'
        "HiddenServiceMaxStreams 5\nHiddenServiceEnableIntroDoSDefense 1\n")


def test_drop_in_rewritten_when_it_differs_only():
    a = service("a")
    assert not sp.plan(state([a], managed=[a]), [a]).drop_in_change
    steps = sp.plan(state([a], drop_in_text="# edited by hand\n"), [a])
    assert steps.drop_in_change and steps.changed and not steps.set_conf


def test_include_line_when_torrc_lacks_it():
    steps = sp.plan(state(included=False), [service("a")])
    assert steps.include_change
    assert not sp.plan(state(config_file=None, included=False), [service("a")]).include_change


def test_include_refused_torrc():
    refused("does not look like a torrc", state(included=False, torrc_refusal="tor's config-file /x does not "
                                                "look like a torrc"), [service("a")])


def test_no_include_warns():
    steps = sp.plan(state(included=False, include=False), [service("a")])
    assert not steps.include_change
    assert steps.warnings == ["%s does not %%include %s: the services will not survive a tor restart"
                              % (TORRC, DROP_IN)]


# -- keys ------------------------------------------------------------------------------------------
def test_key_written_where_there_is_none():
    a = service("a")
    steps = sp.plan(state(keys={a["path"]: None}), [a], keys={a["path"]: KEY})
    assert steps.key_writes == {a["path"]: KEY} and steps.set_conf


def test_same_key_is_fine():
    a = service("a")
    steps = sp.plan(state([a], managed=[a], keys={a["path"]: KEY}), [a], keys={a["path"]: KEY})
    assert steps.key_writes == {} and not steps.changed


def test_different_key_refused():
    a = service("a")
    address = "x" * 56 + ".onion"
    message = refused("already holds a different key", state([a], managed=[a], keys={a["path"]: OTHER_KEY},
                                                             key_addresses={a["path"]: address}),
                      [a], keys={a["path"]: KEY})
    assert address in message and "refusing to overwrite a key" in message


# -- authorized clients ---------------------------------------------------------------------------
def test_client_plans():
    a = service("a")
    other_private, other_public = onion.generate_client_keypair()
    on_disk = [{"name": "kept", "public_key": CLIENT_PUBLIC}, {"name": "changed", "public_key": CLIENT_PUBLIC},
               {"name": "gone", "public_key": CLIENT_PUBLIC}]
    wanted = [{"name": "kept", "public_key": CLIENT_PUBLIC}, {"name": "changed", "public_key": other_public},
              {"name": "new", "public_key": None}]
    steps = sp.plan(state([a], managed=[a], clients={a["path"]: on_disk}), [a], clients={a["path"]: wanted})
    write, delete, generated = steps.client_plans[a["path"]]
    assert delete == ["gone"]
    assert sorted(write) == ["changed", "new"] and write["changed"] == other_public
    [new] = generated
    assert new["name"] == "new" and write["new"] == new["public_key"]
    assert onion.b32(onion.x25519_public(onion.unb32(new["private_key"], 32, "key"))) == new["public_key"]
    assert steps.set_conf and steps.changed   # tor reads the client files at SETCONF
    assert steps.diff["before"]["services"][0]["authorized_clients"] == ["changed", "gone", "kept"]
    assert steps.diff["after"]["services"][0]["authorized_clients"] == ["changed", "kept", "new"]


def test_client_with_a_key_on_disk_keeps_it():
    a = service("a")
    st = state([a], managed=[a], clients={a["path"]: [{"name": "c", "public_key": CLIENT_PUBLIC}]})
    steps = sp.plan(st, [a], clients={a["path"]: [{"name": "c", "public_key": None}]})
    assert steps.client_plans[a["path"]] == ({}, [], []) and not steps.changed


def test_clients_unmanaged_without_the_option():
    a = service("a")
    st = state([a], managed=[a], clients={a["path"]: [{"name": "c", "public_key": CLIENT_PUBLIC}]})
    steps = sp.plan(st, [a])
    assert steps.client_plans == {} and not steps.changed
    assert steps.diff["after"]["services"][0]["authorized_clients"] == ["c"]


def test_client_public_key_checked():
    with pytest.raises(onion.OnionKeyError):
        sp.plan(state(), [service("a")], clients={"/var/lib/tor/a": [{"name": "c", "public_key": "nope"}]})


# -- changed and diff ------------------------------------------------------------------------------
def test_diff():
    a, b = service("a"), service("b", port=443)
    steps = sp.plan(state([a], managed=[a]), [b])
    before, after = steps.diff["before"]["services"], steps.diff["after"]["services"]
    assert before == [dict(hs.config_view(a), authorized_clients=[])]
    assert after == [dict(hs.config_view(a), authorized_clients=[]), dict(hs.config_view(b), authorized_clients=[])]
    assert steps.result(None)["diff"] is steps.diff


# -- refusals --------------------------------------------------------------------------------------
def test_duplicate_path_refused():
    refused("the same path is given for more than one service: /var/lib/tor/a; give each service its own directory",
            state(), [service("b"), service("a"), service("a", port=81)])


def test_present_and_absent_refused():
    refused("/var/lib/tor/a is both present and absent", state(), [service("a")], absent=["/var/lib/tor/a"])


def test_defined_in_torrc_refused():
    message = refused("is defined in %s" % TORRC, state(torrc_dirs={"/var/lib/tor/a": TORRC}), [service("a")])
    assert DROP_IN in message


# -- adoption (issue 40, 2): services torrc declares taken over as tor runs them -------------------------------
def test_adopt_writes_the_drop_in_and_leaves_tor_and_torrc_alone():
    a = service("a", max_streams=5)
    steps = sp.plan(state([a], torrc_dirs={a["path"]: TORRC}, included=False), [dict(a)], adopt=True)
    assert steps.drop_in_text == hs.render_drop_in([a]) and steps.drop_in_change and steps.changed
    assert not steps.set_conf and not steps.include_change and steps.make_dirs == []
    assert steps.warnings == []     # no "will not survive a restart": torrc still declares it
    again = sp.plan(state([a], managed=[a], torrc_dirs={a["path"]: TORRC}, included=False), [dict(a)], adopt=True)
    assert not again.changed


def test_adopt_takes_a_service_only_as_tor_runs_it():
    running = service("a", max_streams=5)
    message = refused("cannot adopt the service /var/lib/tor/a: adoption takes a service as tor runs it, and it "
                      "differs in max_streams, ports", state([running], torrc_dirs={running["path"]: TORRC},
                                                           included=False),
                      [service("a", port=81, max_streams=6)], adopt=True)
    assert "adopt it as it is, then change it" in message


def test_adopt_refused_where_torrc_includes_the_drop_in_or_tor_does_not_run_it():
    a = service("a")
    refused("%s declares it and %%includes %s already, so tor would read it twice" % (TORRC, DROP_IN),
            state([a], torrc_dirs={a["path"]: TORRC}, included=True), [a], adopt=True)
    refused("declares it but tor does not run it", state([], torrc_dirs={a["path"]: TORRC}, included=False), [a],
            adopt=True)


def test_adopted_but_still_in_torrc_says_run_the_tor_role():
    a = service("a")
    refused("is adopted (%s holds it) and %s still declares it: run the onionlab.tor.tor role first" % (DROP_IN, TORRC),
            state([a], managed=[a], torrc_dirs={a["path"]: TORRC}, included=False), [a])


def test_adopt_manages_a_new_service_beside_the_adopted_as_usual():
    a, b = service("a"), service("b")
    steps = sp.plan(state([a], torrc_dirs={a["path"]: TORRC}, included=False), [a, b], adopt=True)
    assert steps.set_conf and paths(steps.after) == paths([a, b]) and steps.drop_in_text == hs.render_drop_in([a, b])
    assert not steps.include_change   # torrc declares a: an %include now would make tor read a twice


@pytest.mark.parametrize("st, message", [
    (a_dir(mode=0o755), "mode 0755, more open than 0700"),
    (a_dir(mode=0o750), "mode 0750, more open than 0700"),
    (a_dir(uid=0), "owned by uid 0, not by tor's user debian-tor (uid %d)" % TOR_UID),
    (a_dir(kind=stat.S_IFLNK, mode=0o777), "is a symbolic link"),
    (a_dir(kind=stat.S_IFREG, mode=0o600), "exists and is not a directory"),
])
def test_unsafe_dir_refused(st, message):
    refused(message, state(dirs={"/var/lib/tor/a": st}), [service("a")])


def test_group_readable_dir_allows_0750():
    a = service("a", dir_group_readable=True)
    steps = sp.plan(state(dirs={a["path"]: a_dir(mode=0o750)}), [a])
    assert steps.make_dirs == []


def test_unknown_uid_checks_the_mode_only():
    a = service("a")
    st = sp.PersistentState([], dirs={a["path"]: a_dir(uid=0)})
    assert sp.plan(st, [a]).after == [a]


@pytest.mark.parametrize("name", ["", ".hidden", "a/b", "x" * 65])
def test_client_name_refused(name):
    refused("authorized client name", state(), [service("a")],
            clients={"/var/lib/tor/a": [{"name": name, "public_key": CLIENT_PUBLIC}]})


# -- ephemeral services ----------------------------------------------------------------------------
KEY_BLOB = onion.key_blob(KEY)
SID = onion.service_id_of_key(KEY_BLOB)
PORTS = [{"port": 80}]
# a record written before pow existed: read as tor's default
VIEW = {"ports": [{"port": 80, "target_address": "127.0.0.1", "target_port": 80}], "max_streams": None,
        "client_auth_v3": []}
DEFAULT_POW = {"enabled": False, "queue_rate": 250, "queue_burst": 2500}


def test_ephemeral_new_with_a_generated_key():
    steps = ephemeral.plan_ephemeral({}, set(), "present", ports=PORTS, discard_pk=True)
    assert steps.action == "add" and not steps.replace and steps.view == dict(VIEW, pow=DEFAULT_POW)
    assert (steps.key_type, steps.key_blob) == ("NEW", "ED25519-V3") and steps.flags == ["Detach", "DiscardPK"]
    assert steps.result["service"] is None and steps.result["diff"]["after"]["service_id"] == "(new)"


def test_ephemeral_with_our_key():
    steps = ephemeral.plan_ephemeral({}, set(), "present", ports=PORTS, private_key=KEY_BLOB)
    assert steps.action == "add" and steps.service_id == SID and steps.own_key
    assert "%s:%s" % (steps.key_type, steps.key_blob) == KEY_BLOB and "DiscardPK" in steps.flags


def test_ephemeral_unchanged_and_replaced():
    same = ephemeral.plan_ephemeral({SID: VIEW}, {SID}, "present", ports=PORTS, private_key=KEY_BLOB)
    assert same.action is None and same.result["changed"] is False
    changed = ephemeral.plan_ephemeral({SID: VIEW}, {SID}, "present", ports=[{"port": 443}], private_key=KEY_BLOB)
    assert changed.action == "add" and changed.replace and changed.old_view == dict(VIEW, pow=DEFAULT_POW)
    assert changed.result["diff"]["before"]["ports"] == VIEW["ports"]


def test_ephemeral_absent():
    gone = ephemeral.plan_ephemeral({SID: VIEW}, {SID}, "absent", service_id=SID)
    assert gone.action == "remove" and gone.result["changed"] is True and gone.result["diff"]["after"] == {}
    already = ephemeral.plan_ephemeral({}, set(), "absent", service_id=SID)
    assert already.action is None and already.result["changed"] is False


@pytest.mark.parametrize("state_, options, message", [
    ("absent", {}, "needs service_id or private_key"),
    ("present", {"ports": []}, "needs at least one port"),
    ("present", {"ports": PORTS, "service_id": SID}, "service_id alone cannot create"),
    ("present", {"ports": PORTS, "service_id": "abc"}, "must be a v3 service id"),
    ("present", {"ports": PORTS, "private_key": KEY_BLOB, "service_id": onion.service_id_of_key(
        onion.key_blob(OTHER_KEY))}, "does not belong to private_key"),
])
def test_ephemeral_refusals(state_, options, message):
    with pytest.raises(ServiceError) as err:
        ephemeral.plan_ephemeral({}, set(), state_, **options)
    assert message in str(err.value)


# -- where tor may write (sandbox.py) ---------------------------------------------------------------
def test_sandbox_refuses_a_new_directory_tor_cannot_write():
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import sandbox as sb
    box = sb.Sandbox(42, sb.parse_mountinfo(
        "1 0 0:1 / / ro,relatime - ext4 /dev/sda1 rw\n2 1 0:1 /var/lib/tor /var/lib/tor rw - ext4 /dev/sda1 rw\n"),
        unit="tor@default.service")
    outside = hs.normalize_service({"path": "/srv/onion/web", "ports": [{"port": 80}]})
    msg = refused("service directory /srv/onion/web is on /, which is read-only for tor (PID 42", state(sandbox=box),
                  [outside])
    assert "tor may write under: /var/lib/tor" in msg and "ReadWritePaths=/srv/onion" in msg
    refused("read-only", state(sandbox=box), [service("a"), outside], exclusive=True)
    assert sp.plan(state(sandbox=box), [service("web")]).changed       # under /var/lib/tor
    # a service tor runs already is its own proof: changing its ports is not refused
    steps = sp.plan(state([outside], sandbox=box), [dict(outside, ports=[hs.normalize_port({"port": 81})])])
    assert steps.set_conf
