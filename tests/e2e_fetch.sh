#!/bin/sh
# e2e_fetch.sh — scripts/llmchat-fetch from a local mirror (no network): fetches and
# verifies the default model, skips what is already there, refuses a file whose size or
# sha256 is wrong without installing it, records the hash of unpinned files, and knows
# the names in data/models.tsv.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

need_tool sha256sum
fetch=$LLMCHAT_SRCDIR/scripts/llmchat-fetch
unset LLMCHAT_MODEL_MIRROR LLMCHAT_DATADIR

# run_fetch MIRROR DATADIR ARGS...: like run_llmchat, for the fetch script, with
# LLMCHAT_MODEL_MIRROR and LLMCHAT_DATADIR set to MIRROR and DATADIR ("" = unset).
run_fetch() {
    last_cmd="llmchat-fetch $*"
    mirror=$1 datadir=${2:-$LLMCHAT_SRCDIR/data}
    shift 2
    rc=0
    if [ -n "$mirror" ]; then
        LLMCHAT_MODEL_MIRROR=$mirror LLMCHAT_DATADIR=$datadir sh "$fetch" "$@" \
            >"$T/out" 2>"$T/err" </dev/null || rc=$?
    else
        LLMCHAT_DATADIR=$datadir sh "$fetch" "$@" >"$T/out" 2>"$T/err" </dev/null || rc=$?
    fi
}

# ---- the default model from the mirror ----
run_fetch "$DATA" "" --dir "$T/m" default
assert_status 0
cmp -s "$T/m/stories260K.bin" "$DATA/stories260K.bin" || fail "stories260K.bin differs from the mirror's"
cmp -s "$T/m/tok512.bin" "$DATA/tok512.bin" || fail "tok512.bin differs from the mirror's"
[ -z "$(find "$T/m" -name '.*')" ] || fail "temporary files left behind: $(ls -A "$T/m")"
run_fetch "$T/nowhere" "" --dir "$T/m" default
assert_status 0   # already there and correct: the mirror is not even looked at
assert_file_contains "second run" "$T/err" "present"
pass "default model fetched, verified, then skipped"

# ---- a corrupt mirror file is refused and not installed ----
mkdir "$T/badmirror"
head -c 6000 "$DATA/tok512.bin" >"$T/badmirror/tok512.bin"
run_fetch "$T/badmirror" "" --dir "$T/b" tok512.bin
assert_status 1
[ ! -e "$T/b/tok512.bin" ] || fail "a truncated tok512.bin was installed"
assert_file_contains "size mismatch message" "$T/err" "6000 bytes, expected 6227"
"$PYTHON" - "$DATA/tok512.bin" "$T/badmirror/tok512.bin" <<'EOF2'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[-1] ^= 0x01   # same size, different sha256
open(sys.argv[2], "wb").write(data)
EOF2
run_fetch "$T/badmirror" "" --dir "$T/b" tok512
assert_status 1
[ ! -e "$T/b/tok512.bin" ] || fail "a tok512.bin with the wrong sha256 was installed"
assert_file_contains "hash mismatch message" "$T/err" "sha256"
# A wrong file already in place is replaced by a good one.
cp "$T/badmirror/tok512.bin" "$T/m/tok512.bin"
run_fetch "$DATA" "" --dir "$T/m" tok512.bin
assert_status 0
cmp -s "$T/m/tok512.bin" "$DATA/tok512.bin" || fail "a corrupt tok512.bin in place was not replaced"
pass "size and sha256 mismatches are refused"

# ---- unknown names, a missing mirror file, usage ----
run_fetch "$DATA" "" --dir "$T/m" no-such-model
assert_status 1
assert_file_contains "unknown name message" "$T/err" "no-such-model"
run_fetch "$T/badmirror" "" --dir "$T/c" stories260K.bin
assert_status 1
assert_file_contains "missing mirror file message" "$T/err" "not in the mirror"
run_fetch "" "" --frobnicate
assert_status 2
run_fetch "" "" --list --dir "$T/m"
assert_status 0
for name in stories260K.bin tok512.bin tokenizer.bin stories15M.bin stories42M.bin stories110M.bin; do
    assert_file_contains "--list" "$T/out" "$name"
done
pass "names, mirror misses and usage"

# ---- an unpinned file: warned about, its hash recorded and then enforced ----
mkdir "$T/data" "$T/mirror2"
printf 'name\turl\tbytes\tsha256\nfree.bin\thttps://example.invalid/free.bin\t-\t-\n' >"$T/data/models.tsv"
cp "$DATA/tok512.bin" "$T/mirror2/free.bin"
run_fetch "$T/mirror2" "$T/data" --dir "$T/u" free
assert_status 0
assert_file_contains "unpinned warning" "$T/err" "warning"
want=$(sha256sum "$DATA/tok512.bin" | cut -d ' ' -f 1)
assert_file_contains "recorded hash" "$T/u/free.bin.sha256" "$want"
printf 'changed' >>"$T/u/free.bin"
cp "$T/u/free.bin" "$T/mirror2/free.bin"
run_fetch "$T/mirror2" "$T/data" --dir "$T/u" free.bin
assert_status 1
pass "unpinned files: hash recorded, then enforced"
