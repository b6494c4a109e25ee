# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd's watchdog for tor's unit, as plain data (no Ansible, no I/O): the drop-in's text and path, and what a
run says when the running tor's watchdog differs from it.

tor (built with libsystemd, as Debian's is) reads WATCHDOG_USEC once, when its main loop starts
(do_main_loop, src/core/mainloop/mainloop.c: sd_watchdog_enabled(1, ...)), and from then on sends WATCHDOG=1
every WATCHDOG_USEC / 2 from a libevent timer of that loop. It sends READY=1 just before (run_tor_main_loop, after
loading the cached consensus and descriptors), and systemd arms the watchdog only once start-up is complete, so a
slow start is TimeoutStartSec's business, not the watchdog's.

systemd keeps a running service's watchdog across daemon-reload (measured with systemd 252 on Debian 12: a drop-in
added, changed or removed leaves WatchdogUSec of the running tor@default as it started, and a tor started without one
is not killed): a new value takes effect when tor next starts, for systemd and tor alike. So a change never breaks the
running tor, and the role never restarts tor for it (pending_message says why); the drop-in, a new length or 0
waits for tor's next start."""

from __future__ import annotations

DROPIN_NAME = 'onionlab-watchdog.conf'
HEADER = '# Written by the onionlab.tor.tor role (tor_watchdog_sec); local changes are overwritten.\n'


def unit(family, service_name):
    """The unit whose main process is tor: Debian's tor.service only starts tor@default.service."""
    name = service_name or 'tor'
    if family == 'Debian' and name in ('tor', 'tor.service'):
        return 'tor@default.service'
    return name if '.' in name else name + '.service'


def dropin_path(unit_name):
    return '/etc/systemd/system/%s.d/%s' % (unit_name, DROPIN_NAME)


def dropin_text(seconds):
    """The drop-in's text for WatchdogSec=seconds, or None (no drop-in) for 0."""
    seconds = int(seconds)
    if seconds < 0:
        raise ValueError('tor_watchdog_sec must be 0 (off) or a number of seconds; got %d.' % seconds)
    if seconds == 0:
        return None
    return (HEADER
            + '# tor sends WATCHDOG=1 every WatchdogSec/2 from its main loop; when it stops (a hung or stopped\n'
            + '# process), systemd aborts it and Restart=on-failure starts it again.\n'
            + '[Service]\nWatchdogSec=%d\n' % seconds)


def running_watchdog_usec(environ):
    """WATCHDOG_USEC of a process's environment as started (/proc/PID/environ's bytes; tor unsets it for itself,
    but the block the kernel shows stays as it was at exec), in microseconds; 0 when absent."""
    for item in (environ or b'').split(b'\0'):
        if item.startswith(b'WATCHDOG_USEC='):
            try:
                return int(item.split(b'=', 1)[1])
            except ValueError:
                return 0
    return 0


def pending_message(unit_name, running_usec, seconds):
    """What the run says when the drop-in's value differs from the watchdog of the running tor, which keeps it (or
    runs without one) until it next starts; None when they agree. The role never restarts tor for it: a restart of
    every host's tor at once when the collection is upgraded would take their onion services offline together (and
    tor signals READY=1 before its ControlSocket listens: the next task found no socket)."""
    if running_usec == int(seconds) * 1000000:
        return None
    if not running_usec:
        return ('%s: WatchdogSec=%s is written; the running tor has no watchdog until it next starts (systemd gives a '
                'running service none at daemon-reload; a restart of tor applies it).' % (unit_name, int(seconds)))
    return ('%s: WatchdogSec=%s is written; the running tor keeps its watchdog of %g s until it next starts (systemd '
            'keeps a running service\'s watchdog across daemon-reload).' % (
                unit_name, int(seconds) if int(seconds) else '0 (off)', running_usec / 1000000.0))
