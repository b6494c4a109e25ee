# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tor role's torrc decisions (plugins/module_utils/_tor/torrc.py, used by the tor_setup action
and module): the non-anonymous guard, what a new torrc drops, the messages, secrets hidden. The same
decisions against a real tor: tests/integration/test_role_tor_guards.py, test_stock_role_tor.py."""

import json

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc

SINGLE = {"HiddenServiceSingleHopMode": True, "HiddenServiceNonAnonymousMode": 1}


@pytest.mark.parametrize("options, lines, socks, ack, found", [
    (SINGLE, [], "0", False, "Found: hiddenservicesinglehopmode, hiddenservicenonanonymousmode; "
                             "tor_non_anonymous_onion_services=False; tor_socks_port=0."),
    ({"HiddenServiceSingleHopMode": "1"}, [], "0", True, "Found: hiddenservicesinglehopmode;"),
    (SINGLE, [], None, True, "tor_socks_port=unset."),
    ({}, ["  HiddenServiceNonAnonymousMode\t1 "], "0", False, "Found: hiddenservicenonanonymousmode\t1;"),
])
def test_non_anonymous_refused(options, lines, socks, ack, found):
    msg = torrc.non_anonymous_problem(options, lines, socks, ack)
    assert msg.startswith("HiddenServiceSingleHopMode / HiddenServiceNonAnonymousMode make every onion service")
    assert found in msg, msg


@pytest.mark.parametrize("options, lines, socks", [
    ({}, [], None),
    ({"HiddenServiceSingleHopMode": False, "HiddenServiceNonAnonymousMode": 0}, ["Nickname x"], None),
    ({"HiddenServiceSingleHopMode": [1]}, ["HiddenServiceNonAnonymousMode 0"], None),
])
def test_non_anonymous_not_asked_for_passes(options, lines, socks):
    assert torrc.non_anonymous_problem(options, lines, socks, False) is None


def test_non_anonymous_acknowledged_and_complete_passes():
    assert torrc.non_anonymous_problem(SINGLE, [], 0, True) is None


def test_dropped_groups_services_and_hides_secrets():
    current = ["HiddenServiceDir /var/lib/tor/a", "HiddenServicePort 80 127.0.0.1:8080",
               "HiddenServiceDir /var/lib/tor/b", "HiddenServicePort 81 127.0.0.1:8081",
               "Socks5ProxyPassword hunter2", "hashedcontrolpassword 16:ABC", "Nickname x", "SocksPort 0"]
    new = ["HiddenServiceDir /var/lib/tor/b", "HiddenServicePort 81 127.0.0.1:8081", "SocksPort 0"]
    items = torrc.dropped(current, new)
    assert items == ["HiddenServiceDir /var/lib/tor/a\nHiddenServicePort 80 127.0.0.1:8080",
                     "Socks5ProxyPassword (value hidden)", "hashedcontrolpassword (value hidden)", "Nickname x"]
    assert torrc.service_dirs(items) == ["/var/lib/tor/a"]
    words = torrc.dropped_words(items, {"/var/lib/tor/a": "abc.onion"})
    assert words.startswith("onion service /var/lib/tor/a (abc.onion, HiddenServicePort 80 127.0.0.1:8080); ")
    msg = torrc.refusal("/etc/tor/torrc", "/etc/tor/torrc.d", items, words, [], False)
    assert "hunter2" not in msg and "16:ABC" not in msg
    assert "would drop (its onion services would go offline): onion service" in msg
    assert "Nothing was changed. Keep them" in msg and json.dumps(
        ["HiddenServiceDir /var/lib/tor/a", "HiddenServicePort 80 127.0.0.1:8080"]).strip("]") in msg
    assert torrc.replaced_message("/etc/tor/torrc", items, words, True).startswith(
        "/etc/tor/torrc (written by this role) is replaced; dropped from it (its onion services go offline): ")
    assert torrc.replaced_message("/t", ["Nickname x"], "Nickname x", False) == (
        "tor_torrc_takeover=true: /t is replaced; dropped from it: Nickname x")


@pytest.mark.parametrize("unread, missing, said", [
    (["Unknown option 'Foo'."], False, "(tor cannot read that file: Unknown option 'Foo'.; its lines are compared "
                                       "as written.) Nothing"),
    ([], True, "(tor is not installed yet: the files are compared line by line as written.) Nothing"),
    ([], False, "Nickname x. Nothing"),
])
def test_refusal_says_how_it_compared(unread, missing, said):
    assert said in torrc.refusal("/t", "/d", ["Nickname x"], "Nickname x", unread, missing)


def test_lines_as_written_and_dump_lines():
    text = "# c\n\n  Nickname \t x  \nSocksPort 0\n"
    assert torrc.lines_as_written(text) == ["Nickname x", "SocksPort 0"]
    out = "Dec 04 05:00:00.000 [notice] Tor 0.4.8 opening log\nNickname x\n"
    assert torrc.dump_lines(out) == ["Nickname x"]


def test_verify_refusal_is_tors_own_lines():
    err = ("Dec 04 05:00:00.000 [warn] Failed to parse/validate config: Unknown option 'AccountingMx'.  Failing.\n"
           "Dec 04 05:00:00.000 [err] Reading config failed--see warnings above.\n")
    assert torrc.verify_refusal(1, "", err) == (
        "tor --verify-config refuses the torrc made from tor_options and tor_config_lines (nothing was written): "
        "Failed to parse/validate config: Unknown option 'AccountingMx'.  Failing.")
    assert torrc.verify_refusal(3, "", "").endswith("(nothing was written): exit status 3")


def test_hide_secrets_and_marker():
    text = "# Written by the onionlab.tor.tor role\nHTTPSProxyAuthenticator me:pw\nNickname x\n"
    assert torrc.hide_secrets(text) == ("# Written by the onionlab.tor.tor role\n"
                                        "HTTPSProxyAuthenticator (value hidden)\nNickname x\n")
    assert torrc.written_by_role(text) and not torrc.written_by_role("# my own\nNickname x\n")
