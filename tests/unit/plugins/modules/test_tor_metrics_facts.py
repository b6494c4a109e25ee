# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tor_metrics_facts main() against a scripted MetricsPort (harness.prometheus.ScriptedPort) on a real
loopback socket: the facts of a real tor page, the filters, check mode, and one fail_json per bad input or
bad port (closed, slow, garbage, huge)."""

from pathlib import Path

import pytest

from ansible_collections.onionlab.tor.plugins.modules import tor_metrics_facts as module
from harness.ports import free_ports
from harness.prometheus import ScriptedPort, http_ok

REAL = (Path(__file__).resolve().parents[1] / "module_utils" / "data" / "metricsport-tor-0.4.9.11.prom").read_text()
S1 = "zs7bgfoxd7tj5athygvu6xqkklwfd26uabmmjwdild72aalz7fttisyd"


@pytest.fixture
def port():
    with ScriptedPort([http_ok(REAL)]) as p:
        yield p


def test_facts_of_a_real_page(runner, port):
    result = runner.ok(module, metrics_port=port.port)
    assert result["changed"] is False
    facts = result["ansible_facts"]["tor_metrics"]
    assert facts["url"] == "http://127.0.0.1:%d/metrics" % port.port
    assert facts["samples"] == 377 and len(facts["services"]) == 3
    svc = facts["services"][S1]
    assert svc["tor_hs_rdv_num_total"] == 1 and svc["tor_hs_intro_num_total"] == 1
    assert svc["tor_hs_app_read_bytes_total"] == [{"labels": {"port": "80"}, "value": 194}]
    assert all(name.startswith("tor_hs_") for s in facts["services"].values() for name in s)
    assert facts["totals"]["tor_hs_rdv_num_total"] == 3
    assert facts["types"]["tor_hs_intro_circ_build_time"] == "histogram"
    assert facts["other"] == {}


def test_check_mode_same_facts(runner, port):
    a = runner.ok(module, metrics_url=port.url)["ansible_facts"]["tor_metrics"]
    b = runner.ok(module, metrics_url=port.url, check_mode=True)["ansible_facts"]["tor_metrics"]
    a.pop("seconds"), b.pop("seconds")
    assert a == b


def test_names_and_prefix(runner, port):
    facts = runner.ok(module, metrics_url=port.url, names=["tor_hs_rdv_num_total", "tor_relay_circuits_total"])[
        "ansible_facts"]["tor_metrics"]
    assert facts["services"][S1] == {"tor_hs_rdv_num_total": 1}
    assert set(facts["other"]) == {"tor_relay_circuits_total"}
    facts = runner.ok(module, metrics_url=port.url, prefix="")["ansible_facts"]["tor_metrics"]
    assert "tor_relay_connections_total" in facts["other"] and len(facts["services"]) == 3
    facts = runner.ok(module, metrics_url=port.url, prefix="tor_relay_")["ansible_facts"]["tor_metrics"]
    assert facts["services"] == {} and "tor_bug_reached_count" not in facts["other"]


@pytest.mark.parametrize("args, msg", [
    ({}, "one of the following is required: metrics_url, metrics_port"),
    ({"metrics_port": 0}, "metrics_port must be between 1 and 65535, got 0"),
    ({"metrics_port": 9035, "timeout": 0}, "timeout must be a positive number of seconds, got 0"),
    ({"metrics_port": 9035, "max_bytes": 0}, "max_bytes must be a positive number of bytes, got 0"),
    ({"metrics_port": 9035, "names": []}, "names must list at least one metric name, such as tor_hs_rdv_num_total"),
    ({"metrics_url": "127.0.0.1:9035"}, "metrics_url must be an http:// URL of tor's MetricsPort, such as "
                                        "http://127.0.0.1:9035/metrics, got '127.0.0.1:9035'"),
    ({"metrics_url": "http://x/", "metrics_port": 1}, "parameters are mutually exclusive: metrics_url|metrics_port"),
    ({"metrics_port": 1, "prefix": "a", "names": ["b"]}, "parameters are mutually exclusive: prefix|names"),
])
def test_bad_input(runner, args, msg):
    assert runner.fails(module, **args)["msg"] == msg


def test_closed_port(runner):
    p = free_ports(1)[0]
    result = runner.fails(module, metrics_port=p, timeout=2)
    assert result["msg"] == ("cannot read tor's MetricsPort at http://127.0.0.1:%d/metrics: Connection refused (torrc "
                             "needs MetricsPort on this address and a MetricsPortPolicy that accepts this host)" % p)
    assert result["error"] == "MetricsError"


def test_slow_port(runner):
    with ScriptedPort([b"HTTP/1.0 200 OK\r\n\r\n", 5.0]) as slow:
        msg = runner.fails(module, metrics_port=slow.port, timeout=1)["msg"]
    assert msg == ("cannot read tor's MetricsPort at %s: no complete answer within 1 seconds (19 bytes read)"
                   % slow.url)


def test_garbage_page(runner):
    with ScriptedPort([http_ok("<html><body>not metrics</body></html>\n")]) as bad:
        msg = runner.fails(module, metrics_url=bad.url)["msg"]
    assert msg == ("tor's MetricsPort at %s did not send the Prometheus text format: line 1: not a metric name at the "
                   "start of '<html><body>not metrics</body></html>'" % bad.url)


def test_huge_page(runner):
    with ScriptedPort([b"HTTP/1.0 200 OK\r\n\r\n"] + [b"m 1\n" * 16384] * 100) as huge:
        msg = runner.fails(module, metrics_url=huge.url, max_bytes=1000000)["msg"]
    assert msg == ("cannot read tor's MetricsPort at %s: the answer is larger than 1000000 bytes; not read further"
                   % huge.url)
