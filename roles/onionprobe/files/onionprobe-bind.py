# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Installed by the onionlab.tor.onionprobe role; run by its systemd unit as

    PYTHON onionprobe-bind.py ADDRESS ONIONPROBE [ARGUMENTS...]

Onionprobe (the script ONIONPROBE, with ARGUMENTS) with its Prometheus exporter listening on ADDRESS only.
Onionprobe 1.4 starts its exporter with prometheus_client's start_http_server(port), whose address defaults to
0.0.0.0 (every address), and has no option for it. Here that function, under each of its names, is replaced before
Onionprobe is loaded by one that always passes ADDRESS. A prometheus_client without them, or whose functions take
no address, makes Onionprobe fail to start (an error in the journal): the exporter never falls back to every
address. PYTHON must be the interpreter Onionprobe is installed for (/usr/bin/python3 with Debian's package, the
virtualenv's python3 with PyPI's)."""

import functools
import runpy
import sys

NAMES = ("start_http_server", "start_wsgi_server")


def bound(function, address):
    @functools.wraps(function)
    def start(port, addr=None, *args, **kwargs):
        return function(port, address, *args, **kwargs)
    return start


def bind(address):
    """prometheus_client's server functions replaced by ones on address; the names replaced."""
    import prometheus_client
    from prometheus_client import exposition

    done = []
    for module in (prometheus_client, exposition):
        for name in NAMES:
            function = getattr(module, name, None)
            if function is not None:
                setattr(module, name, bound(function, address))
                done.append("%s.%s" % (module.__name__, name))
    if "prometheus_client.start_http_server" not in done:
        raise SystemExit("onionprobe-bind: prometheus_client has no start_http_server: not starting Onionprobe, "
                         "whose exporter would not be bound to %s" % address)
    return done


def main(argv):
    if len(argv) < 3:
        raise SystemExit("usage: %s ADDRESS ONIONPROBE [ARGUMENTS...]" % argv[0])
    address, script = argv[1], argv[2]
    bind(address)
    sys.argv = [script] + argv[3:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv)
