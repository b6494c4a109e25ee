# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reaching an onion service through a client tor, on tor's own events: the one way a test fetches (issue 37).

    reach = Reach(service_tor, client_tor)      # opened BEFORE the change that publishes the service
    ... make the service ...
    body, seconds = reach.fetch(address)        # or reach.wait_published([address]) alone

``fetch`` first waits for what makes an answer possible, each from tor's own events or state, never a fixed
sleep: the client bootstrapped, and the service's descriptor for the client's time period UPLOADED (the
service's ``HS_DESC UPLOADED``) to every HSDir the client will ask (its fetch set on the hash ring of the
*client's* consensus, computed with the collection's ``hsdir_ring``). Only then does the deadline start.
The private network's time period is one SRV run (24 votes: 4 minutes at the 10 s interval), so the blinded
key and the ring change during a suite: when the client's period changes while it waits, the gate is taken
again for the new one and its deadline counted from that event.

On failure the AssertionError holds what both sides saw: each attempt's error (tor's SOCKS code named), the
client's ``HS_DESC`` events and onion-service circuits (``CIRC`` with an HS purpose or this service's
REND_QUERY), the service's ``HS_DESC`` events and introduction circuits, both tors' consensus times and
periods, and the last lines of both tors' rend logs (``Log [rend]info``).

A side is anything with ``control_port`` and ``cookie_path`` (a ``harness.privnet.Node``, or
``harness.reach.Tor(port, cookie_path, name, rend_log)`` for a bed host's tor); the client also needs
``socks_port``.
"""

import base64
import os
import time

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion as _onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion_health as _health
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.fixtures import SocksError, _say, socks5_http_get, unless_rend_given_up

HS_PURPOSES = ('HS_CLIENT_HSDIR', 'HS_CLIENT_INTRO', 'HS_CLIENT_REND', 'HS_SERVICE_HSDIR', 'HS_SERVICE_INTRO',
               'HS_SERVICE_REND', 'HS_VANGUARDS')


class Tor:
    """A tor the harness did not start as a Node (a bed host's): its control port, cookie and rend log."""

    def __init__(self, control_port, cookie_path, name='tor', socks_port=None, rend_logfile=None):
        self.control_port, self.cookie_path, self.name = control_port, cookie_path, name
        self.socks_port, self.rend_logfile = socks_port, rend_logfile


def _children(pid):
    out = []
    for entry in os.listdir('/proc'):
        try:
            with open('/proc/%s/stat' % entry) as f:
                if entry.isdigit() and int(f.read().rsplit(')', 1)[1].split()[1]) == pid:
                    out.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return out


def bed_tor(host):
    """The tor of a bed host (harness.hostbed: its ControlPort on 127.0.0.1, Debian's cookie
    /run/tor/control.authcookie on the container's own /run, read through /proc/<its init>/root)."""
    inits = _children(host['pid'])
    cookie = '/proc/%d/root/run/tor/control.authcookie' % inits[0] if inits else None
    return Tor(host['tor_control_port'], cookie, host['name'], socks_port=host.get('tor_socks_port'))


class Watch:
    """One tor's events on a control connection of its own, each kept with its time (seconds since opened)."""

    def __init__(self, tor, kinds):
        self.tor = tor
        self.name = getattr(tor, 'name', 'tor')
        self.ctl = connect(port=tor.control_port, cookie_path=tor.cookie_path)
        self.ctl.request('SETEVENTS', list(kinds))
        self.t0 = time.monotonic()
        self.seen = []      # (seconds, event text)
        self.contents = []  # (seconds, [HS_DESC_CONTENT, address, descriptor id, hsdir], descriptor text)

    def poll(self):
        self.ctl.get_info('version')    # reads the events that came before its reply
        now = time.monotonic() - self.t0
        for event in self.ctl.events:
            text = event.lines[0].text
            self.seen.append((now, text))
            if text.startswith('HS_DESC_CONTENT '):
                self.contents.append((now, text.split(), event.lines[0].data or ''))
        del self.ctl.events[:]
        return self.seen

    def view(self):
        """(Period, Ring, summary) of this tor's consensus; (None, None, why) without one."""
        ready, phase = _health.bootstrapped(self.ctl)
        if not ready:
            return None, None, 'bootstrapping (%s)' % phase
        return _health.network_view(self.ctl)

    def rend_tail(self, sid, lines=25):
        path = getattr(self.tor, 'rend_logfile', None)
        try:
            with open(path, errors='replace') as f:
                text = f.read().splitlines()
        except (OSError, TypeError):
            return ['(no rend log)']
        mine = [ln for ln in text if sid[:16] in ln or 'intro' in ln.lower() or 'rend' in ln.lower()]
        return (mine or text)[-lines:]

    def close(self):
        try:
            self.ctl.close()
        except OSError:
            pass


def _b64(key):
    return base64.b64encode(key).decode().rstrip('=')


class Reach:
    """The service's and clients' events from before the service is published; fetches that wait for them. A
    client started later is added with add_client (the service's side must be watched from before the change)."""

    def __init__(self, service, *clients, required=True):
        """required=False: a service tor the harness cannot reach (a host whose role rewrote its torrc) is left
        out, and only fetches with since=None (the client asks the HSDirs) work; the report says why."""
        self.service, self.service_problem = None, None
        try:
            self.service = Watch(service, ['HS_DESC'])
        except Exception as exc:  # TorError or OSError, said in the report
            if required:
                raise
            self.service_problem = '%s: %s' % (getattr(service, 'name', 'service'), exc)
        self.clients = []
        try:
            for client in clients:
                self.add_client(client)
        except BaseException:
            self.close()
            raise
        self.gates = []     # (address, seconds since opened, period number, HSDirs asked)
        self.period_seconds = None  # the length of the client's time period, once its consensus was read

    def add_client(self, client):
        """Watch one more client tor (its HS_DESC and CIRC events from now); returns it for fetch(client=)."""
        side = Watch(client, ['HS_DESC', 'HS_DESC_CONTENT', 'CIRC'])
        self.clients.append(side)
        return client

    def _client(self, client):
        if client is None:
            return self.clients[0]
        for side in self.clients:
            if side.tor is client:
                return side
        return self._client(self.add_client(client))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.service is not None:
            self.service.close()
        for side in self.clients:
            side.close()

    # -- the gate -------------------------------------------------------------------------------------
    def mark(self):
        """Now, in the seconds of the service's events: uploads from here on are those of a change made after."""
        self.service.poll()
        return time.monotonic() - self.service.t0

    def _upload_answers(self, sid, since=0.0):
        """[(HSDir fingerprint, blinded key b64, 'UPLOADED', 'FAILED' or None while unanswered)] of the uploads of sid
        the service's tor began at or after since: each answer (which names no descriptor) is that of the HSDir's
        oldest UPLOAD still unanswered."""
        pending, out = {}, []
        for t, text in self.service.poll():
            words = text.split()
            if len(words) < 5 or words[0] != 'HS_DESC' or words[2] != sid:
                continue
            fingerprint = _health._fingerprint(words[4])
            if words[1] == 'UPLOAD':
                upload = [fingerprint, words[5] if len(words) >= 6 else None, None]
                pending.setdefault(fingerprint, []).append(upload)
                if t >= since:
                    out.append(upload)
            elif words[1] in ('UPLOADED', 'FAILED') and pending.get(fingerprint):
                pending[fingerprint].pop(0)[2] = words[1]
        return [tuple(upload) for upload in out]

    def _uploaded(self, sid, since=0.0):
        """{(HSDir fingerprint, blinded key b64)} the service's tor uploaded a descriptor of sid to (uploads begun at
        or after since)."""
        return {(f, blinded) for f, blinded, answer in self._upload_answers(sid, since) if answer == 'UPLOADED'}

    def uploads(self, sid, since=0.0):
        """(begun, answered, uploaded): how many uploads of sid the service's tor began at or after since (a mark()),
        how many of those have their HSDir's answer (UPLOADED or FAILED) and how many were UPLOADED."""
        answers = [answer for _f, _b, answer in self._upload_answers(sid, since)]
        return len(answers), len([a for a in answers if a]), answers.count('UPLOADED')

    def _asked(self, address, client):
        """(period number, blinded key b64, [fingerprints the client will ask]) on the client's consensus now;
        (None, why, []) when it has none."""
        period, ring, summary = client.view()
        if period is None:
            return None, summary, []
        self.period_seconds = period.length * 60
        blinded = _onion.blinded_public_key(_onion.parse_onion_address(address), period.number, period.length)
        responsible = ring.responsible(blinded, summary['replicas'], summary['spread_store'])
        return period.number, _b64(blinded), sorted(_health._client_set(responsible, summary['spread_fetch']))

    def _own_revision(self, sid, blinded):
        """The revision of the descriptor the service's tor publishes now for that blinded key; None when it is not
        watched or holds none for that key (its current one is for another period)."""
        if self.service is None:
            return None
        key = 'hs/service/desc/id/' + sid
        try:
            revision, _lifetime, own = _health.outer_layer(self.service.ctl.get_info(key)[key])
        except Exception:  # 551/552: none built yet
            return None
        return revision if own is not None and _b64(own) == blinded else None

    def _held(self, address, side, blinded, asked, probes, accept=None):
        """{(HSDir, blinded key)} of the HSDirs in asked whose last answer to the client (HS_DESC_CONTENT of an
        HSFETCH it sent them, again every 5 s until each serves it) is the service's current descriptor for that key
        (its revision, when the service's tor is watched): for a service published before the watch began, whose
        uploads the service's events no longer show. An HSDir that still serves an older descriptor does not count:
        tor's revision counter counts from the start of an SRV run, so after a reload or restart near a run's boundary
        a service's new descriptor can carry a lower one, and every HSDir rejects it (HS_DESC FAILED
        REASON=UPLOAD_REJECTED) until the next period's blinded key (seen in a soak: the client kept an older
        descriptor it could not decrypt, 60 s of 0x01). accept(text): an HSDir counts when the descriptor it serves
        passes it instead (for when the service's tor cannot say: its current descriptor is the other period's, the
        one clients of this period do not fetch, so any revision would count)."""
        sid = address[:-len('.onion')]
        side.poll()
        last = {}
        for _t, words, text in side.contents:
            if len(words) >= 4 and words[1] == sid and words[2] == blinded:
                last[_health._fingerprint(words[3])] = text
        if accept is not None:
            have = {(f, blinded) for f, text in last.items() if text and accept(text)}
        else:
            own = self._own_revision(sid, blinded)
            revisions = dict((f, _health.outer_layer(text)[0]) for f, text in last.items())
            have = {(f, blinded) for f, revision in revisions.items()
                    if revision is not None and own in (None, revision)}
        now = time.monotonic()
        missing = ['$' + f for f in asked if (f, blinded) not in have and now - probes.get((f, blinded), -9) > 5]
        if missing:
            side.ctl.hs_fetch(address, missing)
            probes.update(((f[1:], blinded), now) for f in missing)
        return have

    def wait_published(self, addresses, deadline=None, since=0.0, client=None, accept=None):
        """Until each service's descriptor for the client's current period is UPLOADED to every HSDir the client
        will ask (an upload begun at or after since, a mark()); {address: (seconds since this Reach opened,
        period)}. The deadline counts from now: the caller has made the services already; by default one time
        period of the client's consensus and a minute (an upload the HSDirs reject is followed by the next
        period's, under another blinded key). since=None: the service was published before this Reach began (its
        uploads unseen): the client asks those HSDirs itself (HSFETCH) until each serves the descriptor the
        service's tor holds now, or (accept) one whose text passes accept(text)."""
        side = self._client(client)
        start = time.monotonic()
        out, probes = {}, {}
        while True:
            for address in addresses:
                if address in out:
                    continue
                period, blinded, asked = self._asked(address, side)
                if period is None or not asked:
                    continue
                if since is None:
                    have = self._held(address, side, blinded, asked, probes, accept)
                else:
                    have = self._uploaded(address[:-len('.onion')], since)
                if all((f, blinded) in have for f in asked):
                    out[address] = (time.monotonic() - (self.service or side).t0, period)
                    self.gates.append((address, out[address][0], period, len(asked)))
            if len(out) == len(addresses):
                return out
            limit = deadline if deadline is not None else (self.period_seconds or 240) + 60
            if time.monotonic() - start > limit:
                raise AssertionError('not published to the HSDirs the client asks within %.0fs: %s\n%s'
                                     % (limit, sorted(set(addresses) - set(out)),
                                        self.report(next(a for a in addresses if a not in out), side)))
            time.sleep(0.5)

    # -- the fetch ------------------------------------------------------------------------------------
    def fetch(self, address, port=80, path='/', deadline=60.0, interval=1.0, publish_deadline=None, expect=200,
              since=0.0, client=None, socks_port=None):
        """(body, seconds from the gate to the answer) of an HTTP GET through the client once the service is
        published where the client looks; the deadline counts from that event, taken again if the client's period
        changes meanwhile (at most twice). AssertionError with both sides' view otherwise. socks_port: another
        SocksPort of the client's (one with ExtendedErrors names tor's onion-service errors)."""
        side = self._client(client)
        errors = []
        for _ in range(3):
            period = self.wait_published([address], publish_deadline, since, side.tor)[address][1]
            t0 = time.monotonic()
            while True:
                try:
                    # each attempt on circuits of its own (a SOCKS isolation): a circuit that stalls is not waited
                    # on again by the next attempt (the client's CIRC events in the report show it)
                    if self.service is not None:
                        self.service.poll()     # its events stamped when they come, not when a report reads them
                    status, body = self._attempt(socks_port or side.tor.socks_port, address, port, path,
                                                 max(5.0, min(30.0, deadline - (time.monotonic() - t0))),
                                                 'reach-%d-%d' % (id(self) % 10000, len(errors)))
                    if status == expect:
                        took = time.monotonic() - t0
                        gate = self.gates[-1]
                        _say('reached %s...: its descriptor on the %d HSDirs the client asks (period %s) %.1fs after '
                             'the watch began; answered %.1fs later (%d failed attempts before)'
                             % (address[:12], gate[3], gate[2], gate[1], took, len(errors)))
                        return body, took
                    errors.append('%.1fs HTTP %d' % (time.monotonic() - t0, status))
                except (OSError, SocksError) as exc:
                    errors.append('%.1fs %s' % (time.monotonic() - t0, exc))
                now_period = self._asked(address, side)[0]
                if now_period is not None and now_period != period:
                    errors.append('the client\'s time period changed %s -> %s: the gate again' % (period, now_period))
                    break
                if time.monotonic() - t0 + interval > deadline:
                    raise AssertionError('no answer from %s within %.0fs of its descriptor reaching the HSDirs the '
                                         'client asks (%d attempts: %s)\n%s'
                                         % (address, deadline, len(errors), '; '.join(errors[-8:]),
                                            self.report(address, side)))
                time.sleep(interval)
        raise AssertionError('the client\'s time period changed 3 times while fetching %s: %s\n%s'
                             % (address, '; '.join(errors[-8:]), self.report(address, side)))

    def _attempt(self, socks_port, address, port, path, timeout, isolation):
        """(status, body) of one GET on circuits of its own, given up at once when the service's tor logs that it gave
        the rendezvous up (its client would wait on it to the attempt's timeout): a SocksError saying so."""
        log = getattr(self.service.tor, 'rend_logfile', None) if self.service is not None else None
        answer, error, gave_up = unless_rend_given_up(
            lambda opened: socks5_http_get(socks_port, address, port, path, timeout=timeout, username=isolation,
                                           opened=opened), log, isolation)
        if gave_up:
            raise SocksError('the service gave the rendezvous up: %s' % gave_up)
        if error is not None:
            raise error
        return answer

    def received(self, address, client=None):
        """The last descriptor of address an HSDir served the client (its HS_DESC_CONTENT): the one its fetch used.
        Not GETINFO hs/client/desc/id: tor looks that up under the blinded key of the client's period now, so it
        answers nothing once the period has changed since the fetch (seen in a soak: 'holds no descriptor')."""
        side = self._client(client)
        side.poll()
        sid = address[:-len('.onion')]
        texts = [text for _t, words, text in side.contents if len(words) >= 2 and words[1] == sid and text]
        return texts[-1] if texts else None

    # -- what both sides saw ---------------------------------------------------------------------------
    def report(self, address, client=None):
        """What the service's tor and the client's saw of address (the first client's by default)."""
        client = client or self.clients[0]
        sid = address[:-len('.onion')] if address.endswith('.onion') else address
        lines = [] if self.service else ['--- the service\'s tor: not watched (%s)' % self.service_problem]
        for side in [w for w in (self.service, client) if w is not None]:
            side.poll()
            period, ring, summary = side.view()
            lines.append('--- %s (%s): consensus %s, period %s'
                         % (side.name, 'service' if side is self.service else 'client',
                            summary.get('valid_after') if isinstance(summary, dict) else summary,
                            getattr(period, 'number', None)))
            mine = []
            for t, text in side.seen:
                words = text.split()
                if words[:1] == ['HS_DESC'] and len(words) > 2 and words[2] == sid:
                    mine.append('%7.1f %s' % (t, ' '.join(words[1:2] + words[3:5] + words[6:7])))
                elif words[:1] == ['CIRC'] and ('REND_QUERY=%s' % sid in text or
                                                any('PURPOSE=%s' % p in text for p in HS_PURPOSES)):
                    mine.append('%7.1f %s' % (t, ' '.join(w for w in words if not w.startswith(
                        ('BUILD_FLAGS', 'TIME_CREATED', 'SOCKS_', 'HS_POW')))[:200]))
            lines.append('events (%d of %d):' % (min(len(mine), 60), len(mine)))
            lines += mine[-60:]
            if side is self.service:
                try:
                    status = side.ctl.get_info('circuit-status')['circuit-status']
                    intro = [ln[:160] for ln in status.splitlines() if 'HS_SERVICE_INTRO' in ln]
                    lines.append('intro circuits now (%d): %s' % (len(intro), intro))
                except Exception as exc:  # a diagnosis never hides the failure it explains
                    lines.append('circuit-status: %s' % exc)
            lines.append('rend log:')
            lines += side.rend_tail(sid)
        lines.append('gates: %s' % self.gates)
        return '\n'.join(lines)


__all__ = ['Reach', 'Tor', 'Watch', 'bed_tor']
