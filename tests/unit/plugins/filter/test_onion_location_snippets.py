# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_location role's plan: the header from the summary file, removal, pruning, one refusal per bad input."""

import pytest

from ansible_collections.onionlab.tor.plugins.filter.onion_location_snippets import AnsibleFilterError, snippets
from ansible_collections.onionlab.tor.plugins.module_utils._tor.onion import onion_address

# real v3 addresses (checksum and version right): the filter checks them with onion.is_address
A, B, F = (onion_address(bytes([n]) * 32) + ".onion" for n in (1, 2, 3))
DIR = "/etc/nginx/snippets"
WEB = DIR + "/onion-location-web.conf"


def _entry(address=A, host="web1", service="web", location="http", **more):
    return dict(dict(host=host, service=service, onion_address=address, ports=[80],
                     onion_location="%s://%s" % (location, address) if location else None, refreshed=True), **more)


def _plan(sites, summary, **kw):
    kw.setdefault("host", "web1")
    kw.setdefault("snippet_dir", DIR)
    return snippets(sites, summary=summary, **kw)


def test_header_is_the_current_address_and_follows_a_rotation():
    one = _plan([{"service": "web"}], [_entry()])["snippets"]
    assert [(s["path"], s["header"]) for s in one] == [(WEB, "http://" + A)]
    assert "add_header Onion-Location http://%s$request_uri always;\n" % A in one[0]["content"]
    rotated = _plan([{"service": "web"}], [_entry(B, key=2, previous_onion_address=A, previous_until="2027-01-31")])
    assert rotated["snippets"][0]["header"] == "http://" + B
    assert A not in rotated["snippets"][0]["content"]


def test_https_and_onionbalance_frontend():
    out = _plan([{"service": "web"}], [_entry(location="https", onionbalance_frontend=F)])["snippets"][0]
    assert out["header"] == "https://" + F


def test_removed_service_and_absent_site_and_pruned_snippet_lose_the_header():
    written = _plan([{"service": "web"}], [_entry()])["snippets"][0]["content"]
    removed = _plan([{"service": "web"}], [], existing={WEB: written})["snippets"][0]
    assert removed["header"] is None and "Onion-Location" not in removed["content"].replace("# no Onion-Location", "")
    assert removed["content"].startswith("# onionlab.tor.onion_location: service=web host=web1\n")
    absent = _plan([{"service": "web", "state": "absent"}], [_entry()], existing={WEB: written})["snippets"]
    assert [s["header"] for s in absent] == [None]
    assert _plan([{"service": "web", "state": "absent"}], [_entry()])["snippets"] == []
    pruned = _plan([], [_entry()], existing={WEB: written})["snippets"]
    assert [(s["path"], s["header"]) for s in pruned] == [(WEB, None)]
    assert _plan([], [_entry()], existing={WEB: written}, prune=False)["snippets"] == []
    # removed, again: the same bytes (idempotent)
    assert _plan([{"service": "web"}], [], existing={WEB: removed["content"]})["snippets"][0] == removed


def test_default_host_and_ambiguity():
    two = [_entry(A, host="web1"), _entry(B, host="web2")]
    assert _plan([{"service": "web"}], two, host="web2")["snippets"][0]["header"] == "http://" + B
    assert _plan([{"service": "web", "onion_host": "web1"}], two, host="www")["snippets"][0]["header"] == "http://" + A
    with pytest.raises(AnsibleFilterError, match="several hosts .web1, web2.: name one with onion_host"):
        _plan([{"service": "web"}], two, host="www")


def test_missing_summary_in_check_mode_only():
    out = _plan([{"service": "web"}], None, check_mode=True)
    assert out["snippets"] == [] and "no summary file yet" in out["warnings"][0]
    with pytest.raises(AnsibleFilterError, match="no summary file: run the onion_service role first"):
        _plan([{"service": "web"}], None)


def test_stale_entry_warns():
    out = _plan([{"service": "web"}], [_entry(refreshed=False, refreshed_at="2026-12-01T00:00:00Z")])
    assert "not refreshed" in out["warnings"][0] and out["snippets"][0]["header"] == "http://" + A


@pytest.mark.parametrize("sites, summary, kw, message", [
    ([{"service": "wbe"}], [_entry()], {}, r"unknown service 'wbe': the summary file lists web \(web1\)"),
    ([{"service": "../x"}], [_entry()], {}, "service must be the name of an onion_services entry"),
    ([{"service": "web", "snippet": "../../sites-enabled/default"}], [_entry()], {}, "snippet must be a file name"),
    ([{"service": "web", "snippet": "a/b.conf"}], [_entry()], {}, "snippet must be a file name"),
    ([{"service": "web"}], [_entry()], {"snippet_dir": "etc/nginx"}, "absolute, normalized path"),
    ([{"service": "web"}], [_entry()], {"snippet_dir": "/etc/nginx/../x"}, "absolute, normalized path"),
    ([{"service": "web", "port": 80}], [_entry()], {}, "unknown key port"),
    ([{"service": "web"}, {"service": "api", "snippet": "onion-location-web.conf"}], [_entry()], {},
     "both write /etc/nginx/snippets/onion-location-web.conf"),
    ([{"service": "web"}], [_entry()], {"present": [WEB]}, "exists and was not written by this role"),
    ([{"service": "web"}], [_entry(location=None)], {}, "has no port 80 or 443"),
    ([{"service": "web"}], [dict(_entry(), onion_location=None, onion_address=None)], {}, "no onion address"),
    ([{"service": "web"}], [_entry("x.onion; return 301 http://evil")], {}, "is not a v3 onion address"),
    ([{"service": "web"}], [_entry("a" * 56 + ".onion")], {}, "is not a v3 onion address"),   # a wrong checksum
    ([{"service": "web", "state": "gone"}], [_entry()], {}, "state must be present or absent"),
    ([{"service": "web"}], {"not": "a list"}, {}, "summary file is not a list"),
])
def test_one_refusal_per_bad_input(sites, summary, kw, message):
    with pytest.raises(AnsibleFilterError, match=message):
        _plan(sites, summary, **kw)


def test_what_the_role_passes_as_ansible_gives_it(tmp_path):
    """The role passes the summary file's path, slurp's results and find's files as Ansible returns them (issue 41:
    no lookup/from_yaml, dict/zip/b64decode or map in the role): the same plan as from the decoded values, with
    `before` (the snippets as they were, for the rescue) and the note when nginx is not there yet."""
    import base64
    import yaml
    written = _plan([{"service": "web"}], [_entry()])["snippets"][0]["content"]
    summary = tmp_path / "onion-services.yml"
    summary.write_text(yaml.safe_dump([_entry(address=B)]))
    slurped = [{"source": WEB, "content": base64.b64encode(written.encode()).decode(), "encoding": "base64"}]
    found = [{"path": WEB, "mode": "0644"}, {"path": DIR + "/other.conf"}]
    raw = snippets([{"service": "web"}], summary_file=str(summary), host="web1", snippet_dir=DIR,
                   existing=slurped, present=found)
    decoded = _plan([{"service": "web"}], [_entry(address=B)], existing={WEB: written},
                    present=[WEB, DIR + "/other.conf"])
    assert raw == decoded and raw["before"] == {WEB: written} and raw["snippets"][0]["header"] == "http://" + B
    gone = snippets([{"service": "web"}], summary_file=str(tmp_path / "none.yml"), host="web1", snippet_dir=DIR,
                    check_mode=True, nginx_installed=False)
    assert gone["snippets"] == [] and gone["report"][-1] == (
        "nginx is not installed yet (check mode): nothing would be written before it is")
    summary.write_text("- [unclosed\n")
    with pytest.raises(AnsibleFilterError, match="the summary file %s cannot be read" % summary):
        snippets([{"service": "web"}], summary_file=str(summary), host="web1", snippet_dir=DIR)
    with pytest.raises(AnsibleFilterError, match="existing must be path to content, or the results of slurp"):
        snippets([], host="web1", snippet_dir=DIR, existing=["x"])


def test_slurp_text_is_strict_base64():
    from ansible_collections.onionlab.tor.plugins.plugin_utils import slurp
    assert slurp.text("aGFwcHkK") == "happy\n"
    assert slurp.text("/w==") == "\ufffd"
    for bad in ("aGFwcHkK!", "not base64", "a"):
        with pytest.raises(ValueError):
            slurp.text(bad)
