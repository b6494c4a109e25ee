# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument spec pieces of tor_hidden_service, shared by its single-service options and the
elements of its services list (documented in plugins/doc_fragments/hidden_service.py).

This is a private module_utils file of onionlab.tor; its API may change at any time.
"""

from __future__ import annotations

PORT_SPEC = dict(
    port=dict(type="int", required=True),
    target_address=dict(type="str"),
    target_port=dict(type="int"),
)

CLIENT_SPEC = dict(
    name=dict(type="str", required=True),
    public_key=dict(type="str"),
)

# the members of tor_hidden_service's option groups; the tor options, defaults and limits are
# hidden_service.py's OPTIONS (no defaults here: an absent member is tor's default)
POW_SPEC = dict(
    enabled=dict(type="bool"),
    queue_rate=dict(type="int"),
    queue_burst=dict(type="int"),
)

INTRO_DOS_SPEC = dict(
    enabled=dict(type="bool"),
    rate_per_sec=dict(type="int"),
    burst_per_sec=dict(type="int"),
)

SERVICE_OPTIONS = dict(
    # elements raw: an entry is a port, a "PORT:..." string or a PORT_SPEC dict, each made a dict
    # (and checked, with a message naming the shapes) by hidden_service.port_entry; options stays
    # for the documentation (Ansible checks options only of dict elements)
    ports=dict(type="list", elements="raw", options=PORT_SPEC),
    max_streams=dict(type="int"),
    max_streams_close_circuit=dict(type="bool"),
    dir_group_readable=dict(type="bool"),
    allow_unknown_ports=dict(type="bool"),
    num_intro_points=dict(type="int"),
    version=dict(type="int", choices=[3]),
    export_circuit_id=dict(type="str", choices=["none", "haproxy"]),
    pow=dict(type="dict", options=POW_SPEC),
    intro_dos=dict(type="dict", options=INTRO_DOS_SPEC),
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
