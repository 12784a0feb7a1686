#!/bin/sh
# e2e_replay.sh — --replay and --compare end to end: a sampled run replays token for
# token from its trace alone (the trace names the model), and with that model named
# (the trace's settings still; a copy runs with its own), and after /reset (the trace
# keeps the reset reply's last position); another weight type makes
# different choices and says where; the int8 twin of stories260K agrees with the fp32
# file on nearly every top-1 (int8 is meant to be faithful); a damaged trace is
# replayed as far as it reads, with its bad lines named and exit status 1; records in
# any order replay whole; missing positions, copies, conflicting records and spliced
# runs are named; a sampled token that cannot be decided again (the record before has
# no sampler) and a "steer" that is not an object are named; bad uses (a file that is
# no trace, an empty one) get one line.
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

# ---- the trace's own model named (or a link to it): still the trace's weights and KV
# cache; a copy of it is another file, run with its own defaults ----
ln -s "$model" "$T/link.bin"
for named in "$model" "$T/link.bin"; do
    run_llmchat --replay "$T/run.jsonl" -z "$tok" "$named"
    assert_status 0
    assert_file_contains "$named: the trace's weights" "$T/out" "(f32 weights, f32 KV cache"
    assert_file_contains "$named: bit for bit" "$T/out" "logits: the trace's, bit for bit"
done
cp "$model" "$T/copy.bin"
run_llmchat --replay "$T/run.jsonl" -z "$tok" "$T/copy.bin"
assert_file_contains "a copy: its own defaults" "$T/out" "now: copy.bin (q8_0 weights"
pass "the trace's model named, or a link to it, replays with the trace's settings; a copy with its own"

# ---- a chat reset after a reply (and again after the next): the trace still holds each
# reply's last position, so the replay has nothing cut short ----
printf 'Once upon a time\n/reset\nTom had a dog\n/reset\n' >"$T/in"
run_llmchat -m chat -t 0.8 -s 3 -n 20 -z "$tok" --trace "$T/reset.jsonl" "$model" <"$T/in"
assert_status 0
run_llmchat --replay "$T/reset.jsonl" -z "$tok"
assert_status 0
assert_file_contains "a reset chat replays" "$T/out" "reproduced: every position ran"
pass "a chat reset after its replies replays whole"

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
grep -q '^llmchat: the replay differs from the trace at position [0-9]*: the trace has .*, the replay chose ' "$T/err" \
    || fail "no message naming the first different position and both tokens"
# another model whose vocabulary has as many pieces, other ones: said first
run_llmchat --replay "$T/run.jsonl" -z "$DATA/aidreams_tok512.bin" "$DATA/aidreams260K.bin"
assert_status 1
assert_file_contains "another vocabulary" "$T/err" "the trace's vocabulary is another than this model's"
pass "a replay that differs says where, and when the vocabulary is another"

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

# ---- a damaged trace: bad lines named, the rest replayed, and never "reproduced" ----
head -n 30 "$T/run.jsonl" >"$T/cut.jsonl"
printf 'garbage\n' >>"$T/cut.jsonl"
sed -n 32,40p "$T/run.jsonl" >>"$T/cut.jsonl"
printf '{"pos":40,"token":' >>"$T/cut.jsonl"
run_llmchat --replay "$T/cut.jsonl" -z "$tok"
assert_status 1
assert_file_contains "bad line" "$T/err" "cut.jsonl: line 31: not JSON"
assert_file_contains "cut line" "$T/err" "cut.jsonl: line 41: cut short"
assert_file_contains "lost record" "$T/out" "positions without a record, run from the one before: 1"
assert_file_contains "what was not checked" "$T/err" \
    "cut.jsonl: incomplete: 38 of its 39 positions checked: no record for position 29; 2 lines could not be read"
assert_not_contains "no verdict" "$(cat "$T/out")" "reproduced"
pass "a damaged trace is replayed as far as it reads, bad lines named, exit 1"

# ---- records in any order: a shuffled trace replays every position ----
(head -n 1 "$T/run.jsonl"; tail -n +2 "$T/run.jsonl" | sort -t: -k2,2nr) >"$T/shuffled.jsonl"
positions=$(($(wc -l <"$T/run.jsonl") - 1))
run_llmchat --replay "$T/shuffled.jsonl" -z "$tok"
assert_status 0
assert_file_contains "every position" "$T/out" "shuffled.jsonl: $positions positions"
assert_file_contains "every draw" "$T/out" "sampled tokens chosen again with the trace's draws: 120 of 120"
assert_file_contains "reordered" "$T/err" "not in the order llmchat writes them (line 2: the first record is of position $((positions - 1))): replayed by position"
assert_file_contains "replay verdict" "$T/out" "reproduced"
run_llmchat --replay "$T/shuffled.jsonl" --compare -z "$tok"
assert_status 0
assert_file_contains "compare every position" "$T/out" "top-1 agreement: 100.00% ($positions of $positions positions)"
pass "a trace whose records are in reverse order replays all $positions positions"

# a copied line is ignored; one position with two different records out of order is refused
(cat "$T/run.jsonl"; sed -n 5p "$T/run.jsonl") >"$T/dup.jsonl"
run_llmchat --replay "$T/dup.jsonl" -z "$tok"
assert_status 0
assert_file_contains "copy ignored" "$T/err" "dup.jsonl: 1 line repeats a record of the same position byte for byte: ignored"
assert_file_contains "copy: every position" "$T/out" "dup.jsonl: $positions positions"
(head -n 1 "$T/shuffled.jsonl"; sed -n 5p "$T/run.jsonl" | sed 's/"ms":[0-9.e-]*/"ms":99/'; tail -n +2 "$T/shuffled.jsonl") >"$T/two.jsonl"
run_llmchat --replay "$T/two.jsonl" -z "$tok"
assert_status 1
assert_file_contains "conflict" "$T/err" "two.jsonl: lines 2 and $((positions - 1)) both hold position 3, with different records, and the records are not in the order llmchat writes them"
assert_not_contains "nothing run" "$(cat "$T/out")" "replaying"
pass "a copied line is ignored; two records of one position out of order are refused, naming both lines"

# ---- positions missing: said, and exit 1 ----
(head -n 1 "$T/run.jsonl"; tail -n +3 "$T/run.jsonl") >"$T/no0.jsonl"
run_llmchat --replay "$T/no0.jsonl" -z "$tok"
assert_status 1
assert_file_contains "position 0 missing" "$T/err" "no0.jsonl: incomplete: 0 of its $positions positions checked: no record for position 0; positions 1-$((positions - 1)) not run (what position 0 holds is unknown)"
assert_not_contains "no verdict" "$(cat "$T/out")" "reproduced"
(head -n 11 "$T/run.jsonl"; tail -n +14 "$T/run.jsonl") >"$T/no2.jsonl"
run_llmchat --replay "$T/no2.jsonl" -z "$tok" --compare
assert_status 1
assert_file_contains "two missing" "$T/err" "no2.jsonl: incomplete: 10 of its $positions positions checked: no record for positions 10-11; positions 12-$((positions - 1)) not run (what position 11 holds is unknown)"
head -n 30 "$T/run.jsonl" >"$T/head.jsonl"
run_llmchat --replay "$T/head.jsonl" -z "$tok"
assert_status 1
assert_file_contains "cut at a line" "$T/err" "head.jsonl: incomplete: 29 of its 29 positions checked: the trace ends at position 28, whose record chose a token for position 29 (cut short?)"
pass "missing positions are named and fail the replay"

# ---- a GGUF Q8_0 run: the header says whether its decode read panels, and the replay
# reads them as the run did unless told otherwise ----
gguf=$DATA/stories260K-q8_0.gguf
run_llmchat -m generate --panels off -t 0 -n 20 -z "$tok" -i "Once upon a time" \
    --trace "$T/gguf.jsonl" "$gguf" </dev/null
assert_status 0
head -n 1 "$T/gguf.jsonl" | grep -q '"panels":"off"' || fail "the header does not say panels off"
run_llmchat --replay "$T/gguf.jsonl" -z "$tok"
assert_status 0
assert_file_contains "replay reads no panels, as the run" "$T/out" " weights, panels off,"
assert_file_contains "gguf replay verdict" "$T/out" "reproduced"
run_llmchat --replay "$T/gguf.jsonl" -z "$tok" --panels on
assert_status 0
if grep -q " weights, panels on," "$T/out"; then
    assert_file_contains "greedy choices agree with panels" "$T/out" "reproduced"
else # no panel kernel on this CPU: none read
    assert_file_contains "no panel kernel here: none read" "$T/out" " weights, panels off,"
fi
pass "a trace says whether decode read panels, and the replay follows it"

# ---- a Q4_K run with --panels on: the header says k4_panels, the replay packs them
# (where the kernels read them) and reproduces every logit; --panels off on the replay
# is its own choice, said ----
k4=$DATA/rand256-q4_k_m.gguf
run_llmchat -m generate --panels on -t 0.8 -s 3 -n 24 -i "Once upon a time" \
    --trace "$T/k4.jsonl" "$k4" </dev/null
assert_status 0
if head -n 1 "$T/k4.jsonl" | grep -q '"k4_panels":"on"'; then
    run_llmchat --replay "$T/k4.jsonl"
    assert_status 0
    assert_file_contains "the replay packs Q4_K panels, as the run" "$T/out" "Q4_K panels on,"
    assert_file_contains "k4 replay verdict" "$T/out" "reproduced"
    run_llmchat --replay "$T/k4.jsonl" --panels off
    assert_file_contains "--panels off on the replay is said" "$T/out" "Q4_K panels off,"
    pass "a trace says whether decode read Q4_K panels, and the replay follows it"
else # no kernel here reads Q4_K panels (not x86)
    head -n 1 "$T/k4.jsonl" | grep -q '"k4_panels":"off"' ||
        fail "the header of a Q4_K run does not say k4_panels"
    pass "no Q4_K panel kernel here: the trace says k4_panels off"
fi

# records of two runs spliced: the position named
run_llmchat -m generate --weights f32 -t 0.8 -s 2 -n 120 -z "$tok" -i "Once upon a time" \
    --trace "$T/other.jsonl" "$model" </dev/null
(head -n 60 "$T/run.jsonl"; tail -n +61 "$T/other.jsonl") >"$T/spliced.jsonl"
run_llmchat --replay "$T/spliced.jsonl" -z "$tok" --compare
assert_status 1
grep -q "spliced.jsonl: position 59 holds '.*', but the record of position 58 chose '.*': the records are not of one run" "$T/err" \
    || fail "a spliced trace is not named"
pass "records spliced from two runs are named"

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
assert_status 1
assert_file_contains "hole filled" "$T/out" "positions without a record, run from the one before: 1"
assert_file_contains "hole named" "$T/err" "hole.jsonl: incomplete: $(($(wc -l <"$T/run.jsonl") - 2)) of its"
grep -q "^first top-1 difference: position [0-9]* (after '" "$T/out" || fail "no first top-1 difference line"
pass "--replay and --compare report on a trace whose named position lost its record"

# ---- edited records: a sampled token whose record before lost its sampler, a steer
# that is not an object: the replay says what it could not check, exit 1 ----
"$PYTHON" - "$T/run.jsonl" "$T/nosampler.jsonl" "$T/junksteer.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
gen = [i for i, r in enumerate(rows) if r.get("phase") == "gen"]
a = [dict(r) for r in rows]
a[gen[-1] - 1]["sampler"] = None          # the record that chose the last sampled token
open(sys.argv[2], "w").write("".join(json.dumps(r) + "\n" for r in a))
b = [dict(r) for r in rows]
b[5]["steer"] = "junk"
open(sys.argv[3], "w").write("".join(json.dumps(r) + "\n" for r in b))
PY
run_llmchat --replay "$T/nosampler.jsonl" -z "$tok"
assert_status 1
assert_file_contains "a sampler lost" "$T/err" "1 sampled token could not be decided again (the record before has no sampler)"
run_llmchat --replay "$T/junksteer.jsonl" -z "$tok"
assert_status 1
assert_file_contains "a steer not an object" "$T/err" '"steer" is not an object'
pass "a sampled token whose record before has no sampler, and a steer that is not an object, are named: exit 1"

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
# not a trace: one line, the first problem, not a line per line of the file
run_llmchat --replay "$LLMCHAT_SRCDIR/README.md"
assert_status 1
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "--replay README.md printed $(wc -l <"$T/err") lines"
assert_file_contains "not a trace" "$T/err" "README.md is not an llmchat trace (line 1: not JSON"
: >"$T/empty.jsonl"
run_llmchat --replay "$T/empty.jsonl"
assert_status 1
assert_file_contains "empty" "$T/err" "empty.jsonl is empty: not an llmchat trace"
assert_not_contains "empty: no model talk" "$(cat "$T/err")" "does not name its model"
printf 'Lily\n/save %s\n' "$T/saved.json" | run_llmchat -m chat -n 4 -z "$tok" "$BUNDLED/chat260K.bin"
run_llmchat --replay "$T/saved.json"
assert_status 1
assert_file_contains "a saved chat" "$T/err" "saved.json is a saved chat, not a trace"
head -n 1 "$T/run.jsonl" >"$T/header.jsonl"
run_llmchat --replay "$T/header.jsonl"
assert_status 1
assert_file_contains "header only" "$T/err" "header.jsonl holds no step records"
pass "bad uses get a message"
