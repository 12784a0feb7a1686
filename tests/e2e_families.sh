#!/bin/sh
# e2e_families.sh — llmchat runs every GGUF family it reads (llama, qwen2, qwen3, phi3 with
# LongRoPE long and short and partial rotary, gemma, gemma2, gemma3) as the references do,
# on the tiny models tests/ref/make_arch_gguf.py writes here from their seeds
# (tests/ref/check_llmchat.py does the comparing):
#   - greedy: with --weights f32 the prompt's ids and every new id are llama-cli's
#     (golden/arch_greedy.jsonl) or, for qwen3 and gemma3, which this llama.cpp does not
#     know, the reference's checked against a patched one (arch_greedy_qwen3_gemma3.jsonl);
#   - perplexity: each token's probability within 5e-3 nats of the reference pass
#     (tests/ref/forward.py, float64), the mean within 2e-4;
#   - quantized: phi3 with rows of 256 (its fused attn_qkv and gate-up tensors as Q4_K),
#     qwen2 (Q8_0) and llama (MXFP4) give the reference's greedy ids with the blocks decoded, and with
#     them computed in place (--weights native) the reference's top choice at 80% of the
#     positions and its perplexity within 1%;
#   - native: llama, qwen2 and phi3 with every matrix Q8_0 (quantize.py) give llama-cli's
#     greedy ids on the same files (golden/arch_greedy_q8_0.jsonl) with the blocks in
#     place, panels on and off: both round activations to 8 bits, each its own way, so
#     the ids must agree for at least 16 and up to the end or to a choice within 0.5 of
#     a tie.
# Skips when numpy is absent.
. "$LLMCHAT_SRCDIR/tests/lib.sh"
need_numpy

REF=$LLMCHAT_SRCDIR/tests/ref
cat >"$T/story.txt" <<'EOF'
Once upon a time, there was a little girl named Lily. She loved to play outside in the park
with her friends. One day, she saw a big red ball under a tree. She ran to get it, but a small
dog took the ball first. Lily was sad, but then the dog came back and dropped the ball at her
feet. They played together all afternoon.
EOF

# check WHAT ARGS...: check_llmchat.py's checks; fails with the lines that failed.
check() {
    what=$1
    shift
    "$NUMPY_PYTHON" "$REF/check_llmchat.py" --llmchat "$LLMCHAT_BIN" --work "$T/models" \
        --text "$T/story.txt" "$what" "$@" >"$T/check.out" 2>"$T/check.err" ||
        fail "$what: $(grep -E '^FAIL|^ +(want|got)|Error' "$T/check.out" "$T/check.err" | head -n 12)"
    cat "$T/check.out"
}

check greedy "$GOLDEN/arch_greedy.jsonl" "$GOLDEN/arch_greedy_qwen3_gemma3.jsonl" >"$T/greedy"
for arch in llama qwen2 qwen3 phi3 phi3-partial gemma gemma2 gemma3; do
    grep -q "^ok   greedy     $arch " "$T/greedy" || fail "no greedy check of $arch"
done
[ "$(grep -c '^ok ' "$T/greedy")" -eq 18 ] || fail "not 18 greedy cases: $(cat "$T/greedy")"
pass "greedy ids: $(tail -n 1 "$T/greedy")"

check nll llama qwen2 qwen3 phi3 phi3-partial gemma gemma2 gemma3 >"$T/nll"
[ "$(grep -c '^ok ' "$T/nll")" -eq 8 ] || fail "not 8 perplexity checks: $(cat "$T/nll")"
pass "perplexity: $(tail -n 1 "$T/nll")"

check native "$GOLDEN/arch_greedy_q8_0.jsonl" >"$T/native"
[ "$(grep -c '^ok ' "$T/native")" -eq 14 ] || fail "not 14 native checks: $(cat "$T/native")"
pass "Q8_0 in place against llama-cli: $(tail -n 1 "$T/native")"

check quantized >"$T/quant"
[ "$(grep -c '^ok ' "$T/quant")" -eq 6 ] || fail "not 6 quantized checks: $(cat "$T/quant")"
pass "quantized: $(tail -n 1 "$T/quant")"
