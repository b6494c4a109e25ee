# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 42: the patterns that check a value end in \\Z, not $ ($ also matches before one newline at the end, which
then reached a config file). Each pattern fixed, with a value that passed it before and a trailing newline now."""

import pytest

from ansible_collections.onionlab.tor.plugins.filter import onion_haproxy_plan as haproxy
from ansible_collections.onionlab.tor.plugins.filter import onion_location_snippets as location
from ansible_collections.onionlab.tor.plugins.filter import onionprobe_endpoints as probe
from ansible_collections.onionlab.tor.plugins.filter import tor_metrics_lines as metrics
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion, torrc
from ansible_collections.onionlab.tor.plugins.plugin_utils import onion_services

ADDRESS = onion.onion_address(b"\x01" * 32) + ".onion"
PATTERNS = [
    (onion_services.NAME_RE, "web"), (onion_services.GENERATION_SUFFIX_RE, "web.k2"),
    (onion_services.UNTIL_RE, "2027-01-31T12:00:00Z"),
    (haproxy._NAME, "web"), (haproxy._PATH, "/run/haproxy/web.sock"), (haproxy._GROUP, "debian-tor"),
    (haproxy._HOSTNAME, "app.example"), (haproxy._MODE, "0660"),
    (location.NAME_RE, "web"), (location.HOST_RE, "h1"), (location.SNIPPET_RE, "onion-location-web.conf"),
    (metrics._PORT, "10.0.0.5:9035"),
    (torrc._OPTION_NAME_RE, "ContactInfo"),
]


@pytest.mark.parametrize("pattern, good", PATTERNS, ids=[p[0].pattern for p in PATTERNS])
def test_a_trailing_newline_is_refused(pattern, good):
    assert pattern.search(good)
    assert not pattern.search(good + "\n") and not pattern.search(good + "\r\n")


def test_an_address_is_checked_in_one_place_with_its_checksum():
    """Issue 41: the filters that read an address (onionprobe_endpoints, onion_location_snippets) use
    onion.is_address, which checks the checksum and the version, and refuses a trailing newline."""
    assert onion.is_address(ADDRESS) and probe._address(ADDRESS[:-6]) == ADDRESS
    for bad in (ADDRESS + "\n", ADDRESS[:-6], "a" * 56 + ".onion", ADDRESS.upper(), None):
        assert not onion.is_address(bad)
    assert probe._address("a" * 56) is None
    assert location._header("web", {"onion_address": ADDRESS, "onion_location": "http://x"}) == "http://" + ADDRESS
    with pytest.raises(Exception, match="is not a v3 onion address"):
        location._header("web", {"onion_address": "a" * 56 + ".onion", "onion_location": "http://x"})


def test_an_onion_service_name_with_a_trailing_newline_is_refused():
    with pytest.raises(onion_services.OnionServicesError, match="name must be 1-128 letters"):
        onion_services.generations([{"name": "web\n", "ports": [80]}])


def test_a_tor_options_name_with_a_trailing_newline_is_refused():
    assert 'tor_options name "Nickname\\n" is not an option name' in torrc.line_problem({"Nickname\n": "x"}, [])


@pytest.mark.parametrize("entry", ["fe80::%eth0/64", "fe80::%x\nControlPort 9052\nContactInfo x/64", "fe80::1%a#b"])
def test_a_metrics_policy_entry_with_an_ipv6_zone_is_refused(entry):
    """Python's ipaddress takes a zone with any text (a newline, a #) and wrote it back into the policy line."""
    with pytest.raises(Exception, match="without an IPv6 zone"):
        metrics.tor_metrics_lines(9035, ["127.0.0.1", entry])
