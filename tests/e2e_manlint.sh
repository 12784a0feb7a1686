#!/bin/sh
# e2e_manlint.sh — `mandoc -Tlint` finds nothing worse than STYLE in any manual page
# (warnings, errors and unsupported macros fail the test, each shown), and where man(1)
# and groff are installed, `MANWIDTH=80 man -l PAGE` formats each page without a
# warning (in a UTF-8 locale). Skips only when mandoc is not installed.
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

# man(1) with groff, as a reader runs it on an 80-column terminal: no warning (a
# synopsis group too long for a line makes troff say "can't break line").
if command -v man >/dev/null 2>&1 && command -v groff >/dev/null 2>&1; then
    for page in "$LLMCHAT_SRCDIR"/man/*.1; do
        LC_ALL=C.UTF-8 MANWIDTH=80 MANPAGER=cat PAGER=cat man -l "$page" >/dev/null 2>"$T/man-err" ||
            fail "man -l $(basename "$page") failed: $(cat "$T/man-err")"
        if [ -s "$T/man-err" ]; then
            cat "$T/man-err" >&2
            fail "MANWIDTH=80 man -l $(basename "$page") warns (above)"
        fi
    done
    pass "MANWIDTH=80 man -l formats every page without a warning"
else
    printf 'note: %s: man or groff is not installed: the MANWIDTH=80 check did not run\n' "$test_name"
fi
