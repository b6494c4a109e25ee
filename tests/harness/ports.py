"""Free TCP ports on 127.0.0.1 for the harness (standard library only): every test, fake, tor and
bed host takes its ports from here.

* ``free_ports(n)`` / ``free_port()``: ports nobody listens on, picked at random outside the kernel's
  ephemeral range (tor's ports, backends, Prometheus, a test's own listener);
* ``choose_ssh_ports(n, claimed)``: the bed hosts' sshd block 22N1..22Nn (``port_free``: one fixed
  port), skipping the ports other beds claim (hostbed.claimed_ports).
"""

from __future__ import annotations

import random
import socket

SSH_BASE_PORT = 2200


def _listen_port_pool():
    """Ports to listen on: below the kernel's ephemeral range (ip_local_port_range), where the
    outgoing connections of every other process (other tors, ssh, ansible) take their source
    ports, so a port found free there can be taken before our tor binds it; above 10000."""
    try:
        with open('/proc/sys/net/ipv4/ip_local_port_range') as f:
            lo, hi = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        lo, hi = 32768, 60999
    if lo - 10000 >= 4096:
        return range(10000, lo)
    return range(hi + 1, 65536)


def free_ports(n, host='127.0.0.1'):
    """Return n distinct free TCP ports on host, picked at random outside the ephemeral range
    (so concurrent runs on one host rarely even try the same one) and each checked by binding
    it; all held open until chosen."""
    pool = _listen_port_pool()
    rng = random.SystemRandom()
    socks, ports = [], []
    try:
        for _ in range(200 * n):
            if len(ports) == n:
                break
            port = rng.choice(pool)
            if port in ports:
                continue
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((host, port))
            except OSError:
                s.close()
                continue
            socks.append(s)
            ports.append(port)
        if len(ports) < n:
            raise OSError('no %d free ports on %s in %d-%d' % (n, host, pool.start, pool.stop - 1))
    finally:
        for s in socks:
            s.close()
    return ports


def free_port():
    """One free loopback port (free_ports(1))."""
    return free_ports(1)[0]


def port_free(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(('127.0.0.1', port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def choose_ssh_ports(n, claimed=()):
    """A block 22N1..22Nn (N = 0, 1, ...) of free ports that no other bed claims."""
    for base in range(SSH_BASE_PORT, 2900, 10 if n < 10 else 100):
        ports = [base + i for i in range(1, n + 1)]
        if not set(ports) & set(claimed) and all(port_free(p) for p in ports):
            return ports
    raise RuntimeError('no free block of ssh ports from %d' % SSH_BASE_PORT)
