# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""sandbox.py: where a tor may write, from recorded /proc/PID/mountinfo, attr/current and AppArmor
profiles (Debian 12's tor@default under systemd-nspawn, the bed's stock host)."""

import os

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import sandbox as sb

# /proc/<tor>/mountinfo of Debian's tor@default (ProtectSystem=full, ReadOnlyDirectories=/,
# ReadWriteDirectories=-/proc -/var/lib/tor -/var/log/tor -/run, PrivateTmp, ProtectHome), recorded
# on the stock host (some /sys and /proc sub-mounts left out)
STOCK = """\
551 512 0:58 / / ro,nosuid,relatime shared:145 master:53 - overlay overlay rw,lowerdir=/root/.cache/onionlab/rootfs-bookworm-77271434ec,upperdir=/tmp/mod14/bed/host1/upper,workdir=/tmp/mod14/bed/host1/work,uuid=on
552 551 0:60 / /tmp rw,nosuid,nodev shared:146 master:118 - tmpfs tmpfs rw,size=2468368k,nr_inodes=409600
553 551 0:22 / /sys ro,nosuid,nodev,noexec,relatime shared:148 master:119 - sysfs sysfs rw
563 554 0:38 / /sys/fs/cgroup/unified ro,nosuid,nodev,noexec,relatime shared:158 master:137 - cgroup2 cgroup rw
571 551 0:63 / /run rw,nosuid,nodev shared:161 master:122 - tmpfs tmpfs rw,size=4936736k,nr_inodes=819200,mode=755
572 571 0:63 /host /run/host ro,nosuid,nodev,noexec shared:162 master:122 - tmpfs tmpfs rw,size=4936736k,nr_inodes=819200,mode=755
577 571 254:0 /usr/lib/os-release /run/host/os-release rw,nosuid,relatime shared:165 master:123 - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534
579 571 0:68 / /run/lock rw,nosuid,nodev,noexec,relatime shared:167 master:139 - tmpfs tmpfs rw,size=5120k
583 551 0:66 / /proc rw,nosuid,nodev,noexec,relatime shared:171 master:126 - proc proc rw
592 551 0:74 / /dev ro,nosuid,noexec shared:181 - tmpfs tmpfs rw,size=4096k,nr_inodes=65536,mode=755
594 592 0:62 / /dev/shm rw,nosuid,nodev shared:183 master:121 - tmpfs tmpfs rw,size=2468368k,nr_inodes=409600
566 551 0:63 /host/inaccessible/dir /home ro,nosuid,nodev,noexec shared:229 master:122 - tmpfs tmpfs rw,size=4936736k,nr_inodes=819200,mode=755
567 551 0:63 /host/inaccessible/dir /root ro,nosuid,nodev,noexec shared:230 master:122 - tmpfs tmpfs rw,size=4936736k,nr_inodes=819200,mode=755
580 552 0:60 /systemd-private-6470bf7081184f019fdffa93f5565ca4-tor@default.service-l4Hrlf/tmp /tmp rw,nosuid,nodev shared:147 master:118 - tmpfs tmpfs rw,size=2468368k,nr_inodes=409600
581 551 0:58 /var/lib/tor /var/lib/tor rw,nosuid,relatime shared:231 master:53 - overlay overlay rw,lowerdir=/root/.cache/onionlab/rootfs-bookworm-77271434ec,upperdir=/tmp/mod14/bed/host1/upper,workdir=/tmp/mod14/bed/host1/work,uuid=on
582 551 0:58 /var/log/tor /var/log/tor rw,nosuid,relatime shared:232 master:53 - overlay overlay rw,lowerdir=/root/.cache/onionlab/rootfs-bookworm-77271434ec,upperdir=/tmp/mod14/bed/host1/upper,workdir=/tmp/mod14/bed/host1/work,uuid=on
597 551 0:58 /var/tmp/systemd-private-6470bf7081184f019fdffa93f5565ca4-tor@default.service-p27qNi/tmp /var/tmp rw,nosuid,relatime shared:233 master:53 - overlay overlay rw,lowerdir=/root/.cache/onionlab/rootfs-bookworm-77271434ec,upperdir=/tmp/mod14/bed/host1/upper,workdir=/tmp/mod14/bed/host1/work,uuid=on
"""
# the same tor after a drop-in with ReadWritePaths=/srv/onion (daemon-reload, restart): one more line
DROP_IN = STOCK + ("580 551 0:58 /srv/onion /srv/onion rw,nosuid,relatime shared:232 master:53 - overlay overlay "
                   "rw,lowerdir=/x,upperdir=/y,workdir=/z,uuid=on\n")
UNCONFINED = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"
CGROUP = ("9:name=systemd:/system.slice/system-tor.slice/tor@default.service\n8:pids:/\n"
          "0::/system.slice/system-tor.slice/tor@default.service\n")
# Debian 12's /etc/apparmor.d/system_tor (package tor 0.4.9)
SYSTEM_TOR = """\
# vim:syntax=apparmor
#include <tunables/global>

profile system_tor flags=(attach_disconnected) {
  #include <abstractions/tor>

  owner /var/lib/tor/** rwk,
  owner /var/lib/tor/ r,
  owner /var/log/tor/* w,

  # During startup, tor (as root) tries to open various things such as
  # directories via check_private_dir().  Let it.
  /var/lib/tor/** r,

  /{,var/}run/tor/ r,
  /{,var/}run/tor/control w,
  /{,var/}run/tor/socks w,
  /{,var/}run/tor/tor.pid w,
  /{,var/}run/tor/control.authcookie w,
  /{,var/}run/tor/control.authcookie.tmp rw,
  /{,var/}run/systemd/notify w,

  # Site-specific additions and overrides. See local/README for details.
  #include <local/system_tor>
}
"""


def test_parse_mountinfo():
    mounts = sb.parse_mountinfo(STOCK + "garbage line\n")
    assert len(mounts) == 17
    assert (mounts[0].mount_point, mounts[0].read_only, mounts[0].fstype) == ("/", True, "overlay")
    assert [m.mount_point for m in mounts if m.private_tmp] == ["/tmp", "/var/tmp"]
    escaped = sb.parse_mountinfo("30 22 0:5 / /srv/my\\040dir rw - ext4 /dev/x rw\n")
    assert escaped[0].mount_point == "/srv/my dir"
    assert sb.parse_mountinfo("31 22 0:5 / /srv rw - ext4 /dev/x ro\n")[0].read_only   # the file system's ro


@pytest.mark.parametrize("path, mount_point, read_only", [
    ("/srv/onion/web", "/", True),
    ("/var/lib/tor/web", "/var/lib/tor", False),
    ("/var/lib/tor", "/var/lib/tor", False),
    ("/var/lib/torx/web", "/", True),
    ("/home/alice/web", "/home", True),
    ("/run/tor/x", "/run", False),
])
def test_mount_of(path, mount_point, read_only):
    mount = sb.mount_of(sb.parse_mountinfo(STOCK), path)
    assert (mount.mount_point, mount.read_only) == (mount_point, read_only)


def test_writable_places():
    assert sb.writable_places(sb.parse_mountinfo(STOCK)) == ["/run", "/var/lib/tor", "/var/log/tor"]
    assert sb.writable_places(sb.parse_mountinfo(DROP_IN)) == ["/run", "/srv/onion", "/var/lib/tor", "/var/log/tor"]
    assert sb.writable_places(sb.parse_mountinfo(UNCONFINED)) == ["/"]


def test_refusal_names_places_and_fix():
    box = sb.Sandbox(42, sb.parse_mountinfo(STOCK), unit="tor@default.service")
    msg = box.refusal("/srv/onion/web")
    assert msg == ("service directory /srv/onion/web is on /, which is read-only for tor (PID 42, unit "
                   "tor@default.service): tor cannot write it, and would refuse the configuration or exit. tor may "
                   "write under: /run, "
                   "/var/lib/tor, /var/log/tor. Use a directory under /var/lib/tor, or let tor write there with a "
                   "drop-in for its unit (systemctl edit tor@default.service: [Service] ReadWritePaths=/srv/onion), "
                   "then restart tor; nothing was sent to tor")
    assert box.refusal("/var/lib/tor/web") is None
    assert "private /tmp" in box.refusal("/tmp/web")
    assert sb.Sandbox(42, sb.parse_mountinfo(DROP_IN)).refusal("/srv/onion/web") is None
    assert sb.Sandbox(42, sb.parse_mountinfo(UNCONFINED)).refusal("/srv/onion/web") is None
    assert sb.Sandbox(42).refusal("/srv/onion/web") is None   # nothing known: nothing refused


def test_apparmor():
    assert sb.parse_apparmor_label("system_tor (enforce)\n") == ("system_tor", "enforce")
    assert sb.parse_apparmor_label("unconfined\n") == ("unconfined", None)
    assert sb.parse_apparmor_label("") == (None, None)
    assert sb.apparmor_write_dirs(SYSTEM_TOR) == ["/var/lib/tor"]
    local = "# site\nowner /srv/onion/** rwk,\n/{srv,opt}/hs/** rw,\n/data/*/x/** rw,\n/ro/** r,\n"
    assert sb.apparmor_write_dirs(SYSTEM_TOR, local) == ["/var/lib/tor", "/srv/onion", "/srv/hs", "/opt/hs"]
    box = sb.Sandbox(7, sb.parse_mountinfo(UNCONFINED), profile="system_tor", mode="enforce",
                     apparmor_dirs=["/var/lib/tor"])
    assert box.refusal("/var/lib/tor/web") is None
    assert box.refusal("/srv/onion/web") == (
        "service directory /srv/onion/web is outside what tor (PID 7) may write under its AppArmor profile "
        "system_tor (enforce): /var/lib/tor. tor cannot write it, and would refuse the configuration or exit. "
        "Use a directory under "
        "/var/lib/tor, or add the line 'owner /srv/onion/web/** rwk,' to /etc/apparmor.d/local/system_tor and "
        "reload the profile (apparmor_parser -r /etc/apparmor.d/system_tor); nothing was sent to tor")


def test_unit_of_cgroup():
    assert sb.unit_of_cgroup(CGROUP) == "tor@default.service"
    assert sb.unit_of_cgroup("0::/user.slice/user-0.slice/session-3.scope\n") is None
    assert sb.unit_of_cgroup("") is None


def _proc(tmp_path, exe, files):
    base = tmp_path / "proc" / "42"
    (base / "attr").mkdir(parents=True)
    os.symlink(exe, str(base / "exe"))
    for name, text in files.items():
        (base / name).write_text(text)
    return str(tmp_path / "proc")


def test_read_from_proc(tmp_path):
    aa = tmp_path / "apparmor.d"
    (aa / "local").mkdir(parents=True)
    (aa / "system_tor").write_text(SYSTEM_TOR)
    (aa / "local" / "system_tor").write_text("owner /srv/onion/** rwk,\n")
    proc = _proc(tmp_path, "/usr/bin/tor", {"mountinfo": STOCK, "cgroup": CGROUP,
                                            "attr/current": "system_tor (enforce)\n"})
    box = sb.Sandbox.read("42", proc=proc, apparmor_dir=str(aa))
    assert (box.pid, box.unit, box.profile, box.mode) == (42, "tor@default.service", "system_tor", "enforce")
    assert box.apparmor_dirs == ["/var/lib/tor", "/srv/onion"]
    assert "read-only for tor (PID 42, unit tor@default.service)" in box.refusal("/srv/onion/web")


def test_read_only_a_tor_binary(tmp_path):
    proc = _proc(tmp_path, "/usr/bin/python3.11", {"mountinfo": STOCK})
    assert sb.Sandbox.read(42, proc=proc) is None       # not tor: a fake, another namespace's PID
    assert sb.Sandbox.read(None, proc=proc) is None
    assert sb.Sandbox.read(43, proc=proc) is None       # no such process here


def test_resolve(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(str(real), str(tmp_path / "link"))
    assert sb.resolve(str(tmp_path / "link" / "new" / "web")) == str(real / "new" / "web")
    assert sb.resolve("/nonexistent-onionlab/a/../b") == "/nonexistent-onionlab/b"
