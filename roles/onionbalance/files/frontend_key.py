# The onionbalance role's frontend key file (run on the frontend host by Debian's python3, which has
# Onionbalance's own libraries: every address is the one Onionbalance derives from the key).
# argv: PATH apply|check OWNER GROUP HOST ESCROW_PATH restore|no-restore stdin|no-stdin
# stdin (read only with "stdin": over ssh with a tty, a stdin with nothing to send is never closed): a JSON
# object {"vault": "ED25519-V3:<base64>" (onionbalance_private_key), "escrow": "<base64 of the escrowed
# hs_ed25519_secret_key file>"}, each only when there is one.
# Every check comes before any write: the key that would be on the host (the vault's, else the host's, else
# the escrowed one restored, else a new one) must have the escrowed key's address (derived from that key,
# not from the hostname file beside it), and a vault key never replaces a different key on the host; a
# refusal names both addresses and leaves the host's file as it was.
# Prints one JSON object: {"changed", "generated", "restored", "onion_address"} or {"failed": true, "msg"};
# never a key.
import base64
import grp
import hashlib
import json
import os
import pwd
import sys

HEADER = b"== ed25519v1-secret: type0 ==\x00\x00\x00"


def out(**kw):
    print(json.dumps(kw))
    sys.exit(1 if kw.get("failed") else 0)


def address(expanded):
    from onionbalance.hs_v3 import tor_ed25519
    from cryptography.hazmat.primitives import serialization
    from stem.descriptor.hidden_service import HiddenServiceDescriptorV3
    key = tor_ed25519.load_tor_key_from_disk(HEADER + expanded)
    raw = key.public_key().public_bytes(encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw)
    return HiddenServiceDescriptorV3.address_from_identity_key(raw)


def key_file_bytes(data):
    """The 64-byte expanded key of a tor hs_ed25519_secret_key file's bytes, or None."""
    if len(data) != len(HEADER) + 64 or not data.startswith(HEADER):
        return None
    return data[len(HEADER):]


def b64(text):
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        return b""


def main():
    path, mode, owner, group, host, escrow_path, restore = sys.argv[1:8]
    given = json.loads(sys.stdin.read() or "{}") if sys.argv[8:9] == ["stdin"] else {}
    wanted = None
    if given.get("vault"):
        blob = given["vault"].strip()
        wanted = b64(blob[len("ED25519-V3:"):] if blob.startswith("ED25519-V3:") else blob)
        if len(wanted) != 64:
            out(failed=True, msg="onionbalance_private_key must be ED25519-V3:<base64 of a 64-byte expanded "
                                 "ed25519 key> (the form of onion_service_private_keys)")
    escrowed = None
    if given.get("escrow") is not None:
        escrowed = key_file_bytes(b64(given["escrow"]))
        if escrowed is None:
            out(failed=True, msg="the escrowed frontend key %s is not a tor ed25519 secret key file "
                                 "(hs_ed25519_secret_key format); nothing was changed. Put the escrowed key back "
                                 "there, or move that file away (keep a copy)" % escrow_path)
    current = None
    if os.path.lexists(path):
        if os.path.islink(path) or not os.path.isfile(path):
            out(failed=True, msg="%s is not a regular file (a symlink or something else); nothing was changed: "
                                 "move it away" % path)
        with open(path, "rb") as handle:
            current = key_file_bytes(handle.read(200))
        if current is None:
            out(failed=True, msg="%s is not a tor ed25519 secret key file (hs_ed25519_secret_key format); move it "
                                 "away or give the key in onionbalance_private_key" % path)
    keep = "Keep the one you want: move the other away (keep a copy)"
    escrow_is = None if escrowed is None else "the escrowed one (%s, address %s)" % (escrow_path, address(escrowed))
    on_host = None if current is None else "the key on %s (%s, address %s)" % (host, path, address(current))

    # every check before anything is written
    restored = generated = False
    if wanted is not None:
        target = wanted
        vault = "the frontend key in onionbalance_private_key (address %s)" % address(wanted)
        if escrowed is not None and address(wanted) != address(escrowed):
            out(failed=True, msg="%s is not %s; nothing was changed: %s. %s" % (
                vault, escrow_is, "%s is still there" % on_host if on_host else
                "%s has no key at %s yet" % (host, path), keep))
        if current is not None and address(current) != address(wanted):
            out(failed=True, msg="%s is not %s; nothing was changed: a vault key is installed only where the host "
                                 "has none or the same one. Keep the one you want: move the host's key away (keep a "
                                 "copy) to install the vault's, or give the host's" % (vault, on_host))
    elif current is not None:
        target = current
        if escrowed is not None and address(current) != address(escrowed):
            out(failed=True, msg="the frontend key on %s (%s, address %s) is not %s; nothing was changed. %s" % (
                host, path, address(current), escrow_is, keep))
    elif escrowed is not None and restore == "restore":
        target, restored = escrowed, True
    elif escrowed is not None:
        out(failed=True, msg="%s has no frontend key at %s and onionbalance_restore is false: a new key would not be "
                             "%s; nothing was changed. Set onionbalance_restore: true to get the escrowed key back, "
                             "or move the escrowed key away (keep a copy) to make a new one" % (host, path, escrow_is))
    else:
        target, generated = None, True

    if generated:
        if mode == "check":
            out(changed=True, generated=True, restored=False, onion_address=None)
        seed = bytearray(hashlib.sha512(os.urandom(32)).digest())
        seed[0] &= 248
        seed[31] &= 127
        seed[31] |= 64
        target = bytes(seed)
    changed = target != current
    if changed and mode != "check":
        directory = os.path.dirname(path)
        tmp = os.path.join(directory, ".%s.%d.tmp" % (os.path.basename(path), os.getpid()))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(HEADER + target)
                handle.flush()
                os.fsync(handle.fileno())
            os.chown(tmp, pwd.getpwnam(owner).pw_uid, grp.getgrnam(group).gr_gid, follow_symlinks=False)
            os.replace(tmp, path)
        except BaseException:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            raise
    out(changed=changed, generated=generated, restored=restored, onion_address=address(target))


main()
