# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stateful fake tor control port on a real loopback socket, for running the modules' main()
without tor (tests/unit/plugins/modules).

Unlike fake_tor.FakeTor (a fixed script of replies), this one keeps state across commands and
connections the way tor does, so that a module can be run twice and find what the first run did:

* PROTOCOLINFO (auth NULL), AUTHENTICATE, QUIT; anything else before AUTHENTICATE is refused (514);
* GETINFO from ``info`` (a dict; a value may be an ``Error``), plus the dynamic keys onions/current
  and onions/detached; a key missing from ``info`` is ``552 Unrecognized key "..."``;
* GETCONF, SETCONF and RESETCONF over ``conf`` (option -> list of values; an option named in
  ``unknown_options`` is 552 as on an older tor) and the HiddenService
  block (``hs_block``, the (option, value) lines tor would report for HiddenServiceOptions); as in
  tor, setting any HiddenService* option replaces the whole block, a bare HiddenServiceDir clears
  it, and a service directory without a key gets one, with its hostname file, like tor writes them;
* SETEVENTS (only WARN events are ever sent: ``setconf_warnings`` while refusing a SETCONF);
* ADD_ONION / DEL_ONION over ``onions`` (service id -> what was asked, PoW* keywords in "pow" unless
  ``add_onion_pow`` is false as before tor 0.4.9.2-alpha), NEW keys generated, PrivateKey returned
  unless DiscardPK, onions not detached dropped with their connection;
* GETINFO config/names lists the options it knows (less ``unknown_options``) unless ``info`` has it.

``pretend_version("0.4.7.16")`` makes it a tor of before PoW (no HiddenServicePoW* options, no ADD_ONION
PoW keywords).

``refuse(command, code, message, times=None)`` makes tor answer a command with an error (every
time, or the next ``times`` times). Each command line received is kept in ``received``; a fault
inside the fake itself is kept in ``errors`` (and answered 551) so that a test can assert none.

    with FakeController(tmp_path / "data", torrc) as fake:
        module args: control_port=fake.port
"""

import base64
import os
import pwd
import select
import socket
import threading

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion

from .keys import new_expanded_key

OK = "250 OK"
TOR_VERSION = "0.4.9.11"
HS_OPTIONS = ("HiddenServiceDir", "HiddenServicePort", "HiddenServiceVersion", "HiddenServiceMaxStreams",
              "HiddenServiceMaxStreamsCloseCircuit", "HiddenServiceDirGroupReadable",
              "HiddenServiceAllowUnknownPorts", "HiddenServiceNumIntroductionPoints",
              "HiddenServiceExportCircuitID", "HiddenServiceEnableIntroDoSDefense",
              "HiddenServiceEnableIntroDoSRatePerSec", "HiddenServiceEnableIntroDoSBurstPerSec",
              "HiddenServiceOnionBalanceInstance", "HiddenServicePoWDefensesEnabled",
              "HiddenServicePoWQueueRate", "HiddenServicePoWQueueBurst",
              "HiddenServiceSingleHopMode", "HiddenServiceNonAnonymousMode")
POW_OPTIONS = ("HiddenServicePoWDefensesEnabled", "HiddenServicePoWQueueRate", "HiddenServicePoWQueueBurst")
SIMPLE_OPTIONS = ("DataDirectory", "User", "AccountingMax", "AccountingRule", "AccountingStart",
                  "BandwidthRate", "BandwidthBurst", "RelayBandwidthRate", "RelayBandwidthBurst",
                  "MaxAdvertisedBandwidth", "SocksPort", "DisableNetwork", "VanguardsLiteEnabled", "MetricsPort")
EVENTS = ("DEBUG", "INFO", "NOTICE", "WARN", "ERR", "CIRC", "STREAM", "ORCONN", "BW", "STATUS_GENERAL",
          "STATUS_CLIENT", "STATUS_SERVER", "HS_DESC", "CONF_CHANGED")
NO_CONSENSUS = "Could not open cached consensus. Make sure FetchUselessDescriptors is set to 1."


class Error(object):
    """A GETINFO value that tor answers with an error (e.g. 551 for a consensus it lacks)."""

    def __init__(self, code, message):
        self.code = code
        self.message = message


class _Refused(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


def write_service_keys(path, expanded=None):
    """Write hs_ed25519_secret_key, hs_ed25519_public_key and hostname into a service directory
    as tor does (a key found there is kept). Returns the address with .onion."""
    secret_path = os.path.join(path, "hs_ed25519_secret_key")
    if os.path.exists(secret_path):
        expanded = onion.read_secret_key_file(secret_path)
    else:
        expanded = expanded or new_expanded_key()
        _write(secret_path, onion.SECRET_HEADER + expanded)
    public = onion.ed25519_public_from_expanded(expanded)
    public_path = os.path.join(path, "hs_ed25519_public_key")
    if not os.path.exists(public_path):
        _write(public_path, onion.PUBLIC_HEADER + public)
    address = onion.onion_address(public) + ".onion"
    host_path = os.path.join(path, "hostname")
    if not os.path.exists(host_path):
        _write(host_path, (address + "\n").encode("ascii"))
    return address


def _write(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _unquote(text, i):
    """A QuotedString at text[i] -> (value, index after it); only the escapes tor reads."""
    out = []
    i += 1
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append({"n": "\n", "t": "\t", "r": "\r"}.get(text[i + 1], text[i + 1]))
            i += 2
            continue
        if c == '"':
            return "".join(out), i + 1
        out.append(c)
        i += 1
    raise _Refused("551", "Couldn't parse string")


def parse_config_args(text):
    """'Key=value Key2="quoted" Bare' (SETCONF/RESETCONF arguments) -> [(key, value or None)]."""
    pairs = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == " ":
            i += 1
            continue
        j = i
        while j < n and text[j] not in " =":
            j += 1
        key = text[i:j]
        if j < n and text[j] == "=":
            j += 1
            if j < n and text[j] == '"':
                value, j = _unquote(text, j)
            else:
                k = text.find(" ", j)
                k = n if k < 0 else k
                value, j = text[j:k], k
            pairs.append((key, value))
        else:
            pairs.append((key, None))
        i = j
    return pairs


def _needs_escape(value):
    """tor's config_value_needs_escape(): GETCONF quotes only such values."""
    return value.startswith('"') or any(c in value for c in "\r\n#") or not value.isprintable()


def _escape(value):
    return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")


def _data_block(value):
    """A value as tor sends a multi-line GETINFO answer: CRLF lines, dot-stuffed, ending '.'."""
    lines = value.replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return "".join(("." + line if line.startswith(".") else line) + "\r\n" for line in lines) + "."


class FakeController(object):
    def __init__(self, data_dir, config_file=None, uid=None, user=None):
        data_dir = str(data_dir)
        if not os.path.isdir(data_dir):
            os.makedirs(data_dir, 0o700)
        with open(os.path.join(data_dir, "lock"), "w"):
            pass  # tor holds a lock file in its DataDirectory
        uid = os.geteuid() if uid is None else uid
        if user is None:
            try:
                user = pwd.getpwuid(uid).pw_name
            except KeyError:
                user = ""
        self.info = {
            "version": TOR_VERSION,
            "config-file": str(config_file) if config_file else "",
            "process/uid": str(uid),
            "process/user": user,
            "process/pid": str(os.getpid()),
            "dir/status-vote/current/consensus": Error("551", NO_CONSENSUS),
            "dir/status-vote/current/consensus-microdesc": Error("551", NO_CONSENSUS),
        }
        self.conf = {"DataDirectory": [data_dir], "User": []}
        self.hs_block = []
        self.unknown_options = set()   # options this (older) tor does not know: 552 for them
        self.add_onion_pow = True      # ADD_ONION takes PoW* keywords (tor 0.4.9.2-alpha and later)
        self.onions = {}
        self.events = set()
        self.setconf_warnings = []
        self.write_keys = True
        self.received = []
        self.errors = []
        self.connections = 0
        self.finished = 0
        self._idle = threading.Condition()
        self._refusals = {}
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(4)
        self._wake_r, self._wake_w = socket.socketpair()
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    # -- test-side helpers --------------------------------------------------------------------
    def pretend_version(self, version):
        """A tor of that version: before 0.4.8.1-alpha without the HiddenServicePoW* options, before
        0.4.9.2-alpha without ADD_ONION's PoW keywords."""
        self.info["version"] = version
        numbers = tuple(int(n) for n in version.split("-")[0].split(".")[:4])
        if numbers < (0, 4, 8, 1):
            self.unknown_options |= set(POW_OPTIONS)
        self.add_onion_pow = numbers >= (0, 4, 9, 2)

    def refuse(self, command, code, message, times=None):
        """Answer `command` (e.g. 'SETCONF', 'ADD_ONION') with `code message`; `times` None: always."""
        self._refusals[command.upper()] = [code, message, times]

    def settle(self, timeout=5.0):
        """Wait until every connection made so far is over: a module's last line (QUIT) is sent
        as it exits, without waiting for the reply, so it may still be on its way."""
        with self._idle:
            self._idle.wait_for(lambda: self.finished >= self.connections, timeout)

    def commands(self):
        """The command keywords received, in order, once the connections are over."""
        self.settle()
        return [line.split(" ", 1)[0] for line in self.received]

    def hs_paths(self):
        return [value for key, value in self.hs_block if key == "HiddenServiceDir"]

    def add_onion_direct(self, expanded=None, detached=True, ports=("80,127.0.0.1:80",)):
        """An ephemeral service some other controller made; returns its service id."""
        expanded = expanded or new_expanded_key()
        sid = onion.onion_address(onion.ed25519_public_from_expanded(expanded))
        self.onions[sid] = {"detached": detached, "ports": list(ports), "key": expanded, "owner": None,
                            "max_streams": None, "client_auth_v3": [], "flags": ["Detach"]}
        return sid

    # -- serving ---------------------------------------------------------------------------------
    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._stop.is_set():
            return
        self._stop.set()
        self._wake_w.send(b"x")
        self._thread.join(5)
        self._server.close()
        self._wake_r.close()
        self._wake_w.close()

    def _wait(self, sock):
        """Until sock is readable (True) or the fake is stopped (False)."""
        while not self._stop.is_set():
            readable, _w, _x = select.select([sock, self._wake_r], [], [], 1.0)
            if sock in readable:
                return True
        return False

    def _serve(self):
        while self._wait(self._server):
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            try:
                self._handle(conn, self.connections)
            except Exception as exc:  # pylint: disable=broad-except
                self.errors.append("connection: %s: %s" % (type(exc).__name__, exc))
            finally:
                conn.close()
                for sid in [s for s, o in self.onions.items() if o["owner"] == self.connections
                            and not o["detached"]]:
                    del self.onions[sid]
                with self._idle:
                    self.finished += 1
                    self._idle.notify_all()

    def _handle(self, conn, number):
        buf = b""
        state = {"authenticated": False, "number": number, "events": set()}
        while True:
            while b"\r\n" not in buf:
                if not self._wait(conn):
                    return
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
            raw, buf = buf.split(b"\r\n", 1)
            line = raw.decode("utf-8")
            self.received.append(line)
            keyword, _sep, rest = line.partition(" ")
            keyword = keyword.upper()
            with self._lock:
                try:
                    reply = self._dispatch(keyword, rest, state)
                except _Refused as exc:
                    reply = ["%s %s" % (exc.code, exc.message)]
                except Exception as exc:  # pylint: disable=broad-except
                    self.errors.append("%s: %s: %s" % (line[:60], type(exc).__name__, exc))
                    reply = ["551 fake controller fault"]
            try:
                conn.sendall(("\r\n".join(reply) + "\r\n").encode("utf-8"))
            except OSError:
                return  # the client closed first (it does not wait for QUIT's reply)
            if keyword == "QUIT" or (keyword == "AUTHENTICATE" and not reply[-1].startswith("250")):
                return

    def _dispatch(self, keyword, rest, state):
        refusal = self._refusals.get(keyword)
        if refusal is not None and keyword not in ("PROTOCOLINFO", "QUIT"):
            code, message, times = refusal
            if times is not None:
                refusal[2] -= 1
                if refusal[2] <= 0:
                    del self._refusals[keyword]
            warnings = []
            if keyword in ("SETCONF", "RESETCONF") and "WARN" in state["events"]:
                warnings = ["650 WARN %s" % w for w in self.setconf_warnings]
            return warnings + ["%s %s" % (code, message)]
        if keyword == "PROTOCOLINFO":
            return ["250-PROTOCOLINFO 1", "250-AUTH METHODS=NULL", '250-VERSION Tor="%s"' % TOR_VERSION, OK]
        if keyword == "QUIT":
            return ["250 closing connection"]
        if keyword == "AUTHENTICATE":
            state["authenticated"] = True
            return [OK]
        if not state["authenticated"]:
            return ["514 Authentication required."]
        handler = getattr(self, "_cmd_" + keyword.lower(), None)
        if handler is None:
            return ['510 Unrecognized command "%s"' % keyword]
        return handler(rest, state)

    # -- GETINFO -----------------------------------------------------------------------------------
    def _info_value(self, key, state):
        if key == "onions/current":
            return "\n".join(s for s, o in self.onions.items() if o["owner"] == state["number"] and not o["detached"])
        if key == "onions/detached":
            return "\n".join(s for s, o in self.onions.items() if o["detached"])
        if key == "config/names" and key not in self.info:
            return "\n".join("%s %s" % (n, "Dependent" if n.startswith("HiddenService") else "String")
                             for n in HS_OPTIONS + SIMPLE_OPTIONS if n not in self.unknown_options)
        if key not in self.info:
            raise _Refused("552", 'Unrecognized key "%s"' % key)
        value = self.info[key]
        if isinstance(value, Error):
            raise _Refused(value.code, value.message)
        return value

    def _cmd_getinfo(self, rest, state):
        keys = rest.split()
        if not keys:
            return [OK]
        lines = []
        for key in keys:
            value = self._info_value(key, state)
            if "\n" in value or "\r" in value:
                lines.append("250+%s=\r\n%s" % (key, _data_block(value)))
            else:
                lines.append("250-%s=%s" % (key, value))
        return lines + [OK]

    # -- configuration -----------------------------------------------------------------------------
    def _canonical(self, key):
        for name in HS_OPTIONS + SIMPLE_OPTIONS + ("HiddenServiceOptions",):
            if name.lower() == key.lower() and name not in self.unknown_options:
                return name
        raise _Refused("552", 'Unrecognized configuration key "%s"' % key)

    def _cmd_getconf(self, rest, state):
        lines = []
        for key in rest.split():
            name = self._canonical(key)
            if name == "HiddenServiceOptions":
                pairs = list(self.hs_block) or [(name, None)]
            elif name in HS_OPTIONS:
                pairs = [(k, v) for k, v in self.hs_block if k == name] or [(name, None)]
            else:
                pairs = [(name, v) for v in self.conf.get(name, [])] or [(name, None)]
            for option, value in pairs:
                if value is None:
                    lines.append(option)
                else:
                    lines.append("%s=%s" % (option, _escape(value) if _needs_escape(value) else value))
        if not lines:
            return [OK]
        return ["250-" + line for line in lines[:-1]] + ["250 " + lines[-1]]

    def _cmd_setconf(self, rest, state):
        return self._set(parse_config_args(rest), state)

    def _cmd_resetconf(self, rest, state):
        return self._set(parse_config_args(rest), state)

    def _set(self, pairs, state):
        hs_pairs, simple = [], {}
        touched_hs = False
        for key, value in pairs:
            name = self._canonical(key)
            if name == "HiddenServiceOptions" or name in HS_OPTIONS:
                touched_hs = True
                if value is not None:
                    hs_pairs.append((name, value))
            else:
                simple.setdefault(name, [])
                if value is not None:
                    simple[name].append(value)
        if touched_hs:
            self._check_hs_block(hs_pairs)
        # applied only when everything validated: SETCONF is atomic
        for name, values in simple.items():
            self.conf[name] = values
        if touched_hs:
            self.hs_block = hs_pairs
            if self.write_keys:
                for path in self.hs_paths():
                    if not os.path.isdir(path):
                        os.mkdir(path, 0o700)
                    write_service_keys(path)
        return [OK]

    @staticmethod
    def _check_hs_block(pairs):
        if pairs and pairs[0][0] != "HiddenServiceDir":
            raise _Refused("553", "Unable to set option: %s with no preceding HiddenServiceDir" % pairs[0][0])
        dirs = [v for k, v in pairs if k == "HiddenServiceDir"]
        if len(set(dirs)) != len(dirs):
            raise _Refused("553", "Unable to set option: Another hidden service is already configured for "
                                  "directory")
        for key, value in pairs:
            if key == "HiddenServicePort":
                virtual = value.split(" ", 1)[0]
                if not virtual.isdigit() or not 1 <= int(virtual) <= 65535:
                    raise _Refused("553", "Unable to set option: Unparseable or out-of-range port in "
                                          "hidden service port configuration.")
            if key == "HiddenServiceVersion" and value != "3":
                raise _Refused("553", "Unable to set option: HiddenServiceVersion must be 3")

    # -- events ------------------------------------------------------------------------------------
    def _cmd_setevents(self, rest, state):
        names = set(rest.upper().split())
        for name in names:
            if name not in EVENTS:
                return ['552 Unrecognized event "%s"' % name]
        state["events"] = names
        self.events = names
        return [OK]

    # -- onion services ----------------------------------------------------------------------------
    def _cmd_add_onion(self, rest, state):
        args = rest.split()
        if not args or ":" not in args[0]:
            return ["512 Missing argument to ADD_ONION"]
        key_type, key_blob = args[0].split(":", 1)
        flags, ports, client_auth, max_streams, pow_args = [], [], [], None, {}
        for arg in args[1:]:
            name, _eq, value = arg.partition("=")
            if name in ("PoWDefensesEnabled", "PoWQueueRate", "PoWQueueBurst") and self.add_onion_pow:
                if not value.isdigit() or (name == "PoWDefensesEnabled" and value not in ("0", "1")):
                    return ["512 Invalid %s" % name]
                pow_args[name] = int(value)
            elif name == "Flags":
                flags = value.split(",")
            elif name == "Port":
                ports.append(value)
            elif name == "ClientAuthV3":
                client_auth.append(value)
            elif name == "MaxStreams":
                max_streams = int(value)
            else:
                return ['513 Invalid argument "%s"' % arg]
        if not ports:
            return ["512 Missing 'Port' argument"]
        if client_auth and "V3Auth" not in flags:
            return ["512 Cannot add ClientAuthV3 without Flags=V3Auth"]
        generated = key_type == "NEW"
        if generated:
            if key_blob not in ("BEST", "ED25519-V3"):
                return ["513 Invalid key type"]
            expanded = new_expanded_key()
        elif key_type == "ED25519-V3":
            try:
                expanded = base64.b64decode(key_blob, validate=True)
            except ValueError:
                return ["512 Failed to decode ED25519-V3 key"]
            if len(expanded) != 64:
                return ["512 Failed to decode ED25519-V3 key"]
        else:
            return ["513 Invalid key type"]
        sid = onion.onion_address(onion.ed25519_public_from_expanded(expanded))
        if sid in self.onions:
            return ["550 Onion address collision"]
        self.onions[sid] = {"detached": "Detach" in flags, "ports": ports, "key": expanded,
                            "owner": state["number"], "max_streams": max_streams,
                            "client_auth_v3": client_auth, "flags": flags, "pow": pow_args}
        lines = ["250-ServiceID=%s" % sid]
        if generated and "DiscardPK" not in flags:
            lines.append("250-PrivateKey=%s" % onion.key_blob(expanded))
        return lines + [OK]

    def _cmd_del_onion(self, rest, state):
        sid = rest.strip()
        if sid not in self.onions:
            return ["552 Unknown Onion Service id"]
        del self.onions[sid]
        return [OK]
