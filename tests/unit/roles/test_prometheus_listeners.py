# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 42, "Monitoring bound to loopback by default": the prometheus role's flags files (ARGS= in
/etc/default/prometheus and /etc/default/prometheus-alertmanager, read by Debian's units as EnvironmentFile and
split into words by their $ARGS) rendered by Ansible's own Templar (harness/ansible_template.py) with the role's
defaults: Prometheus on 127.0.0.1:9090, Alertmanager on 127.0.0.1:9093 with its cluster listener off; an address the
operator names is written as given; bad addresses and flags are refused by the role's checks (the assert tasks at
the start of its tasks, run here as the role runs them), naming the variable. The flags are Debian's binaries' own
(checked against their --help when they are installed)."""

import ipaddress
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.ansible_template import render

REPO = Path(__file__).resolve().parents[3]
ROLE = REPO / "roles" / "prometheus"
PROMETHEUS_DEFAULT = "roles/prometheus/templates/prometheus.default.j2"
ALERTMANAGER_DEFAULT = "roles/prometheus/templates/alertmanager.default.j2"
CHECKS = ("The role's variables written into the services' flags, one word each", "Check the role's variables")
# the mapping the role's check passes to the filter prometheus_settings (not an option)
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())


def role_vars(**extra):
    out = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    out.update(ansible_managed="Ansible managed", **extra)
    return out


def checks():
    """Each check task's conditions (as expressions) and its own vars, in the role's order."""
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    out = []
    for name in CHECKS:
        task = [t for t in tasks if t.get("name") == name]
        assert len(task) == 1, name
        that = task[0]["ansible.builtin.assert"]["that"]
        out.append(([that] if isinstance(that, str) else that, dict(ROLE_VARS, **(task[0].get("vars") or {}))))
    return out


def run_checks(cases):
    """For each vars dict: None when every check passes, else the first refusal (the filter's message, or the
    failing condition)."""
    jobs, shape = [], []
    for variables in cases:
        n = 0
        for that, task_vars in checks():
            for condition in that:
                jobs.append({"data": "{{ %s }}" % condition, "vars": dict(variables, **task_vars)})
                n += 1
        shape.append(n)
    results = iter(render(jobs))
    out = []
    for n in shape:
        got = [next(results) for _ in range(n)]
        refused = [r.get("error") or "false" for r in got if r.get("value") is not True]
        out.append(refused[0] if refused else None)
    return out


def rendered(variables):
    variables = dict(variables, **ROLE_VARS)   # the flags come from the filter prometheus_settings (_prometheus_plan)
    text = render([{"template": PROMETHEUS_DEFAULT, "vars": variables},
                   {"template": ALERTMANAGER_DEFAULT, "vars": variables}])
    return [t["text"] for t in text]


def args_words(text):
    """The words of ARGS as Debian's units have them: one ARGS= line (the rest comments), its value in double
    quotes, split on blanks by $ARGS; the shell (Debian's init scripts source the file) reads the same words."""
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert len(lines) == 1 and re.match(r'^ARGS="[^"\\$`]*"\Z', lines[0]), lines
    words = lines[0][len('ARGS="'):-1].split()
    assigned = shlex.split(lines[0][len("ARGS="):])  # the shell's value of ARGS, then $ARGS split on blanks
    assert len(assigned) == 1 and assigned[0].split() == words
    return words


def flags(words):
    return dict(w.split("=", 1) if "=" in w else (w, None) for w in words)


def host_of(address):
    host = address.rsplit(":", 1)[0]
    return host[1:-1] if host.startswith("[") else host


def test_defaults_listen_on_loopback_only():
    prometheus, alertmanager = rendered(role_vars())
    p, a = flags(args_words(prometheus)), flags(args_words(alertmanager))
    assert p == {"--config.file": "/etc/prometheus/prometheus.yml", "--web.listen-address": "127.0.0.1:9090"}
    assert a == {"--config.file": "/etc/prometheus/alertmanager.yml", "--web.listen-address": "127.0.0.1:9093",
                 "--cluster.listen-address": ""}
    for address in (p["--web.listen-address"], a["--web.listen-address"]):
        assert ipaddress.ip_address(host_of(address)).is_loopback
    assert run_checks([role_vars()]) == [None]


def test_prometheus_sends_alerts_to_the_address_alertmanager_listens_on():
    """prometheus_alertmanager_targets null (the default): this host's Alertmanager when it has a receiver, decided
    by the filter prometheus_settings (_prometheus_plan); a list given is taken as it is."""
    base = dict(yaml.safe_load((ROLE / "defaults" / "main.yml").read_text()), **ROLE_VARS)
    webhook = {"prometheus_alertmanager_receiver": "webhook",
               "prometheus_alertmanager_webhook_url": "https://hooks.example.org/alert"}
    got = render([{"data": "{{ _prometheus_plan.alertmanager_targets }}", "vars": dict(base, **extra)} for extra in (
        {}, webhook, dict(webhook, prometheus_alertmanager_listen_address="[::1]:19093"),
        dict(webhook, prometheus_alertmanager_targets=[]),
        {"prometheus_alertmanager_targets": ["10.0.0.5:9093"]})])
    assert [g.get("value", g.get("error")) for g in got] == [
        [], ["127.0.0.1:9093"], ["[::1]:19093"], [], ["10.0.0.5:9093"]]


@pytest.mark.parametrize("address", ["0.0.0.0:9090", "[::]:9090", "[::1]:19090", "10.0.0.9:9090", "localhost:9090",
                                     "monitor-1.example.org:443"])
def test_an_address_the_operator_names_is_written_as_given(address):
    variables = role_vars(prometheus_listen_address=address, prometheus_alertmanager_listen_address=address,
                          prometheus_extra_args=["--storage.tsdb.retention.time=30d", "--web.enable-lifecycle"],
                          prometheus_alertmanager_extra_args=["--web.external-url=https://am.example.org/"])
    assert run_checks([variables]) == [None]
    prometheus, alertmanager = rendered(variables)
    assert args_words(prometheus)[1:] == ["--web.listen-address=" + address, "--storage.tsdb.retention.time=30d",
                                          "--web.enable-lifecycle"]
    assert args_words(alertmanager)[1:] == ["--web.listen-address=" + address, "--cluster.listen-address=",
                                            "--web.external-url=https://am.example.org/"]


REFUSED = [
    # (variable, value, what the refusal says)
    ("prometheus_listen_address", "127.0.0.1:9090\nARGS=--web.listen-address=0.0.0.0:9090",
     "prometheus_listen_address: the value \"127.0.0.1:9090\\nARGS"),
    ("prometheus_listen_address", "127.0.0.1:9090 --web.listen-address=0.0.0.0:9091", "holds a blank"),
    ("prometheus_listen_address", '127.0.0.1:9090"--web.enable-admin-api="', "holds a double quote"),
    ("prometheus_listen_address", "127.0.0.1:9090\\", "ends with a backslash"),
    ("prometheus_listen_address", "127.0.0.1:$(id)", "false"),
    ("prometheus_listen_address", "`id`:9090", "false"),
    ("prometheus_listen_address", ":9090", "false"),            # every address, unnamed: name 0.0.0.0
    ("prometheus_listen_address", "127.0.0.1", "false"),        # no port
    ("prometheus_listen_address", "127.0.0.1:0", "false"),
    ("prometheus_listen_address", "127.0.0.1:65536", "false"),
    ("prometheus_listen_address", "/run/prometheus.sock", "false"),
    ("prometheus_listen_address", "127.0.0.1:9090\n", "holds a newline"),
    ("prometheus_alertmanager_listen_address", "127.0.0.1:9093\r", "holds a carriage return"),
    ("prometheus_alertmanager_listen_address", "0.0.0.0:9093;x", "holds a ;"),
    ("prometheus_alertmanager_listen_address", "127.0.0.1:9093%", "holds a %"),
    ("prometheus_extra_args", ["--web.listen-address=0.0.0.0:9090"], "false"),
    ("prometheus_extra_args", ["--web.listen-address", "0.0.0.0:9090"], "false"),
    ("prometheus_extra_args", ["--config.file=/tmp/p.yml"], "false"),
    ("prometheus_extra_args", ["@/tmp/flags"], "false"),
    ("prometheus_extra_args", ["--log.level=debug $(id)"], "prometheus_extra_args[0]: the value"),
    ("prometheus_extra_args", ["--web.external-url=https://x/$HOME"], "false"),
    ("prometheus_alertmanager_extra_args", ["--cluster.listen-address=0.0.0.0:9094"], "false"),
    ("prometheus_alertmanager_extra_args", ["--cluster.peer=10.0.0.2:9094"], "false"),
    ("prometheus_alertmanager_extra_args", ["--web.listen-address=:9093"], "false"),
    ("prometheus_alertmanager_extra_args", ["--log.level=info\n--web.listen-address=:9093"], "holds a newline"),
    ("prometheus_config_file", "/etc/prometheus/p q.yml", "prometheus_config_file: the value"),
    ("prometheus_scrape_interval", "15s\n  external_labels: {x: y}", "false"),
    ("prometheus_alert_tor_down_for", "2m\n        labels: {severity: none}", "false"),
    # a rule of its own that promtool check rules accepts (measured: 15 rules found)
    ("prometheus_alert_tor_down_for", "2m\n      - alert: Fake\n        expr: vector(1)", "false"),
    ("prometheus_alertmanager_repeat_interval", "4 h", "false"),
    ("prometheus_evaluation_interval", 15, "false"),
]


def test_bad_values_are_refused_naming_the_variable():
    results = run_checks([role_vars(**{variable: value}) for variable, value, _ in REFUSED])
    for (variable, value, said), got in zip(REFUSED, results):
        assert got is not None, "accepted: %s=%r" % (variable, value)
        if said == "false":  # the role's own check (the filter prometheus_settings): its message names the variable
            assert "prometheus: " in got and variable in got and "must " in got, (variable, value, got)
        else:  # the filter config_values' message
            assert "prometheus: these variables would not stay one value each in the systemd file" in got, got
            assert said in got and variable in got, (variable, value, got)


def test_the_fail_messages_name_the_variables():
    """One message names every wrong variable, what it must be and what it was."""
    got = render([{"data": "{{ _prometheus_settings | onionlab.tor.prometheus_settings }}",
                   "vars": dict(role_vars(prometheus_alert_pow_for="10m\nx: y", prometheus_listen_address="127.0.0.1",
                                          prometheus_alertmanager_extra_args=["--cluster.peer=x"]), **ROLE_VARS)}])
    error = got[0]["error"]
    assert ('prometheus: prometheus_listen_address must be an address and a port (127.0.0.1:9090, [::1]:9090; '
            '0.0.0.0:9090 for every address, which shows every onion address beside its server\'s to whoever '
            'reaches it), got "127.0.0.1"') in error, error
    assert 'prometheus_alertmanager_extra_args must be flags' in error and '"--cluster.peer=x"' in error, error
    assert ('these variables must each be a Prometheus duration (15s, 1h30m): prometheus_alert_pow_for got '
            '"10m\\nx: y"') in error, error


@pytest.mark.parametrize("binary, written", [
    ("prometheus", ["--config.file", "--web.listen-address"]),
    ("prometheus-alertmanager", ["--config.file", "--web.listen-address", "--cluster.listen-address"]),
])
def test_the_flags_are_the_binaries_own(binary, written):
    """Debian's binaries know each flag the role writes (their --help), and the defaults the role replaces are
    every address: 0.0.0.0:9090, :9093 and 0.0.0.0:9094 (Debian bookworm's prometheus 2.42, alertmanager 0.25)."""
    if not shutil.which(binary):
        pytest.skip("%s is not installed" % binary)
    text = subprocess.run([binary, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=60).stdout
    for flag in written:
        assert re.search(r"^\s+%s=" % re.escape(flag), text, re.M), (binary, flag)
    defaults = dict(re.findall(r"^\s+(--(?:web|cluster)\.listen-address)=\"?([^\s\"]*)", text, re.M))
    assert all(not host_of(v) or host_of(v) == "0.0.0.0" for v in defaults.values()), defaults
