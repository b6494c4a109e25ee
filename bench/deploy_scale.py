#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Deploy time against host count: the site playbook next to trivial tasks, on the bed's hosts.

The site playbook on N hosts of the bed, next to a baseline of trivial tasks on the same hosts in
the same run (issue 20). Needs root (containers).

    .venv/bin/python bench/deploy_scale.py [--sizes 1,3,10,16] [--forks 5] [--env K=V ...]
                                           [--one-bed] [--knobs 10] [--out docs/deploy_scale.md]

A private Tor network on 127.0.0.1 (tests/harness/privnet.py) and, for each size N, a bed of N
fresh hosts (tests/harness/hosts.py: systemd-nspawn, their tors joining that network). On them,
back to back: demo/site.yml (roles onionlab.tor.tor and onionlab.tor.onion_service, one onion
service per host) a first and a second time, then a baseline playbook of BASELINE trivial tasks
(``ansible.builtin.command: /bin/true``, gather_facts false). Every playbook starts with no SSH
master connection (ControlPersist sockets of this run are closed before each), as a run started
by hand would. The second run must report changed=0 on every host, else its figure is void and
the bench exits 1.

Why a fresh bed per size, not --limit subsets of one bed: a first run needs hosts that were never
converged, and the 16-host bed's idle containers would weigh on the small sizes. --one-bed brings
up the largest size only: its first run on all of it, then every size's second run and baseline
on the first N hosts (--limit); the smaller sizes get no first-run figure.

--knobs N converges a bed of N hosts, then measures the second run and the baseline under each
setting of KNOBS (forks, pipelining, strategy, SSH ControlPersist; Mitogen with --mitogen DIR,
a directory made by ``pip install --target DIR mitogen``), each against the baseline run with the
same setting.

Everything started here (tors, containers, SSH masters) is stopped by PID at the end, on
Ctrl-C and on SIGTERM.
"""

import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from harness import hosts as hostbed  # noqa: E402
from harness import privnet as privnet_mod  # noqa: E402

BIN = ROOT / ".venv" / "bin"
SITE = ROOT / "demo" / "site.yml"
ENV = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"), ANSIBLE_NOCOLOR="1",
           ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_HOST_KEY_CHECKING="0",
           ANSIBLE_DEPRECATION_WARNINGS="0", ANSIBLE_RETRY_FILES_ENABLED="0")
# ansible-core's default ssh_args
SSH_DEFAULT = "-C -o ControlMaster=auto -o ControlPersist=60s"
# label -> (environment, extra ansible-playbook arguments)
KNOBS = [
    ("defaults (forks 5, linear, no pipelining, ControlPersist=60s)", {}, []),
    ("forks 10", {}, ["-f", "10"]),
    ("forks 20", {}, ["-f", "20"]),
    ("pipelining", {"ANSIBLE_PIPELINING": "1"}, []),
    ("strategy free", {"ANSIBLE_STRATEGY": "free"}, []),
    ("ControlPersist off (ControlMaster=no)", {"ANSIBLE_SSH_ARGS": "-C -o ControlMaster=no"}, []),
    ("ControlPersist=600s", {"ANSIBLE_SSH_ARGS": "-C -o ControlMaster=auto -o ControlPersist=600s"}, []),
    ("no ssh compression (-C dropped)", {"ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=60s"}, []),
    ("forks 20 + pipelining", {"ANSIBLE_PIPELINING": "1"}, ["-f", "20"]),
]
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)")


def say(msg):
    print("[deploy_scale %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()


class Run:
    """One ansible-playbook run: wall seconds, controller CPU seconds, recap per host."""

    def __init__(self, cmd, env, cp_dir):
        close_masters(cp_dir)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        proc = subprocess.run([str(c) for c in cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, stdin=subprocess.DEVNULL)
        self.wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        self.rc, self.output = proc.returncode, proc.stdout
        self.recap = {}
        for line in self.output.splitlines():
            m = RECAP.match(line)
            if m:
                self.recap[m.group(1)] = dict(zip(("ok", "changed", "unreachable", "failed", "skipped"),
                                                  (int(x) for x in m.groups()[1:])))

    def ok(self, hosts):
        return self.rc == 0 and sorted(self.recap) == sorted(hosts) and \
            all(r["failed"] == 0 and r["unreachable"] == 0 for r in self.recap.values())

    def changed_nothing(self):
        return bool(self.recap) and all(r["changed"] == 0 for r in self.recap.values())

    def tasks(self):
        """(executed ok+changed+skipped, skipped): min-max over the hosts, as text."""
        def span(values):
            return "%d" % values[0] if values[0] == values[-1] else "%d–%d" % (values[0], values[-1])
        done = sorted(r["ok"] + r["changed"] + r["skipped"] for r in self.recap.values())
        skipped = sorted(r["skipped"] for r in self.recap.values())
        return span(done), span(skipped)


def close_masters(cp_dir):
    """Close this run's SSH master connections (ControlPersist): by their sockets in cp_dir only."""
    for sock in sorted(Path(cp_dir).glob("*")):
        subprocess.run(["ssh", "-o", "ControlPath=%s" % sock, "-O", "exit", "onionlab-bench"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, timeout=30)
        if sock.exists():
            sock.unlink()


def write_baseline(path, count):
    tasks = "".join("    - name: Trivial task %d\n      ansible.builtin.command: /bin/true\n"
                    "      changed_when: false\n" % (i + 1) for i in range(count))
    path.write_text("---\n- name: Baseline, %d trivial tasks\n  hosts: testbed\n  gather_facts: false\n"
                    "  tasks:\n%s" % (count, tasks))


def write_services(path, names):
    """One onion service per host, each with a backend port the bed gave that host (testbed_app_ports:
    the bed's hosts share one network, and other runs share the machine)."""
    services = {name: [{"name": "web", "ports": [{"port": 80, "target_port":
                                                  "{{ hostvars['%s'].testbed_app_ports[0] }}" % name}]}]
                for name in names}
    path.write_text(json.dumps({"demo_services": services}, indent=1) + "\n")


class Bench:
    def __init__(self, args, base):
        self.args, self.base = args, base
        self.cp_dir = base / "cp"
        self.cp_dir.mkdir(mode=0o700)
        self.baseline = base / "baseline.yml"
        write_baseline(self.baseline, args.baseline)
        self.env = dict(ENV, ANSIBLE_SSH_CONTROL_PATH_DIR=str(self.cp_dir))
        self.site = SITE
        if args.root:
            # another checkout (e.g. a worktree of an older commit): its roles and its demo/site.yml
            other = Path(args.root).resolve()
            link = base / "collections" / "ansible_collections" / "onionlab"
            link.mkdir(parents=True)
            (link / "tor").symlink_to(other)
            self.env["ANSIBLE_COLLECTIONS_PATH"] = str(base / "collections")
            self.site = other / "demo" / "site.yml"
        for kv in args.env:
            key, _, value = kv.partition("=")
            self.env[key] = value
        self.void = []
        self.n_logs = 0
        if args.logs:
            os.makedirs(args.logs, exist_ok=True)

    def playbook(self, bed, playbook, names, data_dir, env=None, extra=()):
        cmd = [BIN / "ansible-playbook", "-i", bed.inventory_path, playbook, "-f", str(self.args.forks)]
        cmd += list(extra)
        if len(names) < bed.n:
            cmd += ["--limit", ",".join(names)]
        if playbook == self.site:
            cmd += ["-e", "@%s" % (data_dir / "services.json"), "-e", json.dumps({"demo_dir": str(data_dir)})]
        run = Run(cmd, dict(self.env, **(env or {})), self.cp_dir)
        if self.args.logs:
            self.n_logs += 1
            log = Path(self.args.logs) / ("%02d-%s-%dhosts.log" % (self.n_logs, playbook.stem, len(names)))
            log.write_text("# %s\n# %.1f s, env %s\n%s" % (" ".join(str(c) for c in cmd), run.wall, env or {}, run.output))
        if not run.ok(names):
            tail = "\n".join(run.output.splitlines()[-60:])
            raise SystemExit("!! %s failed on %d hosts (rc %d):\n%s" % (playbook.name, len(names), run.rc, tail))
        return run

    def bed(self, net, n):
        bed = hostbed.HostBed(n=n, privnet_join_lines=net.join_torrc_lines())
        bed.up()
        say("%d hosts up in %.1f s" % (n, bed.timings["total"]))
        return bed

    def data_dir(self, bed, names):
        """The demo_dir of one bed (key escrow, summary): a bed's host1 must not find another bed's key."""
        d = self.base / ("data-%s" % bed.run_id)
        d.mkdir(exist_ok=True)
        write_services(d / "services.json", names)
        return d

    def size(self, bed, names, first=True):
        row = {"hosts": len(names), "load_before": load()}
        data = self.data_dir(bed, [h["name"] for h in bed.hosts])
        if first:
            say("%d hosts: first run" % len(names))
            first = self.playbook(bed, self.site, names, data)
            row.update(first=first.wall, first_cpu=first.cpu)
        say("%d hosts: second run" % len(names))
        second = self.playbook(bed, self.site, names, data)
        say("%d hosts: baseline of %d tasks" % (len(names), self.args.baseline))
        base = self.playbook(bed, self.baseline, names, data)
        row.update(second=second.wall, second_cpu=second.cpu, baseline=base.wall, baseline_cpu=base.cpu,
                   tasks=second.tasks(), changed0=second.changed_nothing(), load_after=load())
        if not row["changed0"]:
            self.void.append("%d hosts: the second run changed something: %s" % (len(names), {
                h: r["changed"] for h, r in second.recap.items() if r["changed"]}))
        say("%d hosts: first %s, second %.1f s, baseline %.1f s (load %s)" % (
            len(names), "%.1f s" % row["first"] if "first" in row else "-", row["second"], row["baseline"],
            row["load_after"]))
        return row

    def sizes(self, net):
        sizes = self.args.sizes
        rows = []
        if self.args.one_bed:
            bed = self.bed(net, max(sizes))
            try:
                names = [h["name"] for h in bed.hosts]
                rows.append(self.size(bed, names))
                for n in sorted(s for s in sizes if s != bed.n):
                    rows.append(self.size(bed, names[:n], first=False))
            finally:
                close_masters(self.cp_dir)
                bed.down()
            return sorted(rows, key=lambda r: r["hosts"])
        for n in sizes:
            bed = self.bed(net, n)
            try:
                rows.append(self.size(bed, [h["name"] for h in bed.hosts]))
            finally:
                close_masters(self.cp_dir)
                bed.down()
        return rows

    def knobs(self, net, n):
        bed = self.bed(net, n)
        rows = []
        try:
            names = [h["name"] for h in bed.hosts]
            data = self.data_dir(bed, names)
            say("knobs on %d hosts: converging (first run)" % n)
            self.playbook(bed, self.site, names, data)
            knobs = list(KNOBS)
            if self.args.mitogen:
                plugins = str(Path(self.args.mitogen) / "ansible_mitogen" / "plugins" / "strategy")
                knobs.append(("Mitogen (mitogen_linear, %s)" % Path(self.args.mitogen).name,
                              {"ANSIBLE_STRATEGY_PLUGINS": plugins, "ANSIBLE_STRATEGY": "mitogen_linear"}, []))
            for label, env, extra in knobs:
                if self.args.knob and not any(k in label for k in self.args.knob):
                    continue
                load_before = load()
                second = self.playbook(bed, self.site, names, data, env, extra)
                base = self.playbook(bed, self.baseline, names, data, env, extra)
                if not second.changed_nothing():
                    self.void.append("knob %s: the second run changed something" % label)
                rows.append({"knob": label, "second": second.wall, "second_cpu": second.cpu, "baseline": base.wall,
                             "baseline_cpu": base.cpu, "load": "%s → %s" % (load_before, load()),
                             "changed0": second.changed_nothing()})
                say("knob %s: second %.1f s, baseline %.1f s (load %s)" % (label, second.wall, base.wall, load()))
        finally:
            close_masters(self.cp_dir)
            bed.down()
        return rows


def fmt(value, unit=" s"):
    return "–" if value is None else "%.1f%s" % (value, unit)


def size_table(rows, baseline):
    lines = ["| hosts | first run | second run (changed=0) | baseline %d | ratio second/baseline | "
             "tasks per host (second run: ok+changed+skipped) | of which skipped | per-host growth (second run) | "
             "controller CPU first / second / baseline | load before → after |" % baseline,
             "|---|---|---|---|---|---|---|---|---|---|"]
    prev = None
    for r in rows:
        growth = "–" if prev is None else "%.2f s/host" % ((r["second"] - prev["second"]) / (r["hosts"] - prev["hosts"]))
        second = fmt(r["second"]) + ("" if r["changed0"] else " VOID: changed>0")
        lines.append("| %d | %s | %s | %s | %.2f | %s | %s | %s | %s / %.1f s / %.1f s | %s → %s |" % (
            r["hosts"], fmt(r.get("first")), second, fmt(r["baseline"]), r["second"] / r["baseline"],
            r["tasks"][0], r["tasks"][1], growth, fmt(r.get("first_cpu")), r["second_cpu"], r["baseline_cpu"],
            r["load_before"],
            r["load_after"]))
        prev = r
    return "\n".join(lines)


def knob_table(rows, n, baseline):
    lines = ["| %d hosts: setting | second run (changed=0) | baseline %d, same setting | ratio | "
             "controller CPU second run / baseline | load before → after |" % (n, baseline),
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append("| %s | %s | %s | %.2f | %.1f s / %.1f s | %s |" % (
            r["knob"], fmt(r["second"]) + ("" if r["changed0"] else " VOID"), fmt(r["baseline"]),
            r["second"] / r["baseline"], r["second_cpu"], r["baseline_cpu"], r["load"]))
    return "\n".join(lines)


def machine(root):
    model = ""
    try:
        model = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    version = subprocess.run([str(BIN / "ansible-playbook"), "--version"], stdout=subprocess.PIPE,
                             universal_newlines=True, env=ENV).stdout.splitlines()[0]
    commit = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%h %s"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, universal_newlines=True).stdout.strip()[:90] or str(root)
    return ("%s UTC; %s, %d cores (%s), %.0f GiB; %s; Python %s; collection at %s" % (
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"), platform.node(), os.cpu_count(),
        model or platform.machine(), mem, version, platform.python_version(), commit))


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1,3,10,16", help="host counts, comma-separated (default 1,3,10,16)")
    ap.add_argument("--forks", type=int, default=5)
    ap.add_argument("--baseline", type=int, default=26, help="trivial tasks in the baseline playbook (default 26)")
    ap.add_argument("--env", action="append", default=[], metavar="K=V",
                    help="environment for every ansible-playbook run, e.g. ANSIBLE_PIPELINING=1")
    ap.add_argument("--one-bed", action="store_true",
                    help="one bed of the largest size, smaller sizes on --limit subsets (no first run for them)")
    ap.add_argument("--knobs", type=int, metavar="N", help="measure the settings of KNOBS on N hosts instead")
    ap.add_argument("--knob", action="append", default=[], help="with --knobs: only settings whose label has this")
    ap.add_argument("--mitogen", metavar="DIR", help="with --knobs: also Mitogen, installed in DIR "
                                                     "(pip install --target DIR mitogen)")
    ap.add_argument("--root", metavar="DIR", help="measure the roles and demo/site.yml of this checkout "
                                                  "(e.g. a worktree of an older commit) instead of this one")
    ap.add_argument("--out", help="write the table(s) as markdown here")
    ap.add_argument("--logs", metavar="DIR", help="keep each ansible-playbook output in DIR")
    args = ap.parse_args()
    args.sizes = sorted({int(s) for s in args.sizes.split(",")})
    if os.geteuid() != 0:
        raise SystemExit("the bed needs root (systemd-nspawn)")
    hostbed.ensure_packages()
    signal.signal(signal.SIGTERM, _interrupt)
    base = Path(tempfile.mkdtemp(prefix="onionlab-scale-"))
    about = machine(args.root or ROOT)
    options = "forks %d%s%s" % (args.forks, "".join("; %s" % kv for kv in args.env),
                                "; one bed, --limit subsets" if args.one_bed else "; a fresh bed per size")
    bench = Bench(args, base)
    try:
        net = privnet_mod.PrivNet()
        net.start()
        say("private network ready in %.1f s" % net.timings.get("ready", 0))
        try:
            if args.knobs:
                text = knob_table(bench.knobs(net, args.knobs), args.knobs, args.baseline)
            else:
                text = size_table(bench.sizes(net), args.baseline)
        finally:
            net.stop()
    except KeyboardInterrupt:
        say("interrupted: hosts and tors stopped")
        return 130
    finally:
        close_masters(bench.cp_dir)
        shutil.rmtree(str(base), ignore_errors=True)
    report = "%s\n\n%s; demo/site.yml with one onion service per host; baseline: %d × command /bin/true, " \
             "gather_facts false.\n\n%s\n" % (about, options, args.baseline, text)
    if bench.void:
        report += "\nVOID: %s\n" % "; ".join(bench.void)
    print(report)
    if args.out:
        Path(args.out).write_text(report)
    return 1 if bench.void else 0


if __name__ == "__main__":
    sys.exit(main())
