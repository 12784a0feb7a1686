#!/bin/sh
# e2e_setup.sh — what the one front-end setup (src/app/session.c, session_open) gives
# every mode alike: the kernel table chosen once, named in a trace and by --replay;
# --trace in -m perplexity too, without changing what it prints; /set steps is the
# step limit a saved chat keeps (the session holds it, not a front end's copy); and
# --view on a terminal that cannot be drawn on closes the trace it opened (valgrind,
# or LeakSanitizer in a sanitizer build, finds no leak).
. "$LLMCHAT_SRCDIR/tests/lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin

# ---- the kernels: chosen once, named where they are said ----
run_llmchat -m generate -n 4 -s 1 --kernels scalar --trace "$T/gen.jsonl" -i "Once upon a time" \
    -z "$TOK" "$MODEL" </dev/null
assert_status 0
assert_eq "the trace's kernels" scalar "$(jsonl_get "$T/gen.jsonl" 0 kernels)"
run_llmchat --replay "$T/gen.jsonl" --kernels scalar </dev/null
assert_status 0
assert_file_contains "--replay's kernels" "$T/out" "q8_0 KV cache, scalar kernels)"
pass "--kernels scalar: the trace and --replay name the table the program runs"

# ---- -m perplexity --trace ----
printf '%s\n' "Once upon a time, there was a little girl named Lily. She loved to play" \
    "outside in the park. One day, she saw a big dog." >"$T/story.txt"
run_llmchat -m perplexity -T 1 -z "$TOK" -f "$T/story.txt" "$MODEL" </dev/null
assert_status 0
cp "$T/out" "$T/plain"
run_llmchat -m perplexity -T 1 -c 16 --trace "$T/ppl.jsonl" -z "$TOK" -f "$T/story.txt" "$MODEL" </dev/null
assert_status 0
tokens=$(sed -n 's/^tokens: //p' "$T/out")
[ -n "$tokens" ] || fail "no 'tokens: N' line"
assert_eq "the trace's mode" perplexity "$(jsonl_get "$T/ppl.jsonl" 0 mode)"
"$PYTHON" - "$T/ppl.jsonl" "$tokens" <<'PY' || fail "the perplexity trace does not hold the scored positions (above)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()][1:]
tokens = int(sys.argv[2])
scored = [r for r in rows if r["next"] >= 0]
# every scored prediction is a prompt record with its next token's probability
if len(scored) != tokens or any(r["phase"] != "prompt" or r["next_prob"] is None for r in scored):
    print("  %d records with a next token, %d tokens scored" % (len(scored), tokens), file=sys.stderr)
    sys.exit(1)
PY
run_llmchat -m perplexity -T 1 -c 16 -z "$TOK" -f "$T/story.txt" "$MODEL" </dev/null
cmp -s "$T/out" "$T/plain" && fail "-c 16 should score in windows, differently from the whole context"
cp "$T/out" "$T/windows"
run_llmchat -m perplexity -T 1 -c 16 --trace "$T/ppl2.jsonl" -z "$TOK" -f "$T/story.txt" "$MODEL" </dev/null
cmp -s "$T/out" "$T/windows" || fail "--trace changed what -m perplexity prints"
pass "-m perplexity --trace: every scored position in the trace ($tokens), the same numbers printed"

# ---- /set steps is what the saved chat keeps ----
printf '%s\n' '/set steps 7' 'Tell me a story about Tom.' >"$T/in"
run_llmchat -m chat --autosave always -s 3 -z "$TOK" "$MODEL" <"$T/in"
assert_status 0
saved=$(ls "$XDG_STATE_HOME"/llmchat/chats/*.json 2>/dev/null | head -n 1)
[ -n "$saved" ] || fail "--autosave always saved no chat"
"$PYTHON" - "$saved" <<'PY' || fail "the saved chat does not keep /set steps 7 (above)"
import json, sys
chat = json.load(open(sys.argv[1], encoding="utf-8"))
steps = chat["settings"]["steps"]
n = len(chat["turns"][0]["reply_tokens"])
if steps != 7 or n > 7:
    print("  settings.steps %r, a reply of %d tokens" % (steps, n), file=sys.stderr)
    sys.exit(1)
PY
pass "/set steps 7: the reply stops at 7 tokens and the saved chat says steps 7"

# ---- --view on a terminal that cannot be drawn on ----
if ! command -v tmux >/dev/null 2>&1; then
    echo "not checked: --view with TERM=dumb (no tmux to give it a terminal)"
    exit 0
fi
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"
if [ "${LLMCHAT_SANITIZERS:-no}" = yes ]; then
    checker= # LeakSanitizer reports a leak at exit
elif command -v valgrind >/dev/null 2>&1; then
    checker="valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite"
else
    echo "not checked: whether --view frees its trace (no valgrind, not a sanitizer build)"
    exit 0
fi
rm -f "$T/exit"
printf 'cd %s && env TERM=dumb %s %s --view %s 2>%s; echo $? >%s\n' "$(quote "$T")" "$checker" \
    "$(quote "$LLMCHAT_BIN")" "$(quote "$T/gen.jsonl")" "$(quote "$T/err")" "$(quote "$T/exit")" >"$T/run.sh"
last_cmd="llmchat --view (TERM=dumb, in tmux${checker:+, under valgrind})"
$TM new-session -d -s t -x 120 -y 40 "sh $(quote "$T/run.sh")" || hard_error "tmux cannot start a session"
wait_exit
assert_eq "--view with TERM=dumb: exit status" 1 "$rc"
assert_file_contains "--view with TERM=dumb" "$T/err" "cannot start the terminal UI"
pass "--view with TERM=dumb: says why, exits 1, and leaves nothing open"
