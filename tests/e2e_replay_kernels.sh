#!/bin/sh
# e2e_replay_kernels.sh — a replay on the same build and kernels reproduces its own trace,
# bit for bit, on every tensor type and every kernel table this CPU and build have: a
# prompt long enough for the batch kernels (prefill's GEMM, the int8 KV cache made fp32),
# then sampled tokens on the token kernels. The replay writes its own trace, whose
# candidates (logits and probabilities to 9 digits) must be the run's own at every
# position (and the replay says so itself). The types: random blocks of every type in a llama-shaped model
# (tests/make_family_gguf llama256 --type), and the real stories260K in llama2.c fp32
# (made int8 at load), int8 and GGUF Q8_0. A trace written before records said which
# kernels ran them (the "batch" key removed) replays by the rule the engine had then.
# Under the sanitizers the types and tables run as a cross, not their whole product
# (see below).
. "$LLMCHAT_SRCDIR/tests/lib.sh"

prompt="Once upon a time there was a little girl named Lily who loved to play in the park with her dog and her friends every day"
tables=""
for k in $(kernel_tables); do
    if "$LLMCHAT_BIN" --kernels "$k" -m tokenize -i x -z "$DATA/tok512.bin" "$DATA/stories260K.bin" \
        >/dev/null 2>&1; then
        tables="$tables $k"
    fi
done
[ -n "$tables" ] || fail "no kernel table runs here, not even scalar"

models=""
for type in F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K MXFP4; do
    "${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" llama256 "$T/$type.gguf" \
        "$DATA/stories260K.gguf" --type "$type" || fail "make_family_gguf --type $type failed"
    models="$models $T/$type.gguf"
done
models="$models $DATA/stories260K.bin $DATA/stories260K_q80.bin $DATA/stories260K-q8_0.gguf"

# run MODEL TABLE KV TEMPERATURE: a traced run and its traced replay, listed for the check
n=0
run() {
    case $1 in *.bin) set -- "$@" -z "$DATA/tok512.bin" ;; esac
    model=$1 k=$2 kv=$3 temp=$4
    shift 4
    n=$((n + 1))
    run_llmchat -m generate -n 40 -s 7 -t "$temp" --kernels "$k" --kv-cache "$kv" "$@" \
        -i "$prompt" --trace "$T/run$n.jsonl" "$model" </dev/null
    assert_status 0
    grep -q '"batch":true' "$T/run$n.jsonl" ||
        fail "$(basename "$model") ($k, $kv cache): no position ran on the batch kernels"
    run_llmchat --replay "$T/run$n.jsonl" --kernels "$k" --trace "$T/again$n.jsonl" "$@"
    [ "$rc" -eq 0 ] && grep -q '^reproduced' "$T/out" &&
        grep -q "^logits: the trace's, bit for bit" "$T/out" ||
        fail "$(basename "$model"), $k kernels, $kv KV cache, temperature $temp: the replay of its own trace did not reproduce it"
    printf '%s %s %s %s %s\n' "$T/run$n.jsonl" "$T/again$n.jsonl" "$(basename "$model")" "$k" "$kv" \
        >>"$T/pairs"
}

# Under the sanitizers (a process start and a kernel there cost several times more)
# every type runs on the CPU's last table and three types on every table: the memory
# each kernel touches on each type is the unit tests' (test_kernels_blocks and the
# GEMM tables, which run under the sanitizers too); the whole cross product runs in
# every other build.
last_table=${tables##* }
for model in $models; do
    for k in $tables; do
        if [ "${LLMCHAT_SANITIZERS:-no}" = yes ] && [ "$k" != "$last_table" ]; then
            case $(basename "$model") in Q8_0.gguf | Q4_K.gguf | stories260K.bin) ;; *) continue ;; esac
        fi
        run "$model" "$k" q8_0 0.8
    done
done
run "$T/Q4_K.gguf" scalar f32 0.8
run "$DATA/stories260K.bin" scalar f32 0
"$PYTHON" - "$T/pairs" <<'PY' || fail "a replay's candidates are not its trace's"
import json, sys
def records(path):
    rows = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]
    return [(r["pos"], r["token"], r["top"]) for r in rows[1:]]
bad = 0
for line in open(sys.argv[1]):
    run, again, name, k, kv = line.split()
    a, b = records(run), records(again)
    if a != b:
        pos = next((x[0] for x, y in zip(a, b) if x != y), min(len(a), len(b)))
        print(f"  {name}, {k} kernels, {kv} cache: the replay's candidates differ from "
              f"position {pos}", file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
PY
pass "$n runs replayed bit for bit (types F32 ... Q6_K and stories260K's three files; tables:$tables; int8 and fp32 caches)"

# a trace written before records said their kernels: the rule of its time
run_llmchat -m generate -n 40 -s 3 -t 0.8 -i "$prompt" --trace "$T/run.jsonl" "$T/Q8_0.gguf" </dev/null
assert_status 0
sed 's/,"batch":\(true\|false\)//' "$T/run.jsonl" >"$T/old.jsonl"
if grep -q '"batch"' "$T/old.jsonl"; then fail "the key was not removed"; fi
run_llmchat --replay "$T/old.jsonl"
assert_status 0
assert_file_contains "old trace verdict" "$T/out" "reproduced"
pass "a trace without the records' kernels replays by the rule it was written under"

# a replay runs on the kernels its trace names (the config file's do not change them),
# and on the interventions its trace records: the command line's are refused, the
# config file's left out (the trace has none: the replay reproduces it)
first_table=${tables# }
first_table=${first_table%% *}
run_llmchat -m generate -n 24 -s 2 -t 0.9 --kernels "$first_table" -i "$prompt" \
    --trace "$T/k.jsonl" "$T/Q4_0.gguf" </dev/null
assert_status 0
mkdir -p "$T/xdg/llmchat"
printf 'kernels = %s\nknock-out = 1:2\nweights = f32\n' "$last_table" >"$T/xdg/llmchat/config"
XDG_CONFIG_HOME=$T/xdg run_llmchat --replay "$T/k.jsonl"
assert_status 0
assert_file_contains "the trace's kernels" "$T/out" "$first_table kernels)"
assert_file_contains "bit for bit on them" "$T/out" "logits: the trace's, bit for bit"
assert_file_contains "the config's knock-out left out" "$T/err" \
    "the config file's interventions are left out: --replay runs the ones its trace records"
run_llmchat --no-config --replay "$T/k.jsonl" --knock-out 1:2
assert_status 2
assert_file_contains "the command line's knock-out refused" "$T/err" \
    "--replay runs the interventions its trace records: drop --control-vector"
pass "a replay runs its trace's kernels ($first_table) and interventions, not the config file's"
