#!/bin/sh
# e2e_ref_dequant.sh — the independent numpy GGUF reader and dequantizer (tests/ref/gguf.py)
# gives llama.cpp's values (golden/gguf_dequant.jsonl: the first 16 values, the first rows'
# sums, the sum and the sum of squares) for every tensor the golden lists of every fixture
# in tests/data: F32, F16, BF16, Q8_0 (with blocks across rows), Q4_0, Q4_1, Q5_0, Q5_1,
# Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and MXFP4. Skips when numpy is absent.
. "$LLMCHAT_SRCDIR/tests/lib.sh"
need_numpy

REF=$LLMCHAT_SRCDIR/tests/ref
"$NUMPY_PYTHON" "$REF/check_dequant.py" "$GOLDEN/gguf_dequant.jsonl" "$DATA" --require 109 >"$T/out" 2>"$T/err" ||
    fail "check_dequant.py: $(grep -E 'DISAGREE|total|only|Error' "$T/out" "$T/err" | head -n 5)"
grep -q '^total: 109 of 109 golden lines checked agree' "$T/out" || fail "unexpected summary: $(tail -n 1 "$T/out")"
for type in F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K MXFP4; do
    grep -q "^total:.* types:.* $type\( \|$\)" "$T/out" || fail "no $type tensor was checked"
done
pass "$(tail -n 1 "$T/out" | cut -d';' -f1)"
