# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The options of one onion service; their spec is plugins/module_utils/_hidden_service_args.py (made
    # from _tor/hidden_service.py's OPTIONS). SERVICES (onionlab.tor.hidden_service.services) is
    # tor_hidden_service's `services`: the same options, each "As O(...)" (tests/unit/plugins/doc_fragments
    # checks that it lists each option of DOCUMENTATION with its type, choices and suboptions).
    DOCUMENTATION = r"""
options:
  ports:
    description:
      - The service's ports (C(HiddenServicePort)); required for a present service.
      - Removing an entry removes just that mapping.
      - Each entry is a dict with the keys below, or one of its short forms, a port number V(80) (to
        C(127.0.0.1:80)), V("80:8080") (to C(127.0.0.1:8080)), V("80:127.0.0.1:8080") or V("443:[::1]:8443") (to
        that address and port) and V("80:unix:/run/web.sock") (to a unix socket). Anything else is refused with a
        message naming these shapes.
    type: list
    elements: raw
    suboptions:
      port:
        description: The virtual port that clients connect to (1-65535).
        type: int
        required: true
      target_address:
        description:
          - Where tor forwards the connections, an IPv4 or IPv6 address or C(unix:/path) for a unix socket.
          - A unix path without blanks, quotes, backslashes or C(#) (tor would read the rest of the drop-in's line as a
            comment when it reads the file again).
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
  export_circuit_id:
    description:
      - C(HiddenServiceExportCircuitID) (tor 0.4.0.1-alpha and later). With V(haproxy), tor sends a HAProxy PROXY
        protocol line at the start of each connection to a TCP target whose address encodes the client's
        rendezvous circuit (C(fc00:dead:beef:4dad::XXXX:XXXX)); the application can then rate-limit or block one
        circuit, or close it with the C(CLOSECIRCUIT) control command. The application must expect the header
        (nginx C(proxy_protocol), haproxy C(accept-proxy)), otherwise the header is part of the request.
      - When omitted, tor's default V(none).
    type: str
    choices: [none, haproxy]
  pow:
    description:
      - The proof-of-work defence (tor 0.4.8.1-alpha and later, built with its C(pow) module, see
        C(tor --list-modules)). The service puts a puzzle in its descriptor and, when it is overloaded, serves
        introductions in order of the effort clients spent on it, raising the effort it suggests while the load
        lasts and dropping it when the load goes. Clients without PoW support (before 0.4.8) can still connect
        but come last under attack.
      - Costs clients CPU time only while the service suggests an effort above 0 (under load); the service
        verifies solutions cheaply. A tor that lacks the option or the module is refused before anything changes.
      - For an ephemeral service (O(onionlab.tor.tor_hidden_service#module:ephemeral=true)) the same group is sent
        with C(ADD_ONION)'s C(PoWDefensesEnabled=), C(PoWQueueRate=) and C(PoWQueueBurst=), which need tor
        0.4.9.2-alpha or later (the module records them, tor does not report them).
      - Omitted members are tor's defaults.
    type: dict
    suboptions:
      enabled:
        description: C(HiddenServicePoWDefensesEnabled). Default V(false).
        type: bool
      queue_rate:
        description:
          - C(HiddenServicePoWQueueRate), the rendezvous requests per second taken from the priority queue, 0 to
            2147483647; 0 takes them as fast as the service can. Default V(250).
          - Lower protects a slow backend and the service's CPU, but limits how many clients per second get
            through, attack or not.
        type: int
      queue_burst:
        description:
          - C(HiddenServicePoWQueueBurst), the most requests taken from the queue at once, 0 to 2147483647.
            Default V(2500). Tor only applies the rate when the burst is at least the rate.
        type: int
  intro_dos:
    description:
      - The introduction-point rate limit (tor 0.4.2.1-alpha and later); the service asks its introduction points
        to let at most this many introductions per second through to it. It protects the service's tor and the
        network from a flood of rendezvous circuits, but legitimate clients are limited just the same; under a
        flood most of them are refused at the introduction point. Consider O(pow) first.
      - Persistent services only (C(ADD_ONION) has no keyword for it), as O(export_circuit_id).
      - Omitted members are tor's defaults.
    type: dict
    suboptions:
      enabled:
        description: C(HiddenServiceEnableIntroDoSDefense). Default V(false) (the introduction points then follow
          the consensus parameters).
        type: bool
      rate_per_sec:
        description: C(HiddenServiceEnableIntroDoSRatePerSec), introductions per second per introduction point,
          0 to 2147483647 (0 is no limit); not above O(intro_dos.burst_per_sec). Default V(25).
        type: int
      burst_per_sec:
        description: C(HiddenServiceEnableIntroDoSBurstPerSec), the burst per introduction point, 0 to 2147483647
          (0 is no limit). Default V(200).
        type: int
  extra_options:
    description:
      - Other C(HiddenService*) options of this service as a dict of option name to value, for example
        C(HiddenServiceOnionBalanceInstance) set to V(1); a list value repeats the option.
      - The options that have their own parameter here (O(pow), O(intro_dos), O(export_circuit_id), ...) are refused.
      - C(HiddenServiceSingleHopMode) and C(HiddenServiceNonAnonymousMode) are refused too; they are tor-wide
        options, not per service, that make every service of the tor non-anonymous (and tor wants both plus
        C(SocksPort 0) in torrc); the module reports RV(onionlab.tor.tor_hidden_service#module:tor.non_anonymous)
        when tor runs that way.
      - A value is one line of the drop-in (no line break, no C(#), no backslash at its end).
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
  onionbalance_frontend:
    description:
      - Make this persistent service a backend (instance) of the Onionbalance frontend with this v3 address (with or
        without C(.onion); its checksum is checked). The module writes C(<path>/ob_config) with the line
        C(MasterOnionAddress <address>.onion) (mode C(0600), owned by tor's user, written atomically) before it
        sets C(HiddenServiceOnionbalanceInstance 1) for the service (tor 0.4.4 and later), so that tor finds the
        file when it loads the service. See R(the Onionbalance guide,ansible_collections.onionlab.tor.docsite.guide_onionbalance).
      - Tor needs both together. Measured with tor 0.4.9.11, the flag without C(ob_config) makes tor refuse the
        configuration (C(Failed to configure rendezvous options); its log says it is unable to read the config
        file), so a tor restarted that way does not start; an C(ob_config) without a C(MasterOnionAddress) line
        (empty, comments only) crashes tor (SIGSEGV in C(hs_ob_parse_config_file)); an address without C(.onion)
        is refused; a wrong checksum is accepted. The module therefore always writes the file first, and refuses
        to change anything while a balanced service of tor's configuration has no valid C(ob_config).
      - V(null) or omitted (or V("")), the service is not balanced; a service that was has the flag removed and,
        once tor runs without it, its C(ob_config) deleted. The keys are kept either way.
      - Refused before anything is written, each with its reason, on a balanced service, the frontend's address
        being the service's own, O(authorized_clients) (or client files already in its directory), and
        O(pow.enabled=true), because Onionbalance 0.2.2 carries neither (its frontend descriptor has no client
        entries and no C(pow-params)). Not for an ephemeral service (C(ADD_ONION) has no such flag).
    type: str
"""

    SERVICES = r"""
options:
  services:
    description:
      - Several persistent services at once, each with the keys of a single service (O(path), O(ports), ...).
        The RV(onionlab.tor.tor_hidden_service_info#module:hidden_services) output of M(onionlab.tor.tor_hidden_service_info) can be given as it
        is; its read-only keys (C(onion_address), C(type), C(pow_suggested_effort)) are ignored and its ephemeral entries must be
        filtered out.
      - Mutually exclusive with O(path) and O(ephemeral).
    type: list
    elements: dict
    suboptions:
      path:
        description: The service directory.
        type: path
        required: true
      type:
        description: Only V(persistent) services can be listed here.
        type: str
        choices: [persistent]
        default: persistent
      onion_address:
        description: Ignored (accepted so that the info module's output can be fed back).
        type: str
      pow_suggested_effort:
        description: Ignored (accepted so that the info module's output can be fed back).
        type: int
      private_key:
        description: As O(private_key), for this service.
        type: str
      ports:
        description: As O(ports), short forms included.
        type: list
        elements: raw
        suboptions:
          port:
            description: The virtual port.
            type: int
            required: true
          target_address:
            description: As O(ports[].target_address).
            type: str
          target_port:
            description: As O(ports[].target_port).
            type: int
      max_streams:
        description: As O(max_streams).
        type: int
      max_streams_close_circuit:
        description: As O(max_streams_close_circuit).
        type: bool
      dir_group_readable:
        description: As O(dir_group_readable).
        type: bool
      allow_unknown_ports:
        description: As O(allow_unknown_ports).
        type: bool
      num_intro_points:
        description: As O(num_intro_points).
        type: int
      version:
        description: As O(version).
        type: int
        choices: [3]
      export_circuit_id:
        description: As O(export_circuit_id).
        type: str
        choices: [none, haproxy]
      pow:
        description: As O(pow).
        type: dict
        suboptions:
          enabled:
            description: As O(pow.enabled).
            type: bool
          queue_rate:
            description: As O(pow.queue_rate).
            type: int
          queue_burst:
            description: As O(pow.queue_burst).
            type: int
      intro_dos:
        description: As O(intro_dos).
        type: dict
        suboptions:
          enabled:
            description: As O(intro_dos.enabled).
            type: bool
          rate_per_sec:
            description: As O(intro_dos.rate_per_sec).
            type: int
          burst_per_sec:
            description: As O(intro_dos.burst_per_sec).
            type: int
      extra_options:
        description: As O(extra_options).
        type: dict
      authorized_clients:
        description: As O(authorized_clients).
        type: list
        elements: dict
        suboptions:
          name:
            description: The client's name.
            type: str
            required: true
          public_key:
            description: The client's x25519 public key.
            type: str
      onionbalance_frontend:
        description: As O(onionbalance_frontend).
        type: str
"""
