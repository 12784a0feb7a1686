#!/bin/sh
# e2e_gemma4.sh — llmchat runs Gemma 4 (gemma4: sliding and global layers with heads of
# their own sizes and KV heads, the last layers reading earlier layers' KV caches, a
# global layer whose keys are its values, per-layer inputs, layer output scales) as
# llama.cpp 0.4.0 does, on the fixture tests/ref/make_arch_gguf.py writes here from the
# trained stories260K and a seed, with tests/ref/check_llmchat.py:
#   - greedy: with --weights f32 the prompt's ids (57-75 of them) and all 40 new ids are
#     llama.cpp's, for four prompts (golden/gemma4_greedy.jsonl);
#   - the steps -m tensors gives are each layer's own width, and the layers that share
#     a cache have no keys or values.
# Rewind, branch and the batch's bits are test_hybrid's, the loader's checks
# test_model_family's (on family_gguf.h's tiny gemma4). Skips when numpy is absent.
. "$LLMCHAT_SRCDIR/tests/lib.sh"
need_numpy

REF=$LLMCHAT_SRCDIR/tests/ref
"$NUMPY_PYTHON" "$REF/check_llmchat.py" --llmchat "$LLMCHAT_BIN" --work "$T/models" \
    greedy "$GOLDEN/gemma4_greedy.jsonl" >"$T/greedy" 2>"$T/greedy.err" ||
    fail "greedy: $(grep -E '^FAIL|^ +(want|got)|Error' "$T/greedy" "$T/greedy.err" | head -n 12)"
[ "$(grep -c '^ok   greedy     gemma4 ' "$T/greedy")" -eq 4 ] ||
    fail "not 4 gemma4 greedy checks: $(cat "$T/greedy")"
pass "gemma4 greedy ids as llama.cpp 0.4.0's: $(tail -n 1 "$T/greedy")"

# The compute view's steps (-m tensors) are each layer's own: Qcur and kqv as wide as
# the layer's heads (sliding 8 x 8, global 8 x 16), the sharing layers 3 and 4 without
# Kcur and Vcur, their feed-forward twice as wide.
model=$(ls "$T"/models/gemma4-seed1.gguf)
run_llmchat --no-config -m tensors --weights f32 --position 5 \
    -i "Once upon a time there was" "$model"
assert_status 0
"$NUMPY_PYTHON" - "$T/out" >"$T/widths" <<'PY' || fail "step widths: $(cat "$T/widths")"
import json, sys
got = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    got[(r['name'], r['layer'])] = len(r['values'])
want = {('Qcur', l): w for l, w in enumerate((64, 64, 128, 64, 128))}
want.update({('kqv', l): w for l, w in enumerate((64, 64, 128, 64, 128))})
want.update({('ffn_gate', l): w for l, w in enumerate((172, 172, 172, 344, 344))})
want.update({('Kcur', 0): 32, ('Kcur', 1): 32, ('Kcur', 2): 32})
bad = [(k, got.get(k), w) for k, w in want.items() if got.get(k) != w]
bad += [(k, 'present') for k in (('Kcur', 3), ('Kcur', 4), ('Vcur', 3), ('Vcur', 4)) if k in got]
print(bad or 'ok')
sys.exit(1 if bad else 0)
PY
pass "gemma4 steps as wide as each layer's heads; no keys or values in the sharing layers"
