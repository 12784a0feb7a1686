#!/bin/sh
# e2e_moe_knock.sh — knocking experts out of a mixture of experts end to end, on the
# tiny qwen3moe fixture (tests/make_family_gguf, stories260K's vocabulary):
#   - --knock-out-expert changes a sampled run, and its trace records the experts out
#     ("experts_out" in the first record's steer, as [layer, expert] from 0);
#   - --replay sets them again and reproduces the run token for token, logits bit for
#     bit; the same trace without experts_out (as a trace written before it) replays
#     and differs;
#   - the config file's knock-out-expert key does what the option does;
#   - /knock expert in -m chat knocks one out from the next token on, recorded where
#     it changed; /knock restore puts it back;
#   - refused, with one line naming why and nothing run: a dense model, a layer or an
#     expert the model lacks, a layer left with fewer experts than the router chooses.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

MODEL=$T/qwen3moe.gguf
"${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" qwen3moe "$MODEL" "$DATA/stories260K.gguf" ||
    hard_error "make_family_gguf failed"
gen="-m generate --weights f32 -t 0.8 -s 1 -n 40 -i Once"

# the first record's steer, as "heads=...;experts=..." (python lists), or "none"
steer_of() {
    "$PYTHON" - "$1" "${2:-1}" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
s = rows[int(sys.argv[2])].get("steer")
print("none" if s is None else "heads=%s;experts=%s" % (s["heads_out"], s.get("experts_out")))
PY
}

# ---- a sampled run with two experts out: other tokens, the trace records them ----
run_llmchat $gen --trace "$T/plain.jsonl" "$MODEL" </dev/null
assert_status 0
cp "$T/out" "$T/plain.out"
run_llmchat $gen --knock-out-expert 0:3 --knock-out-expert 1:5 --trace "$T/ko.jsonl" \
    "$MODEL" </dev/null
assert_status 0
cmp -s "$T/out" "$T/plain.out" && fail "knocking experts 0:3 and 1:5 out changed nothing"
cp "$T/out" "$T/ko.out"
assert_eq "the trace's steer" "heads=[];experts=[[0, 3], [1, 5]]" "$(steer_of "$T/ko.jsonl")"
assert_eq "a run without knock-outs" "none" "$(steer_of "$T/plain.jsonl")"
pass "--knock-out-expert changes the run and the trace records [layer, expert]"

# ---- --replay sets them again: the same tokens, the same logits ----
run_llmchat --replay "$T/ko.jsonl"
assert_status 0
grep -Eq "^sampled tokens chosen again with the trace's draws: ([0-9]+) of \1$" "$T/out" ||
    fail "not every sampled token was chosen again"
assert_file_contains "replay logits" "$T/out" "logits: the trace's, bit for bit"
assert_file_contains "replay verdict" "$T/out" "reproduced"
# the same trace as one written before experts_out: it reads, and the run differs
"$PYTHON" - "$T/ko.jsonl" "$T/old.jsonl" <<'PY' || hard_error "cannot write the old trace"
import json, sys
out = open(sys.argv[2], "w", encoding="utf-8")
for line in open(sys.argv[1], encoding="utf-8"):
    r = json.loads(line)
    if "steer" in r:
        r["steer"].pop("experts_out", None)
    out.write(json.dumps(r) + "\n")
PY
run_llmchat --replay "$T/old.jsonl"
assert_status 1
grep -q '^llmchat: the replay differs from the trace at position [0-9]' "$T/err" ||
    fail "a trace without its experts_out replayed as if they were out"
pass "--replay knocks the trace's experts out again; a trace without them still reads"

# ---- the config file's key ----
mkdir -p "$XDG_CONFIG_HOME/llmchat"
printf 'knock-out-expert = 0:3\nknock-out-expert = 1:5\n' >"$XDG_CONFIG_HOME/llmchat/config"
run_llmchat $gen --trace "$T/cfg.jsonl" "$MODEL" </dev/null
assert_status 0
if grep -q 'config' "$T/err"; then fail "the config file was warned about: $(cat "$T/err")"; fi
assert_eq "the config file's steer" "heads=[];experts=[[0, 3], [1, 5]]" "$(steer_of "$T/cfg.jsonl")"
cmp -s "$T/ko.out" "$T/out" || fail "the config key ran otherwise than the option"
rm "$XDG_CONFIG_HOME/llmchat/config"
pass "knock-out-expert in the config file does what the option does"

# ---- /knock in -m chat ----
printf '%s\n' "/knock expert 1:2" "hello" "/knock" "/knock list" "/knock restore expert 1:2" "/knock" \
    "/knock expert 0:9" "/knock expert 0:1,0:2" "/knock restore expert 1:5" >"$T/in"
run_llmchat -m chat --weights f32 -n 8 -s 1 --trace "$T/chat.jsonl" "$MODEL" <"$T/in"
assert_status 0
assert_file_contains "/knock expert" "$T/err" "llmchat: from the next token: knocked out (LAYER:N, from 0): experts 1:2"
assert_file_contains "/knock lists" "$T/err" "llmchat: knocked out (LAYER:N, from 0): experts 1:2"
assert_eq "/knock and /knock list" 2 "$(grep -c '^llmchat: knocked out (LAYER:N, from 0): experts 1:2$' "$T/err")"
assert_file_contains "/knock restore" "$T/err" "llmchat: from the next token: nothing is knocked out"
assert_file_contains "/knock out of range" "$T/err" "llmchat: /knock: no expert 9 in layer 0: the model has experts 0-7 a layer (numbered from 0)"
assert_file_contains "/knock bad pair" "$T/err" "llmchat: /knock takes: head LAYER:HEAD [reset], expert LAYER:EXPERT"
assert_file_contains "/knock restore of one that is in" "$T/err" "expert 1:5 was not knocked out; nothing is knocked out"
assert_eq "the chat's first record" "heads=[];experts=[[1, 2]]" "$(steer_of "$T/chat.jsonl")"
pass "/knock expert knocks one out from the next token on; the trace records it"

# ---- refusals: one line naming why, exit 2, nothing run ----
refused() { # refused WANT ARGS...: the run is refused with WANT
    want=$1
    shift
    run_llmchat $gen --trace "$T/no.jsonl" "$@" </dev/null
    assert_status 2
    assert_file_contains "$*" "$T/err" "$want"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$*: more than one line: $(cat "$T/err")"
    [ ! -e "$T/no.jsonl" ] || fail "$*: the run went on (a trace was written)"
}
refused "llmchat: --knock-out-expert 0:1: the model has no experts (its feed-forward layers are dense): no expert to knock out" \
    --knock-out-expert 0:1 "$DATA/stories260K.gguf"
refused "llmchat: --knock-out-expert 2:0: no layer 2: the model has layers 0-1 (numbered from 0)" \
    --knock-out-expert 2:0 "$MODEL"
refused "llmchat: --knock-out-expert 0:8: no expert 8 in layer 0" --knock-out-expert 0:8 "$MODEL"
refused "llmchat: --knock-out-expert 0:6: cannot knock expert 6 of layer 0 out: 1 of the layer's 8 experts would be left, but the router chooses 2 for each token" \
    --knock-out-expert 0:0,0:1,0:2,0:3,0:4,0:5,0:6 "$MODEL"
run_llmchat $gen --trace "$T/no.jsonl" --knock-out-expert 4294967296:1 "$MODEL" </dev/null
assert_status 2
assert_file_contains "2^32" "$T/err" "llmchat: --knock-out-expert must be LAYER:EXPERT (from 0), or a comma list of them, got '4294967296:1'"
[ ! -e "$T/no.jsonl" ] || fail "4294967296:1: the run went on (a trace was written)"
pass "a dense model, a layer or expert the model lacks, too few experts left and 2^32 are refused"
