#!/bin/sh
# e2e_llama3.sh — Llama-3-shaped and SmolLM2-shaped models end to end:
# make_llama3_shaped.py writes a random-weight model with Llama 3's 128,256-token
# byte-level BPE vocabulary, tied embeddings, grouped-query attention, rope_freqs.weight
# and linear RoPE scaling, and one with GPT-2's merges under SmolLM's pre-tokenizer, no
# BOS and a ChatML template; llmchat's greedy text on each with --weights f32 starts
# with what llama.cpp's llama-cli --temp 0 (f32 KV cache) wrote
# (golden/{llama3,smollm}_shaped.jsonl); the 128K vocabulary works in -m tokenize,
# perplexity, chat (the template recognised from the file) and a trace that replays.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

VOCAB=${LLMCHAT_BUILDDIR:-.}/tests/llama3-vocab.gguf
SMOLLM_VOCAB=${LLMCHAT_BUILDDIR:-.}/tests/smollm-pre-vocab.gguf
for f in "$VOCAB" "$SMOLLM_VOCAB"; do
    [ -f "$f" ] || hard_error "$f is missing (make check decompresses tests/data/*.gguf.gz)"
done
MODEL=$T/llama3-shaped.gguf
SMOLLM=$T/smollm-shaped.gguf
"$PYTHON" "$DATA/make_llama3_shaped.py" "$VOCAB" "$MODEL" || fail "make_llama3_shaped.py failed"
"$PYTHON" "$DATA/make_llama3_shaped.py" "$SMOLLM_VOCAB" "$SMOLLM" smollm ||
    fail "make_llama3_shaped.py smollm failed"

# greedy GOLDEN MODEL: the greedy text of every prompt of GOLDEN starts with llama-cli's
greedy() {
    n=$(jsonl_count "$1")
    [ "$n" -ge 2 ] || fail "$1 has $n entries"
    i=0
    while [ "$i" -lt "$n" ]; do
        prompt=$(jsonl_get "$1" "$i" prompt)
        jsonl_get "$1" "$i" text >"$T/want"
        run_llmchat -m generate --weights f32 -t 0 -n 80 -i "$prompt" "$2" </dev/null
        assert_status 0
        assert_prefix "greedy text of $(basename "$1") $i (llama-cli's)" "$T/want" "$T/out"
        i=$((i + 1))
    done
    pass "greedy text equals llama-cli's on the $n prompts of $(basename "$1")"
}
greedy "$GOLDEN/llama3_shaped.jsonl" "$MODEL"
greedy "$GOLDEN/smollm_shaped.jsonl" "$SMOLLM"

# the int8 path runs too (its text may differ: the weights are quantized)
run_llmchat -m generate -t 0 -n 20 -i "Hello" "$MODEL" </dev/null
assert_status 0

# tokenize: the ids of a golden string, and the pieces as text
run_llmchat -m tokenize -z "$VOCAB" -i "Hello world" </dev/null
assert_status 0
assert_eq "ids of 'Hello world'" "9906 1917" "$(trim <"$T/out")"
run_llmchat -m tokenize -z "$VOCAB" -i "<|eot_id|> I'M" </dev/null
assert_status 0
assert_eq "a typed special token is text" "27 91 68 354 851 91 29 358 28703" "$(trim <"$T/out")"

# perplexity counts the tokens tokenize gives (plus BOS)
printf 'The quick brown fox jumps over the lazy dog.\nHello, world! 12345\n' >"$T/text.txt"
run_llmchat -m tokenize -z "$VOCAB" -f "$T/text.txt" </dev/null
ids=$(wc -w <"$T/out" | tr -d ' ')
run_llmchat -m perplexity --weights f32 -f "$T/text.txt" "$MODEL" </dev/null
assert_status 0
tokens=$(sed -n 's/^tokens: *\([0-9][0-9]*\)$/\1/p' "$T/out")
[ -n "$tokens" ] && [ $((tokens - ids)) -le 1 ] && [ $((ids - tokens)) -le 1 ] ||
    fail "perplexity counts [$tokens] tokens, tokenize gives $ids"

# chat: the model's template is recognised; the reply ends (by <|eot_id|> or the limit)
printf 'Hi there!\n' >"$T/chat.in"
run_llmchat -m chat -t 0 -n 120 --verbose "$MODEL" <"$T/chat.in"
assert_status 0
assert_file_contains "template note" "$T/err" "chat template llama3 (the model's)"
run_llmchat -m chat -t 0 -n 120 --verbose "$SMOLLM" <"$T/chat.in"
assert_status 0
assert_file_contains "template note" "$T/err" "chat template chatml (the model's)"

# a saved chat comes back token for token: a reply closed by <|start_header_id|> (a stop
# token, not the end token <|eot_id|>) keeps it, and a BOS among its ids (a file can hold
# one) stays a BOS, not the unknown token (-1 in this vocabulary: the load failed, the
# turns were gone, and the run still exited 0); /save writes the same ids again
printf 'Hi there!\n/save %s\n' "$T/live.json" >"$T/save.in"
run_llmchat -m chat -t 0 -n 12 "$MODEL" <"$T/save.in"
assert_status 0
"$PYTHON" - "$T/live.json" "$T/crafted.json" "$T/older.json" <<'PY' || fail "cannot craft the saved chats"
import json, sys
chat = json.load(open(sys.argv[1]))
turn = chat["turns"][0]
assert len(turn["reply_tokens"]) >= 3, turn
turn["reply_tokens"][2] = 128000          # <|begin_of_text|>
turn["end_token"] = 128006                # <|start_header_id|>
json.dump(chat, open(sys.argv[2], "w"))
chat.pop("vocab_hash", None)              # as a file from before these members
del turn["end_token"]
json.dump(chat, open(sys.argv[3], "w"))
PY
# same_reply SAVED BACK END: BACK's first reply has SAVED's ids and END closing it
same_reply() {
    "$PYTHON" - "$1" "$2" "$3" <<'PY'
import json, sys
a, b = (json.load(open(p))["turns"] for p in sys.argv[1:3])
ok = len(b) == 1 and b[0]["reply_tokens"] == a[0]["reply_tokens"] and b[0]["end_token"] == int(sys.argv[3])
sys.exit(0 if ok else "%s: %s" % (sys.argv[2], b))
PY
}
for saved in crafted older; do
    printf '/load %s\n/save %s\nAgain\n' "$T/$saved.json" "$T/back.json" >"$T/load.in"
    run_llmchat -m chat -t 0 -n 8 "$MODEL" <"$T/load.in"
    assert_status 0
    assert_file_contains "$saved.json loads" "$T/err" "loaded $T/$saved.json (1 turn)"
    assert_not_contains "$saved.json: every id is in the vocabulary" "$(cat "$T/err")" "outside the vocabulary"
    [ -s "$T/out" ] || fail "no reply after loading $saved.json"
done
same_reply "$T/crafted.json" "$T/back.json" 128009 ||
    fail "the older file's reply did not come back with its ids and <|eot_id|>"
printf '/load %s\n/save %s\n' "$T/crafted.json" "$T/back.json" >"$T/load.in"
run_llmchat -m chat -t 0 "$MODEL" <"$T/load.in"
assert_status 0
same_reply "$T/crafted.json" "$T/back.json" 128006 ||
    fail "the reply did not come back with its BOS and <|start_header_id|>"
pass "a saved chat with a BOS in a reply and a reply ended by <|start_header_id|> comes back token for token"

# a trace of the 128K vocabulary: the header holds every piece once, and it replays
run_llmchat -m generate --weights f32 -t 0 -n 20 -i "Hello world" --trace "$T/t.jsonl" "$MODEL" </dev/null
assert_status 0
header=$(head -n 1 "$T/t.jsonl" | wc -c | tr -d ' ')
[ "$header" -gt 1000000 ] && [ "$header" -lt 2000000 ] ||
    fail "the trace header is $header bytes (128,256 pieces: about 1.26 MB expected)"
run_llmchat --replay "$T/t.jsonl" </dev/null
assert_status 0
assert_contains "replay" "$(cat "$T/out" "$T/err")" "reproduced"
pass "tokenize, perplexity, chat and a trace with 128,256 tokens"
