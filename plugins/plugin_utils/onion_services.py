# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The onion_service role's variable ``onion_services`` as one model on the controller, with one error
type (OnionServicesError, its message never holding a key):

* generations(): each service's key generations that tor serves (service key rotation: the current one,
  and the previous one while its overlap lasts);
* clients(): ``onion_services[].clients`` checked and flattened (a service's authorized_clients, or a
  client host's credentials, one per address served), their keys' files in the escrow; escrow_dir(), the escrow
  the onion_client role uses; credential_key(), where a client host's credential's key comes from (the vault, the
  escrow, or none for a removal);
* authorized_clients(): ``authorized_clients`` entries without a public key, whose keys the escrow holds;
* unknown_variables(): play variables that look like the role's but are not.

The filters onion_service_generations and onion_clients and the action plugin onion_service_deploy are
its faces; where the escrow keeps a file is plugin_utils/escrow.py's.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import datetime
import difflib
import re

from ansible.module_utils.common.text.converters import to_text

from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth
from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError
from ansible_collections.onionlab.tor.plugins.module_utils._tor.hidden_service import ServiceConfigError, port_entry
from ansible_collections.onionlab.tor.plugins.plugin_utils import escrow
from ansible_collections.onionlab.tor.plugins.plugin_utils.escrow import name_problem


class OnionServicesError(ValueError):
    """onion_services (or a name for it) that the role cannot take; the message names the host, service and
    client, never a key."""


# -- key generations (service key rotation) -----------------------------------------------------------------
# \Z, not $: $ also matches before a newline at the end of the text
# a service's name (its directory under onion_service_dir), the one rule of every place that reads one
NAME_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z')
GENERATION_SUFFIX_RE = re.compile(r'\.k[0-9]+\Z')
UNTIL_RE = re.compile(r'^(\d{4})-(\d\d)-(\d\d)(?:[T ](\d\d):(\d\d)(?::(\d\d))?Z?)?\Z')


def directory(name, key):
    """The directory name of generation key of the service name."""
    return name if key == 1 else '%s.k%d' % (name, key)


def parse_until(value, service):
    """previous_until as an aware UTC datetime; a date alone means its start (00:00 UTC)."""
    if isinstance(value, datetime.datetime):
        return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)
    if isinstance(value, datetime.date):
        return datetime.datetime(value.year, value.month, value.day, tzinfo=datetime.timezone.utc)
    text = to_text(value).strip()
    match = UNTIL_RE.match(text)
    if not match:
        raise OnionServicesError("onion service %r: previous_until must be a UTC date or time such as 2027-01-31 or "
                                 "2027-01-31T12:00:00Z, not %r" % (service, text[:40]))
    parts = [int(p) if p else 0 for p in match.groups()]
    try:
        return datetime.datetime(*parts, tzinfo=datetime.timezone.utc)
    except ValueError as e:
        raise OnionServicesError("onion service %r: previous_until %r is no date: %s" % (service, text, e))


def _key(service, name):
    key = service.get('key', 1)
    if key is None:
        return 1
    if isinstance(key, bool) or not isinstance(key, (int, str)) or not to_text(key).isdigit() or int(key) < 1:
        raise OnionServicesError("onion service %r: key must be a whole number of 1 or more (the key generation), "
                                 "not %r" % (name, key))
    return int(key)


def _port(entry):
    """One ports entry as the dict tor_hidden_service makes of it (80 -> {port: 80}); as it is when it has none of
    the shapes (the module refuses it, with its message)."""
    try:
        return port_entry(entry)
    except ServiceConfigError:
        return entry


def generations(services, now=None):
    if services is None:
        return []
    if not isinstance(services, (list, tuple)):
        raise OnionServicesError('onion_service_generations expects a list of services, not %s'
                                 % type(services).__name__)
    now = parse_until(now, 'now') if now is not None else datetime.datetime.now(datetime.timezone.utc)
    out, used = [], {}
    for index, service in enumerate(services):
        if not isinstance(service, dict):
            raise OnionServicesError('onion_services[%d] is not a dict' % index)
        name = service.get('name')
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise OnionServicesError("onion_services[%d]: name must be 1-128 letters, digits, '_', '-' or '.', "
                                     "not starting with '.' or '-', not %r" % (index, name))
        key = _key(service, name)
        until = service.get('previous_until')
        if key > 1 and GENERATION_SUFFIX_RE.search(name):
            raise OnionServicesError("onion service %r: a name ending in .k<N> is kept for key generations" % name)
        until = parse_until(until, name) if until not in (None, '') else None
        present = service.get('state', 'present') == 'present'
        if isinstance(service.get('ports'), (list, tuple)):
            # the one place where the shapes of a port become one (the summary, the module and the filters after
            # this read entry['port'])
            service = dict(service, ports=[_port(entry) for entry in service['ports']])
        current = dict(service, name=directory(name, key), service=name, key=key, generation='current')
        entries = [current]
        if key > 1:
            served = present and until is not None and now < until
            previous = dict(service, name=directory(name, key - 1), service=name, key=key - 1,
                            generation='previous', state='present' if served else 'absent')
            if not served:
                previous['purge'] = False
            entries.append(previous)
        for entry in entries:
            if entry['name'] in used:
                raise OnionServicesError('onion services %r and %r would both use the directory %r'
                                         % (used[entry['name']], name, entry['name']))
            used[entry['name']] = name
        out.extend(entries)
    return out


# -- clients (onion_services[].clients) -----------------------------------------------------------------------
CLIENT_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,16}\Z")
# a service name is a directory name on the server and in the escrow
CLIENT_KEYS = frozenset(("name", "hosts", "key", "state", "public_key"))


def _fail(where, message):
    raise OnionServicesError("onion_clients: %s: %s" % (where, message))


def _key_generation(value, where):
    if isinstance(value, bool):
        _fail(where, "key must be a whole number of 1 or more (the key generation)")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or value < 1:
        _fail(where, "key must be a whole number of 1 or more (the key generation)")
    return value


def _public_key(value, where, fail=None):
    """A client's public key checked (base32 upper case); fail(where, message) says what is wrong."""
    fail = fail or _fail
    if not isinstance(value, str):
        fail(where, "public_key must be a string (52 base32 characters)")
    try:
        return onion.check_client_public_key(value)
    except (TorError, ValueError):
        fail(where, "public_key is not an x25519 public key (52 base32 characters, optionally after "
                    "descriptor:x25519:)")


def _public_of(private_key, where, fail=None):
    """The public half of a client's private key (from the vault or the escrow), never echoing it."""
    fail = fail or _fail
    if not isinstance(private_key, str):
        fail(where, "its private key (from the vault or the escrow) is not a string")
    try:
        raw = client_auth.parse_private_key(private_key, what="the private key")
    except (TorError, ValueError):
        fail(where, "its private key (from the vault or the escrow) is not an x25519 private key "
                    "(52 base32 characters)")
    return onion.b32(onion.x25519_public(raw))


def _clients_of(server, service, index, backup_dir, inventory):
    where = "%s: onion_services[%d]" % (server, index)
    if not isinstance(service, dict):
        _fail(where, "each service must be a dict")
    if "clients" not in service or service["clients"] is None:
        return []
    if name_problem(server, "inventory host name"):
        _fail(where, name_problem(server, "inventory host name"))
    name = service.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        _fail(where, "a service with clients needs a name of letters, digits, '-', '_' and '.' "
                     "(not starting with '.' or '-'), at most 128")
    where = "%s: service %s" % (server, name)
    if service.get("authorized_clients") is not None:
        _fail(where, "clients and authorized_clients are mutually exclusive; use clients")
    given = service["clients"]
    if not isinstance(given, list):
        _fail(where, "clients must be a list")
    service_absent = service.get("state", "present") == "absent"
    # the service's key generations (service key rotation): the directory each lives in, and whether
    # tor serves it; a client gets a credential for each address served, and loses the old one after
    served = [(g["name"], g["generation"], g.get("state", "present"))
              for g in generations([dict((k, v) for k, v in service.items() if k != "clients")])]
    out, seen = [], set()
    for number, client in enumerate(given):
        cwhere = "%s: clients[%d]" % (where, number)
        if not isinstance(client, dict):
            _fail(cwhere, "each client must be a dict")
        cname = client.get("name")
        if not isinstance(cname, str) or not CLIENT_NAME_RE.match(cname) or cname in (".", ".."):
            _fail(cwhere, "name must be 1 to 16 letters, digits, '-', '_' or '.'")
        cwhere = "%s: client %s" % (where, cname)
        unknown = sorted(str(k) for k in client if k not in CLIENT_KEYS)
        if unknown:
            _fail(cwhere, "unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(sorted(CLIENT_KEYS))))
        if cname in seen:
            _fail(cwhere, "the name is given twice")
        seen.add(cname)
        state = client.get("state", "present")
        if state not in ("present", "absent"):
            _fail(cwhere, "state must be present or absent")
        hosts = client.get("hosts", [])
        if hosts is None:
            hosts = []
        if not isinstance(hosts, list) or not all(isinstance(h, str) and h.strip() for h in hosts):
            _fail(cwhere, "hosts must be a list of inventory host names")
        if inventory is not None:
            missing = [h for h in hosts if h not in inventory]
            if missing:
                _fail(cwhere, "hosts not in the inventory: %s" % ", ".join(missing))
        public_key = None
        if client.get("public_key") is not None:
            public_key = _public_key(client["public_key"], cwhere)
            if hosts:
                _fail(cwhere, "public_key and hosts are mutually exclusive (a client with its own key pair "
                              "gets no key from the controller)")
            if client.get("key") is not None:
                _fail(cwhere, "public_key and key are mutually exclusive (key generations are for keys the "
                              "controller makes)")
        key = _key_generation(client["key"] if client.get("key") is not None else 1, cwhere)
        if service_absent:
            state = "absent"
        out.append({
            "server": server, "service": name, "name": cname, "key": key, "hosts": list(hosts),
            "generations": served,
            "state": state, "public_key": public_key,
            "id": "%s/%s/%s" % (server, name, cname),
            "escrow": escrow.client_key_file(backup_dir, server, name, cname, key),
            "needs_key": state == "present" and public_key is None,
        })
    if not service_absent and given and not any(c["state"] == "present" for c in out):
        _fail(where, "every client is absent, which would make the service public; keep one client present, "
                     "or remove clients from the service to make it public")
    return out


def _read_address(entry, backup_dir, directory=None):
    return escrow.read_hostname(backup_dir, entry["server"], directory or entry["service"])


def _per_generation(entry, backup_dir, addresses, previous, pending=False):
    """The credentials of one client entry: one per address of the service that tor serves (the
    current key generation, and the previous one during a rotation's overlap), and the removal of
    the previous generation's once its overlap is over (when its address is known)."""
    out = []
    for directory, generation, state in entry.get("generations") or [(entry["service"], "current", "present")]:
        if generation == "current":
            out.append(_with_address(entry, backup_dir, addresses, directory, pending))
            continue
        address = (previous.get(entry["server"]) or {}).get(entry["service"]) if state == "present" else None
        if not address:
            address = _read_address(entry, backup_dir, directory)[0]
        if not address:
            if state == "present" and entry["state"] == "present":
                _fail("%s: service %s: client %s" % (entry["server"], entry["service"], entry["name"]),
                      "the address of the previous key generation (%s) is not known" % directory)
            continue
        old = dict(entry, state=entry["state"] if state == "present" else "absent")
        out.append(_with_address(old, backup_dir, {old["server"]: {old["service"]: address}}, directory))
    for item in out:
        item.pop("generations", None)
        # what the onion_client role gives tor_onion_client_auth and prints of the credential (no key)
        item["client_name"] = item["name"] if item["state"] == "present" else None
        item["label"] = "%s %s (%s)" % (item["id"], item["address"] or "address not known yet: the service is made "
                                        "by the real run on %s" % item["server"], item["state"])
    return out


def _with_address(entry, backup_dir, addresses, directory=None, pending=False):
    where = "%s: service %s: client %s" % (entry["server"], entry["service"], entry["name"])
    address = (addresses.get(entry["server"]) or {}).get(entry["service"])
    origin = "onion_service_addresses of %s" % entry["server"]
    if not address:
        address, origin = _read_address(entry, backup_dir, directory)
    if not address and pending:
        entry = dict(entry)
        entry["address"] = None
        return entry
    if not address:
        _fail(where, "the service's address is not known: %s sets no onion_service_addresses in this play and "
                     "the escrow has no %s (run the onion_service role on %s first)"
                     % (entry["server"], origin, entry["server"]))
    address = str(address).strip().lower()
    try:
        onion.parse_onion_address(address if address.endswith(".onion") else address + ".onion")
    except (TorError, ValueError):
        _fail(where, "the service's address from %s is not a v3 onion address" % origin)
    entry = dict(entry)
    entry["address"] = address if address.endswith(".onion") else address + ".onion"
    return entry


def clients(services_by_server, backup_dir=None, inventory=None, private_keys=None, host=None,
            addresses=None, previous_addresses=None, pending=False):
    if not isinstance(services_by_server, dict):
        raise OnionServicesError("onion_clients: the input must be a dict of server to its onion_services list")
    if not isinstance(backup_dir, str) or not backup_dir:
        raise OnionServicesError("onion_clients: backup_dir (the controller's escrow directory) is required")
    if inventory is not None:
        inventory = set(inventory)
    out = []
    for server, services in services_by_server.items():
        if services is None:
            continue
        if not isinstance(services, list):
            raise OnionServicesError("onion_clients: %s: onion_services must be a list" % server)
        for index, service in enumerate(services):
            out.extend(_clients_of(str(server), service, index, backup_dir, inventory))
    if host is not None:
        if not isinstance(addresses or {}, dict):
            raise OnionServicesError("onion_clients: addresses must be a dict of server to its onion_service_addresses")
        if not isinstance(previous_addresses or {}, dict):
            raise OnionServicesError("onion_clients: previous_addresses must be a dict of server to its "
                                     "onion_service_previous_addresses")
        return [c for e in out if host in e["hosts"]
                for c in _per_generation(e, backup_dir, addresses or {}, previous_addresses or {}, bool(pending))]
    if private_keys is None:
        return out
    if not isinstance(private_keys, dict):
        raise OnionServicesError("onion_clients: private_keys must be a dict of client id to private key")
    authorized = {}
    for entry in out:
        if entry["state"] != "present":
            authorized.setdefault(entry["service"], [])
            continue
        public_key = entry["public_key"]
        if public_key is None:
            where = "%s: service %s: client %s" % (entry["server"], entry["service"], entry["name"])
            if entry["id"] not in private_keys:
                _fail(where, "no private key (neither in the vault nor in the escrow)")
            public_key = _public_of(private_keys[entry["id"]], where)
        authorized.setdefault(entry["service"], []).append({"name": entry["name"], "public_key": public_key})
    return authorized


def escrow_dir(backup_dir, playbook_dir=None):
    """The controller's escrow directory: backup_dir, or of a list of them (the onion_client role's
    onion_client_backup_dir, then onion_service_backup_dir) the first that is set (not null or empty); none set:
    <playbook_dir>/onion-keys (the onion_service role's default); None when there is no playbook_dir either."""
    for candidate in backup_dir if isinstance(backup_dir, (list, tuple)) else [backup_dir]:
        if candidate is not None and candidate != "":
            return candidate
    return None if playbook_dir in (None, "") else "%s/onion-keys" % playbook_dir


def credential_key(credential, vault_keys=None):
    """Where a client host's credential (an entry of clients(host=...)) gets its private key: ("none", None) for a
    removal (state absent: no key read or made), ("vault", key) when its id is in vault_keys (a dict of client id
    to private key, or a list of them merged in order, a later one winning), else ("escrow", its escrow file)."""
    if not isinstance(credential, dict) or not isinstance(credential.get("id"), str) \
            or credential.get("state") not in ("present", "absent"):
        raise OnionServicesError("onion_client_key: a credential must be an entry of the onion_clients filter (with "
                                 "host): a dict with id, state and escrow")
    if credential["state"] != "present":
        return "none", None
    merged = {}
    for keys in vault_keys if isinstance(vault_keys, (list, tuple)) else [vault_keys]:
        if keys is None:
            continue
        if not isinstance(keys, dict):
            raise OnionServicesError("onion_client_key: vault_keys must be a dict of client id to private key, or a "
                                     "list of them")
        merged.update(keys)
    if credential["id"] in merged:
        return "vault", merged[credential["id"]]
    if not isinstance(credential.get("escrow"), str) or not credential["escrow"]:
        raise OnionServicesError("onion_client_key: %s: the credential has no escrow file" % credential["id"])
    return "escrow", credential["escrow"]


# -- authorized_clients entries without a public key ----------------------------------------------------------
def _afail(where, message):
    """The failure of a service's authorized_clients entry (the role's escrow makes the keys it lacks)."""
    raise OnionServicesError("onion_authorized_clients: %s: %s" % (where, message))


def _authorized_entries(services, server, backup_dir):
    """Every authorized_clients entry of a present service: its service, the entry (public_key checked, or
    None), where it is (for messages), its id and its escrow file."""
    if services is None:
        return
    if not isinstance(services, list):
        raise OnionServicesError("onion_authorized_clients: onion_services must be a list")
    for index, service in enumerate(services):
        if not isinstance(service, dict) or service.get("authorized_clients") is None:
            continue
        if service.get("state", "present") != "present":
            continue
        name = service.get("name")
        where = "%s: onion_services[%d]" % (server, index)
        if not isinstance(name, str) or not NAME_RE.match(name):
            _afail(where, "a service with authorized_clients needs a name of letters, digits, '-', '_' and '.' "
                          "(not starting with '.' or '-'), at most 128")
        where = "%s: service %s" % (server, name)
        given = service["authorized_clients"]
        if not isinstance(given, list):
            _afail(where, "authorized_clients must be a list")
        seen = set()
        for number, client in enumerate(given):
            cwhere = "%s: authorized_clients[%d]" % (where, number)
            if not isinstance(client, dict):
                _afail(cwhere, "each entry must be a dict with name and public_key")
            cname = client.get("name")
            if not isinstance(cname, str) or not CLIENT_NAME_RE.match(cname) or cname in (".", ".."):
                _afail(cwhere, "name must be 1 to 16 letters, digits, '-', '_' or '.'")
            cwhere = "%s: client %s" % (where, cname)
            if cname in seen:
                _afail(cwhere, "the name is given twice")
            seen.add(cname)
            public_key = client.get("public_key")
            if public_key not in (None, ""):
                public_key = _public_key(public_key, cwhere, _afail)
            else:
                public_key = None
            yield {"service": name, "client": dict(client, public_key=public_key), "where": cwhere,
                   "id": "%s/%s/%s" % (server, name, cname),
                   "escrow": escrow.client_key_file(backup_dir, server, name, cname)}


def authorized_clients(services, server=None, backup_dir=None, private_keys=None):
    if not isinstance(server, str) or not server:
        raise OnionServicesError("onion_authorized_clients: server (the inventory host) is required")
    if not isinstance(backup_dir, str) or not backup_dir:
        raise OnionServicesError("onion_authorized_clients: backup_dir (the controller's escrow directory) is required")
    entries = list(_authorized_entries(services, server, backup_dir))
    if private_keys is None:
        return [{"service": e["service"], "name": e["client"]["name"], "id": e["id"], "escrow": e["escrow"]}
                for e in entries if e["client"]["public_key"] is None]
    if not isinstance(private_keys, dict):
        raise OnionServicesError("onion_authorized_clients: private_keys must be a dict of client id to private key")
    out = {}
    for entry in entries:
        client = entry["client"]
        if client["public_key"] is None:
            if entry["id"] not in private_keys:
                _afail(entry["where"], "no private key (neither in the vault nor in the escrow)")
            client = dict(client, public_key=_public_of(private_keys[entry["id"]], entry["where"], _afail))
        out.setdefault(entry["service"], []).append(client)
    return out


# -- play variables that look like the role's ---------------------------------------------------------------
def unknown_variables(names, known=None):
    """One dict (name, suggestion, text) per name that is not in known, with the closest known name."""
    if not isinstance(names, (list, tuple)) or not isinstance(known, (list, tuple)):
        raise OnionServicesError("onion_service_unknown_variables: the input and known must be lists of names")
    known = sorted(set(str(k) for k in known))
    out = []
    for name in sorted(set(str(n) for n in names)):
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.85)
        suggestion = close[0] if close else None
        out.append({"name": name, "suggestion": suggestion,
                    "text": "%s (did you mean %s?)" % (name, suggestion) if suggestion else name})
    return out
