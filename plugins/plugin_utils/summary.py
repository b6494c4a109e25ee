# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_service role's summary file on the controller (onion_service_summary_file): one YAML list
of entries (host, service, onion address, ports, Onion-Location, ...), written by each host's run of the
action plugin onion_service_deploy under a lock on the file's directory, read-merge-replace:

- a host whose task succeeded replaces its own entries (refreshed: true, refreshed_at: now, run_id: this
  run), so that a service it no longer serves leaves the file;
- a host whose task failed keeps its entries, marked refreshed: false (refreshed_at stays the time of their
  last refresh);
- every entry that this run has not refreshed (a host that failed earlier, was skipped or left out by
  --limit) is marked refreshed: false too: a service still served is never dropped from the file.

Hosts merge one at a time, so a play with strategy free or many forks writes the same file as linear, and
each host's task reports only its own host's changes. No key material is ever written here.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time

from ansible.module_utils.common.yaml import yaml_dump, yaml_load


HEADER = """\
# Onion services deployed by onionlab.tor.onion_service (written by the role on each run; edits are lost)
# onion_location: the value of the Onion-Location header a clearnet site of the service would send
# (followed by the request's path, see the guide); clients: the clients a service with client
# authorization admits (probe: the health check's own, kept on the host); previous_onion_address: the address of the
# previous key generation, served until previous_until (service key rotation).
# refreshed: false when the last run that wrote this file did not refresh the host's entries (the host
# failed, was skipped or not in the play): they are its last known entries, as of refreshed_at (UTC).
"""


def entries(host, present, addresses, previous, tor_version=None):
    """The summary entries of one host: its current key generations, from the action's `present` and the
    service -> address facts (current and previous generation); tor_version: the version of the tor that runs them
    (GETINFO version, issue 39: which tor serves which address, across a fleet's upgrade)."""
    out = []
    for svc in sorted((g for g in present if g.get("generation") == "current"), key=lambda g: g["service"]):
        address = addresses.get(svc["service"])
        ports = [int(p["port"]) for p in svc.get("ports") or [] if isinstance(p, dict) and "port" in p]
        entry = dict(host=host, service=svc["service"], onion_address=address, ports=ports)
        # clients reach an Onionbalance backend through its frontend: that is the address a clearnet site names
        shown = address
        if svc.get("onionbalance_frontend"):
            frontend = str(svc["onionbalance_frontend"])
            shown = entry["onionbalance_frontend"] = frontend if frontend.endswith(".onion") else frontend + ".onion"
        entry["onion_location"] = (("http://" + shown) if address and 80 in ports
                                   else ("https://" + shown) if address and 443 in ports else None)
        if svc.get("clients"):   # client authorization: the names of the clients (probe: the health check's own)
            entry["clients"] = list(svc["clients"])
        if tor_version:
            entry["tor_version"] = tor_version
        if svc.get("key", 1) != 1:
            entry["key"] = svc["key"]
        if previous.get(svc["service"]):
            entry["previous_onion_address"] = previous[svc["service"]]
            entry["previous_until"] = str(svc.get("previous_until"))
        out.append(entry)
    return out


def _read(path):
    try:
        with open(path) as handle:
            data = yaml_load(handle)
    except FileNotFoundError:
        return []
    except Exception as exc:  # noqa: BLE001 - PyYAML's YAMLError (PyYAML comes with ansible-core, not by name here)
        raise ValueError("the summary file %s is not YAML (%s); move it away" % (path, exc.__class__.__name__))
    if data is None:
        return []
    if not isinstance(data, list) or not all(isinstance(e, dict) and "host" in e for e in data):
        raise ValueError("the summary file %s is not a list of the role's entries; move it away" % path)
    return data


def merge(path, host, run_id, fresh=None, now=None):
    """Merge one host's part of this run into the summary file at `path`, under a lock.
    fresh: the host's new entries (see entries()), or None when the host's task failed (its entries are kept,
    marked not refreshed). Returns the file's entries as written."""
    now = now or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    directory = os.path.dirname(os.path.abspath(path))
    lock = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = []
        for entry in _read(path):
            if entry["host"] == host and fresh is not None:
                continue
            if entry["host"] == host or entry.get("run_id") != run_id:
                entry["refreshed"] = False
            out.append(entry)
        for entry in fresh or []:
            out.append(dict(entry, refreshed=True, refreshed_at=now, run_id=run_id))
        out.sort(key=lambda e: (str(e["host"]), str(e.get("service"))))
        out = json.loads(json.dumps(out, default=str))   # plain types (ansible-core 2.19 tags its strings)
        fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(HEADER)
                handle.write(yaml_dump(out, default_flow_style=False, sort_keys=False, width=1000)
                             if out else "[]\n")
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return out
    finally:
        os.close(lock)


def lines(host, present, addresses, previous):
    """One readable line for the run's output: service -> onion address (and the previous one while a
    rotation is on). Addresses only, never a key."""
    parts = []
    for svc in sorted((g for g in present if g.get("generation") == "current"), key=lambda g: g["service"]):
        text = "%s -> %s" % (svc["service"], addresses.get(svc["service"]) or "(no address yet)")
        if previous.get(svc["service"]):
            text += " (previous %s until %s)" % (previous[svc["service"]], svc.get("previous_until"))
        parts.append(text)
    return "onion_service on %s: %s" % (host, "; ".join(parts) if parts else "no services")
