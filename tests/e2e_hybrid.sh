#!/bin/sh
# e2e_hybrid.sh — llmchat runs the hybrid family qwen35 (Qwen 3.5: Gated DeltaNet layers
# and gated attention) as llama.cpp 0.4.0 does, on the fixture tests/ref/make_arch_gguf.py
# writes here from the trained stories260K and a seed (three of its five layers Gated
# DeltaNets): with --weights f32 the prompt's ids (55-75 of them, so that the recurrent
# state carries many tokens) and all 40 new ids are llama.cpp's, for three prompts
# (tests/ref/check_llmchat.py greedy against golden/hybrid_greedy.jsonl).
# Skips when numpy is absent.
. "$LLMCHAT_SRCDIR/tests/lib.sh"
need_numpy

REF=$LLMCHAT_SRCDIR/tests/ref
"$NUMPY_PYTHON" "$REF/check_llmchat.py" --llmchat "$LLMCHAT_BIN" --work "$T/models" \
    greedy "$GOLDEN/hybrid_greedy.jsonl" >"$T/check.out" 2>"$T/check.err" ||
    fail "hybrid: $(grep -E '^FAIL|^ +(want|got)|Error' "$T/check.out" "$T/check.err" | head -n 12)"
[ "$(grep -c '^ok   greedy     qwen35 ' "$T/check.out")" -eq 3 ] ||
    fail "not 3 qwen35 greedy checks: $(cat "$T/check.out")"
pass "qwen35 greedy ids as llama.cpp 0.4.0's: $(tail -n 1 "$T/check.out")"
