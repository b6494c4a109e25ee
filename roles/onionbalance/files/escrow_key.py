# The onionbalance role's escrow write (run on the controller by ansible-playbook's python).
# argv: PATH (the escrowed hs_ed25519_secret_key; its directory exists, 0700); stdin: the key, as
# ED25519-V3:<base64 of the 64-byte expanded key> (onionbalance_private_key) or the base64 of a whole
# hs_ed25519_secret_key file (the host's, read by slurp).
# The file is 0600 from its first byte (created O_EXCL|O_NOFOLLOW beside it, then linked into place: never over
# an existing file, never through a symlink, never half written). Prints one JSON object: {"changed"} or
# {"failed": true, "msg"}; never a key.
import base64
import json
import os
import sys

HEADER = b"== ed25519v1-secret: type0 ==\x00\x00\x00"


def out(**kw):
    print(json.dumps(kw))
    sys.exit(1 if kw.get("failed") else 0)


def main():
    path = sys.argv[1]
    text = sys.stdin.read().strip()
    if text.startswith("ED25519-V3:"):
        text = text[len("ED25519-V3:"):]
    try:
        data = base64.b64decode(text, validate=True)
    except ValueError:
        data = b""
    if len(data) == 64:
        data = HEADER + data
    if len(data) != len(HEADER) + 64 or not data.startswith(HEADER):
        out(failed=True, msg="the frontend key to escrow in %s is not a tor ed25519 secret key; nothing was "
                             "written" % path)
    directory, name = os.path.split(path)
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    tmp = ".%s.%d.tmp" % (name, os.getpid())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
            except FileExistsError:
                try:
                    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
                    with os.fdopen(fd, "rb") as handle:
                        there = handle.read(200)
                except OSError:
                    there = None
                if there == data:
                    out(changed=False)
                out(failed=True, msg="%s appeared while this run escrowed the frontend key (another host or run "
                                     "with the same onionbalance_name?) and holds another key; nothing was written. "
                                     "Run again: the host's key is then checked against it" % path)
            os.fsync(dfd)
        finally:
            os.unlink(tmp, dir_fd=dfd)
    finally:
        os.close(dfd)
    out(changed=True)


main()
