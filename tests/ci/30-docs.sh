#!/usr/bin/env bash
# Docs: the docs site builds without a warning, offline (docs/build-site.sh --offline: antsibull-docs
# lint of the guides and plugin/role docs, every module and role page, the guides of
# docs/docsite/, Sphinx with -W), and `ansible-doc` renders every module and every role.
set -euo pipefail
cd "$ONIONLAB_ROOT"

bash docs/build-site.sh --offline

echo "-- ansible-doc of every module and role"
count=0
for f in plugins/modules/*.py; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .py)
    ansible-doc -t module "onionlab.tor.$name" > /dev/null || { echo "FAILED: ansible-doc -t module onionlab.tor.$name" >&2; exit 1; }
    count=$((count + 1))
done
for d in roles/*/; do
    [ -d "$d" ] || continue
    name=$(basename "$d")
    if ! ls "$d"meta/argument_specs.y*ml > /dev/null 2>&1; then
        echo "FAILED: role $name has no meta/argument_specs.yml (ansible-doc -t role needs it)" >&2; exit 1
    fi
    ansible-doc -t role "onionlab.tor.$name" > /dev/null || { echo "FAILED: ansible-doc -t role onionlab.tor.$name" >&2; exit 1; }
    count=$((count + 1))
done
echo "ansible-doc: $count modules and roles render"
