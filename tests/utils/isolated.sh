#!/usr/bin/env bash
# isolated.sh CMD [ARG...]: run CMD where nothing lies beside the clone, as in a user's clone in an
# empty directory. In a private mount namespace (unshare --mount --propagation private) the clone's
# parent directory is replaced by an empty tmpfs that holds only the clone, bind-mounted back at the
# same path: whatever reads a sibling of the clone (../anything) fails there, in every process CMD starts
# (pytest, ansible-playbook, ansible-test, tor, molecule, systemd-nspawn). The host's mounts are
# untouched; the namespace ends with its last process.
#
# Kept when they lie below the parent: the home directory (only its dot-entries, ~/.cache/onionlab,
# ~/.ansible, ..., when it is the parent itself); the temp directory is then a new empty one.
# Not isolated, with one line saying why: the parent is /, or unshare/mount is not permitted (not
# root, or a container without CAP_SYS_ADMIN). ONIONLAB_ISOLATED=1 in CMD's environment when isolated,
# =off when not; when it is already set, CMD just runs (no nesting).
set -euo pipefail
root=$(cd "${ONIONLAB_ROOT:-$(dirname "$(readlink -f "$0")")/../..}" && pwd -P)
parent=$(dirname "$root")
name=$(basename "$root")

below() { case "$1" in "$2"/*) return 0 ;; *) return 1 ;; esac; }

not_isolated() {
    echo "isolation: off, $1; the steps see $parent as it is"
    exec env ONIONLAB_ISOLATED=off "${@:2}"
}

if [ "${1:-}" != --inside ]; then
    if [ -n "${ONIONLAB_ISOLATED:-}" ]; then exec "$@"; fi
    [ "$parent" != / ] || not_isolated "the clone's parent directory is /" "$@"
    case "$parent" in
        /usr | /usr/* | /var | /var/lib | /var/cache | /var/log | /etc | /etc/* | /run | /run/* | /dev | /dev/* | \
            /proc | /proc/* | /sys | /sys/* | /boot | /lib | /lib64 | /bin | /sbin)
            not_isolated "the clone's parent directory $parent is a system directory that the steps need" "$@" ;;
    esac
    command -v unshare > /dev/null || not_isolated "no unshare command" "$@"
    mkdir -p "$root/.build"
    probe=$(mktemp -d "$root/.build/isolated-probe.XXXXXX")
    if ! unshare --mount --propagation private mount -t tmpfs onionlab-probe "$probe" 2> /dev/null; then
        rmdir "$probe"
        not_isolated "unshare --mount + mount -t tmpfs not permitted for $(id -un)" "$@"
    fi
    rmdir "$probe"
    exec unshare --mount --propagation private bash "$0" --inside "$@"
fi
shift

# In the new mount namespace: build the parent's replacement on a tmpfs mounted inside the clone
# (a mount point of this run's own; .build is not committed), then move it over the parent.
stage=$(mktemp -d "$root/.build/isolated.XXXXXX")
mount -t tmpfs -o mode=0755 onionlab-isolated "$stage"
mkdir "$stage/$name"
mount --bind "$root" "$stage/$name"
kept=""
home=$(realpath -m "${HOME:-/}")
if [ "$home" = "$parent" ]; then
    for entry in "$parent"/.[!.]* "$parent"/..?*; do
        [ -e "$entry" ] && [ "$entry" != "$root" ] || continue
        if [ -d "$entry" ]; then mkdir "$stage/${entry##*/}"; else touch "$stage/${entry##*/}"; fi
        mount --bind "$entry" "$stage/${entry##*/}"
    done
    kept+=", the dot-entries of $home"
elif below "$home" "$parent" && ! below "$home" "$root"; then
    mkdir -p "$stage/${home#"$parent"/}"
    mount --bind "$home" "$stage/${home#"$parent"/}"
    kept+=", $home"
fi
tmp=$(realpath -m "${TMPDIR:-/tmp}")
if [ "$tmp" = "$parent" ]; then
    chmod 1777 "$stage"
    kept+=" (an empty temp directory)"
elif below "$tmp" "$parent" && ! below "$tmp" "$root"; then
    mkdir -p "$stage/${tmp#"$parent"/}"
    chmod 1777 "$stage/${tmp#"$parent"/}"
    kept+=", an empty $tmp"
fi
mount --move "$stage" "$parent"
cd "$root"  # the clone as bound in the new parent (the old working directory still saw the old one)
rmdir "$stage"  # now a plain empty directory of the clone again
echo "isolation: $parent holds only $name$kept (private mount namespace)"
exec env ONIONLAB_ISOLATED=1 "$@"
