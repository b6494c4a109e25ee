# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_location role's plan: each clearnet site's nginx snippet (its Onion-Location header, or none), from
the onion_service role's summary file and the snippets the role wrote before."""

from __future__ import annotations

DOCUMENTATION = r"""
name: onion_location_snippets
short_description: The nginx snippets of the onion_location role, from the onion_service role's summary file
version_added: 0.1.0
author:
  - onionlab.tor contributors (@onionlab)
description:
  - "Takes O(onionlab.tor.onion_location#role:main:onion_location_sites) and returns the snippet files the role
    writes: C(path), C(content), C(header) (the Onion-Location value, or V(null) when the snippet sends none),
    C(service), C(onion_host), C(note) (why there is no header), and the warnings to show."
  - "The address is the summary entry's C(onion_address) (its current key generation: after a service key rotation
    the new address), or its C(onionbalance_frontend) when the service is an Onionbalance backend; the scheme is the
    one of the entry's C(onion_location) (V(http) for a service with port 80, else V(https) for port 443). The value
    must be C(http[s]://<56 base32 characters>.onion): nothing else from the summary file reaches nginx."
  - "A site whose service the summary no longer lists, but whose snippet this role wrote for that service, gets a
    snippet without the header (the service was removed); so does a site with C(state=absent), and, with
    O(prune=true), every snippet of the role that no site names any more. The file itself stays: the operator's
    C(include) keeps working."
  - "Fails with one message on a bad entry: an unknown key, a service name that is not one of the onion_service
    role, a snippet that is not a file name ending in C(.conf), a snippet directory that is not an absolute,
    normalized path, two sites with one snippet, a snippet file this role did not write, a service that the summary
    does not list (or lists for several hosts while C(onion_host) is not given), a service without an address or
    without port 80 or 443."
options:
  _input:
    description: The role's O(onionlab.tor.onion_location#role:main:onion_location_sites).
    type: list
    elements: dict
    required: true
  summary:
    description: The entries of the summary file (a list of dicts), or V(null) when there is no summary file.
    type: list
    elements: dict
  host:
    description: This host's inventory name, the default C(onion_host) when the summary lists the service for it.
    type: str
    required: true
  snippet_dir:
    description: O(onionlab.tor.onion_location#role:main:onion_location_snippet_dir).
    type: str
    required: true
  summary_file:
    description:
      - The summary file on the controller, read when O(summary) is not given (a file that does not exist is
        V(null), no summary file).
    type: path
  existing:
    description:
      - Path to content of every snippet in O(snippet_dir) that this role wrote (its first line), or the results of
        C(ansible.builtin.slurp) over those files (C(source) and base64 C(content) each).
    type: raw
  present:
    description: Every C(.conf) file in O(snippet_dir) (paths, or the C(files) of C(ansible.builtin.find)).
    type: list
    elements: raw
  nginx_installed:
    description: Whether nginx is there; when not (check mode on a new host), the report says nothing would be written.
    type: bool
    default: true
  prune:
    description: Take the header out of the role's snippets that no site names.
    type: bool
    default: true
  check_mode:
    description: In check mode a summary file that does not exist yet (the onion_service role writes none in check
      mode) is not an error; sites without an entry are left out, with a warning.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: The snippets
  ansible.builtin.set_fact:
    plan: "{{ onion_location_sites | onionlab.tor.onion_location_snippets(summary=entries, host=inventory_hostname,
              snippet_dir='/etc/nginx/snippets', existing={}, present=[]) }}"
"""

RETURN = r"""
_value:
  description: C(snippets) (a list of dicts, as above), C(warnings) (a list of strings), C(report) (one line per
    snippet, then the warnings) and C(before) (path to content of the role's snippets as they were).
  type: dict
"""

import os
import posixpath
import re

try:
    from ansible.errors import AnsibleFilterError
except ImportError:  # pragma: no cover (plain Python in unit tests)
    class AnsibleFilterError(Exception):
        pass

from ansible.module_utils.common.yaml import yaml_load

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.plugin_utils.onion_services import NAME_RE   # a service's name
from ansible_collections.onionlab.tor.plugins.plugin_utils import slurp

MARKER = "# onionlab.tor.onion_location:"
MARKER_RE = re.compile(r"^# onionlab\.tor\.onion_location: service=(\S+) host=(\S+)")
# \Z, not $: $ also matches before a newline at the end, which would reach the snippet
HOST_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,252}\Z")
SNIPPET_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,200}\.conf\Z")
SCHEME_RE = re.compile(r"^https?://")
KEYS = ("service", "onion_host", "snippet", "state")


def _fail(msg):
    raise AnsibleFilterError("onion_location: " + msg)


def _content(service, host, header, note):
    lines = ["%s service=%s host=%s" % (MARKER, service, host),
             "# Written by the onionlab.tor.onion_location role (edits are lost); your server block includes it."]
    if header:
        lines.append("add_header Onion-Location %s$request_uri always;" % header)
    else:
        lines.append("# no Onion-Location: %s" % note)
    return "\n".join(lines) + "\n"


def _check_site(index, site):
    where = "onion_location_sites[%d]" % index
    if not isinstance(site, dict):
        _fail("%s is not a dict" % where)
    unknown = sorted(set(site) - set(KEYS))
    if unknown:
        _fail("%s: unknown key %s (known: %s)" % (where, unknown[0], ", ".join(KEYS)))
    service = site.get("service")
    if not isinstance(service, str) or not NAME_RE.match(service):
        _fail("%s: service must be the name of an onion_services entry (1-128 letters, digits, '_', '-' or '.', "
              "not starting with '.' or '-'), not %r" % (where, service))
    host = site.get("onion_host")
    if host not in (None, "") and (not isinstance(host, str) or not HOST_RE.match(host)):
        _fail("%s (%s): onion_host must be an inventory host name, not %r" % (where, service, host))
    snippet = site.get("snippet") or "onion-location-%s.conf" % service
    if not isinstance(snippet, str) or not SNIPPET_RE.match(snippet):
        _fail("%s (%s): snippet must be a file name ending in .conf, without a directory (it is written in "
              "onion_location_snippet_dir), not %r" % (where, service, snippet))
    state = site.get("state") or "present"
    if state not in ("present", "absent"):
        _fail("%s (%s): state must be present or absent, not %r" % (where, service, state))
    return service, host or None, snippet, state


def _entry(service, host, default_host, summary):
    """The summary entry of the service (of onion_host, else of this host, else the only one)."""
    found = [e for e in summary if e.get("service") == service and (host is None or e.get("host") == host)]
    if host is None and len(found) > 1:
        mine = [e for e in found if e.get("host") == default_host]
        if not mine:
            _fail("service %r is served by several hosts (%s): name one with onion_host"
                  % (service, ", ".join(sorted(str(e.get("host")) for e in found))))
        found = mine
    return found[0] if found else None


def _header(service, entry):
    address = entry.get("onionbalance_frontend") or entry.get("onion_address")
    location = entry.get("onion_location")
    if not address:
        _fail("service %r of %s has no onion address in the summary file yet" % (service, entry.get("host")))
    if not location:
        _fail("service %r of %s has no port 80 or 443: Tor Browser follows Onion-Location to a web port only"
              % (service, entry.get("host")))
    value = "%s://%s" % (str(location).split("://", 1)[0], address)
    if not SCHEME_RE.match(value) or not onion.is_address(value.split("://", 1)[1]):
        _fail("service %r of %s: the summary file's address %r is not a v3 onion address"
              % (service, entry.get("host"), str(address)[:80]))
    return value


def _read_summary(path):
    """The summary file's entries, None when there is no such file."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path) as handle:
            return yaml_load(handle)
    except Exception as exc:  # noqa: BLE001 - OSError, or PyYAML's YAMLError (PyYAML comes with ansible-core)
        _fail("the summary file %s cannot be read: %s" % (path, (str(exc).splitlines() or [""])[0][:200]))


def _existing(existing):
    """{path: text} of the role's snippets, from a dict as is or from slurp's results."""
    if isinstance(existing, dict) or not existing:
        return dict(existing or {})
    out = {}
    for item in existing:
        if not isinstance(item, dict) or "source" not in item or "content" not in item:
            _fail("existing must be path to content, or the results of slurp over the role's snippets")
        try:
            out[item["source"]] = slurp.text(item["content"])
        except ValueError:
            _fail("the slurped snippet %s is not base64" % item["source"])
    return out


def snippets(sites, summary=None, host=None, snippet_dir=None, existing=None, present=None, prune=True,
             check_mode=False, summary_file=None, nginx_installed=True):
    if sites is None:
        sites = []
    if not isinstance(sites, (list, tuple)):
        _fail("onion_location_sites must be a list, not %s" % type(sites).__name__)
    if (not isinstance(snippet_dir, str) or not snippet_dir.startswith("/")
            or posixpath.normpath(snippet_dir) != snippet_dir or "/../" in snippet_dir + "/"):
        _fail("onion_location_snippet_dir must be an absolute, normalized path such as /etc/nginx/snippets, not %r"
              % (snippet_dir,))
    if summary is None and summary_file is not None:
        summary = _read_summary(str(summary_file))
    missing = summary is None
    if not missing and not isinstance(summary, list):
        _fail("the summary file is not a list of the onion_service role's entries (onion_location_summary_file)")
    summary = [e for e in (summary or []) if isinstance(e, dict)]
    existing = _existing(existing)
    present = set(p.get("path") if isinstance(p, dict) else p for p in present or []) | set(existing)
    owners = {}
    for path, text in existing.items():
        match = MARKER_RE.match(text or "")
        if match:
            owners[path] = (match.group(1), match.group(2))

    out, warnings, used = [], [], {}
    for index, site in enumerate(sites):
        service, onion_host, snippet, state = _check_site(index, site)
        path = posixpath.join(snippet_dir, snippet)
        if path in used:
            _fail("onion_location_sites: %s and %s both write %s" % (used[path], service, path))
        used[path] = service
        if path in present and path not in owners:
            _fail("%s (service %s) exists and was not written by this role: the role never rewrites the operator's "
                  "files; give the site another snippet name" % (path, service))
        if state == "absent":
            if path in owners:
                old = owners[path]
                out.append(dict(path=path, service=old[0], onion_host=old[1], header=None, note="site entry absent",
                                content=_content(old[0], old[1], None, "the site entry is absent")))
            continue
        entry = _entry(service, onion_host, host, summary)
        if entry is None:
            if path in owners and owners[path][0] == service:
                old = owners[path]
                note = "service %s is not in the summary file (removed)" % service
                out.append(dict(path=path, service=service, onion_host=old[1], header=None, note=note,
                                content=_content(service, old[1], None, note)))
                continue
            if missing and check_mode:
                warnings.append("%s: no summary file yet (check mode: the onion_service role writes none); %s is "
                                "left as it is" % (service, path))
                continue
            if missing:
                _fail("no summary file: run the onion_service role first (onion_location_summary_file)")
            known = sorted(set("%s (%s)" % (e.get("service"), e.get("host")) for e in summary))
            _fail("unknown service %r%s: the summary file lists %s" % (
                service, " of %s" % onion_host if onion_host else "", ", ".join(known) or "no services"))
        if entry.get("refreshed") is False:
            warnings.append("%s: the summary entry of %s was not refreshed by the last run (as of %s); its last "
                            "known address is used" % (service, entry.get("host"), entry.get("refreshed_at")))
        value = _header(service, entry)
        out.append(dict(path=path, service=service, onion_host=str(entry.get("host")), header=value, note=None,
                        content=_content(service, entry.get("host"), value, None)))
    if prune:
        for path in sorted(owners):
            if path not in used:
                old = owners[path]
                out.append(dict(path=path, service=old[0], onion_host=old[1], header=None, note="no site entry",
                                content=_content(old[0], old[1], None, "no site entry names this snippet")))
    report = ["%s: %s" % (s["path"], "Onion-Location " + s["header"] if s["header"] else "no header (%s)" % s["note"])
              for s in out]
    report += warnings
    if not nginx_installed:
        report.append("nginx is not installed yet (check mode): nothing would be written before it is")
    return dict(snippets=out, warnings=warnings, report=report, before=existing)


class FilterModule(object):
    def filters(self):
        return {"onion_location_snippets": snippets}
