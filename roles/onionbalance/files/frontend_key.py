# The onionbalance role's frontend key file (run on the frontend host by Debian's python3, which has
# Onionbalance's own libraries: the address is the one Onionbalance derives from the file).
# argv: PATH apply|check OWNER GROUP stdin|no-stdin; stdin: an ED25519-V3:<base64> key from a vault (read only
# with "stdin": over ssh with a tty, a stdin with nothing to send is never closed).
# Prints one JSON object: {"changed", "generated", "onion_address"} or {"failed": true, "msg"}.
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


def main():
    path, mode, owner, group = sys.argv[1:5]
    blob = sys.stdin.read().strip() if sys.argv[5:6] == ["stdin"] else ""
    wanted = None
    if blob:
        text = blob[len("ED25519-V3:"):] if blob.startswith("ED25519-V3:") else blob
        try:
            wanted = base64.b64decode(text, validate=True)
        except ValueError:
            wanted = b""
        if len(wanted) != 64:
            out(failed=True, msg="onionbalance_private_key must be ED25519-V3:<base64 of a 64-byte expanded "
                                 "ed25519 key> (the form of onion_service_private_keys)")
    current = None
    if os.path.exists(path):
        with open(path, "rb") as handle:
            data = handle.read(200)
        if len(data) != len(HEADER) + 64 or not data.startswith(HEADER):
            out(failed=True, msg="%s is not a tor ed25519 secret key file (hs_ed25519_secret_key format); move it "
                                 "away or give the key in onionbalance_private_key" % path)
        current = data[len(HEADER):]
    target = wanted or current
    generated = target is None
    if generated:
        if mode == "check":
            out(changed=True, generated=True, onion_address=None)
        seed = bytearray(hashlib.sha512(os.urandom(32)).digest())
        seed[0] &= 248
        seed[31] &= 127
        seed[31] |= 64
        target = bytes(seed)
    changed = target != current
    if changed and mode != "check":
        directory = os.path.dirname(path)
        tmp = os.path.join(directory, ".%s.%d.tmp" % (os.path.basename(path), os.getpid()))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(HEADER + target)
            handle.flush()
            os.fsync(handle.fileno())
        os.chown(tmp, pwd.getpwnam(owner).pw_uid, grp.getgrnam(group).gr_gid)
        os.replace(tmp, path)
    out(changed=changed, generated=generated, onion_address=address(target))


main()
