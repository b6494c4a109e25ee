# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stateful fake control port (fake_controller.FakeController) with a client tor's
credentials for onion services: ONION_CLIENT_AUTH_ADD / _REMOVE / _VIEW answered the way tor
0.4.9.11 answers them (control_hs.c and hs_client.c), for running tor_onion_client_auth's main()
without tor.

* ``client_auths``: service id -> {"key": 32 bytes, "name": str or None, "permanent": bool};
* ``conf["ClientOnionAuthDir"]``: [path] or []; a Permanent credential is written there as
  ``<id>.auth_private`` (``<id>:descriptor:x25519:<base32 lower case>``, mode 0600, no newline),
  and REMOVE of a Permanent one deletes the first file (in directory order) that names the service;
* tor's quirks kept: a ClientName over 16 characters gets two replies (512, then the ADD's own);
  an all-zero key is refused with the key quoted; a credential replaced without Flags=Permanent
  leaves the old file; ``reload()`` (also run by every SETCONF/RESETCONF, as tor's options_act
  does) replaces every credential with the directory's files: non-permanent ones and names are
  dropped; two files naming one service fail the reload.

    with FakeClientAuth(tmp_path / "tordata", torrc, auth_dir=str(tmp_path / "auth")) as fake:
        module args: control_port=fake.port
"""

import base64
import os

from ansible_collections.onionlab.tor.plugins.module_utils._tor import onion
from harness.fake_controller import OK, FakeController, _Refused

NAME_MAX = 16


def _valid_sid(text):
    return onion.is_service_id(text)


def _kvline(words, command):
    """tor's kvline_parse without KV_QUOTED: every word key=value, a value up to the next space."""
    pairs = []
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or not key or value.startswith('"'):
            raise _Refused("512", "Bad arguments to %s: Cannot parse keyword argument(s)" % command)
        pairs.append((key, value))
    return pairs


class FakeClientAuth(FakeController):
    def __init__(self, data_dir, config_file=None, auth_dir=None, **kwargs):
        FakeController.__init__(self, data_dir, config_file, **kwargs)
        self.conf["ClientOnionAuthDir"] = [auth_dir] if auth_dir else []
        self.client_auths = {}
        if auth_dir and os.path.isdir(auth_dir):
            self.reload()

    @property
    def auth_dir(self):
        values = self.conf.get("ClientOnionAuthDir") or []
        return values[0] if values else None

    # -- what tor does at start and on reload ----------------------------------------------------------
    def _files(self):
        found = []
        for name in os.listdir(self.auth_dir):
            if not name.endswith(".auth_private") or name == ".auth_private":
                continue
            path = os.path.join(self.auth_dir, name)
            try:
                with open(path) as handle:
                    fields = [f.strip() for f in handle.read().split(":")]
            except OSError:
                continue
            if len(fields) != 4 or fields[1:3] != ["descriptor", "x25519"] or len(fields[3]) != 52:
                continue
            try:
                key = base64.b32decode(fields[3].upper() + "====")
            except ValueError:
                continue
            if key == bytes(32) or not _valid_sid(fields[0]):
                continue
            found.append((name, fields[0], key))
        return found

    def reload(self):
        """tor's hs_config_client_authorization(): the directory's files replace every credential."""
        loaded = {}
        if self.auth_dir:
            for _name, sid, key in self._files():
                if sid in loaded:
                    raise _Refused("553", "Duplicate authorization for the same hidden service address")
                loaded[sid] = {"key": key, "name": None, "permanent": True}
        self.client_auths = loaded

    def _set(self, pairs, state):
        reply = FakeController._set(self, pairs, state)
        self.reload()
        return reply

    def _canonical(self, key):
        if key.lower() == "clientonionauthdir":
            return "ClientOnionAuthDir"
        return FakeController._canonical(self, key)

    def _cmd_getconf(self, rest, state):
        if rest.strip().lower() == "clientonionauthdir":
            return ["250 ClientOnionAuthDir=%s" % self.auth_dir if self.auth_dir else "250 ClientOnionAuthDir"]
        return FakeController._cmd_getconf(self, rest, state)

    # -- the commands ---------------------------------------------------------------------------------
    def _cmd_onion_client_auth_add(self, rest, state):
        command = "ONION_CLIENT_AUTH_ADD"
        words = rest.split()
        if len(words) < 2:
            return ["512 Incomplete ONION_CLIENT_AUTH_ADD command"]
        sid, key_arg, extra = words[0], words[1], words[2:]
        pairs = _kvline(extra, command)
        if not _valid_sid(sid):
            return ['512 Invalid v3 address "%s"' % sid]
        key_parts = [p for p in key_arg.split(":") if p]
        if len(key_parts) != 2:
            return ["512 Invalid key type/blob"]
        key_type, blob = key_parts
        if key_type.lower() != "x25519":
            return ['552 Unrecognized key type "%s"' % key_type]
        try:
            key = base64.b64decode(blob + "=" * (-len(blob) % 4))
        except ValueError:
            key = b""
        if len(key) != 32:
            return ["512 Failed to decode x25519 private key"]
        if key == bytes(32):
            return ['553 Invalid private key "%s"' % blob]
        name, permanent, early = None, False, []
        for k, value in pairs:
            if k.lower().startswith("flags"):
                flags = [f for f in value.split(",") if f]
                if not flags:
                    return ["512 Invalid 'Flags' argument"]
                for flag in flags:
                    if flag.lower() != "permanent":
                        return ["512 Invalid 'Flags' argument: \"%s\"" % flag]
                permanent = True
            if k.lower() == "clientname":
                if len(value) > NAME_MAX:
                    # tor 0.4.9 answers and carries on: a second reply follows
                    early.append("512 ClientName longer than %d chars" % NAME_MAX)
                name = value
        if permanent:
            if not self.auth_dir or not os.path.isdir(self.auth_dir):
                return early + ['553 Unable to store creds for "%s"' % sid]
            path = os.path.join(self.auth_dir, sid + ".auth_private")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                text = "%s:descriptor:x25519:%s" % (sid, base64.b32encode(key).decode().rstrip("=").lower())
                os.write(fd, text.encode())
            finally:
                os.close(fd)
        existed = sid in self.client_auths
        self.client_auths[sid] = {"key": key, "name": name, "permanent": permanent}
        return early + (["251 Client for onion existed and replaced"] if existed else [OK])

    def _cmd_onion_client_auth_remove(self, rest, state):
        words = rest.split()
        if not words:
            return ["512 Incomplete ONION_CLIENT_AUTH_REMOVE command"]
        sid = words[0]
        if not _valid_sid(sid):
            return ['512 Invalid v3 address "%s"' % sid]
        cred = self.client_auths.pop(sid, None)
        if cred is None:
            return ['251 No credentials for "%s"' % sid]
        if cred["permanent"] and self.auth_dir:
            for name, named, _key in self._files():
                if named == sid:
                    os.unlink(os.path.join(self.auth_dir, name))
                    break
        return [OK]

    def _cmd_onion_client_auth_view(self, rest, state):
        words = rest.split()
        sid = words[0] if words else None
        if sid is not None and not _valid_sid(sid):
            return ['512 Invalid v3 address "%s"' % sid]
        lines = []
        for named, cred in self.client_auths.items():
            if sid is not None and named != sid:
                continue
            line = "CLIENT %s x25519:%s" % (named, base64.b64encode(cred["key"]).decode())
            if cred["permanent"]:
                line += " Flags=Permanent"
            if cred["name"]:
                line += " ClientName=%s" % cred["name"]
            lines.append(line)
        head = "ONION_CLIENT_AUTH_VIEW" + (" " + sid if sid else "")
        return ["250-" + head] + ["250-" + line for line in sorted(lines)] + [OK]


__all__ = ["FakeClientAuth"]
