# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_tor/tor_version.py: the tor role's tor_version (issue 39, versions as code): the values it takes, the apt pin,
the versions read from dpkg/rpm, tor --version and the running tor's /proc/PID/exe, and the new version's tor
reading the torrc before it is installed. Commands are scripted here (argv -> reply); the real ones run on bed
hosts in tests/integration/roles/test_role_tor_version.py."""

import os

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import tor_version as tv


def scripted(replies, seen=None):
    """run(argv, cwd=None) answering by the argv's first words."""
    def run(argv, cwd=None):
        if seen is not None:
            seen.append((list(argv), cwd))
        for prefix, reply in replies:
            if list(argv[:len(prefix)]) == list(prefix):
                return reply(argv, cwd) if callable(reply) else reply
        return 127, "", "no such command: %s" % argv[0]
    return run


@pytest.mark.parametrize("value", ["present", "latest", "0.4.9.11-1~deb12u1", "1:0.4.8.16-1", "0.4.9.11-1.el9",
                                   "0.4.9.11"])
def test_accepted_values(value):
    assert tv.problem(value) is None


@pytest.mark.parametrize("value", ["", "Present", "0.4.9.11 ; rm -rf /", "0.4.9.11\nPin-Priority: 1",
                                   "tor=0.4.9.11", "-1", "0.4.9.11 ", None, 4.9, "v0.4.9"])
def test_refused_values_say_what_is_wanted(value):
    said = tv.problem(value)
    assert said and "present, latest or an exact package version" in said


def test_pin_holds_one_package_at_one_version_above_every_archive():
    text = tv.pin_text("tor", "0.4.9.11-1~deb12u1")
    assert text.startswith(tv.PIN_HEADER)
    assert text.splitlines()[1:] == ["Package: tor", "Pin: version 0.4.9.11-1~deb12u1", "Pin-Priority: 1001"]


def test_installed_version_debian_and_redhat():
    run = scripted([(["dpkg-query"], (0, "install ok installed 0.4.9.11-1~deb12u1", ""))])
    assert tv.installed_version(run, "Debian", "tor") == "0.4.9.11-1~deb12u1"
    run = scripted([(["dpkg-query"], (0, "deinstall ok config-files 0.4.9.11-1~deb12u1", ""))])
    assert tv.installed_version(run, "Debian", "tor") is None
    run = scripted([(["dpkg-query"], (1, "", "dpkg-query: no packages found matching tor"))])
    assert tv.installed_version(run, "Debian", "tor") is None
    run = scripted([(["rpm", "-q"], (0, "0.4.8.16-1.el9", ""))])
    assert tv.installed_version(run, "RedHat", "tor") == "0.4.8.16-1.el9"
    run = scripted([(["rpm", "-q"], (1, "package tor is not installed", ""))])
    assert tv.installed_version(run, "RedHat", "tor") is None


@pytest.mark.parametrize("out, version", [
    ("Tor version 0.4.9.11.\nThis build of Tor is covered by the GNU GPL\n", "0.4.9.11"),
    ("Tor version 0.4.9.2-alpha.\n", "0.4.9.2-alpha"),
    ("Tor version 0.4.8.16 (git-3d4d5d8c5a8f9ab1).\n", "0.4.8.16"),
    ("Jan 01 [notice] Tor 0.4.9.11 running\n", None),
])
def test_binary_version(out, version):
    assert tv.binary_version(scripted([(["/usr/bin/tor", "--version"], (0, out, ""))]), "/usr/bin/tor") == version


def test_running_tor_replaced_on_disk_is_said():
    run = scripted([(["systemctl", "show"], (0, "812\n", "")),
                    (["/proc/812/exe", "--version"], (0, "Tor version 0.4.9.10.\n", ""))])
    now = tv.running(run, "tor@default.service", readlink=lambda p: "/usr/bin/tor (deleted)")
    assert now == {"pid": 812, "version": "0.4.9.10", "replaced": True}
    said = tv.stale_message("0.4.9.11", now, "0.4.9.11-1")
    assert said.startswith("the running tor (PID 812, tor 0.4.9.10) started before its binary was replaced on disk "
                           "(now tor 0.4.9.11, package 0.4.9.11-1)") and "not restarted" in said
    fresh = tv.running(scripted([(["systemctl", "show"], (0, "812\n", "")),
                                 (["/proc/812/exe", "--version"], (0, "Tor version 0.4.9.11.\n", ""))]),
                       "tor@default.service", readlink=lambda p: "/usr/bin/tor")
    assert fresh == {"pid": 812, "version": "0.4.9.11", "replaced": False}
    assert tv.stale_message("0.4.9.11", fresh) is None
    assert tv.running(scripted([(["systemctl", "show"], (0, "0\n", ""))]), "tor@default.service") is None


def test_new_version_reads_the_torrc_before_it_is_installed(tmp_path):
    seen = []

    def download(argv, cwd):
        (tmp_path / "tor_0.4.9.12-1_amd64.deb").write_bytes(b"!<arch>")
        return 0, "Get:1 tor 0.4.9.12-1", ""

    def unpack(argv, cwd):
        root = argv[-1]
        os.makedirs(os.path.join(root, "usr", "bin"))
        os.makedirs(os.path.join(root, "usr", "share", "tor"))
        open(os.path.join(root, "usr", "bin", "tor"), "w").close()
        open(os.path.join(root, "usr", "share", "tor", "tor-service-defaults-torrc"), "w").close()
        return 0, "", ""

    root = str(tmp_path / "root")
    ok = scripted([(["apt-get", "download"], download), (["dpkg-deb", "-x"], unpack),
                   ([root + "/usr/bin/tor", "--verify-config"], (0, "Configuration was valid\n", ""))], seen)
    assert tv.verify_with_package(ok, "0.4.9.12-1", "/s/torrc", str(tmp_path)) == (None, False)
    assert seen[0] == (["apt-get", "download", "-q", "tor=0.4.9.12-1"], str(tmp_path))
    assert seen[-1][0] == [root + "/usr/bin/tor", "--verify-config", "--hush", "-f", "/s/torrc", "--defaults-torrc",
                           root + "/usr/share/tor/tor-service-defaults-torrc"]

    refused = scripted([(["apt-get", "download"], (0, "", "")), (["dpkg-deb", "-x"], (0, "", "")),
                        ([root + "/usr/bin/tor", "--verify-config"],
                         (1, "[warn] Failed to parse/validate config: Unknown option 'HiddenServiceVersion'.\n"
                             "[err] Reading config failed--see warnings above.\n", ""))])
    said, missing = tv.verify_with_package(refused, "0.4.9.12-1", "/s/torrc", str(tmp_path))
    assert not missing and said.startswith("tor 0.4.9.12-1 refuses the torrc") and "HiddenServiceVersion" in said


def test_a_version_not_in_the_sources_is_said(tmp_path):
    run = scripted([(["apt-get", "download"], (100, "", "E: Version '9.9' for 'tor' was not found"))])
    said, missing = tv.verify_with_package(run, "9.9", "/s/torrc", str(tmp_path))
    assert missing and "could not be downloaded" in said and "apt-cache policy tor" in said and "was not found" in said
