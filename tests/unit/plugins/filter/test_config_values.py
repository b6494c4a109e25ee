# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""config_values (plugins/module_utils/_tor/config_value.py, its one check): a role variable stays one value of the
file it is written into, as that file's reader reads it (issue 42)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.config_values import FilterModule, config_values
from ansible_collections.onionlab.tor.plugins.module_utils._tor import config_value


@pytest.mark.parametrize("fmt, kind, value, said", [
    ("torrc", "value", "a\nb", "holds a newline"),
    ("torrc", "value", "a\rb", "holds a carriage return"),
    ("torrc", "value", "a\0b", "holds a NUL"),
    ("torrc", "value", "a\x7f", "holds the control character U+007F"),
    ("torrc", "value", "a\u2028b", "holds the control character U+2028"),
    ("torrc", "line", "a\x0bb", "holds the control character U+000B"),
    ("torrc", "value", "a\\", "ends with a backslash (tor continues it on the next line)"),
    ("torrc", "value", "a # b", "holds a # (tor reads the rest of the line as a comment; a whole value in double "
                                "quotes keeps it)"),
    ("torrc", "value", '"a" # b', "holds a # after its closing double quote (tor reads the rest of the line as a "
                                  "comment)"),
    ("torrc", "value", '"a" b', "holds more after its closing double quote (tor refuses the line)"),
    ("torrc", "value", '"a', "begins with a double quote but is not one quoted string (tor refuses the line)"),
    ("torrc", "value", '"\\q"', "begins with a double quote but is not one quoted string (tor refuses the line)"),
    ("torrc", "word", "/a b", "holds a blank (tor splits the line into words there)"),
    ("torrc", "word", "/a\tb", "holds a blank (tor splits the line into words there)"),
    ("torrc", "word", '/a"b', "holds a double quote"),
    ("torrc", "word", "/a#b", "holds a # (tor reads the rest of the line as a comment)"),
    ("torrc", "word", '"/a"', "holds a double quote"),
    ("haproxy", "word", "a#b", "holds a # (HAProxy reads the rest of the line as a comment)"),
    ("haproxy", "word", "a'b", "holds a single quote"),
    ("haproxy", "word", "a\\b", "holds a backslash"),
    ("haproxy", "value", "a\\", "ends with a backslash (HAProxy reads it as an escape)"),
    ("systemd", "word", "/run/%h", "holds a % (systemd expands %-specifiers)"),
    ("systemd", "word", "a;b", "holds a ;"),
    ("systemd", "value", "a\\", "ends with a backslash (systemd continues it on the next line)"),
    ("ini", "value", "50%", "holds a % (configparser interpolates it)"),
    ("ini", "word", "a b", "holds a blank (the program's configparser splits the line into words there)"),
])
def test_refused(fmt, kind, value, said):
    assert config_value.problem(value, fmt, kind) == said


@pytest.mark.parametrize("fmt, kind, value", [
    ("torrc", "value", "9050 IsolateDestAddr"), ("torrc", "value", '"a # b"'), ("torrc", "value", '  "a\\\\"'),
    ("torrc", "value", "a\tb"), ("torrc", "line", "Nickname x # comment"), ("torrc", "word", 9051),
    ("torrc", "word", None), ("torrc", "word", True), ("torrc", "value", "x" * 100000), ("torrc", "value", "ü€"),
    ("systemd", "word", "/run/a#b"), ("ini", "value", "a # b ; c \\"), ("haproxy", "line", "option httplog # c"),
])
def test_accepted(fmt, kind, value):
    assert config_value.problem(value, fmt, kind) is None


def test_problems_name_each_item_and_cut_long_values():
    out = config_value.problems({"b": ["ok", "x\n"], "a": {"S": {"k": "v%"}}, "c": "y" * 500 + "\n"}, "ini",
                                {"a": "value"}, "word")
    assert out == ['a.S.k: the value "v%" holds a % (configparser interpolates it)',
                   'b[1]: the value "x\\n" holds a newline',
                   'c: the value "%s"... (501 characters) holds a newline' % ("y" * 120)]


def test_filter_returns_the_variables_or_refuses_naming_them():
    assert FilterModule().filters()["config_values"] is config_values
    ok = {"my_user": "debian-tor", "my_port": 9051, "my_socket": None}
    assert config_values(ok, "systemd") is ok
    with pytest.raises(AnsibleFilterError) as e:
        config_values({"my_user": "tor\nExecStartPre=+/bin/sh -c id", "my_args": "-v x", "my_line": "a b"}, "systemd",
                      values=["my_args"], lines=["my_line"], role="my_role")
    assert str(e.value) == (
        'my_role: these variables would not stay one value each in the systemd file they are written into: '
        'my_user: the value "tor\\nExecStartPre=+/bin/sh -c id" holds a newline. Nothing was changed.')
    with pytest.raises(AnsibleFilterError, match="file_format must be one of haproxy, ini, systemd, torrc"):
        config_values({}, "nginx")
    with pytest.raises(AnsibleFilterError, match="takes a dict"):
        config_values(["x"], "ini")


def _address():
    import os
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
    return onion.onion_address(onion.ed25519_public_from_expanded(os.urandom(64)))


def test_onion_problem():
    sid = _address()
    typo = sid[:20] + ("a" if sid[20] != "a" else "b") + sid[21:]
    assert config_value.onion_problem(sid) is None
    assert config_value.onion_problem(sid + ".onion") is None
    assert config_value.onion_problem(typo) == "has a wrong checksum (a character mistyped)"
    assert config_value.onion_problem(sid[:-1] + "a") == "is not version 3"
    for bad in (sid.upper(), sid + ".onion\n", sid[:55], "http://%s.onion" % sid, ""):
        assert config_value.onion_problem(bad) == "is not 56 letters a-z and digits 2-7 (then .onion)", bad
    assert config_value.onion_problem(5) == "is not a string"


def test_filter_refuses_a_bad_onion_with_the_other_problems_in_one_message():
    sid = _address()
    ok = {"addr": sid + ".onion", "none": None, "url": "socks5://127.0.0.1:9050"}
    assert config_values(ok, "yaml", onions=["addr", "none"]) is ok
    with pytest.raises(AnsibleFilterError) as e:
        config_values({"a": "x.onion", "b": sid + "\n", "c": "a\nb"}, "yaml", onions=["a", "b"], role="prometheus")
    # b is named once, for its newline
    assert str(e.value) == (
        'prometheus: these variables would not stay one value each in the yaml file they are written into: '
        'b: the value "%s\\n" holds a newline; c: the value "a\\nb" holds a newline. These variables must each name '
        'a v3 onion address (56 letters a-z and digits 2-7, then .onion): a: the value "x.onion" is not 56 letters '
        'a-z and digits 2-7 (then .onion). Nothing was changed.' % sid)
