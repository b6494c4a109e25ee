# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 42, "No injection": every role variable that a template writes into a config file, given a hostile value
(a newline with further directives, a carriage return, a NUL, another control character, a #, quotes, a backslash at
the end, a very long value), is refused with a message naming the variable, or the file means what it meant with a
harmless value in its place. Rendered by Ansible's own Templar (harness/ansible_template.py), checked as the roles
check them: the tor role by its action's guard (torrc.line_problem, on the values its configure task passes), the
others by the assert tasks at the start of their tasks (filter config_values) and their filters.

The torrc is read back with the repository's parser (torrc.parse, tested against tor in test_torrc.py); tor itself
reads the hostile torrc of the issue and a few accepted values (when /usr/bin/tor is there)."""

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from harness.ansible_template import render
from ansible_collections.onionlab.tor.plugins.filter.onion_haproxy_plan import onion_haproxy_plan
from ansible_collections.onionlab.tor.plugins.filter.onion_location_snippets import snippets
from ansible_collections.onionlab.tor.plugins.module_utils._tor import config_value, onion, torrc

REPO = Path(__file__).resolve().parents[3]
ROLES = REPO / "roles"
TOR = "/usr/bin/tor" if os.path.exists("/usr/bin/tor") else "/usr/sbin/tor"
OMIT = "__omit_place_holder__"
MARKER = "MARKER"

# name -> the hostile value (each refused unless noted in the role's table below)
INJECTED = "0\nHiddenServiceNonAnonymousMode 1\nHiddenServiceSingleHopMode 1\nControlPort 0.0.0.0:9052"
HOSTILE = {
    "newline": INJECTED,
    "carriage return": "9050\rControlPort 0.0.0.0:9052",
    "NUL": "9050\0ControlPort 0.0.0.0:9052",
    "escape": "9050\x1b[2J",
    "line separator": "9050\u2028ControlPort 9052",
    "hash": "9050 # IsolateDestAddr",
    "hash in a word": "/run/x#y",
    "quotes": '"9050" IsolateDestAddr',
    "quoted whole": '"9050 # IsolateDestAddr"',
    "backslash at the end": "9050\\",
    "blank": "/run/a b",
    "percent": "/run/%h",
    "long": "9" * 65536,
}


def role_vars(role):
    """A role's defaults and vars, as a play has them."""
    out = {}
    for name in ("defaults", "vars"):
        path = ROLES / role / name / "main.yml"
        if path.exists():
            out.update(yaml.safe_load(path.read_text()) or {})
    return out


def task(role, name, tasks_file="main.yml"):
    tasks = yaml.safe_load((ROLES / role / "tasks" / tasks_file).read_text())
    found = [t for t in tasks if t.get("name") == name]
    assert len(found) == 1, (role, name)
    return found[0]


def filter_check(role, name, tasks_file="main.yml"):
    """A set_fact task whose one fact is its vars' mapping through a checking filter (onion_watchdog's settings), as an
    expression to template: the mapping written out, its values the role's variables."""
    found = task(role, name, tasks_file)
    (fact, expression), = found["ansible.builtin.set_fact"].items()
    (mapping_name, mapping), = found["vars"].items()
    inline = "{%s}" % ", ".join("%r: %s" % (k, v.strip("{} ")) for k, v in mapping.items())
    return ["{{ (%s) is mapping }}" % expression.strip("{} ").replace(mapping_name, inline, 1)]


def assert_that(role, name, tasks_file="main.yml"):
    """The conditions of an assert task, each as an expression to template."""
    that = task(role, name, tasks_file)["ansible.builtin.assert"]["that"]
    return ["{{ %s }}" % t for t in ([that] if isinstance(that, str) else that)]


# -- the tor role -----------------------------------------------------------------------------------------------
TOR_BASE = dict(role_vars("tor"), ansible_managed="Ansible managed", omit=OMIT, tor_control_socket="/run/tor/ctl2",
                tor_socks_port="9050", tor_options={"ContactInfo": "me", "Nickname": "base"},
                tor_metrics_port=9035, tor_config_lines=["Log notice stderr"],
                # the health check's SocksPort is decided from tor_socks_port (filter tor_socks_lines): off here, so
                # that a hostile tor_socks_port is compared as written (test_torrc.py tests the decision)
                tor_health_socks_port=False)
SETUP = task("tor", "Tor installed, its torrc checked by tor and written, tor running", "configure.yml")[
    "onionlab.tor.tor_setup"]
CHECKED_ARGS = dict((k, SETUP[k]) for k in ("options", "config_lines", "socks_port", "non_anonymous_onion_services",
                                            "torrc_values"))


def place(variable, value):
    """The tor role's variables with value in variable's place (for tor_options and tor_config_lines: in an item),
    and the label the refusal names it by."""
    v = dict(TOR_BASE)
    if variable == "tor_options value":
        v["tor_options"] = dict(TOR_BASE["tor_options"], ContactInfo=value)
        return v, "tor_options ContactInfo: the value"
    if variable == "tor_options name":
        v["tor_options"] = dict(TOR_BASE["tor_options"], **{value: "x"})
        return v, "tor_options name"
    if variable == "tor_config_lines":
        v["tor_config_lines"] = ["Log notice stderr", value]
        return v, "tor_config_lines[1]"
    if variable == "tor_metrics_port_policy":
        v["tor_metrics_port_policy"] = ["127.0.0.1", value]
        return v, "tor_metrics_port_policy"
    v[variable] = value
    return v, variable


# every variable that torrc.j2 writes, and the hostile values the role accepts for it (the others are refused)
TOR_VARIABLES = {
    "tor_socks_port": {"quoted whole", "blank", "percent", "long"},
    "tor_health_socks_port": set(),  # the filter tor_socks_lines: auto, false or a port number
    "tor_control_socket": {"percent", "long"},
    "tor_control_port": {"percent", "long"},  # tor refuses them (tor --verify-config): not one more directive
    "tor_config_dir": {"percent", "long"},
    "tor_metrics_port": set(),  # the filter tor_metrics_lines: a port or ADDRESS:PORT
    "tor_metrics_port_policy": set(),  # the filter: IP addresses or networks
    "tor_options value": {"quoted whole", "blank", "percent", "long"},
    "tor_options name": {"long"},  # letters, digits and _ (tor refuses an unknown option)
    "tor_config_lines": {"hash", "quoted whole", "quotes", "hash in a word", "blank", "percent", "long"},
    "tor_cookie_authentication": set(),  # a boolean (true/false, yes/no, on/off, 1/0), written as 1 or 0
    "ansible_managed": set(HOSTILE),  # a comment line: control characters folded (tor stops reading at a NUL)
}
TOR_CASES = [(variable, hostile) for variable in TOR_VARIABLES for hostile in HOSTILE]


def tor_jobs(variables):
    return [{"template": "roles/tor/templates/torrc.j2", "vars": variables},
            {"data": CHECKED_ARGS, "vars": variables}]


def tor_refusal(args):
    """What the tor_setup action says before anything is done (its run(): the same two guards, in order)."""
    socks = None if args["socks_port"] == OMIT else args["socks_port"]
    return torrc.line_problem(args["options"], args["config_lines"], args["torrc_values"]) or \
        torrc.non_anonymous_problem(args["options"], args["config_lines"], socks, args["non_anonymous_onion_services"])


@pytest.fixture(scope="module")
def tor_rendered():
    """Every case rendered in one child: {(variable, hostile): (torrc or error, checked args or error)}, and
    the same with MARKER in the variable's place."""
    keys = TOR_CASES + [(variable, MARKER) for variable in TOR_VARIABLES] + [(None, None)]
    jobs = []
    for variable, hostile in keys:
        value = HOSTILE.get(hostile, hostile)
        jobs += tor_jobs(place(variable, value)[0] if variable else dict(TOR_BASE))
    results = render(jobs)
    return dict((key, (results[2 * i], results[2 * i + 1])) for i, key in enumerate(keys))


def test_the_role_passes_every_variable_that_torrc_j2_writes():
    """torrc.j2 names no tor_ variable that neither the action's check nor a filter that checks it receives."""
    text = (ROLES / "tor" / "templates" / "torrc.j2").read_text()
    filters = {"tor_metrics_lines", "tor_socks_lines", "tor_option_lines", "tor_control_lines"}
    used = set(re.findall(r"\b(tor_[a-z_]+)\b", text)) - filters
    checked = set(SETUP["torrc_values"]) | {"tor_options", "tor_config_lines"}
    # only an argument of the filter tor_metrics_lines (which checks it)
    safe = {"tor_metrics_port_allow_everyone"}
    assert used - checked - safe == set()
    assert set(SETUP["torrc_values"]) == set(torrc.ROLE_VALUES)


@pytest.mark.parametrize("variable, hostile", TOR_CASES, ids=["%s-%s" % c for c in TOR_CASES])
def test_tor_role_hostile_value_refused_or_meaning_kept(tor_rendered, variable, hostile):
    rendered, args = tor_rendered[(variable, hostile)]
    value = HOSTILE[hostile]
    label = place(variable, value)[1]
    if "error" in rendered or "error" in args:  # a filter's refusal while the play templates the task
        error = rendered.get("error") or args.get("error")
        assert label.split(":")[0].split("[")[0] in error, error
        assert hostile not in TOR_VARIABLES[variable], error
        return
    said = tor_refusal(args["value"])
    if said:
        assert hostile not in TOR_VARIABLES[variable], said
        assert label in said and said.endswith("(nothing was changed)."), said
        assert "non-anonymous" not in said, said  # refused as not one value, before the guard reads it
        return
    assert hostile in TOR_VARIABLES[variable], "accepted: %r" % rendered["text"][:300]
    assert "\0" not in rendered["text"]  # tor reads a torrc up to its first NUL (tor 0.4.9.11), the parser does not
    # accepted: the torrc is the one with MARKER there, with the value (as tor reads it) in MARKER's place
    base = torrc.parse(tor_rendered[(variable, MARKER)][0]["text"])
    got = torrc.parse(rendered["text"])
    if variable == "tor_config_lines":
        i = [e[2] for e in base].index(MARKER)
        expected = [e[2:] for e in base[:i]] + [e[2:] for e in torrc.parse(value)] + [e[2:] for e in base[i + 1:]]
    elif variable == "ansible_managed":
        expected = [e[2:] for e in torrc.parse(tor_rendered[(None, None)][0]["text"])]
    else:
        read = config_value.unescape_string(value)[0] if value.startswith('"') else value
        expected = [(k.replace(MARKER, read), v.replace(MARKER, read)) for _, _, k, v in base]
    got = [e[2:] for e in got]
    if variable == "tor_options name":  # the template sorts the options by name: compare the lines as a set
        got, expected = sorted(got), sorted(expected)
    assert got == expected


BOOLEANS = [(True, "1"), (False, "0"), ("false", "0"), ("False", "0"), ("no", "0"), ("off", "0"), ("0", "0"), (0, "0"),
            ("true", "1"), ("Yes", "1"), ("on", "1"), ("1", "1"), (1, "1")]


def test_tor_cookie_authentication_is_read_as_a_boolean():
    """The string "false" (a quoted YAML value, an extra var -e tor_cookie_authentication=false) means false: it
    rendered CookieAuthentication 1 before. Each of the bool filter's words is read as it says; another value
    ("maybe", "") is refused naming the variable, before anything is changed."""
    cases = BOOLEANS + [("maybe", None), ("", None), ("2", None), (2, None), (None, None)]
    jobs = []
    for value, _ in cases:
        jobs += tor_jobs(dict(TOR_BASE, tor_cookie_authentication=value))
    results = render(jobs)
    for i, (value, written) in enumerate(cases):
        rendered, args = results[2 * i], results[2 * i + 1]
        said = tor_refusal(args["value"])
        if written is None:
            assert said and "tor_cookie_authentication: the value " in said and "is not a boolean" in said, (value, said)
            continue
        assert said is None, (value, said)
        lines = [line for line in rendered["text"].split("\n") if line.startswith("CookieAuthentication")]
        assert lines == ["CookieAuthentication " + written], (value, lines)


@pytest.mark.skipif(not os.path.exists(TOR), reason="needs tor")
def test_tor_took_the_injected_torrc_that_the_check_refuses(tor_rendered, tmp_path):
    """The issue's case: tor --verify-config accepts the torrc rendered with the hostile tor_socks_port (four
    directives, non-anonymous mode among them), so the check must refuse it, and does."""
    rendered, args = tor_rendered[("tor_socks_port", "newline")]
    text = rendered["text"].replace("%include /etc/tor/torrc.d/", "") + "DataDirectory %s\n" % (tmp_path / "data")
    text = text.replace("ControlSocket /run/tor/ctl2", "ControlSocket %s" % (tmp_path / "ctl"))
    (tmp_path / "torrc").write_text(text)
    p = subprocess.run([TOR, "--verify-config", "--defaults-torrc", os.devnull, "-f", str(tmp_path / "torrc")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=60)
    assert p.returncode == 0 and "Configuration was valid" in p.stdout, p.stdout
    assert "HiddenServiceNonAnonymousMode 1\nHiddenServiceSingleHopMode 1\nControlPort 0.0.0.0:9052\n" in text
    assert tor_refusal(args["value"]).startswith(
        'Each tor role variable written into the torrc must stay what it says there, one value (a tor_config_lines '
        'item: one line) as tor reads it: tor_socks_port: the value "0\\nHiddenServiceNonAnonymousMode 1\\n')


@pytest.mark.skipif(not os.path.exists(TOR), reason="needs tor")
@pytest.mark.parametrize("hostile", ["quoted whole", "blank", "long"])
def test_tor_reads_an_accepted_value_as_given(tor_rendered, tmp_path, hostile):
    """The oracle for the accepted tor_options values: tor's own reading of the rendered torrc (its ContactInfo)."""
    rendered, _ = tor_rendered[("tor_options value", hostile)]
    lines = [line for line in rendered["text"].split("\n") if line.startswith(("ContactInfo", "Nickname"))]
    (tmp_path / "torrc").write_text("DataDirectory %s\nSocksPort 0\nDisableNetwork 1\n%s\n"
                                    % (tmp_path / "data", "\n".join(lines)))
    p = subprocess.run([TOR, "--dump-config", "short", "--hush", "--defaults-torrc", os.devnull, "-f",
                        str(tmp_path / "torrc")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=60)
    value = HOSTILE[hostile]
    read = config_value.unescape_string(value)[0] if value.startswith('"') else value
    dumped = torrc.dump_lines(p.stdout)
    assert p.returncode == 0 and "Nickname base" in dumped, p.stdout[-2000:]
    contact = [line for line in dumped if line.startswith("ContactInfo ")]
    # tor --dump-config quotes a value that holds a #
    assert contact in (["ContactInfo " + read], ['ContactInfo "%s"' % read]), contact[:1][:200]


# -- the other roles: their assert tasks (filter config_values), then their templates ----------------------------
HAPROXY_SERVICE = {"name": "web", "listen_port": 8080, "backend": "127.0.0.1:8081"}
HAPROXY_SOCKET = {"name": "web", "listen_socket": "/run/haproxy/web.sock", "backend": "127.0.0.1:8081"}
HAPROXY_DEFAULTS = {"rate_limit": 30, "rate_period": 10, "max_connections": 8, "limit_action": "deny"}
HAPROXY_VARS = dict(role_vars("onion_haproxy"), ansible_managed="Ansible managed",
                    onion_haproxy_services=[HAPROXY_SERVICE],
                    onion_haproxy_plan=onion_haproxy_plan([HAPROXY_SERVICE], HAPROXY_DEFAULTS,
                                                          check_onion_services=False))
HAPROXY_TEMPLATE = "roles/onion_haproxy/templates/haproxy.cfg.j2"
# the plan filter checks the role's own variables too (its settings)
HAPROXY_PLAN_EXPRESSION = task("onion_haproxy", "The services, checked, with the role's limits filled in")[
    "ansible.builtin.set_fact"]["onion_haproxy_plan"].strip().strip("{} ")
VANGUARDS_CHECK = task("onion_vanguards", "Check the role's variables")   # its fact: what the templates write
VANGUARDS_VARS = dict(role_vars("onion_vanguards"), ansible_managed="Ansible managed",
                      **dict(VANGUARDS_CHECK["ansible.builtin.set_fact"], **VANGUARDS_CHECK["vars"]))
VANGUARDS_CONF = "roles/onion_vanguards/templates/vanguards.conf.j2"
VANGUARDS_UNIT = "roles/onion_vanguards/templates/vanguards.service.j2"
ONIONBALANCE_VARS = dict(role_vars("onionbalance"), ansible_managed="Ansible managed", playbook_dir="/srv/play")
ONIONBALANCE_UNIT = "roles/onionbalance/templates/onionlab.conf.j2"
WATCHDOG_VARS = dict(role_vars("onion_watchdog"), ansible_managed="Ansible managed")
WATCHDOG_UNIT = "roles/onion_watchdog/templates/onionlab-watchdog.service.j2"
WATCHDOG_TIMER = "roles/onion_watchdog/templates/onionlab-watchdog.timer.j2"
ONIONPROBE_VARS = dict(role_vars("onionprobe"), ansible_managed="Ansible managed",
                       onionprobe_settings={"python": "/usr/bin/python3", "binary": "/usr/bin/onionprobe"})
ONIONPROBE_UNIT = "roles/onionprobe/templates/onionprobe.service.j2"
SETUPS = {
    "onion_watchdog": (WATCHDOG_VARS, filter_check("onion_watchdog", "Check the role's variables")
                       + assert_that("onion_watchdog", "The role's variables written into the watchdog's unit, one "
                                                       "word each")),
    "onionprobe": (ONIONPROBE_VARS, ["{{ (_onionprobe_variables | onionlab.tor.onionprobe_settings) is mapping }}"]
                   + assert_that("onionprobe", "The role's variables written into Onionprobe's unit, one word each")),
    "onion_haproxy": (HAPROXY_VARS, assert_that("onion_haproxy", "The role's variables written into HAProxy's "
                                                                 "configuration, one word each")
                      + ["{{ (%s) is sequence }}" % HAPROXY_PLAN_EXPRESSION]),
    "onion_vanguards": (VANGUARDS_VARS, assert_that(
        "onion_vanguards", "The role's variables written into the addon's configuration and unit, one value each")
        + filter_check("onion_vanguards", "Check the role's variables")),
    "onionbalance": (ONIONBALANCE_VARS, assert_that("onionbalance", "The role's variables written into "
                                                                    "Onionbalance's command line, one word each",
                                                    "backends.yml")),
}
# what a word may hold in each file: a # where no comment begins inside a line (systemd, configparser), a backslash
# at the end where it is no continuation (configparser), and no limit of length
INI_WORD = {"hash in a word", "backslash at the end", "long"}
SYSTEMD_WORD = {"hash in a word", "long"}
# (role, variable) -> (the template that writes it, or None when written through another variable, the hostile
# values accepted by the role's checks); every other hostile value is refused
OTHER_VARIABLES = {
    ("onion_haproxy", "onion_haproxy_circuit_header"): (HAPROXY_TEMPLATE, set()),
    ("onion_haproxy", "onion_haproxy_stats_socket"): (HAPROXY_TEMPLATE, set()),
    ("onion_haproxy", "onion_haproxy_table_size"): (HAPROXY_TEMPLATE, set()),  # | int: Python's 4300 digits
    ("onion_haproxy", "onion_haproxy_timeout_connect"): (HAPROXY_TEMPLATE, set()),
    ("onion_haproxy", "onion_haproxy_timeout_client"): (HAPROXY_TEMPLATE, set()),
    ("onion_haproxy", "onion_haproxy_timeout_server"): (HAPROXY_TEMPLATE, set()),
    ("onion_haproxy", "onion_haproxy_timeout_http_request"): (HAPROXY_TEMPLATE, set()),
    ("onion_vanguards", "onion_vanguards_control_socket"): (None, {"hash in a word"}),  # an absolute path; its line
    # is the filter vanguards_settings' (control_lines)
    ("onion_vanguards", "onion_vanguards_control_ip"): (None, INI_WORD),  # written with a control port only
    ("onion_vanguards", "onion_vanguards_log_level"): (VANGUARDS_CONF, INI_WORD),  # choices refuse all but 5 words
    ("onion_vanguards", "onion_vanguards_extra_config"): (
        None, {"hash", "hash in a word", "quotes", "quoted whole", "backslash at the end", "blank", "long"}),
    ("onion_vanguards", "onion_vanguards_instance"): (VANGUARDS_UNIT, set()),  # and its pattern: 1-40 chars
    ("onion_vanguards", "onion_vanguards_tor_unit"): (VANGUARDS_UNIT, set()),  # and its pattern: a unit name
    ("onion_vanguards", "onion_vanguards_user"): (VANGUARDS_UNIT, SYSTEMD_WORD),
    ("onion_vanguards", "onion_vanguards_group"): (VANGUARDS_UNIT, SYSTEMD_WORD),
    ("onion_vanguards", "onion_vanguards_venv"): (None, {"hash in a word"}),  # ExecStart's binary's dir; begins with /
    ("onionbalance", "onionbalance_binary"): (ONIONBALANCE_UNIT, SYSTEMD_WORD),
    ("onionbalance", "onionbalance_config_file"): (ONIONBALANCE_UNIT, SYSTEMD_WORD),
    ("onionbalance", "onionbalance_config_dir"): (ONIONBALANCE_UNIT, SYSTEMD_WORD),
    ("onionbalance", "onionbalance_control_socket"): (ONIONBALANCE_UNIT, SYSTEMD_WORD),
    ("onionbalance", "onionbalance_log_level"): (ONIONBALANCE_UNIT, SYSTEMD_WORD),  # choices refuse all but 5 words
    # the watchdog's unit (ExecStart) and timer; its settings file is JSON (to_nice_json), its entry point to_json
    ("onion_watchdog", "onion_watchdog_lib_dir"): (WATCHDOG_UNIT, SYSTEMD_WORD),
    ("onion_watchdog", "onion_watchdog_interval_minutes"): (WATCHDOG_TIMER, set()),  # | int >= 1; written | int
    ("onion_watchdog", "onion_watchdog_fetch_timeout"): (WATCHDOG_UNIT, set()),  # | int >= 1; written | int
    # Onionprobe's unit (User=, Group=, ExecStart=, Description=); its configuration is YAML (to_nice_yaml)
    ("onionprobe", "onionprobe_user"): (ONIONPROBE_UNIT, SYSTEMD_WORD),
    ("onionprobe", "onionprobe_group"): (ONIONPROBE_UNIT, SYSTEMD_WORD),
    ("onionprobe", "onionprobe_config_file"): (ONIONPROBE_UNIT, SYSTEMD_WORD),
    ("onionprobe", "onionprobe_launcher"): (ONIONPROBE_UNIT, SYSTEMD_WORD),
    ("onionprobe", "onionprobe_venv"): (None, {"hash in a word"}),  # ExecStart's python and binary; must begin with /
    ("onionprobe", "onionprobe_exporter_listen_address"): (ONIONPROBE_UNIT, set()),  # an IP address
    ("onionprobe", "onionprobe_exporter_port"): (ONIONPROBE_UNIT, set()),  # 1-65535; written | int
}
OTHER_CASES = [(role, variable, hostile) for role, variable in OTHER_VARIABLES for hostile in HOSTILE]


def hostile_vars(role, variable, value):
    variables = dict(SETUPS[role][0])
    variables[variable] = {"Vanguards": {"min_layer2_lifetime_hours": value}} \
        if variable == "onion_vanguards_extra_config" else value
    return variables


@pytest.fixture(scope="module")
def others_checked():
    """Every case's checks and, where a template writes the variable, the file: {case: (checks' results, file)},
    and {(role, variable, MARKER): (None, the file with MARKER there)}; all in one child."""
    jobs, keys = [], []
    for role, variable in OTHER_VARIABLES:
        template = OTHER_VARIABLES[(role, variable)][0]
        for hostile in list(HOSTILE) + [MARKER]:
            variables = hostile_vars(role, variable, HOSTILE.get(hostile, hostile))
            checks = SETUPS[role][1] if hostile != MARKER else []
            jobs += [{"data": expression, "vars": variables} for expression in checks]
            jobs += [{"template": template, "vars": variables}] if template else []
            keys.append(((role, variable, hostile), len(checks), bool(template)))
    results = iter(render(jobs))
    out = {}
    for key, checks, template in keys:
        out[key] = ([next(results) for _ in range(checks)], next(results) if template else None)
    return out


@pytest.mark.parametrize("role, variable, hostile", OTHER_CASES, ids=["%s-%s" % c[1:] for c in OTHER_CASES])
def test_other_roles_hostile_value_refused_or_meaning_kept(others_checked, role, variable, hostile):
    template, accepted = OTHER_VARIABLES[(role, variable)]
    results, rendered = others_checked[(role, variable, hostile)]
    errors = [r["error"] for r in results if "error" in r]
    if errors and "%s: %s must be" % (role, variable) in errors[0]:  # a checking filter's message (watchdog_settings)
        assert hostile not in accepted, errors[0]
        return
    if errors:  # the filter config_values' message
        assert "%s: these variables would not stay one value each" % role in errors[0], errors[0]
        assert "%s: the value" % variable in errors[0] or "%s.Vanguards." % variable in errors[0], errors[0]
        assert hostile not in accepted, errors[0]
        return
    if any(r["value"] is not True for r in results):  # the role's own pattern or number check (its fail_msg)
        assert hostile not in accepted, results
        return
    assert hostile in accepted, "accepted: %s=%r" % (variable, HOSTILE[hostile][:80])
    if template:  # the file says the value where a harmless one stood, line for line
        value = HOSTILE[hostile]
        base = others_checked[(role, variable, MARKER)][1]["text"]
        assert base.count(MARKER) >= 1
        assert rendered["text"].split("\n") == [line.replace(MARKER, value) for line in base.split("\n")]


# -- the filters of the other roles: each string of an entry -------------------------------------------------------


@pytest.mark.parametrize("entry, said", [
    (dict(HAPROXY_SERVICE, name="web\n"), "name must be 1 to 32"),
    (dict(HAPROXY_SERVICE, name="web #"), "name must be 1 to 32"),
    (dict(HAPROXY_SERVICE, backend="127.0.0.1:8081\n"), "backend must be HOST:PORT"),
    (dict(HAPROXY_SERVICE, backend="app\n:8081"), "backend must be HOST:PORT"),
    (dict(HAPROXY_SERVICE, backend="/run/app.sock\n"), "backend must be HOST:PORT"),
    (dict(HAPROXY_SERVICE, backend="[::1%lo check]:8081"), "backend must be HOST:PORT .*no IPv6 zone"),
    (dict(HAPROXY_SERVICE, backend="[::1%x\n\tbind 0.0.0.0:80]:8081"), "backend must be HOST:PORT .*no IPv6 zone"),
    (dict(HAPROXY_SERVICE, listen_address="::1%x\n\tbind 0.0.0.0:80"), "listen_address must be a loopback address"),
    (dict(HAPROXY_SOCKET, listen_socket="/run/haproxy/web.sock\n"), "listen_socket must be an absolute path"),
    (dict(HAPROXY_SOCKET, listen_socket_mode="660\n"), "listen_socket_mode must be an octal mode"),
    (dict(HAPROXY_SOCKET, listen_socket_group="debian-tor\n"), "listen_socket_group must be a group name"),
    (dict(HAPROXY_SERVICE, extra_frontend_lines=["option forwardfor\0"]), "extra_frontend_lines must be a list"),
    (dict(HAPROXY_SERVICE, extra_frontend_lines=["option forwardfor\x1b"]), "extra_frontend_lines must be a list"),
    (dict(HAPROXY_SERVICE, extra_frontend_lines=["option forwardfor\\"]), "extra_frontend_lines must be a list"),
    (dict(HAPROXY_SERVICE, extra_frontend_lines=["option forwardfor # x"]), "extra_frontend_lines must be a list"),
])
def test_haproxy_service_values_refused(entry, said):
    with pytest.raises(Exception, match=r"(?s)onion_haproxy: onion_haproxy_services\[0\] \(web.*\): %s" % said):
        onion_haproxy_plan([entry], HAPROXY_DEFAULTS, check_onion_services=False)


ADDRESS = onion.onion_address(b"\x01" * 32)   # a real v3 address: the filter checks its checksum
SUMMARY = [{"service": "web", "host": "h1", "onion_address": ADDRESS + ".onion", "onion_location": "http://x"}]


@pytest.mark.parametrize("site, snippet_dir, said", [
    ({"service": "web\n"}, "/etc/nginx/snippets", r"onion_location_sites\[0\]: service must be"),
    ({"service": "web", "onion_host": "h1\n"}, "/etc/nginx/snippets", r"onion_host must be an inventory host name"),
    ({"service": "web", "snippet": "web.conf\n"}, "/etc/nginx/snippets",
     r"snippet must be a file name ending in .conf"),
    ({"service": "web", "snippet": "we b.conf"}, "/etc/nginx/snippets", r"snippet must be a file name ending in .conf"),
])
def test_onion_location_values_refused(site, snippet_dir, said):
    with pytest.raises(Exception, match=said):
        snippets([site], summary=SUMMARY, host="h1", snippet_dir=snippet_dir)


def test_onion_location_summary_address_with_a_newline_refused():
    summary = [dict(SUMMARY[0], onion_address=ADDRESS + ".onion\n")]
    with pytest.raises(Exception, match="is not a v3 onion address"):
        snippets([{"service": "web"}], summary=summary, host="h1", snippet_dir="/etc/nginx/snippets")


def test_numbers_with_blanks_are_written_as_numbers():
    """int() takes '5\n' and ' 5': the role's number checks pass them, so the unit and timer write them through
    | int (a newline after OnBootSec=5 made 'min' a line of its own, the timer's interval 5 seconds)."""
    jobs = [{"template": WATCHDOG_TIMER, "vars": dict(WATCHDOG_VARS, onion_watchdog_interval_minutes="5\n")},
            {"template": WATCHDOG_UNIT, "vars": dict(WATCHDOG_VARS, onion_watchdog_fetch_timeout=" 30\n")},
            {"template": ONIONPROBE_UNIT, "vars": dict(ONIONPROBE_VARS, onionprobe_exporter_port="9935\n")}]
    timer, unit, probe = [r["text"] for r in render(jobs)]
    assert "OnBootSec=5min\nOnUnitActiveSec=5min\n" in timer and "every 5 minutes\n" in timer
    assert "TimeoutStartSec=300\n" in unit
    assert "port 9935\n" in probe


# -- onion_service: the action's controller checks and the module's host checks (one run, in this process) ---------
# Every string of the role that reaches the drop-in (HiddenServiceDir, HiddenServicePort, the options, ob_config), the
# escrow's file names or the summary file: refused with one message naming it, or the drop-in says what was given.

def _modules_conftest():
    import importlib.util
    spec = importlib.util.spec_from_file_location("_modules_conftest", str(REPO / "tests/unit/plugins/modules/conftest.py"))
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def deploy_onion_service(tmp_path, **over):
    """The role's one task as its action runs it (_deploy; run() turns a ValueError into its message too): (failed
    message or None, the drop-in's text or None)."""
    import copy
    import types
    from harness.fake_controller import FakeController
    from ansible_collections.onionlab.tor.plugins.action import onion_service_deploy as action
    from ansible_collections.onionlab.tor.plugins.modules import onion_service_deploy as module
    runner = _modules_conftest().ModuleRunner()

    class Action(action.ActionModule):
        def __init__(self):   # no ActionBase: _deploy needs only the task's check mode and _run_module
            self._task = types.SimpleNamespace(check_mode=False)

        def _run_module(self, module_args, task_vars):
            return dict(runner.run(module, **copy.deepcopy(module_args)))

    torrc_file = tmp_path / "torrc"
    torrc_file.write_text("SocksPort 0\nDataDirectory %s\n" % (tmp_path / "tordata"))
    (tmp_path / "svc").mkdir(exist_ok=True)
    drop_in = tmp_path / "torrc.d" / "onionlab.conf"
    with FakeController(tmp_path / "tordata", torrc_file) as fake:
        args = dict((k, copy.deepcopy(v.get("default"))) for k, v in action.TASK_SPEC.items())
        args.update(services=[{"name": "web", "ports": [80]}], service_dir=str(tmp_path / "svc"),
                    backup_dir=str(tmp_path / "escrow"), control_port=fake.port, pow_supported=False,
                    config_file=str(drop_in))
        args.update(over)
        try:
            Action()._deploy(args, "web1", {"groups": {"all": ["web1", "c1"]}})
            failed = None
        except action._Fail as exc:
            failed = exc.msg
        except ValueError as exc:   # OnionServicesError: run() says "onion_service role: OnionServicesError on ..."
            failed = str(exc)
        fake.settle()
    assert fake.errors == []
    return failed, drop_in.read_text() if drop_in.exists() else None


def service_with(where, value):
    """onion_service's variables with value in where."""
    service = {"name": "web", "ports": [80]}
    if where == "onion_service_dir":
        return {"service_dir": value}
    if where == "onion_service_defaults":
        return {"defaults": {"extra_options": {"HiddenServiceFutureOption": value}}}
    if where == "name":
        service["name"] = value
    elif where == "ports":
        service["ports"] = ["80:unix:/run/" + value]
    elif where == "target_address":
        service["ports"] = [{"port": 80, "target_address": value}]
    elif where == "extra_options":
        service["options"] = {"extra_options": {"HiddenServiceFutureOption": value}}
    elif where == "max_streams":
        service["options"] = {"max_streams": value}
    elif where == "onionbalance_frontend":
        service["onionbalance_frontend"] = "a" * 56 + value
    elif where == "clients":
        service["clients"] = [{"name": value, "hosts": ["c1"]}]
    elif where == "authorized_clients":
        service["authorized_clients"] = [{"name": value}]
    return {"services": [service]}


# where -> (what the message names, the hostile values accepted: the drop-in then says what was given)
ONION_SERVICE_STRINGS = {
    "onion_service_dir": ("onion_service_dir: the value", {"hash", "hash in a word", "blank", "percent"}),
    "name": ("name must be 1-128 letters", set()),
    "ports": ("target_address", {"percent", "long"}),  # tor reads the path whole (too long to connect to)
    "target_address": ("target_address", set()),
    "extra_options": ("extra_options HiddenServiceFutureOption", {"blank", "percent", "long"}),
    "onion_service_defaults": ("extra_options HiddenServiceFutureOption", {"blank", "percent", "long"}),
    "max_streams": ("max_streams", set()),
    "onionbalance_frontend": ("onionbalance_frontend", set()),
    "clients": ("clients[0]: name must be", set()),
    "authorized_clients": ("authorized_clients[0]: name must be", set()),
}
ONION_SERVICE_CASES = [(where, hostile) for where in ONION_SERVICE_STRINGS for hostile in HOSTILE]


@pytest.mark.parametrize("where, hostile", ONION_SERVICE_CASES, ids=["%s-%s" % c for c in ONION_SERVICE_CASES])
def test_onion_service_hostile_value_refused_or_meaning_kept(tmp_path, where, hostile):
    named, accepted = ONION_SERVICE_STRINGS[where]
    value = HOSTILE[hostile]
    if where == "onion_service_dir":
        value = str(tmp_path / "svc") + "/" + value
        os.makedirs(value, exist_ok=True) if "\0" not in value and len(value) < 200 else None
    failed, text = deploy_onion_service(tmp_path, **service_with(where, value))
    if failed and "552 Unrecognized configuration key \"HiddenServiceFutureOption\"" in failed:
        # past every check of ours, SETCONF carried it to the fake, which knows only tor's options: the drop-in the
        # module would write with it
        from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service
        failed, text = None, hidden_service.render_drop_in([hidden_service.normalize_service(
            {"path": "/var/lib/tor/web", "ports": [80], "extra_options": {"HiddenServiceFutureOption": value}})])
    if failed:
        assert hostile not in accepted, failed
        assert named in failed, failed
        assert "Traceback" not in failed and text is None, failed   # one message, nothing written
        return
    assert hostile in accepted, "accepted: %r" % text
    # the drop-in, read as tor reads it (torrc.parse, tested against tor), says what was given
    lines = [(k, v) for _, _, k, v in torrc.parse(text)]
    if where == "onion_service_dir":
        assert ("HiddenServiceDir", os.path.normpath(value) + "/web") in lines, lines
    elif where == "ports":
        assert ("HiddenServicePort", "80 unix:/run/" + value) in lines, lines
    else:
        assert ("HiddenServiceFutureOption", value) in lines, lines


# -- onion_client: no template of its own; what reaches a file is written by tor (ClientOnionAuthDir), from the
# client's name and key sent over the control port: both checked before, by the role's filter and the module

@pytest.mark.parametrize("hostile", sorted(HOSTILE))
def test_onion_client_hostile_client_name_refused(tmp_path, hostile):
    from ansible_collections.onionlab.tor.plugins.filter.onion_clients import onion_clients
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth
    services = {"web1": [{"name": "web", "ports": [80], "clients": [{"name": HOSTILE[hostile], "hosts": ["c1"]}]}]}
    with pytest.raises(Exception, match=r"clients\[0\]: name must be"):
        onion_clients(services, backup_dir=str(tmp_path), inventory=["web1", "c1"], host="c1")
    with pytest.raises(Exception, match="client_name"):
        client_auth.check_client_name(HOSTILE[hostile])


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
def test_onion_client_hostile_vault_key_refused(hostile):
    """onion_client_keys (a vault's private key), appended to a valid key: ONION_CLIENT_AUTH_ADD would carry it."""
    from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth
    with pytest.raises(Exception, match="private_key"):
        client_auth.parse_private_key("A" * 51 + "Q" + HOSTILE[hostile])
