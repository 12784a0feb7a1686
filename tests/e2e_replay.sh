#!/bin/sh
# e2e_replay.sh — --replay and --compare end to end: a sampled run replays token for
# token from its trace alone (the trace names the model); another weight type makes
# different choices and says where; the int8 twin of stories260K agrees with the fp32
# file on nearly every top-1 (int8 is meant to be faithful); a damaged trace is
# replayed as far as it reads, with its bad lines named; bad uses are refused.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

model=$DATA/stories260K.bin
tok=$DATA/tok512.bin

# ---- a sampled fp32 run, traced ----
run_llmchat -m generate --weights f32 -t 0.8 -s 1 -n 120 -z "$tok" -i "Once upon a time" \
    --trace "$T/run.jsonl" "$model" </dev/null
assert_status 0
gen=$(grep -c '"phase":"gen"' "$T/run.jsonl")
[ "$gen" -ge 100 ] || fail "the run generated only $gen tokens"

# ---- replay with nothing but the trace: the same tokens, every one ----
run_llmchat --replay "$T/run.jsonl" -z "$tok"
assert_status 0
assert_file_contains "replay summary" "$T/out" "sampled tokens chosen again with the trace's draws: 120 of 120"
assert_file_contains "replay verdict" "$T/out" "reproduced"
assert_file_contains "replay names the weights" "$T/out" "(f32 weights, f32 KV cache"
pass "a sampled run replays token for token from its trace"

# the replay's own trace holds the same tokens
run_llmchat --replay "$T/run.jsonl" -z "$tok" --trace "$T/again.jsonl"
assert_status 0
"$PYTHON" - "$T/run.jsonl" "$T/again.jsonl" <<'PY' || fail "the replay's trace has other tokens"
import json, sys
def tokens(path):
    rows = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]
    assert rows[0]["llmchat_trace"] == 1
    return [r["token"] for r in rows[1:]]
a, b = tokens(sys.argv[1]), tokens(sys.argv[2])
if a != b:
    print("  first difference at position", next(i for i, (x, y) in enumerate(zip(a, b)) if x != y), file=sys.stderr)
    sys.exit(1)
head = json.loads(open(sys.argv[2]).readline())
if head["mode"] != "replay":
    sys.exit(1)
PY
pass "the replay's own trace holds the run's tokens"

# ---- another weight type chooses differently somewhere: exit 1, the position named ----
run_llmchat --replay "$T/run.jsonl" -z "$tok" --weights q8_0
assert_status 1
grep -q '^llmchat: the replay differs from the trace at position [0-9]' "$T/err" \
    || fail "no message naming the first different position"
pass "a replay that differs says where"

# ---- --compare: fp32 trace against the int8 twin ----
run_llmchat --replay "$T/run.jsonl" --compare -z "$tok" "$DATA/stories260K_q80.bin"
assert_status 0
agree=$(sed -n 's/^top-1 agreement: \([0-9.]*\)% .*/\1/p' "$T/out")
[ -n "$agree" ] || fail "no top-1 agreement line"
"$PYTHON" -c "import sys; sys.exit(0 if float('$agree') >= 90 else 1)" \
    || fail "int8 agrees with fp32 on only $agree% of top-1 predictions"
kl=$(sed -n 's/^KL divergence.*: mean \([0-9.]*\), max.*/\1/p' "$T/out")
"$PYTHON" -c "import sys; sys.exit(0 if 0 < float('$kl') < 0.02 else 1)" \
    || fail "mean KL $kl is not small and positive"
rows=$(grep -c '^ *[0-9][0-9]*  \(prompt\|gen\)' "$T/out")
[ "$rows" -ge 120 ] || fail "only $rows per-position rows"
assert_file_contains "compare names the new model" "$T/out" "now: stories260K_q80.bin (q8_0 weights"
grep -q "^    0  prompt  '<s>' " "$T/out" || fail "BOS is not shown as '<s>' in the compare table"
pass "int8 twin agrees on $agree% of top-1 predictions (mean KL $kl)"

# the same model against itself: every top-1, no divergence
run_llmchat --replay "$T/run.jsonl" --compare -z "$tok"
assert_status 0
assert_file_contains "self compare" "$T/out" "top-1 agreement: 100.00%"
assert_file_contains "self compare" "$T/out" "first top-1 difference: none"
grep -q 'mean 0\.000000, max 0\.000000' "$T/out" || fail "a model diverges from itself"
pass "a model compared with itself agrees everywhere"

# ---- a damaged trace: bad lines named, the rest replayed ----
head -n 30 "$T/run.jsonl" >"$T/cut.jsonl"
printf 'garbage\n' >>"$T/cut.jsonl"
sed -n 32,40p "$T/run.jsonl" >>"$T/cut.jsonl"
printf '{"pos":40,"token":' >>"$T/cut.jsonl"
run_llmchat --replay "$T/cut.jsonl" -z "$tok"
assert_status 0
assert_file_contains "bad line" "$T/err" "cut.jsonl: line 31: not JSON"
assert_file_contains "cut line" "$T/err" "cut.jsonl: line 41: cut short"
assert_file_contains "lost record" "$T/out" "positions without a record, run from the one before: 1"
assert_file_contains "replayed" "$T/out" "reproduced"
pass "a damaged trace is replayed as far as it reads, bad lines named"

# ---- a lost record at the very position the report names: the report takes the
# position's token from what was replayed, never from the missing record ----
run_llmchat --replay "$T/run.jsonl" -z "$tok" "$DATA/stories260K_q80.bin"
p=$(sed -n 's/^llmchat: the replay differs from the trace at position \([0-9]*\):.*/\1/p' "$T/err")
[ -n "$p" ] || fail "the int8 twin made every choice again: no position to remove"
grep -v "^{\"pos\":$p," "$T/run.jsonl" >"$T/hole.jsonl"
run_llmchat --replay "$T/hole.jsonl" -z "$tok" "$DATA/stories260K_q80.bin"
assert_status 1
assert_file_contains "hole filled" "$T/out" "positions without a record, run from the one before: 1"
assert_file_contains "hole named" "$T/err" "the replay differs from the trace at position $p: the trace has '"
run_llmchat --replay "$T/run.jsonl" --compare -z "$tok" "$DATA/stories260K_q80.bin"
p=$(sed -n 's/^first top-1 difference: position \([0-9]*\) .*/\1/p' "$T/out")
[ -n "$p" ] || fail "the int8 twin agrees on every top-1: no position to remove"
grep -v "^{\"pos\":$p," "$T/run.jsonl" >"$T/hole.jsonl"
run_llmchat --replay "$T/hole.jsonl" --compare -z "$tok" "$DATA/stories260K_q80.bin"
assert_status 0
assert_file_contains "hole filled" "$T/out" "positions without a record, run from the one before: 1"
grep -q "^first top-1 difference: position [0-9]* (after '" "$T/out" || fail "no first top-1 difference line"
pass "--replay and --compare report on a trace whose named position lost its record"

# ---- refused ----
run_llmchat --replay "$T/nonexistent.jsonl"
assert_status 1
assert_file_contains "missing trace" "$T/err" "nonexistent.jsonl"
run_llmchat --compare "$model"
assert_status 2
assert_file_contains "--compare alone" "$T/err" "--compare needs --replay"
printf '{"llmchat_trace":7}\n' >"$T/new.jsonl"
run_llmchat --replay "$T/new.jsonl"
assert_status 1
assert_file_contains "newer version" "$T/err" "version 7"
pass "bad uses get a message"
