# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    # The options of one onion service; their spec is plugins/module_utils/_hidden_service_args.py.
    DOCUMENTATION = r"""
options:
  ports:
    description:
      - The service's ports (C(HiddenServicePort)); required for a present service.
      - Removing an entry removes just that mapping.
    type: list
    elements: dict
    suboptions:
      port:
        description: The virtual port that clients connect to (1-65535).
        type: int
        required: true
      target_address:
        description:
          - Where tor forwards the connections, an IPv4 or IPv6 address or C(unix:/path) for a unix socket.
          - When omitted, C(127.0.0.1).
        type: str
      target_port:
        description:
          - The port on O(ports[].target_address); when omitted, the same as O(ports[].port). Not with a unix target.
        type: int
  max_streams:
    description: C(HiddenServiceMaxStreams), the most streams per rendezvous circuit (0 is unlimited, the default).
    type: int
  max_streams_close_circuit:
    description: C(HiddenServiceMaxStreamsCloseCircuit), close the circuit when the limit is exceeded.
    type: bool
  dir_group_readable:
    description: C(HiddenServiceDirGroupReadable), let the directory's group read it.
    type: bool
  allow_unknown_ports:
    description: C(HiddenServiceAllowUnknownPorts), do not close circuits for unconfigured ports.
    type: bool
  num_intro_points:
    description: C(HiddenServiceNumIntroductionPoints), 3 to 20 (tor's default is 3).
    type: int
  version:
    description: The onion-service version; only V(3) exists in current tor.
    type: int
    choices: [3]
  extra_options:
    description:
      - Other C(HiddenService*) options of this service as a dict of option name to value, for example
        C(HiddenServicePoWDefensesEnabled) set to V(1); a list value repeats the option.
    type: dict
  authorized_clients:
    description:
      - v3 client authorization of a persistent service, written as C(authorized_clients/NAME.auth) files
        (mode C(0600), owned by tor's user). When given, the directory holds exactly these clients.
      - An entry without O(authorized_clients[].public_key) gets a key pair generated on the run that creates it; its
        private key is returned once in RV(onionlab.tor.tor_hidden_service#module:generated_clients). Use C(no_log) on such a task.
    type: list
    elements: dict
    suboptions:
      name:
        description: The client's name, the file name without C(.auth) (letters, digits, C(-), C(_), C(.)).
        type: str
        required: true
      public_key:
        description: The client's x25519 public key, 52 base32 characters (a C(descriptor:x25519:) prefix is accepted).
        type: str
"""
