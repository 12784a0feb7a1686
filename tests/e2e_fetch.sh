#!/bin/sh
# e2e_fetch.sh — scripts/llmchat-fetch from a local mirror (no network): fetches and
# verifies a model and the tokenizer it needs, skips what is already there, refuses a
# file whose size or sha256 is wrong without installing it, records the hash of
# unpinned files, knows the names in data/models.tsv (the real chat models among them),
# puts files by default where llmchat finds a model by its name, and says in one line
# what failed when a download fails, and that LLMCHAT_MODEL_MIRROR can replace it.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

need_tool sha256sum
fetch=$LLMCHAT_SRCDIR/scripts/llmchat-fetch
unset LLMCHAT_MODEL_MIRROR

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

# ---- a model and its tokenizer from the mirror ----
run_fetch "$DATA" "" --dir "$T/m" stories260K
assert_status 0
cmp -s "$T/m/stories260K.bin" "$DATA/stories260K.bin" || fail "stories260K.bin differs from the mirror's"
cmp -s "$T/m/tok512.bin" "$DATA/tok512.bin" || fail "tok512.bin (needed by stories260K) differs from the mirror's"
[ -z "$(find "$T/m" -name '.*')" ] || fail "temporary files left behind: $(ls -A "$T/m")"
assert_file_contains "how to run it" "$T/err" "llmchat $T/m/stories260K.bin"
run_fetch "$T/nowhere" "" --dir "$T/m" stories260K.bin
assert_status 0   # already there and correct: the mirror is not even looked at
assert_file_contains "second run" "$T/err" "present"
pass "a model and its tokenizer fetched, verified, then skipped"

# ---- the default directory is where llmchat looks for a model by its name ----
run_fetch "$DATA" "" stories260K
assert_status 0
[ -f "$XDG_DATA_HOME/llmchat/models/stories260K.bin" ] ||
    fail "stories260K.bin is not in \$XDG_DATA_HOME/llmchat/models"
assert_file_contains "how to run it" "$T/err" "llmchat stories260K"
run_llmchat -m generate -t 0 -n 8 -i "Once upon a time" stories260K </dev/null
assert_status 0
assert_contains "llmchat stories260K" "$(cat "$T/out")" "Once upon a time"
pass "the default directory is \$XDG_DATA_HOME/llmchat/models, and llmchat finds the model there by name"

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
assert_file_contains "unknown option message" "$T/err" "unknown option '--frobnicate'"
run_fetch "" "" --dir
assert_status 2
assert_file_contains "a --dir without its directory" "$T/err" "needs a directory"
run_fetch "" "" --version
assert_status 0
assert_file_contains "--version" "$T/out" "llmchat-fetch"
run_fetch "" "" --list --dir "$T/m"
assert_status 0
for name in tinyllama-chat llama2-7b-chat stories260K tok512 tokenizer stories15M stories42M stories110M; do
    assert_file_contains "--list" "$T/out" "$name"
done
grep -q '^stories260K  *yes' "$T/out" || fail "--list does not say that $T/m has stories260K"
grep -q '^stories15M  *no' "$T/out" || fail "--list does not say that $T/m lacks stories15M"
# the columns line up: every row's yes or no sits under the heading's DIR, whatever the
# length of its name (llama3.2-1b-instruct, smollm2-360m-instruct)
misaligned=$(awk 'NR == 1 { at = index($0, " DIR ") + 1; next }
                  /^\(DIR/ { next }
                  { s = substr($0, at, 4); if ((s != "yes " && s != "no  ") || substr($0, at - 1, 1) != " ") print }' "$T/out")
[ -z "$misaligned" ] || fail "--list rows out of line with the DIR column: $misaligned"
# the real chat models: GGUF Q8_0 files from their usual repositories
for pair in "tinyllama-chat TheBloke/TinyLlama-1.1B-Chat-v1.0-GGUF/resolve/main/tinyllama-1.1b-chat-v1.0.Q8_0.gguf" \
            "llama2-7b-chat TheBloke/Llama-2-7B-Chat-GGUF/resolve/main/llama-2-7b-chat.Q8_0.gguf"; do
    set -- $pair
    awk -F '\t' -v n="$1" -v u="https://huggingface.co/$2" '$1 == n && $3 == u { found = 1 } END { exit !found }' \
        "$LLMCHAT_SRCDIR/data/models.tsv" || fail "models.tsv: $1 is not https://huggingface.co/$2"
done
pass "names, mirror misses and usage"

# ---- an unpinned file: warned about, its hash recorded and then enforced ----
mkdir "$T/data" "$T/mirror2"
printf 'name\tfile\turl\tbytes\tsha256\tneeds\tabout\nfree\tfree.bin\thttps://example.invalid/free.bin\t-\t-\t-\ta test file\n' >"$T/data/models.tsv"
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

# ---- a download that fails (nothing listens on port 1; no network needed): one line
# that says what failed and names LLMCHAT_MODEL_MIRROR, nothing left behind ----
mkdir "$T/data3"
printf 'name\tfile\turl\tbytes\tsha256\tneeds\tabout\nfar\tfar.bin\thttp://127.0.0.1:1/far.bin\t-\t-\t-\ta test file\n' >"$T/data3/models.tsv"
run_fetch "" "$T/data3" --dir "$T/f" far
assert_status 1
grep -v ': far.bin: fetching from ' "$T/err" >"$T/err-lines" || true
assert_eq "lines of error (besides 'fetching from')" 1 "$(wc -l <"$T/err-lines" | tr -d ' ')"
assert_file_contains "the failed download" "$T/err-lines" "could not download http://127.0.0.1:1/far.bin"
assert_file_contains "the mirror hint" "$T/err-lines" "LLMCHAT_MODEL_MIRROR"
[ ! -e "$T/f" ] || fail "a failed download left $T/f behind: $(ls -A "$T/f")"
# a directory that was there stays, and so does what it held
mkdir -p "$T/g/keep"
run_fetch "" "$T/data3" --dir "$T/g/keep/new/deeper" far
assert_status 1
[ -d "$T/g/keep" ] && [ ! -e "$T/g/keep/new" ] || fail "a failed download into new directories left them, or took one it did not make"
pass "a failed download: one line naming what failed and LLMCHAT_MODEL_MIRROR"
