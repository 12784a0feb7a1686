#!/bin/sh
# e2e_moe_families.sh — llmchat runs the mixture-of-experts families (qwen3moe, olmoe,
# llama files with experts: Mixtral, and gpt-oss) as llama.cpp 0.4.0 does, on the fixtures
# tests/ref/make_arch_gguf.py writes here from the trained stories260K and a seed
# (tests/ref/check_llmchat.py moe does the comparing, against golden/moe_greedy.jsonl):
#   - greedy: with --weights f32 the prompt's ids and all 40 new ids are llama.cpp's;
#   - routing: `-m tensors` at every prompt position, each layer's ffn_moe_topk (the
#     chosen experts, in order) is llama.cpp's, except where the reference puts two of the
#     experts involved within 1e-3 of each other in log-probability (a near-tie), and at
#     least 99% exactly.
# Skips when numpy is absent.
. "$LLMCHAT_SRCDIR/tests/lib.sh"
need_numpy

REF=$LLMCHAT_SRCDIR/tests/ref
"$NUMPY_PYTHON" "$REF/check_llmchat.py" --llmchat "$LLMCHAT_BIN" --work "$T/models" \
    moe "$GOLDEN/moe_greedy.jsonl" >"$T/check.out" 2>"$T/check.err" ||
    fail "moe: $(grep -E '^FAIL|^ +(want|got|position)|Error' "$T/check.out" "$T/check.err" | head -n 12)"
for arch in qwen3moe olmoe mixtral gpt-oss; do
    grep -q "^ok   greedy     $arch " "$T/check.out" || fail "no greedy check of $arch"
    grep -q "^ok   moe routes $arch " "$T/check.out" || fail "no routing check of $arch"
done
[ "$(grep -c '^ok ' "$T/check.out")" -eq 16 ] || fail "not 16 checks: $(cat "$T/check.out")"
pass "mixture-of-experts greedy ids and routes: $(tail -n 1 "$T/check.out")"
