# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service dicts <-> tor's HiddenService block, the drop-in, torrc scanning."""

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor import files
from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc_tree as _torrc_tree
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import ProtocolError, UnsafeValue


@pytest.mark.parametrize("tor_value, canonical", [
    ("80", {"port": 80, "target_address": "127.0.0.1", "target_port": 80}),
    ("80 8080", {"port": 80, "target_address": "127.0.0.1", "target_port": 8080}),
    ("80 10.1.2.3", {"port": 80, "target_address": "10.1.2.3", "target_port": 80}),
    ("80 10.1.2.3:81", {"port": 80, "target_address": "10.1.2.3", "target_port": 81}),
    ("443 [::1]:8443", {"port": 443, "target_address": "::1", "target_port": 8443}),
    ("443 [::1]", {"port": 443, "target_address": "::1", "target_port": 443}),
    ("22 unix:/run/ssh.sock", {"port": 22, "target_address": "unix:/run/ssh.sock", "target_port": None}),
    ('22 unix:"/run/a b.sock"', {"port": 22, "target_address": "unix:/run/a b.sock", "target_port": None}),
])
def test_port_from_tor(tor_value, canonical):
    assert hs.port_from_tor(tor_value) == canonical


@pytest.mark.parametrize("value", ["", "x", "80 a:b:c", "1 2 3"])
def test_port_from_tor_malformed(value):
    with pytest.raises(ProtocolError):
        hs.port_from_tor(value)


@pytest.mark.parametrize("entry, tor_value", [
    ({"port": 80}, "80 127.0.0.1:80"),
    ({"port": 80, "target_port": 8080}, "80 127.0.0.1:8080"),
    ({"port": 443, "target_address": "::1"}, "443 [::1]:443"),
    ({"port": 443, "target_address": "[::1]", "target_port": 1}, "443 [::1]:1"),
    ({"port": 22, "target_address": "unix:/run/ssh.sock"}, "22 unix:/run/ssh.sock"),
])
def test_port_round_trip(entry, tor_value):
    canonical = hs.normalize_port(entry)
    assert hs.port_to_tor(canonical) == tor_value
    assert hs.port_from_tor(tor_value) == canonical


@pytest.mark.parametrize("entry, message", [
    ({"port": 0}, "between 1 and 65535"),
    ({"port": True}, "between 1 and 65535"),
    ({"port": "80x"}, "between 1 and 65535"),
    ({"port": 80, "target_port": 65536}, "between 1 and 65535"),
    ({"port": 80, "target_address": "localhost"}, "neither an IP address"),
    ({"port": 80, "target_address": "unix:/a b"}, "without spaces"),
    # issue 42: tor reads the drop-in's "HiddenServicePort 80 unix:/run/a#b.sock" as unix:/run/a
    ({"port": 80, "target_address": "unix:/run/a#b.sock"}, "control characters or # \\(tor reads the rest of the drop-in"),
    ("80:unix:/run/web.sock#", "or #"),
    ({"port": 80, "target_address": "unix:/a", "target_port": 1}, "makes no sense"),
    ("80:localhost:80", "neither an IP address"),
    ("70000:80", "between 1 and 65535"),
])
def test_bad_ports(entry, message):
    with pytest.raises(hs.ServiceConfigError, match=message):
        hs.normalize_port(entry)


@pytest.mark.parametrize("entry, tor_value", [
    (80, "80 127.0.0.1:80"),
    ("80", "80 127.0.0.1:80"),
    ("80:8080", "80 127.0.0.1:8080"),
    (" 80:8080 ", "80 127.0.0.1:8080"),
    ("80:127.0.0.2:8080", "80 127.0.0.2:8080"),
    ("443:[::1]:8443", "443 [::1]:8443"),
    ("443:::1:8443", "443 [::1]:8443"),
    ("80:unix:/run/web.sock", "80 unix:/run/web.sock"),
    ({"port": "80", "target_port": "8080"}, "80 127.0.0.1:8080"),   # raw elements: Ansible converts nothing
])
def test_port_short_forms(entry, tor_value):
    assert hs.port_to_tor(hs.normalize_port(entry)) == tor_value


@pytest.mark.parametrize("entry, why", [
    ("80:", ""), ("x", ""), (":8080", ""), ("80:1.2.3.4", ""), ("80:8080:", ""), (True, ""), (None, ""), ([80], ""),
    (1.5, ""), ({"port": 80, "target": "1.2.3.4"}, " (unknown key target)"), ({"target_port": 80}, " (no port)"),
    ({"port": 80, "target_address": 1}, " (target_address must be a string)"),
])
def test_port_shape_refused_naming_the_shapes(entry, why):
    with pytest.raises(hs.ServiceConfigError) as err:
        hs.normalize_port(entry)
    assert str(err.value) == (
        'ports entry %r%s: expected a port (80, to 127.0.0.1:80), "PORT:TARGET_PORT" ("80:8080"), '
        '"PORT:ADDRESS:TARGET_PORT" ("80:127.0.0.1:8080", "443:[::1]:8443"), "PORT:unix:/path" '
        '("80:unix:/run/web.sock"), or a dict with port and optionally target_address, target_port' % (entry, why))


def test_control_characters_refused_everywhere():
    for params in ({"path": "/x\n", "ports": [80]}, {"path": "/x", "ports": [{"port": 1, "target_address": "1.2.3.4\r"}]},
                   {"path": "/x", "ports": [80], "extra_options": {"HiddenServiceFoo": "a\x00b"}}):
        with pytest.raises((UnsafeValue, hs.ServiceConfigError)):
            hs.normalize_service(params)


def test_service_round_trip_through_conf():
    service = hs.normalize_service({"path": "/var/lib/tor/web/", "ports": [{"port": 80}, 443], "max_streams": 4,
                                    "allow_unknown_ports": True, "num_intro_points": 3,
                                    "export_circuit_id": "haproxy", "pow": {"enabled": True},
                                    "extra_options": {"HiddenServiceSomeFutureOption": True}})
    assert service["path"] == "/var/lib/tor/web"
    conf = hs.service_to_conf(service)
    assert conf == [("HiddenServiceDir", "/var/lib/tor/web"), ("HiddenServicePort", "80 127.0.0.1:80"),
                    ("HiddenServicePort", "443 127.0.0.1:443"), ("HiddenServiceMaxStreams", "4"),
                    ("HiddenServiceAllowUnknownPorts", "1"), ("HiddenServiceExportCircuitID", "haproxy"),
                    ("HiddenServicePoWDefensesEnabled", "1"), ("HiddenServiceSomeFutureOption", "1")]
    assert hs.services_from_conf(conf) == [service]
    assert hs.block_to_conf([]) == [("HiddenServiceDir", None)]


@pytest.mark.parametrize("params, message", [
    ({"path": "rel"}, "absolute"),
    ({"path": None}, "required"),
    ({"path": '/a"b'}, "quotes"),
    ({"path": "/a", "version": 2}, "version 3"),
    ({"path": "/a", "max_streams": 70000}, "max_streams"),
    ({"path": "/a", "num_intro_points": 2}, "between 3 and 20"),
    ({"path": "/a", "extra_options": {"HiddenServicePort": "1"}}, "another HiddenService"),
    ({"path": "/a", "extra_options": {"Nickname": "x"}}, "another HiddenService"),
])
def test_bad_services(params, message):
    with pytest.raises(hs.ServiceConfigError, match=message):
        hs.normalize_service(params)


def test_services_from_conf_needs_dir_first():
    with pytest.raises(ProtocolError, match="before any HiddenServiceDir"):
        hs.services_from_conf([("HiddenServicePort", "80")])
    assert hs.services_from_conf([("HiddenServiceOptions", None)]) == []


def test_drop_in_render_and_read(tmp_path):
    services = [hs.normalize_service({"path": "/srv/a b", "ports": [80]}),
                hs.normalize_service({"path": "/srv/c", "ports": [{"port": 22, "target_address": "unix:/run/s"}],
                                      "dir_group_readable": True})]
    text = hs.render_drop_in(services)
    assert text.startswith("# Managed by onionlab.tor")
    path = tmp_path / "drop.conf"
    files.atomic_write(str(path), text)
    assert _torrc_tree.read_drop_in(str(path)) == services
    assert _torrc_tree.read_drop_in(str(tmp_path / "missing")) is None
    assert [p.name for p in tmp_path.iterdir()] == ["drop.conf"]  # no temp file left behind


def test_torrc_parsing_includes_and_service_dirs(tmp_path):
    drop_dir = tmp_path / "torrc.d"
    drop_dir.mkdir()
    drop = drop_dir / "onionlab.conf"
    drop.write_text("HiddenServiceDir /managed\nHiddenServicePort 80\n")
    (drop_dir / "other.conf").write_text("HiddenServiceDir /from/other # a comment\n")
    torrc = tmp_path / "torrc"
    torrc.write_text("# comment\nSocksPort 0\nHiddenServiceDir \"/from/torrc\"\nContactInfo a \\\n  b\n"
                     "%%include %s\n" % drop_dir)
    assert _torrc_tree.includes(str(torrc), str(drop))
    assert _torrc_tree.torrc_service_dirs(str(torrc), str(drop)) == {"/from/torrc": str(torrc),
                                                             "/from/other": str(drop_dir / "other.conf")}
    assert ("ContactInfo", "a    b") in hs.parse_torrc_lines(torrc.read_text()) or \
        any(k == "ContactInfo" for k, _ in hs.parse_torrc_lines(torrc.read_text()))
    torrc.write_text("SocksPort 0\n")
    assert not _torrc_tree.includes(str(torrc), str(drop))
    torrc.write_text("%%include %s/*.conf\n" % drop_dir)
    assert _torrc_tree.includes(str(torrc), str(drop))


# -- DoS defences: pow, intro_dos, export_circuit_id (issue 16) ------------------------------------
def test_dos_defaults_are_tors_and_compare_equal_to_absent():
    absent = hs.normalize_service({"path": "/a"})
    assert absent["pow"] == {"enabled": False, "queue_rate": 250, "queue_burst": 2500}
    assert absent["intro_dos"] == {"enabled": False, "rate_per_sec": 25, "burst_per_sec": 200}
    assert absent["export_circuit_id"] == "none"
    spelled = hs.normalize_service({"path": "/a", "export_circuit_id": "none",
                                    "pow": {"enabled": False, "queue_rate": 250, "queue_burst": None},
                                    "intro_dos": {"enabled": None, "rate_per_sec": 25, "burst_per_sec": 200}})
    assert hs.config_view(spelled) == hs.config_view(absent)
    assert hs.service_to_conf(spelled) == [("HiddenServiceDir", "/a")]


def test_dos_round_trip_through_conf_and_drop_in():
    service = hs.normalize_service({"path": "/a", "ports": [80], "pow": {"enabled": True, "queue_rate": 10},
                                    "intro_dos": {"enabled": True, "rate_per_sec": 5, "burst_per_sec": 50},
                                    "export_circuit_id": "haproxy"})
    conf = hs.service_to_conf(service)
    assert conf[2:] == [("HiddenServiceExportCircuitID", "haproxy"), ("HiddenServiceEnableIntroDoSDefense", "1"),
                        ("HiddenServiceEnableIntroDoSRatePerSec", "5"), ("HiddenServiceEnableIntroDoSBurstPerSec", "50"),
                        ("HiddenServicePoWDefensesEnabled", "1"), ("HiddenServicePoWQueueRate", "10")]
    assert hs.services_from_conf(conf) == [service]
    assert hs.parse_drop_in(hs.render_drop_in([service])) == [service]
    # tor echoes an explicit default ("HiddenServicePoWQueueRate 250"): the same service
    echoed = hs.services_from_conf([("HiddenServiceDir", "/a"), ("HiddenServicePoWQueueRate", "250"),
                                    ("HiddenServiceExportCircuitID", "none")])
    assert echoed == [hs.normalize_service({"path": "/a"})]
    # the view returns copies of the groups
    view = hs.config_view(service)
    view["pow"]["enabled"] = False
    assert service["pow"]["enabled"] is True


@pytest.mark.parametrize("params, message", [
    ({"pow": {"queue_rate": -1}}, r"pow.queue_rate must be between 0 and 2147483647 \(tor's limits\), got -1"),
    ({"pow": {"queue_burst": 2147483648}}, "pow.queue_burst must be between 0 and 2147483647"),
    ({"pow": {"queue_rate": "fast"}}, "pow.queue_rate must be an integer, got 'fast'"),
    ({"pow": {"queue_rate": 1.5}}, "pow.queue_rate must be an integer"),
    ({"pow": {"enabled": "maybe"}}, "pow.enabled must be a boolean, got 'maybe'"),
    ({"pow": {"effort": 1}}, "pow has no option effort"),
    ({"pow": True}, "pow must be a dict with the keys enabled, queue_rate, queue_burst"),
    ({"intro_dos": {"rate_per_sec": -1}}, "intro_dos.rate_per_sec must be between 0 and 2147483647"),
    ({"intro_dos": {"burst_per_sec": 2 ** 31}}, "intro_dos.burst_per_sec must be between 0 and 2147483647"),
    ({"intro_dos": {"rate_per_sec": 300}}, r"intro_dos.rate_per_sec \(300\) must not be above intro_dos.burst_per_sec \(200\)"),
    ({"intro_dos": {"enabled": 2}}, "intro_dos.enabled must be a boolean"),
    ({"export_circuit_id": "proxy"}, "export_circuit_id must be one of none, haproxy, got 'proxy'"),
    ({"export_circuit_id": 1}, "export_circuit_id must be one of none, haproxy"),
    ({"extra_options": {"HiddenServicePoWDefensesEnabled": 1}}, "it has its own option, pow.enabled"),
    ({"extra_options": {"hiddenservicepowqueueburst": 1}}, "it has its own option, pow.queue_burst"),
    ({"extra_options": {"HiddenServiceEnableIntroDoSRatePerSec": 1}}, "its own option, intro_dos.rate_per_sec"),
    ({"extra_options": {"HiddenServiceExportCircuitID": "haproxy"}}, "its own option, export_circuit_id"),
    ({"extra_options": {"HiddenServiceSingleHopMode": 1}}, "HiddenServiceSingleHopMode is a tor-wide option"),
    ({"extra_options": {"HiddenServiceNonAnonymousMode": 1}}, "HiddenServiceNonAnonymousMode is a tor-wide option"),
    ({"extra_options": {"HiddenServiceStatistics": 0}}, "tor-wide"),
])
def test_bad_dos_options_one_message(params, message):
    with pytest.raises(hs.ServiceConfigError, match=message):
        hs.normalize_service(dict({"path": "/a"}, **params))


def test_dos_limits_are_inclusive():
    top = hs.INT32_MAX
    service = hs.normalize_service({"path": "/a", "pow": {"queue_rate": 0, "queue_burst": top},
                                    "intro_dos": {"rate_per_sec": top, "burst_per_sec": top}})
    assert service["pow"] == {"enabled": False, "queue_rate": 0, "queue_burst": top}
    assert hs.normalize_service({"path": "/a", "intro_dos": {"rate_per_sec": 0, "burst_per_sec": 0}})


@pytest.mark.parametrize("value", ["1 # comment", "a#b", "x\\"])
def test_extra_option_values_stay_one_drop_in_value(value):
    """Issue 42: an extra_options value is written raw into the drop-in; a # there begins tor's comment and a
    backslash at its end continues it on the next line, when tor reads the file again."""
    with pytest.raises(hs.ServiceConfigError, match="extra_options HiddenServiceFoo: the value .* must not hold a #"):
        hs.normalize_service({"path": "/srv/a", "ports": [80], "extra_options": {"HiddenServiceFoo": value}})
