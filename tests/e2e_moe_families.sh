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
#     make_llamacpp_goldens.py ANCHORS-0.4.0 moe-mxfp4 TOPK (tests/ref/README.md).
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
