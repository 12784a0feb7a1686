#!/bin/sh
# e2e_gemma4_moe.sh — llmchat runs Gemma 4 with experts (Gemma-4-26B-A4B's layout: in every
# layer the dense GELU feed-forward beside a router over experts whose gate and up are one
# fused stack, with their own norms, the router's input scale and a per-expert output scale)
# as llama.cpp 0.4.0 does, on the fixture tests/ref/make_arch_gguf.py gemma4moe writes here
# from the trained stories260K and a seed (5 layers, 8 experts of 96 units, 2 used), with
# tests/ref/check_llmchat.py moe against golden/gemma4_moe_greedy.jsonl:
#   - greedy: with --weights f32 the prompt's ids (62 and 65 of them) and all 40 new ids
#     are llama.cpp's, for two prompts;
#   - routing: `-m tensors` at every prompt position, each layer's ffn_moe_topk (the two
#     chosen experts, in order) is llama.cpp's, every one: the reference (forward.py) does
#     not run gemma4, so no near-tie is excused.
# The dense gemma4 fixture is e2e_gemma4's. Skips when numpy is absent.
. "$LLMCHAT_SRCDIR/tests/lib.sh"
need_numpy

REF=$LLMCHAT_SRCDIR/tests/ref
"$NUMPY_PYTHON" "$REF/check_llmchat.py" --llmchat "$LLMCHAT_BIN" --work "$T/models" \
    moe "$GOLDEN/gemma4_moe_greedy.jsonl" >"$T/check.out" 2>"$T/check.err" ||
    fail "moe: $(grep -E '^FAIL|^ +(want|got|position)|Error' "$T/check.out" "$T/check.err" | head -n 12)"
[ "$(grep -c '^ok   greedy     gemma4moe ' "$T/check.out")" -eq 2 ] ||
    fail "not 2 gemma4moe greedy checks: $(cat "$T/check.out")"
[ "$(grep -c '^ok   moe routes gemma4moe ' "$T/check.out")" -eq 2 ] ||
    fail "not 2 gemma4moe routing checks: $(cat "$T/check.out")"
[ "$(grep -c '^ok ' "$T/check.out")" -eq 4 ] || fail "not 4 checks: $(cat "$T/check.out")"
pass "gemma4 with experts: greedy ids and every route as llama.cpp 0.4.0's: $(tail -n 1 "$T/check.out")"
