#!/usr/bin/env python3
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""./run demo: the collection's main job, end to end, on this machine only.

A private Tor network on 127.0.0.1 (3 authorities, 3 relays, a client) and four throwaway
hosts (systemd-nspawn containers, tests/harness/hosts.py) whose tors join it; the example site
playbook demo/site.yml (roles onionlab.tor.tor and onionlab.tor.onion_service) run on them; a
table host -> service -> onion address; a page fetched through every onion over Tor from the
controller (demo/probe.yml: onionlab.tor.tor_onion_probe); beside the per-host addresses one
balanced address: Onionbalance on host4 (demo/balanced_key.yml, demo/balanced.yml; the role
onionlab.tor.onionbalance) in front of the "balanced" service of host1-host3, answering with their
pages, and still answering once tor on host1 is stopped; a second run that changes nothing;
everything stopped and removed again.

    ./run demo            the above (needs root: containers)
    ./run demo --local    one throwaway local tor only, demo/local.yml run twice (no containers)
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from harness.tor_instance import TorInstance  # noqa: E402

PY = sys.executable
BIN = ROOT / ".venv" / "bin"
ENV = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"), ANSIBLE_NOCOLOR="1",
           ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0", ANSIBLE_HOST_KEY_CHECKING="0",
           ANSIBLE_DEPRECATION_WARNINGS="0")


def step(msg):
    print("\n== %s" % msg, flush=True)


def run(cmd, show=False, check=True):
    start = time.monotonic()
    proc = subprocess.run([str(c) for c in cmd], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    took = time.monotonic() - start
    if show or (check and proc.returncode):
        print(proc.stdout)
    if check and proc.returncode:
        raise SystemExit("!! failed (rc %d): %s" % (proc.returncode, " ".join(str(c) for c in cmd)))
    return proc, took


def recap(output):
    return [line.strip() for line in output.splitlines() if line.startswith("host") and "ok=" in line]


def messages(output):
    """The msg of each debug task result in ansible-playbook's output."""
    return [line.split('"msg": ', 1)[1].strip().strip('"') for line in output.splitlines() if '"msg": ' in line]


def balanced_requests(privnet, address, *args):
    """tests/harness/frontend_requests.py: requests to the balanced address through the client tor (JSON)."""
    proc, took = run([PY, ROOT / "tests/harness/frontend_requests.py", "--privnet", privnet, "--address", address]
                     + list(args))
    return json.loads(proc.stdout), took


def full():
    total = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="onionlab-demo-"))
    privnet, bed, inventory = base / "privnet", base / "bed", base / "inventory.yml"
    extra = ["-e", "@%s" % (ROOT / "demo" / "services.yml"), "-e", json.dumps({"demo_dir": str(base)})]
    playbook = [BIN / "ansible-playbook", "-i", inventory]
    try:
        step("private Tor network on 127.0.0.1 (3 authorities, 3 relays, a client)")
        # votes every 20 s: the round Onionbalance's --is-testnet assumes (tests/harness/onionbalance.py)
        _, took = run([PY, ROOT / "tests/harness/privnet.py", "start", "--dir", privnet, "--voting-interval", "20"])
        print("   ready in %.1f s" % took)
        step("four hosts (systemd-nspawn), their tors joining that network; Debian's onionbalance installable")
        _, took = run([PY, ROOT / "tests/harness/hosts.py", "up", "--dir", bed, "-n", "4", "--privnet", privnet,
                       "--inventory-out", inventory, "--apt-packages", "onionbalance"])
        print("   up in %.1f s (the base system and the onionbalance packages are cached in ~/.cache/onionlab "
              "after the first run)" % took)
        proc, took = run(playbook + [ROOT / "demo/balanced_key.yml"] + extra)
        print("   the balanced address's key made on host4 and escrowed first (demo/balanced_key.yml, %.1f s)" % took)
        _, took = run(playbook + [ROOT / "demo/backends.yml"] + extra)
        print("   a small web server behind each service on each host (%.1f s)" % took)

        step("first run of demo/site.yml (roles onionlab.tor.tor and onionlab.tor.onion_service)")
        proc, first = run(playbook + [ROOT / "demo/site.yml"] + extra)
        print("\n".join("   " + line for line in recap(proc.stdout)))
        print("   %.1f s" % first)

        step("Onionbalance on host4 in front of the balanced service of host1-host3 (demo/balanced.yml)")
        proc, took = run(playbook + [ROOT / "demo/balanced.yml"] + extra)
        print("\n".join("   " + line for line in recap(proc.stdout)))
        print("   %.1f s" % took)

        step("host -> service -> onion address (%s)" % (base / "onion-services.yml"))
        import yaml
        summary = yaml.safe_load((base / "onion-services.yml").read_text()) or []
        print("   %-6s %-8s %-62s %s" % ("host", "service", "onion address", "ports"))
        for entry in summary:
            print("   %-6s %-8s %-62s %s" % (entry["host"], entry["service"], entry["onion_address"], entry["ports"]))
        frontend = (base / "onion-keys/onionbalance/frontend/hostname").read_text().strip()
        print("   %-6s %-8s %-62s %s" % ("host4", "frontend", frontend, "[80] -> balanced of host1, host2, host3"))

        step("a page through every onion, over Tor, from this machine's client tor (demo/probe.yml)")
        socks_port = json.loads((privnet / "state.json").read_text())["socks_port"]
        proc, took = run(playbook + [ROOT / "demo/probe.yml", "-e", json.dumps({"demo_socks_port": socks_port})]
                         + extra)
        print("\n".join("   " + line for line in messages(proc.stdout)))
        print("   (onionlab.tor.tor_onion_probe, wait: true, through SocksPort 127.0.0.1:%d; %.1f s with Ansible)"
              % (socks_port, took))

        step("the balanced address %s, 6 answers in a row, then 9 requests (a new circuit each)" % frontend)
        result, took = balanced_requests(privnet, frontend, "until-steady", "--count", "9")
        print("   answering %.1f s after the first request; the 9 answered by %s (%.1f s)"
              % (result["seconds"], ", ".join("%s %d" % kv for kv in sorted(result["counted"].items())), took))

        step("second run of demo/site.yml: nothing to change")
        proc, second = run(playbook + [ROOT / "demo/site.yml"] + extra)
        lines = recap(proc.stdout)
        print("\n".join("   " + line for line in lines))
        print("   %.1f s" % second)
        proc, again = run(playbook + [ROOT / "demo/balanced.yml"] + extra)
        frontend_lines = recap(proc.stdout)
        print("\n".join("   " + line for line in frontend_lines))
        print("   %.1f s (demo/balanced.yml)" % again)
        lines += frontend_lines
        if not frontend_lines or not lines or any("changed=0" not in line for line in lines):
            raise SystemExit("!! the second run changed something")
        keys = sorted(str(p.relative_to(base)) for p in (base / "onion-keys").rglob("hs_ed25519_secret_key"))
        step("keys escrowed on the controller (0600 in 0700 directories): %s" % ", ".join(keys))

        step("failover: tor on host1 stopped; the balanced address keeps answering (from host2 and host3)")
        run([BIN / "ansible", "-i", inventory, "host1", "-m", "ansible.builtin.systemd_service",
             "-a", "name=tor@default state=stopped"])
        result, took = balanced_requests(privnet, frontend, "until-steady", "--allowed", "host2,host3")
        print("   every request succeeds again %.1f s after the stop (%d failed requests, slowest %.1f s; answers %s)"
              % (result["seconds"], result["failures"], result["slowest"],
                 ", ".join("%s %d" % kv for kv in sorted(result["pages"].items()))))
    finally:
        step("cleaning up")
        run([PY, ROOT / "tests/harness/hosts.py", "down", "--dir", bed], check=False)
        run([PY, ROOT / "tests/harness/privnet.py", "stop", "--dir", privnet], check=False)
        shutil.rmtree(str(base), ignore_errors=True)
        print("   hosts stopped, private network stopped, %s removed" % base)
    print("\n== demo done in %.1f s" % (time.monotonic() - total))
    return 0


def local():
    base = Path(tempfile.mkdtemp(prefix="onionlab-demo-"))
    (base / "torrc.d").mkdir()
    env = dict(ENV, ANSIBLE_PYTHON_INTERPRETER=PY)
    try:
        step("a throwaway tor in %s (DisableNetwork 1)" % base)
        with TorInstance(base / "tor") as tor:
            print("   tor pid %d, ControlPort 127.0.0.1:%d, cookie authentication" % (tor.pid, tor.control_port))
            for attempt in ("first run", "second run"):
                start = time.monotonic()
                proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                                       str(ROOT / "demo" / "local.yml"), "-e",
                                       json.dumps({"tor_control_port": tor.control_port, "demo_dir": str(base)})],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
                step("%s of demo/local.yml (%.1f s)" % (attempt, time.monotonic() - start))
                lines = proc.stdout.splitlines()
                shown = [l for l in lines if '"msg":' in l or l.startswith(("changed:", "ok:", "localhost ", "fatal"))]
                print("\n".join("   " + l.strip() for l in shown))
                if proc.returncode != 0:
                    print(proc.stdout)
                    return 1
            if not any(l.startswith("localhost ") and "changed=0" in l for l in lines):
                print("!! the second run changed something")
                return 1
            step("the second run changed nothing; stopping tor (pid %d)" % tor.pid)
        return 0
    finally:
        shutil.rmtree(str(base), ignore_errors=True)


if __name__ == "__main__":
    sys.exit(local() if "--local" in sys.argv[1:] else full())
