#!/bin/sh
# e2e_hybrid.sh — llmchat runs the hybrid family qwen35 (Qwen 3.5: Gated DeltaNet layers
# and gated attention) as llama.cpp 0.4.0 and the reference pass do, on the fixture
# tests/ref/make_arch_gguf.py writes here from the trained stories260K and a seed (three
# of its five layers Gated DeltaNets), with tests/ref/check_llmchat.py:
#   - greedy: with --weights f32 the prompt's ids (63-75 of them, so that the recurrent
#     state carries many tokens) and all 40 new ids are llama.cpp's, for three prompts
#     (golden/hybrid_greedy.jsonl);
#   - nll: teacher-forced over a story, every token's probability within 5e-3 nats of the
#     float64 reference's (tests/ref/forward.py);
#   - quantized: the fixture made Q8_0 by quantize.py, decoded (--weights f32) the greedy
#     ids the reference's on the same file, in place (--weights native, activations
#     rounded to 8 bits) its top choice the reference's at 80% of a story's positions and
#     its mean NLL within 1%;
#   - effective: the attention rows of every Gated DeltaNet head (its effective attention:
#     the weight of each earlier value in the head's output) equal the reference's finite
#     differences (the recurrence run again in float64 with one value changed at a time),
#     and the gated attention layers' rows the reference's softmax, within 1e-4 of each
#     row's largest weight.
# Skips when numpy is absent.
. "$LLMCHAT_SRCDIR/tests/lib.sh"
need_numpy

REF=$LLMCHAT_SRCDIR/tests/ref
cat >"$T/story.txt" <<'STORY'
Once upon a time, there was a little girl named Lily. She loved to play outside in the park
with her friends. One day, she saw a big red ball under a tree. She ran to get it, but a small
dog took the ball first. Lily was sad, but then the dog came back and dropped the ball at her
feet. They played together all afternoon.
STORY

# check WHAT ARGS...: check_llmchat.py's checks; fails with the lines that failed.
check() {
    what=$1
    shift
    "$NUMPY_PYTHON" "$REF/check_llmchat.py" --llmchat "$LLMCHAT_BIN" --work "$T/models" \
        --text "$T/story.txt" "$what" "$@" >"$T/check.out" 2>"$T/check.err" ||
        fail "$what: $(grep -E '^FAIL|^ +(want|got)|Error' "$T/check.out" "$T/check.err" | head -n 12)"
    cat "$T/check.out"
}

check greedy "$GOLDEN/hybrid_greedy.jsonl" >"$T/greedy"
[ "$(grep -c '^ok   greedy     qwen35 ' "$T/greedy")" -eq 3 ] ||
    fail "not 3 qwen35 greedy checks: $(cat "$T/greedy")"
pass "qwen35 greedy ids as llama.cpp 0.4.0's: $(tail -n 1 "$T/greedy")"

check nll qwen35 >"$T/nll"
grep -q '^ok   nll        qwen35 ' "$T/nll" || fail "no qwen35 perplexity check: $(cat "$T/nll")"
pass "qwen35 teacher-forced against the reference: $(head -n 1 "$T/nll")"

check quantized qwen35:Q8_0 >"$T/quantized"
[ "$(grep -c '^ok   quantized  qwen35 ' "$T/quantized")" -eq 2 ] ||
    fail "not 2 quantized qwen35 checks: $(cat "$T/quantized")"
pass "qwen35 in Q8_0: $(grep -c '^ok ' "$T/quantized") checks agree"

check effective "$GOLDEN/hybrid_greedy.jsonl" >"$T/effective"
[ "$(grep -c '^ok   effective  qwen35 ' "$T/effective")" -eq 3 ] ||
    fail "not 3 effective-attention checks: $(cat "$T/effective")"
pass "qwen35 effective attention as the reference's finite differences: $(head -n 1 "$T/effective")"
