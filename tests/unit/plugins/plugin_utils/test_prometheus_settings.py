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
GOOD = dict((k, DEFAULTS[k]) for k in MAPPING)
WEBHOOK = dict(GOOD, prometheus_alertmanager_receiver="webhook",
               prometheus_alertmanager_webhook_url="https://hooks.example.org/alert")
EMAIL = dict(GOOD, prometheus_alertmanager_receiver="email", prometheus_alertmanager_email_to="ops@example.org",
             prometheus_alertmanager_email_from="prometheus@example.org",
             prometheus_alertmanager_email_smarthost="mail.example.org:587")


def test_the_role_passes_each_variable_the_check_reads_as_itself():
    read = set(ps.DURATIONS) | set(ps.LISTENERS) | set(ps.OWN_FLAGS) | set(ps.BOOLEANS) | {
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
