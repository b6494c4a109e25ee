# Sourced by tests/ci/*.sh. stage_worktree DIR: copy the files git would commit (tracked and
# untracked-not-ignored, as they are in the work tree) into DIR/ansible_collections/onionlab/tor,
# print that path. For tools that need the collection under ansible_collections/ and may write into it.
stage_worktree() {
    local dest="$1/ansible_collections/onionlab/tor" f
    mkdir -p "$dest"
    git -C "$ONIONLAB_ROOT" ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
        [ -f "$ONIONLAB_ROOT/$f" ] && printf '%s\0' "$f"
    done | tar -C "$ONIONLAB_ROOT" --null -T - -cf - | tar -xf - -C "$dest"
    echo "$dest"
}
