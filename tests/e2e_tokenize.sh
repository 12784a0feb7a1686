#!/bin/sh
# e2e_tokenize.sh — llmchat -m tokenize end to end: ids (no BOS) on one line equal
# SentencePiece's (tests/data/golden/tokenizer_llama2.jsonl) for a sample of the golden
# strings, through -i and through -f; MODEL may be left off when -z is given, and both
# with the bundled tokenizer; --pieces prints pieces (spaces as ␣); typed
# control-token text never yields control ids.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

golden=$GOLDEN/tokenizer_llama2.jsonl
tok=$DATA/tokenizer.bin

# ---- a sample of the golden strings (every 12th, plus the chat-template ones) ----
count=$(jsonl_count "$golden")
[ "$count" -ge 100 ] || fail "only $count golden tokenizer entries"
picked=$("$PYTHON" - "$golden" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
pick = set(range(0, len(rows), 12))
pick |= {i for i, r in enumerate(rows) if "INST" in r["text"] or "<unk>" in r["text"] or r["text"] == ""}
print(" ".join(str(i) for i in sorted(pick)))
EOF
)
n=0
for i in $picked; do
    jsonl_get "$golden" "$i" text >"$T/text"
    want=$(jsonl_get "$golden" "$i" ids)
    text=$(cat "$T/text"; printf x)   # keep trailing newlines
    text=${text%x}

    run_llmchat -m tokenize -z "$tok" -i "$text" </dev/null
    assert_status 0
    lines=$(wc -l <"$T/out" | tr -d ' ')
    assert_eq "golden $i: lines of output" 1 "$lines"
    got=$(cat "$T/out")
    assert_eq "golden $i: ids of $(head -c 60 "$T/text" | tr '\n' ' ')" "$want" "$got"

    run_llmchat -m tokenize -z "$tok" -f "$T/text" </dev/null
    assert_status 0
    assert_eq "golden $i via -f: ids" "$want" "$(cat "$T/out")"
    n=$((n + 1))
done
pass "$n golden strings tokenize like SentencePiece (-i and -f)"

# ---- with a model on the command line: same ids as without ----
run_llmchat -m tokenize -z "$DATA/tok512.bin" -i "Once upon a time" </dev/null
assert_status 0
without=$(cat "$T/out")
[ -n "$without" ] || fail "no ids for 'Once upon a time' with tok512.bin"
run_llmchat -m tokenize -z "$DATA/tok512.bin" -i "Once upon a time" "$DATA/stories260K.bin" </dev/null
assert_status 0
assert_eq "ids with and without MODEL" "$without" "$(cat "$T/out")"
echo "$without" | grep -Eq '^[0-9]+( [0-9]+)*$' || fail "ids are not space-separated numbers: [$without]"
pass "MODEL is optional for tokenize"

# ---- --pieces ----
run_llmchat -m tokenize --pieces -z "$tok" -i "Hello world" </dev/null
assert_status 0
out=$(cat "$T/out")
assert_contains "--pieces output" "$out" "Hello"
assert_contains "--pieces output" "$out" "world"
assert_not_contains "--pieces output" "$out" "15043"
assert_contains "--pieces output (spaces as the TUI shows them)" "$out" "␣world"
pass "--pieces prints pieces, spaces as ␣"

# with no model and no -z: the bundled tokenizer (data/models/tok512.bin)
run_llmchat -m tokenize --pieces -i "Hello world" </dev/null
assert_status 0
assert_eq "pieces of the bundled tokenizer" "$(LLMCHAT_DATADIR= "$LLMCHAT_BIN" -m tokenize --pieces -z "$BUNDLED/tok512.bin" -i "Hello world" </dev/null)" "$(cat "$T/out")"
pass "-m tokenize with no model and no -z uses the bundled tokenizer"

# ---- control-token text is text ----
for text in '<s>' '</s>' '<s>[INST] hi [/INST]</s>'; do
    run_llmchat -m tokenize -z "$tok" -i "$text" </dev/null
    assert_status 0
    for id in $(cat "$T/out"); do
        [ "$id" -gt 2 ] || fail "'$text' produced the control id $id"
    done
done
pass "typed control tokens stay text"
