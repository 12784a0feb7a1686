#!/bin/sh
# e2e_patch.sh — `llmchat -m patch` (activation patching) end to end:
#   - against an independent float64 reference (tests/ref/check_llmchat.py patch: the
#     reference pass, forward.py, with the clean run's activation put in at one layer and
#     position, each cell its own run from a copy of the corrupted run before it): every
#     cell of the resid_pre, attn_out, mlp_out, head, head_q, head_k and head_v grids
#     (logit difference; heads also KL; the reference patches q, k and v before RoPE)
#     within 1e-4, on stories260K (dense),
#     the trained qwen3moe fixture (experts), qwen35 (Gated DeltaNet layers) and
#     qwen35moe (in a sanitizer build stories260K and qwen35moe, whose layers are the
#     other two's kinds together: attention, Gated DeltaNet, experts, a dense MLP; the
#     reference's float64 passes are most of the test's time, and the values are
#     the -O2 build's);
#   - the text grid labels the positions with both prompts' tokens and says the
#     baselines; --json is one object with the grid;
#   - refused with one line and exit 2: prompts of different lengths (both counts said),
#     an empty prompt, an --answer that is no token or several, #ID outside the
#     vocabulary, layers the model lacks, a missing --corrupt, the patch options in
#     another mode, interventions on the command line, --trace-lens (a patching trace
#     holds the grid, no step records: e2e_patch_trace.sh).
. "$LLMCHAT_SRCDIR/tests/lib.sh"
need_numpy

REF=$LLMCHAT_SRCDIR/tests/ref
models="qwen3moe qwen35 qwen35moe" checks=36
if [ "${LLMCHAT_SANITIZERS:-no}" = yes ]; then
    models=qwen35moe checks=18
fi
# shellcheck disable=SC2086 # $models: a list of names
"$NUMPY_PYTHON" "$REF/check_llmchat.py" --llmchat "$LLMCHAT_BIN" --work "$T/models" \
    patch "$DATA/stories260K.gguf" $models >"$T/check.out" 2>"$T/check.err" ||
    fail "patch: $(grep -E '^FAIL|Error' "$T/check.out" "$T/check.err" | head -n 12)"
[ "$(grep -c '^ok   patch ' "$T/check.out")" -eq "$checks" ] ||
    fail "not $checks patching checks: $(cat "$T/check.out")"
pass "patching grids as the float64 reference's: $(tail -n 1 "$T/check.out")"

M=$DATA/stories260K.gguf
CLEAN='Lily and Tim went to the park. Lily said to'
CORRUPT='Tim and Lily went to the park. Lily said to'
run_llmchat -m patch --weights f32 --clean "$CLEAN" --corrupt "$CORRUPT" --answer Tim \
    --wrong Lily --layers 0-2 "$M" </dev/null
assert_status 0
assert_file_contains "the heading" "$T/out" \
    "patching resid_pre, layers 0-2: normalised logit difference of '_Tim' (#"
grep -q "^clean -\{0,1\}[0-9.]*, corrupted -\{0,1\}[0-9.]*" "$T/out" || fail "no baselines"
grep -q "^clean <s>     _Lily   _and    _Tim " "$T/out" || fail "no clean tokens over the positions"
grep -q "^corr  <s>     _Tim    _and    _Lily " "$T/out" || fail "no corrupted tokens"
[ "$(grep -c '^L[0-2] ' "$T/out")" -eq 3 ] || fail "not 3 layer rows"
grep -q "^L0  *0\.000 " "$T/out" || fail "BOS's cell is not 0"
assert_file_contains "the runs" "$T/out" "42 patched runs in 14 passes, 315 positions run"
run_llmchat -m patch --weights f32 --clean "$CLEAN" --corrupt "$CORRUPT" --site head --json \
    --metric kl "$M" </dev/null
assert_status 0
"$PYTHON" - "$T/out" <<'PY' || fail "the JSON object is not as documented"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["site"] == "head" and o["metric"] == "kl", o
assert len(o["tokens"]) == len(o["ids"]) == len(o["corrupt_ids"]) == 15, o["tokens"]
assert o["clean"] == 0 and o["corrupt"] > 0, (o["clean"], o["corrupt"])
assert len(o["grid"]) == 5 and all(len(r) == 8 for r in o["grid"]), o["grid"]
assert o["runs"] == 40 and "answer" not in o, o
PY
pass "the text grid and --json"

refused() { # refused WANT ARGS...: exit 2 with WANT, one line
    want=$1
    shift
    run_llmchat -m patch --weights f32 "$@" "$M" </dev/null
    assert_status 2
    assert_file_contains "$*" "$T/err" "$want"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$*: more than one line: $(cat "$T/err")"
}
refused "llmchat: -m patch: the clean prompt is 9 tokens and the corrupted 10 (BOS included): patching needs them the same length" \
    --clean "Lily went to the park" --corrupt "Ben went to the park"
refused "llmchat: -m patch: the corrupted prompt is empty" --clean "Lily" --corrupt ""
refused "llmchat: --answer 'Zanzibarian' is not one token of the vocabulary (after a space it is" \
    --clean "$CLEAN" --corrupt "$CORRUPT" --answer Zanzibarian --wrong Lily
refused "llmchat: --wrong #999999: not a token id of the vocabulary (0-511)" \
    --clean "$CLEAN" --corrupt "$CORRUPT" --answer Tim --wrong '#999999'
refused "llmchat: --layers 2-9: the model has layers 0-4" --clean "$CLEAN" --corrupt "$CORRUPT" \
    --answer Tim --wrong Lily --layers 2-9 --site mlp_out
refused "llmchat: -m patch runs the model as it is" --clean "$CLEAN" --corrupt "$CORRUPT" \
    --knock-out 0:1
run_llmchat -m patch --clean "$CLEAN" "$M" </dev/null
assert_status 2
assert_file_contains "no --corrupt" "$T/err" "llmchat: -m patch needs --clean TEXT and --corrupt TEXT"
run_llmchat -m generate --clean "$CLEAN" -i x "$M" </dev/null
assert_status 2
assert_file_contains "another mode" "$T/err" "are for -m patch"
run_llmchat -m patch --clean "$CLEAN" --corrupt "$CORRUPT" --trace "$T/t.jsonl" --trace-lens "$M" </dev/null
assert_status 2
assert_file_contains "a trace of step records" "$T/err" "-m patch traces its grid, not step records"
[ ! -e "$T/t.jsonl" ] || fail "-m patch --trace --trace-lens wrote a file"
pass "bad input: one clear line and exit 2"
