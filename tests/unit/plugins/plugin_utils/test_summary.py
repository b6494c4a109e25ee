# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_service role's summary file (plugin_utils/summary.py): hosts merging at once (strategy free, many
forks) lose none of each other's entries; a failed host's entries kept, marked not refreshed; entries not
refreshed by this run marked so; a host's dropped service leaves the file."""

import multiprocessing

import yaml

from ansible_collections.onionlab.tor.plugins.plugin_utils import summary

A = "a" * 56 + ".onion"
B = "b" * 56 + ".onion"


def present(*names):
    return [{"service": n, "name": n, "key": 1, "generation": "current", "ports": [{"port": 80}]} for n in names]


def _merge(path, host):
    summary.merge(path, host, "run-1", summary.entries(host, present("web"), {"web": A}, {}))


def test_hosts_merging_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "onion-services.yml")
    procs = [multiprocessing.get_context("fork").Process(target=_merge, args=(path, "host%02d" % i))
             for i in range(12)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    data = yaml.safe_load(open(path))
    assert sorted(e["host"] for e in data) == ["host%02d" % i for i in range(12)]
    assert all(e["refreshed"] is True and e["onion_location"] == "http://" + A for e in data)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["onion-services.yml"]   # no temp file left


def test_failed_and_left_out_hosts_keep_their_entries(tmp_path):
    path = str(tmp_path / "s.yml")
    for host in ("h1", "h2", "h3"):
        summary.merge(path, host, "run-1", summary.entries(host, present("web", "blog"), {"web": A, "blog": B}, {}),
                      now="2026-01-01T00:00:00Z")
    summary.merge(path, "h1", "run-2", summary.entries("h1", present("web"), {"web": A}, {}),
                  now="2026-01-02T00:00:00Z")
    summary.merge(path, "h2", "run-2", None, now="2026-01-02T00:00:00Z")    # h2 failed; h3 not in the run
    data = dict(((e["host"], e["service"]), e) for e in yaml.safe_load(open(path)))
    assert sorted(data) == [("h1", "web"), ("h2", "blog"), ("h2", "web"), ("h3", "blog"), ("h3", "web")]
    assert data[("h1", "web")]["refreshed"] is True and data[("h1", "web")]["refreshed_at"] == "2026-01-02T00:00:00Z"
    for key in (("h2", "blog"), ("h2", "web"), ("h3", "blog"), ("h3", "web")):
        assert data[key]["refreshed"] is False and data[key]["refreshed_at"] == "2026-01-01T00:00:00Z"


def test_onionbalance_backend_names_its_frontend_in_onion_location():
    """A clearnet site of a balanced service sends clients to the frontend, never one backend's address."""
    backend = present("web")
    backend[0]["onionbalance_frontend"] = B[:-len(".onion")]
    [entry] = summary.entries("host1", backend, {"web": A}, {})
    assert entry["onion_address"] == A
    assert entry["onionbalance_frontend"] == B
    assert entry["onion_location"] == "http://" + B
    [plain] = summary.entries("host1", present("web"), {"web": A}, {})
    assert plain["onion_location"] == "http://" + A and "onionbalance_frontend" not in plain


def test_clients_listed_by_name_with_the_probe():
    """A service with client authorization: its clients by name, the health check's probe client among them
    (issue 38: "listed in the summary as probe"); no clients key without client authorization."""
    svc = present("private", "public")
    svc[0]["clients"] = ["laptop", "phone", "probe"]
    svc[1]["clients"] = []
    private, public = summary.entries("host1", svc, {"private": A, "public": B}, {})
    assert private["clients"] == ["laptop", "phone", "probe"]
    assert "clients" not in public
    assert sorted(private) == ["clients", "host", "onion_address", "onion_location", "ports", "service"]


def test_the_running_tors_version_is_said_per_entry():
    """Issue 39: which tor serves which address (GETINFO version of the host's tor), across a fleet's upgrade."""
    [entry] = summary.entries("host1", present("web"), {"web": A}, {}, tor_version="0.4.9.11")
    assert entry["tor_version"] == "0.4.9.11"
    [entry] = summary.entries("host1", present("web"), {"web": A}, {})
    assert "tor_version" not in entry
