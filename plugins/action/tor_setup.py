# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tor role's one task: one run of the module tor_setup on the host finds out what differs
(package, torrc, service) and checks and writes the torrc; the builtin apt/dnf/service modules run
only for what differs. Documented in plugins/modules/tor_setup.py."""

from __future__ import annotations

import base64

from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc as guard

display = Display()

MODULE = 'onionlab.tor.tor_setup'
_MODULE_ARGS = ('torrc', 'config_file', 'config_dir', 'os_defaults_torrc', 'torrc_takeover', 'install', 'package_name',
                'package_state', 'package_version', 'service', 'service_name', 'service_state', 'service_enabled',
                'watchdog_sec')


class _Failed(Exception):
    def __init__(self, result):
        super(_Failed, self).__init__(result.get('msg'))
        self.result = result


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _requires_connection = True

    def _run(self, name, args, task_vars, step=None):
        res = self._execute_module(module_name=name, module_args=args, task_vars=task_vars)
        res.pop('invocation', None)
        if res.get('failed'):
            raise _Failed(res)
        if step:
            self._steps[step] = 'changed' if res.get('changed') else 'ok'
        return res

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = self._task.args
        # every role variable that the torrc holds, checked where the role passes them (config_value's one check)
        problem = guard.line_problem(args.get('options') or {}, args.get('config_lines') or [],
                                     args.get('torrc_values') or {}) or \
            guard.non_anonymous_problem(args.get('options') or {}, args.get('config_lines') or [],
                                        args.get('socks_port'),
                                        boolean(args.get('non_anonymous_onion_services', False), strict=False))
        if problem:
            result.update(failed=True, msg=problem)
            return result
        self._steps, self._messages = {}, []
        try:
            result.update(self._setup(args, task_vars))
        except _Failed as e:
            e.result.pop('before_hidden_b64', None)
            result.update(e.result)
            result['steps'] = self._steps
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _setup(self, args, task_vars):
        module_args = dict((k, args[k]) for k in _MODULE_ARGS if k in args)
        if module_args.get('package_version') in ('', None, 'present', 'latest'):
            # the role's tor_version: present or latest is package_state's (which it wins over), else one version
            if module_args.pop('package_version', None) == 'latest':
                module_args['package_state'] = 'latest'
        install = boolean(args.get('install', True), strict=False)
        manage_service = boolean(args.get('service', True), strict=False)
        if not manage_service or module_args.get('watchdog_sec') in (None, ''):
            # the watchdog drop-in belongs to the service: tasks_from configure (the torrc only) leaves it alone
            module_args.pop('watchdog_sec', None)
        enabled = boolean(args.get('service_enabled', True), strict=False)
        probe = self._run(MODULE, module_args, task_vars)
        facts = task_vars.get('ansible_facts') or {}
        family = facts.get('os_family') or probe.get('os_family')
        changed = probe['changed']
        messages = list(probe['messages'])
        self._steps.update(probe['steps'])
        installed, not_installed_yet, torrc = False, False, probe
        if install:
            install_args = dict(args, **module_args)
            install_args['package_version'] = module_args.get('package_version')   # None for present or latest
            installed = self._install(install_args, task_vars, family, facts, probe)
            # check mode: a tor to read the torrc is there unless the package is new (another exact version: it is)
            not_installed_yet = self._task.check_mode and installed and not (
                module_args.get('package_version') and probe.get('package_installed'))
            changed = changed or installed
            messages += self._messages
        if not probe['configured']:
            # after the package: tor checks the new torrc (check mode before the package: as written)
            torrc = self._run(MODULE, dict(module_args, install=False, service=False, configure='always',
                                           tor_missing=not_installed_yet), task_vars)
            messages += torrc['messages']
            self._steps.update(torrc['steps'])
            changed = changed or torrc['changed']
        # the drop-in is written in the run that found the package installed (probe, or torrc after the install)
        unit_run = probe if probe['configured'] else torrc
        torrc_changed = self._steps.get('torrc') == 'changed'
        if manage_service and not not_installed_yet:
            changed = self._service(args, probe, installed, torrc_changed, enabled, task_vars) or changed
        elif manage_service:
            self._steps['service'] = 'skipped'
            messages.append(
                'Check mode: %s is not installed yet; the real run installs it, writes %s after tor --verify-config '
                'has accepted it, and sets the %s service %s%s.'
                % (args.get('package_name', 'tor'), args.get('config_file', guard.DEFAULT_CONFIG_FILE),
                   args.get('service_name', 'tor'), args.get('service_state', 'started'),
                   ' and enabled' if enabled else ''))
        if torrc.get('backup_file'):
            messages.append('The previous %s is kept as %s'
                            % (args.get('config_file', guard.DEFAULT_CONFIG_FILE), torrc['backup_file']))
        facts_out = {'tor_torrc_dropped': torrc['dropped'], 'tor_torrc_changed': torrc_changed}
        if 'versions' in probe:
            versions = probe['versions']
            if installed and not self._task.check_mode:
                # what runs now: the new package, restarted above, and its pin (the module asked again)
                again = self._run(MODULE, dict(module_args, configure='auto'), task_vars)
                versions = again.get('versions', versions)
                if again.get('steps', {}).get('pin') == 'changed' or self._steps.get('pin') in (None, 'pending'):
                    self._steps['pin'] = again['steps'].get('pin', self._steps.get('pin'))
            elif probe.get('stale_message'):
                messages.append(probe['stale_message'])
            facts_out['tor_versions'] = versions
        if torrc.get('backup_file'):
            facts_out['tor_torrc_backup'] = torrc['backup_file']
        out = dict(changed=changed, steps=self._steps, messages=messages, dropped=torrc['dropped'],
                   tor_not_installed_yet=not_installed_yet, ansible_facts=facts_out)
        if torrc.get('backup_file'):
            out['backup_file'] = torrc['backup_file']
        if messages:
            out['msg'] = ' '.join(messages)
        diffs = self._diffs(args, torrc, unit_run)
        if diffs:
            out['diff'] = diffs[0] if len(diffs) == 1 else diffs
        host = task_vars.get('inventory_hostname', '')
        for message in messages:
            display.display('%s: %s' % (host, message))
        return out

    def _service(self, args, probe, installed, torrc_changed, enabled, task_vars):
        """The service as asked (state, enabled), then what the handlers Restart tor / Reload tor do, at the end of
        the role as they would be (a new WatchdogSec waits for tor's next start: the run says so). True when the
        service step changed something."""
        service = args.get('service_name', 'tor')
        state = args.get('service_state', 'started')
        changed = False
        as_asked = (probe.get('service_active') is (state == 'started')
                    and probe.get('service_enabled') is enabled)
        if installed or not as_asked:
            changed = self._run('ansible.builtin.service', {'name': service, 'state': state, 'enabled': enabled},
                                task_vars, 'service')['changed']
        else:
            self._steps['service'] = 'ok'
        if state != 'stopped' and installed:
            self._run('ansible.builtin.service', {'name': service, 'state': 'restarted'}, task_vars, 'restart')
        elif state != 'stopped' and torrc_changed:
            self._run('ansible.builtin.service', {'name': service, 'state': 'reloaded'}, task_vars, 'reload')
        return changed

    @staticmethod
    def _diffs(args, torrc, unit_run):
        """The torrc's diff (its secret values hidden on the host: the current torrc itself never crosses the
        connection) and the WatchdogSec drop-in's."""
        diffs = []
        if 'before_hidden_b64' in torrc:
            path = args.get('config_file', guard.DEFAULT_CONFIG_FILE)
            diffs.append({'before_header': path, 'after_header': path,
                          'before': guard.hide_secrets(to_text(base64.b64decode(torrc['before_hidden_b64']),
                                                               errors='surrogate_or_replace')),
                          'after': guard.hide_secrets(to_text(args['torrc']))})
        if unit_run.get('watchdog_diff'):
            diffs.append(unit_run['watchdog_diff'])
        return diffs

    def _install(self, args, task_vars, family, facts, probe):
        """The package step; True when it installed (or in check mode would install) something."""
        name = args.get('package_name', 'tor')
        state = args.get('package_state', 'present')
        version = args.get('package_version')
        if family == 'RedHat':
            if state == 'present' and probe['package_installed']:
                self._steps['package'] = 'ok'
                return False
            if (facts.get('distribution') or probe.get('distribution', '')).lower() != 'fedora':
                self._run('ansible.builtin.dnf', {'name': 'epel-release', 'state': 'present'}, task_vars, 'epel')
            if version:
                if self._version_installed(version, probe):
                    return False
                return self._run('ansible.builtin.dnf', {'name': '%s-%s' % (name, version),
                                                         'allow_downgrade': True}, task_vars, 'package')['changed']
            return self._run('ansible.builtin.dnf', {'name': name, 'state': state}, task_vars, 'package')['changed']
        if family != 'Debian':
            raise _Failed({'failed': True, 'msg': 'The tor role installs tor on Debian, Ubuntu and the RedHat family; '
                                                  'this host is %s.' % (family or 'of an unknown family')})
        if boolean(args.get('upstream_repository', False), strict=False):
            release = facts.get('distribution_release') or probe.get('distribution_release')
            self._run('ansible.builtin.get_url', {'url': args['upstream_repository_key_url'],
                                                  'dest': '/etc/apt/keyrings/torproject.asc', 'mode': '0644'},
                      task_vars, 'repository_key')
            self._run('ansible.builtin.apt_repository', {
                'repo': 'deb [signed-by=/etc/apt/keyrings/torproject.asc] %s %s main'
                        % (args['upstream_repository_url'], release),
                'filename': 'torproject', 'state': 'present'}, task_vars, 'repository')
        if version:
            return self._install_version(args, task_vars, name, version, probe)
        if state == 'present' and probe['package_installed']:
            self._steps['package'] = 'ok'
            return False
        # the package index is refreshed only when needed: tor not installed yet, or latest asked for
        return self._run('ansible.builtin.apt', {'name': name, 'state': state, 'update_cache': True,
                                                 'cache_valid_time': 3600}, task_vars, 'package')['changed']

    def _version_installed(self, version, probe):
        """The asked version is the installed one (the package step ok)."""
        if (probe.get('versions') or {}).get('package') == version:
            self._steps['package'] = 'ok'
            return True
        return False

    def _install_version(self, args, task_vars, name, version, probe):
        """One exact version (tor_version) on Debian: the index refreshed, the new torrc read by that version's own
        tor before it is installed (nothing installed when it refuses), then installed (an older one too)."""
        if self._version_installed(version, probe):
            return False
        if self._task.check_mode:
            self._steps['package'] = 'changed'
            self._messages.append('Check mode: the real run installs %s %s after that version\'s tor has read the new '
                                  'torrc (--verify-config).' % (name, version))
            return True
        if not probe.get('package_installed'):   # a first install: no tor runs on a torrc yet
            return self._run('ansible.builtin.apt', {'name': '%s=%s' % (name, version), 'allow_downgrade': True,
                                                     'update_cache': True, 'cache_valid_time': 3600},
                             task_vars, 'package')['changed']
        verify = {'torrc': args['torrc'], 'package_name': name, 'verify_package_version': version,
                  'package_version': version, 'install': False, 'service': False}
        res = self._execute_module(module_name=MODULE, module_args=verify, task_vars=task_vars)
        if res.get('failed') and res.get('not_in_index'):
            # the version is not in the host's package index: refreshed, then asked again
            self._run('ansible.builtin.apt', {'update_cache': True}, task_vars, 'package_index')
            res = self._execute_module(module_name=MODULE, module_args=verify, task_vars=task_vars)
        res.pop('invocation', None)
        if res.get('failed'):
            self._steps['verify_version'] = 'failed'
            raise _Failed(res)
        self._steps.update(res.get('steps') or {})   # verify_version ok, and the pin moved to the version
        return self._run('ansible.builtin.apt', {'name': '%s=%s' % (name, version), 'allow_downgrade': True},
                         task_vars, 'package')['changed']
