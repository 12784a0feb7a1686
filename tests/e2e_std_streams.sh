#!/bin/sh
# e2e_std_streams.sh — standard input, output and error as a Unix tool keeps them:
# output that cannot be written (a full disk: /dev/full; a closed stdout) is said on
# stderr with exit status 1, not lost under a 0; a stream the program was started
# without never lends its number to a file llmchat opens (a closed stdout or stderr
# would otherwise put the story or the speed line into the trace); a closed stdin is
# a read error, not the model file read as messages; input text stops at its first NUL
# byte (/dev/zero is empty text, not a memory hog).
. "$LLMCHAT_SRCDIR/tests/lib.sh"

tok=$DATA/tok512.bin
model=$DATA/stories260K.bin
chat=$BUNDLED/chat260K.bin
CONVERT=$(dirname "$LLMCHAT_BIN")/llmchat-convert
BENCH=$(dirname "$LLMCHAT_BIN")/llmchat-bench

[ -w /dev/full ] || skip "no /dev/full on this system"

# full PROGRAM-NAME PATH ARGS...: PATH ARGS with stdout on /dev/full exits 1 and says
# "NAME: standard output: ..." on stderr.
full() {
    name=$1 path=$2
    shift 2
    last_cmd="$name $* >/dev/full"
    rc=0
    $run_timeout "$path" "$@" >/dev/full 2>"$T/err" </dev/null || rc=$?
    [ "$rc" -eq 1 ] || fail "$name $* >/dev/full: exit status $rc, expected 1"
    grep -q "^$name: standard output: No space left on device" "$T/err" ||
        fail "$name $* >/dev/full: no '$name: standard output: ...' on stderr"
}

# ---- a full disk: said, status 1 ----
full llmchat "$LLMCHAT_BIN" -m generate -t 0 -n 50 -z "$tok" -i "Once upon a time" "$model"
full llmchat "$LLMCHAT_BIN" -m tokenize -z "$tok" -i "Once upon a time"
full llmchat "$LLMCHAT_BIN" --help
full llmchat "$LLMCHAT_BIN" --version
full llmchat-convert "$CONVERT" --version
full llmchat-bench "$BENCH" --help
# -m chat from a pipe: the first reply that cannot be written ends the chat
printf 'Tell me a story.\nAnd another.\nAnd a third.\n' >"$T/msgs"
last_cmd="llmchat -m chat <msgs >/dev/full"
rc=0
$run_timeout "$LLMCHAT_BIN" -m chat -t 0 -n 20 "$chat" <"$T/msgs" >/dev/full 2>"$T/err" || rc=$?
[ "$rc" -eq 1 ] || fail "-m chat >/dev/full: exit status $rc, expected 1"
grep -q "^llmchat: standard output: No space left on device" "$T/err" || fail "-m chat >/dev/full: not said"
pass "output that cannot be written is said, with exit status 1"

# ---- closed stdout or stderr: the trace stays a trace ----
for closed in 1 2; do
    rm -f "$T/t.jsonl"
    last_cmd="llmchat -m generate --trace t.jsonl ($closed closed)"
    rc=0
    if [ "$closed" = 1 ]; then
        $run_timeout "$LLMCHAT_BIN" -m generate -t 0 -n 20 -z "$tok" -i "Once upon" --trace "$T/t.jsonl" \
            "$model" >&- 2>"$T/err" </dev/null || rc=$?
        [ "$rc" -eq 1 ] || fail "stdout closed: exit status $rc, expected 1 (the story was not written)"
        grep -q "^llmchat: standard output: Bad file descriptor" "$T/err" || fail "stdout closed: not said"
    else
        $run_timeout "$LLMCHAT_BIN" -m generate -t 0 -n 20 -z "$tok" -i "Once upon" --trace "$T/t.jsonl" \
            "$model" >"$T/out" 2>&- </dev/null || rc=$?
        [ "$rc" -eq 0 ] || fail "stderr closed: exit status $rc"
        [ -s "$T/out" ] || fail "stderr closed: no story on stdout"
    fi
    head -n 1 "$T/t.jsonl" | grep -q '^{"llmchat_trace":1' ||
        fail "descriptor $closed closed: the trace's first line is not its header: $(head -c 80 "$T/t.jsonl")"
    if grep -v '^{' "$T/t.jsonl" | grep -q .; then
        fail "descriptor $closed closed: the trace holds lines that are not records: $(grep -v '^{' "$T/t.jsonl" | head -n 2)"
    fi
    run_llmchat --replay "$T/t.jsonl" -z "$tok" </dev/null
    assert_status 0
done
pass "a closed stdout or stderr lends its number to no file"

# ---- closed stdin: one message, then a read error ----
last_cmd="llmchat -m chat -i ... <&-"
rc=0
$run_timeout "$LLMCHAT_BIN" -m chat -t 0 -n 5 -i "Tell me a story about Tom." "$chat" >"$T/out" 2>"$T/err" <&- || rc=$?
[ "$rc" -eq 1 ] || fail "stdin closed: exit status $rc, expected 1"
assert_eq "reply lines with stdin closed" 1 "$(wc -l <"$T/out" | tr -d ' ')"
assert_file_contains "stdin closed" "$T/err" "reading standard input"
pass "a closed stdin is a read error"

# ---- input text ends at its first NUL byte ----
run_llmchat -m tokenize -z "$tok" -f /dev/zero
assert_status 0
assert_file_contains "NUL warning" "$T/err" "NUL"
printf 'Once upon\000 a time' | run_llmchat -m tokenize -z "$tok" -f -
assert_status 0
run_llmchat -m tokenize -z "$tok" -i "Once upon" </dev/null
cp "$T/out" "$T/want"
printf 'Once upon\000 a time' | run_llmchat -m tokenize -z "$tok" -f -
cmp -s "$T/out" "$T/want" || fail "text after a NUL byte was tokenized: $(cat "$T/out") against $(cat "$T/want")"
pass "input text ends at its first NUL byte"
