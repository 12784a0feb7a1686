#!/bin/sh
# e2e_moe_force.sh — forcing an expert of a mixture of experts end to end, on the
# tiny qwen3moe fixture (tests/make_family_gguf, stories260K's vocabulary: 2 layers of
# 8 experts, 2 chosen a token):
#   - --force-expert changes a sampled run, and its trace records the experts forced
#     ("experts_forced" in the first record's steer, as [layer, expert] from 0);
#   - -m tensors shows the forced expert first in ffn_moe_topk at its layer, and the
#     layer before it as without the option, bit for bit;
#   - --replay forces them again and reproduces the run token for token, logits bit
#     for bit; the same trace without experts_forced (as a trace written before it)
#     replays and differs;
#   - the config file's force-expert key does what the option does; a second expert
#     at a layer replaces the first, saying so;
#   - /force_expert in -m chat forces one from the next token on, recorded where it
#     changed; /force_expert off lets go; /knock expert refuses the forced one;
#   - refused, with one line naming why and nothing run: a dense model, a layer or an
#     expert the model lacks, 2^32, an expert both forced and knocked out.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

MODEL=$T/qwen3moe.gguf
"${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" qwen3moe "$MODEL" "$DATA/stories260K.gguf" ||
    hard_error "make_family_gguf failed"
gen="-m generate --weights f32 -t 0.8 -s 1 -n 40 -i Once"

# the record's steer (the first by default), as "out=...;forced=..." (python lists),
# or "none"
steer_of() {
    "$PYTHON" - "$1" "${2:-1}" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
s = rows[int(sys.argv[2])].get("steer")
print("none" if s is None else "out=%s;forced=%s" % (s.get("experts_out"), s.get("experts_forced")))
PY
}

# ffn_moe_topk's (or another step's) values at a layer in a -m tensors output
step_values() { # step_values FILE NAME LAYER
    "$PYTHON" - "$@" <<'PY'
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    r = json.loads(line)
    if r["name"] == sys.argv[2] and r["layer"] == int(sys.argv[3]):
        print(" ".join("%.9g" % v for v in r["values"]))
PY
}

# ---- a sampled run with two experts forced: other tokens, the trace records them ----
run_llmchat $gen --trace "$T/plain.jsonl" "$MODEL" </dev/null
assert_status 0
cp "$T/out" "$T/plain.out"
run_llmchat $gen --force-expert 0:3 --force-expert 1:5 --trace "$T/fo.jsonl" "$MODEL" </dev/null
assert_status 0
cmp -s "$T/out" "$T/plain.out" && fail "forcing experts 0:3 and 1:5 changed nothing"
cp "$T/out" "$T/fo.out"
assert_eq "the trace's steer" "out=None;forced=[[0, 3], [1, 5]]" "$(steer_of "$T/fo.jsonl")"
assert_eq "a run without forcing" "none" "$(steer_of "$T/plain.jsonl")"
pass "--force-expert changes the run and the trace records [layer, expert]"

# ---- -m tensors: the forced expert first at its layer, the layer before untouched ----
tensors="-m tensors --no-config --weights f32 -i Once"
run_llmchat $tensors "$MODEL"
assert_status 0
cp "$T/out" "$T/plain.tensors"
plain_top=$(step_values "$T/plain.tensors" ffn_moe_topk 1)
for e in 5 0; do
    [ "${plain_top%% *}" = "$e" ] && continue # the router's first anyway: try another
    run_llmchat $tensors --force-expert 1:$e "$MODEL"
    assert_status 0
    top=$(step_values "$T/out" ffn_moe_topk 1)
    assert_eq "ffn_moe_topk at layer 1 with 1:$e forced (without: $plain_top)" \
        "$e ${plain_top%% *}" "$top"
    for step in ffn_moe_logits ffn_moe_topk ffn_moe_weights l_out; do
        assert_eq "$step at layer 0 with 1:$e forced" "$(step_values "$T/plain.tensors" $step 0)" \
            "$(step_values "$T/out" $step 0)"
    done
    break
done
pass "-m tensors shows the forced expert first at its layer; the layer before is untouched"

# ---- --replay forces them again: the same tokens, the same logits ----
run_llmchat --replay "$T/fo.jsonl"
assert_status 0
grep -Eq "^sampled tokens chosen again with the trace's draws: ([0-9]+) of \1$" "$T/out" ||
    fail "not every sampled token was chosen again"
assert_file_contains "replay logits" "$T/out" "logits: the trace's, bit for bit"
assert_file_contains "replay verdict" "$T/out" "reproduced"
# the same trace as one written before experts_forced: it reads, and the run differs
"$PYTHON" - "$T/fo.jsonl" "$T/old.jsonl" <<'PY' || hard_error "cannot write the old trace"
import json, sys
out = open(sys.argv[2], "w", encoding="utf-8")
for line in open(sys.argv[1], encoding="utf-8"):
    r = json.loads(line)
    if "steer" in r:
        r["steer"].pop("experts_forced", None)
    out.write(json.dumps(r) + "\n")
PY
run_llmchat --replay "$T/old.jsonl"
assert_status 1
grep -q '^llmchat: the replay differs from the trace at position [0-9]' "$T/err" ||
    fail "a trace without its experts_forced replayed as if they were forced"
pass "--replay forces the trace's experts again; a trace without them still reads"

# ---- the config file's key; a second at a layer replaces the first ----
mkdir -p "$XDG_CONFIG_HOME/llmchat"
printf 'force-expert = 0:3\nforce-expert = 1:2\n' >"$XDG_CONFIG_HOME/llmchat/config"
run_llmchat $gen --force-expert 1:5 --trace "$T/cfg.jsonl" "$MODEL" </dev/null
assert_status 0
assert_file_contains "the replacement" "$T/err" \
    "llmchat: --force-expert 1:5: expert 5 of layer 1 is forced instead of expert 2 (one expert a layer)"
assert_eq "the config file's steer" "out=None;forced=[[0, 3], [1, 5]]" "$(steer_of "$T/cfg.jsonl")"
cmp -s "$T/fo.out" "$T/out" || fail "the config key ran otherwise than the option"
rm "$XDG_CONFIG_HOME/llmchat/config"
pass "force-expert in the config file does what the option does; a later one replaces"

# the one replaced is never set: knocking it out is no conflict
run_llmchat $gen --force-expert 0:0,0:1 --knock-out-expert 0:0 --trace "$T/rep.jsonl" "$MODEL" </dev/null
assert_status 0
assert_file_contains "the replacement" "$T/err" \
    "llmchat: --force-expert 0:1: expert 1 of layer 0 is forced instead of expert 0 (one expert a layer)"
assert_eq "forced and knocked out" "out=[[0, 0]];forced=[[0, 1]]" "$(steer_of "$T/rep.jsonl")"
pass "a forced expert replaced at its layer may be knocked out"

# ---- /force_expert in -m chat ----
printf '%s\n' "/force_expert 1:2" "hello" "/force_expert" "/force_expert list" "/knock expert 1:2" "/force_expert 1:4" \
    "/force_expert off" "/force_expert 0:9" "/force_expert expert 0:1" "/force_expert off 0:1" \
    >"$T/in"
run_llmchat -m chat --weights f32 -n 8 -s 1 --trace "$T/chat.jsonl" "$MODEL" <"$T/in"
assert_status 0
assert_file_contains "/force_expert" "$T/err" "llmchat: from the next token: forced (LAYER:EXPERT, from 0): 1:2"
assert_file_contains "/force_expert lists" "$T/err" "llmchat: forced (LAYER:EXPERT, from 0): 1:2"
assert_eq "/force_expert and /force_expert list" 2 "$(grep -c '^llmchat: forced (LAYER:EXPERT, from 0): 1:2$' "$T/err")"
assert_file_contains "/knock the forced" "$T/err" "llmchat: /knock: cannot knock expert 2 of layer 1 out: it is the layer's forced expert"
assert_file_contains "/force_expert replaces" "$T/err" "llmchat: from the next token: forced (LAYER:EXPERT, from 0): 1:4 (expert 4 of layer 1 is forced instead of expert 2 (one expert a layer))"
assert_file_contains "/force_expert off" "$T/err" "llmchat: from the next token: no expert is forced"
assert_file_contains "/force_expert out of range" "$T/err" "llmchat: /force_expert: no expert 9 in layer 0: the model has experts 0-7 a layer (numbered from 0)"
[ "$(grep -c 'llmchat: /force_expert takes: LAYER:EXPERT, off \[LAYER\]' "$T/err")" -eq 2 ] ||
    fail "/force_expert's bad words were not refused with its usage: $(cat "$T/err")"
assert_eq "the chat's first record" "out=None;forced=[[1, 2]]" "$(steer_of "$T/chat.jsonl")"
pass "/force_expert forces one from the next token on; the trace records it; off lets go"

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
refused "llmchat: --force-expert 0:1: the model has no experts (its feed-forward layers are dense): no expert to force" \
    --force-expert 0:1 "$DATA/stories260K.gguf"
refused "llmchat: --force-expert 2:0: no layer 2: the model has layers 0-1 (numbered from 0)" \
    --force-expert 2:0 "$MODEL"
refused "llmchat: --force-expert 0:8: no expert 8 in layer 0" --force-expert 0:8 "$MODEL"
refused "llmchat: --force-expert 0:3: cannot force expert 3 of layer 0: it is knocked out (an expert is forced or knocked out, not both)" \
    --knock-out-expert 0:3 --force-expert 0:3 "$MODEL"
for bad in 4294967296:1 1:4294967296 1 1:2:3 '0:1,' ',0:1' '0:1,,1:1'; do
    run_llmchat $gen --trace "$T/no.jsonl" --force-expert "$bad" "$MODEL" </dev/null
    assert_status 2
    assert_file_contains "$bad" "$T/err" "llmchat: --force-expert must be LAYER:EXPERT (from 0), or a comma list of them, got '$bad'"
    [ ! -e "$T/no.jsonl" ] || fail "$bad: the run went on (a trace was written)"
done
pass "a dense model, a layer or expert the model lacks, 2^32 and a forced expert knocked out are refused"
