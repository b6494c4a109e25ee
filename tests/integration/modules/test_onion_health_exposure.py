# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A backend the clearnet can find (issue 42), against a real tor (DisableNetwork 1, so every verdict is pending) and
real HTTP servers: a service whose target is 127.0.0.1:P while its server listens on 0.0.0.0:P is warned by
tor_onion_health (real ansible-playbook) and by the watchdog (journal line, metric 1); a service whose server listens
on 127.0.0.1 only ("P", tor's 127.0.0.1:P) and a unix-socket port are not (metric 0)."""

import functools
import http.server

from ansible_collections.onionlab.tor.plugins.module_utils import _onion_watchdog as watchdog
from ansible_collections.onionlab.tor.plugins.module_utils._tor.client import connect
from ansible_collections.onionlab.tor.plugins.module_utils._tor.onion import service_dir_address
from harness.ansible_run import run_playbook
from harness.http_backend import HttpBackend
from harness.ports import free_ports


def _serve(site, address, port):
    """The onion site's page from `site`, on address:port (stopped by the caller)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    return HttpBackend(handler, (address, port))


def test_a_backend_on_every_address_is_warned_one_on_loopback_is_not(tor, tmp_path):
    public, private = free_ports(2, host="0.0.0.0")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text("the onion site's page\n")
    servers = [_serve(tmp_path / "site", "0.0.0.0", public), _serve(tmp_path / "site", "127.0.0.1", private)]
    exposed_dir, quiet_dir = str(tmp_path / "exposed"), str(tmp_path / "quiet")
    try:
        with connect(port=tor.control_port, cookie_path=tor.cookie_path) as ctl:
            ctl.set_conf([("HiddenServiceDir", exposed_dir), ("HiddenServicePort", "80 127.0.0.1:%d" % public),
                          ("HiddenServiceDir", quiet_dir), ("HiddenServicePort", "%d" % private),
                          ("HiddenServicePort", "81 unix:%s" % (tmp_path / "web.sock"))])
        exposed, quiet = service_dir_address(exposed_dir), service_dir_address(quiet_dir)

        run = run_playbook([{"onionlab.tor.tor_onion_health": {"control_port": tor.control_port,
                                                              "cookie_path": tor.cookie_path},
                             "register": "health"}], tmp_path)
        assert run.rc == 0, run.output
        result = run.results("onionlab.tor.tor_onion_health")[0]["result"]
        assert sorted(result["pending"]) == sorted([exposed, quiet]) and result["healthy"] is True
        assert result["exposure"] == {"checked": True, "problem": None}
        assert result["exposed"] == [exposed]
        by_address = {s["address"]: s for s in result["services"]}
        assert by_address[exposed]["exposed"] == [
            {"port": 80, "target": "127.0.0.1:%d" % public, "listening_on": ["0.0.0.0:%d" % public]}]
        assert by_address[quiet]["exposed"] == []
        # the warning as ansible-playbook shows it (the recorded result leaves warnings out)
        shown = " ".join((run.stdout + run.stderr).split())
        print(shown[shown.find("[WARNING]"):][:400])
        assert shown.count("[WARNING]: onion service") == 1, run.output
        assert ("[WARNING]: onion service %s port 80 forwards to 127.0.0.1:%d, and that port also listens on "
                "0.0.0.0:%d" % (exposed, public, public)) in shown, run.output

        config = {"control_port": tor.control_port, "cookie_path": tor.cookie_path, "fetch_timeout": 5,
                  "state_file": str(tmp_path / "wd.json"), "metrics_file": str(tmp_path / "wd.prom"),
                  "restart_command": ["false"]}
        dog = watchdog.Watchdog(config)
        dog.run()
        print("\n".join(dog.lines))
        assert [l for l in dog.lines if "backend=" in l] == [
            "onionlab-watchdog: service=%s backend=exposed port=80 target=127.0.0.1:%d listening_on=0.0.0.0:%d "
            "action=none result=\"a scan of this host's addresses finds the backend and ties the service to the "
            "host; bind the backend to 127.0.0.1 or a unix socket\"" % (exposed, public, public)]
        metrics = (tmp_path / "wd.prom").read_text()
        assert 'onionlab_watchdog_backend_exposed{onion="%s",port="80"} 1' % exposed[:-6] in metrics
        assert 'onionlab_watchdog_backend_exposed{onion="%s",port="%d"} 0' % (quiet[:-6], private) in metrics
        assert 'onionlab_watchdog_backend_exposed{onion="%s",port="81"} 0' % quiet[:-6] in metrics
    finally:
        for server in servers:
            server.stop()
