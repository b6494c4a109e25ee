#!/usr/bin/env bash
# Docs: the docs site builds without a warning, offline (docs/build-site.sh --offline: antsibull-docs
# lint of the guides and plugin/role docs, every module and role page, the guides of
# docs/docsite/, Sphinx with -W), and `ansible-doc` renders every module and every role.
set -euo pipefail
cd "$ONIONLAB_ROOT"

bash docs/build-site.sh --offline

echo "-- ansible-doc of every module and role"
# ansible-doc exits 0 with only a warning for a plugin it cannot find: the text must hold the name.
doc() {
    local out
    out=$(ansible-doc -t "$1" "onionlab.tor.$2" 2>&1) && grep -q "onionlab.tor.$2" <<< "$out" \
        && ! grep -qi "was not found\|error loading plugin" <<< "$out" \
        || { echo "$out" | head -5 >&2; echo "FAILED: ansible-doc -t $1 onionlab.tor.$2" >&2; exit 1; }
}
count=0
for f in plugins/modules/*.py; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .py)
    doc module "$name"
    count=$((count + 1))
done
for d in roles/*/; do
    [ -d "$d" ] || continue
    name=$(basename "$d")
    if ! ls "$d"meta/argument_specs.y*ml > /dev/null 2>&1; then
        echo "FAILED: role $name has no meta/argument_specs.yml (ansible-doc -t role needs it)" >&2; exit 1
    fi
    doc role "$name"
    count=$((count + 1))
done
echo "ansible-doc: $count modules and roles render"
