# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who wrote HAProxy's configuration file there now: the onion_haproxy role (its marker on the first line), Debian's
package as shipped (its conffile checksum), or someone else (edited: the role must not replace it)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onion_haproxy_config_owner
short_description: Whether HAProxy's configuration file is the onion_haproxy role's, Debian's as packaged, or edited
version_added: 0.2.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Takes the file's content as C(ansible.builtin.slurp) returns it (base64) and returns V(role) when its first line
    holds O(marker), else V(debian) when Debian's package lists the file among its conffiles (O(conffiles), the lines
    of C(dpkg-query -W -f='${Conffiles}\\n' haproxy)) with the file's md5 O(checksum), else V(edited)."
  - The P(onionlab.tor.onion_haproxy#role) role refuses to replace an V(edited) file.
options:
  _input:
    description: The file's content, base64 (C(slurp)'s C(content)).
    type: str
    required: true
  marker:
    description: The role's marker (the first line it writes holds it).
    type: str
    required: true
  path:
    description: The file's path, as Debian's conffiles list names it.
    type: path
    required: true
  checksum:
    description: The file's md5 (C(stat) with C(checksum_algorithm=md5)).
    type: str
  conffiles:
    description: The lines of C(dpkg-query -W -f='${Conffiles}\\n' PACKAGE) (C(PATH MD5) each, maybe C(obsolete)).
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Who wrote it
  ansible.builtin.set_fact:
    owner: "{{ slurped.content | onionlab.tor.onion_haproxy_config_owner(marker='managed by Ansible',
               path='/etc/haproxy/haproxy.cfg', checksum=current.stat.checksum, conffiles=dpkg.stdout_lines) }}"
"""

RETURN = r"""
_value:
  description: V(role), V(debian) or V(edited).
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.onionlab.tor.plugins.plugin_utils import slurp


def onion_haproxy_config_owner(content, marker, path, checksum=None, conffiles=None):
    try:
        text = slurp.text(content)
    except ValueError:
        raise AnsibleFilterError("onion_haproxy_config_owner: the input must be slurp's base64 content")
    if marker in text.split("\n", 1)[0]:
        return "role"
    for line in conffiles or []:
        words = str(line).split()
        if len(words) >= 2 and words[0] == path:
            return "debian" if checksum and words[1] == checksum else "edited"
    return "edited"


class FilterModule(object):
    def filters(self):
        return {"onion_haproxy_config_owner": onion_haproxy_config_owner}
