# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The watchdog_library lookup: the watchdog program and every file of the stdlib library as one JSON text (the
onion_watchdog role's one file; issue 41: was a map/regex_replace/zip chain in the role)."""

import glob
import json
import os

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.onionlab.tor.plugins.lookup import watchdog_library as wl

UTILS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(wl.__file__))), "module_utils")


def test_every_library_file_and_the_program_under_their_module_names():
    (text,) = wl.LookupModule().run([])
    data = json.loads(text)
    library = sorted(glob.glob(os.path.join(UTILS, "_tor", "*.py")))
    assert len(data) == len(library) + 1 and len(library) > 20
    for path in library:
        with open(path) as handle:
            assert data[wl.PACKAGE + "._tor." + os.path.basename(path)[:-3]] == handle.read()
    with open(os.path.join(UTILS, "_onion_watchdog.py")) as handle:
        assert data[wl.PACKAGE + "._onion_watchdog"] == handle.read()
    assert text == json.dumps(data, sort_keys=True)      # the same text on every run: the copy reports no change


def test_terms_refused_and_an_unreadable_file_named(tmp_path):
    with pytest.raises(AnsibleLookupError, match="takes no terms"):
        wl.LookupModule().run(["x"])
    (tmp_path / "_tor").mkdir()
    (tmp_path / "_tor" / "a.py").write_bytes(b"\xff\xfe")
    with pytest.raises(AnsibleLookupError, match="cannot read %s" % (tmp_path / "_tor" / "a.py")):
        wl.library(str(tmp_path))
