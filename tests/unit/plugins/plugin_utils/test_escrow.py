# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's escrow (plugin_utils/escrow.py): modes, no temp name shared by two writers, host names that
cannot be directories refused, and an escrowed key never dropped when the host's differs."""

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
    os.symlink(str(target), str(tmp_path / "web1" / "web" / esc.KEY_FILE))
    with pytest.raises(OSError):
        e.read("web", esc.KEY_FILE)


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
