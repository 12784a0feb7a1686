#!/bin/sh
# e2e_no_overwrite.sh — no tool writes over a file the run reads, or over one the user
# did not name for writing, and none leaves half a file: --trace naming the model (also
# through a hard or symbolic link), the tokenizer or the input text; /save naming the
# model; llmchat-convert with --tokenizer-out naming IN or OUT, and with a tokenizer
# place it must refuse (no "wrote", no OUT); /vector make with a name it must refuse
# (nothing written), over a vector made before (refused unless --replace), and over the
# model. Each refusal is one line and exit status 1; every file read is unchanged
# (cmp). Writers replace an existing file whole at the end (a trace to a name that holds
# one: the old one stays until the new one is complete, and a run that fails before
# any position leaves it as it was), a FIFO with no reader is
# refused at once, and a failed write (/dev/full) says so.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

CONVERT=$(dirname "$LLMCHAT_BIN")/llmchat-convert
cp "$DATA/stories260K.bin" "$T/model.bin"
cp "$DATA/tok512.bin" "$T/tok.bin"
cp "$T/model.bin" "$T/model.orig"
cp "$T/tok.bin" "$T/tok.orig"
printf 'Once upon a time\n' >"$T/in.txt"
cp "$T/in.txt" "$T/in.orig"
ln "$T/model.bin" "$T/hard.bin"
ln -s model.bin "$T/link.bin"

# intact: the files read are as they were
intact() {
    cmp -s "$T/model.bin" "$T/model.orig" || fail "$1: the model changed"
    cmp -s "$T/tok.bin" "$T/tok.orig" || fail "$1: the tokenizer changed"
    cmp -s "$T/in.txt" "$T/in.orig" || fail "$1: the input text changed"
}

# refused WHAT: exit 1 with one message that says the place is read or unusable
refused() {
    assert_status 1
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$1: not one line: $(cat "$T/err")"
    grep -q "^llmchat\(-convert\)\?: .*\(this run reads that file\|is a directory\|no process is reading\)" \
        "$T/err" || fail "$1: no message naming why: $(cat "$T/err")"
}

# ---- --trace over what the run reads ----
for target in model.bin hard.bin link.bin tok.bin in.txt; do
    run_llmchat -m generate -n 4 -z "$T/tok.bin" -f "$T/in.txt" --trace "$T/$target" "$T/model.bin" </dev/null
    refused "--trace $target"
    intact "--trace $target"
done
[ -L "$T/link.bin" ] || fail "the link was replaced"
run_llmchat -m generate -n 4 -z "$T/tok.bin" -i hi --trace "$T" "$T/model.bin" </dev/null
refused "--trace a directory"
pass "--trace naming the model (by name, hard link, symbolic link), the tokenizer, the input or a directory is refused; nothing changed"

# a FIFO with no reader: refused at once, never waited on
mkfifo "$T/fifo"
run_llmchat -m generate -n 4 -z "$T/tok.bin" -i hi --trace "$T/fifo" "$T/model.bin" </dev/null
refused "--trace a FIFO nobody reads"
# a failed write: said, exit 1
if [ -w /dev/full ]; then
    run_llmchat -m generate -n 4 -z "$T/tok.bin" -i hi --trace /dev/full "$T/model.bin" </dev/null
    assert_status 1
    assert_file_contains "a full disk" "$T/err" "writing the trace failed"
fi
# an existing trace is replaced whole, at the end, with no temporary file left
printf 'an old trace\n' >"$T/old.jsonl"
run_llmchat -m generate -n 4 -z "$T/tok.bin" -i hi --trace "$T/old.jsonl" "$T/model.bin" </dev/null
assert_status 0
head -c 16 "$T/old.jsonl" | grep -q '"llmchat_trace"' || fail "the trace did not replace the old file"
if ls "$T" | grep -q '\.tmp-'; then fail "a temporary file was left: $(ls "$T")"; fi
pass "a FIFO with no reader is refused at once, a full disk is reported, a trace replaces a file whole"

# ---- /save over the model; /load then /save over the chat is allowed ----
printf 'Lily\n/save %s\n/save %s\n/load %s\n/save %s\n' "$T/model.bin" "$T/chat.json" \
    "$T/chat.json" "$T/chat.json" >"$T/in"
run_llmchat -m chat -z "$T/tok.bin" -n 8 "$T/model.bin" <"$T/in"
assert_status 0
assert_file_contains "/save over the model" "$T/err" "will not write the chat to $T/model.bin: this run reads that file"
[ "$(grep -c '^llmchat: saved to' "$T/err")" -eq 2 ] || fail "the chat was not saved twice: $(cat "$T/err")"
intact "/save"
pass "/save refuses the model; a chat loaded from a file is saved back to it"

# ---- /save onto the run's own trace; a dangling link; a write-protected file ----
printf 'Lily\n/save %s\n' "$T/own.jsonl" >"$T/in"
run_llmchat -m chat -z "$T/tok.bin" -n 4 --trace "$T/own.jsonl" "$T/model.bin" <"$T/in"
assert_status 0
assert_file_contains "/save onto the trace" "$T/err" "this run is writing that file already"
grep -q '^llmchat: saved to' "$T/err" && fail "/save onto the run's own trace said it saved"
head -n 1 "$T/own.jsonl" | grep -q '"llmchat_trace"' || fail "the trace is not a trace"
mkdir "$T/sub"
ln -s sub/linked.json "$T/dangling.json"
printf 'Lily\n/save %s\n' "$T/dangling.json" >"$T/in"
run_llmchat -m chat -z "$T/tok.bin" -n 4 "$T/model.bin" <"$T/in"
assert_status 0
[ -L "$T/dangling.json" ] || fail "/save replaced a dangling link with a file"
[ -s "$T/sub/linked.json" ] || fail "/save through a dangling link did not write its target"
# a write-protected file is not replaced (root may write anything: run as nobody then)
as_user=
if [ "$(id -u)" -eq 0 ]; then
    command -v setpriv >/dev/null 2>&1 && as_user="setpriv --reuid=65534 --regid=65534 --clear-groups"
fi
# That user runs a copy of llmchat in ro/, started there (the directories above it,
# the build's and TMPDIR's, may be closed to that user), and names its files from there.
mkdir "$T/ro"
cp "$T/model.bin" "$T/tok.bin" "$T/ro/"
cp "$LLMCHAT_BIN" "$T/ro/llmchat"
chmod 777 "$T/ro"
if [ -n "$as_user" ] && ! (cd "$T/ro" && $as_user env ./llmchat --version) >/dev/null 2>&1; then
    as_user= # that user cannot run programs here (a noexec TMPDIR, say)
fi
if [ "$(id -u)" -ne 0 ] || [ -n "$as_user" ]; then
    printf 'keep me\n' >"$T/ro/keep.txt"
    chmod 444 "$T/ro/keep.txt"
    last_cmd="llmchat -m generate --trace ro/keep.txt (as $(id -un) ${as_user:+through setpriv})"
    rc=0
    (cd "$T/ro" && $as_user env HOME=/nonexistent ./llmchat --no-config -m generate -z tok.bin -n 4 \
        -i hi --trace keep.txt model.bin) >"$T/out" 2>"$T/err" </dev/null || rc=$?
    [ "$rc" -ne 0 ] || fail "a trace over a write-protected file exited 0"
    assert_file_contains "write-protected" "$T/err" "write-protected"
    [ "$(cat "$T/ro/keep.txt")" = "keep me" ] || fail "the write-protected file was replaced"
    pass "/save refuses the run's own trace, follows a dangling link, and no writer replaces a write-protected file"
else
    pass "/save refuses the run's own trace and follows a dangling link (the write-protected check needs a user other than root, and none could run llmchat here)"
fi

# ---- llmchat-convert ----
run_program llmchat-convert "$CONVERT" -z "$T/tok.bin" "$T/model.bin" "$T/out.bin" --tokenizer-out "$T/model.bin"
refused "--tokenizer-out IN"
run_program llmchat-convert "$CONVERT" -z "$T/tok.bin" "$T/model.bin" "$T/out.bin" --tokenizer-out "$T/tok.bin"
refused "--tokenizer-out the tokenizer read"
run_program llmchat-convert "$CONVERT" -z "$T/tok.bin" "$T/model.bin" "$T/hard.bin"
refused "OUT a hard link to IN"
intact "llmchat-convert"
[ ! -e "$T/out.bin" ] || fail "OUT was written although the tokenizer was refused"
run_program llmchat-convert "$CONVERT" -z "$T/tok.bin" "$T/model.bin" "$T/out.bin" --tokenizer-out "$T/out.bin"
assert_status 1
assert_file_contains "OUT and the tokenizer one file" "$T/err" "the tokenizer would be written over OUT"
# a tokN.bin beside OUT holding another tokenizer: refused before anything is written
mkdir "$T/dir"
printf 'not a tokenizer' >"$T/dir/tok512.bin"
run_program llmchat-convert "$CONVERT" -t f32 "$DATA/stories260K.gguf" "$T/dir/out.bin"
assert_status 1
assert_file_contains "another tokenizer beside OUT" "$T/err" "exists and holds another tokenizer"
if grep -q wrote "$T/err"; then fail "it said it wrote: $(cat "$T/err")"; fi
[ ! -e "$T/dir/out.bin" ] || fail "OUT was left behind (the man page promises no partial output)"
if ls "$T/dir" | grep -q '\.tmp-'; then fail "a temporary file was left: $(ls "$T/dir")"; fi
# OUT a FIFO or a device (/dev/stdout): no tokN.bin "beside" it, in its directory
mkdir "$T/pipes"
mkfifo "$T/pipes/model.fifo"
run_program llmchat-convert "$CONVERT" -t f32 "$DATA/stories260K.gguf" "$T/pipes/model.fifo"
assert_status 1
assert_file_contains "OUT a FIFO" "$T/err" "not a regular file"
[ -z "$(ls "$T/pipes" | grep -v '^model.fifo$')" ] || fail "OUT a FIFO: files written beside it: $(ls "$T/pipes")"
pass "llmchat-convert refuses IN, the tokenizer read, a hard link to IN and OUT as its tokenizer, and writes nothing when the tokenizer's place is taken or OUT has no place beside it"

# ---- /vector make ----
vectors=$XDG_DATA_HOME/llmchat/vectors
cp "$DATA/stories260K.gguf" "$T/model.gguf"
cp "$T/model.gguf" "$T/gguf.orig"
printf '%s\n' '/vector make "a b" "happy" "sad"' '/vector make x\"y "happy" "sad"' \
    '/vector make .. "happy" "sad"' '/vector make mood "happy" "sad"' \
    '/vector make mood "angry" "calm"' "/vector make $T/model.gguf \"a\" \"b\"" >"$T/in"
run_llmchat -m chat "$T/model.gguf" <"$T/in"
assert_status 0
cmp -s "$T/model.gguf" "$T/gguf.orig" || fail "/vector make changed the model"
[ "$(grep -c "is not a control vector's name" "$T/err")" -eq 3 ] ||
    fail "three bad names were not refused: $(cat "$T/err")"
assert_file_contains "a name loaded" "$T/err" "a control vector called 'mood' is loaded already"
assert_file_contains "the model as a vector" "$T/err" "will not write the control vector to $T/model.gguf"
ls -a "$vectors" >"$T/listing"
[ "$(grep -vc '^\.\.\?$' "$T/listing")" -eq 1 ] && grep -qx mood.gguf "$T/listing" ||
    fail "the vectors directory holds more than mood.gguf: $(cat "$T/listing")"
intact "/vector make"
cp "$vectors/mood.gguf" "$T/mood.orig"
printf '%s\n' '/vector make mood "angry" "calm"' >"$T/in"
run_llmchat -m chat -z "$T/tok.bin" "$T/model.bin" <"$T/in"
assert_file_contains "a vector made before" "$T/err" "exists (a vector made before): /vector make --replace mood"
cmp -s "$vectors/mood.gguf" "$T/mood.orig" || fail "mood.gguf changed without --replace"
printf '%s\n' '/vector make --replace mood "angry" "calm"' >"$T/in"
run_llmchat -m chat -z "$T/tok.bin" "$T/model.bin" <"$T/in"
assert_file_contains "--replace" "$T/err" "mood was made from the two texts"
if cmp -s "$vectors/mood.gguf" "$T/mood.orig"; then fail "--replace did not replace mood.gguf"; fi
pass "/vector make refuses bad names and the model before writing, and a vector made before without --replace"

# ---- a run that fails before any position keeps the trace of that name as it was ----
run_llmchat -m generate -n 4 -t 0 -i "Once upon a time" --trace "$T/keep.jsonl" \
    -z "$T/tok.bin" "$T/model.bin" </dev/null
assert_status 0
cp "$T/keep.jsonl" "$T/keep.orig"
head -c 3000 /dev/zero | tr '\0' 'a' | sed 's/a/a /g' >"$T/long.txt" # 3000 words: over -c 64
run_llmchat -m generate -n 4 -t 0 -c 64 -f "$T/long.txt" --trace "$T/keep.jsonl" \
    -z "$T/tok.bin" "$T/model.bin" </dev/null
[ "$rc" -ne 0 ] || fail "a prompt longer than the context ran"
cmp -s "$T/keep.jsonl" "$T/keep.orig" || fail "a run that failed before any position replaced the trace of that name"
ls "$T"/keep.jsonl.tmp-* >/dev/null 2>&1 && fail "a failed run left its temporary trace"
pass "a run that fails before any position leaves the trace of that name as it was"
