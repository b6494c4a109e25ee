#!/usr/bin/env bash
# Changelog (antsibull-changelog, changelogs/config.yaml):
#   - every fragment in changelogs/fragments and changelogs/changelog.yaml are valid (lint);
#   - CHANGELOG.rst is exactly what `antsibull-changelog generate` makes of changelog.yaml
#     (it is generated, never edited by hand);
#   - a note (not a failure) when modules/plugins/roles or fragments exist that the current
#     version's entry does not list yet: refresh it with the release command of docs/maintaining.md.
set -euo pipefail
cd "$ONIONLAB_ROOT"
. tests/utils/stage-collection.sh

antsibull-changelog lint
antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
echo "changelog fragments and changelogs/changelog.yaml: valid"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
staged=$(stage_worktree "$tmp")
export ANSIBLE_COLLECTIONS_PATH="$tmp"

( cd "$staged" && antsibull-changelog generate )
if ! diff -u CHANGELOG.rst "$staged/CHANGELOG.rst"; then
    echo "FAILED: CHANGELOG.rst differs from what 'antsibull-changelog generate' makes of" \
         "changelogs/changelog.yaml (diff above). Regenerate it, do not edit it." >&2
    exit 1
fi
echo "CHANGELOG.rst: matches changelogs/changelog.yaml"

version=$(sed -n 's/^version: *//p' galaxy.yml)
if grep -q "^  $version:" changelogs/changelog.yaml; then
    ( cd "$staged" && antsibull-changelog release --update-existing --reload-plugins --date \
        "$(sed -n "/^  $version:/,/release_date/s/.*release_date: '\(.*\)'/\1/p" changelogs/changelog.yaml)" ) \
        > "$tmp/release.log" 2>&1 || { cat "$tmp/release.log"; exit 1; }
    if ! diff -q changelogs/changelog.yaml "$staged/changelogs/changelog.yaml" > /dev/null; then
        echo "NOTE: the $version entry of the changelog does not list everything yet:"
        { diff CHANGELOG.rst "$staged/CHANGELOG.rst" || true; } | sed -n 's/^> /  + /p'
        echo "  (before releasing $version run the refresh command of docs/maintaining.md)"
    fi
fi
