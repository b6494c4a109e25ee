# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_location role against a real nginx (issue 30 part 3), over ssh, on one stock Debian host of its own
(Debian's tor, offline: not joined to the private network, since only the service's address is needed, which tor
makes from the key without the network; nginx , apache2 and curl from the bed's local apt repository).

The host is both the onion host (the onion_service role) and the clearnet web host: its nginx serves a site on a
loopback port of the bed's, whose server block includes the role's snippet. Seen with ``curl -I`` on the host:

- before the role: no Onion-Location; a snippet that nginx -t refuses (the operator's mistake: included in an
  upstream block too) is removed again, the role fails with nginx's message, nginx keeps serving;
- after the role: ``Onion-Location: http://<address>/some/path?x=1`` (the request's path); a second run changes
  nothing;
- a service key rotation (key 2): check mode shows the change and changes nothing; the run switches the header to
  the new address;
- the service removed (state absent): no header; the second run changes nothing;
- a change that nginx -t refuses puts the working snippet back; the site entry removed and back: the header
  goes and comes back;
- one refusal each for an unknown service and a snippet path that leaves the snippet directory;
- the guide's Apache line in a VirtualHost of Debian's apache2: ``apachectl configtest`` and the header it sends.
"""

import json
import os
import sys
import time
from pathlib import Path

import pytest
import yaml

from harness import hosts as hb
from harness.ansible_run import run_playbook

pytestmark = pytest.mark.timeout(1200)
SNIPPET = "/etc/nginx/snippets/onion-location-web.conf"
GUIDE = Path(__file__).resolve().parents[3] / "docs" / "docsite" / "rst" / "guide_onion_location.rst"


def _say(msg):
    sys.stderr.write("\n[onionlab] %s\n" % msg)
    sys.stderr.flush()


@pytest.fixture(scope="module")
def webhost():
    if os.geteuid() != 0:
        pytest.skip("the host bed needs root (systemd-nspawn)")
    hb.ensure_packages()
    t0 = time.monotonic()
    bed = hb.HostBed(n=1, name_prefix="oloc", stock=True, apt_packages=["apache2", "curl", "nginx"])
    bed.up()
    _say("webhost: 1 stock host up in %.1fs" % (time.monotonic() - t0))
    try:
        yield bed
    finally:
        bed.down()


class Web(object):
    def __init__(self, bed, tmp):
        self.bed, self.tmp = bed, tmp
        self.inventory = bed.inventory()
        (self.name, host), = self.inventory["all"]["children"]["testbed"]["hosts"].items()
        self.port, self.apache_port = host["testbed_app_ports"][:2]
        self.inventory_path = tmp / "inventory.json"
        self.inventory_path.write_text(json.dumps(self.inventory))
        self.summary = tmp / "onion-services.yml"

    def ssh(self, script, check=True):
        return self.bed.sh(script, check=check)[1]

    def header(self, port=None, path="/some/path?x=1"):
        """(status line, the Onion-Location header's value or None) of curl -I on the host."""
        out = self.ssh("curl -sS -I 'http://127.0.0.1:%d%s'" % (port or self.port, path))
        lines = [line.strip() for line in out.splitlines()]
        value = [line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("onion-location:")]
        return lines[0], (value[0] if value else None)

    def run(self, services=None, sites=None, check=False, diff=False):
        plays = []
        if services is not None:
            plays.append({"hosts": "testbed", "gather_facts": False, "become": True, "vars": {
                "onion_service_backup_dir": str(self.tmp / "escrow"),
                "onion_service_summary_file": str(self.summary),
                "onion_services": services}, "roles": ["onionlab.tor.onion_service"]})
        if sites is not None:
            plays.append({"hosts": "testbed", "gather_facts": False, "become": True, "vars": {
                "onion_location_summary_file": str(self.summary),
                "onion_location_sites": sites}, "roles": ["onionlab.tor.onion_location"]})
        t0 = time.monotonic()
        run = run_playbook(plays, self.tmp, check=check, diff=diff, extra_args=["-i", str(self.inventory_path)],
                           timeout=600)
        run.seconds = time.monotonic() - t0
        return run

    def address(self):
        (entry,) = [e for e in yaml.safe_load(self.summary.read_text()) if e["service"] == "web"]
        return entry["onion_address"]


def _changed(run, web):
    return run.stats[web.name]["changed"]


def test_onion_location_follows_the_service_over_ssh(webhost, tmp_path):
    web = Web(webhost, tmp_path)
    t0 = time.monotonic()
    web.ssh(hb.WAIT_CONTROL_SOCKET)
    # Debian's nginx, not started by its package (port 80 is this machine's: the hosts share its network), then
    # the operator's site on a loopback port of the bed's.
    web.ssh("set -e; printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d; "
            "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx apache2 curl "
            ">/dev/null; rm -f /usr/sbin/policy-rc.d /etc/nginx/sites-enabled/default; "
            "printf 'server {\\n    listen 127.0.0.1:%d;\\n    location / { return 200 \"clearnet\\\\n\"; }\\n}\\n' "
            "> /etc/nginx/sites-enabled/clearnet; nginx -t -q; systemctl start nginx" % web.port)
    _say("nginx and apache2 installed, site on 127.0.0.1:%d in %.1fs" % (web.port, time.monotonic() - t0))
    status, before = web.header()
    _say("before the role: %s, Onion-Location %s" % (status, before))
    assert " 200" in status and before is None

    # The operator includes the snippet in the site's server block (and, by mistake, in an upstream block).
    web.ssh("sed -i 's|^}$|    include snippets/onion-location-web.conf;\\n}|' /etc/nginx/sites-enabled/clearnet; "
            "printf 'upstream mistake {\\n    server 127.0.0.1:9;\\n    include snippets/onion-location-web.conf;\\n}\\n'"
            " > /etc/nginx/conf.d/mistake.conf")
    service = [{"name": "web", "ports": [{"port": 80, "target_port": web.port}]}]
    site = [{"service": "web"}]
    refused = web.run(service, site)
    assert refused.rc != 0 and "nginx -t failed with the new snippets" in refused.output, refused.output
    assert '"add_header" directive is not allowed here' in refused.output, refused.output
    gone = web.ssh("test -e %s && echo there || echo absent" % SNIPPET).strip()
    status, value = web.header()
    _say("nginx -t refused (%.1fs): snippet %s, nginx still %s, Onion-Location %s" % (
        refused.seconds, gone, status, value))
    assert gone == "absent" and " 200" in status and value is None
    web.ssh("rm /etc/nginx/conf.d/mistake.conf")

    first = web.run(service, site)
    assert first.rc == 0, first.output
    one = web.address()
    status, value = web.header()
    _say("after the role (%.1fs): Onion-Location %s" % (first.seconds, value))
    assert value == "http://%s/some/path?x=1" % one
    again = web.run(service, site)
    _say("second run %.1fs, changed=%d" % (again.seconds, _changed(again, web)))
    assert again.rc == 0 and _changed(again, web) == 0, again.output

    # Service key rotation: generation 2 is the current one (the old address served until previous_until).
    rotated = [dict(service[0], key=2, previous_until="2099-01-01")]
    applied = web.run(rotated)
    assert applied.rc == 0, applied.output
    two = web.address()
    assert two != one
    snippet_before = web.ssh("cat %s" % SNIPPET)
    checked = web.run(sites=site, check=True, diff=True)
    assert checked.rc == 0 and _changed(checked, web) == 1, checked.output
    assert "+add_header Onion-Location http://%s$request_uri always;" % two in checked.stdout, checked.output
    assert web.ssh("cat %s" % SNIPPET) == snippet_before and web.header()[1] == "http://%s/some/path?x=1" % one
    _say("check mode (%.1fs): changed=1 with the diff, snippet and header unchanged" % checked.seconds)
    switched = web.run(rotated, site)
    assert switched.rc == 0, switched.output
    status, value = web.header()
    _say("after the rotation (%.1fs): Onion-Location %s (previous %s)" % (switched.seconds, value, one))
    assert value == "http://%s/some/path?x=1" % two
    again = web.run(rotated, site)
    assert again.rc == 0 and _changed(again, web) == 0, again.output

    # A change nginx -t refuses (the snippet included in an upstream block again) puts the working snippet back.
    web.ssh("printf 'upstream mistake {\\n    server 127.0.0.1:9;\\n    include snippets/onion-location-web.conf;\\n}\\n'"
            " > /etc/nginx/conf.d/mistake.conf")
    working = web.ssh("cat %s" % SNIPPET)
    third = [dict(service[0], key=3, previous_until="2099-01-01")]
    refused = web.run(third, site)
    assert refused.rc != 0 and "nginx -t failed with the new snippets" in refused.output, refused.output
    three = web.address()
    assert three not in (one, two) and web.ssh("cat %s" % SNIPPET) == working
    assert web.header()[1] == "http://%s/some/path?x=1" % two
    _say("nginx -t refused the key-3 snippet (%.1fs): the working snippet is back, header still the key-2 address"
         % refused.seconds)
    web.ssh("rm /etc/nginx/conf.d/mistake.conf")

    # The site entry removed (pruned), then back: the header goes and comes back (the key-3 address now).
    pruned = web.run(sites=[])
    assert pruned.rc == 0 and web.header()[1] is None, pruned.output
    back = web.run(sites=site)
    assert back.rc == 0 and web.header()[1] == "http://%s/some/path?x=1" % three, back.output
    _say("site entry removed: no header (%.1fs); back: %s (%.1fs)" % (pruned.seconds, web.header()[1], back.seconds))

    # One refusal each.
    unknown = web.run(sites=[{"service": "wbe"}])
    assert unknown.rc != 0 and "unknown service 'wbe': the summary file lists web (%s)" % web.name in unknown.output
    bad = web.run(sites=[{"service": "web", "snippet": "../sites-enabled/clearnet"}])
    assert bad.rc != 0 and "snippet must be a file name ending in .conf" in bad.output, bad.output
    _say("refused: unknown service, bad snippet path; header still %s" % web.header()[1])

    # Apache: the guide's line in a VirtualHost of Debian's apache2 (mod_headers).
    line = [x.strip() for x in GUIDE.read_text().splitlines() if x.strip().startswith("Header always set Onion-Location")]
    assert len(line) == 1, line
    web.ssh("set -e; a2enmod -q headers; a2dissite -q 000-default; echo 'Listen 127.0.0.1:%d' > /etc/apache2/ports.conf; "
            "printf '<VirtualHost 127.0.0.1:%d>\\n    %s\\n</VirtualHost>\\n' > /etc/apache2/sites-enabled/clearnet.conf"
            % (web.apache_port, web.apache_port, line[0].replace("ADDRESS.onion", two).replace("%", "%%")))
    configtest = web.ssh("apachectl configtest 2>&1")
    web.ssh("systemctl start apache2")
    status, value = web.header(web.apache_port)
    _say("apache2: configtest %r; %s, Onion-Location %s" % (configtest.strip(), status, value))
    assert "Syntax OK" in configtest and value == "http://%s/some/path" % two    # the path, not the query
    # The Tor Project's line ("%{REQUEST_URI}s", an SSL variable of mod_headers): "(null)" without mod_ssl.
    seen = []
    for enable in ("", "a2enmod -q ssl; "):
        web.ssh("%sprintf '<VirtualHost 127.0.0.1:%d>\\n    Header always set Onion-Location "
                "\"http://%s%%%%{REQUEST_URI}s\"\\n</VirtualHost>\\n' > /etc/apache2/sites-enabled/clearnet.conf; "
                "apachectl configtest 2>/dev/null; systemctl restart apache2" % (enable, web.apache_port, two))
        seen.append(web.header(web.apache_port)[1])
    _say("apache2, the Tor Project's line: without mod_ssl %s; with mod_ssl %s" % tuple(seen))
    assert seen == ["http://%s(null)" % two, "http://%s/some/path" % two]
    web.ssh("systemctl stop apache2")

    # The service removed: the snippet stays (the include works) without the header.
    removed = web.run([{"name": "web", "state": "absent"}], site)
    assert removed.rc == 0, removed.output
    status, value = web.header()
    text = web.ssh("cat %s" % SNIPPET)
    _say("after removal (%.1fs): %s, Onion-Location %s; snippet: %s" % (
        removed.seconds, status, value, text.strip().splitlines()[-1]))
    assert " 200" in status and value is None and "add_header" not in text
    again = web.run([{"name": "web", "state": "absent"}], site)
    assert again.rc == 0 and _changed(again, web) == 0, again.output
    _say("total %.1fs" % (time.monotonic() - t0))
