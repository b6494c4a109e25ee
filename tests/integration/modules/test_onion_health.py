# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_onion_health on the private network (issue 27.1), tor as the oracle: for a new service, the descriptor tor
uploads for the time period clients use is signed with our blinded key, and tor's HS_DESC UPLOAD events name
exactly the HSDirs our hash ring says are responsible, with our HSDir index for each (HSDIR_INDEX=). Then the
module through ansible-playbook: healthy once uploaded (the same in check mode), a service whose descriptor never
reached the HSDirs (PublishHidServDescriptors 0) unhealthy with its reasons, an address tor does not serve refused.
Then the watchdog's first step on that service: its descriptor posted again, healthy at the next check."""

import base64
import time

from ansible_collections.onionlab.tor.plugins.module_utils import _onion_watchdog as watchdog
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion, onion_health
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from harness.ansible_run import run_playbook


def _ctl(node):
    return connect(port=node.control_port, cookie_path=node.cookie_path, timeout=30)


def _uploads(ctl, service_id, deadline):
    """tor's HS_DESC UPLOAD events for the service ({descid: {fingerprint: HSDIR_INDEX}}) until one upload of
    each descriptor was acknowledged (UPLOADED) or the deadline."""
    uploads, uploaded = {}, 0
    index = 0
    while time.monotonic() < deadline:
        while index < len(ctl.events):
            words = ctl.events[index].lines[0].text.split()
            index += 1
            if len(words) >= 6 and words[:2] == ["HS_DESC", "UPLOAD"] and words[2] == service_id:
                fields = dict(w.split("=", 1) for w in words[6:] if "=" in w)
                uploads.setdefault(words[5], {})[words[4][1:41]] = fields.get("HSDIR_INDEX")
            elif len(words) >= 5 and words[:2] == ["HS_DESC", "UPLOADED"] and words[2] == service_id:
                uploaded += 1
        if len(uploads) >= 2 and uploaded >= 2:
            break
        ctl.sock.wait_event(max(0.1, deadline - time.monotonic()))
    return uploads, uploaded


def test_ring_and_blinded_key_are_tors(privnet):
    with _ctl(privnet.onion) as ctl:
        ctl.request("SETEVENTS", ["HS_DESC"])
        added = ctl.add_onion([(80, "127.0.0.1:9")], flags=["Detach"])
        sid = added["service_id"]
        try:
            uploads, uploaded = _uploads(ctl, sid, time.monotonic() + 90)
            period, ring, network = onion_health.network_view(ctl)
        finally:
            ctl.request("SETEVENTS", [])
        print("uploads seen: %s; UPLOADED %d; ring: %s, period %d (%d min, SRV %s)"
              % ({k: len(v) for k, v in uploads.items()}, uploaded, network, period.number, period.length,
                 period.srv_source))
        public = onion.parse_onion_address(sid)
        ours = base64.b64encode(onion.blinded_public_key(public, period.number, period.length)).decode().rstrip("=")
        assert ours in uploads, (ours, list(uploads))          # the descriptor of the clients' period
        responsible = ring.responsible(base64.b64decode(ours + "="), network["replicas"], network["spread_store"])
        assert sorted(f for f, _n, _r in responsible) == sorted(uploads[ours])
        by_fingerprint = dict((fp, key) for key, fp, _nick in ring.nodes)
        for fingerprint, hsdir_index in uploads[ours].items():
            assert by_fingerprint[fingerprint].hex().upper() == hsdir_index, fingerprint
        ctl.del_onion(sid)


def _health(privnet, tmp_path, check=False, **args):
    task = dict({"control_port": privnet.onion.control_port, "cookie_path": privnet.onion.cookie_path}, **args)
    return run_playbook([{"onionlab.tor.tor_onion_health": task, "register": "health"},
                         {"ansible.builtin.debug": {"var": "health"}}], tmp_path, check=check)


def _wait_healthy_or_state(ctl, address, wanted, deadline):
    """run_check until the service's state is `wanted`; each check's reasons printed."""
    while True:
        result = onion_health.check(ctl, addresses=[address], timeout=20)
        entry = result["services"][0]
        print("%s: %s %s" % (address[:12], entry["state"], entry["reasons"]))
        if entry["state"] == wanted or time.monotonic() > deadline:
            return entry
        ctl.sock.wait_event(2.0)       # a pause that also keeps the connection's events flowing


def test_module_healthy_then_an_unpublished_service_repaired_by_the_watchdog(privnet, tmp_path):
    with _ctl(privnet.onion) as ctl:
        published = ctl.add_onion([(80, "127.0.0.1:9")], flags=["Detach"])["service_id"] + ".onion"
        entry = _wait_healthy_or_state(ctl, published, "healthy", time.monotonic() + 120)
        assert entry["state"] == "healthy", entry
        run = _health(privnet, tmp_path, addresses=[published])
        assert run.rc == 0 and '"healthy": true' in run.output, run.output
        checked = _health(privnet, tmp_path, check=True, addresses=[published])
        assert checked.rc == 0 and '"changed": false' in checked.output, checked.output
        stranger = onion.onion_address(onion.ed25519_public_from_expanded(bytes(range(64)))) + ".onion"
        refused = _health(privnet, tmp_path, addresses=[stranger])
        assert refused.rc != 0 and "not an onion service of this tor: %s" % stranger in refused.output

        # a service tor runs whose descriptor never reached the HSDirs
        ctl.set_conf([("PublishHidServDescriptors", "0")])
        try:
            hidden = ctl.add_onion([(80, "127.0.0.1:9")], flags=["Detach"])["service_id"] + ".onion"
            entry = _wait_healthy_or_state(ctl, hidden, "unhealthy", time.monotonic() + 60)
            assert entry["state"] == "unhealthy" and entry["counts"]["missing"] == entry["counts"]["responsible"]
            assert "answer NOT_FOUND" in entry["reasons"][0]
            # the watchdog posts it when tor's own descriptor is the one clients fetch now (else it has no copy:
            # wait for that, at most one time period of the private network)
            deadline = time.monotonic() + 300
            while True:
                result, services = onion_health.run_check(ctl, addresses=[hidden], timeout=20)
                if onion_health.reference_text(services[hidden]) or time.monotonic() > deadline:
                    break
                ctl.sock.wait_event(5.0)
            assert onion_health.reference_text(services[hidden]), "tor's descriptor never became the current one"
            config = {"control_port": privnet.onion.control_port, "cookie_path": privnet.onion.cookie_path,
                      "addresses": [hidden], "state_file": str(tmp_path / "wd.json"),
                      "metrics_file": str(tmp_path / "wd.prom"), "restart_command": ["false"],
                      "confirm_checks": 1}
            started = time.monotonic()
            first = watchdog.Watchdog(config)
            first.run()
            second = watchdog.Watchdog(config)
            second.run()
            print("\n".join(first.lines + second.lines))
            print("repaired in %.1f s (two checks)" % (time.monotonic() - started))
            assert "action=repost" in first.lines[0] and "uploaded" in first.lines[0], first.lines
            assert "healthy again after step 1 (repost)" in second.lines[0], second.lines
            metrics = (tmp_path / "wd.prom").read_text()
            assert 'onionlab_watchdog_repairs_total{onion="%s",step="repost"} 1' % hidden[:-6] in metrics
            assert 'onionlab_watchdog_healthy{onion="%s"} 1' % hidden[:-6] in metrics
        finally:
            ctl.set_conf([("PublishHidServDescriptors", "1")])
