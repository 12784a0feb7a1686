#!/bin/sh
# e2e_remote_tui.sh — the TUI over a served model (llmchat --server URL in a terminal),
# driven in tmux against tests/fake_server answering with llama-server 0.4.0's recorded
# bytes (tests/data/remote/llama-server): a message is rendered by the server's chat
# template (POST /apply-template) and tokenized there, the reply streams into
# Conversation, the status line names the server and its model, the Tokens pane shows
# the server's top alternatives of a reply token with their probabilities, C colours
# the reply; keys that need the weights say so in one line; Esc stops a slow reply; a
# server that fails in the middle is said in Conversation and the chat goes on; q quits
# with status 0; /save writes the served chat and it is autosaved; --resume reopens it
# on its server with --trace writing the server's records; over ollama (its documented
# /api/chat answer) the reply and its alternatives show too; a digit, Backspace, n, p and
# /force steer a served reply; with a local model and
# --compare-server -m tui each reply is checked against the server (recorded answers):
# the strip under it, the server's probability in Tokens, a failing check one notice.
# Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

REC=$DATA/remote/llama-server
"$LLMCHAT_BIN" --server http://127.0.0.1:1 -m generate -i x 2>&1 | grep -q 'built without' &&
    skip "this llmchat was built without libcurl"

start_fake_server --routes "$REC" --log "$T/fake.log"
url=$FAKE_URL
# a fixed seed: /set's answer lists every setting, the seed among them, and Conversation
# wraps it by the character, so a seed of another length could cut "steps 40" in two
start -- --no-config --server "$url" -t 0 -n 8 -s 1 -i "Once upon a time"
wait_for "Assistant: , there was a little girl"
wait_for "served stories260K.gguf | idle | llama-server at $url | rtt"
grep -q '^BODY: {"messages":\[{"role":"user","content":"Once upon a time"}\]}' "$T/fake.log" ||
    fail "POST /apply-template: $(grep '^BODY' "$T/fake.log")"
grep -q '"prompt":\[1,410,403,407,261,378\],"n_predict":8,"n_probs":20' "$T/fake.log" ||
    fail "POST /completion: $(grep '^BODY: {"prompt' "$T/fake.log")"
pass "a message rendered and tokenized by the server, its reply streamed, the status line"

# Tokens: the prompt's last position predicts the reply's first token: the recorded top 5
keys Tab Tab # Conversation, then Tokens
wait_for "pos 13 (newest)"
i=0
while [ "$i" -lt 8 ]; do
    keys Left
    i=$((i + 1))
done
wait_for "pos 5 of 0-13"
tokens=$(pane Tokens)
assert_contains "Tokens" "$tokens" "next (pos 6): ,"
assert_contains "Tokens" "$tokens" "96.9%"     # exp(-0.0318) for ","
assert_contains "Tokens" "$tokens" "␣there"
assert_contains "Tokens" "$tokens" "2.88%"     # exp(-3.547) for " there"
keys Right
wait_for "sampler: the server's"
pass "Tokens: the server's top alternatives and probabilities of a reply token"

# 2 at position 5: the server's second candidate (" there") put at position 6, and the
# reply asked again from there, the whole sequence as ids, 7 tokens left of 8
keys Left
wait_for "pos 5 of 0-13"
keys 2
wait_for "[position 6 forced; the server goes on from there]"
wait_for "Assistant:  there, there was a little girl"
grep '^BODY: {"prompt"' "$T/fake.log" | tail -n 1 |
    grep -q '"prompt":\[1,410,403,407,261,378,383\],"n_predict":7,' ||
    fail "the forced token's request: $(grep '^BODY: {"prompt' "$T/fake.log" | tail -n 1)"
wait_for "served stories260K.gguf | idle"
pass "a digit chooses the server's candidate at the selected position; the reply goes on from there"

# Backspace takes the newest token back (the reply stays stopped); n asks for one token.
# The reply has 9 tokens (the forced one and the recording's 8: fake_server ignores
# n_predict), so after two are taken back 7 of the 8 the step limit allows remain.
n_before=$(grep -c '^POST /completion' "$T/fake.log")
keys BSpace
wait_for "served stories260K.gguf | stopped"
keys BSpace
wait_for "pos 12 (newest)"
[ "$(grep -c '^POST /completion' "$T/fake.log")" -eq "$n_before" ] || fail "Backspace sent a request"
keys n
wait_for "served stories260K.gguf | idle"
grep '^BODY: {"prompt"' "$T/fake.log" | tail -n 1 | grep -q '"n_predict":1,' ||
    fail "n did not ask for one token: $(grep '^BODY: {"prompt' "$T/fake.log" | tail -n 1)"
pass "Backspace takes a served token back, n asks the server for one more"

keys C
wait_for "prob"
wait_for "The attention, the logit lens"
keys B
wait_for "this needs a local model: the chat runs on a server"
keys g
wait_for "the compute view needs a local model"
keys Escape
pass "C colours the reply; Attention, B (branches) and the compute view say they need a local model"

# /set changes what the next request asks; a second turn renders the dialog again
keys Tab Tab # the input line
type_text "/set temperature 0.5"
keys Enter
wait_for "from the next token: "
type_text "/vector"
keys Enter
wait_for "this needs a local model"
# /force: the text tokenized by the server, its tokens put at the reply's end, the
# reply asked again from there
type_text "/set steps 40"
keys Enter
wait_for "steps 40"
type_text "/force Once upon a time"
keys Enter
wait_for "[the text forced; the server goes on from there]"
wait_for "served stories260K.gguf | idle" # the request answered
grep '^BODY: {"content":"Once upon a time"' "$T/fake.log" | tail -n 1 |
    grep -q '"add_special":false,"with_pieces":true}' ||
    fail "/force's tokenize request: $(grep '^BODY: {"content"' "$T/fake.log" | tail -n 1)"
grep '^BODY: {"prompt"' "$T/fake.log" | tail -n 1 | grep -q ',1,410,403,407,261,378\],"n_predict":' ||
    fail "/force's request does not end with the text's ids: $(grep '^BODY: {"prompt' "$T/fake.log" | tail -n 1)"
type_text "The end"
keys Enter
wait_for "You: The end"
n=$(grep -c '^POST /apply-template' "$T/fake.log")
[ "$n" -eq 2 ] || fail "the second message did not render the dialog ($n renders)"
grep -q '"content":"The end"' "$T/fake.log" || fail "the second render lacks the message"
grep '^BODY: {"prompt"' "$T/fake.log" | tail -n 1 | grep -q '"temperature":0.5,' ||
    fail "/set temperature 0.5 did not reach the request: $(grep '^BODY: {"prompt' "$T/fake.log")"
wait_for "served stories260K.gguf | idle"
pass "/set reaches the next request, /vector needs a local model, /force puts the server's tokens of the text in, a second message renders the dialog again"
type_text "/save $T/tui.json"
keys Enter
wait_for_wrapped "saved to $T/tui.json"
keys Tab q # from the input line to Conversation, then quit
wait_exit
assert_eq "exit status" 0 "$(cat "$T/exit")"
"$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["server"]["url"] == sys.argv[2], d["server"]
assert [t["user"] for t in d["turns"]] == ["Once upon a time", "The end"], d["turns"]
' "$T/tui.json" "$url" || fail "/save in the TUI: $(cat "$T/tui.json")"
set -- "$STATE"/llmchat/chats/*.json
[ "$#" -eq 1 ] && [ -f "$1" ] || fail "the TUI did not autosave the served chat: $*"
pass "/save in the TUI; the served chat autosaved"

# --resume reopens it on its server: the turns shown, the trace written as it goes
start -- --no-config --resume -t 0 -n 8 --trace "$T/tui.jsonl"
wait_for_wrapped "(2 turns)]"
wait_for "You: The end"
wait_for "served stories260K.gguf | idle | llama-server at $url"
type_text "Go on"
keys Enter
wait_for "You: Go on"
wait_for "served stories260K.gguf | idle"
keys Tab q
wait_exit
assert_eq "exit status after --resume" 0 "$(cat "$T/exit")"
head -n 1 "$T/tui.jsonl" | grep -q "\"mode\":\"tui\",\"server\":{\"url\":\"$url\"" ||
    fail "the TUI's trace header: $(head -c 300 "$T/tui.jsonl")"
grep -q '"phase":"gen"' "$T/tui.jsonl" || fail "the TUI's trace has no reply records"
pass "--resume reopens a served chat on its server in the TUI; --trace writes its records"

# ollama: the dialog rendered inside the request; the reply's tokens numbered by text
start_fake_server --routes "$DATA/remote/ollama" --log "$T/ollama.log"
start -- --no-config --server "$FAKE_URL" --server-model stories260K -t 0 -n 3 -i "Once upon a time"
wait_for "Assistant: , there was"
wait_for "served stories260K | idle | ollama at $FAKE_URL"
keys Tab Tab Left Left
wait_for "pos 1 of 0-3"
tokens=$(pane Tokens)
assert_contains "ollama Tokens" "$tokens" "next (pos 2): ␣there"
assert_contains "ollama Tokens" "$tokens" "93.4%"     # exp(-0.0684) for " there"
assert_contains "ollama Tokens" "$tokens" "␣in"
grep -q '^POST /api/chat' "$T/ollama.log" || fail "the TUI over ollama did not POST /api/chat"
keys Tab q
wait_exit
pass "the TUI over ollama: the reply streamed, the server's alternatives in Tokens"

# --compare-server URL -m tui: each local reply checked against the server (recorded)
MODEL=$(model_file stories260K.gguf)
mkdir "$T/check"
cp "$REC/props" "$REC/v1_models" "$DATA/remote/llama-server-check/"completion.* "$T/check/"
start_fake_server --routes "$T/check" --log "$T/check.log"
start -- --no-config "$MODEL" --weights f32 --compare-server "$FAKE_URL" -m tui -t 0 -n 2 \
    -i "Once upon a time"
wait_for "Assistant: ."
wait_for "top-1 3/3"
wait_for "[vs server: ▁▁▁"
# the strip may wrap in the pane: its rows joined
assert_contains "the strip" "$(pane Conversation | tr -s ' \n' '  ')" 'max 1.7e-06 at "</s>"]'
[ "$(grep -c '^POST /completion' "$T/check.log")" -eq 3 ] || fail "not 3 checks: $(grep '^POST' "$T/check.log")"
grep '^BODY: ' "$T/check.log" | tail -n 1 | grep -q '"logit_bias":\[\[2,1000\]\]' ||
    fail "the last check did not force </s>: $(grep '^BODY: ' "$T/check.log" | tail -n 1)"
keys Tab Tab # Conversation, then Tokens: the newest position, </s>
wait_for "server <0.01%, KL 1.7e-06"
keys Tab q
wait_exit
assert_eq "exit status after a checked reply" 0 "$(cat "$T/exit")"
pass "--compare-server -m tui: the reply checked against the server, the strip, the server's probability in Tokens"

# the server fails while checking: one notice, the chat goes on
mkdir "$T/check500"
cp "$REC/props" "$REC/v1_models" "$T/check500/"
cp "$REC/error_500.json" "$T/check500/completion"
echo 500 >"$T/check500/completion.status"
start_fake_server --routes "$T/check500"
start -- --no-config "$MODEL" --compare-server "$FAKE_URL" -m tui -t 0 -n 2 -i "Once upon a time"
wait_for "[the check against the server stopped:"
keys Tab q
wait_exit
assert_eq "exit status after a failed check" 0 "$(cat "$T/exit")"
run_llmchat --no-config "$MODEL" --compare-server "$FAKE_URL" -m chat -i x
assert_status 2
start_fake_server --routes "$DATA/remote/ollama"
start -- --no-config "$MODEL" --compare-server "$FAKE_URL" --server-model stories260K -m tui
wait_exit
assert_eq "exit status with a server that cannot score" 1 "$(cat "$T/exit")"
assert_contains "ollama" "$(cat "$T/err")" "gives no log-probabilities of a given text's tokens"
pass "a check that fails is one notice; -m chat refused; a server that cannot score said before the screen"

# p pauses a slow served reply (the request stops) and p lets it go on from its end
start_fake_server --routes "$REC" --chunk-delay-ms 400 --log "$T/slow.log"
start -- --no-config --server "$FAKE_URL" -t 0 -i "Once upon a time"
wait_for "replying 1 tok"
keys Tab # Conversation
keys p
wait_for "[paused: p goes on, n asks for one token"
wait_for "served stories260K.gguf | stopped"
keys p
wait_for "[going on; the server goes on from there]"
i=0 # the request is on its way: until the server has it (10 s at most)
while [ "$(grep -c '^BODY: {"prompt"' "$T/slow.log")" -lt 2 ] && [ "$i" -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
[ "$(grep -c '^POST /completion' "$T/slow.log")" -eq 2 ] || fail "p did not ask again: $(grep '^POST' "$T/slow.log")"
grep '^BODY: {"prompt"' "$T/slow.log" | tail -n 1 | grep -q '"prompt":\[1,410,403,407,261,378,432' ||
    fail "p's request is not the sequence so far: $(grep '^BODY: {"prompt' "$T/slow.log" | tail -n 1)"
keys Escape
wait_for "served stories260K.gguf | stopped"
keys q
wait_exit
pass "p pauses a served reply and lets it go on from where it stopped"

# Esc stops a slow reply
start_fake_server --routes "$REC" --chunk-delay-ms 400
start -- --no-config --server "$FAKE_URL" -t 0 -i "Once upon a time"
wait_for "replying 1 tok"
keys Escape
wait_for "[stopped]"
wait_for "served stories260K.gguf | stopped"
keys Tab q
wait_exit
pass "Esc stops a reply: the request cancelled"

# a server that fails: said in Conversation, the chat goes on
mkdir "$T/r500"
cp "$REC/props" "$REC/v1_models" "$REC/tokenize" "$REC/apply-template" "$T/r500/"
cp "$REC/error_500.json" "$T/r500/completion"
echo 500 >"$T/r500/completion.status"
start_fake_server --routes "$T/r500"
start -- --no-config --server "$FAKE_URL" -i "Once upon a time"
wait_for "[the server failed: $FAKE_URL/completion answered"
wait_for "500: [json.exception.parse_error.101]"
keys Tab q
wait_exit
assert_eq "exit status after a failed reply" 0 "$(cat "$T/exit")"
pass "a 500 in the middle of a chat: one notice, q quits with 0"

# nothing listening: one line before the screen opens, exit 1
stop_fake_server
run_llmchat --no-config --server "$FAKE_URL" -m tui
assert_status 1
assert_contains "stderr" "$(cat "$T/err")" "cannot connect to $FAKE_URL/props"
pass "nothing listening: one line, exit 1"
