# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""pytest fixtures: real tor instances (see tor_instance.py)."""

import shutil

import pytest

from harness.tor_instance import TorInstance

PASSWORD = "correct horse battery staple"


@pytest.fixture
def tor(tmp_path):
    """A fresh tor with cookie auth (SAFECOOKIE and COOKIE) on a ControlPort and ControlSocket."""
    with TorInstance(tmp_path / "tor") as instance:
        yield instance


@pytest.fixture
def tor_password(tmp_path):
    """A fresh tor that accepts only HASHEDPASSWORD (PASSWORD)."""
    with TorInstance(tmp_path / "tor", password=PASSWORD, cookie=False) as instance:
        yield instance


@pytest.fixture
def tor_open(tmp_path):
    """A fresh tor with no authentication at all (NULL)."""
    with TorInstance(tmp_path / "tor", cookie=False) as instance:
        yield instance


@pytest.fixture(scope="session")
def shared_tor(tmp_path_factory):
    """One tor for read-only tests of a whole session."""
    base = tmp_path_factory.mktemp("shared-tor")
    with TorInstance(base) as instance:
        yield instance
    shutil.rmtree(str(base), ignore_errors=True)
