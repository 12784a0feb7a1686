#!/bin/sh
# e2e_patch_trace.sh — `-m patch --trace` and the `--replay` of its trace, end to end
# on stories260K (f32 weights):
#   - the trace is a header (mode "patch", the model, kernels, KV cache, vocabulary) and
#     one patch line whose prompts, tokens, baselines and grid are --json's (resid_pre
#     with the logit difference; head with the KL metric);
#   - --replay recomputes the grid and passes (exit 0), also on the scalar kernels;
#   - a cell or a baseline altered in the trace fails the replay, naming the cell
#     (exit 1);
#   - another model's shape is refused in one line (exit 2); --compare is refused;
#   - --trace naming the model is refused, the model intact; a run that fails leaves no
#     trace, and an existing file as it was.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

M=$DATA/stories260K.gguf
CLEAN='Lily and Tim went to the park. Lily said to'
CORRUPT='Tim and Lily went to the park. Lily said to'

# traced NAME ARGS...: -m patch with --json and --trace $T/NAME.jsonl; the JSON in
# $T/NAME.json; the trace's lines checked against it.
traced() {
    name=$1
    shift
    run_llmchat -m patch --weights f32 --clean "$CLEAN" --corrupt "$CORRUPT" --json \
        --trace "$T/$name.jsonl" "$@" "$M" </dev/null
    assert_status 0
    cp "$T/out" "$T/$name.json"
    "$PYTHON" - "$T/$name.jsonl" "$T/$name.json" <<'PY' || fail "$name: the trace is not --json's run"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
out = json.load(open(sys.argv[2]))
assert len(lines) == 2, len(lines)
h, p = json.loads(lines[0]), json.loads(lines[1])["patch"]
assert h["llmchat_trace"] == 1 and h["mode"] == "patch", h.get("mode")
assert h["model"]["name"] == "stories260K.gguf" and h["model"]["weights"] == "f32", h["model"]
assert h["kv_cache"] and h["kernels"] and len(h["vocab"]) == 512
for k in ("site", "metric", "ids", "corrupt_ids", "layers", "clean", "corrupt", "runs",
          "positions_run"):
    assert p[k] == out[k] or (isinstance(out[k], float) and abs(p[k] - out[k]) <= 1e-5 * max(1, abs(out[k]))), (k, p[k], out[k])
assert [h["vocab"][i] for i in p["ids"]] == out["tokens"]
if out["metric"] == "kl":
    assert p["answer"] is None and p["wrong"] is None, p
else:
    assert p["answer"] == out["answer"]["id"] and p["wrong"] == out["wrong"]["id"], p
assert p["rows"] == len(out["grid"]) and all(len(r) == p["cols"] for r in out["grid"])
for a, b in zip(p["grid"], out["grid"]):  # --json: 6 digits; the trace: 9
    for x, y in zip(a, b):
        assert (x is None) == (y is None), (x, y)
        assert x is None or abs(x - y) <= 1e-5 * max(1, abs(y)), (x, y)
PY
}

traced ld --answer Tim --wrong Lily
traced kl --site head --metric kl
pass "the trace: a header of mode patch and the patch line of --json's run"

for t in ld kl; do
    for k in auto scalar; do
        run_llmchat --replay "$T/$t.jsonl" --kernels "$k" </dev/null
        assert_status 0
        assert_file_contains "$t $k: the report" "$T/out" "replaying $T/$t.jsonl: patching "
        assert_file_contains "$t $k: the baselines" "$T/out" "baselines: clean "
        assert_file_contains "$t $k: cells" "$T/out" "cells compared: $(case $t in ld) echo 75 ;; kl) echo 40 ;; esac)"
        assert_file_contains "$t $k: the verdict" "$T/out" "reproduced: every cell and both baselines within 0.001"
    done
done
grep -q "scalar kernels" "$T/out" || fail "the replay does not say its kernels"
pass "--replay recomputes the grid: the same, also on the scalar kernels"

# edit TRACE OUT PYTHON: OUT is TRACE with its patch object p changed by PYTHON
edit() {
    "$PYTHON" - "$1" "$2" "$3" <<'PY' || fail "editing $1 failed"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
o = json.loads(lines[1])
p = o["patch"]
exec(sys.argv[3])
open(sys.argv[2], "w").write(lines[0] + "\n" + json.dumps(o) + "\n")
PY
}

edit "$T/ld.jsonl" "$T/cell.jsonl" 'p["grid"][2][3] += 0.25'
run_llmchat --replay "$T/cell.jsonl" </dev/null
assert_status 1
assert_file_contains "the cell" "$T/err" "llmchat: $T/cell.jsonl: cell (layer 2, position 3): the trace has "
assert_file_contains "the count" "$T/err" "llmchat: the replay differs from the trace: 1 of 75 cells differ by more than 0.001"
grep -q "largest difference 0.25 (layer 2, position 3)" "$T/out" || fail "the largest difference is not the edited cell"
edit "$T/kl.jsonl" "$T/head.jsonl" 'p["grid"][4][7] = p["grid"][4][7] + 0.01'
run_llmchat --replay "$T/head.jsonl" </dev/null
assert_status 1
assert_file_contains "the head cell" "$T/err" "cell (layer 4, head 7): the trace has "
edit "$T/ld.jsonl" "$T/base.jsonl" 'p["clean"] += 0.01'
run_llmchat --replay "$T/base.jsonl" </dev/null
assert_status 1
assert_file_contains "the baseline" "$T/err" "0 of 75 cells, the clean baseline differ by more than"
pass "an altered cell or baseline fails the replay, named (exit 1)"

run_llmchat "$DATA/aidreams260K.bin" --replay "$T/ld.jsonl" </dev/null
assert_status 2
assert_file_contains "another shape" "$T/err" \
    "llmchat: $T/ld.jsonl: the patching run is of a model of 512 tokens and 5 layers; aidreams260K.bin has 512 tokens and 4 layers"
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "more than one line: $(cat "$T/err")"
run_llmchat --replay "$T/ld.jsonl" --compare </dev/null
assert_status 2
assert_file_contains "--compare" "$T/err" "is a patching run: --replay checks its grid"
pass "a model of another shape and --compare: one line, exit 2"

cp "$M" "$T/model.gguf"
before=$(cksum <"$T/model.gguf")
run_llmchat -m patch --weights f32 --clean "$CLEAN" --corrupt "$CORRUPT" --trace "$T/model.gguf" \
    "$T/model.gguf" </dev/null
assert_status 1
assert_file_contains "the model" "$T/err" "will not write the trace to $T/model.gguf"
assert_eq "the model file" "$before" "$(cksum <"$T/model.gguf")"
run_llmchat -m patch --weights f32 --clean "$CLEAN" --corrupt "$CORRUPT" --layers 2-9 \
    --trace "$T/none.jsonl" "$M" </dev/null
assert_status 2
[ ! -e "$T/none.jsonl" ] || fail "a failed run left a trace"
[ -z "$(ls -A "$T" | grep 'none')" ] || fail "a failed run left a file: $(ls -A "$T")"
cp "$T/ld.jsonl" "$T/kept.jsonl"
run_llmchat -m patch --weights f32 --clean "Lily" --corrupt "Tim and Lily" --trace "$T/kept.jsonl" \
    "$M" </dev/null
assert_status 2
cmp -s "$T/ld.jsonl" "$T/kept.jsonl" || fail "a failed run changed an existing trace"
run_llmchat -m patch --weights f32 --clean "$CLEAN" --corrupt "$CORRUPT" --trace "$T/a.jsonl" \
    --trace-attn "$M" </dev/null
assert_status 2
assert_file_contains "--trace-attn" "$T/err" "-m patch traces its grid, not step records"
pass "the model and existing files are left as they were"
