#!/usr/bin/env bash
# The Galaxy artifact, as a user gets it:
#   1. `ansible-galaxy collection build` makes onionlab-tor-<version>.tar.gz (galaxy.yml build_ignore);
#   2. its file list holds no dev or test-harness file (FORBIDDEN below) and every module, role,
#      meta/runtime.yml, README.md, CHANGELOG.rst and changelogs/changelog.yaml;
#   3. `ansible-galaxy collection install` of the tarball into an empty temp path works offline;
#   4. from that installed copy alone (ANSIBLE_COLLECTIONS_PATH = the temp path, no sys.path scan),
#      `ansible-doc -l onionlab.tor` lists every module and `ansible-doc -t role -l` every role;
#   5. hook for playbooks against the installed copy: tests/installed/run.sh when it exists (it gets
#      ONIONLAB_INSTALLED_COLLECTIONS and runs what it likes, e.g. with its own tor), else every
#      tests/installed/*.yml with ansible-playbook on localhost (connection local, this venv's
#      python), with only the installed copy on the collections path.
set -euo pipefail
cd "$ONIONLAB_ROOT"

# Paths (from the artifact's root) that must not ship: dev tools, build output, the pytest suite,
# its harness and test data, caches. Extended regular expressions, anchored at the start.
FORBIDDEN='^(\.venv|\.build|\.hypothesis|\.ci|\.git|\.pytest_cache|\.ansible|bench|demo|docs/build|extensions/molecule)(/|$)'
FORBIDDEN+='|^tests/(harness|unit|integration|ci|utils|installed|output|testbed|fuzz|data)(/|$)'
FORBIDDEN+='|^(docs/build-site\.sh|docs/site_conf\.py|docs/offline_inventory\.py|run|pytest\.ini|requirements-dev\.txt|tests/conftest\.py|\.gitignore|\.ansible-lint|\.ansible-lint-ignore|changelogs/\.plugin-cache\.yaml)$'
FORBIDDEN+='|(^|/)__pycache__(/|$)|\.pyc$|\.tar\.gz$'

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "-- ansible-galaxy collection build"
ansible-galaxy collection build --output-path "$tmp/dist" . > /dev/null
tarball=$(ls "$tmp"/dist/onionlab-tor-*.tar.gz)
tar -tzf "$tarball" | sed 's|^\./||; s|/$||' | sort > "$tmp/files"
echo "$(basename "$tarball"): $(wc -l < "$tmp/files") entries, $(du -k "$tarball" | cut -f1) KiB"

bad=$(grep -E "$FORBIDDEN" "$tmp/files" || true)
if [ -n "$bad" ]; then
    echo "FAILED: the artifact holds dev or test files (add them to build_ignore in galaxy.yml):" >&2
    echo "$bad" | sed 's/^/  /' >&2
    exit 1
fi
required=(MANIFEST.json FILES.json README.md meta/runtime.yml CHANGELOG.rst changelogs/changelog.yaml)
for f in plugins/modules/*.py plugins/module_utils/*.py plugins/module_utils/*/*.py plugins/doc_fragments/*.py; do
    [ -f "$f" ] && required+=("$f")
done
for d in roles/*/; do
    [ -d "$d" ] && required+=("${d%/}/meta/main.yml")
done
missing=()
for f in "${required[@]}"; do
    grep -qxF "$f" "$tmp/files" || missing+=("$f")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "FAILED: the artifact lacks: ${missing[*]}" >&2
    exit 1
fi
echo "artifact content: no dev/test files; ${#required[@]} required files present"

echo "-- ansible-galaxy collection install into an empty path"
export ANSIBLE_COLLECTIONS_PATH="$tmp/installed"
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false
ansible-galaxy collection install --offline -p "$tmp/installed" "$tarball"
installed="$tmp/installed/ansible_collections/onionlab/tor"
[ -f "$installed/MANIFEST.json" ] || { echo "FAILED: nothing installed at $installed" >&2; exit 1; }

echo "-- ansible-doc from the installed copy"
ansible-doc -l onionlab.tor | tee "$tmp/doc-list"
for f in plugins/modules/*.py; do
    [ -f "$f" ] || continue
    name="onionlab.tor.$(basename "$f" .py)"
    grep -q "^$name " "$tmp/doc-list" || { echo "FAILED: ansible-doc -l does not list $name" >&2; exit 1; }
    ansible-doc -t module "$name" > "$tmp/doc"
    grep -qF "$installed/plugins/modules/" "$tmp/doc" || { echo "FAILED: ansible-doc -t module $name does not come from the installed copy" >&2; exit 1; }
done
ansible-doc -t role -l onionlab.tor > "$tmp/role-list"
for d in roles/*/; do
    [ -f "${d}meta/argument_specs.yml" ] || continue
    name="onionlab.tor.$(basename "$d")"
    grep -q "^$name:" "$tmp/role-list" || { echo "FAILED: ansible-doc -t role -l does not list $name" >&2; exit 1; }
done

if [ -x tests/installed/run.sh ] || [ -f tests/installed/run.sh ]; then
    echo "-- tests/installed/run.sh against the installed copy"
    ONIONLAB_INSTALLED_COLLECTIONS="$tmp/installed" bash tests/installed/run.sh
else
    shopt -s nullglob
    books=(tests/installed/*.yml)
    if [ ${#books[@]} -eq 0 ]; then
        echo "-- no tests/installed/*.yml playbook yet: nothing run against the installed copy"
    fi
    printf 'localhost ansible_connection=local ansible_python_interpreter=%s\n' "$(command -v python)" \
        > "$tmp/inventory"
    for book in "${books[@]}"; do
        echo "-- ansible-playbook $book against the installed copy"
        ansible-playbook -i "$tmp/inventory" "$book"
    done
fi
echo "Galaxy artifact: built, clean, installed, documented from the installed copy"
