#!/bin/sh
# e2e_tensors.sh — `llmchat -m tensors` against the independent numpy pass
# (tests/ref/forward.py --tensors), step by step (tests/ref/compare_tensors.py):
#   - fp32 (--weights f32) on stories260K.gguf and on the tiny GQA llama that
#     make_arch_gguf.py writes: every step within 1e-4 relative L2 (the reference's
#     float32 rounding is at most 4e-6 on these models), at the last position, at
#     --position 3 and for --layers 2-3; and on a tiny Gemma 2, whose steps llmchat does
#     not write (inp_scaled, the post-norms) compare_tensors.py names without failing;
#     and on the gpt-oss fixture (make_arch_gguf.py gpt-oss: sinks, biases, YaRN, window 8,
#     the clamped SwiGLU, 16 experts), whose router logits llmchat writes with the bias
#     added, which compare_tensors.py compares as the reference's ffn_moe_logits_biased;
#   - int8 activations (the pass's Q8_0 quantization of every matrix input): the file's
#     Q8_0 weights (stories260K-q8_0.gguf), weights llmchat quantized, Q4_K and Q6_K in
#     place (rand256-q4_k_m.gguf), MXFP4 in place (stories260K made MXFP4 by
#     tests/ref/quantize.py; its ffn_down, rows of 172, stays F32 and is made Q8_0), each
#     with an fp32 KV cache: the first quantized
#     products (layer 0's Qcur, Kcur, Vcur) within 1.2e-2 and every step within 6e-2;
#     with the int8 KV cache too, every step within 0.25 (docs/testing.md derives these);
#   - the interventions: a knocked-out head's kqv is 0 and nothing before its layer
#     moves; a control vector moves l_out by exactly its direction;
#   - --trace-tensors: every record carries every step, whose first values are the
#     ones -m tensors writes for that position;
#   - bad options: a message and exit status 2.
# Skips when numpy is absent.
. "$LLMCHAT_SRCDIR/tests/lib.sh"
need_numpy

REF=$LLMCHAT_SRCDIR/tests/ref
TEXT="Once upon a time, there was a little girl named Lily. She loved to play"

# ids MODEL: BOS and the ids of TEXT, comma-separated, for forward.py.
ids() {
    run_llmchat -m tokenize --no-config -i "$TEXT" "$1"
    assert_status 0
    bos=$("$NUMPY_PYTHON" -c "import sys; sys.path.insert(0, '$REF'); import gguf; \
print(gguf.GGUFFile('$1').get('tokenizer.ggml.bos_token_id'))")
    printf '%s,%s' "$bos" "$(tr ' ' ',' <"$T/out")"
}

# check NAME MODEL TOL [REF-ARGS] -- [LLMCHAT-ARGS]: llmchat's steps against the
# reference's within TOL; the comparison's summary in $T/NAME.cmp.
check() {
    name=$1 model=$2 tol=$3
    shift 3
    refargs=
    while [ "$1" != "--" ]; do
        refargs="$refargs $1"
        shift
    done
    shift
    # shellcheck disable=SC2086
    "$NUMPY_PYTHON" "$REF/forward.py" "$model" --ids "$(ids "$model")" $refargs >"$T/$name.ref" ||
        fail "$name: forward.py failed"
    run_llmchat -m tensors --no-config -i "$TEXT" "$@" "$model"
    assert_status 0
    cp "$T/out" "$T/$name.jsonl"
    "$NUMPY_PYTHON" "$REF/compare_tensors.py" "$T/$name.ref" "$T/$name.jsonl" --tol "$tol" \
        >"$T/$name.cmp" 2>&1 || {
        grep -v '^ok' "$T/$name.cmp" >&2
        fail "$name: llmchat's steps differ from the reference's by more than $tol"
    }
    grep -q 'missing' "$T/$name.cmp" && fail "$name: steps are missing: $(tail -n 1 "$T/$name.cmp")"
    pass "$name: $(tail -n 1 "$T/$name.cmp")"
}

# ---- fp32: the reference's own rounding ----
S=$DATA/stories260K.gguf
check f32 "$S" 1e-4 --tensors -- --weights f32
[ "$(wc -l <"$T/f32.jsonl")" -eq $((3 + 5 * 15)) ] || fail "not 78 steps: $(wc -l <"$T/f32.jsonl")"
head -n 1 "$T/f32.jsonl" | grep -q '^{"name": "inp_embd", "layer": -1, "pos": 20, "shape": \[64\], "values": \[' ||
    fail "the first record is not inp_embd at position 20: $(head -c 120 "$T/f32.jsonl")"
grep -q '"name": "Kcur", "layer": 0, "pos": 20, "shape": \[4, 8\]' "$T/f32.jsonl" || fail "Kcur is not [4, 8]"
grep -q '"name": "kq_soft_max", "layer": 4, "pos": 20, "shape": \[8, 21\]' "$T/f32.jsonl" ||
    fail "kq_soft_max is not [8, 21]"
check f32-position "$S" 1e-4 --tensors 3 -- --weights f32 --position 3
check f32-layers "$S" 1e-4 --tensors --layers 2-3 -- --weights f32 --layers 2-3
[ "$(wc -l <"$T/f32-layers.jsonl")" -eq $((3 + 2 * 15)) ] || fail "--layers 2-3: not 33 steps"

"$NUMPY_PYTHON" "$REF/make_arch_gguf.py" llama "$T/llama.gguf" >/dev/null || fail "make_arch_gguf.py llama failed"
check gqa "$T/llama.gguf" 1e-4 --tensors -- --weights f32
grep -q '"name": "Vcur", "layer": 2, "pos": 20, "shape": \[2, 16\]' "$T/gqa.jsonl" || fail "GQA: Vcur is not [2, 16]"

# Gemma 2 (26 layers): compare_tensors.py compares llmchat's inp_embd, already scaled by
# sqrt(dim), as the reference's inp_scaled, and lists the post-norms, which llmchat
# does not write, without failing on them; every step written agrees.
"$NUMPY_PYTHON" "$REF/make_arch_gguf.py" gemma2 "$T/gemma2.gguf" >/dev/null || fail "make_arch_gguf.py gemma2 failed"
check gemma2 "$T/gemma2.gguf" 1e-4 --tensors -- --weights f32 --kv-cache f32
assert_file_contains "gemma2: the scaled embedding" "$T/gemma2.cmp" "its inp_embd is the embedding already scaled"
assert_file_contains "gemma2: the post-norms" "$T/gemma2.cmp" "attn_post_norm (26 layers), ffn_post_norm (26 layers)"

# gpt-oss: every step within 1e-4 (measured 3.5e-6), the biased router logits included.
# Against llama.cpp 0.4.0 these steps agree as well (tests/ref/README.md, measured by hand).
"$NUMPY_PYTHON" "$REF/make_arch_gguf.py" gpt-oss "$T/gpt-oss.gguf" >/dev/null || fail "make_arch_gguf.py gpt-oss failed"
check gpt-oss "$T/gpt-oss.gguf" 1e-4 --tensors -- --weights f32 --kv-cache f32
assert_file_contains "gpt-oss: the biased router logits" "$T/gpt-oss.cmp" "compared as ffn_moe_logits_biased"
grep -q '^ok   ffn_moe_logits_biased layer   4' "$T/gpt-oss.cmp" || fail "gpt-oss: layer 4's biased router logits not compared"
for step in kq_soft_max ffn_moe_topk ffn_moe_weights ffn_moe_out; do
    grep -q "^ok   $step  *layer   4" "$T/gpt-oss.cmp" || fail "gpt-oss: no $step of layer 4"
done

# ---- int8 activations ----
# one quantization: layer 0's projections read attn_norm quantized once
first_products() {
    for step in Qcur Kcur Vcur; do
        rel=$(sed -n "s/^ok   $step  *layer   0 pos [0-9]*  relative L2 \([0-9.e+-]*\),.*/\1/p" "$T/$1.cmp")
        [ -n "$rel" ] || fail "$1: no line for $step of layer 0"
        "$NUMPY_PYTHON" -c "import sys; sys.exit(0 if $rel <= 1.2e-2 else 1)" ||
            fail "$1: layer 0's $step is $rel from the reference: one quantization should give ~5e-3"
    done
}
"$NUMPY_PYTHON" "$REF/quantize.py" "$S" "$T/stories260K-mxfp4.gguf" MXFP4 ||
    fail "quantize.py MXFP4 failed"
for spec in "q8_0-file|$DATA/stories260K-q8_0.gguf|" "q8_0-made|$S|--weights q8_0" \
    "q4_k_m|$DATA/rand256-q4_k_m.gguf|" "mxfp4|$T/stories260K-mxfp4.gguf|"; do
    name=${spec%%|*} rest=${spec#*|}
    model=${rest%%|*} opts=${rest#*|}
    # shellcheck disable=SC2086
    check "$name" "$model" 6e-2 --tensors -- --kv-cache f32 $opts
    first_products "$name"
done
check q8_0-kv "$DATA/stories260K-q8_0.gguf" 0.25 --tensors --

# ---- interventions ----
run_llmchat -m tensors --no-config -i "$TEXT" --weights f32 --knock-out 2:3 "$S"
assert_status 0
cp "$T/out" "$T/knocked.jsonl"
"$NUMPY_PYTHON" - "$T/f32.jsonl" "$T/knocked.jsonl" <<'PY' || fail "the knock-out is not what it should be"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert [(r["name"], r["layer"]) for r in a] == [(r["name"], r["layer"]) for r in b]
for x, y in zip(a, b):
    if x["name"] == "inp_embd" or 0 <= x["layer"] < 2:
        assert x["values"] == y["values"], "%s of layer %d moved" % (x["name"], x["layer"])
    if x["name"] == "kqv" and x["layer"] == 2:
        hs = x["shape"][1]
        for h in range(x["shape"][0]):
            got, was = y["values"][h * hs:(h + 1) * hs], x["values"][h * hs:(h + 1) * hs]
            assert got == ([0.0] * hs if h == 3 else was), "head %d's kqv" % h
    if x["name"] == "l_out" and x["layer"] >= 2:
        assert x["values"] != y["values"], "l_out of layer %d did not move" % x["layer"]
PY
pass "--knock-out 2:3: head 3's kqv is 0 at layer 2, nothing before it moves, l_out moves after"

run_llmchat -m tensors --no-config -i "$TEXT" --weights f32 --control-vector "$DATA/control_vector/happy.gguf:2" "$S"
assert_status 0
"$NUMPY_PYTHON" - "$T/f32.jsonl" "$T/out" "$DATA/control_vector/happy.gguf" "$REF" <<'PY' ||
import json, sys
sys.path.insert(0, sys.argv[4])
import gguf
import numpy as np
a = {(r["name"], r["layer"]): np.array(r["values"]) for r in map(json.loads, open(sys.argv[1]))}
b = {(r["name"], r["layer"]): np.array(r["values"]) for r in map(json.loads, open(sys.argv[2]))}
v = gguf.GGUFFile(sys.argv[3])
assert np.array_equal(a[("l_out", 0)], b[("l_out", 0)]), "l_out of layer 0 moved (the file has no direction.0)"
d = b[("ffn_inp", 1)] - a[("ffn_inp", 1)]
assert np.array_equal(d, 0 * d), "layer 1's attention moved before the vector was added"
step = (b[("l_out", 1)] - b[("ffn_inp", 1)]) - (a[("l_out", 1)] - a[("ffn_inp", 1)])
want = 2 * v.tensor("direction.1").astype(np.float64)
assert np.max(np.abs(step - want)) < 1e-5, "l_out of layer 1 moved by %s, not 2 x direction.1" % step[:4]
PY
    fail "the control vector is not added at l_out"
pass "--control-vector happy.gguf:2: l_out of layer 1 moves by 2 x direction.1, nothing before it"

# ---- --trace-tensors: the steps' summaries at every position ----
run_llmchat -m generate --no-config -t 0 -n 4 -i "Once upon a time" --trace "$T/run.jsonl" \
    --trace-tensors 1-2 --weights f32 "$S"
assert_status 0
run_llmchat -m tensors --no-config -i "Once upon a time" --weights f32 --position 3 "$S"
assert_status 0
"$NUMPY_PYTHON" - "$T/run.jsonl" "$T/out" <<'PY' || fail "the trace's steps are not -m tensors' steps"
import json, math, sys
lines = open(sys.argv[1]).read().splitlines()
head = json.loads(lines[0])
assert head["tensors"] == [1, 2], head["tensors"]
recs = [json.loads(l) for l in lines[1:]]
assert len(recs) == 9 and all(len(r["tensors"]) == 3 + 2 * 15 for r in recs)
steps = {(t["name"], t["layer"]): t for t in recs[3]["tensors"]}
for r in map(json.loads, open(sys.argv[2])):
    if not (r["layer"] < 0 or 1 <= r["layer"] <= 2):
        continue
    t = steps[(r["name"], r["layer"])]
    assert t["shape"] == r["shape"], (r["name"], t["shape"], r["shape"])
    for got, want in zip(t["first"], r["values"]):
        assert abs(got - want) <= 1e-5 * (1 + abs(want)), (r["name"], r["layer"], got, want)
    l2 = math.sqrt(sum(x * x for x in r["values"]))
    assert abs(t["l2"] - l2) <= 1e-5 * l2, (r["name"], t["l2"], l2)
    assert sum(t["hist"]) == len(r["values"]) - t["masked"]
PY
pass "--trace-tensors 1-2: each record holds its steps, the first values and L2 as -m tensors gives them"

# ---- --position FIRST-LAST and all: each position's steps in turn, as one run each ----
: >"$T/each"
for pos in 0 1 2 3 4; do
    run_llmchat -m tensors --no-config -i "Once upon a time" --layers 1-2 --position "$pos" "$S"
    assert_status 0
    cat "$T/out" >>"$T/each"
done
run_llmchat -m tensors --no-config -i "Once upon a time" --layers 1-2 --position all "$S"
assert_status 0
cmp -s "$T/out" "$T/each" || fail "--position all is not the five runs' steps, in order"
run_llmchat -m tensors --no-config -i "Once upon a time" --layers 1-2 --position 1-3 "$S"
assert_status 0
sed -n '/"pos": 1,/,$p' "$T/each" | grep -v '"pos": 4,' | cmp -s "$T/out" - ||
    fail "--position 1-3 is not positions 1 to 3 of the runs' steps"
pass "--position all and 1-3: each position's steps in turn, byte for byte those of one run each"

# a reply's last position is finished by the next message: after /knock in between,
# its steps and lens in the trace are the ones it ran with (the head's kqv not 0), the
# next position's the knocked-out ones (0)
printf 'Tell me a story about Lily.\n/knock head 0:0\nTell me a story.\n' >"$T/in"
run_llmchat -m chat --no-config -t 0 -n 6 -T 1 --trace "$T/knock.jsonl" --trace-tensors 0 \
    --trace-lens "$S" <"$T/in"
assert_status 0
printf 'Tell me a story about Lily.\nTell me a story.\n' >"$T/in"
run_llmchat -m chat --no-config -t 0 -n 6 -T 1 --trace "$T/plain.jsonl" --trace-tensors 0 \
    --trace-lens "$S" <"$T/in"
assert_status 0
"$PYTHON" - "$T/knock.jsonl" "$T/plain.jsonl" <<'PY' || fail "the steps of the position before /knock took effect (above)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])][1:]
plain = [json.loads(l) for l in open(sys.argv[2])][1:]
at = next(r["pos"] for r in rows if r.get("steer"))
lens = lambda rs, pos: next(r["lens"] for r in rs if r["pos"] == pos)
assert lens(rows, at - 1) == lens(plain, at - 1), "the lens of %d is not the one it ran with" % (at - 1)
assert lens(rows, at) != lens(plain, at), "the lens of %d does not show the knock-out" % at
def head0(pos):
    r = next(r for r in rows if r["pos"] == pos)
    kqv = next(t for t in r["tensors"] if t["name"] == "kqv" and t["layer"] == 0)
    return kqv["first"][:kqv["shape"][1]]
assert any(v != 0 for v in head0(at - 1)), ("ran without the knock-out", at - 1, head0(at - 1))
assert all(v == 0 for v in head0(at)), ("ran with it", at, head0(at))
PY
pass "a position finished after /knock keeps the steps it ran with in the trace"

# ---- bad options ----
for args in "--position 99" "--position 2-99" "--position 3-1" "--position x" "--layers 3-9" \
    "--knock-out 9:0" "--knock-out 1:x" "--layers x"; do
    # shellcheck disable=SC2086
    run_llmchat -m tensors --no-config -i "$TEXT" $args "$S"
    assert_status 2
    grep -q '^llmchat: ' "$T/err" || fail "$args: no message"
    [ ! -s "$T/out" ] || fail "$args: wrote steps anyway"
done
run_llmchat -m generate --no-config -i "$TEXT" --position 1 "$S"
assert_status 2
assert_file_contains "--position elsewhere" "$T/err" "--position is for -m tensors"
run_llmchat -m generate --no-config -i "$TEXT" --layers 0-1 "$S"
assert_status 2
assert_file_contains "--layers elsewhere" "$T/err" "--layers is for -m tensors and -m patch"
run_llmchat -m generate --no-config -i "$TEXT" --trace-tensors 0-1 "$S"
assert_status 2
assert_file_contains "--trace-tensors alone" "$T/err" "--trace-tensors needs --trace FILE"
pass "bad --position, --layers, --knock-out, --trace-tensors: a message and exit status 2"
