# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_socks_lines: the tor role's SocksPort lines (the decision: test_torrc.py's test_socks_lines); tor accepts what
it writes, and a bad tor_health_socks_port is refused naming it."""

import os
import subprocess
import tempfile

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.tor_socks_lines import tor_socks_lines

TOR = "/usr/bin/tor"


@pytest.mark.skipif(not os.path.exists(TOR), reason="needs tor")
@pytest.mark.parametrize("socks, health", [("0", "auto"), (None, "9061"), ("unix:/run/x/socks", "auto"),
                                           ("0", False), ("9062", "auto")])
def test_tor_accepts_the_lines(socks, health):
    lines = tor_socks_lines(socks, health, {}, [])
    with tempfile.TemporaryDirectory() as d:
        defaults = os.path.join(d, "defaults")
        with open(defaults, "w") as f:  # Debian's defaults torrc's SocksPort lines
            f.write("SocksPort unix:%s/socks WorldWritable\nSocksPort 9050\n" % d)
        torrc = os.path.join(d, "torrc")
        with open(torrc, "w") as f:
            f.write("DataDirectory %s/data\n%s\n" % (d, "\n".join(lines)))
        p = subprocess.run([TOR, "--verify-config", "--defaults-torrc", defaults, "-f", torrc],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
    assert p.returncode == 0 and "Configuration was valid" in p.stdout, (lines, p.stdout[-1500:])


def test_refused_naming_the_variable():
    with pytest.raises(AnsibleFilterError) as e:
        tor_socks_lines("0", "9050\nControlPort 0.0.0.0:9052")
    assert str(e.value).startswith("tor_health_socks_port must be auto, false or a port number")
