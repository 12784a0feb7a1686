#!/bin/sh
# e2e_perplexity.sh — llmchat -m perplexity end to end: prints "tokens: N", "nll: X",
# "perplexity: Y" with Y = exp(X); the int8 paths (Q8_0 at load, the v2 int8 file
# whose groups straddle rows, the int8 KV cache) are within 2% of fp32; the model's
# own greedy text scores far better than the same words shuffled.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

# The model's own greedy story (the reference implementation's output).
jsonl_get "$GOLDEN/generate_greedy.jsonl" 0 text >"$T/story.txt"
assert_eq "golden entry 0 model" "stories260K.bin" "$(jsonl_get "$GOLDEN/generate_greedy.jsonl" 0 model)"

# The same words in a fixed random order.
"$PYTHON" - "$T/story.txt" >"$T/shuffled.txt" <<'EOF'
import random, sys
words = open(sys.argv[1], encoding="utf-8").read().split()
random.Random(1234).shuffle(words)
sys.stdout.write(" ".join(words) + "\n")
EOF

# ppl MODEL FILE [ARGS...]: sets $tokens, $nll and $ppl from one perplexity run.
ppl() {
    model=$1 file=$2
    shift 2
    run_llmchat -m perplexity -z "$DATA/tok512.bin" -f "$file" "$@" "$(model_file "$model")" </dev/null
    assert_status 0
    tokens=$(sed -n 's/^tokens: *\([0-9][0-9]*\)$/\1/p' "$T/out")
    nll=$(sed -n 's/^nll: *\([0-9.eE+-][0-9.eE+-]*\)$/\1/p' "$T/out")
    ppl=$(sed -n 's/^perplexity: *\([0-9.eE+-][0-9.eE+-]*\)$/\1/p' "$T/out")
    [ -n "$tokens" ] || fail "no 'tokens: N' line on stdout"
    [ -n "$nll" ] || fail "no 'nll: X' line on stdout"
    [ -n "$ppl" ] || fail "no 'perplexity: Y' line on stdout"
    "$PYTHON" -c '
import math, sys
nll, ppl = float(sys.argv[1]), float(sys.argv[2])
sys.exit(0 if ppl >= 1 and abs(math.exp(nll) - ppl) <= 1e-3 * ppl else 1)' "$nll" "$ppl" ||
        fail "perplexity $ppl is not exp(nll) = exp($nll)"
}

# python_ok EXPRESSION MESSAGE: fails with MESSAGE unless the Python expression is true.
python_ok() {
    "$PYTHON" -c "import sys; sys.exit(0 if ($1) else 1)" || fail "$2"
}

ppl stories260K.bin "$T/story.txt" --weights f32
f32_tokens=$tokens f32_ppl=$ppl
[ "$tokens" -gt 100 ] || fail "only $tokens tokens counted in the golden story"

# The token count agrees with the tokenizer's (give or take the BOS).
run_llmchat -m tokenize -z "$DATA/tok512.bin" -f "$T/story.txt" </dev/null
assert_status 0
ids=$(wc -w <"$T/out" | tr -d ' ')
python_ok "abs($f32_tokens - $ids) <= 1" "perplexity counts $f32_tokens tokens, tokenize gives $ids"

ppl stories260K.bin "$T/story.txt"
assert_eq "token count at Q8_0 and fp32" "$f32_tokens" "$tokens"
python_ok "abs($ppl - $f32_ppl) <= 0.02 * $f32_ppl" \
    "Q8_0 perplexity $ppl is not within 2% of fp32 $f32_ppl"
pass "Q8_0 perplexity $ppl vs fp32 $f32_ppl"

ppl stories260K_q80.bin "$T/story.txt"
assert_eq "token count of the int8 file and fp32" "$f32_tokens" "$tokens"
python_ok "abs($ppl - $f32_ppl) <= 0.02 * $f32_ppl" \
    "stories260K_q80.bin perplexity $ppl is not within 2% of fp32 $f32_ppl"
pass "stories260K_q80.bin perplexity $ppl vs fp32 $f32_ppl"

# The int8 KV cache (the default with int8 weights) against the fp32 one, each way.
ppl stories260K.bin "$T/story.txt" --weights f32 --kv-cache q8_0
python_ok "abs($ppl - $f32_ppl) <= 0.02 * $f32_ppl" \
    "fp32 weights, int8 KV cache: perplexity $ppl is not within 2% of fp32 $f32_ppl"
pass "fp32 weights with an int8 KV cache: perplexity $ppl vs $f32_ppl"
ppl stories260K.bin "$T/story.txt" --kv-cache f32
kv_f32_ppl=$ppl
ppl stories260K.bin "$T/story.txt" --kv-cache q8_0
python_ok "$ppl != $kv_f32_ppl" "--kv-cache q8_0 and f32 give the very same perplexity $ppl"
pass "int8 weights: KV cache f32 $kv_f32_ppl, q8_0 $ppl"

ppl stories260K.bin "$T/shuffled.txt" --weights f32
python_ok "5 * $f32_ppl < $ppl" "shuffled text perplexity $ppl is not far above the greedy text's $f32_ppl"
pass "greedy text $f32_ppl, shuffled $ppl"

# -i TEXT works as well as -f FILE.
run_llmchat -m perplexity -z "$DATA/tok512.bin" --weights f32 -i "$(cat "$T/story.txt")" \
    "$DATA/stories260K.bin" </dev/null
assert_status 0
assert_file_contains "perplexity via -i" "$T/out" "perplexity: "
pass "perplexity -i"
