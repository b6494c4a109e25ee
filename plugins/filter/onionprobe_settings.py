# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onionprobe role's own variables, checked, and what the role decides from them. The work is
plugin_utils/onionprobe_settings.py's; this is its face for the role."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onionprobe_settings
short_description: The onionprobe role's own variables, checked, and how Onionprobe is installed and run
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - Takes a mapping of the P(onionlab.tor.onionprobe#role) role's variables (their full names) and, when each is
    right, returns what the role decides from them (see RV(_value)); otherwise fails with one message naming every
    wrong variable, what it must be and what it was.
  - Checked - C(onionprobe_version) (a version number), the exporter's, tor's ControlPort's and SocksPort's ports
    (1-65535, the exporter's not one of tor's), C(onionprobe_venv) (an absolute path),
    C(onionprobe_exporter_listen_address) (an IPv4 or IPv6 address), C(onionprobe_install_method),
    C(onionprobe_debian_releases), C(onionprobe_venv_packages) and the booleans C(onionprobe_install) and
    C(onionprobe_manage_service).
  - That each value written into the systemd unit stays one word is the filter
    P(onionlab.tor.config_values#filter)'s check; the endpoints are P(onionlab.tor.onionprobe_endpoints#filter)'s;
    the configuration file's object is P(onionlab.tor.onionprobe_config#filter)'s.
options:
  _input:
    description: The role's variables, name to value.
    type: dict
    required: true
  release:
    description: The host's release (C(ansible_facts.distribution_release)); with C(onionprobe_install_method=auto),
      Debian's package is used on the releases of C(onionprobe_debian_releases), else PyPI.
    type: str
    default: ''
"""

EXAMPLES = r"""
- name: How Onionprobe is installed on a trixie host
  ansible.builtin.debug:
    msg: "{{ (onionprobe_role_vars | onionlab.tor.onionprobe_settings(release='trixie')).method }}"
"""

RETURN = r"""
_value:
  description: What the role decides; no secret (not the control password).
  type: dict
  contains:
    install:
      description: V(debian) or V(pip), the way the role installs Onionprobe; null when C(onionprobe_install) is false.
      type: str
    method:
      description: V(debian) or V(pip), the way Onionprobe is (or is expected to be) installed.
      type: str
    binary:
      description: Onionprobe's command (C(/usr/bin/onionprobe), or the virtualenv's C(bin/onionprobe)).
      type: str
    python:
      description: The Python that runs the launcher (the system's, or the virtualenv's).
      type: str
    writes_unit:
      description: Whether the role writes the systemd unit (it manages the service, or Debian's package is used,
        whose own unit would start a tor of its own).
      type: bool
    file_group:
      description: The group of the configuration directory and file (C(onionprobe_group) when the role writes the
        unit), else null.
      type: str
    user_groups:
      description: The supplementary groups of Onionprobe's user (C(onionprobe_tor_group), to read tor's cookie).
      type: list
      elements: str
    venv_packages:
      description: The Debian packages a virtualenv needs, when the role installs from PyPI; else empty.
      type: list
      elements: str
    has_password:
      description: Whether C(onionprobe_control_password) is set (the configuration file's task is then C(no_log)).
      type: bool
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.plugin_utils import onionprobe_settings as _settings


def onionprobe_settings(variables, release=''):
    if not isinstance(variables, dict):
        raise AnsibleFilterError('onionprobe_settings: the input must be a mapping of the role\'s variables, got %s'
                                 % type(variables).__name__)
    try:
        return _settings.settings(variables, release)
    except _settings.SettingsError as e:
        raise AnsibleFilterError(str(e))


class FilterModule(object):
    def filters(self):
        return {'onionprobe_settings': onionprobe_settings}
