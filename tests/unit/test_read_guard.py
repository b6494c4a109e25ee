# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The read guard of tests/conftest.py (harness/read_guard.py): it sees a read beside the clone."""

import os

from harness import read_guard
from harness.data import REPO
from harness.read_guard import ReadGuard


def real(path):
    return os.path.realpath(str(path))


def test_the_session_guard_sees_a_read_of_the_clones_sibling():
    guard = read_guard.SESSION  # installed by tests/conftest.py for this run
    assert guard is not None
    sibling = real(REPO.parent / "sibling" / "x")
    if guard.off:  # the clone's parent is / or the temp directory; the summary says so
        assert guard.check(sibling) is None
    else:
        assert guard.check(sibling) == sibling
        assert guard.check(REPO / "tests" / "data" / "consensus") is None
        assert guard.check(REPO.parent / REPO.name / "galaxy.yml") is None


def test_a_guard_records_reads_beside_its_clone_and_nothing_else(tmp_path, monkeypatch):
    parent = tmp_path / "parent"
    clone = parent / "clone"
    (clone / "tests").mkdir(parents=True)
    (parent / "sibling").mkdir()
    (clone / "tests" / "link").symlink_to(parent / "sibling")  # a way out through a symlink
    guard = ReadGuard(clone, home=tmp_path / "home", tmp=tmp_path / "tmp")
    assert guard.off is None
    monkeypatch.chdir(clone)
    for event, path in [("open", str(parent / "sibling" / "x")),  # ../sibling/x
                        ("open", b"../sibling/y"),  # relative, as bytes
                        ("open", clone / "tests" / "link" / "z"),  # in the clone, resolving beside it
                        ("os.listdir", str(parent)),  # listing the siblings
                        ("open", str(parent / "sibling" / "x")),  # recorded once
                        ("open", str(clone / "tests" / "data")),  # the clone itself: fine
                        ("open", "/usr/lib/os-release"),  # beside nothing: fine
                        ("open", 3),  # a file descriptor: fine
                        ("os.scandir", None),  # the current directory (the clone): fine
                        ("exec", str(parent / "sibling" / "x"))]:  # not a read
        guard.audit(event, (path, "r", 0))
    assert guard.seen == [("open", real(parent / "sibling" / "x")), ("open", real(parent / "sibling" / "y")),
                          ("open", real(parent / "sibling" / "z")), ("os.listdir", real(parent))]


def test_a_guard_allows_home_and_temp_below_the_parent(tmp_path):
    clone = tmp_path / "clone"
    clone.mkdir()
    in_home = ReadGuard(clone, home=tmp_path, tmp="/nonexistent-tmp")  # a clone in ~: ~/.cache is fine
    assert in_home.check(tmp_path / ".cache" / "onionlab" / "x") is None
    assert in_home.check(tmp_path / "sibling" / "x") == real(tmp_path / "sibling" / "x")
    below = ReadGuard(clone, home=tmp_path / "home" / "me", tmp=tmp_path / "tmp")
    assert below.check(tmp_path / "home" / "me" / "x") is None and below.check(tmp_path / "tmp" / "x") is None
    assert below.check(tmp_path / "home" / "other") == real(tmp_path / "home" / "other")
    assert ReadGuard(clone, tmp=tmp_path).off and ReadGuard("/clone").off
