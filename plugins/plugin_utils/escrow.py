# -*- coding: utf-8 -*-
# Copyright (c) 2026, onionlab.tor contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's escrow of the onion_service and onion_client roles, the one place that knows its layout
and writes its files:

  DIR/HOST/SERVICE/hs_ed25519_secret_key            a service's key (SERVICE: the directory, NAME or NAME.kN)
  DIR/HOST/SERVICE/hostname                         its address
  DIR/HOST/SERVICE/replaced/ADDRESS/...             an escrowed key the host no longer serves
  DIR/HOST/SERVICE/clients/CLIENT.KEY.x25519        a client's x25519 private key (KEY: its generation)

Directories 0700, files 0600, every file written by `put` (through files.atomic_write, a uniquely
named temporary file renamed into place), so that two runs writing at once never remove each other's file
and a reader never sees half a key; a client key is linked into place instead, never replacing one.

Nothing below DIR is read, made or chmodded through a symbolic link (DIR itself may be one): each name below it
is opened with files.open_dir / files.read_regular against its parent's descriptor, so a link in place of a
host's or service's directory, or of a key or hostname file, is refused (EscrowError, naming it) instead of
handing one service another's key.

An escrowed service key is never dropped: when a host serves another key in a directory whose
key is escrowed (restore off on a rebuilt host, a vault key that is not the escrowed one), the
escrowed key moves to SERVICE/replaced/<its address>/ first, and the run says so.

This is a private plugin_utils file of onionlab.tor; its API may change at any time."""

from __future__ import annotations

import errno
import os
import stat

from ansible_collections.onionlab.tor.plugins.module_utils._tor import files
from ansible_collections.onionlab.tor.plugins.module_utils._tor import client_auth, onion
from ansible_collections.onionlab.tor.plugins.module_utils._tor.errors import TorError

KEY_FILE = "hs_ed25519_secret_key"
HOSTNAME = "hostname"
SEALED_FILES = (KEY_FILE,)   # with a vault secret; client keys too (client_key); an address is public
REPLACED = "replaced"
CLIENTS = "clients"


class EscrowError(ValueError):
    """A file of the escrow that cannot be read, made or written; the message names the file, never a key."""


VAULT_HEADER = b"$ANSIBLE_VAULT;"
HOW_TO_GIVE_A_VAULT_PASSWORD = ("give the run a vault password (--ask-vault-pass, --vault-password-file FILE or "
                                "--vault-id ID@FILE, or ANSIBLE_VAULT_PASSWORD_FILE)")


def is_sealed(data):
    """Whether the bytes of an escrow file are ansible-vault's (its header)."""
    return data is not None and data.lstrip()[:len(VAULT_HEADER)] == VAULT_HEADER


class Vault(object):
    """The escrow's secret files at rest: ansible-vault (ansible-core's VaultLib with the run's vault secrets).
    `lib`: the run's VaultLib (an action plugin's or lookup's loader has it), None or one without secrets when the
    run has no vault password; `vault_id`: the vault id to encrypt with (a role variable), else the run's first.
    seal(bytes) -> the vault text (a new salt each time: compare what open() gives, never the sealed bytes);
    open(bytes) -> the plaintext of a sealed file, a plaintext file's bytes as they are (the escrow of an older
    run). Every message names the file and the vault id, never a key."""

    def __init__(self, lib=None, vault_id=None):
        self.lib = lib if lib is not None and getattr(lib, "secrets", None) else None
        self.vault_id = vault_id or None
        self._secret = None

    @property
    def active(self):
        """Whether the run has a vault secret: the escrow's secret files are written sealed."""
        return self.lib is not None

    def _encrypt_secret(self, path):
        if self._secret is None:
            from ansible.errors import AnsibleError
            from ansible.parsing.vault import match_encrypt_secret
            try:
                found = match_encrypt_secret(self.lib.secrets, encrypt_vault_id=self.vault_id)
            except AnsibleError:
                found = None
            if not found:
                raise EscrowError("cannot encrypt %s: the run has no vault secret of vault id %r (its vault ids: %s)"
                                  % (path, self.vault_id, ", ".join(sorted(str(pair[0]) for pair in self.lib.secrets))))
            self._secret = found
        return self._secret

    def seal(self, data, path):
        vault_id, secret = self._encrypt_secret(path)
        return self.lib.encrypt(data, secret=secret, vault_id=vault_id)

    def open(self, data, path):
        if not is_sealed(data):
            return data
        if self.lib is None:
            raise EscrowError("%s is encrypted with ansible-vault and this run has no vault password: %s"
                              % (path, HOW_TO_GIVE_A_VAULT_PASSWORD))
        from ansible.errors import AnsibleError
        try:
            return self.lib.decrypt(data)
        except AnsibleError:
            raise EscrowError("%s is encrypted with ansible-vault and none of this run's vault secrets (vault ids: %s) "
                              "opens it: another vault password, or a torn file"
                              % (path, ", ".join(sorted(str(pair[0]) for pair in self.lib.secrets))))


NO_VAULT = Vault()


def _git_work_tree(path):
    """The top of the git work tree that holds path (a directory that may not exist yet: its nearest existing
    ancestor is asked), or None. Found by walking up to a .git entry (a directory, or a file in a worktree or
    submodule), without running git."""
    here = os.path.abspath(path)
    while not os.path.isdir(here):
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


class VaultIdWithoutPassword(EscrowError):
    """A vault id was chosen and the run has no vault password."""


def run_vault(lib, vault_id, backup_dir, plaintext_allowed, writes):
    """(the escrow's Vault for this run, the warning to give once or None): the run's vault secrets (`lib`, a
    loader's VaultLib) and the chosen vault id. A vault id without a password is a VaultIdWithoutPassword; a run
    without a vault secret that `writes` keys is refused by plaintext_problem (an EscrowError with its message)."""
    vault = Vault(lib, vault_id)
    if not vault.active and vault_id:
        raise VaultIdWithoutPassword("onion_service_backup_vault_id is %r, but this run has no vault password: %s"
                                     % (vault_id, HOW_TO_GIVE_A_VAULT_PASSWORD))
    if vault.active or not writes:
        return vault, None
    problem, warning = plaintext_problem(backup_dir, plaintext_allowed)
    if problem:
        raise EscrowError(problem)
    return vault, warning


def plaintext_problem(backup_dir, allowed=False, run=None):
    """Why the escrow must not be written in plaintext at backup_dir (the run has no vault secret), or None; then
    the second value is the warning to give instead (outside git: plaintext as before, said once). Inside a git
    work tree a plaintext escrow is refused unless git ignores the directory (`git check-ignore`) or `allowed`
    (onion_service_backup_plaintext) says so: a `git add .` would publish every key. run(argv, cwd) -> rc, for
    git (subprocess by default)."""
    if allowed:
        return None, None
    top = _git_work_tree(backup_dir)
    how = ("set a vault password for the run %s; onion_service_backup_vault_id picks the vault id): the escrow "
           "is then written with ansible-vault" % HOW_TO_GIVE_A_VAULT_PASSWORD[len("give the run a vault password "):-1])
    if top is None:
        return None, ("the escrow %s holds onion service and client keys in plaintext (this run has no vault "
                      "password): %s, or keep the directory encrypted yourself" % (backup_dir, how))
    if run is None:
        import subprocess

        def run(argv, cwd):
            try:
                return subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, check=False).returncode
            except OSError:
                return 127
    # asked as a directory (a trailing slash): "onion-keys/" in .gitignore matches only directories, and the
    # escrow may not exist yet
    rc = run(["git", "check-ignore", "-q", "--no-index", os.path.abspath(backup_dir).rstrip("/") + "/"], top)
    if rc == 0:
        return None, None
    return ("the escrow %s is inside the git work tree %s and git does not ignore it%s, and this run has no vault "
            "password: its keys would be written in plaintext where a `git add` publishes them. Either %s; or add "
            "the directory to .gitignore; or set onion_service_backup_plaintext: true to write plaintext keys there "
            "anyway. Nothing was changed."
            % (backup_dir, top, "" if rc == 1 else " (git could not say: rc %d)" % rc, how)), None


def client_key_file(backup_dir, server, service, client, key=1):
    """Where the escrow keeps the private key of `client` (generation `key`) of `service` on `server`."""
    return os.path.join(backup_dir, server, service, CLIENTS, "%s.%d.x25519" % (client, key))


def hostname_file(backup_dir, server, directory):
    """Where the escrow keeps the address of the service directory `directory` on `server`."""
    return os.path.join(backup_dir, server, directory, HOSTNAME)


def read_hostname(backup_dir, server, directory):
    """(the address in the escrow's hostname file or None, the file's path). A link below the escrow's
    root is an EscrowError (read_below)."""
    path = hostname_file(backup_dir, server, directory)
    try:
        data = read_below(backup_dir, [server, directory], HOSTNAME, 200)
    except OSError:
        return None, path
    return (None if data is None else data.decode("ascii", "replace").strip()), path


# -- below the escrow's root: no symbolic link followed ---------------------------------------------------------
_ROOT_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_REFUSED = {errno.ELOOP: "a symbolic link", errno.ENOTDIR: "not a directory", errno.EINVAL: "not a regular file",
            getattr(errno, "EMLINK", -1): "a symbolic link"}


def _refusal(exc, path, root, name, dir_fd):
    """The EscrowError of the name `name` in dir_fd (path below the escrow's root) that O_NOFOLLOW or O_DIRECTORY
    refused, or that is not a regular file: a link or not what the layout has there; None for another error."""
    what = _REFUSED.get(exc.errno)
    if what is None:
        return None
    try:   # Linux says ENOTDIR for a link opened with O_DIRECTORY|O_NOFOLLOW
        if stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode):
            what = "a symbolic link"
    except OSError:
        pass
    return EscrowError("%s is %s: nothing below the escrow's directory %s is followed through a link (a linked "
                       "directory or key file could give one service another's key); put the directory or file "
                       "itself there" % (path, what, root))


def _walk(root, parts, make=False):
    """(a descriptor of the directory root/parts..., whether anything was made or changed): root opened as it
    is (it may be a link), each name below it through its parent's descriptor, never through a link. make:
    the missing directories made and each one's mode made 0700 (root's too); otherwise (None, False) when
    one is missing."""
    changed = False
    if make:
        make_dirs(root)
    try:
        fd = os.open(root, _ROOT_FLAGS)
    except FileNotFoundError:
        if make:
            raise
        return None, False
    path = root
    try:
        if make and stat.S_IMODE(os.fstat(fd).st_mode) != 0o700:
            os.fchmod(fd, 0o700)
            changed = True
        for part in parts:
            path = os.path.join(path, part)
            if make:
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                    changed = True
                except FileExistsError:
                    pass
            try:
                child = files.open_dir(part, dir_fd=fd, shown=path)
            except FileNotFoundError:
                if make:
                    raise
                os.close(fd)
                return None, False
            except OSError as exc:
                raise _refusal(exc, path, root, part, fd) or exc
            os.close(fd)
            fd = child
            if make and stat.S_IMODE(os.fstat(fd).st_mode) != 0o700:
                os.fchmod(fd, 0o700)
                changed = True
    except BaseException:
        os.close(fd)
        raise
    return fd, changed


def read_below(root, parts, filename, limit=4096, with_stat=False):
    """The bytes (at most limit) of root/parts.../filename, or None when it or a directory on the way does
    not exist; (bytes, os.stat_result) with with_stat. Nothing below root is followed through a link: a
    link, or a name that is not what the layout has there, is an EscrowError naming it; other OSErrors as
    they come."""
    fd = _walk(root, parts)[0]
    if fd is None:
        return None
    path = os.path.join(root, *(list(parts) + [filename]))
    try:
        data, st = files.read_regular(filename, limit, dir_fd=fd, shown=path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refusal(exc, path, root, filename, fd) or exc
    finally:
        os.close(fd)
    return (data, st) if with_stat else data


def make_dirs(directory):
    """The missing directories of `directory`, 0700 (existing ones are left as they are)."""
    if os.path.isdir(directory):
        return
    parent = os.path.dirname(directory)
    if parent and parent != directory:
        make_dirs(parent)
    try:
        os.mkdir(directory, 0o700)
    except OSError as exc:
        if exc.errno != errno.EEXIST or not os.path.isdir(directory):
            raise


def put(path, data, replace=True):
    """The escrow's one writer: `data` (bytes) in the file `path`, 0600, complete or not at all. With
    replace=False an existing file is kept (written under a unique name, then linked into place: os.link
    never replaces a file); returns whether `data` got there."""
    if replace:
        files.atomic_write(path, data, 0o600)
        return True
    tmp = os.path.join(os.path.dirname(path) or ".",
                       ".%s.%d.%s.tmp" % (os.path.basename(path), os.getpid(), os.urandom(4).hex()))
    files.atomic_write(tmp, data, 0o600)
    try:
        os.link(tmp, path)
        return True
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise
        return False
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


# -- client keys (x25519): read, or made once ---------------------------------------------------------------
def new_client_key():
    """32 random bytes clamped as RFC 7748's decodeScalar25519 (tor clamps again; same key), base32."""
    raw = bytearray(os.urandom(32))
    raw[0] &= 248
    raw[31] &= 127
    raw[31] |= 64
    return onion.b32(bytes(raw))


def read_client_key(path, vault=NO_VAULT, reseal=True):
    """The client key in `path` (checked, base32 upper case; opened with `vault` when sealed), or None when the
    file does not exist. An older plaintext file is sealed in place when the run has a vault secret, unless
    reseal=False (the restore drill writes nothing)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise EscrowError("cannot read the key file %s: %s" % (path, exc.strerror))
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(4096)
    except OSError as exc:
        raise EscrowError("cannot read the key file %s: %s" % (path, exc.strerror))
    sealed = is_sealed(data)
    data = vault.open(data, path)
    try:
        raw = client_auth.parse_private_key(data.decode("ascii").strip(), what="the key")
    except (UnicodeDecodeError, TorError, ValueError):
        raise EscrowError("the key file %s does not hold a client key (52 base32 characters, an x25519 private "
                          "key)" % path)
    key = onion.b32(raw)
    if reseal and vault.active and not sealed:
        # an older run's plaintext key, sealed now that the run has a vault secret (the same key)
        try:
            put(path, vault.seal((key + "\n").encode("ascii"), path))
        except OSError as exc:
            raise EscrowError("cannot write the key file %s: %s" % (path, exc.strerror))
    return key


def client_key(path, vault=NO_VAULT):
    """The client key in `path`, made there (missing directories 0700) when there is none, sealed with `vault`
    when the run has a vault secret. Of two runs making it at once, the second reads the first one's key
    (put(replace=False))."""
    key = read_client_key(path, vault)
    if key is not None:
        return key
    directory = os.path.dirname(path) or "."
    try:
        make_dirs(directory)
    except OSError as exc:
        raise EscrowError("cannot create the directory %s: %s" % (directory, exc.strerror))
    key = new_client_key()
    data = (key + "\n").encode("ascii")
    try:
        if put(path, vault.seal(data, path) if vault.active else data, replace=False):
            return key
    except OSError as exc:
        raise EscrowError("cannot write the key file %s: %s" % (path, exc.strerror))
    key = read_client_key(path, vault)   # another run was first: its key wins
    if key is None:
        raise EscrowError("the key file %s vanished while it was written" % path)
    return key


def name_problem(name, what):
    """Why `name` cannot be one directory of the escrow (an inventory host name, a service name), or None."""
    text = str(name)
    if not text or text in (".", "..") or "/" in text or "\0" in text:
        return ("the %s %r cannot name a directory of the escrow (empty, '.', '..', or with '/' or a NUL "
                "character)" % (what, text))
    return None


def key_address(data):
    """The onion address of a tor secret key file's bytes, or None when they are not one."""
    header = onion.SECRET_HEADER
    if data is None or len(data) != len(header) + 64 or not data.startswith(header):
        return None
    return onion.onion_address(onion.ed25519_public_from_expanded(data[len(header):])) + ".onion"


class Escrow(object):
    """The escrow of one host."""

    def __init__(self, backup_dir, host, vault=NO_VAULT):
        problem = name_problem(host, "inventory host name")
        if problem:
            raise ValueError(problem)
        self.vault = vault
        self.root = backup_dir
        self.host = host
        self.host_dir = os.path.join(backup_dir, host)
        self.changed = False

    def path(self, name, *rest):
        return os.path.join(self.host_dir, name, *rest)

    def _parts(self, name):
        return [self.host] + [part for part in name.split("/") if part]

    def read(self, name, filename, with_stat=False):
        """The bytes of service directory `name`'s file (opened with the vault when sealed), or None; never
        through a link below the root (EscrowError, naming it)."""
        found = self._read_sealed(name, filename)
        if found is None:
            return None
        data, st, _sealed = found
        return (data, st) if with_stat else data

    def _read_sealed(self, name, filename):
        """(plaintext, stat, whether the file is sealed), or None."""
        found = read_below(self.root, self._parts(name), filename, with_stat=True)
        if found is None:
            return None
        raw, st = found
        return self.vault.open(raw, self.path(name, filename)), st, is_sealed(raw)

    def read_with_seal(self, name, filename):
        """(the bytes of service directory `name`'s file, opened, or None; whether the file is sealed, or None when
        there is none): one read."""
        found = self._read_sealed(name, filename)
        return (None, None) if found is None else (found[0], found[2])

    def sealed(self, name, filename):
        """Whether service directory `name`'s file is sealed with ansible-vault (None when it does not exist)."""
        raw = read_below(self.root, self._parts(name), filename)
        return None if raw is None else is_sealed(raw)

    def directories(self, name):
        """The root, the host's directory and service directory `name` (and those between), made when missing
        and 0700, none of them below the root through a link (EscrowError)."""
        fd, changed = _walk(self.root, self._parts(name), make=True)
        os.close(fd)
        self.changed = self.changed or changed

    def write(self, name, filename, data):
        """The file (0600), when its content or mode differs; a secret file (SEALED_FILES) sealed with the vault
        when the run has a vault secret, and an older plaintext one sealed then even when its content is the
        same. A sealed file is never written back as plaintext: without a vault secret it cannot be read (read
        raises EscrowError first)."""
        self.directories(name)
        path = self.path(name, filename)
        seal = self.vault.active and filename in SEALED_FILES
        current = self._read_sealed(name, filename)
        if current is not None and current[0] == data and (current[2] or not seal):
            if stat.S_IMODE(current[1].st_mode) != 0o600:
                files.fix_file(path, 0o600)
                self.changed = True
            return
        put(path, self.vault.seal(data, path) if seal else data)
        self.changed = True

    def key_problem(self, name, data, hostname):
        """Why the escrowed key file `data` of service directory `name` must not be restored, or None: it must
        be a tor ed25519 secret key file whose address (the public key derived from the expanded secret key)
        is the escrow's address of `name` (its hostname file's bytes `hostname`). The message names the files
        and addresses, never the key."""
        key_path, host_path = self.path(name, KEY_FILE), self.path(name, HOSTNAME)
        address = key_address(data)
        if address is None:
            return ("%s is not a tor ed25519 secret key file (%d bytes; one is %d: the header and the 64-byte "
                    "expanded key), truncated or damaged" % (key_path, len(data), len(onion.SECRET_HEADER) + 64))
        if hostname is None:
            return ("the escrow holds no %s beside %s, so the key's address (%s) cannot be checked against the "
                    "service's" % (host_path, key_path, address))
        escrowed = hostname.decode("ascii", "replace").strip()
        if escrowed == address:
            return None
        if not (escrowed.endswith(".onion") and onion.SERVICE_ID_RE.match(escrowed[:-6])):
            return "%s is not an onion address, so %s (%s) cannot be checked" % (host_path, key_path, address)
        return ("%s gives %s, not the service's escrowed address %s (%s): a key of another service"
                % (key_path, address, escrowed, host_path))

    def write_hostname(self, name, address):
        """The address of service directory `name` (its hostname file)."""
        self.write(name, HOSTNAME, (address + "\n").encode("ascii"))

    def write_key(self, name, data):
        """The host's key file for service directory `name`. An escrowed key that differs is kept under
        replaced/<its address>/ first; returns that address (None when nothing was replaced)."""
        old = self.read(name, KEY_FILE)
        if old is None or old == data:
            self.write(name, KEY_FILE, data)
            return None
        address = key_address(old) or "unreadable-key"
        kept = os.path.join(name, REPLACED, address)
        self.write(kept, KEY_FILE, old)
        old_host = self.read(name, HOSTNAME)
        if old_host is not None:
            self.write(kept, HOSTNAME, old_host)
        self.write(name, KEY_FILE, data)
        return address
