# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-wide setup: make the repository importable as ansible_collections.onionlab.tor, and
fail the run when the pytest process read anything beside the clone.

The repository root is the collection root; Ansible code imports it by its collection name,
so a symlink .build/collections/ansible_collections/onionlab/tor -> repo is made and put on
sys.path (and ANSIBLE_COLLECTIONS_PATH for ansible-playbook runs started by tests).

A user's clone has nothing beside it: an audit hook (harness/read_guard.py) records every file
opened or directory listed inside the clone's parent directory but outside the clone, from here
to the end of the session; when it recorded any, the run fails (exit status 1) and lists them.
Test data is in tests/data/ (harness/data.py).
"""

import os
import resource
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
COLLECTIONS = REPO / ".build" / "collections"
sys.path.insert(0, str(REPO / "tests"))

from harness import read_guard  # noqa: E402

READ_GUARD = read_guard.install_session(REPO)


def _link():
    parent = COLLECTIONS / "ansible_collections" / "onionlab"
    parent.mkdir(parents=True, exist_ok=True)
    link = parent / "tor"
    if not (link.is_symlink() and link.resolve() == REPO):
        tmp = parent / ("tor.%d" % os.getpid())
        if tmp.is_symlink():
            tmp.unlink()
        tmp.symlink_to(REPO)
        os.replace(str(tmp), str(link))


_link()
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
os.environ["ANSIBLE_COLLECTIONS_PATH"] = str(COLLECTIONS)

from harness.tor_fixtures import *  # noqa: E402,F401,F403  (fixtures)
from harness.fixtures import *  # noqa: E402,F401,F403  (privnet, hostbed)


# CPU seconds per test phase (this process and the children it waited for: ansible-playbook runs, tor-gencert, ...;
# not daemons such as tor, which are not waited for until their teardown): the closing lines name the costliest,
# since the lanes share 2 cores and CPU, not waiting, decides the wall time (docs/maintaining.md, Lanes).
CPU_SECONDS = {}
CPU_TOP = 12


def _cpu_now():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _cpu_of(item, phase):
    t0 = _cpu_now()
    yield
    CPU_SECONDS[(item.nodeid, phase)] = _cpu_now() - t0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _cpu_of(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _cpu_of(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield from _cpu_of(item, "teardown")


def _cpu_summary(terminalreporter):
    if len(CPU_SECONDS) < 2:
        return
    terminalreporter.write_sep("=", "costliest %d by CPU seconds (of %.0f s in all, this process and its waited-for "
                               "children)" % (CPU_TOP, sum(CPU_SECONDS.values())))
    for (nodeid, phase), cpu in sorted(CPU_SECONDS.items(), key=lambda kv: -kv[1])[:CPU_TOP]:
        terminalreporter.write_line("%7.1fs cpu %-8s %s" % (cpu, phase, nodeid))
    by_file = {}
    for (nodeid, _), cpu in CPU_SECONDS.items():
        path = nodeid.split("::")[0]
        by_file[path] = by_file.get(path, 0.0) + cpu
    terminalreporter.write_line("by file: " + "; ".join(
        "%s %.0fs" % (path.rsplit("/", 1)[-1], cpu) for path, cpu in sorted(by_file.items(), key=lambda kv: -kv[1])[:10]))


@pytest.hookimpl(trylast=True)  # after the session fixtures' teardown, which may read too
def pytest_sessionfinish(session):
    if READ_GUARD.seen and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    _cpu_summary(terminalreporter)
    guard = READ_GUARD
    if guard.off:
        terminalreporter.write_line("read guard: off, %s" % guard.off)
    elif guard.seen:
        terminalreporter.write_sep("=", "FAILED: read beside the clone (%s, outside %s)" % (guard.parent, guard.repo),
                                   red=True)
        for event, path in guard.seen:
            terminalreporter.write_line("  %s %s" % (event, path))
        terminalreporter.write_line("a user's clone has nothing beside it: put what the tests need in the "
                                    "repository (test data: tests/data/)")
    else:
        terminalreporter.write_line("read guard: nothing opened or listed in %s outside the clone" % guard.parent)
