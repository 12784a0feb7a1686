#!/bin/sh
# installcheck.sh — `make installcheck`: the installed programs work on their own.
#
# Usage: installcheck.sh DESTDIR BINDIR PKGDATADIR MANDIR   (as make passes them)
#
# Checks that every installed file is there, then runs the installed llmchat from an
# empty directory with a clean environment (a private HOME: no config file, no source
# tree, no LLMCHAT_* variables) and no MODEL: it must open the bundled demo model, say
# so, and answer "Tell me a story about a dog named Max." greedily with a story about
# Max. The installed llmchat-fetch must find the installed models.tsv. With a DESTDIR
# the files are not where they were configured to be, so LLMCHAT_DATADIR points there.
set -u

destdir=$1 bindir=$1$2 pkgdatadir=$1$3 mandir=$1$4

fail() {
    printf 'installcheck: FAIL: %s\n' "$*" >&2
    exit 1
}

for f in "$bindir/llmchat" "$bindir/llmchat-bench" "$bindir/llmchat-fetch"; do
    [ -x "$f" ] || fail "$f is not installed"
done
for f in "$mandir/man1/llmchat.1" "$mandir/man1/llmchat-bench.1" "$mandir/man1/llmchat-fetch.1" \
         "$pkgdatadir/models.tsv" "$pkgdatadir/models/chat260K.bin" \
         "$pkgdatadir/models/chat260K_q80.bin" "$pkgdatadir/models/tok512.bin"; do
    [ -s "$f" ] || fail "$f is not installed"
done
if grep -q '@pkgdatadir@' "$bindir/llmchat-fetch"; then
    fail "$bindir/llmchat-fetch still holds @pkgdatadir@"
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/llmchat-installcheck.XXXXXX") || fail "mktemp failed"
trap 'rm -rf "$T"' EXIT
mkdir "$T/home" "$T/work"
cd "$T/work" || fail "cannot cd to $T/work"

# run NAME ARGS...: runs an installed program in a clean environment; stdout in
# $T/out, stderr in $T/err, exit status in $rc.
run() {
    prog=$1
    shift
    rc=0
    env -i PATH="$bindir:/usr/bin:/bin" HOME="$T/home" LANG=C OMP_NUM_THREADS=2 \
        ${destdir:+LLMCHAT_DATADIR="$pkgdatadir"} \
        "$bindir/$prog" "$@" >"$T/out" 2>"$T/err" || rc=$?
}

show() {
    printf '  stdout: %s\n  stderr: %s\n' "$(head -c 400 "$T/out")" "$(head -c 600 "$T/err")" >&2
}

run llmchat --version </dev/null
[ "$rc" -eq 0 ] || { show; fail "llmchat --version exited $rc"; }

printf 'Tell me a story about a dog named Max.\n' >"$T/in"
run llmchat -m chat -t 0 -n 80 <"$T/in"
[ "$rc" -eq 0 ] || { show; fail "llmchat on the bundled model exited $rc"; }
grep -q 'bundled demo model' "$T/err" || { show; fail "llmchat did not say it opened the bundled demo model"; }
grep -q 'Max' "$T/out" || { show; fail "the reply is not a story about Max"; }
printf 'installcheck: the installed llmchat answers on the bundled model: %s\n' "$(head -c 100 "$T/out")"

run llmchat-fetch --list </dev/null
[ "$rc" -eq 0 ] || { show; fail "llmchat-fetch --list exited $rc"; }
grep -q '^tinyllama-chat ' "$T/out" || { show; fail "llmchat-fetch --list does not list tinyllama-chat"; }
printf 'installcheck: the installed llmchat-fetch reads the installed models.tsv\n'
