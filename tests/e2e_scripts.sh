#!/bin/sh
# e2e_scripts.sh — every script in scripts/ answers --help with its usage on stdout and
# exit status 0, doing nothing else (no build, no download, no file written), and
# refuses an unknown option with a message on stderr and a non-zero exit, before doing
# anything.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

n=0
mkdir "$T/cwd"
for script in "$LLMCHAT_SRCDIR"/scripts/*; do
    [ -f "$script" ] || continue
    name=$(basename "$script")
    n=$((n + 1))
    last_cmd="scripts/$name --help"
    rc=0
    (cd "$T/cwd" && timeout "$LLMCHAT_TEST_TIMEOUT" sh "$script" --help) >"$T/out" 2>"$T/err" </dev/null || rc=$?
    assert_status 0
    grep -qi 'usage' "$T/out" || fail "scripts/$name --help prints no usage on stdout"
    [ ! -s "$T/err" ] || fail "scripts/$name --help wrote to stderr"
    [ -z "$(ls -A "$T/cwd")" ] || fail "scripts/$name --help left files behind: $(ls -A "$T/cwd")"

    last_cmd="scripts/$name --no-such-option"
    rc=0
    (cd "$T/cwd" && timeout "$LLMCHAT_TEST_TIMEOUT" sh "$script" --no-such-option) >"$T/out" 2>"$T/err" </dev/null || rc=$?
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "scripts/$name --no-such-option: exit status $rc"
    grep -q -- '--no-such-option' "$T/err" || [ "$name" = llmchat-bench-tui ] ||
        fail "scripts/$name --no-such-option does not name the option on stderr"
    [ -s "$T/err" ] || fail "scripts/$name --no-such-option says nothing on stderr"
    [ -z "$(ls -A "$T/cwd")" ] || fail "scripts/$name --no-such-option left files behind: $(ls -A "$T/cwd")"
done
[ "$n" -gt 0 ] || fail "no scripts in $LLMCHAT_SRCDIR/scripts"
pass "the $n scripts answer --help (usage, exit 0) and refuse an unknown option"
