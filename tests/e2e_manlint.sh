#!/bin/sh
# e2e_manlint.sh — `mandoc -Tlint` finds nothing worse than STYLE in any manual page
# (warnings, errors and unsupported macros fail the test, each shown). Skips only
# when mandoc is not installed.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

need_tool mandoc

found=no
for page in "$LLMCHAT_SRCDIR"/man/*.1; do
    found=yes
    # mandoc's own notes about its database (no level) are not about the page
    mandoc -Tlint -W warning "$page" >"$T/lint" 2>&1
    if grep -E ': (WARNING|ERROR|UNSUPP|BADARG|SYSERR):' "$T/lint" >"$T/bad"; then
        cat "$T/bad" >&2
        fail "mandoc -Tlint: $(basename "$page") has problems above STYLE"
    fi
done
[ "$found" = yes ] || fail "no manual pages in $LLMCHAT_SRCDIR/man"
pass "mandoc -Tlint reports nothing above STYLE in $(ls "$LLMCHAT_SRCDIR"/man/*.1 | wc -l) pages"
