# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The control-protocol grammar (reply.py): pure functions, no sockets."""

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import (
    OperationFailed,
    ProtocolError,
    UnrecognizedKey,
    UnsafeValue,
)
from ansible_collections.onionlab.tor.plugins.module_utils._tor.reply import (
    Reply,
    ReplyLine,
    check_config_key,
    check_keyword,
    check_token,
    check_value,
    format_command,
    parse_key_values,
    parse_mapping,
    quote,
    unquote,
)

FORBIDDEN = ["\r", "\n", "\x00", "a\r\nSIGNAL SHUTDOWN", "x\nQUIT", "nul\x00byte", "trailing\r"]


def reply(*lines):
    """Reply from ('250', '-', 'text'[, data]) tuples."""
    return Reply([ReplyLine(*line) for line in lines])


# -- quote / unquote ------------------------------------------------------------------------

@pytest.mark.parametrize("value, quoted", [
    ("", '""'),
    ("plain", '"plain"'),
    ("with space", '"with space"'),
    ('say "hi"', r'"say \"hi\""'),
    ("back\\slash", r'"back\\slash"'),
    ('\\"', r'"\\\""'),
    ("caf\u00e9", '"caf\u00e9"'),
    ("tab\there", '"tab\there"'),
])
def test_quote(value, quoted):
    assert quote(value) == quoted


@pytest.mark.parametrize("value", FORBIDDEN)
def test_quote_refuses_control_characters(value):
    with pytest.raises(UnsafeValue):
        quote(value)


@pytest.mark.parametrize("text, value", [
    ('""', ""),
    ('"plain"', "plain"),
    (r'"a\nb"', "a\nb"),
    (r'"a\tb"', "a\tb"),
    (r'"a\rb"', "a\rb"),
    (r'"a\\b"', "a\\b"),
    (r'"a\"b"', 'a"b'),
    (r'"it\'s"', "it's"),
])
def test_unquote_simple_escapes(text, value):
    assert unquote(text) == (value, len(text))


@pytest.mark.parametrize("text, value", [
    (r'"\101"', "A"),                    # octal, three digits
    (r'"\0"', "\x00"),                   # octal, one digit
    (r'"\12x"', "\nx"),                  # octal, two digits then a letter
    (r'"\1012"', "A2"),                  # at most three octal digits
    (r'"caf\303\251"', "caf\u00e9"),     # octal bytes decoded as UTF-8 (tor's esc_for_log)
    (r'"\x41"', "A"),
    (r'"\x4a\x4B"', "JK"),
    (r'"caf\xc3\xa9"', "caf\u00e9"),     # hex bytes decoded as UTF-8
    (r'"\xff"', "\ufffd"),               # not UTF-8: replaced, not an exception
    (r'"\x41BC"', "ABC"),                # exactly two hex digits
])
def test_unquote_octal_and_hex(text, value):
    assert unquote(text)[0] == value


@pytest.mark.parametrize("text", [
    '"unterminated',
    '"ends with backslash\\',
    '"escaped quote at end\\"',
    '"',
    "",
    "no quote",
    r'"bad \q escape"',
    r'"bad \x4 hex"',
    r'"bad \xzz hex"',
    r'"\x"',
])
def test_unquote_malformed(text):
    with pytest.raises(ProtocolError):
        unquote(text)


def test_unquote_start_and_end_index():
    text = 'KEY="a b" NEXT=1'
    value, end = unquote(text, 4)
    assert value == "a b"
    assert text[end:] == " NEXT=1"


@pytest.mark.parametrize("value", [
    "", "plain", "with space", 'say "hi"', "back\\slash", "\\\\\"\\", "caf\u00e9 \u2603",
    "tab\there", "'single'", "end\\", '"', "\\x41 is not hex here", "\\101 not octal",
])
def test_quote_unquote_round_trip(value):
    quoted = quote(value)
    assert unquote(quoted) == (value, len(quoted))


# -- parse_mapping --------------------------------------------------------------------------

@pytest.mark.parametrize("text, positional, mapping", [
    ("", [], {}),
    ("METHODS=NULL", [], {"METHODS": "NULL"}),
    ("METHODS=COOKIE,SAFECOOKIE COOKIEFILE=\"/var/run/tor/control.authcookie\"",
     [], {"METHODS": "COOKIE,SAFECOOKIE", "COOKIEFILE": "/var/run/tor/control.authcookie"}),
    ('COOKIEFILE="/a dir/with \\"quotes\\" and \\\\"', [], {"COOKIEFILE": '/a dir/with "quotes" and \\'}),
    ('COOKIEFILE="/tmp/caf\\303\\251"', [], {"COOKIEFILE": "/tmp/caf\u00e9"}),
    ("FLAG1 KEY=v FLAG2", ["FLAG1", "FLAG2"], {"KEY": "v"}),
    ("  spaced   KEY=v  ", ["spaced"], {"KEY": "v"}),
    ("EMPTY= NEXT=x", [], {"EMPTY": "", "NEXT": "x"}),
    ('EMPTYQ="" NEXT=x', [], {"EMPTYQ": "", "NEXT": "x"}),
    ("K=1 K=2", [], {"K": "2"}),  # later duplicates win
    ("SERVERHASH=ab12 SERVERNONCE=cd34", [], {"SERVERHASH": "ab12", "SERVERNONCE": "cd34"}),
    ("Tor=\"0.4.9.11\"", [], {"Tor": "0.4.9.11"}),
])
def test_parse_mapping(text, positional, mapping):
    assert parse_mapping(text) == (positional, mapping)


@pytest.mark.parametrize("text", [
    '"leading quote"',
    'KEY="unterminated',
    'KEY="bad \\q"',
    "=novalue",
])
def test_parse_mapping_malformed(text):
    with pytest.raises(ProtocolError):
        parse_mapping(text)


# -- parse_key_values -----------------------------------------------------------------------

@pytest.mark.parametrize("lines, items", [
    # GETINFO version
    ([("250", "-", "version=0.4.9.11"), ("250", " ", "OK")], [("version", "0.4.9.11")]),
    # several keys, with a data line (multi-line value)
    ([("250", "-", "version=0.4.9.11"),
      ("250", "+", "config-text=", "SocksPort 0\nDisableNetwork 1"),
      ("250", "-", "onions/current="),
      ("250", " ", "OK")],
     [("version", "0.4.9.11"), ("config-text", "SocksPort 0\nDisableNetwork 1"), ("onions/current", "")]),
    # GETCONF, single key on the end line
    ([("250", " ", "SocksPort=0")], [("SocksPort", "0")]),
    # GETCONF unset option: a bare key
    ([("250", " ", "HiddenServiceOptions")], [("HiddenServiceOptions", None)]),
    # GETCONF repeated keys, in order
    ([("250", "-", "HiddenServiceDir=/a"), ("250", "-", "HiddenServicePort=80 127.0.0.1:8080"),
      ("250", "-", "HiddenServiceDir=/b"), ("250", " ", "HiddenServicePort=443 127.0.0.1:8443")],
     [("HiddenServiceDir", "/a"), ("HiddenServicePort", "80 127.0.0.1:8080"),
      ("HiddenServiceDir", "/b"), ("HiddenServicePort", "443 127.0.0.1:8443")]),
    # GETCONF quoted values (tor escapes values starting with a quote, or with # or non-ASCII)
    ([("250", "-", 'ContactInfo="\\"start"'), ("250", "-", 'Nickname="caf\\303\\251"'),
      ("250", " ", 'Address="x#y"')],
     [("ContactInfo", '"start'), ("Nickname", "caf\u00e9"), ("Address", "x#y")]),
    # an unquoted value that contains quotes and backslashes is taken as is
    ([("250", " ", 'ContactInfo=a "b" \\c')], [("ContactInfo", 'a "b" \\c')]),
    # a value containing '='
    ([("250", " ", "Key=a=b")], [("Key", "a=b")]),
    # an empty data block
    ([("250", "+", "config-text=", ""), ("250", " ", "OK")], [("config-text", "")]),
    # a bare OK alone means no items (GETCONF with no keys)
    ([("250", " ", "OK")], []),
    # OK that is not last is a bare key
    ([("250", "-", "OK"), ("250", " ", "OK")], [("OK", None)]),
])
def test_parse_key_values(lines, items):
    assert parse_key_values(reply(*lines)) == items


@pytest.mark.parametrize("lines", [
    [("250", "+", "config-text", "x"), ("250", " ", "OK")],         # data line without '='
    [("250", "+", "config-text=junk", "x"), ("250", " ", "OK")],    # data line with text after '='
    [("250", "-", "=value"), ("250", " ", "OK")],                   # no key
    [("250", " ", 'K="unterminated')],
    [("250", " ", 'K="quoted" junk')],                              # junk after the quoted value
])
def test_parse_key_values_malformed(lines):
    with pytest.raises(ProtocolError):
        parse_key_values(reply(*lines))


# -- Reply ----------------------------------------------------------------------------------

def test_reply_properties():
    r = reply(("250", "-", "a=1"), ("250", " ", "OK"))
    assert r.ok and r.code == "250" and not r.is_event
    assert [line.text for line in r] == ["a=1", "OK"]
    assert r.raise_for_status() is r
    assert reply(("650", " ", "CIRC 1 BUILT")).is_event
    with pytest.raises(ProtocolError):
        Reply([])


@pytest.mark.parametrize("code, cls", [("552", UnrecognizedKey), ("551", OperationFailed),
                                       ("510", OperationFailed), ("451", OperationFailed)])
def test_raise_for_status(code, cls):
    with pytest.raises(cls) as info:
        reply((code, " ", "something went wrong")).raise_for_status("GETINFO")
    assert type(info.value) is cls
    assert info.value.code == code
    assert info.value.message == "something went wrong"
    assert info.value.command == "GETINFO"
    assert str(info.value) == "tor refused GETINFO: %s something went wrong" % code


def test_raise_for_status_without_command():
    with pytest.raises(OperationFailed, match=r"^tor refused the request: 513 bad$"):
        reply(("513", " ", "bad")).raise_for_status()


# -- format_command -------------------------------------------------------------------------

@pytest.mark.parametrize("keyword, args, data, wire", [
    ("GETINFO", ["version"], None, b"GETINFO version\r\n"),
    ("GETINFO", ["version", "config-text"], None, b"GETINFO version config-text\r\n"),
    ("QUIT", [], None, b"QUIT\r\n"),
    ("SETCONF", ['ContactInfo="a b"'], None, b'SETCONF ContactInfo="a b"\r\n'),
    ("SETCONF", ['ContactInfo="caf\u00e9"'], None, 'SETCONF ContactInfo="caf\u00e9"\r\n'.encode()),
    ("LOADCONF", [], "SocksPort 0\nLog notice stdout", b"+LOADCONF\r\nSocksPort 0\r\nLog notice stdout\r\n.\r\n"),
    ("LOADCONF", [], "a\n", b"+LOADCONF\r\na\r\n.\r\n"),                       # final newline is not a line
    ("LOADCONF", [], "a\r\nb\r\n", b"+LOADCONF\r\na\r\nb\r\n.\r\n"),            # CRLF normalised
    ("LOADCONF", [], ".hidden\n.\n..\nmid.dot", b"+LOADCONF\r\n..hidden\r\n..\r\n...\r\nmid.dot\r\n.\r\n"),
    ("LOADCONF", [], "", b"+LOADCONF\r\n.\r\n"),
    ("POSTDESCRIPTOR", ["purpose=general"], "router x", b"+POSTDESCRIPTOR purpose=general\r\nrouter x\r\n.\r\n"),
])
def test_format_command(keyword, args, data, wire):
    assert format_command(keyword, args, data) == wire


@pytest.mark.parametrize("value", FORBIDDEN)
def test_format_command_refuses_control_characters_in_args(value):
    with pytest.raises(UnsafeValue):
        format_command("GETINFO", ["version", value])


@pytest.mark.parametrize("keyword", ["GET INFO", "GETINFO\r\n", "", "GET\"INFO", "QUIT\x00"])
def test_format_command_refuses_bad_keyword(keyword):
    with pytest.raises(UnsafeValue):
        format_command(keyword)


@pytest.mark.parametrize("data", ["bare\rreturn", "nul\x00byte", "a\rb\nc"])
def test_format_command_refuses_unsafe_data(data):
    with pytest.raises(UnsafeValue):
        format_command("LOADCONF", [], data)


# -- keyword, option and token checks -------------------------------------------------------

@pytest.mark.parametrize("keyword", [
    "version", "config-text", "md/id/$0123456789ABCDEF0123456789ABCDEF01234567", "ns/name/moria1",
    "net/listeners/socks", "onions/current", "status/bootstrap-phase", "ip-to-country/1.2.3.4",
    "dir/server/fp/A+B", "a.b@c:d=e~f,g_h",
])
def test_check_keyword_accepts(keyword):
    assert check_keyword(keyword) == keyword


@pytest.mark.parametrize("keyword", [
    "", "with space", 'quote"', "back\\slash", "tab\tkey", "cr\r", "lf\n", "nul\x00", "caf\u00e9",
    "semi;colon", "paren(", "star*",
])
def test_check_keyword_refuses(keyword):
    with pytest.raises(UnsafeValue):
        check_keyword(keyword)


@pytest.mark.parametrize("key", ["SocksPort", "HiddenServiceDir", "__OwningControllerProcess", "_x", "A1"])
def test_check_config_key_accepts(key):
    assert check_config_key(key) == key


@pytest.mark.parametrize("key", ["", "1Socks", "Socks-Port", "Socks Port", "Socks.Port", "Key=1", "Key\r\n",
                                 "Key\x00", "K\u00e9y", "md/id"])
def test_check_config_key_refuses(key):
    with pytest.raises(UnsafeValue):
        check_config_key(key)


@pytest.mark.parametrize("token", ["80", "127.0.0.1:8080", "unix:/run/x.sock", "ED25519-V3",
                                   "caf\u00e9", "a=b,c"])
def test_check_token_accepts(token):
    assert check_token(token) == token


@pytest.mark.parametrize("token", ["", "a b", "a\tb", 'a"b', "a\\b", "a\rb", "a\nb", "a\x00b", "a\x07b",
                                   "a\u200bb"])
def test_check_token_refuses(token):
    with pytest.raises(UnsafeValue):
        check_token(token)


@pytest.mark.parametrize("value", [None, 1, b"bytes", ["list"]])
def test_check_value_refuses_non_strings(value):
    with pytest.raises(UnsafeValue, match="must be a string"):
        check_value(value)


@pytest.mark.parametrize("value, what", [("a\rb", "a carriage return"), ("a\nb", "a line feed"),
                                         ("a\x00b", "a NUL byte")])
def test_check_value_message_names_the_character(value, what):
    with pytest.raises(UnsafeValue) as info:
        check_value(value, "value of ContactInfo")
    assert str(info.value).startswith("value of ContactInfo contains %s" % what)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("lines, items", [
    # GETINFO values are tor's text as is: a list of quoted strings stays a list
    ([("250", "-", 'net/listeners/control="127.0.0.1:9051" "unix:/run/tor/control"'), ("250", " ", "OK")],
     [("net/listeners/control", '"127.0.0.1:9051" "unix:/run/tor/control"')]),
    ([("250", "-", 'net/listeners/socks="127.0.0.1:9050"'), ("250", " ", "OK")],
     [("net/listeners/socks", '"127.0.0.1:9050"')]),
    ([("250", "-", 'status/x="unterminated'), ("250", " ", "OK")], [("status/x", '"unterminated')]),
])
def test_parse_key_values_raw(lines, items):
    assert parse_key_values(reply(*lines), unquote_values=False) == items
