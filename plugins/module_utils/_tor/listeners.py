# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A backend the clearnet can find: does an onion service's target port also listen on a non-loopback
address of the host? (tor_onion_health, the watchdog.)

The classic way an onion site is located is its backend answering on the host's public address too: a scanner
matches the page, the TLS certificate or the SSH key (OnionScan checks exactly this). So, per service port:

* a unix-socket target is never exposed;
* a target on a loopback address (127.0.0.0/8, ::1) port P is exposed when something also listens on P on
  0.0.0.0, :: or a non-loopback address (each such address is named);
* a target that is itself not a loopback address is exposed.

The listening sockets come from /proc/<tor's PID>/net/tcp and tcp6: the sockets of tor's network namespace, where
its 127.0.0.1 is. Those files' rows: `sl local_address rem_address st ...`; an address is hex 32-bit words in host
order (little-endian on x86 and arm64; IPv4 one word, IPv6 four), a port a hex number, st 0A is LISTEN. The parser
and the classification are pure functions fed text; read_listeners() is the one reader.

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

import binascii
import ipaddress
import os
import sys
from collections import namedtuple

PROC = "/proc"
LISTEN = "0A"
FIX = "bind the backend to 127.0.0.1 or a unix socket"

Listener = namedtuple("Listener", "address port")


def decode_address(text, byteorder=sys.byteorder):
    """An address of /proc/net/tcp (8 hex digits) or tcp6 (32) as an ipaddress object; an IPv4-mapped IPv6
    address (::ffff:a.b.c.d) as its IPv4 address. ValueError when it is neither."""
    raw = binascii.unhexlify(text)
    if len(raw) not in (4, 16):
        raise ValueError("not an address of /proc/net/tcp: %r" % text)
    if byteorder == "little":
        # the kernel prints each 32-bit word of the address as a number in host order
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(raw)
    if address.version == 6 and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def parse_proc_net_tcp(text):
    """The LISTEN sockets of a /proc/net/tcp or /proc/net/tcp6 text, [Listener(address, port)] in their order
    (the header and rows in other states left out; a row that is not one of the kernel's is skipped)."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4 or not fields[0].endswith(":") or fields[3].upper() != LISTEN:
            continue
        address, sep, port = fields[1].partition(":")
        if not sep:
            continue
        try:
            out.append(Listener(decode_address(address), int(port, 16)))
        except ValueError:
            continue
    return out


def show(address, port):
    """ADDRESS:PORT, an IPv6 address in brackets."""
    return ("[%s]:%d" if address.version == 6 else "%s:%d") % (address, port)


def _target_address(text):
    """The ipaddress object of a target address (localhost as 127.0.0.1); None for a name tor resolved."""
    if text == "localhost":
        return ipaddress.ip_address("127.0.0.1")
    try:
        address = ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def port_exposure(port, listeners):
    """One service port ({port, target_address, target_port}, hidden_service.py's shape) against the host's
    listeners: None when it is not exposed, else {port, target, listening_on: [ADDRESS:PORT]}."""
    target = port["target_address"] or ""
    if target.startswith("unix:"):
        return None
    target_port = port["target_port"] if port["target_port"] is not None else port["port"]
    address = _target_address(target)
    shown = show(address, target_port) if address is not None else "%s:%d" % (target, target_port)
    if address is None or not address.is_loopback:
        # tor itself connects to a non-loopback address: what answers there answers the network too
        return {"port": port["port"], "target": shown, "listening_on": [shown]}
    found = []
    for listener in listeners:
        if listener.port == target_port and not listener.address.is_loopback:
            text = show(listener.address, listener.port)
            if text not in found:
                found.append(text)
    if not found:
        return None
    return {"port": port["port"], "target": shown, "listening_on": found}


def service_exposure(ports, listeners):
    """[port_exposure] of each exposed port of a service."""
    out = []
    for port in ports:
        entry = port_exposure(port, listeners)
        if entry is not None:
            out.append(entry)
    return out


def describe(address, entry):
    """One warning for an exposed port of the service at `address`."""
    if entry["listening_on"] == [entry["target"]]:
        where = "forwards to %s, which is not a loopback address" % entry["target"]
    else:
        where = "forwards to %s, and that port also listens on %s" % (entry["target"], ", ".join(entry["listening_on"]))
    return ("onion service %s port %d %s: a scan of this host's addresses finds the backend (its page, TLS "
            "certificate or SSH key) and ties the onion service to this host; %s"
            % (address, entry["port"], where, FIX))


def _process_name(proc, pid):
    """The name of process `pid` of this host: its executable's file name, else (not readable without
    privileges) its comm; None when there is no such process."""
    try:
        exe = os.readlink("%s/%d/exe" % (proc, pid))
        exe = exe[:-len(" (deleted)")] if exe.endswith(" (deleted)") else exe
        return os.path.basename(exe)
    except OSError:
        pass
    try:
        with open("%s/%d/comm" % (proc, pid)) as handle:
            return handle.read().strip()
    except OSError:
        return None


def read_listeners(pid, proc=PROC):
    """([Listener] of tor's network namespace, None), or (None, why the check is not possible): tor (process
    `pid`, GETINFO process/pid) must be a tor process of this host."""
    try:
        pid = int(pid)
    except (TypeError, ValueError):
        return None, "tor did not give its PID (GETINFO process/pid: %r)" % (pid,)
    name = _process_name(proc, pid)
    if name is None:
        return None, ("tor's process %d is not on this host (tor is reached over the network, or runs in another "
                      "PID namespace): run the check on tor's host" % pid)
    if not name.startswith("tor"):
        return None, ("process %d of this host is %s, not tor (tor is reached over the network, or runs in another "
                      "PID namespace): run the check on tor's host" % (pid, name))
    listeners = []
    for name in ("tcp", "tcp6"):
        path = "%s/%d/net/%s" % (proc, pid, name)
        try:
            with open(path) as handle:
                listeners.extend(parse_proc_net_tcp(handle.read()))
        except OSError as exc:
            if name == "tcp6" and not os.path.exists(path):
                continue    # a kernel without IPv6
            return None, "cannot read %s: %s" % (path, exc.strerror or exc)
    return listeners, None
