#!/bin/sh
# e2e_moe_families.sh — llmchat runs the mixture-of-experts families (qwen3moe, olmoe,
# llama files with experts: Mixtral, and gpt-oss) as llama.cpp 0.4.0 does, on the fixtures
# tests/ref/make_arch_gguf.py writes here from the trained stories260K and a seed
# (tests/ref/check_llmchat.py moe does the comparing, against golden/moe_greedy.jsonl):
#   - greedy: with --weights f32 the prompt's ids and all 40 new ids are llama.cpp's;
#   - routing: `-m tensors` at every prompt position, each layer's ffn_moe_topk (the
#     chosen experts, in order) is llama.cpp's, except where the reference puts two of the
#     experts involved within 1e-3 of each other in log-probability (a near-tie), and at
#     least 99% exactly;
#   - MXFP4: the gpt-oss fixture made MXFP4_MOE by tests/ref/quantize.py (llama-quantize's
#     layout of that name, gpt-oss's own: expert stacks MXFP4, the other matrices Q8_0, the
#     router F32; golden/moe_greedy_mxfp4.jsonl pins the file's sha256): with the blocks
#     decoded (--weights f32) the greedy ids are the reference's on the same file, all 40;
#     with them in place (--weights native, panels on and off) llama.cpp 0.4.0's by the
#     native rule of e2e_families.sh (at least 16, then the end or a choice within 0.5 of a
#     tie): both round activations to 8 bits, each its own way. Regenerate the golden with
#     make_llamacpp_goldens.py ANCHORS-0.4.0 moe-mxfp4 TOPK (tests/ref/README.md);
#   - a shared expert beside the routed ones (qwen2moe: Qwen2's attention; qwen35moe: Qwen
#     3.5's Gated DeltaNet and gated attention layers): greedy ids and routes as above
#     (golden/moe_shexp_greedy.jsonl, make_llamacpp_goldens.py ... shexp TOPK), every
#     token's probability teacher-forced over a story within 5e-3 nats of the float64
#     reference's (tests/ref/forward.py), and the fixtures made Q8_0: decoded, the
#     reference's greedy ids on the same file; in place, its top choice at 80% of the
#     positions and its mean NLL within 1%.
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

"$NUMPY_PYTHON" "$REF/check_llmchat.py" --llmchat "$LLMCHAT_BIN" --work "$T/models" \
    moe "$GOLDEN/moe_greedy_mxfp4.jsonl" >"$T/mxfp4.out" 2>"$T/mxfp4.err" ||
    fail "MXFP4: $(grep -E '^FAIL|^ +(want|got)|Error' "$T/mxfp4.out" "$T/mxfp4.err" | head -n 12)"
grep -q "^ok   quantized  gpt-oss       MXFP4_MOE --weights f32" "$T/mxfp4.out" || fail "no MXFP4 --weights f32 check"
[ "$(grep -c '^ok   native     gpt-oss       MXFP4_MOE' "$T/mxfp4.out")" -eq 2 ] ||
    fail "not 2 MXFP4 native checks: $(cat "$T/mxfp4.out")"
pass "gpt-oss MXFP4_MOE, blocks decoded and in place: $(tail -n 1 "$T/mxfp4.out")"

cat >"$T/story.txt" <<'STORY'
Once upon a time, there was a little girl named Lily. She loved to play outside in the park
with her friends. One day, she saw a big red ball under a tree. She ran to get it, but a small
dog took the ball first.
STORY
for what in "moe $GOLDEN/moe_shexp_greedy.jsonl" "nll qwen2moe qwen35moe" \
    "quantized qwen2moe:Q8_0 qwen35moe:Q8_0"; do
    # shellcheck disable=SC2086 # the check and its arguments, split on purpose
    "$NUMPY_PYTHON" "$REF/check_llmchat.py" --llmchat "$LLMCHAT_BIN" --work "$T/models" \
        --text "$T/story.txt" $what >>"$T/shexp.out" 2>"$T/shexp.err" ||
        fail "${what%% *}: $(grep -E '^FAIL|^ +(want|got|position)|Error' "$T/shexp.out" "$T/shexp.err" | head -n 12)"
done
for arch in qwen2moe qwen35moe; do
    grep -q "^ok   greedy     $arch " "$T/shexp.out" || fail "no greedy check of $arch"
    grep -q "^ok   moe routes $arch " "$T/shexp.out" || fail "no routing check of $arch"
    grep -q "^ok   nll        $arch " "$T/shexp.out" || fail "no teacher-forced check of $arch"
    [ "$(grep -c "^ok   quantized  $arch " "$T/shexp.out")" -eq 2 ] || fail "not 2 Q8_0 checks of $arch"
done
[ "$(grep -c '^ok ' "$T/shexp.out")" -eq 18 ] || fail "not 18 checks: $(cat "$T/shexp.out")"
pass "a shared expert beside the routed ones (qwen2moe, qwen35moe): $(grep -c '^ok ' "$T/shexp.out") checks agree"
