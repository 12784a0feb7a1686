#!/bin/sh
# e2e_hybrid_knock.sh — knocking a Gated DeltaNet head out, its state kept or reset, end
# to end on the tiny qwen35 (tests/make_family_gguf: layers 0 and 2 Gated DeltaNets of
# 4 value heads, 1 and 3 gated attention; stories260K's vocabulary):
#   - in -m chat, value head 1 of layer 0 out for the first turn and back in for the
#     second: with "/knock head 0:1" (state kept) and "/knock head 0:1 reset" the
#     first reply's records are the same (the head is silent either way), the second's
#     differ (kept, the head speaks with its whole history; reset, from nothing); the
#     trace records the reset head ("heads_reset", [layer, head] from 0);
#   - --replay of the reset chat reproduces it bit for bit; the same trace without
#     heads_reset (as if the state had been kept) replays with other logits from the
#     position the head came back in;
#   - --knock-out LAYER:HEAD:reset does it from the command line;
#   - refused with one line: a reset head on an attention layer (option and /knock), on
#     a model without recurrent layers; a malformed suffix is a usage error.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

MODEL=$T/qwen35.gguf
"${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" qwen35 "$MODEL" "$DATA/stories260K.gguf" ||
    hard_error "make_family_gguf failed"

# records A B FROM TO: "same" when the records of positions FROM..TO-1 of traces A and B
# (their last at each position) have the same top tokens and probabilities, else "differ"
records() {
    "$PYTHON" - "$@" <<'PY'
import json, sys
def last(path):
    out = {}
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        if "pos" in r:
            out[r["pos"]] = (r["token"], r.get("top"), r.get("next_prob"))
    return out
a, b = last(sys.argv[1]), last(sys.argv[2])
lo, hi = int(sys.argv[3]), int(sys.argv[4])
missing = [p for p in range(lo, hi) if p not in a or p not in b]
if missing:
    print("missing positions %s" % missing[:5])
else:
    print("same" if all(a[p] == b[p] for p in range(lo, hi)) else "differ")
PY
}

# the positions of the trace's first record whose steer has no head out (the restore)
first_restored() {
    "$PYTHON" - "$1" <<'PY'
import json, sys
seen = False
for line in open(sys.argv[1], encoding="utf-8"):
    r = json.loads(line)
    s = r.get("steer")
    if s is not None and s["heads_out"]:
        seen = True
    elif s is not None and seen:
        print(r["pos"])
        break
PY
}

# ---- the same chat with the head's state kept and reset ----
for how in kept reset; do
    word=""
    [ "$how" = reset ] && word=" reset"
    printf '%s\n' "/knock head 0:1$word" "Once upon a time" "/knock" "/knock restore head 0:1" \
        "The dog ran" >"$T/in"
    run_llmchat -m chat --weights f32 -n 10 -t 0 --trace "$T/$how.jsonl" "$MODEL" <"$T/in"
    assert_status 0
    cp "$T/err" "$T/$how.err"
done
assert_file_contains "/knock reset" "$T/reset.err" \
    "llmchat: from the next token: knocked out (LAYER:N, from 0): heads 0:1 (state reset)"
assert_file_contains "/knock lists" "$T/reset.err" \
    "llmchat: knocked out (LAYER:N, from 0): heads 0:1 (state reset)"
assert_file_contains "/knock kept" "$T/kept.err" \
    "llmchat: from the next token: knocked out (LAYER:N, from 0): heads 0:1"
grep -q "state reset" "$T/kept.err" && fail "a head knocked out without reset said it was reset"
back=$(first_restored "$T/reset.jsonl")
[ -n "$back" ] && [ "$back" -gt 4 ] || fail "no record where the head came back in: '$back'"
assert_eq "the first turn, the head out" "same" "$(records "$T/kept.jsonl" "$T/reset.jsonl" 0 "$back")"
last=$((back + 8))
assert_eq "the second turn, the head back in" "differ" \
    "$(records "$T/kept.jsonl" "$T/reset.jsonl" "$back" "$last")"
"$PYTHON" - "$T/reset.jsonl" "$T/kept.jsonl" <<'PY' || fail "the traces' steer is not as knocked"
import json, sys
def steers(path):
    return [r["steer"] for r in map(json.loads, open(path, encoding="utf-8")) if "steer" in r]
reset, kept = steers(sys.argv[1]), steers(sys.argv[2])
assert reset[0]["heads_out"] == [[0, 1]] and reset[0]["heads_reset"] == [[0, 1]], reset[0]
assert kept[0]["heads_out"] == [[0, 1]] and "heads_reset" not in kept[0], kept[0]
assert reset[1]["heads_out"] == [] and "heads_reset" not in reset[1], reset[1]
PY
pass "a DeltaNet head out for a turn: kept and reset alike while out, not once back in; the trace says which"

# ---- --replay: reset again; without heads_reset it is the kept head's run ----
run_llmchat --replay "$T/reset.jsonl"
assert_status 0
assert_file_contains "replay logits" "$T/out" "logits: the trace's, bit for bit"
assert_file_contains "replay verdict" "$T/out" "reproduced"
"$PYTHON" - "$T/reset.jsonl" "$T/old.jsonl" <<'PY' || hard_error "cannot write the trace without heads_reset"
import json, sys
out = open(sys.argv[2], "w", encoding="utf-8")
for line in open(sys.argv[1], encoding="utf-8"):
    r = json.loads(line)
    if "steer" in r:
        r["steer"].pop("heads_reset", None)
    out.write(json.dumps(r) + "\n")
PY
run_llmchat --replay "$T/old.jsonl"
grep -q "^logits: the trace's at $back of [0-9]* positions; from position $back they differ" "$T/out" ||
    fail "a trace without its heads_reset replayed as if the state were reset: $(cat "$T/out")"
pass "--replay resets the head's state again; without heads_reset the logits differ from where the head came back ($back)"

# ---- from the command line ----
gen="-m generate --weights f32 -t 0 -n 12 -i Once"
run_llmchat $gen --trace "$T/cli.jsonl" --knock-out 2:3:reset,0:0 "$MODEL" </dev/null
assert_status 0
"$PYTHON" - "$T/cli.jsonl" <<'PY' || fail "--knock-out 2:3:reset,0:0 is not in the trace"
import json, sys
s = [r["steer"] for r in map(json.loads, open(sys.argv[1], encoding="utf-8")) if "steer" in r][0]
assert s["heads_out"] == [[0, 0], [2, 3]] and s["heads_reset"] == [[2, 3]], s
PY
pass "--knock-out LAYER:HEAD:reset knocks the head out with its state reset"

# ---- a position run again starts from the state it ran from ----
# the lens runs a position again, and on a hybrid also the positions before it since
# its checkpoint (every 32) to make the recurrent state: those run as they first ran,
# so each record's lens, last layer, is its own logits (top token and probability)
# across two knock-outs (the first turn's last position finished after the first; the
# positions after each within 32 of ones that ran without)
printf '%s\n' "Tell me a story about Lily." "/knock head 0:1" "Once upon a time" \
    "/knock head 2:0" "The end." >"$T/in"
run_llmchat -m chat --weights f32 -n 10 -t 0 -T 1 --trace "$T/lens.jsonl" --trace-lens "$MODEL" <"$T/in"
assert_status 0
assert_eq "records whose lens' last layer is not their logits" "103 0" "$("$PYTHON" - "$T/lens.jsonl" <<'PY'
import json, sys
recs = [r for r in map(json.loads, open(sys.argv[1], encoding="utf-8")) if "pos" in r and r.get("lens")]
bad = [r["pos"] for r in recs
       if r["lens"][-1]["top"][0][0] != r["top"][0][0]
       or abs(r["lens"][-1]["top"][0][1] - r["top"][0][2]) > 1e-6]
print(len(recs), len(bad), *bad[:5])
PY
)"
pass "the lens of a hybrid's position after knock-outs starts from the state it ran from"

# ---- refusals: one line each ----
refused() { # refused STATUS WANT ARGS...
    status=$1 want=$2
    shift 2
    run_llmchat $gen "$@" </dev/null
    assert_status "$status"
    assert_file_contains "$*" "$T/err" "$want"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$*: more than one line: $(cat "$T/err")"
}
refused 2 "llmchat: --knock-out 1:0:reset: that head has no state to reset: its layer is attention" \
    --knock-out 1:0:reset "$MODEL"
refused 2 "llmchat: --knock-out 0:0:reset: that head has no state to reset" \
    --knock-out 0:0:reset "$DATA/stories260K.gguf"
run_llmchat $gen --knock-out 0:1:rest "$MODEL" </dev/null
assert_status 2
assert_file_contains "a malformed suffix" "$T/err" \
    "llmchat: --knock-out must be LAYER:HEAD or LAYER:HEAD:reset (from 0), or a comma list of them, got '0:1:rest'"
printf '%s\n' "/knock head 1:0 reset" "/knock expert 0:1 reset" >"$T/in"
run_llmchat -m chat --weights f32 -n 4 -t 0 "$MODEL" <"$T/in"
assert_status 0
assert_file_contains "/knock on attention" "$T/err" "llmchat: /knock: that head has no state to reset"
assert_file_contains "/knock expert reset" "$T/err" "llmchat: /knock takes: head LAYER:HEAD [reset]"
pass "a reset head on attention or a dense model and a malformed suffix are refused with one line"
