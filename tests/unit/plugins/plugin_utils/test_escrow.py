# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's escrow (plugin_utils/escrow.py): modes, no temp name shared by two writers, host names that
cannot be directories refused, an escrowed key never dropped when the host's differs, no link followed below the
root, and a key restorable only when it gives the escrowed address."""

import os
import stat

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow as esc


def _key():
    return onion.SECRET_HEADER + os.urandom(64)


@pytest.mark.parametrize("host", ["", ".", "..", "a/b", "../x", "a\0b"])
def test_host_names_that_are_not_one_directory_are_refused(tmp_path, host):
    with pytest.raises(ValueError, match="cannot name a directory of the escrow"):
        esc.Escrow(str(tmp_path), host)
    assert esc.name_problem("web1.example.org", "host") is None


def test_files_0600_in_0700_directories_and_no_leftover(tmp_path):
    e = esc.Escrow(str(tmp_path / "keys"), "web1")
    e.write("web", "hostname", b"x.onion\n")
    path = tmp_path / "keys" / "web1" / "web" / "hostname"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for d in (tmp_path / "keys", path.parent.parent, path.parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert sorted(os.listdir(path.parent)) == ["hostname"]


def test_a_writer_leaves_another_writers_temporary_file_alone(tmp_path):
    """The old fixed name (NAME.onionlab-new) made each writer delete the other's file."""
    e = esc.Escrow(str(tmp_path), "web1")
    e.directories("web")
    other = tmp_path / "web1" / "web" / "hostname.onionlab-new"
    other.write_bytes(b"another run's")
    e.write("web", "hostname", b"x.onion\n")
    assert other.read_bytes() == b"another run's"


def test_a_symlink_in_place_of_the_file_is_not_followed_on_read(tmp_path):
    e = esc.Escrow(str(tmp_path), "web1")
    e.directories("web")
    target = tmp_path / "elsewhere"
    target.write_bytes(b"not yours")
    link = tmp_path / "web1" / "web" / esc.KEY_FILE
    os.symlink(str(target), str(link))
    with pytest.raises(esc.EscrowError, match="%s is a symbolic link: nothing below the escrow's directory %s is "
                       "followed through a link" % (link, tmp_path)):
        e.read("web", esc.KEY_FILE)
    with pytest.raises(esc.EscrowError, match="is a symbolic link"):
        e.write("web", esc.KEY_FILE, _key())
    assert target.read_bytes() == b"not yours"


def _linked_service(tmp_path, where="web"):
    """web1/web (or web1 itself) a link to a directory of another service's, 0755, holding its key."""
    e = esc.Escrow(str(tmp_path / "keys"), "web1")
    e.directories("blog")
    other = tmp_path / "keys" / "web1" / "blog"
    key = _key()
    (other / esc.KEY_FILE).write_bytes(key)
    other.chmod(0o755)
    if where == "web":
        os.symlink(str(other), str(tmp_path / "keys" / "web1" / "web"))
        return e, other, key, tmp_path / "keys" / "web1" / "web"
    os.symlink(str(tmp_path / "keys" / "web1"), str(tmp_path / "keys" / "web2"))
    return esc.Escrow(str(tmp_path / "keys"), "web2"), other, key, tmp_path / "keys" / "web2"


@pytest.mark.parametrize("where", ["web", "host"])
def test_a_linked_service_or_host_directory_is_refused_and_nothing_done_through_it(tmp_path, where):
    """Escrow.directory() used os.stat/os.chmod/mkdir by path: a linked service directory was chmodded, read
    and written through (blog's key restored as web's)."""
    e, other, key, link = _linked_service(tmp_path, where)
    expected = "%s is a symbolic link: nothing below the escrow's directory %s" % (link, tmp_path / "keys")
    with pytest.raises(esc.EscrowError, match=expected):
        e.read("web", esc.KEY_FILE)
    with pytest.raises(esc.EscrowError, match=expected):
        e.directories("web")
    with pytest.raises(esc.EscrowError, match=expected):
        e.write_key("web", _key())
    assert stat.S_IMODE(other.stat().st_mode) == 0o755            # not chmodded through the link
    assert sorted(os.listdir(str(other))) == [esc.KEY_FILE] and (other / esc.KEY_FILE).read_bytes() == key
    if where == "host":
        with pytest.raises(esc.EscrowError, match=expected):
            esc.read_hostname(str(tmp_path / "keys"), "web2", "blog")


def test_the_root_itself_may_be_a_link_and_missing_files_read_as_none(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(str(real), str(tmp_path / "keys"))
    e = esc.Escrow(str(tmp_path / "keys"), "web1")
    assert e.read("web", esc.KEY_FILE) is None
    e.write_hostname("web", "x.onion")
    assert (real / "web1" / "web" / "hostname").read_bytes() == b"x.onion\n"
    assert e.read("web", esc.KEY_FILE) is None and e.read("web", "hostname") == b"x.onion\n"
    assert esc.read_hostname(str(tmp_path / "keys"), "web1", "web") == ("x.onion", e.path("web", "hostname"))
    assert esc.read_hostname(str(tmp_path / "keys"), "web1", "nothing")[0] is None
    (real / "web1" / "web" / "hostname").chmod(0o644)
    e.changed = False
    e.write_hostname("web", "x.onion")                         # same bytes: only the mode is fixed
    assert e.changed and stat.S_IMODE((real / "web1" / "web" / "hostname").stat().st_mode) == 0o600


def test_a_key_is_restorable_only_when_it_gives_the_escrowed_address(tmp_path):
    """Issue 42: the public key is derived from the expanded secret key and the address from it; the escrowed
    hostname must be that address. Messages name the files and addresses, never the key."""
    e = esc.Escrow(str(tmp_path), "web1")
    web, blog = _key(), _key()
    web_address, blog_address = esc.key_address(web), esc.key_address(blog)
    hostname = (web_address + "\n").encode("ascii")
    assert e.key_problem("web", web, hostname) is None
    swapped = e.key_problem("web", blog, hostname)                # blog's key under web's directory
    assert swapped == ("%s gives %s, not the service's escrowed address %s (%s): a key of another service"
                       % (e.path("web", esc.KEY_FILE), blog_address, web_address, e.path("web", "hostname")))
    truncated = e.key_problem("web", web[:60], hostname)
    assert truncated.startswith("%s is not a tor ed25519 secret key file (60 bytes; one is 96"
                                % e.path("web", esc.KEY_FILE))
    assert "truncated" in truncated
    assert "the escrow holds no %s" % e.path("web", "hostname") in e.key_problem("web", web, None)
    assert "is not an onion address" in e.key_problem("web", web, web[32:])
    for message in (swapped, truncated, e.key_problem("web", web, web[32:])):
        for secret in (web, blog):
            assert secret[32:48] not in message.encode("ascii", "replace")
            assert onion.key_blob(secret[32:]).split(":")[1][:20] not in message


def test_an_escrowed_key_that_differs_is_kept_under_replaced(tmp_path):
    e = esc.Escrow(str(tmp_path), "web1")
    old, new = _key(), _key()
    assert e.write_key("web", old) is None
    e.write("web", "hostname", b"old.onion\n")
    assert e.write_key("web", old) is None            # the same key: nothing replaced
    address = e.write_key("web", new)
    assert address == esc.key_address(old) and address.endswith(".onion")
    kept = tmp_path / "web1" / "web" / "replaced" / address
    assert (kept / esc.KEY_FILE).read_bytes() == old
    assert (kept / "hostname").read_bytes() == b"old.onion\n"
    assert stat.S_IMODE((kept / esc.KEY_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.stat().st_mode) == 0o700
    assert (tmp_path / "web1" / "web" / esc.KEY_FILE).read_bytes() == new
