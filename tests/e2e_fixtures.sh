#!/bin/sh
# e2e_fixtures.sh — the suite needs nothing outside the repository: no test file, test
# script or build file names the old shared fixture directory or its variable, and
# every fixture the tests name by file is in tests/data or data/models.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

# the strings are split so that this file does not match itself
old_dir='\.\./'"shared"
old_var='LLMCHAT_'"SHARED"
cd "$LLMCHAT_SRCDIR" || hard_error "cannot cd to $LLMCHAT_SRCDIR"
hits=$(grep -nE "$old_dir|$old_var" tests/*.sh tests/*.c tests/*.h Makefile.am configure.ac \
           scripts/quickstart .ci/run 2>/dev/null)
[ -z "$hits" ] || fail "these lines reach outside the repository for fixtures:
$hits"
pass "no test or build file names $(printf '%s' "$old_dir" | tr -d '\\') or $old_var"

# Fixture names the C tests pass to data_path() and the sh tests write as $DATA/NAME
# or $BUNDLED/NAME exist.
missing=
for name in $(grep -ohE 'data_path\("[^"]+"\)' tests/*.c | sed 's/data_path("\(.*\)")/\1/' | sort -u); do
    [ -e "tests/data/$name" ] || [ -e "data/models/$name" ] || missing="$missing $name"
done
for name in $(grep -ohE '\$(DATA|BUNDLED)/[A-Za-z0-9_-]+\.[A-Za-z0-9_.]+' tests/*.sh | sed 's/^\$[A-Z]*\///' | sort -u); do
    [ -e "tests/data/$name" ] || [ -e "data/models/$name" ] || missing="$missing $name"
done
[ -z "$missing" ] || fail "fixtures named by the tests but not in tests/data or data/models:$missing"
pass "every fixture the tests name is in the repository"
