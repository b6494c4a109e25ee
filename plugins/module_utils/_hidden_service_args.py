# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument spec pieces of tor_hidden_service, shared by its single-service options and the
elements of its services list (documented in plugins/doc_fragments/hidden_service.py).

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

from ansible_collections.onionlab.tor.plugins.module_utils._tor import hidden_service as hs

PORT_SPEC = dict(
    port=dict(type="int", required=True),
    target_address=dict(type="str"),
    target_port=dict(type="int"),
)

CLIENT_SPEC = dict(
    name=dict(type="str", required=True),
    public_key=dict(type="str"),
)


def _spec(option):
    """An OPTIONS row's argument spec: its kind's type (a choice a str; an int whose limits are one
    value a choice of it); no default (an absent option is tor's default)."""
    if option.kind == "choice":
        return dict(type="str", choices=list(option.limits))
    if option.kind == "int" and option.limits[0] == option.limits[1]:
        return dict(type="int", choices=[option.limits[0]])
    return dict(type=option.kind)


# the members of tor_hidden_service's option groups ({"pow": {"enabled": ..., ...}}), from
# hidden_service.py's OPTIONS, which holds the tor options, defaults and limits
GROUP_SPECS = {}
for _option in hs.OPTIONS:
    _group, _dot, _member = _option.key.partition(".")
    if _dot:
        GROUP_SPECS.setdefault(_group, {})[_member] = _spec(_option)
POW_SPEC = GROUP_SPECS["pow"]
INTRO_DOS_SPEC = GROUP_SPECS["intro_dos"]

# elements raw: an entry is a port, a "PORT:..." string or a PORT_SPEC dict, each made a dict
# (and checked, with a message naming the shapes) by hidden_service.port_entry; options stays
# for the documentation (Ansible checks options only of dict elements)
SERVICE_OPTIONS = dict(ports=dict(type="list", elements="raw", options=PORT_SPEC))
for _option in hs.OPTIONS:
    _group, _dot, _member = _option.key.partition(".")
    if not _dot:
        SERVICE_OPTIONS[_option.key] = _spec(_option)
    elif _group not in SERVICE_OPTIONS:
        SERVICE_OPTIONS[_group] = dict(type="dict", options=GROUP_SPECS[_group])
SERVICE_OPTIONS.update(
    extra_options=dict(type="dict"),
    authorized_clients=dict(type="list", elements="dict", options=CLIENT_SPEC),
    onionbalance_frontend=dict(type="str"),
)


def services_element_spec():
    """One element of `services`: a persistent service, as tor_hidden_service_info returns it
    (its read-only keys are accepted and ignored so that the output can be fed back)."""
    spec = dict(SERVICE_OPTIONS)
    spec.update(
        path=dict(type="path", required=True),
        type=dict(type="str", choices=["persistent"], default="persistent"),
        onion_address=dict(type="str"),
        pow_suggested_effort=dict(type="int"),
        private_key=dict(type="str", no_log=True),
    )
    return spec
