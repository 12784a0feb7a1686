#!/bin/sh
# e2e_generate.sh — llmchat -m generate end to end: -n counts new tokens; -f and -i agree;
# seeded sampling repeats; the stderr summary and the --trace JSON Lines keep their
# contract. (The greedy text against the reference implementation's: e2e_greedy.sh.)
. "$LLMCHAT_SRCDIR/tests/lib.sh"

# the reference text of the first golden entry (tests/e2e_greedy.sh checks them all)
golden=$GOLDEN/generate_greedy.jsonl
once=$(jsonl_get "$golden" 0 text)
first_sentence=${once%%.*}.

# ---- -n counts new tokens; the summary line on stderr ----
run_llmchat -m generate -t 0 -n 5 -z "$DATA/tok512.bin" -i "Once upon a time" "$DATA/stories260K.bin" </dev/null
assert_status 0
summary=$(grep 'prompt: ' "$T/err" || true)
echo "$summary" | grep -Eq '^(llmchat: )?prompt: [0-9]+ tok, [0-9.]+ tok/s; generated: [0-9]+ tok, [0-9.]+ tok/s' ||
    fail "no 'prompt: N tok, X tok/s; generated: M tok, Y tok/s' summary on stderr"
generated=$(echo "$summary" | sed -n 's/.*generated: \([0-9]*\) tok.*/\1/p')
assert_eq "generated token count for -n 5" 5 "$generated"
prompt_tok=$(echo "$summary" | sed -n 's/.*prompt: \([0-9]*\) tok.*/\1/p')
[ "$prompt_tok" -gt 0 ] || fail "prompt token count is $prompt_tok"
short=$(cat "$T/out")
case $once in
"$short"*) ;;
*) fail "-n 5 output [$short] is not a prefix of the -n 200 text" ;;
esac
[ "${#short}" -gt "${#first_sentence}" ] && fail "-n 5 produced more than a sentence: [$short]"
[ "$short" != "Once upon a time" ] || fail "-n 5 generated nothing"
pass "-n counts new tokens; summary on stderr"

# ---- -f FILE gives the same as -i TEXT ----
printf '%s' "Lily and Tom" >"$T/prompt.txt"
run_llmchat -m generate -t 0 -n 30 -z "$DATA/tok512.bin" -i "Lily and Tom" "$DATA/stories260K.bin" </dev/null
assert_status 0
cp "$T/out" "$T/from_i"
run_llmchat -m generate -t 0 -n 30 -z "$DATA/tok512.bin" -f "$T/prompt.txt" "$DATA/stories260K.bin" </dev/null
assert_status 0
cmp -s "$T/out" "$T/from_i" || fail "-f FILE and -i TEXT give different output"
pass "-f FILE equals -i TEXT"

# ---- sampling: the same seed gives the same text; top-k 1 is greedy ----
run_llmchat -m generate -t 1 -p 0.9 -s 42 -n 60 -z "$DATA/tok512.bin" -i "Once upon a time" "$DATA/stories260K.bin" </dev/null
assert_status 0
cp "$T/out" "$T/seed42"
run_llmchat -m generate -t 1 -p 0.9 -s 42 -n 60 -z "$DATA/tok512.bin" -i "Once upon a time" "$DATA/stories260K.bin" </dev/null
assert_status 0
cmp -s "$T/out" "$T/seed42" || fail "two runs with -s 42 differ"
run_llmchat -m generate -t 1 -k 1 -s 7 -n 30 -z "$DATA/tok512.bin" -i "Once upon a time" \
    --weights f32 "$DATA/stories260K.bin" </dev/null
assert_status 0
cp "$T/out" "$T/topk1"
run_llmchat -m generate -t 0 -n 30 -z "$DATA/tok512.bin" -i "Once upon a time" \
    --weights f32 "$DATA/stories260K.bin" </dev/null
assert_status 0
cmp -s "$T/out" "$T/topk1" || fail "-k 1 at temperature 1 differs from greedy"
pass "seeded sampling repeats; top-k 1 is greedy"

# ---- --trace: one JSON object per processed position, the man page's TRACE fields ----
run_llmchat -m generate -t 0 -n 12 --trace "$T/trace.jsonl" --trace-attn -z "$DATA/tok512.bin" \
    -i "Once upon a time" "$DATA/stories260K.bin" </dev/null
assert_status 0
"$PYTHON" - "$T/trace.jsonl" <<'EOF' || fail "--trace output breaks the contract (see above)"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
if not rows or rows[0].get("llmchat_trace") != 1:
    print("  trace: the first line is not a version 1 header", file=sys.stderr)
    sys.exit(1)
header = rows.pop(0)
def bad(msg):
    print("  trace:", msg, file=sys.stderr)
    sys.exit(1)
if not rows:
    bad("empty")
if header["model"]["n_layers"] != 5 or header["options"]["temperature"] != 0 \
        or len(header["vocab"]) != 512 or header["vocab"][1] != "\n<s>\n" or not header["attn"]:
    bad("the header does not describe the run: %r" % {k: header[k] for k in header if k != "vocab"})
for i, r in enumerate(rows):
    for key in ("pos", "token", "piece", "phase", "next", "top", "sampler", "ms"):
        if key not in r:
            bad("line %d has no %r" % (i + 1, key))
    if r["pos"] != i:
        bad("line %d has pos %d" % (i + 1, r["pos"]))
    if r["phase"] not in ("prompt", "gen", "forced"):
        bad("line %d phase %r" % (i + 1, r["phase"]))
    probs = [t[2] for t in r["top"]]
    if not probs or any(a < b for a, b in zip(probs, probs[1:])):
        bad("line %d: top is empty or not sorted by probability" % (i + 1))
    if any(not (0 <= p <= 1) for p in probs) or sum(probs) > 1.0001:
        bad("line %d: top probabilities out of range" % (i + 1))
    if i + 1 < len(rows) and r["next"] != rows[i + 1]["token"]:
        bad("line %d: next %d but the next line's token is %d" % (i + 1, r["next"], rows[i + 1]["token"]))
    if r["next"] == -1 and i + 1 == len(rows):
        pass  # the last position processed, with nothing chosen after it
    elif r["phase"] == "gen" and r["next"] != r["top"][0][0]:
        bad("line %d: greedy chose %d, not the top candidate %d" % (i + 1, r["next"], r["top"][0][0]))
    attn = r.get("attn")
    if attn is None:
        bad("line %d: no attn with --trace-attn" % (i + 1))
    if len(attn) != 5 or any(len(layer) != 8 for layer in attn):
        bad("line %d: attn is not 5 layers x 8 heads (stories260K)" % (i + 1))
    for layer in attn:
        for head in layer:
            if len(head) != i + 1 or abs(sum(head) - 1) > 1e-3:
                bad("line %d: an attention row has %d weights summing to %g" % (i + 1, len(head), sum(head)))
if rows[0]["token"] != 1 or rows[0]["phase"] != "prompt":
    bad("the first position is not the BOS prompt token")
phases = [r["phase"] for r in rows]
if "gen" not in phases:
    bad("no generated positions")
if phases.index("gen") < max(i for i, p in enumerate(phases) if p == "prompt"):
    bad("prompt positions after generated ones")
EOF
pass "--trace writes a header and the documented JSON Lines"

# without -n the header's step limit is the one the mode runs with: generate's 256,
# chat's 0 (until the reply ends)
run_llmchat -m generate -t 0 --trace "$T/t256.jsonl" -z "$DATA/tok512.bin" -i "Once" \
    "$DATA/stories260K.bin" </dev/null
assert_status 0
printf 'Hi.\n' | run_llmchat -m chat -t 0 --trace "$T/tchat.jsonl" -z "$DATA/tok512.bin" \
    "$DATA/stories260K.bin"
assert_status 0
assert_eq "generate's step limit in the trace" "256 0" "$("$PYTHON" -c 'import json, sys
print(*(json.loads(open(f).readline())["options"]["steps"] for f in sys.argv[1:]))' "$T/t256.jsonl" "$T/tchat.jsonl")"
pass "without -n the trace's header gives the step limit the mode runs with"

# ---- --trace-attn with a small --attention-mib: every position's rows reach the trace ----
# stories260K's rows take 160 bytes a key: 1 MiB holds those of about 15 positions near
# 420, so a 421-token prompt is run in batches whose rows fit, each written before the
# next overwrites them
long=$("$PYTHON" -c 'print(" ".join(["Tom had a red ball and a big dog."] * 30))')
run_llmchat -m generate -t 0 -n 4 --attention-mib 1 --trace "$T/long.jsonl" --trace-attn \
    -z "$DATA/tok512.bin" -i "$long" "$DATA/stories260K.bin" </dev/null
assert_status 0
"$PYTHON" - "$T/long.jsonl" <<'EOF' || fail "--attention-mib 1: the trace's attention (see above)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()][1:]
missing = [r["pos"] for r in rows if "attn" not in r]
bad = [r["pos"] for r in rows if "attn" in r and any(abs(sum(h) - 1) > 1e-3 for l in r["attn"] for h in l)]
if len(rows) < 420 or missing or bad:
    print("  %d positions; without attn: %s; rows not summing to 1: %s" % (len(rows), missing[:10], bad[:10]),
          file=sys.stderr)
    sys.exit(1)
EOF
pass "--trace-attn with --attention-mib 1: a long prompt is run in batches that keep every row"

# ---- sampler settings at their edges keep a candidate (each once read c[-1]) ----
# top-p below 1/k after top-k; a temperature so cold that logits / t overflow (scalar
# and SIMD softmax); a hot temperature with a top-p far below 1/n.
for opts in "-k 2 -p 0.4" "-t 1.2e-38 --kernels scalar" "-t 1.2e-38" "-t 1e10 -p 1.2e-38" \
    "-t 2e-38 --min-p 0.5"; do
    # shellcheck disable=SC2086 # opts is a list of options
    run_llmchat -m generate -n 40 -s 1 $opts -z "$DATA/tok512.bin" -i "Once upon a time" \
        "$DATA/stories260K.bin" </dev/null
    assert_status 0
    # A hot temperature makes the distribution flat, and its tokens may print nothing;
    # what matters is that all 40 were chosen.
    assert_file_contains "sampler edge '$opts'" "$T/err" "generated: 40 tok"
done
pass "sampler settings at their edges still choose a real token"
