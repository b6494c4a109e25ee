# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restore drill (issue 40): the controller's escrow proved against what the inventory declares, before a
host is ever lost. For every host's onion_services, every key generation tor would serve:

- the escrow holds its key and hostname, readable (sealed ones opened with the run's vault), a whole tor key
  file whose address is the escrowed hostname (escrow.Escrow.key_problem, the check the restore path makes);
- a scratch tor on the controller (DisableNetwork 1, a temporary DataDirectory, stopped by its PID) loads the key
  with ADD_ONION and gives that same address: the key works in tor, not only in our parser;
- the summary file (when given) says the same address for the host's service (current and previous generation);
- every client key the escrow must hold (onion_services[].clients and authorized_clients without a public key) is
  there and is an x25519 key; a client given with its public key is checked against nothing here (it has none).

Keys for no declared service (a service removed from the inventory, a host gone) and keys kept under replaced/
are listed, not counted as gaps: the role keeps them on purpose. Nothing is written; no key is ever in a message.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow as escrows
from ansible_collections.onionlab.tor.plugins.plugin_utils.onion_services import (
    OnionServicesError, authorized_clients, clients, generations)


class ScratchTor(object):
    """A tor of the controller's for the drill: no network (DisableNetwork 1), its own temporary DataDirectory
    (0700) and control socket with cookie authentication, stopped by its PID. load(key file bytes) -> the
    address tor gives the key (ADD_ONION with Flags=DiscardPK, then DEL_ONION)."""

    def __init__(self, binary="tor", timeout=30.0):
        self.binary, self.timeout = binary, timeout
        self.dir = self.proc = self.ctl = None

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="onionlab-drill-")
        os.chmod(self.dir, 0o700)
        data = os.path.join(self.dir, "data")
        os.mkdir(data, 0o700)
        socket_path, cookie = os.path.join(self.dir, "control"), os.path.join(self.dir, "cookie")
        torrc = os.path.join(self.dir, "torrc")    # tor refuses /dev/null as its torrc
        with open(torrc, "w"):
            pass
        argv = [self.binary, "-f", torrc, "--defaults-torrc", torrc, "--DataDirectory", data,
                "--DisableNetwork", "1", "--SocksPort", "0", "--ControlSocket", socket_path,
                "--CookieAuthentication", "1", "--CookieAuthFile", cookie, "--Log", "notice file %s"
                % os.path.join(self.dir, "tor.log"), "--GeoIPFile", os.devnull, "--GeoIPv6File", os.devnull]
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, close_fds=True)
        except OSError as exc:
            self.__exit__()
            raise OSError(exc.errno, "cannot start tor (%s) for the drill: %s; the drill needs tor on the "
                                     "controller (apt-get install tor)" % (self.binary, exc.strerror))
        deadline = time.monotonic() + self.timeout
        while not (os.path.exists(socket_path) and os.path.exists(cookie)):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                said = self._log()
                self.__exit__()
                raise OSError("the drill's tor did not open its control socket in %.0f s: %s"
                              % (self.timeout, said or "it logged nothing"))
            time.sleep(0.05)
        self.ctl = connect(socket_path=socket_path, cookie_path=cookie, timeout=self.timeout)
        return self

    def _log(self):
        try:
            with open(os.path.join(self.dir, "tor.log")) as f:
                return " | ".join(f.read().strip().splitlines()[-3:])
        except OSError:
            return ""

    def load(self, data):
        expanded = data[len(onion.SECRET_HEADER):]
        added = self.ctl.add_onion([(80, "127.0.0.1:9")], key_type="ED25519-V3",
                                   key_blob=onion.key_blob(expanded).split(":", 1)[1], flags=["DiscardPK"])
        self.ctl.del_onion(added["service_id"])
        return added["service_id"] + ".onion"

    def __exit__(self, *exc_info):
        if self.ctl is not None:
            self.ctl.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


FRONTENDS = "onionbalance"   # the escrow's directory of the Onionbalance frontends' keys (the onionbalance role's)


def _summary_addresses(summary):
    """{(host, service): (address, previous address)} of the summary file's entries."""
    out = {}
    for entry in summary or []:
        if isinstance(entry, dict) and entry.get("host") and entry.get("service"):
            out[(str(entry["host"]), str(entry["service"]))] = (entry.get("onion_address"),
                                                                entry.get("previous_onion_address"))
    return out


def examine(backup_dir, services_by_host, vault=escrows.NO_VAULT, summary=None, tor=None, inventory=None,
            frontends=()):
    """The drill's findings: {"services": [...], "clients": [...], "frontends": [...], "undeclared": [...],
    "gaps": N}. Each service finding: host, service, directory, generation, address (the escrowed one),
    tor_address, problem (None: it would restore). tor: a ScratchTor (None: the tor check is left out, and said
    so). frontends: the onionbalance_name of each Onionbalance frontend the inventory declares, whose key the escrow
    must hold (DIR/onionbalance/NAME/); every frontend key the escrow holds is drilled too."""
    said = _summary_addresses(summary)
    services_out, clients_out, declared = [], [], set()
    for host in sorted(services_by_host):
        services = services_by_host[host] or []
        esc = escrows.Escrow(backup_dir, host, vault)
        try:
            gens = generations(services)
        except OnionServicesError as exc:
            services_out.append({"host": host, "service": None, "problem": "onion_services: %s" % exc})
            continue
        for g in gens:
            declared.add((host, g["name"]))
            if g.get("state", "present") != "present":
                continue
            services_out.append(_one_service(esc, host, g, said, tor))
        try:
            wanted = [c for c in clients({host: services}, backup_dir=backup_dir, inventory=inventory)
                      if c["needs_key"]]
            wanted += authorized_clients(services, server=host, backup_dir=backup_dir)
        except (OnionServicesError, ValueError) as exc:
            clients_out.append({"host": host, "client": None, "problem": str(exc)})
            continue
        for c in wanted:
            clients_out.append(_one_client(c, vault))
    undeclared = _undeclared(backup_dir, declared)
    frontends_out = _frontends(backup_dir, frontends, vault, tor)
    gaps = sum(1 for f in services_out + clients_out + frontends_out if f.get("problem"))
    return {"services": services_out, "clients": clients_out, "frontends": frontends_out, "undeclared": undeclared,
            "gaps": gaps, "tor_checked": tor is not None}


def _frontends(backup_dir, declared, vault, tor):
    """[{frontend, escrow, address, tor_address, problem}] of every Onionbalance frontend key the escrow holds and
    every one the inventory declares (one it lacks: a rebuilt frontend would get a new address)."""
    esc = escrows.Escrow(backup_dir, FRONTENDS, vault)
    held = set()
    root = os.path.join(backup_dir, FRONTENDS)
    if os.path.isdir(root) and not os.path.islink(root):
        held = set(n for n in os.listdir(root) if os.path.isdir(os.path.join(root, n)))
    out = []
    for name in sorted(held | set(declared)):
        g = {"name": name, "service": name, "generation": "current"}
        finding = _one_service(esc, FRONTENDS, g, {}, tor)
        out.append(dict(("frontend" if k == "service" else k, v) for k, v in finding.items()
                        if k not in ("host", "directory", "generation")))
    return out


def _one_service(esc, host, g, said, tor):
    name = g["name"]
    out = {"host": host, "service": g["service"], "directory": name, "generation": g["generation"],
           "escrow": esc.path(name), "address": None, "tor_address": None, "problem": None}
    try:
        data = esc.read(name, escrows.KEY_FILE)
        hostname = esc.read(name, escrows.HOSTNAME)
    except (escrows.EscrowError, OSError) as exc:
        out["problem"] = "unreadable: %s" % exc
        return out
    if data is None:
        out["problem"] = "no key in the escrow (%s): a rebuilt host would get a new address" % esc.path(
            name, escrows.KEY_FILE)
        return out
    problem = esc.key_problem(name, data, hostname)
    if problem:
        out["problem"] = problem
        return out
    out["address"] = escrows.key_address(data)
    if tor is not None:
        try:
            out["tor_address"] = tor.load(data)
        except TorError as exc:
            out["problem"] = "tor refuses the key: %s" % exc
            return out
        if out["tor_address"] != out["address"]:
            out["problem"] = "tor gives the key the address %s, not %s" % (out["tor_address"], out["address"])
            return out
    summary = said.get((host, g["service"]))
    if summary is not None:
        expected = summary[0] if g["generation"] == "current" else summary[1]
        if expected and expected != out["address"]:
            out["problem"] = ("the summary file says %s for the %s key of %s on %s, the escrow holds %s"
                              % (expected, g["generation"], g["service"], host, out["address"]))
    return out


def _one_client(c, vault):
    out = {"host": c.get("server"), "service": c.get("service"), "client": c.get("name"), "escrow": c["escrow"],
           "problem": None}
    try:
        key = escrows.read_client_key(c["escrow"], vault, reseal=False)
    except (escrows.EscrowError, OSError) as exc:
        out["problem"] = "unreadable: %s" % exc
        return out
    if key is None:
        out["problem"] = "no client key in the escrow (%s): the client's hosts could not be given it again" % (
            c["escrow"])
    return out


def _undeclared(backup_dir, declared):
    """The escrowed keys of no declared (host, directory): [{host, directory, escrow}]; replaced/ ones apart."""
    out = []
    if not os.path.isdir(backup_dir):
        return out
    for host in sorted(os.listdir(backup_dir)):
        host_dir = os.path.join(backup_dir, host)
        if host == FRONTENDS or not os.path.isdir(host_dir) or os.path.islink(host_dir):
            continue
        for name in sorted(os.listdir(host_dir)):
            path = os.path.join(host_dir, name)
            if os.path.isdir(path) and not os.path.islink(path) and (host, name) not in declared and \
                    os.path.lexists(os.path.join(path, escrows.KEY_FILE)):
                out.append({"host": host, "directory": name, "escrow": path})
    return out
