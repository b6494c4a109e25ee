# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_haproxy_plan filter: the onion_haproxy role's services checked, completed, and checked against the
onion_services entry whose port points at each (export_circuit_id haproxy, a port to the frontend)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.filter.onion_haproxy_plan import FilterModule, onion_haproxy_plan

DEFAULTS = {'rate_limit': 30, 'rate_period': 10, 'max_connections': 8, 'limit_action': 'deny'}
ONION = [{'name': 'web', 'ports': [{'port': 80, 'target_port': 8081}],
          'options': {'export_circuit_id': 'haproxy', 'max_streams': 16, 'max_streams_close_circuit': True}}]


def _plan(services, **kw):
    kw.setdefault('onion_services', ONION)
    return onion_haproxy_plan(services, DEFAULTS, **kw)


def test_registered():
    assert FilterModule().filters()['onion_haproxy_plan'] is onion_haproxy_plan


def test_defaults_filled_and_tor_checked():
    [s] = _plan([{'name': 'web', 'onion_service': 'web', 'listen_port': 8081, 'backend': '127.0.0.1:8080'}])
    assert (s['rate_limit'], s['rate_period'], s['max_connections'], s['limit_action']) == (30, 10, 8, 'deny')
    assert s['listen_bind'] == '127.0.0.1:8081' and s['backend_server'] == '127.0.0.1:8080'
    assert s['tor']['checked'] and s['tor']['note'] == 'ok' and s['tor']['max_streams'] == 16
    assert s['summary']['per circuit'] == '30 requests per 10s, 8 connections open; beyond: HTTP 429'


def test_own_limits_socket_and_ipv6_backend():
    [s] = _plan([{'name': 'a', 'listen_socket': '/run/onion-a.sock', 'backend': '[::1]:9000', 'rate_limit': 5,
                  'rate_period': 60, 'max_connections': 2, 'limit_action': 'close'}])
    assert s['listen_bind'] == 'unix@/run/onion-a.sock' and s['listen_socket_group'] == 'debian-tor'
    assert s['listen_socket_dir'] == '/run'
    assert s['backend_server'] == '[::1]:9000' and s['limit_action'] == 'close' and not s['tor']['checked']
    [s] = _plan([{'name': 'b', 'listen_port': 8081, 'listen_address': '::1', 'backend': '/run/app.sock'}])
    assert s['listen_bind'] == '[::1]:8081' and s['backend_server'] == 'unix@/run/app.sock'
    assert s['listen_socket_dir'] is None


def test_tor_notes():
    onion = [dict(ONION[0], options={'export_circuit_id': 'haproxy'})]
    [s] = _plan([{'name': 'web', 'onion_service': 'web', 'listen_port': 8081, 'backend': '127.0.0.1:8080'}],
                onion_services=onion)
    assert s['tor']['note'].startswith("tor's max_streams is 0 (unlimited)")
    # the host-wide profile counts (onion_service_defaults), the entry's options win
    [s] = _plan([{'name': 'web', 'onion_service': 'web', 'listen_port': 8081, 'backend': '127.0.0.1:8080'}],
                onion_services=[dict(ONION[0], options={'max_streams': 2})],
                onion_service_defaults={'export_circuit_id': 'haproxy', 'max_streams': 40})
    assert 'below max_connections 8' in s['tor']['note']


@pytest.mark.parametrize('services, onion, message', [
    ([{'name': 'web', 'listen_port': 8081, 'backend': '127.0.0.1:8080', 'rate': 3}], ONION, 'unknown key rate'),
    ([{'name': 'a b', 'listen_port': 8081, 'backend': '127.0.0.1:8080'}], ONION, 'name must be 1 to 32'),
    ([{'name': 'a', 'listen_port': 1, 'backend': '127.0.0.1:8080'},
      {'name': 'a', 'listen_port': 2, 'backend': '127.0.0.1:8080'}], ONION, "two services are named 'a'"),
    ([{'name': 'a', 'listen_port': 1, 'backend': '127.0.0.1:8080'},
      {'name': 'b', 'listen_port': 1, 'backend': '127.0.0.1:8080'}], ONION, 'listens where a does'),
    ([{'name': 'a', 'backend': '127.0.0.1:8080'}], ONION, 'give one of listen_port'),
    ([{'name': 'a', 'listen_port': 1, 'listen_socket': '/x', 'backend': '127.0.0.1:8080'}], ONION,
     'give one of listen_port'),
    ([{'name': 'a', 'listen_port': 70000, 'backend': '127.0.0.1:8080'}], ONION, 'listen_port must be a whole'),
    ([{'name': 'a', 'listen_port': 8081, 'listen_address': '0.0.0.0', 'backend': '127.0.0.1:8080'}], ONION,
     'must be a loopback address'),
    ([{'name': 'a', 'listen_port': 8081, 'backend': '127.0.0.1:8080\n\tbind 0.0.0.0:80'}], ONION,
     'backend must be HOST:PORT'),
    ([{'name': 'a', 'listen_port': 8081, 'backend': '127.0.0.1:8081'}], ONION, "backend is HAProxy's own"),
    ([{'name': 'a', 'listen_port': 8081, 'backend': 'x:1', 'rate_limit': 0}], ONION, 'rate_limit must be'),
    ([{'name': 'a', 'listen_port': 8081, 'backend': 'x:1', 'limit_action': 'drop'}], ONION, 'limit_action must be'),
    ([{'name': 'a', 'listen_port': 8081, 'backend': 'x:1', 'extra_frontend_lines': ['a\nb']}], ONION,
     'single HAProxy lines'),
    ([{'name': 'a', 'listen_socket': '/run/a b.sock', 'backend': 'x:1'}], ONION, 'listen_socket must be'),
    ([{'name': 'web', 'onion_service': 'www', 'listen_port': 8081, 'backend': 'x:1'}], ONION,
     "onion_service 'www' is not in this host's onion_services (web)"),
    ([{'name': 'web', 'onion_service': 'web', 'listen_port': 8081, 'backend': 'x:1'}],
     [dict(ONION[0], options={})], "has export_circuit_id 'none', so tor sends no PROXY line"),
    ([{'name': 'web', 'onion_service': 'web', 'listen_port': 8082, 'backend': 'x:1'}], ONION,
     'no port of onion_services entry \'web\' points at this frontend (127.0.0.1:8082); its ports go to '
     '80 127.0.0.1:8081; put in its options: export_circuit_id: haproxy, max_streams: 16, '
     'max_streams_close_circuit: true, and a port {port: PORT, target_port: 8082}'),
])
def test_one_clear_refusal(services, onion, message):
    with pytest.raises(AnsibleFilterError) as err:
        _plan(services, onion_services=onion)
    assert message in str(err.value), str(err.value)
    assert str(err.value).startswith('onion_haproxy: ')


def test_check_can_be_off():
    [s] = _plan([{'name': 'web', 'onion_service': 'www', 'listen_port': 8081, 'backend': 'x:1'}],
                check_onion_services=False)
    assert not s['tor']['checked'] and 'onion_haproxy_check_onion_services: false' in s['summary']['tor now']


def test_who_wrote_the_configuration_file():
    """The role's marker on the first line, Debian's conffile unchanged, or edited (the role refuses to replace it);
    the role's Jinja chain over dpkg-query's lines before issue 41."""
    import base64
    from ansible.errors import AnsibleFilterError
    from ansible_collections.onionlab.tor.plugins.filter.onion_haproxy_config_owner import onion_haproxy_config_owner

    def owner(text, checksum='abc', lines=(' /etc/haproxy/haproxy.cfg abc', ' /etc/default/haproxy def')):
        return onion_haproxy_config_owner(base64.b64encode(text.encode()).decode(), marker='MARK: managed',
                                          path='/etc/haproxy/haproxy.cfg', checksum=checksum, conffiles=list(lines))
    assert owner('# MARK: managed\nglobal\n') == 'role'
    assert owner('global\n# MARK: managed\n') == 'debian'
    assert owner('global\n', checksum='zzz') == 'edited'
    assert owner('global\n', lines=[' /etc/haproxy/haproxy.cfg abc obsolete']) == 'debian'
    assert owner('global\n', lines=[' /etc/haproxy/other.cfg abc']) == 'edited'
    assert owner('global\n', lines=[]) == 'edited'
    with pytest.raises(AnsibleFilterError, match="slurp's base64 content"):
        onion_haproxy_config_owner('not base64!', marker='M', path='/p')


SETTINGS = {"onion_haproxy_circuit_header": "X-Onion-CircuitID", "onion_haproxy_stats_socket": "/run/haproxy/admin.sock",
            "onion_haproxy_config_file": "/etc/haproxy/haproxy.cfg", "onion_haproxy_table_size": "100000",
            "onion_haproxy_timeout_connect": 5, "onion_haproxy_timeout_client": "30",
            "onion_haproxy_timeout_server": 30, "onion_haproxy_timeout_http_request": 10}


@pytest.mark.parametrize("period, expire", [(1, 60), (10, 60), (60, 60), (61, 61), (3600, 3600)])
def test_the_stick_table_keeps_a_circuit_for_the_period_and_at_least_a_minute(period, expire):
    svc = {'name': 'web', 'listen_port': 8090, 'backend': '127.0.0.1:8080', 'rate_period': period}
    assert onion_haproxy_plan([svc], DEFAULTS, check_onion_services=False)[0]["table_expire"] == expire


def test_the_role_settings_checked_every_wrong_one_named():
    settings = dict(SETTINGS, onion_haproxy_table_size=100000)
    assert onion_haproxy_plan([], DEFAULTS, settings=settings) == []
    bad = dict(SETTINGS, onion_haproxy_circuit_header="X-Id\r\nX-Evil: 1", onion_haproxy_stats_socket="admin.sock",
               onion_haproxy_table_size=100000, onion_haproxy_timeout_client="0", onion_haproxy_timeout_server=True)
    with pytest.raises(AnsibleFilterError) as e:
        onion_haproxy_plan([], DEFAULTS, settings=bad)
    msg = str(e.value)
    assert msg.startswith("onion_haproxy: onion_haproxy_circuit_header must be a header name (1-64 letters, digits, "
                          '-), got "X-Id\\r\\nX-Evil: 1"'), msg
    for name in ("onion_haproxy_stats_socket must be an absolute path", "onion_haproxy_timeout_client must be a whole",
                 "onion_haproxy_timeout_server must be a whole"):
        assert name in msg, msg
    assert "onion_haproxy_config_file" not in msg and "onion_haproxy_table_size" not in msg
