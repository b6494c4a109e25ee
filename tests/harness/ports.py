"""The bed hosts' ssh ports (a part of tests/harness/hosts.py): a block 22N1..22Nn that is free
here and that no other bed claims. Other ports (tor's, the backends') come from
privnet.free_ports."""


from __future__ import annotations

import socket


SSH_BASE_PORT = 2200


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
