# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Service dicts <-> tor's HiddenService block, the drop-in, torrc scanning."""

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
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
    ({"port": 80, "target_address": "unix:/a", "target_port": 1}, "makes no sense"),
    ("80", "must be a dict"),
])
def test_bad_ports(entry, message):
    with pytest.raises(hs.ServiceConfigError, match=message):
        hs.normalize_port(entry)


def test_control_characters_refused_everywhere():
    for params in ({"path": "/x\n", "ports": [80]}, {"path": "/x", "ports": [{"port": 1, "target_address": "1.2.3.4\r"}]},
                   {"path": "/x", "ports": [80], "extra_options": {"HiddenServiceFoo": "a\x00b"}}):
        with pytest.raises((UnsafeValue, hs.ServiceConfigError)):
            hs.normalize_service(params)


def test_service_round_trip_through_conf():
    service = hs.normalize_service({"path": "/var/lib/tor/web/", "ports": [{"port": 80}, 443], "max_streams": 4,
                                    "allow_unknown_ports": True, "num_intro_points": 3,
                                    "extra_options": {"HiddenServicePoWDefensesEnabled": True,
                                                      "HiddenServiceExportCircuitID": "haproxy"}})
    assert service["path"] == "/var/lib/tor/web"
    conf = hs.service_to_conf(service)
    assert conf == [("HiddenServiceDir", "/var/lib/tor/web"), ("HiddenServicePort", "80 127.0.0.1:80"),
                    ("HiddenServicePort", "443 127.0.0.1:443"), ("HiddenServiceMaxStreams", "4"),
                    ("HiddenServiceAllowUnknownPorts", "1"), ("HiddenServiceExportCircuitID", "haproxy"),
                    ("HiddenServicePoWDefensesEnabled", "1")]
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
    hs.atomic_write(str(path), text)
    assert hs.read_drop_in(str(path)) == services
    assert hs.read_drop_in(str(tmp_path / "missing")) is None
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
    assert hs.includes(str(torrc), str(drop))
    assert hs.torrc_service_dirs(str(torrc), str(drop)) == {"/from/torrc": str(torrc),
                                                             "/from/other": str(drop_dir / "other.conf")}
    assert ("ContactInfo", "a    b") in hs.parse_torrc_lines(torrc.read_text()) or \
        any(k == "ContactInfo" for k, _ in hs.parse_torrc_lines(torrc.read_text()))
    torrc.write_text("SocksPort 0\n")
    assert not hs.includes(str(torrc), str(drop))
    torrc.write_text("%%include %s/*.conf\n" % drop_dir)
    assert hs.includes(str(torrc), str(drop))
