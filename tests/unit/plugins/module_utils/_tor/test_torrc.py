# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tor role's torrc decisions (plugins/module_utils/_tor/torrc.py, used by the tor_setup action
and module): the non-anonymous guard, what a new torrc drops, the messages, secrets hidden. The same
decisions against a real tor: tests/integration/roles/test_role_tor_guards.py, test_stock_role_tor.py."""

import json
import os
import subprocess

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc

SINGLE = {"HiddenServiceSingleHopMode": True, "HiddenServiceNonAnonymousMode": 1}
PREFIX = ("Each tor role variable written into the torrc must stay what it says there, one value (a tor_config_lines "
          "item: one line) as tor reads it: ")


@pytest.mark.parametrize("options, lines, socks, ack, found", [
    (SINGLE, [], "0", False, "Found: hiddenservicenonanonymousmode, hiddenservicesinglehopmode; "
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
    ({"HiddenServiceSingleHopMode": [0]}, ["HiddenServiceNonAnonymousMode 0"], None),
] + [({}, [line], None) for line in (
    "HiddenServiceSingleHopMode 0 # 1", "#HiddenServiceSingleHopMode 1", "Nickname HiddenServiceSingleHopMode 1",
    "/HiddenServiceSingleHopMode 1", "HiddenService 1", 'HiddenServiceSingleHopMode "1 "',
    "HiddenServiceSingleHopMode 01", "HiddenServiceSingleHopMode#1")])
def test_non_anonymous_not_asked_for_passes(options, lines, socks):
    assert torrc.non_anonymous_problem(options, lines, socks, False) is None


def test_non_anonymous_acknowledged_and_complete_passes():
    assert torrc.non_anonymous_problem(SINGLE, [], 0, True) is None


def test_a_service_moved_to_a_drop_in_is_not_dropped_whatever_its_slash_or_line_order():
    """Adoption (issue 40): Debian's example writes HiddenServiceDir with a trailing slash, the drop-in without, and
    the service's other lines in the module's order."""
    current = ["HiddenServiceDir /var/lib/tor/hidden_service/", "HiddenServiceMaxStreams 7",
               "HiddenServicePort 80 127.0.0.1:8080"]
    new = ["HiddenServiceDir /var/lib/tor/hidden_service", "HiddenServicePort 80 127.0.0.1:8080",
           "HiddenServiceMaxStreams 7"]
    assert torrc.dropped(current, new) == []
    assert torrc.dropped(current, new[:2]) == ["\n".join(current)]   # a line less is a change
    assert torrc.dropped(["HiddenServiceDir /var/lib/tor/a/"], ["HiddenServiceDir /var/lib/tor/ab"]) != []


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
        "tor_torrc_takeover=true: /t is replaced; dropped from it: Nickname x. To keep them, give them to the role: "
        'tor_config_lines: ["Nickname x"] (or tor_options)')


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


# -- issue 26 A8: every form in which tor reads HiddenServiceSingleHopMode 1 ------------------------------------
# (tor_options, tor_config_lines, the torrc lines the role's torrc.j2 writes from them). tor 0.4.9.11 reads each
# as HiddenServiceSingleHopMode 1 (test_bypass_forms_are_what_tor_reads asks it); the guard missed all but the
# first two before (it compared a config line with '^...mode[ \t]+1$' and an option's value with 1, True, '1').
BYPASSES = [
    ({"HiddenServiceSingleHopMode": 1}, [], "HiddenServiceSingleHopMode 1"),
    ({}, ["HiddenServiceSingleHopMode 1"], "HiddenServiceSingleHopMode 1"),
    ({}, ["HiddenServiceSingleHopMode 1 # yes"], "HiddenServiceSingleHopMode 1 # yes"),
    ({}, ['HiddenServiceSingleHopMode "1"'], 'HiddenServiceSingleHopMode "1"'),
    ({}, ['HiddenServiceSingleHopMode "1"  # quoted'], 'HiddenServiceSingleHopMode "1"  # quoted'),
    ({}, ['HiddenServiceSingleHopMode "\\x31"'], 'HiddenServiceSingleHopMode "\\x31"'),
    ({}, ['HiddenServiceSingleHopMode "\\61"'], 'HiddenServiceSingleHopMode "\\61"'),
    ({}, ['HiddenServiceSingleHopMode "1\\0 and more"'], 'HiddenServiceSingleHopMode "1\\0 and more"'),
    ({}, ["hiddenservicesinglehopmode\t1\t"], "hiddenservicesinglehopmode\t1\t"),
    ({}, ["+HiddenServiceSingleHopMode 1"], "+HiddenServiceSingleHopMode 1"),
    ({}, ["HiddenServiceSingleHop 1"], "HiddenServiceSingleHop 1"),
    ({}, ["HiddenServiceS 1"], "HiddenServiceS 1"),
    ({"HiddenServiceSingleHopMode": "1 "}, [], "HiddenServiceSingleHopMode 1 "),
    ({"HiddenServiceSingleHopMode": '"1"'}, [], 'HiddenServiceSingleHopMode "1"'),
    ({"HiddenServiceSingleHopMode": "1 # yes"}, [], "HiddenServiceSingleHopMode 1 # yes"),
    ({"HiddenServiceSingleHopMode": [0, 1]}, [], "HiddenServiceSingleHopMode 0\nHiddenServiceSingleHopMode 1"),
    ({"HiddenServiceSingleHopMode": {"1": "x"}}, [], "HiddenServiceSingleHopMode 1"),
    ({"HIDDENSERVICESINGLEHOPMODE": True}, [], "HIDDENSERVICESINGLEHOPMODE 1"),
    ({"HiddenServiceSingleHop": True}, [], "HiddenServiceSingleHop 1"),
    # more than one line in an item (refused by line_problem first; the guard still reads them as tor does)
    ({}, ["Nickname x\nHiddenServiceSingleHopMode 1"], "Nickname x\nHiddenServiceSingleHopMode 1"),
    ({}, ["HiddenServiceSingleHopMode\r 1"], "HiddenServiceSingleHopMode\r 1"),
    ({}, ["HiddenServiceSingle\rHopMode 1"], "HiddenServiceSingle\rHopMode 1"),
    ({}, ["HiddenServiceSingleHopMode \\", "1"], "HiddenServiceSingleHopMode \\\n1"),
    ({"ContactInfo": "x\nHiddenServiceSingleHopMode 1"}, [], "ContactInfo x\nHiddenServiceSingleHopMode 1"),
]
BYPASS_IDS = [repr(b[2])[1:-1] for b in BYPASSES]


@pytest.mark.parametrize("options, lines, written", BYPASSES, ids=BYPASS_IDS)
def test_every_form_tor_reads_as_single_hop_is_refused(options, lines, written):
    msg = torrc.non_anonymous_problem(options, lines, "0", False)
    assert msg and "Found: " in msg and "tor_non_anonymous_onion_services=False" in msg, msg
    # acknowledged and complete, the same forms pass the guard (tor then checks them)
    both = dict(options, HiddenServiceNonAnonymousMode=1)
    assert torrc.non_anonymous_problem(both, lines, "0", True) is None


TOR = "/usr/bin/tor" if os.path.exists("/usr/bin/tor") else "/usr/sbin/tor"


def tor_reads(tmp_path, text):
    """tor --dump-config short of a torrc holding text (offline, nothing else): (exit status, option lines)."""
    path = tmp_path / "torrc"
    path.write_bytes(("DataDirectory %s\nDisableNetwork 1\nSocksPort 0\n%s\n" % (tmp_path / "data", text)).encode())
    p = subprocess.run([TOR, "--dump-config", "short", "--hush", "--defaults-torrc", os.devnull, "-f", str(path)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
    return p.returncode, torrc.dump_lines(p.stdout)


@pytest.mark.skipif(not os.path.exists(TOR), reason="needs tor")
@pytest.mark.parametrize("options, lines, written", BYPASSES, ids=BYPASS_IDS)
def test_bypass_forms_are_what_tor_reads(tmp_path, options, lines, written):
    """The oracle: tor itself reads each form (as torrc.j2 writes it) as HiddenServiceSingleHopMode 1."""
    rc, dumped = tor_reads(tmp_path, written + "\nHiddenServiceNonAnonymousMode 1")
    assert rc == 0 and "HiddenServiceSingleHopMode 1" in dumped, (rc, dumped)


@pytest.mark.skipif(not os.path.exists(TOR), reason="needs tor")
@pytest.mark.parametrize("line", [
    "HiddenServiceSingleHopMode 0 # 1", "#HiddenServiceSingleHopMode 1", "/HiddenServiceSingleHopMode 1",
    "HiddenService 1", "HiddenServiceSingleHopMode#1"])
def test_forms_the_guard_lets_pass_are_not_single_hop_to_tor(tmp_path, line):
    assert torrc.non_anonymous_problem({}, [line], "0", False) is None
    rc, dumped = tor_reads(tmp_path, line)
    assert "HiddenServiceSingleHopMode 1" not in dumped, (rc, dumped)


@pytest.mark.parametrize("options, lines, said", [
    ({}, ["Nickname x\nHiddenServiceSingleHopMode 1"],
     'tor_config_lines[0] "Nickname x\\nHiddenServiceSingleHopMode 1" holds a newline'),
    ({}, ["Nickname ok", "ContactInfo a\r"], 'tor_config_lines[1] "ContactInfo a\\r" holds a carriage return'),
    ({}, ["ContactInfo a\0b"], 'tor_config_lines[0] "ContactInfo a\\u0000b" holds a NUL'),
    ({}, ["HiddenServiceSingleHopMode \\", "1"],
     'tor_config_lines[0] "HiddenServiceSingleHopMode \\\\" ends with a backslash (tor continues it on the next line)'),
    ({"ContactInfo": "x\nHiddenServiceSingleHopMode 1"}, [],
     'tor_options ContactInfo: the value "x\\nHiddenServiceSingleHopMode 1" holds a newline'),
    ({"DirAuthority": ["ok", "a\nb"]}, [], 'tor_options DirAuthority: the value "a\\nb" holds a newline'),
    ({"ContactInfo": "x\\"}, [], 'tor_options ContactInfo: the value "x\\\\" ends with a backslash'),
    ({"HiddenServiceSingleHopMode 1 #": "x"}, [],
     'tor_options name "HiddenServiceSingleHopMode 1 #" is not an option name (letters, digits, _)'),
    ({"Nickname\nHiddenServiceSingleHopMode": 1}, [], 'tor_options name "Nickname\\nHiddenServiceSingleHopMode"'),
    ({"Socks5ProxyPassword": "pw\nmore"}, [], "tor_options Socks5ProxyPassword: the value (secret: not shown) holds"),
    ({}, ["Socks5ProxyPassword pw\nmore"], "tor_config_lines[0] (it holds a secret option: not shown) holds a newline"),
])
def test_more_than_one_line_is_refused_naming_the_item(options, lines, said):
    msg = torrc.line_problem(options, lines)
    assert msg.startswith(PREFIX), msg
    assert said in msg and msg.endswith(" (nothing was changed)."), msg
    assert "pw" not in msg.replace("Password", "")


@pytest.mark.parametrize("options, lines", [
    ({}, []), ({"Nickname": "x", "DirAuthority": ["a b", "c d"], "SafeLogging": True, "__OwningControllerProcess": 1},
               ["HiddenServiceDir /var/lib/tor/a", "ContactInfo a \\ b", "ContactInfo # ok\t"]),
    # issue 42: a # inside a value that is one quoted string is no comment for tor
    ({"ContactInfo": '"a # b"', "Nickname": '"x"'}, ["# a comment line", "Nickname x # a comment"])])
def test_one_line_items_pass(options, lines):
    assert torrc.line_problem(options, lines) is None


# -- issue 42: every tor role variable that torrc.j2 writes (torrc_values), and # in a tor_options value ----------
@pytest.mark.parametrize("values, options, said", [
    ({"tor_socks_port": "0\nHiddenServiceNonAnonymousMode 1\nHiddenServiceSingleHopMode 1\nControlPort 0.0.0.0:9052"},
     {}, 'tor_socks_port: the value "0\\nHiddenServiceNonAnonymousMode 1\\nHiddenServiceSingleHopMode 1\\nControlPort '
         '0.0.0.0:9052" holds a newline'),
    ({"tor_socks_port": "9050 # IsolateDestAddr"}, {},
     'tor_socks_port: the value "9050 # IsolateDestAddr" holds a # (tor reads the rest of the line as a comment; a '
     'whole value in double quotes keeps it)'),
    ({"tor_control_socket": "/run/tor/c # x"}, {}, 'tor_control_socket: the value "/run/tor/c # x" holds a blank'),
    ({"tor_control_socket": "/run/tor/c#x"}, {}, 'tor_control_socket: the value "/run/tor/c#x" holds a #'),
    ({"tor_control_socket": '"/run/tor/c"'}, {}, 'tor_control_socket: the value "\\"/run/tor/c\\"" holds a double quote'),
    ({"tor_control_port": "9051\r"}, {}, 'tor_control_port: the value "9051\\r" holds a carriage return'),
    ({"tor_config_dir": "/etc/tor/d\0"}, {}, 'tor_config_dir: the value "/etc/tor/d\\u0000" holds a NUL'),
    ({"tor_config_dir": "/etc/tor/d\\"}, {}, 'tor_config_dir: the value "/etc/tor/d\\\\" ends with a backslash'),
    ({"tor_metrics_port": "9035\n"}, {}, 'tor_metrics_port: the value "9035\\n" holds a newline'),
    ({"tor_metrics_port_policy": ["127.0.0.1", "10.0.0.0/8\x1b"]}, {},
     'tor_metrics_port_policy[1]: the value "10.0.0.0/8\\u001b" holds the control character U+001B'),
    ({}, {"ContactInfo": "me # and more"}, 'tor_options ContactInfo: the value "me # and more" holds a #'),
    ({}, {"ContactInfo": '"me" # and "more"'}, 'tor_options ContactInfo: the value "\\"me\\" # and \\"more\\"" holds a #'),
    ({}, {"Nickname\n": "x"}, 'tor_options name "Nickname\\n" is not an option name'),
    ({"tor_socks_port": "x" * 300 + "\n"}, {}, 'tor_socks_port: the value "%s"... (301 characters) holds a newline'
                                               % ("x" * 120)),
])
def test_every_role_variable_in_the_torrc_is_one_value(values, options, said):
    msg = torrc.line_problem(options, [], values)
    assert msg and msg.startswith(PREFIX) and said in msg and msg.endswith(" (nothing was changed)."), msg


@pytest.mark.parametrize("value, expected", [
    (True, True), (False, False), ("false", False), ("FALSE", False), ("no", False), ("off", False), ("0", False),
    (0, False), ("true", True), ("Yes", True), ("on", True), ("1", True), (1, True),
    ("maybe", None), ("", None), ("2", None), (2, None), (None, None), ("false\nControlPort 9052", None), (["1"], None)])
def test_tor_cookie_authentication_is_a_boolean(value, expected):
    """The string "false" is false (torrc.j2 wrote CookieAuthentication 1 for it); what is no boolean is refused."""
    assert torrc.role_bool(value) is expected
    msg = torrc.line_problem({}, [], {"tor_cookie_authentication": value})
    if expected is None:
        assert msg and msg.startswith(PREFIX) and "tor_cookie_authentication: the value " in msg
        assert "is not a boolean (true or false; yes, no, on, off, 1 or 0)" in msg and "\n" not in msg, msg
    else:
        assert msg is None


def test_role_values_pass_as_the_role_sets_them():
    values = {"tor_control_port": 9051, "tor_control_socket": "/run/tor/control", "tor_socks_port": "9050 IsolateDestAddr",
              "tor_config_dir": "/etc/tor/torrc.d", "tor_metrics_port": "[fd00::5]:9035", "tor_cookie_authentication": True,
              "tor_metrics_port_policy": ["127.0.0.1", "fd00::/64"]}
    assert torrc.line_problem({}, [], values) is None
    assert torrc.line_problem({}, [], {"tor_socks_port": '"9050 # quoted"', "tor_control_socket": None}) is None


SECRET = "hunter2-Secret"
# a torrc's secret lines as tor reads them (the value, continued or not) and what the diff shows for each
HIDDEN = [
    ("Socks5ProxyPassword %s" % SECRET, "Socks5ProxyPassword (value hidden)"),
    ("  socks5proxypassword\t%s # c" % SECRET, "  socks5proxypassword (value hidden)"),
    ('Socks5ProxyPassword "%s"' % SECRET, "Socks5ProxyPassword (value hidden)"),
    ("Socks5ProxyPassword hunter\\\n2-Secret", "Socks5ProxyPassword (value hidden)"),
    ("Socks5ProxyPassword \\\n%s" % SECRET, "Socks5ProxyPassword (value hidden)"),
    ("Socks5ProxyPassword\\\n%s" % SECRET, "Socks5ProxyPassword (value hidden)"),
    ("Socks5ProxyPassword hunter\\\n# a comment inside the value\n2-Secret", "Socks5ProxyPassword (value hidden)"),
    ("Socks5ProxyPassword hunter\\\r\n2-Secret", "Socks5ProxyPassword (value hidden)"),
    ("Socks5ProxyP %s" % SECRET, "Socks5ProxyP (value hidden)"),
    ("+Socks5ProxyPassword %s" % SECRET, "+Socks5ProxyPassword (value hidden)"),
    ("Socks5ProxyUsername %s" % SECRET, "Socks5ProxyUsername (value hidden)"),
    ("HTTPSProxyAuthenticator me:%s" % SECRET, "HTTPSProxyAuthenticator (value hidden)"),
    ("HTTPProxyAuth me:%s" % SECRET, "HTTPProxyAuth (value hidden)"),
    ("HashedControlPassword 16:%s" % SECRET, "HashedControlPassword (value hidden)"),
    ("Has 16:%s" % SECRET, "Has (value hidden)"),
]


@pytest.mark.parametrize("line, shown", HIDDEN, ids=[repr(h[0]) for h in HIDDEN])
def test_hide_secrets_hides_every_form_tor_reads(line, shown):
    text = "# top\nSocks5Proxy 127.0.0.1:1\n%s\nNickname after\n" % line
    hidden = torrc.hide_secrets(text)
    assert hidden == "# top\nSocks5Proxy 127.0.0.1:1\n%s\nNickname after\n" % shown, hidden
    for piece in ("hunter", "2-Secret"):
        assert piece not in hidden
    # the same lines as the role compares them when tor is not there to read them
    assert [i for i in torrc.dropped(torrc.lines_as_written(text), []) if "hunter" in i or "Secret" in i] == []


@pytest.mark.skipif(not os.path.exists(TOR), reason="needs tor")
@pytest.mark.parametrize("line, shown", HIDDEN[:9], ids=[repr(h[0]) for h in HIDDEN[:9]])
def test_hidden_forms_are_what_tor_reads(tmp_path, line, shown):
    """The oracle: tor reads the whole secret of each form (continued lines included) as the option's value."""
    rc, dumped = tor_reads(tmp_path, "Socks5Proxy 127.0.0.1:1\nSocks5ProxyUsername u\n" + line)
    assert rc == 0 and "Socks5ProxyPassword %s" % SECRET in dumped, (rc, dumped)


def test_parse_reads_as_tor_does():
    assert torrc.parse("ContactInfo a\\\nb # c\nd\n\n# x\nNickname n # c\\\nSocksPort 0\nContactInfo a\\\n\nd") == [
        (0, 2, "ContactInfo", "ab d"), (5, 5, "Nickname", "n"), (6, 6, "SocksPort", "0"),
        (7, 7, "ContactInfo", "a\\"), (9, 9, "d", "")]
    assert torrc.parse('X "a" junk\nY "\\q"') == [(0, 0, "X", None), (1, 1, "Y", None)]


HEALTH = "SocksPort 127.0.0.1:%s ExtendedErrors"


@pytest.mark.parametrize("socks, health, options, lines, want", [
    (None, "auto", {}, [], []),                                        # the platform's 9050 on 127.0.0.1
    ("9050 IsolateDestAddr", "auto", {}, [], ["SocksPort 9050 IsolateDestAddr"]),
    ("127.0.0.1:9150", "auto", {}, [], ["SocksPort 127.0.0.1:9150"]),
    ("localhost:9150", "auto", {}, [], ["SocksPort localhost:9150"]),
    ("[::1]:9150", "auto", {}, [], ["SocksPort [::1]:9150", HEALTH % "auto"]),  # the probe asks 127.0.0.1
    ("0", "auto", {}, [], [HEALTH % "auto"]),                         # tor refuses a port beside SocksPort 0
    (0, True, {}, [], [HEALTH % "auto"]),
    ("unix:/run/tor/socks", "auto", {}, [], ["SocksPort unix:/run/tor/socks", HEALTH % "auto"]),
    ("10.0.0.1:9050", "auto", {}, [], ["SocksPort 10.0.0.1:9050", HEALTH % "auto"]),
    ("0", "auto", {"SocksPort": "127.0.0.1:9999"}, [], ["SocksPort 0"]),
    ("0", "auto", {}, ["socksport 127.0.0.1:9999"], ["SocksPort 0"]),
    ("0", "auto", {}, ["SocksPort 0"], ["SocksPort 0"]),
    ("0", False, {}, [], ["SocksPort 0"]),                             # a host that must keep SocksPort 0
    ("0", "off", {}, [], ["SocksPort 0"]),
    (None, None, {}, [], []),
    ("0", "9060", {}, [], [HEALTH % "9060"]),
    (None, 9060, {}, [], ["+" + HEALTH % "9060"]),                    # '+': the defaults torrc's ports stay
    ("9060", 9060, {}, [], ["SocksPort 9060"]),
    ("0", "auto", SINGLE, [], ["SocksPort 0"]),                        # non-anonymous: no SocksPort at all
])
def test_socks_lines(socks, health, options, lines, want):
    assert torrc.socks_lines(socks, health, options, lines)[0] == want


@pytest.mark.parametrize("socks, health, options, lines, said", [
    ("0", "bogus", {}, [], "must be auto, false or a port number"),
    ("0", "9" * 5000, {}, [], "must be auto, false or a port number"),
    ("0", "70000", {}, [], "must be auto, false or a port number"),
    ("0", "", {}, [], "must be auto, false or a port number"),
    ("0", 9060, SINGLE, [], "tor refuses a SocksPort with HiddenServiceNonAnonymousMode"),
    ("0", 9060, {}, ["SocksPort 0"], "tor refuses a SocksPort beside it"),
])
def test_socks_lines_refused(socks, health, options, lines, said):
    with pytest.raises(ValueError) as e:
        torrc.socks_lines(socks, health, options, lines)
    assert said in str(e.value) and "tor_health_socks_port" in str(e.value)
