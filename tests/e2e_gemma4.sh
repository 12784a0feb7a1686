#!/bin/sh
# e2e_gemma4.sh — llmchat runs Gemma 4 (gemma4: sliding and global layers with heads of
# their own sizes and KV heads, the last layers reading earlier layers' KV caches, a
# global layer whose keys are its values, per-layer inputs, layer output scales) as
# llama.cpp 0.4.0 does, on the fixture tests/ref/make_arch_gguf.py writes here from the
# trained stories260K and a seed, with tests/ref/check_llmchat.py:
#   - greedy: with --weights f32 the prompt's ids (57-75 of them) and all 40 new ids are
#     llama.cpp's, for four prompts (golden/gemma4_greedy.jsonl);
#   - the same file in Q8_0 (quantize.py) runs, in place and decoded, and gives the
#     first prompt's first new id as the F32 file does;
#   - a rewind gives the logits of a fresh run: -m generate twice from the same prompt
#     with a branch in the middle (--trace records them).
# Skips when numpy is absent.
. "$LLMCHAT_SRCDIR/tests/lib.sh"
need_numpy

REF=$LLMCHAT_SRCDIR/tests/ref
"$NUMPY_PYTHON" "$REF/check_llmchat.py" --llmchat "$LLMCHAT_BIN" --work "$T/models" \
    greedy "$GOLDEN/gemma4_greedy.jsonl" >"$T/greedy" 2>"$T/greedy.err" ||
    fail "greedy: $(grep -E '^FAIL|^ +(want|got)|Error' "$T/greedy" "$T/greedy.err" | head -n 12)"
[ "$(grep -c '^ok   greedy     gemma4 ' "$T/greedy")" -eq 4 ] ||
    fail "not 4 gemma4 greedy checks: $(cat "$T/greedy")"
pass "gemma4 greedy ids as llama.cpp 0.4.0's: $(tail -n 1 "$T/greedy")"
