# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plugin_utils/prometheus_settings.py: the prometheus role's own variables checked in Python, and Alertmanager's
configuration from them; the role's mapping (vars/main.yml) names every variable the check reads."""

from __future__ import annotations

import pathlib
import re

import pytest
import yaml

from ansible_collections.onionlab.tor.plugins.plugin_utils import prometheus_settings as ps

ROLE = pathlib.Path(__file__).resolve().parents[4] / "roles" / "prometheus"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
MAPPING = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["_prometheus_settings"]
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
GOOD = dict((k, DEFAULTS[k] if k in DEFAULTS else ROLE_VARS[k]) for k in MAPPING)
GOOD.update(prometheus_config_file="/etc/prometheus/prometheus.yml",
            prometheus_rules_file="/etc/prometheus/onionlab_tor_rules.yml",
            prometheus_alertmanager_config_file="/etc/prometheus/alertmanager.yml")
WEBHOOK = dict(GOOD, prometheus_alertmanager_receiver="webhook",
               prometheus_alertmanager_webhook_url="https://hooks.example.org/alert")
EMAIL = dict(GOOD, prometheus_alertmanager_receiver="email", prometheus_alertmanager_email_to="ops@example.org",
             prometheus_alertmanager_email_from="prometheus@example.org",
             prometheus_alertmanager_email_smarthost="mail.example.org:587")


def test_the_role_passes_each_variable_the_check_reads_as_itself():
    read = set(ps.DURATIONS) | set(ps.LISTENERS) | set(ps.OWN_FLAGS) | set(ps.BOOLEANS) | set(ps.WHOLE_NUMBERS)
    read |= set(ps.FILES) | {
        "prometheus_alertmanager_targets",
        "prometheus_alertmanager_receiver", "prometheus_alertmanager_webhook_url", "prometheus_alertmanager_email_to",
        "prometheus_alertmanager_email_from", "prometheus_alertmanager_email_smarthost",
        "prometheus_alertmanager_email_auth_username", "prometheus_alertmanager_email_auth_password"}
    assert set(MAPPING) == read
    assert all(MAPPING[k] == "{{ %s }}" % k for k in MAPPING)


def test_every_duration_of_the_role_is_checked():
    """A variable of the role's defaults whose value is a Prometheus duration is in DURATIONS (a new one is not
    forgotten)."""
    durations = set(k for k, v in DEFAULTS.items() if isinstance(v, str) and re.match(r"^([0-9]+(ms|s|m|h|d|w|y))+\Z", v))
    assert durations == set(ps.DURATIONS)


@pytest.mark.parametrize("good", [GOOD, WEBHOOK, EMAIL], ids=["none", "webhook", "email"])
def test_good_settings_pass_unchanged(good):
    assert ps.check(dict(good)) == good


@pytest.mark.parametrize("changes, said", [
    ({"prometheus_listen_address": "127.0.0.1"}, "prometheus_listen_address must be an address and a port"),
    ({"prometheus_listen_address": "127.0.0.1:0"}, "prometheus_listen_address must be"),
    ({"prometheus_alertmanager_listen_address": "[::1]:65536"}, "prometheus_alertmanager_listen_address must be"),
    ({"prometheus_listen_address": 9090}, "prometheus_listen_address must be"),
    ({"prometheus_extra_args": "--web.enable-lifecycle"}, "prometheus_extra_args must be a list of flags"),
    ({"prometheus_extra_args": ["--config.file=/tmp/x"]}, r"prometheus_extra_args must be flags .*\"--config.file"),
    ({"prometheus_extra_args": ["--web.external-url=https://x/$HOME"]}, "prometheus_extra_args must be flags"),
    ({"prometheus_alertmanager_extra_args": ["--cluster.peer=10.0.0.2:9094"]},
     "prometheus_alertmanager_extra_args must be flags"),
    ({"prometheus_scrape_interval": "15 s"}, r"Prometheus duration \(15s, 1h30m\): prometheus_scrape_interval got"),
    ({"prometheus_alert_pow_for": "10m\nx: y"}, r'prometheus_alert_pow_for got "10m\\nx: y"'),
    ({"prometheus_evaluation_interval": 15}, "prometheus_evaluation_interval got 15"),
    ({"prometheus_alertmanager_receiver": "pager"}, 'prometheus_alertmanager_receiver must be one of none, webhook, '
                                                    'email, got "pager"'),
    ({"prometheus_alertmanager_send_resolved": "maybe"}, "prometheus_alertmanager_send_resolved must be true or false"),
    ({"prometheus_alertmanager_receiver": "webhook"}, "the receiver webhook needs prometheus_alertmanager_webhook_url"),
    ({"prometheus_alertmanager_receiver": "webhook", "prometheus_alertmanager_webhook_url": "ftp://x"},
     'webhook_url, an http:// or https:// URL; got "ftp://x"'),
    ({"prometheus_manage_service": "perhaps"}, "prometheus_manage_service must be true or false"),
    ({"prometheus_alert_certificate_expiry_days": "two weeks"},
     'prometheus_alert_certificate_expiry_days must be a whole number of 0 or more, got "two weeks"'),
    ({"prometheus_alert_watchdog_stale_seconds": -1}, "prometheus_alert_watchdog_stale_seconds must be a whole number"),
    ({"prometheus_alert_watchdog_stale_seconds": True}, "prometheus_alert_watchdog_stale_seconds must be a whole number"),
    ({"prometheus_rules_file": ""}, 'prometheus_rules_file must be a path, got ""'),
    ({"prometheus_alertmanager_targets": "127.0.0.1:9093"}, "prometheus_alertmanager_targets must be null .* or a list"),
    ({"prometheus_alertmanager_targets": ["127.0.0.1"]}, "prometheus_alertmanager_targets must be null"),
    ({"prometheus_alertmanager_targets": ["127.0.0.1:9093\n- x"]}, "prometheus_alertmanager_targets must be null"),
])
def test_a_wrong_variable_is_named(changes, said):
    with pytest.raises(ps.SettingsError, match=said):
        ps.check(dict(GOOD, **changes))


def test_email_needs_its_three_and_every_wrong_one_is_named_once():
    with pytest.raises(ps.SettingsError) as e:
        ps.check(dict(EMAIL, prometheus_alertmanager_email_to="ops", prometheus_alertmanager_email_smarthost="mail",
                      prometheus_scrape_timeout="x"))
    said = str(e.value)
    assert said.count("the receiver email needs") == 2 and "prometheus_scrape_timeout got" in said, said


def test_the_smtp_password_is_never_in_a_message():
    with pytest.raises(ps.SettingsError) as e:
        ps.alertmanager_config(dict(EMAIL, prometheus_alertmanager_email_auth_username="prometheus",
                                    prometheus_alertmanager_email_auth_password="s3cret-not-printed",
                                    prometheus_alertmanager_email_smarthost="bad"))
    assert "s3cret" not in str(e.value)


def test_alertmanager_config_webhook_and_email():
    assert ps.alertmanager_config(dict(WEBHOOK, prometheus_alertmanager_send_resolved="no")) == {
        "route": {"receiver": "onionlab", "group_by": ["alertname", "host", "onion", "name"], "group_wait": "30s",
                  "group_interval": "5m", "repeat_interval": "4h"},
        "receivers": [{"name": "onionlab", "webhook_configs": [{"url": "https://hooks.example.org/alert",
                                                                "send_resolved": False}]}]}
    email = ps.alertmanager_config(dict(EMAIL, prometheus_alertmanager_email_auth_username="prometheus",
                                        prometheus_alertmanager_email_auth_password="pw"))["receivers"][0]
    assert email == {"name": "onionlab", "email_configs": [{
        "to": "ops@example.org", "from": "prometheus@example.org", "smarthost": "mail.example.org:587",
        "require_tls": True, "send_resolved": True, "auth_username": "prometheus", "auth_password": "pw"}]}
    assert "auth_password" not in ps.alertmanager_config(EMAIL)["receivers"][0]["email_configs"][0]


def test_the_plan_by_default():
    """What the role writes from its defaults: no Alertmanager (no receiver), the flags on loopback, one directory."""
    assert ps.plan(dict(GOOD)) == {
        "alertmanager_targets": [],
        "prometheus_args": "--config.file=/etc/prometheus/prometheus.yml --web.listen-address=127.0.0.1:9090",
        "alertmanager_args": "--config.file=/etc/prometheus/alertmanager.yml --web.listen-address=127.0.0.1:9093 "
                             "--cluster.listen-address=",
        "config_dirs": ["/etc/prometheus"],
        "alertmanager_config_group": "prometheus",
        "certificate_expiry_seconds": 14 * 86400,
        "watchdog_stale_seconds": 1200}


@pytest.mark.parametrize("changes, targets", [
    ({}, ["127.0.0.1:9093"]),                                                   # this host's, with a receiver
    ({"prometheus_alertmanager_listen_address": "[::1]:19093"}, ["[::1]:19093"]),
    ({"prometheus_alertmanager_targets": []}, []),                               # given: as it is
    ({"prometheus_alertmanager_targets": ["10.0.0.5:9093", "am.example.org:9093"]},
     ["10.0.0.5:9093", "am.example.org:9093"]),
])
def test_where_prometheus_sends_alerts(changes, targets):
    assert ps.plan(dict(WEBHOOK, **changes))["alertmanager_targets"] == targets


def test_alertmanager_targets_given_without_a_receiver_are_kept():
    """An Alertmanager run some other way (prometheus_alertmanager_receiver none, the targets given)."""
    assert ps.plan(dict(GOOD, prometheus_alertmanager_targets=["10.0.0.5:9093"]))["alertmanager_targets"] == [
        "10.0.0.5:9093"]


def test_the_plan_of_other_values():
    got = ps.plan(dict(EMAIL, prometheus_manage_service="no", prometheus_rules_file="/srv/rules/r.yml",
                       prometheus_alertmanager_config_file="/etc/alertmanager/alertmanager.yml",
                       prometheus_alert_certificate_expiry_days="30", prometheus_alert_watchdog_stale_seconds=600,
                       prometheus_extra_args=["--web.enable-lifecycle"],
                       prometheus_alertmanager_extra_args=["--web.external-url=https://am.example.org/"]))
    assert got["config_dirs"] == ["/srv/rules", "/etc/prometheus", "/etc/alertmanager"]
    assert got["alertmanager_config_group"] is None
    assert got["prometheus_args"].endswith(" --web.enable-lifecycle")
    assert got["alertmanager_args"] == ("--config.file=/etc/alertmanager/alertmanager.yml "
                                        "--web.listen-address=127.0.0.1:9093 --cluster.listen-address= "
                                        "--web.external-url=https://am.example.org/")
    assert (got["certificate_expiry_seconds"], got["watchdog_stale_seconds"]) == (30 * 86400, 600)


def test_the_plan_holds_no_secret():
    got = ps.plan(dict(EMAIL, prometheus_alertmanager_email_auth_username="prometheus",
                       prometheus_alertmanager_email_auth_password="s3cret-not-in-the-plan"))
    assert "s3cret" not in repr(got)
