#!/usr/bin/env bash
# Builds the docs site of onionlab.tor with antsibull-docs and Sphinx: every module and role page
# (from their DOCUMENTATION/EXAMPLES/RETURN and argument specs) and the guides listed in
# docs/docsite/extra-docs.yml. Any warning fails the build.
#
#   docs/build-site.sh             the site, into .build/docs-site/build/html
#   docs/build-site.sh --offline   the same without network access (intersphinx, see docs/site_conf.py)
#
# Needs antsibull-docs and Sphinx on PATH: `./run test` installs them into .venv (requirements-dev.txt);
# by hand: `.venv/bin/pip install -r requirements-dev.txt` and `PATH=$PWD/.venv/bin:$PATH docs/build-site.sh`.
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$root"

offline=
case "${1:-}" in
    --offline) offline=1 ;;
    "") ;;
    *) echo "usage: docs/build-site.sh [--offline]" >&2; exit 2 ;;
esac

out=.build/docs-site
rm -rf "$out"
mkdir -p "$out/collections/ansible_collections/onionlab"
# antsibull-docs finds the collection through Ansible's collection loader: point it at this tree.
ln -sfn "$root" "$out/collections/ansible_collections/onionlab/tor"
export ANSIBLE_COLLECTIONS_PATH="$root/$out/collections"
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false

echo "-- lint: guides, their references, and the plugin and role docs (antsibull-docs lint-collection-docs)"
antsibull-docs lint-collection-docs --plugin-docs --check-extra-docs-refs --validate-collection-refs self "$root"

echo "-- site skeleton (antsibull-docs sphinx-init) + docs/site_conf.py"
src="$out/src"
mkdir -m 0700 "$src"  # antsibull-docs wants its destination writable by its owner only
antsibull-docs sphinx-init --use-current --dest-dir "$src" onionlab.tor > /dev/null
{ echo; echo "# ---- docs/site_conf.py"; cat docs/site_conf.py; } >> "$src/conf.py"
if [ -n "$offline" ]; then
    python docs/offline_inventory.py "$src/ansible_devel.inv"
    export ONIONLAB_DOCS_OFFLINE_INVENTORY="$root/$src/ansible_devel.inv"
fi

echo "-- collection pages (antsibull-docs collection --fail-on-error)"
chmod og-w "$src/rst"
antsibull-docs --config-file "$src/antsibull-docs.cfg" collection --use-current --fail-on-error \
    --cleanup everything --dest-dir "$src/rst" onionlab.tor

echo "-- HTML (sphinx-build -W: warnings are errors)"
sphinx-build -M html "$src/rst" "$out/build" -c "$src" -W --keep-going -q
echo "docs site: $out/build/html/index.html"
