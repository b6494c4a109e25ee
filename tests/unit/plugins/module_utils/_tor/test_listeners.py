# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""listeners.py: /proc/net/tcp and tcp6 parsed (rows recorded from Linux 6.18 on x86_64 with Python sockets bound to
each kind of address, some rows ESTABLISHED), each service port classified, and where the listeners are read from
(tor's /proc/PID, only when that process is a tor of this host)."""

import ipaddress
import os

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import listeners

# 0.0.0.0:18080, 127.0.0.1:18081, 127.0.0.2:18081, 192.0.2.2:18086 listening; a connection to 127.0.0.1:18081
# (both ends, state 01)
TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
 149: 00000000:46A0 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 651134 1 00000000e146df54 100 0 0 10 0
 156: 0100007F:46A1 00000000:0000 0A 00000000:00000001 00:00000000 00000000     0        0 651135 2 00000000eb69cd7c 100 0 0 10 0
 213: 0200007F:46A1 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 651136 1 000000000f5cee4e 100 0 0 10 0
  23: 020200C0:46A6 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 653076 1 00000000e0905cb5 100 0 0 10 0
 379: 0100007F:ED24 0100007F:46A1 01 00000000:00000000 00:00000000 00000000     0        0 651141 2 0000000037f1e148 20 0 0 10 -1
1369: 0100007F:46A1 0100007F:ED24 01 00000000:00000000 00:00000000 00000000     0        0 0 1 00000000fea423aa 20 0 0 10 -1
"""

# [::1]:18083, [::ffff:0.0.0.0]:18085 and [::]:18082 (v6only off / on), [::ffff:127.0.0.1]:18084, [fd00::2]:18087
TCP6 = """\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:46A3 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 651138 1 0000000070c91bdd 100 0 0 10 0
   1: 0000000000000000FFFF000000000000:46A5 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 651140 1 0000000031e123ff 100 0 0 10 0
   2: 00000000000000000000000000000000:46A2 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 651137 1 00000000f96239b0 100 0 0 10 0
   3: 0000000000000000FFFF00000100007F:46A4 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 651139 1 000000002c09b7c3 100 0 0 10 0
   0: 000000FD000000000000000002000000:46A7 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 653077 1 000000009c522e57 100 0 0 10 0
   4: 0000000000000000FFFF00000100007F:46A4 0000000000000000FFFF00000100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 20 0 0 10 -1
"""


def _shown(found):
    return [listeners.show(l.address, l.port) for l in found]


def test_ipv4_rows_listen_only():
    assert _shown(listeners.parse_proc_net_tcp(TCP)) == [
        "0.0.0.0:18080", "127.0.0.1:18081", "127.0.0.2:18081", "192.0.2.2:18086"]


def test_ipv6_rows_wildcard_loopback_and_mapped_as_ipv4():
    found = listeners.parse_proc_net_tcp(TCP6)
    assert _shown(found) == ["[::1]:18083", "0.0.0.0:18085", "[::]:18082", "127.0.0.1:18084", "[fd00::2]:18087"]
    assert [l.address.version for l in found] == [6, 4, 6, 4, 6]


def test_big_endian_words_are_read_as_they_are():
    assert str(listeners.decode_address("7F000001", byteorder="big")) == "127.0.0.1"
    assert str(listeners.decode_address("00000000000000000000000000000001", byteorder="big")) == "::1"


def test_rows_that_are_not_the_kernels_are_skipped():
    text = "garbage\n 1: 0100007F 00000000:0000 0A\n 2: 0100:1F90 00000000:0000 0A\n 3: ZZ00007F:1F90 x 0A\n"
    assert listeners.parse_proc_net_tcp(text) == []
    assert listeners.parse_proc_net_tcp("") == []


ALL = listeners.parse_proc_net_tcp(TCP) + listeners.parse_proc_net_tcp(TCP6)


def _port(port, address, target_port=None):
    return {"port": port, "target_address": address, "target_port": target_port}


@pytest.mark.parametrize("port,expected", [
    # a unix socket is never exposed
    (_port(80, "unix:/run/web.sock"), None),
    # loopback target, the port also on 0.0.0.0 / :: / a public address / ::ffff:0.0.0.0
    (_port(80, "127.0.0.1", 18080), {"port": 80, "target": "127.0.0.1:18080", "listening_on": ["0.0.0.0:18080"]}),
    (_port(80, "127.0.0.1", 18082), {"port": 80, "target": "127.0.0.1:18082", "listening_on": ["[::]:18082"]}),
    (_port(80, "::1", 18086), {"port": 80, "target": "[::1]:18086", "listening_on": ["192.0.2.2:18086"]}),
    (_port(443, "127.0.0.1", 18085), {"port": 443, "target": "127.0.0.1:18085", "listening_on": ["0.0.0.0:18085"]}),
    (_port(80, "127.0.0.1", 18087), {"port": 80, "target": "127.0.0.1:18087", "listening_on": ["[fd00::2]:18087"]}),
    # loopback only: 127.0.0.1 and 127.0.0.2 (127.0.0.0/8), ::1, ::ffff:127.0.0.1; nothing listening at all
    (_port(80, "127.0.0.1", 18081), None),
    (_port(80, "::1", 18083), None),
    (_port(80, "127.0.0.1", 18084), None),
    (_port(80, "::ffff:127.0.0.1", 18084), None),
    (_port(80, "127.0.0.1", 9), None),
    # a target that is itself not a loopback address
    (_port(80, "192.0.2.7", 8080), {"port": 80, "target": "192.0.2.7:8080", "listening_on": ["192.0.2.7:8080"]}),
    (_port(80, "2001:db8::7", 80), {"port": 80, "target": "[2001:db8::7]:80", "listening_on": ["[2001:db8::7]:80"]}),
    (_port(80, "0.0.0.0", 18081), {"port": 80, "target": "0.0.0.0:18081", "listening_on": ["0.0.0.0:18081"]}),
])
def test_port_exposure(port, expected):
    assert listeners.port_exposure(port, ALL) == expected


def test_a_port_listening_on_several_public_addresses_names_each_once():
    found = ALL + [listeners.Listener(ipaddress.ip_address("0.0.0.0"), 18080),
                   listeners.Listener(ipaddress.ip_address("::"), 18080)]
    assert listeners.port_exposure(_port(80, "127.0.0.1", 18080), found)["listening_on"] == [
        "0.0.0.0:18080", "[::]:18080"]


def test_service_exposure_and_its_warning():
    ports = [_port(80, "127.0.0.1", 18080), _port(81, "127.0.0.1", 18081), _port(82, "unix:/run/a.sock"),
             _port(83, "192.0.2.7", 8080)]
    exposed = listeners.service_exposure(ports, ALL)
    assert [e["port"] for e in exposed] == [80, 83]
    text = listeners.describe("x.onion", exposed[0])
    assert text.startswith("onion service x.onion port 80 forwards to 127.0.0.1:18080, and that port also listens "
                           "on 0.0.0.0:18080: a scan of this host's addresses finds the backend")
    assert text.endswith("bind the backend to 127.0.0.1 or a unix socket")
    assert "192.0.2.7:8080, which is not a loopback address" in listeners.describe("x.onion", exposed[1])


def _proc(tmp_path, pid, name=None, exe=None, tcp=TCP, tcp6=TCP6):
    base = tmp_path / "proc" / str(pid)
    (base / "net").mkdir(parents=True)
    if exe:
        os.symlink(exe, str(base / "exe"))
    if name:
        (base / "comm").write_text(name + "\n")
    if tcp is not None:
        (base / "net" / "tcp").write_text(tcp)
    if tcp6 is not None:
        (base / "net" / "tcp6").write_text(tcp6)
    return str(tmp_path / "proc")


def test_read_listeners_of_a_tor_of_this_host(tmp_path):
    proc = _proc(tmp_path, 4242, exe="/usr/sbin/tor")
    found, why = listeners.read_listeners("4242", proc)
    assert why is None and len(found) == 9
    proc = _proc(tmp_path / "b", 4243, name="tor", tcp6=None)      # exe unreadable (not root): its comm; no IPv6
    found, why = listeners.read_listeners(4243, proc)
    assert why is None and len(found) == 4


@pytest.mark.parametrize("pid,name,why", [
    (None, None, "tor did not give its PID"),
    ("77", None, "tor's process 77 is not on this host (tor is reached over the network"),
    ("77", "sshd", "process 77 of this host is sshd, not tor"),
])
def test_no_check_where_tor_is_not_a_process_of_this_host(tmp_path, pid, name, why):
    proc = _proc(tmp_path, 78, name="tor") if name is None else _proc(tmp_path, 77, name=name)
    found, problem = listeners.read_listeners(pid, proc)
    assert found is None and problem.startswith(why), problem


def test_unreadable_tcp_table_is_said(tmp_path):
    proc = _proc(tmp_path, 5, name="tor", tcp=None)
    found, problem = listeners.read_listeners(5, proc)
    assert found is None and problem.startswith("cannot read %s/5/net/tcp: " % proc)
