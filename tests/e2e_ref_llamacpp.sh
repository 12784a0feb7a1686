#!/bin/sh
# e2e_ref_llamacpp.sh — the reference forward pass (tests/ref/forward.py) and the tiny
# models of each family (tests/ref/make_arch_gguf.py, written here from their seed) give
# what llama.cpp computed on the same files (golden/arch_greedy.jsonl: llama-cli's greedy
# ids; golden/arch_perplexity.jsonl: llama-perplexity's running perplexity) for llama,
# qwen2, phi3 (LongRoPE long and short, partial rotary), gemma and gemma2, and the greedy
# ids of a llama-cli with qwen3 and gemma3 added (golden/arch_greedy_qwen3_gemma3.jsonl,
# tests/ref/README.md), and llama.cpp 0.4.0's greedy ids and chosen experts (every position
# and layer) on the mixture-of-experts fixtures qwen3moe, olmoe, mixtral and gpt-oss
# (golden/moe_greedy.jsonl); each model is the file llama.cpp ran, byte for byte (sha256).
# Skips when numpy is absent, and in a sanitizer build: it runs none of llmchat's code
# (the -O2 suite holds the reference to llama.cpp's figures).
. "$LLMCHAT_SRCDIR/tests/lib.sh"
[ "${LLMCHAT_SANITIZERS:-no}" != yes ] ||
    skip "a sanitizer build: this checks the Python reference alone, no compiled code"
need_numpy

REF=$LLMCHAT_SRCDIR/tests/ref
"$NUMPY_PYTHON" "$REF/check_llamacpp.py" "$GOLDEN/arch_greedy.jsonl" "$GOLDEN/arch_perplexity.jsonl" \
    "$GOLDEN/arch_greedy_qwen3_gemma3.jsonl" "$GOLDEN/moe_greedy.jsonl" --keep "$T/models" >"$T/out" 2>"$T/err" ||
    fail "check_llamacpp.py: $(grep -E '^FAIL|Error|agree with' "$T/out" "$T/err" | head -n 8)"
n=$(grep -c '^ok ' "$T/out")
[ "$n" -ge 33 ] || fail "only $n checks passed: $(tail -n 3 "$T/out")"
for arch in llama qwen2 phi3 phi3-partial gemma gemma2; do
    grep -q "^ok   greedy     $arch " "$T/out" || fail "no greedy check of $arch"
    grep -q "^ok   perplexity $arch " "$T/out" || fail "no perplexity check of $arch"
done
for arch in qwen3 gemma3; do
    grep -q "^ok   greedy     $arch " "$T/out" || fail "no greedy check of $arch"
done
for arch in qwen3moe olmoe mixtral gpt-oss; do
    grep -q "^ok   moe        $arch " "$T/out" || fail "no mixture-of-experts check of $arch"
done
pass "$(tail -n 1 "$T/out")"
