#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: tor_setup
short_description: Install tor, write its torrc after tor has checked it, keep the service running (the tor role's work)
version_added: 0.2.0
description:
  - The one task of the P(onionlab.tor.tor#role) role. On a host where everything is as asked, it costs one
    module run on the host, which finds the package installed, the torrc unchanged and the service as asked.
  - Otherwise, in order, installs the package (C(ansible.builtin.apt) or C(ansible.builtin.dnf), with EPEL on RHEL
    and its rebuilds; the Tor Project's Debian repository with O(upstream_repository)), then checks the new torrc
    and writes it, then starts and enables the service (C(ansible.builtin.service)), and restarts tor after a new
    package or reloads it (SIGHUP) after a new torrc.
  - Before a torrc is written, tor reads it (C(tor --verify-config)); its own error lines are the message when it
    refuses. A current torrc is compared with the new one as tor reads both (C(tor --dump-config)); what a torrc that
    the role did not write would lose (an onion service above all) refuses the run unless O(torrc_takeover). When
    check mode finds tor not installed yet, both are compared line by line as written.
  - HiddenServiceSingleHopMode / HiddenServiceNonAnonymousMode in O(options) or O(config_lines) are refused unless
    O(non_anonymous_onion_services), both set to 1, and O(socks_port=0); the lines are read as tor reads them (any
    case, an abbreviated name, a quoted or commented value).
  - An O(options) value or a O(config_lines) item that is not one line (a newline, a carriage return, a NUL, a
    backslash at its end), an O(options) value with a C(#) outside a whole quoted value (tor reads the rest as a
    comment), an O(options) name that is not an option name, and a O(torrc_values) value that would not stay one
    value are refused, naming them.
  - The values of secret options (proxy passwords, C(HashedControlPassword)) are never shown, in messages and diffs
    alike.
  - This is an action plugin; the module of the same name runs on the host once (the check, and the torrc) and the
    builtin modules named above only when something differs.
author:
  - onionlab.tor contributors (@onionlab)
options:
  torrc:
    description: The new torrc's text (the role renders its C(templates/torrc.j2)).
    type: str
    required: true
  config_file:
    description: The torrc to write (kept as a backup next to it when replaced).
    type: path
    default: /etc/tor/torrc
  config_dir:
    description: The directory that O(torrc) includes; made (C(0755)) when missing.
    type: path
    default: /etc/tor/torrc.d
  os_defaults_torrc:
    description:
      - The defaults torrc that the service's tor reads first; the platform's when not set
        (Debian C(/usr/share/tor/tor-service-defaults-torrc), RedHat C(/usr/share/tor/defaults-torrc)).
    type: path
  torrc_takeover:
    description: Replace a torrc that the role did not write even when it holds settings the new one drops.
    type: bool
    default: false
  options:
    description: The role's C(tor_options), for the non-anonymous check only (O(torrc) holds them).
    type: dict
    default: {}
  config_lines:
    description: The role's C(tor_config_lines), for the non-anonymous check only (O(torrc) holds them).
    type: list
    elements: str
    default: []
  socks_port:
    description: The role's C(tor_socks_port), for the non-anonymous check only.
    type: str
  torrc_values:
    description:
      - The role's variables that O(torrc) writes as values (C(tor_control_port), C(tor_control_socket),
        C(tor_socks_port), C(tor_config_dir), C(tor_metrics_port), C(tor_metrics_port_policy),
        C(tor_cookie_authentication)), name to value, for the check only (O(torrc) holds them).
      - C(tor_cookie_authentication) must be a boolean (V(true), V(false), or the strings C(yes), C(no), C(on), C(off),
        C(1), C(0), C(true), C(false) in any case, as Ansible's C(bool) filter reads them); another value is refused.
      - Each must stay one value on its line as tor reads it; a path or port one word. One that holds a newline,
        a carriage return, a NUL or another control character, ends with a backslash, or holds a C(#) (where tor's
        comment begins) or, in a word, a blank or a quote, is refused, naming the variable, before anything is
        changed.
    type: dict
    default: {}
  non_anonymous_onion_services:
    description: The role's C(tor_non_anonymous_onion_services).
    type: bool
    default: false
  install:
    description: Install the package (V(false) to check and write the torrc only).
    type: bool
    default: true
  package_name:
    description: The package to install.
    type: str
    default: tor
  package_state:
    description: V(present) or V(latest); O(package_version) wins when set.
    type: str
    choices: [present, latest]
    default: present
  package_version:
    description:
      - An exact version of the package (V(0.4.9.11-1~deb12u1), as C(apt-cache policy tor) shows it), installed (an
        older one too) and, on Debian and Ubuntu, pinned by the apt preferences file
        C(/etc/apt/preferences.d/onionlab-tor) (priority 1001), so that neither C(apt-get upgrade) nor
        unattended-upgrades moves it. Without it, that file is removed when present.
      - Before another version is installed, its own tor binary (the package downloaded with C(apt-get download) and
        unpacked in a scratch directory) reads the new torrc (C(--verify-config)); when it refuses, nothing is
        installed and its lines are the message.
      - On the RedHat family the version is installed with dnf, not pinned (the run says so).
    type: str
  verify_package_version:
    description:
      - Set by the action plugin, not by a task. Only check O(torrc) with the tor of this package version, not
        installed yet (see O(package_version)).
    type: str
  upstream_repository:
    description: Use the Tor Project's Debian/Ubuntu repository.
    type: bool
    default: false
  upstream_repository_url:
    description: The Tor Project's repository.
    type: str
    default: https://deb.torproject.org/torproject.org
  upstream_repository_key_url:
    description: Where its signing key is fetched from.
    type: str
    default: https://deb.torproject.org/torproject.org/A3C4F0F979CAA22CDBA8F512EE8CBC9E886DDD89.asc
  service:
    description: Manage the service (V(false) to leave it alone, and to neither reload nor restart tor).
    type: bool
    default: true
  service_name:
    description: The service to start and enable.
    type: str
    default: tor
  service_state:
    description: V(started) or V(stopped).
    type: str
    choices: [started, stopped]
    default: started
  service_enabled:
    description: Start tor at boot.
    type: bool
    default: true
  watchdog_sec:
    description:
      - systemd's C(WatchdogSec) for the unit whose main process is tor (Debian's C(tor@default.service) for
        O(service_name=tor), else O(service_name)), in seconds, as a drop-in
        C(/etc/systemd/system/UNIT.d/onionlab-watchdog.conf); V(0) removes the drop-in; when not set, it is left alone.
      - tor (built with libsystemd) sends C(WATCHDOG=1) every C(WatchdogSec/2) from its main loop; when it stops (a
        hung or stopped process) systemd aborts it and the unit's C(Restart=on-failure) starts it again.
      - A changed drop-in is followed by C(systemctl daemon-reload). tor learns the value only when it starts, and
        systemd keeps a running service's watchdog across daemon-reload, so a new value takes effect when tor next
        starts, and the run never restarts tor for it (it says that the running tor keeps its watchdog, or has none,
        until it next starts).
    type: int
  tor_missing:
    description:
      - Set by the action plugin, not by a task. Check mode found the package not installed yet; the torrcs are then
        compared as written.
    type: bool
    default: false
  configure:
    description:
      - Set by the action plugin, not by a task. Check and write the torrc in this run only when the package needs
        nothing (V(auto)), or in any case (V(always)).
    type: str
    choices: [auto, always]
    default: auto
attributes:
  check_mode:
    support: full
    details: Nothing is changed; tor still checks the new torrc (in a private scratch directory).
  diff_mode:
    support: full
    details: The torrc's diff, secret values hidden, and the watchdog drop-in's.
  platform:
    description: Target OS/families that can be operated against.
    support: full
    platforms: [debian, redhat]
extends_documentation_fragment:
  - onionlab.tor.attributes
  - onionlab.tor.attributes.ACTION
notes:
  - The role's facts C(tor_torrc_dropped), C(tor_torrc_changed) and C(tor_torrc_backup) are set by this action, and
    C(tor_versions) (see RV(versions)).
"""

EXAMPLES = r"""
- name: Tor with a ControlPort, its torrc checked by tor before it is written
  onionlab.tor.tor_setup:
    torrc: "{{ lookup('ansible.builtin.template', 'torrc.j2') }}"
  become: true
"""

RETURN = r"""
steps:
  description: What each step did (V(ok), V(changed), V(skipped)), keyed by step (C(package), C(torrc), C(service), ...).
  returned: always
  type: dict
  sample: {package: ok, torrc: ok, service: ok}
tor_not_installed_yet:
  description: Check mode found the package not installed yet (then there is no tor to read a torrc, nor a service).
  returned: always
  type: bool
dropped:
  description: What the new torrc drops from the current one (one item per option line or onion service; secrets hidden).
  returned: success
  type: list
  elements: str
backup_file:
  description: The backup of the torrc this run replaced.
  returned: when the torrc was replaced
  type: str
messages:
  description: What the run says (what the new torrc drops, where the old one is kept, what check mode would do).
  returned: always
  type: list
  elements: str
versions:
  description:
    - "tor's versions on the host after the run (also the fact C(tor_versions)) - C(package), the installed package's
      version; C(binary), what the installed C(tor --version) says; C(running), the running tor's own (its
      C(/proc/PID/exe --version)) with its C(pid) and C(replaced), true when its binary was replaced on disk since it
      started (upgraded, not restarted; the run says so); C(pinned), the version the apt pin holds, or null."
  returned: success, when the package is managed
  type: dict
  sample: {package: 0.4.9.11-1~deb12u1, binary: 0.4.9.11, running: {pid: 812, version: 0.4.9.11, replaced: false},
           pinned: 0.4.9.11-1~deb12u1}
"""

import base64
import errno
import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native, to_text

from ansible_collections.onionlab.tor.plugins.module_utils._host import command_runner
from ansible_collections.onionlab.tor.plugins.module_utils._tor import systemd_watchdog
from ansible_collections.onionlab.tor.plugins.module_utils._tor import tor_version
from ansible_collections.onionlab.tor.plugins.module_utils._tor import torrc as guard

DEFAULTS_TORRC = {'Debian': '/usr/share/tor/tor-service-defaults-torrc', 'RedHat': '/usr/share/tor/defaults-torrc'}
_FAMILIES = (('debian', 'Debian'), ('ubuntu', 'Debian'), ('rhel', 'RedHat'), ('fedora', 'RedHat'),
             ('centos', 'RedHat'))


def os_release():
    """family, ID and VERSION_CODENAME from /etc/os-release."""
    fields = {}
    for path in ('/etc/os-release', '/usr/lib/os-release'):
        try:
            with open(path) as f:
                for line in f:
                    key, sep, value = line.strip().partition('=')
                    if sep:
                        fields[key] = value.strip().strip('"\'')
            break
        except (IOError, OSError):
            continue
    ids = [fields.get('ID', '')] + fields.get('ID_LIKE', '').split()
    family = next((fam for name in ids for known, fam in _FAMILIES if name == known), None)
    return {'os_family': family, 'distribution': fields.get('ID', ''),
            'distribution_release': fields.get('VERSION_CODENAME', '')}


def package_installed(module, family, name):
    if family == 'RedHat':
        rpm = module.get_bin_path('rpm')
        return bool(rpm) and module.run_command([rpm, '-q', name])[0] == 0
    dpkg = module.get_bin_path('dpkg-query')
    if not dpkg:
        return False
    rc, out, dummy = module.run_command([dpkg, '-W', '-f=${Status}', name])
    return rc == 0 and out.split()[-1:] == ['installed']


def service_state(module, name):
    """(active, enabled) as systemd says, None where it cannot say."""
    systemctl = module.get_bin_path('systemctl')
    if not systemctl:
        return None, None
    rc, out, dummy = module.run_command([systemctl, 'is-active', name])
    active = {'active': True, 'inactive': False, 'failed': False}.get(out.strip())
    rc, out, dummy = module.run_command([systemctl, 'is-enabled', name])
    enabled = {'enabled': True, 'disabled': False}.get(out.strip())
    return active, enabled


def read_current(module, path):
    try:
        with open(path, 'rb') as f:
            return f.read()
    except (IOError, OSError) as e:
        if e.errno == errno.ENOENT:
            return None
        denied = e.errno in (errno.EACCES, errno.EPERM)
        module.fail_json(msg='Cannot read %s: %s%s' % (
            path, 'permission denied' if denied else to_native(e.strerror or e),
            ' (the tor role needs root: use become: true)' if denied else ''))


def write_file(module, path, text):
    """text to path, its directory made (0755) when missing, through a temporary file beside it (atomic)."""
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path), 0o755)
    fd, tmp = tempfile.mkstemp(prefix='.onionlab.', dir=os.path.dirname(path))
    with os.fdopen(fd, 'wb') as f:
        f.write(to_bytes(text))
    module.atomic_move(tmp, path)


def root_attributes(module, path, mode, changed):
    changed = module.set_owner_if_different(path, 'root', changed)
    changed = module.set_group_if_different(path, 'root', changed)
    return module.set_mode_if_different(path, mode, changed)


class Torrc(object):
    """The new torrc checked by tor and compared with the current one, then written."""

    def __init__(self, module, defaults_torrc, tor_missing):
        self.module = module
        self.p = module.params
        self.defaults = defaults_torrc
        self.tor_missing = tor_missing
        self.tor = None

    def run_tor(self, *args):
        return self.module.run_command([self.tor, '--hush', '--defaults-torrc', self.defaults] + list(args))

    def check(self, current, scratch):
        """Fails when tor refuses the new torrc or when a foreign torrc would lose settings;
        returns (dropped items, message or None)."""
        p, new = self.p, self.p['torrc']
        new_torrc = os.path.join(scratch, 'torrc')
        if not self.tor_missing:
            self.tor = self.module.get_bin_path('tor')
            if not self.tor:
                self.module.fail_json(msg='Could not run tor to check the new torrc (is tor installed? run the whole '
                                          'role, which installs it): No such file or directory: tor')
            text = new
            if not os.path.isdir(p['config_dir']):
                os.mkdir(os.path.join(scratch, 'torrc.d'), 0o700)
                text = text.replace('%%include %s/' % p['config_dir'], '%%include %s/torrc.d/' % scratch)
            with open(new_torrc, 'wb') as f:
                f.write(to_bytes(text))
            rc, out, err = self.module.run_command([self.tor, '--verify-config', '--hush', '--defaults-torrc',
                                                    self.defaults, '-f', new_torrc])
            if rc != 0:
                self.module.fail_json(msg=guard.verify_refusal(rc, out, err))
        if current is None:
            return [], None
        current = to_text(current, errors='surrogate_or_replace')
        unread = []
        if self.tor_missing:
            current_lines, new_lines = guard.lines_as_written(current), guard.lines_as_written(new)
        else:
            rc, out, err = self.run_tor('--dump-config', 'short', '-f', p['config_file'])
            current_lines = guard.dump_lines(out) if rc == 0 else guard.lines_as_written(current)
            unread = [] if rc == 0 else guard.tor_problems(out, err)
            rc, out, err = self.run_tor('--dump-config', 'short', '-f', new_torrc)
            new_lines = guard.dump_lines(out) if rc == 0 else guard.lines_as_written(new)
        items = guard.dropped(current_lines, new_lines)
        if not items:
            return [], None
        hostnames = {}
        for d in guard.service_dirs(items):
            try:
                with open(os.path.join(d, 'hostname')) as f:
                    hostnames[d] = f.read().strip()
            except (IOError, OSError):
                pass
        words = guard.dropped_words(items, hostnames)
        ours = guard.written_by_role(current)
        if not ours and not p['torrc_takeover']:
            self.module.fail_json(msg=guard.refusal(p['config_file'], p['config_dir'], items, words, unread,
                                                    self.tor_missing))
        return items, guard.replaced_message(p['config_file'], items, words, ours)

    def apply(self, result):
        module, p = self.module, self.p
        path, new = p['config_file'], to_bytes(p['torrc'])
        current = read_current(module, path)
        if current != new:
            scratch = tempfile.mkdtemp(suffix='.onionlab-torrc')
            try:
                result['dropped'], said = self.check(current, scratch)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            if said:
                result['messages'].append(said)
        changed = False
        if not os.path.isdir(p['config_dir']):
            changed = True
            if not module.check_mode:
                os.makedirs(p['config_dir'], 0o755)
        if os.path.isdir(p['config_dir']):
            changed = root_attributes(module, p['config_dir'], '0755', changed)
        result['steps']['config_dir'] = 'changed' if changed else 'ok'
        torrc_changed = current != new
        if torrc_changed and not module.check_mode:
            if current is not None:
                result['backup_file'] = module.backup_local(path)
            fd, tmp = tempfile.mkstemp(prefix='.torrc.', dir=os.path.dirname(path) or '.')
            with os.fdopen(fd, 'wb') as f:
                f.write(new)
            module.atomic_move(tmp, path)
        if os.path.exists(path):
            torrc_changed = root_attributes(module, path, '0644', torrc_changed)
        result['steps']['torrc'] = 'changed' if torrc_changed else 'ok'
        if current != new and module._diff:
            # the diff's before: secret values hidden here, so that they never leave the host (the ssh connection
            # prints a module's whole result at -vvv); base64, so that no_log's masking of the new torrc's text
            # cannot garble it
            hidden = guard.hide_secrets(to_text(current or b'', errors='surrogate_or_strict'))
            result['before_hidden_b64'] = to_text(base64.b64encode(to_bytes(hidden, errors='surrogate_or_strict')))
        result['changed'] = result['changed'] or changed or torrc_changed


def watchdog(module, result, family):
    """The drop-in with WatchdogSec for tor's unit (systemd_watchdog decides), daemon-reload when it changed."""
    p = module.params
    unit = systemd_watchdog.unit(family, p['service_name'])
    path = systemd_watchdog.dropin_path(unit)
    if not os.path.isdir('/run/systemd/system'):
        # not booted with systemd (a container without it): no unit to give a watchdog
        result['steps']['watchdog'] = 'skipped'
        result['messages'].append('systemd is not running on this host: tor_watchdog_sec is not applied.')
        return
    try:
        want = systemd_watchdog.dropin_text(p['watchdog_sec'])
    except ValueError as e:
        module.fail_json(msg=to_native(e))
    current = read_current(module, path)
    changed = current != (None if want is None else to_bytes(want))
    result['watchdog_unit'] = unit
    if changed and module._diff:
        result['watchdog_diff'] = {'before_header': path, 'after_header': path,
                                   'before': to_text(current or b'', errors='surrogate_or_replace'),
                                   'after': want or ''}
    systemctl = module.get_bin_path('systemctl')
    if systemctl:
        # what the running tor pings for: WATCHDOG_USEC of its environment as started (systemd keeps the same)
        rc, out, dummy = module.run_command([systemctl, 'show', '-p', 'MainPID', '--value', unit])
        pid = int(out.strip()) if rc == 0 and out.strip().isdigit() else 0
        environ = b''
        if pid:
            try:
                with open('/proc/%d/environ' % pid, 'rb') as f:
                    environ = f.read()
            except (IOError, OSError):
                pass
        running = systemd_watchdog.running_watchdog_usec(environ)
        # said in the run that writes the drop-in (check mode too), not again in every run after it
        said = systemd_watchdog.pending_message(unit, running, p['watchdog_sec']) if pid and changed else None
        if said:
            result['messages'].append(said)
    if changed and not module.check_mode:
        if want is None:
            os.unlink(path)
            try:
                os.rmdir(os.path.dirname(path))
            except OSError:
                pass
        else:
            write_file(module, path, want)
        if systemctl:
            rc, out, err = module.run_command([systemctl, 'daemon-reload'])
            if rc != 0:
                module.fail_json(msg='systemctl daemon-reload failed after writing %s: %s' % (path, err or out))
    if want is not None and os.path.exists(path):
        changed = root_attributes(module, path, '0644', changed)
    result['steps']['watchdog'] = 'changed' if changed else 'ok'
    result['changed'] = result['changed'] or changed


def versions(module, result, family):
    """tor's versions (the result's versions) and, on Debian, the apt pin of package_version (written, or removed
    when no exact version is asked for)."""
    p, run = module.params, command_runner(module)
    installed = tor_version.installed_version(run, family, p['package_name'])
    pin = None
    if family == 'Debian':
        pin = pin_file(module, result, installed)
    elif p['package_version']:
        result['messages'].append('tor %s is installed with dnf and not pinned (no apt here): a dnf upgrade can move '
                                  'it' % p['package_version'])
    binary = module.get_bin_path('tor')
    now = tor_version.running(run, systemd_watchdog.unit(family, p['service_name'])) if p['service'] else None
    result['versions'] = {
        'package': installed,
        'binary': tor_version.binary_version(run, binary) if binary else None,
        'running': now, 'pinned': pin}
    # said by the action unless its run restarts tor anyway
    result['stale_message'] = tor_version.stale_message(result['versions']['binary'], now, installed)


def pin_file(module, result, installed):
    """The apt pin of package_version (PIN_FILE), written once that version is installed (a version not installed
    yet is pinned by the run after the install: a refused version is never pinned), or removed without
    package_version; the version it holds after the run."""
    p, path = module.params, tor_version.PIN_FILE
    if p['package_version'] and installed != p['package_version']:
        result['steps']['pin'] = 'pending'
        current = read_current(module, path)
        held = [line.split()[-1] for line in to_text(current or b'').splitlines() if line.startswith('Pin: version ')]
        return held[0] if held else None
    want = tor_version.pin_text(p['package_name'], p['package_version']) if p['package_version'] else None
    current = read_current(module, path)
    changed = current != (None if want is None else to_bytes(want))
    if changed and not module.check_mode:
        if want is None:
            os.unlink(path)
        else:
            write_file(module, path, want)
            root_attributes(module, path, '0644', True)
    result['steps']['pin'] = 'changed' if changed else 'ok'
    result['changed'] = result['changed'] or changed
    return p['package_version']


def verify_package(module, result):
    """The new torrc read by the tor of verify_package_version before that version is installed; fails with what
    that tor said."""
    p = module.params
    scratch = tempfile.mkdtemp(suffix='.onionlab-tor-version')
    try:
        os.chmod(scratch, 0o755)   # apt-get download as root hands the download to the _apt user in its cwd
        torrc = os.path.join(scratch, 'torrc')
        with open(torrc, 'wb') as f:
            f.write(to_bytes(p['torrc']))
        said, missing = tor_version.verify_with_package(command_runner(module), p['verify_package_version'], torrc, scratch,
                                                        p['package_name'])
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if said:
        module.fail_json(msg=said, steps={'verify_version': 'failed'}, not_in_index=missing)
    result['steps']['verify_version'] = 'ok'
    # accepted: the pin moves to it before apt installs it (apt's own pin for the asked version and ours for the
    # installed one would be two at priority 1001: apt then finds no candidate for the asked one)
    if result['os_family'] == 'Debian' and p['package_version'] == p['verify_package_version']:
        pin_file(module, result, p['package_version'])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            torrc=dict(type='str', required=True, no_log=True),
            config_file=dict(type='path', default=guard.DEFAULT_CONFIG_FILE),
            config_dir=dict(type='path', default=guard.DEFAULT_CONFIG_DIR),
            os_defaults_torrc=dict(type='path'),
            torrc_takeover=dict(type='bool', default=False),
            options=dict(type='dict', default={}),
            config_lines=dict(type='list', elements='str', default=[]),
            socks_port=dict(type='str'),
            torrc_values=dict(type='dict', default={}),
            non_anonymous_onion_services=dict(type='bool', default=False),
            install=dict(type='bool', default=True),
            package_name=dict(type='str', default='tor'),
            package_state=dict(type='str', choices=['present', 'latest'], default='present'),
            package_version=dict(type='str'),
            verify_package_version=dict(type='str'),
            upstream_repository=dict(type='bool', default=False),
            upstream_repository_url=dict(type='str', default='https://deb.torproject.org/torproject.org'),
            upstream_repository_key_url=dict(
                type='str', no_log=False,
                default='https://deb.torproject.org/torproject.org/A3C4F0F979CAA22CDBA8F512EE8CBC9E886DDD89.asc'),
            service=dict(type='bool', default=True),
            service_name=dict(type='str', default='tor'),
            service_state=dict(type='str', choices=['started', 'stopped'], default='started'),
            service_enabled=dict(type='bool', default=True),
            tor_missing=dict(type='bool', default=False),
            configure=dict(type='str', choices=['auto', 'always'], default='auto'),
            watchdog_sec=dict(type='int'),
        ),
        supports_check_mode=True,
    )
    p = module.params
    result = dict(changed=False, steps={}, messages=[], dropped=[], tor_not_installed_yet=p['tor_missing'])
    result.update(os_release())
    family = result['os_family']
    for name in ('package_version', 'verify_package_version'):
        said = tor_version.problem(p[name]) if p[name] is not None else None
        if said or p[name] in tor_version.KEYWORDS:
            module.fail_json(msg=said or 'tor_version: %s is not an exact version here' % p[name])
    if p['verify_package_version']:
        verify_package(module, result)
        module.exit_json(**result)
    if p['install']:
        result['package_installed'] = package_installed(module, family, p['package_name'])
        versions(module, result, family)
    if p['service']:
        result['service_active'], result['service_enabled'] = service_state(module, p['service_name'])
    ready = p['configure'] == 'always' or not p['install'] or (
        result['package_installed'] and p['package_state'] == 'present' and not p['package_version']) or (
        p['package_version'] and result['versions']['package'] == p['package_version'])
    result['configured'] = bool(ready)
    if ready:
        Torrc(module, p['os_defaults_torrc'] or DEFAULTS_TORRC.get(family, DEFAULTS_TORRC['Debian']),
              p['tor_missing']).apply(result)
        if p['watchdog_sec'] is not None and not p['tor_missing']:
            watchdog(module, result, family)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
