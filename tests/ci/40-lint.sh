#!/usr/bin/env bash
# ansible-lint, production profile (.ansible-lint), offline, on what users run of this collection:
# galaxy.yml, meta/, changelogs/, every role (roles/*), the example playbooks (docs/examples/*.yml),
# the playbooks run against the installed artifact (tests/installed/*.yml) and the molecule
# scenarios (extensions/molecule/). Whatever of these exists is linted; with none, nothing fails.
# Runs on a copy under ansible_collections/onionlab/tor, as ansible-lint expects a collection there.
set -euo pipefail
cd "$ONIONLAB_ROOT"
. tests/utils/stage-collection.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
staged=$(stage_worktree "$tmp")
export ANSIBLE_COLLECTIONS_PATH="$tmp"

cd "$staged"
targets=(galaxy.yml meta changelogs)
for d in roles/*/ extensions/molecule; do
    [ -d "$d" ] && targets+=("${d%/}")
done
for f in docs/examples/*.yml docs/examples/*.yaml tests/installed/*.yml; do
    [ -f "$f" ] && targets+=("$f")
done
echo "ansible-lint --profile production: ${targets[*]}"
# HOME inside the temp tree: ansible-lint's caches (installed collection, schemas) stay out of ~.
HOME="$tmp/home" ansible-lint --profile production --offline --nocolor "${targets[@]}"
