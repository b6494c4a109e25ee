#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tor_upgrade
short_description: Upgrade tor on one host behind a gate of reachability, with a way back
version_added: 0.3.0
description:
  - Moves the host's tor package (Debian and Ubuntu, apt) to an exact O(version) and proves that every onion service
    of the host is still reachable, else puts the host back as it was. The rolling upgrade of a fleet
    (C(ansible-playbook onionlab.tor.upgrade)) runs it host by host, a canary first.
  - "The steps, in order, each in RV(steps): C(before): every service of the host reached by a fresh client through
    the host's own tor (the verdict of M(onionlab.tor.tor_onion_health) with its C(reach) layer); a host already
    unhealthy is held back (RV(held_back)) and never upgraded blind. C(verify): the new version's own tor binary
    (downloaded with C(apt-get download), unpacked aside) reads the host's torrc with its packaged defaults
    (C(--verify-config)); a version that refuses it is never installed. C(keep): the installed package (from apt's
    cache, else C(apt-get download)), the files under O(config_dir) and the apt pin, kept in O(state_dir) for the
    way back; no upgrade without it."
  - "C(install): the apt pin of M(onionlab.tor.tor_setup) moved to O(version) (so that no unattended upgrade moves
    it), the package installed (C(--force-confold): the host's torrc stays), and tor restarted when the package's
    scripts did not. Debian's C(tor.postinst) reports success even when the new tor does not start: the gate decides.
    C(gate): every service reached again by a fresh client within O(gate_timeout) seconds of the install
    (RV(services) has how long each was unreachable). C(soak) (when O(soak) > 0): the verdict again every
    O(soak_interval) seconds for O(soak) seconds; two failed checks in a row, or tor restarted (its PID changed),
    fail it."
  - "On a failed install, gate or soak (and O(rollback=true)): the kept package installed again (a downgrade), the
    pin and the files under O(config_dir) put back, tor restarted, and the gate taken again
    (C(back_seconds) in RV(services)); the module then fails with what the new tor logged and the verdict. Keys are never
    touched (nothing under tor's DataDirectory is read or written)."
  - A host that already runs O(version) (installed, and the running tor started from it) changes nothing.
author:
  - onionlab.tor contributors (@onionlab)
options:
  version:
    description:
      - The exact package version to move to, as C(apt-cache policy tor) shows it.
    type: str
    required: true
  package_name:
    description: The package.
    type: str
    default: tor
  service_name:
    description: tor's service; on Debian C(tor) means the unit that runs tor, C(tor@default.service).
    type: str
    default: tor
  config_dir:
    description: The directory of tor's configuration, kept for the way back (regular files; links are not followed).
    type: path
    default: /etc/tor
  config_file:
    description: The torrc the new version's tor must accept before it is installed.
    type: path
    default: /etc/tor/torrc
  state_dir:
    description: Where the kept package and configuration go (0700, root), one directory per version kept.
    type: path
    default: /var/lib/onionlab-tor/upgrade
  gate_timeout:
    description: Seconds from the install (and from the rollback) within which every service must be reached.
    type: float
    default: 300
  soak:
    description: Seconds of soak after the gate (0 for none).
    type: float
    default: 0
  soak_interval:
    description: Seconds between the soak's checks.
    type: float
    default: 60
  rollback:
    description: Put the host back when the install, the gate or the soak fails.
    type: bool
    default: true
  reach_timeout:
    description: Seconds for each verdict's reach attempts (M(onionlab.tor.tor_onion_health)'s O(reach_timeout)).
    type: float
    default: 60
  reach_attempts:
    description: Fresh connections each verdict tries per service, until one answers.
    type: int
    default: 3
  fetch_timeout:
    description: Seconds each verdict waits for the HSDirs' answers.
    type: float
    default: 30
  web_ports:
    description: Ports probed with an HTTP request (see M(onionlab.tor.tor_onion_health)).
    type: list
    elements: int
    default: [80, 443]
extends_documentation_fragment:
  - onionlab.tor.control
  - onionlab.tor.attributes
attributes:
  check_mode:
    support: full
    details:
      - Says in its message what would be upgraded, and changes nothing; no verdict is taken.
  diff_mode:
    support: none
notes:
  - "The gate needs a SocksPort of the host's tor on 127.0.0.1 (the reach layer): without one every service's reach
    is V(not checked) and the gate fails, before anything is installed (the C(before) step)."
  - Only apt (Debian, Ubuntu). On another system the module fails before it changes anything.
seealso:
  - module: onionlab.tor.tor_onion_health
    description: The verdict the gate takes.
  - module: onionlab.tor.tor_setup
    description: The tor role's O(onionlab.tor.tor_setup#module:package_version) pins the same way.
"""

EXAMPLES = r"""
- name: Upgrade this host's tor, gated on its services being reached, with a 10-minute soak
  onionlab.tor.tor_upgrade:
    version: 0.4.9.11-1~deb12u1
    soak: 600
  become: true
  register: upgrade

- name: The fleet, a canary first (playbooks/upgrade.yml)
  ansible.builtin.debug:
    msg: ansible-playbook onionlab.tor.upgrade -e tor_version=0.4.9.11-1~deb12u1
"""

RETURN = r"""
before:
  description: The package version installed when the run began (V(null) when tor is not installed).
  returned: always
  type: str
now:
  description: The package version installed when the run ended.
  returned: always
  type: str
would_upgrade:
  description: In check mode, the host would be upgraded (RV(summary) says from which version to which).
  returned: in check mode, when an upgrade is due
  type: bool
held_back:
  description: The host was left as it was because tor is not installed or a service was not reachable before.
  returned: always
  type: bool
rolled_back:
  description: The host was put back on the kept package.
  returned: always
  type: bool
steps:
  description: Each step's outcome (C(before), C(verify), C(keep), C(install), C(restart), C(gate), C(soak),
    C(rollback), C(gate_after_rollback)).
  returned: always
  type: dict
  sample: {"before": "reachable", "verify": "ok", "keep": "ok", "install": "ok", "restart": "by the package",
           "gate": "passed"}
services:
  description: Per onion address, C(reachable_before), C(unreachable_seconds) (from the install to the first
    answer) and, after a rollback, C(back_seconds).
  returned: always
  type: dict
kept:
  description: What was kept for the way back (C(dir), C(package), C(files)).
  returned: when kept
  type: dict
summary:
  description: One line for the rollout's summary.
  returned: always
  type: str
log:
  description: tor's log lines since the install, when the gate or soak failed.
  returned: on a failed gate or soak
  type: list
  elements: str
"""

import glob
import json
import os
import shutil
import stat
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.onionlab.tor.plugins.module_utils._common import (
    MODULE_ERRORS, connect_module, control_argument_spec, error_message)
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion_health
from ansible_collections.onionlab.tor.plugins.module_utils._host import command_runner
from ansible_collections.onionlab.tor.plugins.module_utils._tor import systemd_watchdog
from ansible_collections.onionlab.tor.plugins.module_utils._tor import tor_version
from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc as guard
from ansible_collections.onionlab.tor.plugins.module_utils._tor import upgrade

APT_ENV = {"DEBIAN_FRONTEND": "noninteractive"}
APT_INSTALL = ["apt-get", "install", "-y", "-q", "--allow-downgrades", "-o", "Dpkg::Options::=--force-confdef",
               "-o", "Dpkg::Options::=--force-confold"]


class HostOps(object):
    """What each step of upgrade.Upgrade does on this host."""

    def __init__(self, module):
        self.module, self.p = module, module.params
        self.unit = systemd_watchdog.unit("Debian", self.p["service_name"])
        self.kept = None
        self.run = command_runner(module)

    def installed(self):
        return tor_version.installed_version(self.run, "Debian", self.p["package_name"])

    def running(self):
        return tor_version.running(self.run, self.unit)

    def verify(self, version):
        for attempt in (1, 2):
            scratch = tempfile.mkdtemp(suffix=".onionlab-tor-upgrade")
            try:
                os.chmod(scratch, 0o755)   # apt-get download hands the download to the _apt user in its cwd
                problem, missing = tor_version.verify_with_package(self.run, version, self.p["config_file"], scratch,
                                                                   self.p["package_name"])
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            if not (problem and missing and attempt == 1):
                return problem
            self.run(["apt-get", "update", "-q"], env=APT_ENV)   # not in the index: refreshed once
        return problem

    # -- the way back -------------------------------------------------------------------------------------
    def _private_dir(self, path):
        """path as a root-only directory (0700), made when missing; never a link."""
        if not os.path.lexists(path):
            os.makedirs(path, 0o700)
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise OSError("not a directory (a link or a file): %s" % path)
        os.chmod(path, 0o700)
        return path

    def keep(self, installed):
        base = self._private_dir(self.p["state_dir"])
        here = self._private_dir(os.path.join(base, installed.replace(":", "%3a")))
        package, said = self._keep_package(installed, here)
        if package is None:
            return None, ("the installed package %s=%s could not be kept: it is not in apt's cache and `apt-get "
                          "download` failed (is that version still in the host's apt sources?): %s"
                          % (self.p["package_name"], installed, said))
        files = self._keep_config(os.path.join(here, "config"))
        pin = self._current_pin()
        # the record of the way back, for an operator who goes back by hand (guide_upgrades: "By hand")
        record = {"version": installed, "package": package, "files": files, "pin": pin,
                  "config_dir": self.p["config_dir"]}
        self._write(os.path.join(here, "kept.json"), json.dumps(record, indent=1, sort_keys=True).encode(), 0o600, 0, 0)
        self.kept = {"dir": here, "package": package, "files": files, "pin": pin}
        return {"dir": here, "package": package, "files": sorted(files)}, None

    def _keep_package(self, installed, here):
        """(the kept .deb of the installed version, None and why not)."""
        name = self.p["package_name"]
        for deb in glob.glob(os.path.join(here, "%s_*.deb" % name)):
            if self.run(["dpkg-deb", "-f", deb, "Version"])[1].strip() == installed:
                return deb, None
        cached = glob.glob("/var/cache/apt/archives/%s_%s_*.deb" % (name, installed.replace(":", "%3a")))
        if cached:
            shutil.copy2(cached[0], here)
            return os.path.join(here, os.path.basename(cached[0])), None
        scratch = tempfile.mkdtemp(suffix=".onionlab-tor-keep")
        try:
            os.chmod(scratch, 0o755)
            rc, out, err = self.run(["apt-get", "download", "-q", "%s=%s" % (name, installed)], cwd=scratch)
            debs = [f for f in os.listdir(scratch) if f.endswith(".deb")]
            if rc != 0 or len(debs) != 1:
                return None, (err or out).strip()[-500:]
            shutil.move(os.path.join(scratch, debs[0]), os.path.join(here, debs[0]))
            return os.path.join(here, debs[0]), None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _keep_config(self, dest):
        """Every regular file under config_dir copied (mode kept) into dest; links and others not followed."""
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest, 0o700)
        files = {}
        root = self.p["config_dir"]
        for top, dirs, names in os.walk(root, followlinks=False):
            for name in names:
                path = os.path.join(top, name)
                st = os.lstat(path)
                if not stat.S_ISREG(st.st_mode):
                    continue
                rel = os.path.relpath(path, root)
                target = os.path.join(dest, rel)
                if not os.path.isdir(os.path.dirname(target)):
                    os.makedirs(os.path.dirname(target), 0o700)
                shutil.copy2(path, target)
                files[rel] = {"mode": stat.S_IMODE(st.st_mode), "uid": st.st_uid, "gid": st.st_gid}
        return files

    def pin(self, version):
        if version is not None:
            text = tor_version.pin_text(self.p["package_name"], version)
        else:
            text = (self.kept or {}).get("pin")
        if text is None:
            if os.path.lexists(tor_version.PIN_FILE):
                os.unlink(tor_version.PIN_FILE)
                return True
            return False
        if self._current_pin() != text:
            self._write(tor_version.PIN_FILE, text.encode(), 0o644, 0, 0)
            return True
        return False

    @staticmethod
    def _current_pin():
        """The apt pin's text as it is now (None: no pin file)."""
        if not os.path.isfile(tor_version.PIN_FILE):
            return None
        with open(tor_version.PIN_FILE) as f:
            return f.read()

    def _write(self, path, data, mode, uid, gid):
        """data to path through a temporary file beside it, renamed over it (a link at path is replaced, not
        followed)."""
        fd, tmp = tempfile.mkstemp(prefix=".onionlab.", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chown(tmp, uid, gid)
            os.chmod(tmp, mode)
            os.rename(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def install(self, version):
        rc, out, err = self.run(APT_INSTALL + ["%s=%s" % (self.p["package_name"], version)], env=APT_ENV)
        return None if rc == 0 else "apt-get install %s=%s failed: %s" % (
            self.p["package_name"], version, (err or out).strip()[-800:])

    def install_kept(self):
        rc, out, err = self.run(APT_INSTALL + [self.kept["package"]], env=APT_ENV)
        return None if rc == 0 else "apt-get install %s failed: %s" % (self.kept["package"], (err or out).strip()[-800:])

    def restore_config(self):
        """The kept files back where they differ (or are gone); files the new package added stay."""
        source = os.path.join(self.kept["dir"], "config")
        for rel, meta in self.kept["files"].items():
            with open(os.path.join(source, rel), "rb") as f:
                data = f.read()
            path = os.path.join(self.p["config_dir"], rel)
            try:
                st = os.lstat(path)
                same = stat.S_ISREG(st.st_mode) and open(path, "rb").read() == data and (
                    stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (meta["mode"], meta["uid"], meta["gid"])
            except OSError:
                same = False
            if not same:
                if not os.path.isdir(os.path.dirname(path)):
                    os.makedirs(os.path.dirname(path), 0o755)
                self._write(path, data, meta["mode"], meta["uid"], meta["gid"])

    def restart(self):
        self.run(["systemctl", "restart", self.unit])

    def verdict(self):
        p = self.p
        try:
            with connect_module(self.module) as ctl:
                return onion_health.check(ctl, timeout=p["fetch_timeout"], layers=["backend", "introduction", "reach"],
                                          reach_timeout=p["reach_timeout"], reach_attempts=p["reach_attempts"],
                                          web_ports=p["web_ports"])
        except MODULE_ERRORS as exc:
            return "tor did not answer: %s" % error_message(exc)

    def log_since(self, begun):
        since = int(time.time() - (time.monotonic() - begun)) - 1
        rc, out, _err = self.run(["journalctl", "-q", "--no-pager", "-o", "short-iso", "-u", self.unit,
                                  "--since", "@%d" % since])
        # the health check's own control connections are tor's most frequent line then: left out
        return [line for line in out.splitlines() if "New control connection opened" not in line][-40:] if rc == 0 else []


def main():
    module = AnsibleModule(argument_spec=control_argument_spec(
        version=dict(type="str", required=True),
        package_name=dict(type="str", default="tor"),
        service_name=dict(type="str", default="tor"),
        config_dir=dict(type="path", default="/etc/tor"),
        config_file=dict(type="path", default=guard.DEFAULT_CONFIG_FILE),
        state_dir=dict(type="path", default="/var/lib/onionlab-tor/upgrade"),
        gate_timeout=dict(type="float", default=upgrade.GATE_TIMEOUT),
        soak=dict(type="float", default=0.0),
        soak_interval=dict(type="float", default=upgrade.SOAK_INTERVAL),
        rollback=dict(type="bool", default=True),
        reach_timeout=dict(type="float", default=onion_health.REACH_TIMEOUT),
        reach_attempts=dict(type="int", default=onion_health.REACH_ATTEMPTS),
        fetch_timeout=dict(type="float", default=onion_health.DEFAULT_TIMEOUT),
        web_ports=dict(type="list", elements="int", default=list(onion_health.WEB_PORTS)),
    ), mutually_exclusive=[("control_port", "control_socket")], supports_check_mode=True)
    p = module.params
    said = tor_version.problem(p["version"])
    if said or p["version"] in tor_version.KEYWORDS:
        module.fail_json(msg=said or "version must be an exact package version here, got %s" % p["version"])
    for name in ("gate_timeout", "soak_interval", "reach_timeout", "fetch_timeout"):
        if p[name] <= 0:
            module.fail_json(msg="%s must be a positive number of seconds, got %s" % (name, p[name]))
    if p["soak"] < 0:
        module.fail_json(msg="soak must be 0 or a positive number of seconds, got %s" % p["soak"])
    if not 1 <= p["reach_attempts"] <= 20:
        module.fail_json(msg="reach_attempts must be between 1 and 20, got %d" % p["reach_attempts"])
    if not module.get_bin_path("dpkg-query") or not module.get_bin_path("apt-get"):
        module.fail_json(msg="tor_upgrade upgrades with apt (Debian, Ubuntu); this host has no apt-get/dpkg-query")
    run = upgrade.Upgrade(HostOps(module), p["version"], gate_timeout=p["gate_timeout"], soak=p["soak"],
                          soak_interval=p["soak_interval"], rollback=p["rollback"], check_mode=module.check_mode)
    try:
        result = run.run()
    except upgrade.UpgradeFailed as exc:
        exc.result["summary"] = upgrade.summary(exc.result)
        module.fail_json(**exc.result)
    except MODULE_ERRORS as exc:
        run.result.update(msg="%s (steps so far: %s)" % (error_message(exc), run.result["steps"]))
        run.result["summary"] = upgrade.summary(run.result)
        module.fail_json(**run.result)
    result["summary"] = upgrade.summary(result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
