# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""capabilities.py: tor versions, config/names and --list-modules against what a service sends."""

import os

import pytest

from ansible_collections.onionlab.tor.plugins.module_utils._tor import capabilities as caps
from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import OperationFailed

POW = {"path": "/s", "pow": {"enabled": True}}
ALL_NAMES = [o[0] for o in hs.OPTIONS]


@pytest.mark.parametrize("text, version", [
    ("0.4.9.11", (0, 4, 9, 11)),
    ("0.4.8.1-alpha", (0, 4, 8, 1)),
    ("0.4.9.2-alpha-dev (git-0123456789abcdef)", (0, 4, 9, 2)),
    ("0.3.5", (0, 3, 5, 0)),
    ("Tor 0.4", None),
    ("", None),
    (None, None),
])
def test_parse_version(text, version):
    assert caps.parse_version(text) == version


def refusals(version, names=ALL_NAMES, modules=None, **params):
    service = hs.normalize_service(dict({"path": "/s"}, **params))
    return caps.Capabilities(version, names, modules).service_refusals(service)


def test_defaults_need_nothing():
    assert refusals("0.3.5.8", names=[], pow={"enabled": False}, intro_dos={"rate_per_sec": 25}) == []
    assert not caps.needs_check([hs.normalize_service({"path": "/s", "pow": {"queue_rate": 250}})])
    assert caps.needs_check([hs.normalize_service(POW)])


def test_pow_needs_0_4_8_1():
    assert refusals("0.4.8.1-alpha", pow={"enabled": True}) == []
    assert refusals("0.4.8.10", pow={"enabled": True, "queue_rate": 5}) == []
    (message,) = refusals("0.4.7.16", pow={"enabled": True})
    assert message == ("pow.enabled (HiddenServicePoWDefensesEnabled) of /s needs tor 0.4.8.1-alpha or later; "
                       "this tor is 0.4.7.16")
    # each option that would be sent is named
    assert len(refusals("0.4.7.16", pow={"enabled": True, "queue_rate": 5, "queue_burst": 50})) == 3


def test_intro_dos_and_export_circuit_id_versions():
    assert refusals("0.4.2.1-alpha", intro_dos={"enabled": True}, export_circuit_id="haproxy") == []
    (message,) = refusals("0.4.1.9", intro_dos={"enabled": True})
    assert "intro_dos.enabled (HiddenServiceEnableIntroDoSDefense)" in message and "0.4.2.1-alpha" in message
    (message,) = refusals("0.3.5.8", export_circuit_id="haproxy")
    assert "export_circuit_id (HiddenServiceExportCircuitID) of /s needs tor 0.4.0.1-alpha" in message


def test_config_names_decide_when_the_version_is_unreadable_or_patched():
    names = [n for n in ALL_NAMES if "PoW" not in n]
    (message,) = refusals("weird", names=names, pow={"enabled": True})
    assert "does not know HiddenServicePoWDefensesEnabled" in message and "this tor, weird" in message
    (message,) = refusals("0.4.9.11", names=names, pow={"enabled": True})
    assert "does not know" in message
    assert refusals("weird", names=None, pow={"enabled": True}) == []   # nothing known: tor decides


def test_pow_module():
    (message,) = refusals("0.4.9.11", modules={"relay": True, "pow": False}, pow={"enabled": True})
    assert message == ("pow.enabled (HiddenServicePoWDefensesEnabled) of /s needs tor's pow module; this tor "
                       "(0.4.9.11) was built without it (tor --list-modules: pow: no)")
    # a rate alone does not need the module (tor accepts it without)
    assert refusals("0.4.9.11", modules={"pow": False}, pow={"queue_rate": 5}) == []
    assert refusals("0.4.9.11", modules={"pow": True}, pow={"enabled": True}) == []


def test_check_services_one_error_nothing_changed():
    services = [hs.normalize_service(POW), hs.normalize_service({"path": "/t", "intro_dos": {"enabled": True}})]
    with pytest.raises(caps.CapabilityError) as err:
        caps.Capabilities("0.4.1.0").check_services(services)
    assert "of /s needs tor 0.4.8.1-alpha" in str(err.value) and "of /t needs tor 0.4.2.1-alpha" in str(err.value)
    assert str(err.value).endswith("; nothing was changed")


def test_add_onion_pow():
    enabled = hs.normalize_group("pow", {"enabled": True})
    caps.Capabilities("0.4.9.2-alpha").check_add_onion_pow(enabled)
    caps.Capabilities("0.4.7.1").check_add_onion_pow(hs.normalize_group("pow", None))   # default: not sent
    with pytest.raises(caps.CapabilityError) as err:
        caps.Capabilities("0.4.8.16").check_add_onion_pow(enabled)
    assert str(err.value) == ("pow of an ephemeral service (ADD_ONION PoWDefensesEnabled=) needs tor 0.4.9.2-alpha "
                              "or later; this tor is 0.4.8.16; nothing was changed")
    with pytest.raises(caps.CapabilityError, match="built without it"):
        caps.Capabilities("0.4.9.11", modules={"pow": False}).check_add_onion_pow(enabled)


def test_module_list_parsing():
    assert caps._module_list("relay: yes\ndirauth: no\npow: yes\nnoise\n") == {"relay": True, "dirauth": False,
                                                                                "pow": True}


def test_local_modules_only_runs_a_tor_binary(tmp_path):
    ran = []

    def run(argv):
        ran.append(argv)
        return "pow: no\n"
    # this test's own process is python: never run
    assert caps.local_modules(os.getpid(), run) is None and ran == []
    assert caps.local_modules("not a pid", run) is None
    assert caps.local_modules(2 ** 22 + 7, run) is None
    assert caps.local_modules(os.getpid(), None) is None


class _Ctl(object):
    def __init__(self, info):
        self.info = info
        self.asked = []

    def get_info(self, key):
        self.asked.append(key)
        value = self.info.get(key)
        if value is None:
            raise OperationFailed("552", 'Unrecognized key "%s"' % key, "GETINFO")
        return {key: value}


def test_read_from_a_controller():
    ctl = _Ctl({"config/names": "HiddenServicePoWDefensesEnabled Dependent\nUser String\n", "version": "0.4.9.11"})
    found = caps.Capabilities.read(ctl)
    assert found.version == (0, 4, 9, 11) and found.config_names == {"hiddenservicepowdefensesenabled", "user"}
    assert found.modules is None   # no process/pid: unknown
    # a tor that refuses config/names: the version alone
    found = caps.Capabilities.read(_Ctl({}), version="0.4.7.16")
    assert found.config_names is None and found.version == (0, 4, 7, 16)
