# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/ci/all.sh (lanes, a failed step, the closing summary) on a tree of small stand-in steps, and
tests/harness/hosts.py ensure_packages (what it installs, one apt-get at a time) with a stand-in
apt-get on PATH. No tor, no apt, no root."""

import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from harness import hosts

REPO = Path(__file__).resolve().parents[3]


def _tree(tmp_path, steps):
    """A clone-shaped tree: tests/ci/all.sh (the real one) and the given steps {name: body}; the
    package step and the 2.17 venv as stand-ins that leave a mark."""
    (tmp_path / "tests" / "ci").mkdir(parents=True)
    (tmp_path / "tests" / "harness").mkdir()
    (tmp_path / "tests" / "utils").mkdir()
    (tmp_path / "tests" / "ci" / "all.sh").write_text((REPO / "tests" / "ci" / "all.sh").read_text())
    (tmp_path / "tests" / "harness" / "hosts.py").write_text(
        "import sys\nopen('packages.mark', 'a').write(' '.join(sys.argv[1:]) + '\\n')\n")
    (tmp_path / "tests" / "utils" / "core-venv.sh").write_text("exit 0\n")
    for name, body in steps.items():
        (tmp_path / "tests" / "ci" / (name + ".sh")).write_text(textwrap.dedent(body))
    return tmp_path


STEPS = {
    "10-first": "# lane: one\necho first ran\n",
    "15-breaks": "# lane: two\necho breaks ran\nexit 3\n",
    "16-after": "# lane: two\necho after ran\n",
    "20-other": "echo other ran\n",
}


def _all(tree, *args, lanes=None):
    env = dict(os.environ, ONIONLAB_ROOT=str(tree), ONIONLAB_ISOLATED="off", PYTHON=sys.executable)
    env.pop("ONIONLAB_CI_LANES", None)
    if lanes:
        env["ONIONLAB_CI_LANES"] = lanes
    return subprocess.run(["bash", "tests/ci/all.sh"] + list(args), cwd=str(tree), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)


def _summary(out):
    """{step: result} from the closing list (up to the blank line after it)."""
    tail = out.split("==== steps (", 1)[1].split("\n\n", 1)[0]
    return dict(re.findall(r"^  (\S+) +(.+)$", tail, re.M))


@pytest.mark.parametrize("lanes", [None, "1"], ids=["lanes", "one-after-the-other"])
def test_a_failed_step_does_not_stop_its_lane(tmp_path, lanes):
    """15-breaks fails; 16-after, in the same lane, runs all the same; the summary lists all four
    steps with their result and time; the run fails."""
    tree = _tree(tmp_path, STEPS)
    proc = _all(tree, lanes=lanes)
    print(proc.stdout)
    assert proc.returncode == 1
    assert "after ran" in proc.stdout, "the lane stopped at its failed step"
    summary = _summary(proc.stdout)
    assert list(summary) == ["10-first", "15-breaks", "16-after", "20-other"]
    assert re.match(r"FAILED after \d+s \(exit 3\)$", summary["15-breaks"])
    for name in ("10-first", "16-after", "20-other"):
        assert re.match(r"passed in \d+s$", summary[name]), summary
    assert proc.stdout.rstrip().splitlines()[-1] == "steps: 3 passed, 1 failed"
    # what the failed step's log says, repeated after the list (CI keeps only the tail): here its last lines
    why = proc.stdout.split("==== why 15-breaks failed (its log, .build/ci/15-breaks.log):\n", 1)[1]
    assert "  breaks ran" in why.splitlines() and "  ==== 15-breaks FAILED after" in why, why
    assert "==== why" not in proc.stdout.split("==== why 15-breaks", 1)[1]   # only the failed step
    for name in STEPS:
        assert (tree / ".build" / "ci" / (name + ".log")).exists()
    # the Debian packages of every step were asked for once, before any step
    assert (tree / "packages.mark").read_text() == "ensure-packages\n"


def test_a_failed_pytest_step_is_named_by_its_failed_tests(tmp_path):
    """A step whose log holds pytest's short summary: the closing lines repeat it and pytest's first E lines."""
    steps = dict(STEPS, **{"15-breaks": textwrap.dedent("""\
        # lane: two
        echo '..F.'
        echo 'E       AssertionError: backend1 did not come back'
        echo '=========================== short test summary info ============================'
        echo 'FAILED tests/integration/test_x.py::test_y - AssertionError: backend1 did not come back'
        echo '1 failed, 3 passed in 12.00s'
        exit 1
        """)})
    proc = _all(_tree(tmp_path, steps))
    assert proc.returncode == 1
    why = proc.stdout.split("==== why 15-breaks failed (its log, .build/ci/15-breaks.log):\n", 1)[1].splitlines()
    assert why[:6] == [
        "  =========================== short test summary info ============================",
        "  FAILED tests/integration/test_x.py::test_y - AssertionError: backend1 did not come back",
        "  1 failed, 3 passed in 12.00s", "  the first error lines (E):",
        "  E       AssertionError: backend1 did not come back", "steps: 3 passed, 1 failed"], why


def test_all_passed_and_one_step(tmp_path):
    steps = dict(STEPS, **{"15-breaks": "# lane: two\necho fine\n"})
    tree = _tree(tmp_path, steps)
    proc = _all(tree)
    assert proc.returncode == 0, proc.stdout
    assert "==== all steps passed in" in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1] == "steps: 4 passed, 0 failed"
    one = _all(tree, "16-after")
    assert one.returncode == 0 and one.stdout.rstrip().splitlines()[-1] == "steps: 1 passed, 0 failed"
    assert list(_summary(one.stdout)) == ["16-after"]
    (tree / "tests" / "ci" / "16-after.sh").write_text("exit 2\n")
    one = _all(tree, "16-after")
    assert one.returncode == 1 and one.stdout.rstrip().splitlines()[-1] == "steps: 0 passed, 1 failed"


def test_a_step_killed_before_its_end_counts_as_failed(tmp_path):
    """A step whose shell is killed leaves no result: listed as FAILED, the run fails."""
    steps = dict(STEPS, **{"15-breaks": "# lane: two\nkill -9 $PPID\n"})
    tree = _tree(tmp_path, steps)
    proc = _all(tree)
    assert proc.returncode == 1, proc.stdout
    assert _summary(proc.stdout)["15-breaks"].startswith("FAILED"), proc.stdout


# -- ensure_packages ----------------------------------------------------------------------------

def test_every_skip_reason_of_the_steps_has_its_package():
    """What the tests of the CI steps need of this machine beyond .venv (each a skip, i.e. a failed
    step, without it) is in the groups `ensure-packages` installs."""
    wanted = {"onionbalance": "onionbalance", "tor-gencert": "tor", "/usr/bin/prometheus": "prometheus",
              "/usr/bin/promtool": "prometheus", "curl": "curl", "systemd-nspawn": "systemd-container",
              "debootstrap": "debootstrap", "ssh": "openssh-client",
              "/usr/bin/prometheus-alertmanager": "prometheus-alertmanager", "/usr/bin/amtool": "prometheus-alertmanager"}
    every = {cmd: pkg for group in hosts.PACKAGE_GROUPS for cmd, pkg in hosts.CONTROLLER_PACKAGES[group].items()}
    assert {cmd: every.get(cmd) for cmd in wanted} == wanted


def _fake_apt(tmp_path, fail_install_first=False):
    """An apt-get on PATH that logs its calls (one at a time, or it says so) and 'installs' a
    package by making the commands NAME and NAME2 in bin/."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "apt.log"
    script = bindir / "apt-get"
    script.write_text(textwrap.dedent("""\
        #!/bin/sh
        log=%(log)s
        if [ -e %(tmp)s/busy ]; then echo OVERLAP >> "$log"; fi
        touch %(tmp)s/busy
        echo "$*" >> "$log"
        sleep 0.3
        rm -f %(tmp)s/busy
        case "$*" in
          *" update "*|*" update") exit 0 ;;
        esac
        if [ -n "%(fail)s" ] && [ ! -e %(tmp)s/updated ]; then touch %(tmp)s/updated; exit 100; fi
        for word in "$@"; do
          case "$word" in onionlab-test-*) for c in "$word" "${word}2"; do printf '#!/bin/sh\\n' > %(bin)s/"$c"; chmod +x %(bin)s/"$c"; done ;; esac
        done
        """) % {"log": log, "tmp": tmp_path, "bin": bindir, "fail": "yes" if fail_install_first else ""})
    script.chmod(0o755)
    return bindir, log


@pytest.fixture
def fake_packages(tmp_path, monkeypatch):
    monkeypatch.setenv("ONIONLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(hosts, "CONTROLLER_PACKAGES", {
        "bed": {"onionlab-test-a": "onionlab-test-a"},
        "tests": {"onionlab-test-b": "onionlab-test-b", "onionlab-test-b2": "onionlab-test-b"}})
    monkeypatch.setattr(hosts, "PACKAGE_GROUPS", ("bed", "tests"))
    monkeypatch.setattr(os, "geteuid", lambda: 0)


def test_ensure_packages_one_install_at_a_time(tmp_path, monkeypatch, fake_packages):
    """Two callers at once (the CI lanes): one apt-get install of both packages, never two apt-gets
    at the same time, and apt's own lock is waited for; a second call installs nothing."""
    bindir, log = _fake_apt(tmp_path)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    results = []
    threads = [threading.Thread(target=lambda: results.append(hosts.ensure_packages(hosts.PACKAGE_GROUPS)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    calls = log.read_text().splitlines()
    print(calls)
    assert "OVERLAP" not in calls
    assert len(calls) == 1 and "DPkg::Lock::Timeout=" in calls[0]
    assert calls[0].endswith("install -y -qq --no-install-recommends onionlab-test-a onionlab-test-b")
    assert sorted(results) == [[], ["onionlab-test-a", "onionlab-test-b"]]
    assert hosts.ensure_packages(hosts.PACKAGE_GROUPS) == []


def test_ensure_packages_updates_the_lists_when_the_install_fails(tmp_path, monkeypatch, fake_packages):
    """A fresh machine has no package lists: the first install fails, apt-get update, then it works.
    The default group is the bed's alone."""
    bindir, log = _fake_apt(tmp_path, fail_install_first=True)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    assert hosts.ensure_packages() == ["onionlab-test-a"]
    calls = [c.split(" ", 2)[2] for c in log.read_text().splitlines()]
    assert calls == ["install -y -qq --no-install-recommends onionlab-test-a", "update -qq",
                     "install -y -qq --no-install-recommends onionlab-test-a"]


def test_inotify_instances_raised_never_lowered(tmp_path):
    """Many containers at once need more inotify instances than the kernel's default 128 (a docs-bed
    host's systemd exited with 'Too many open files' in a full ./run test): raised before a bed boots."""
    limit = tmp_path / "max_user_instances"
    limit.write_text("128\n")
    assert hosts.ensure_inotify_instances(1024, path=str(limit)) == 1024
    assert limit.read_text() == "1024\n"
    limit.write_text("8192\n")
    assert hosts.ensure_inotify_instances(1024, path=str(limit)) == 8192
    assert limit.read_text() == "8192\n"
    assert hosts.ensure_inotify_instances(1024, path=str(tmp_path / "missing")) is None


@pytest.mark.parametrize("lane, want", [("beds", ["tests/a.py", "tests/b.py"]), ("checks", ["tests/c.py"])])
def test_beds_lines_run_in_the_lane_they_name(tmp_path, lane, want):
    """tests/ci/beds.sh LANE runs the files of beds.txt with no second word or 'beds' (step 15-beds), or those
    marked 'checks' (step 13-beds-checks); pytest is a stand-in on PATH that prints what it was given."""
    tree = _tree(tmp_path, {})
    (tree / "tests" / "ci" / "beds.sh").write_text((REPO / "tests" / "ci" / "beds.sh").read_text())
    (tree / "tests" / "ci" / "beds.txt").write_text("# comment\ntests/a.py\n\ntests/c.py checks\ntests/b.py beds\n")
    (tree / ".build").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text('#!/bin/sh\nif [ "$1" = -m ]; then echo "pytest: $*"; exit 0; fi\n'
                                    'exec %s "$@"\n' % sys.executable)
    (bin_dir / "python").chmod(0o755)
    env = dict(os.environ, ONIONLAB_ROOT=str(tree), PATH="%s:%s" % (bin_dir, os.environ["PATH"]))
    proc = subprocess.run(["bash", str(tree / "tests" / "ci" / "beds.sh"), lane, "-x"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ran = [w for w in proc.stdout.split() if w.startswith("tests/")]
    assert ran == want and proc.stdout.rstrip().endswith("-x"), proc.stdout


def test_every_bed_file_exists_and_names_a_lane():
    """Each line of the real tests/ci/beds.txt: an existing test file, then nothing, 'beds' or 'checks', and each
    lane's step exists and names that lane."""
    lines = [line.split() for line in (REPO / "tests" / "ci" / "beds.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert lines and all((REPO / words[0]).is_file() and words[1:] in ([], ["beds"], ["checks"]) for words in lines)
    for step, lane in (("15-beds", "beds"), ("13-beds-checks", "checks")):
        text = (REPO / "tests" / "ci" / (step + ".sh")).read_text()
        assert "# lane: %s\n" % lane in text and 'beds.sh" %s "$@"' % lane in text, step
