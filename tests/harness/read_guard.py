# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nothing beside the clone is read: an audit hook (sys.addaudithook) on the events "open",
"os.listdir" and "os.scandir" that records every path which resolves (symlinks followed) inside
the clone's parent directory but outside the clone. A user's clone has nothing beside it, so a
test that reads ../something passes here and fails there.

tests/conftest.py installs one for the pytest process and fails the run when it recorded anything.
The processes that tests start (ansible-playbook, tor, the fuzz targets, ...) are not seen by it:
the CI steps run in a mount namespace where the parent holds only the clone (tests/utils/isolated.sh).

Allowed although inside the parent: the temp directory and the home directory when they lie below
it, and the dot-entries of the parent when it is the home directory (~/.cache/onionlab, ~/.ansible).
The guard is off (``off`` says why) when the parent is / or the temp directory itself: then
everything the tests write to temp files or read from the system would count.
"""

import os
import sys
import tempfile
import threading

EVENTS = frozenset(("open", "os.listdir", "os.scandir"))
SESSION = None  # the guard install_session() put in place (tests/conftest.py)


def _below(path, root):
    """path is root or lies below it (both absolute and resolved)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class ReadGuard(object):
    def __init__(self, repo, home=None, tmp=None):
        self.repo = os.path.realpath(str(repo))
        self.parent = os.path.dirname(self.repo)
        home = os.path.realpath(str(home or os.path.expanduser("~")))
        tmp = os.path.realpath(str(tmp or tempfile.gettempdir()))
        self.allowed = [self.repo]
        self.allow_dot_entries = False
        self.off = None
        if self.parent == os.sep:
            self.off = "the clone's parent directory is /"
        elif tmp == self.parent:
            self.off = "the clone's parent directory is the temp directory %s" % tmp
        else:
            if _below(tmp, self.parent):
                self.allowed.append(tmp)
            if home == self.parent:
                self.allow_dot_entries = True
            elif _below(home, self.parent):
                self.allowed.append(home)
        self.seen = []  # (event, resolved path), in the order first seen
        self._seen = set()
        self._local = threading.local()

    def check(self, path):
        """The resolved path when path (as given to open(), os.listdir() or os.scandir(); relative
        to the current directory) lies inside the clone's parent directory but outside the clone,
        else None."""
        if self.off or isinstance(path, int):
            return None
        real = os.path.realpath(os.fsdecode(os.fspath("." if path is None else path)))
        if not _below(real, self.parent) or any(_below(real, root) for root in self.allowed):
            return None
        if self.allow_dot_entries and real != self.parent \
                and os.path.relpath(real, self.parent).split(os.sep, 1)[0].startswith("."):
            return None
        return real

    def audit(self, event, args):
        """The audit hook: record what check() finds. Never raises (a raising audit hook would make
        the open itself fail)."""
        if event not in EVENTS or getattr(self._local, "busy", False):
            return
        self._local.busy = True
        try:
            hit = self.check(args[0] if args else None)
            if hit is not None and (event, hit) not in self._seen:
                self._seen.add((event, hit))
                self.seen.append((event, hit))
        except Exception:
            pass
        finally:
            self._local.busy = False

    def install(self):
        """Add the audit hook to this interpreter (for good: audit hooks cannot be removed)."""
        if not self.off:
            sys.addaudithook(self.audit)
        return self


def install_session(repo):
    """The guard of this interpreter, installed once (a second call returns the same one)."""
    global SESSION
    if SESSION is None:
        SESSION = ReadGuard(repo).install()
    return SESSION
