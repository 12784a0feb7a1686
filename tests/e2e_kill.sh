#!/bin/sh
# e2e_kill.sh — a kill -9 at a random moment of a scripted chat never costs a
# completed turn: 20 times, a chat of eight messages is killed at a random point of
# its run (somewhere between start-up and its last reply), and each time the newest
# saved chat loads (llmchat --resume reads it) and holds every reply that was printed
# whole, word for word. (A reply is saved before its closing newline is printed.)
. "$LLMCHAT_SRCDIR/tests/lib.sh"

STATE=$T/state
MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin
cat >"$T/in" <<'EOF'
Tell me a story about a dog named Max.
Tell me a story about a cat.
What did the cat do?
Tell me a story about a girl named Lily.
Tell me a story about a big red ball.
What happened next?
Tell me a story about Tom and his friend.
Tell me a story about a bird.
EOF

# chat: the scripted chat (one thread: its speed does not matter here); exec, so that
# $! of `chat &` is llmchat itself.
chat() {
    XDG_STATE_HOME=$STATE exec "$LLMCHAT_BIN" -m chat --autosave always -T 1 -t 0.8 -s 5 -n 80 -z "$TOK" "$MODEL" "$@"
}

now_ms() {
    "$PYTHON" -c 'import time; print(int(time.monotonic() * 1000))'
}

# The whole chat once: how long it runs.
t0=$(now_ms)
(chat <"$T/in" >"$T/out" 2>"$T/err") || fail "the scripted chat failed: $(cat "$T/err")"
t1=$(now_ms)
full=$((t1 - t0))
[ "$(wc -l <"$T/out")" -eq 8 ] || fail "the scripted chat gave $(wc -l <"$T/out") replies, not 8"

"$PYTHON" - "$full" >"$T/delays" <<'PYEOF'
import random, sys
random.seed(14)
full = int(sys.argv[1])
for _ in range(20):
    print("%.3f" % (random.uniform(0.0, 1.0) * full / 1000.0))
PYEOF

kills=0
with_turns=0
while read -r delay; do
    kills=$((kills + 1))
    rm -rf "$STATE"
    chat <"$T/in" >"$T/out" 2>"$T/err" &
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    cp "$T/out" "$T/printed"
    done_lines=$(wc -l <"$T/printed")
    f=$(ls -t "$STATE"/llmchat/chats/*.json 2>/dev/null | head -n 1)
    if [ -z "$f" ]; then
        [ "$done_lines" -eq 0 ] || fail "kill $kills after ${delay}s: $done_lines replies printed, but no chat saved"
        continue
    fi
    # the file loads, with llmchat's own reader ...
    XDG_STATE_HOME=$STATE run_llmchat -m chat -T 1 --resume </dev/null
    assert_status 0
    assert_file_contains "kill $kills after ${delay}s: the saved chat" "$T/err" "loaded $f"
    # ... and holds every reply printed whole, word for word
    "$PYTHON" - "$f" "$T/in" "$T/printed" "$done_lines" <<'PYEOF' || fail "kill $kills after ${delay}s: the saved chat lacks a completed turn (above)"
import json, sys
d = json.load(open(sys.argv[1]))
asked = open(sys.argv[2]).read().splitlines()
printed = open(sys.argv[3]).read().split("\n")
n = int(sys.argv[4])
turns = d["turns"]
if len(turns) < n:
    sys.exit("%d replies printed, %d turns saved" % (n, len(turns)))
for i in range(n):
    if turns[i]["user"] != asked[i] or turns[i]["reply"] != printed[i]:
        sys.exit("turn %d differs: %r / %r" % (i + 1, turns[i], printed[i]))
PYEOF
    [ "$done_lines" -eq 0 ] || with_turns=$((with_turns + 1))
done <"$T/delays"
[ "$kills" -eq 20 ] || fail "only $kills kills were made"
[ "$with_turns" -ge 5 ] || fail "only $with_turns of the 20 kills came after a completed reply: the kills missed the chat"
pass "20 kills -9 at random moments (the whole chat runs ${full} ms): the last save always loads and holds every completed turn ($with_turns kills came after at least one)"
