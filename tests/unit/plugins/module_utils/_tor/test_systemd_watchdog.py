# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tor role's systemd watchdog decisions (plugins/module_utils/_tor/systemd_watchdog.py): the unit, the drop-in,
what the running tor pings for, when a new value needs a restart. On a bed host: test_tor_watchdog_bed.py."""

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import systemd_watchdog as wd


@pytest.mark.parametrize("family, name, unit", [
    ("Debian", "tor", "tor@default.service"), ("Debian", "tor.service", "tor@default.service"),
    ("Debian", "tor@relay", "tor@relay.service"), ("RedHat", "tor", "tor.service"), (None, None, "tor.service")])
def test_unit(family, name, unit):
    assert wd.unit(family, name) == unit


def test_dropin():
    text = wd.dropin_text(120)
    assert text.startswith(wd.HEADER) and text.endswith("[Service]\nWatchdogSec=120\n")
    assert wd.dropin_text(0) is None
    with pytest.raises(ValueError):
        wd.dropin_text(-1)
    assert wd.dropin_path("tor@default.service") == "/etc/systemd/system/tor@default.service.d/onionlab-watchdog.conf"


def test_running_watchdog_usec():
    assert wd.running_watchdog_usec(b"HOME=/\0WATCHDOG_PID=7\0WATCHDOG_USEC=120000000\0") == 120000000
    assert wd.running_watchdog_usec(b"HOME=/\0") == 0
    assert wd.running_watchdog_usec(b"WATCHDOG_USEC=x\0") == 0
    assert wd.running_watchdog_usec(None) == 0


def test_pending_message():
    assert wd.pending_message("tor@default.service", 0, 120) == (
        "tor@default.service: WatchdogSec=120 is written; the running tor has no watchdog until it next starts "
        "(systemd gives a running service none at daemon-reload; a restart of tor applies it).")
    assert wd.pending_message("tor@default.service", 0, 0) is None
    assert wd.pending_message("tor@default.service", 120000000, 120) is None
    assert wd.pending_message("tor@default.service", 10000000, 20) == (
        "tor@default.service: WatchdogSec=20 is written; the running tor keeps its watchdog of 10 s until it next "
        "starts (systemd keeps a running service's watchdog across daemon-reload).")
    assert "WatchdogSec=0 (off) is written" in wd.pending_message("tor@default.service", 10000000, 0)
