# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_service role on a stock Debian host (fixture stockbed): tor as Debian ships it, reached over
ssh. Issue 14 point 6: run by an ordinary user without become, the role fails before anything is read
or written, saying to use become (it failed with a bare Permission denied from a stat task)."""

import subprocess

from harness.ansible_run import run_playbook

USER = "onionlab-nobecome"


def _ssh(bed, script, check=True):
    p = subprocess.run(bed.ssh_cmd(bed.hosts[0], script), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=120, stdin=subprocess.DEVNULL)
    if check and p.returncode != 0:
        raise AssertionError("on the stock host: %s\nrc=%d\n%s" % (script, p.returncode, p.stdout))
    return p.stdout


def test_role_without_become_says_use_become(stockbed, tmp_path):
    bed = stockbed
    host = bed.hosts[0]["name"]
    _ssh(bed, "set -e; id %(u)s >/dev/null 2>&1 || useradd -m -s /bin/sh %(u)s; "
              "install -d -m 0700 -o %(u)s -g %(u)s /home/%(u)s/.ssh; "
              "install -m 0600 -o %(u)s -g %(u)s /root/.ssh/authorized_keys /home/%(u)s/.ssh/authorized_keys"
              % {"u": USER})
    try:
        before = _ssh(bed, "find /etc/tor /var/lib/tor -maxdepth 2 | sort")
        book = [{"hosts": host, "gather_facts": False, "vars": {
            "ansible_user": USER,
            "onion_services": [{"name": "web", "ports": [{"port": 80, "target_port": 8080}]}],
            "onion_service_backup_dir": str(tmp_path / "escrow"),
            "onion_service_summary_file": str(tmp_path / "summary.yml"),
        }, "roles": ["onionlab.tor.onion_service"]}]
        run = run_playbook(book, tmp_path, extra_args=["-i", bed.inventory_path])
        assert run.rc != 0, run.output
        assert "this user cannot write /var/lib/tor" in run.output, run.output
        assert "use become: true" in run.output, run.output
        failed = [t["task"].split(" : ")[-1] for t in run.tasks if t["status"] == "failed"]
        assert failed == ["Fail early when not (use become)"], (failed, run.output)
        assert "Permission denied" not in run.output, run.output
        assert _ssh(bed, "find /etc/tor /var/lib/tor -maxdepth 2 | sort") == before
        assert not (tmp_path / "escrow").exists()
        # as root (check mode: nothing changes) the role is past that check
        book[0]["vars"]["ansible_user"] = "root"
        root = run_playbook(book, tmp_path, extra_args=["-i", bed.inventory_path], check=True)
        checked = [t["status"] for t in root.tasks if t["task"].endswith("Fail early when not (use become)")]
        assert checked == ["skipped"], root.output
        assert root.rc == 0, root.output
    finally:
        _ssh(bed, "userdel -r %s 2>/dev/null; true" % USER, check=False)
