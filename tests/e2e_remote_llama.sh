#!/bin/sh
# e2e_remote_llama.sh — the remote client against the real llama-server (llama.cpp 0.4.0)
# serving tests/data/stories260K.gguf (all F32): `--server URL -m generate --json`
# streams the very tokens and top-10 logprobs that the server answers to curl (the same
# ids, in order; each logprob within 1e-6: the JSON's %.9g keeps a float's digits);
# `--compare-server` finds llmchat's own F32 forward
# pass in full top-1 agreement with the server's, KL(server||local) under 1e-5 at every
# position (7.9e-7 measured); `--server -m perplexity` (one request a token, two
# windows of a 256-token context) gives the local F32 -m perplexity's mean NLL within
# 1e-4 relative, and `--replay TRACE --server` of a local greedy trace finds full top-1
# agreement and KL under 1e-5; a server killed mid-stream makes llmchat exit 1 with one
# message and keep the token lines it printed; nothing listening: exit 1, "cannot
# connect"; last, a llama-server whose layers lie on two RPC servers: the same greedy
# ids as the single one, --compare-server as above. Skips without llama-server, and
# after the rest without ggml-rpc-server.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

need_llama_server
need_tool curl
MODEL=$(model_file stories260K.gguf)
[ -f "$MODEL" ] || hard_error "$MODEL is missing"
PROMPT="Once upon a time"

# post NAME PATH JSON: POSTs JSON to $SERVER_URL/PATH; the body in $T/NAME.json.
post() {
    last_cmd="curl -d '$3' $SERVER_URL/$2"
    rc=0
    curl -s --max-time 30 -H 'Content-Type: application/json' -d "$3" \
        -o "$T/$1.json" "$SERVER_URL/$2" 2>"$T/err" || rc=$?
    [ "$rc" -eq 0 ] || fail "curl POST /$2 failed (status $rc)"
}

# token_ids FILE: the ids of a --json generate's token lines, space-separated.
token_ids() {
    "$PYTHON" -c '
import json, sys
print(" ".join(str(json.loads(l)["id"]) for l in open(sys.argv[1]) if l.startswith("{\"i\":")))' "$1"
}

# compare_summary FILE: checks a --compare-server --json object for N positions: full
# top-1 agreement, kl_max < 1e-5; prints kl_max.
compare_summary() {
    "$PYTHON" - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
s = d["summary"]
bad = []
if d.get("api") != "llama-server":
    bad.append("api %r" % d.get("api"))
if s["positions"] != n or len(d["positions"]) != n:
    bad.append("positions %r (%d listed), expected %d" % (s["positions"], len(d["positions"]), n))
if s["top1_agree"] != s["positions"]:
    off = [p["pos"] for p in d["positions"] if not p["top1_agree"]]
    bad.append("top-1 agrees at %r of %r positions (not at %r)" % (s["top1_agree"], s["positions"], off))
if not s["kl_max"] < 1e-5:
    bad.append("kl_max %r at position %r" % (s["kl_max"], s["kl_max_pos"]))
if max(p["kl"] for p in d["positions"]) != s["kl_max"]:
    bad.append("kl_max %r is not the positions' largest" % s["kl_max"])
if bad:
    print("; ".join(bad), file=sys.stderr)
    sys.exit(1)
print(s["kl_max"])
EOF
}

# ---- 1. greedy: llmchat's stream is the server's own answer ----
start_llama_server "$MODEL"
single_url=$SERVER_URL
run_llmchat --server "$SERVER_URL" -m generate -i "$PROMPT" -n 16 --temperature 0 --json </dev/null
assert_status 0
assert_file_contains "the server line" "$T/err" "server: llama-server at $SERVER_URL"
cp "$T/out" "$T/gen.jsonl"
post tok tokenize "{\"content\":\"$PROMPT\",\"add_special\":true}"
ids=$("$PYTHON" -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["tokens"]))' "$T/tok.json") ||
    fail "POST /tokenize: no tokens in $(cat "$T/tok.json")"
# cache_prompt false: the whole prompt evaluated, as for llmchat's request, the first
# this server has had (a cached prompt re-evaluates only its last token, which moves
# the logprobs by ~2e-6)
post completion completion "{\"prompt\":$ids,\"n_predict\":16,\"n_probs\":10,\"temperature\":0,\"stream\":false,\"cache_prompt\":false}"
greedy=$("$PYTHON" - "$T/gen.jsonl" "$T/completion.json" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ref = json.load(open(sys.argv[2]))["completion_probabilities"]
toks, last = lines[:-1], lines[-1]
bad = []
def close(a, b):
    # llmchat's JSON writes %.9g: a float's value round-trips
    return a is not None and abs(a - b) <= 1e-6
if last.get("stop") is None or last.get("generated") != 16:
    bad.append("the last line %r: not a stop line with generated 16" % last)
if [t["id"] for t in toks] != [r["id"] for r in ref]:
    bad.append("ids %r, the server's %r" % ([t["id"] for t in toks], [r["id"] for r in ref]))
worst = 0.0
for i, (t, r) in enumerate(zip(toks, ref)):
    if t["i"] != i:
        bad.append("line %d has i %r" % (i, t["i"]))
    if not close(t["logprob"], r["logprob"]):
        bad.append("token %d: logprob %r, the server's %r" % (i, t["logprob"], r["logprob"]))
    got = [k[0] for k in t["top"]]
    want = [k["id"] for k in r["top_logprobs"]]
    if len(got) != 10 or got != want:
        bad.append("token %d: top ids %r, the server's %r" % (i, got, want))
        continue
    for k, rk in zip(t["top"], r["top_logprobs"]):
        worst = max(worst, abs(k[2] - rk["logprob"]))
        if not close(k[2], rk["logprob"]):
            bad.append("token %d: id %d's logprob %r, the server's %r" % (i, k[0], k[2], rk["logprob"]))
if bad:
    print("; ".join(bad[:8]), file=sys.stderr)
    sys.exit(1)
print("%d ids and top-10 ids equal, logprobs within %.2g " % (len(toks), worst))
EOF
) || fail "generate --json is not the server's own greedy answer to curl (above)"
single_ids=$(token_ids "$T/gen.jsonl")
pass "generate --server: $greedy of the server's /completion"

# ---- 2. llmchat's F32 forward pass against the server's ----
run_llmchat "$MODEL" --weights f32 --compare-server "$SERVER_URL" -i "$PROMPT" -n 32 --json </dev/null
assert_status 0
kl=$(compare_summary "$T/out" 32) || fail "--compare-server (single server): the summary is off (above)"
pass "--compare-server: 32/32 top-1 agree, kl_max $kl (< 1e-5)"

# ---- 3. -m perplexity over the server against the local F32 one; --replay TRACE
# --server ----
# A server with a 256-token context, so that the text (336 tokens) takes two windows.
# The server scores each token in its own request (the prompt cache reused): the mean
# NLL within 1e-4 of the local one, relative (1.8e-5 measured).
start_llama_server "$MODEL" -c 256
para="Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. One day, she saw a big red ball in the park. She ran to get it, but a dog took it first. Lily was sad. Then the dog came back and gave her the ball. They played together all day and became best friends."
text="$para $para $para"
run_llmchat --server "$SERVER_URL" -m perplexity -i "$text" </dev/null
assert_status 0
assert_file_contains "the server line (perplexity)" "$T/err" "(ctx 256)"
cp "$T/out" "$T/ppl_served"
run_llmchat "$MODEL" --weights f32 -c 256 -m perplexity -i "$text" </dev/null
assert_status 0
rel=$("$PYTHON" - "$T/ppl_served" "$T/out" <<'EOF'
import sys
def read(path):
    d = dict(l.split(": ") for l in open(path).read().splitlines())
    return int(d["tokens"]), float(d["nll"]), float(d["perplexity"])
(ns, nll_s, ppl_s), (nl, nll_l, ppl_l) = read(sys.argv[1]), read(sys.argv[2])
if ns != nl or ns <= 255:
    sys.exit("tokens: served %d, local %d (two windows of 255 expected)" % (ns, nl))
rel = abs(nll_s - nll_l) / nll_l
if not rel < 1e-4:
    sys.exit("nll: served %r, local %r: relative difference %.3g" % (nll_s, nll_l, rel))
print("%.2g" % rel)
EOF
) || fail "--server -m perplexity is not the local one's (above)"
pass "--server -m perplexity: 336 tokens in two windows, the local F32 NLL within $rel (relative)"

# A trace of a local greedy generation (F32), its tokens scored by the server: the
# comparison as --compare-server's, every position.
run_llmchat "$MODEL" --weights f32 -m generate -i "$PROMPT" -n 24 --temperature 0 \
    --trace "$T/greedy.jsonl" </dev/null
assert_status 0
run_llmchat --replay "$T/greedy.jsonl" --server "$single_url" --json </dev/null
assert_status 0
n_cmp=$("$PYTHON" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["positions"]))' "$T/out")
[ "$n_cmp" -ge 28 ] || fail "--replay --server: $n_cmp positions compared, the prompt's and 24 generated expected"
kl_replay=$(compare_summary "$T/out" "$n_cmp") || fail "--replay --server: the summary is off (above)"
"$PYTHON" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["trace"] == sys.argv[2], d["trace"]' \
    "$T/out" "$T/greedy.jsonl" || fail "--replay --server: the JSON does not name the trace"
pass "--replay TRACE --server: $n_cmp/$n_cmp top-1 agree, kl_max $kl_replay (< 1e-5)"

# ---- 4. the server killed mid-stream ----
# A long generation (-t 1, a 2048-token context, 2000 tokens: seconds) is caught after
# its first token line: the server is stopped (SIGSTOP), so the stream pauses however
# fast it went, then killed (SIGKILL).
start_llama_server "$MODEL" -t 1 -c 2048
kill_url=$SERVER_URL
last_cmd="llmchat --server $kill_url -m generate -i '$PROMPT' -n 2000 --temperature 0 --json (the server killed)"
$run_timeout "$LLMCHAT_BIN" --server "$kill_url" -m generate -i "$PROMPT" -n 2000 --temperature 0 --json \
    </dev/null >"$T/out" 2>"$T/err" &
client=$!
n=0
until grep -q '^{"i":' "$T/out"; do
    kill -0 "$client" 2>/dev/null || {
        rc=0
        wait "$client" || rc=$?
        fail "llmchat exited before its first token line"
    }
    n=$((n + 1))
    [ "$n" -le 200 ] || fail "no token line within 10 s"
    sleep 0.05
done
kill -STOP "$SERVER_PID"
cp "$T/out" "$T/before_kill"
# (in braces: bash's "Killed" notice goes to /dev/null too)
{
    kill -KILL "$SERVER_PID"
    wait "$SERVER_PID"
} 2>/dev/null
lib_unregister_server "$SERVER_PID"
n=0
while kill -0 "$client" 2>/dev/null; do
    n=$((n + 1))
    if [ "$n" -gt 200 ]; then
        kill "$client" 2>/dev/null
        wait "$client" 2>/dev/null
        fail "llmchat still running 10 s after the server was killed"
    fi
    sleep 0.05
done
rc=0
wait "$client" || rc=$?
[ "$rc" -le 128 ] || fail "killed by signal $((rc - 128))"
! grep -q 'Sanitizer\|runtime error:' "$T/err" || fail "a sanitizer reported an error"
[ "$rc" -ne 0 ] || fail "the generation ended before the server was stopped (exit status 0)"
assert_status 1
assert_eq "'llmchat: ' lines on stderr" 1 "$(grep -c '^llmchat: ' "$T/err")"
killed_msg=$(grep '^llmchat: ' "$T/err")
echo "$killed_msg" | grep -Eqi 'clos|connection|reset|ended|end of' ||
    fail "the message does not say the connection closed: [$killed_msg]"
assert_prefix "the token lines out before the kill are not all in stdout" "$T/before_kill" "$T/out"
before=$(grep -c '^{"i":' "$T/before_kill")
streamed=$("$PYTHON" - "$T/out" <<'EOF'
import json, sys
text = open(sys.argv[1]).read()
if not text.endswith("\n"):
    sys.exit("stdout ends in the middle of a line")
rows = [json.loads(l) for l in text.splitlines()]
for i, r in enumerate(rows):
    if r.get("i") != i or "id" not in r:
        sys.exit("line %d is not token line %d: %r" % (i, i, r))
print(len(rows))
EOF
) || fail "stdout after the kill: not only whole token lines (above)"
[ "$streamed" -lt 2000 ] || fail "all 2000 tokens came before the kill"
pass "killed mid-stream: exit 1, [$killed_msg]; $before token lines out at the kill, $streamed in all"

# ---- 5. nothing listening ----
run_llmchat --server "$kill_url" -m generate -i "$PROMPT" -n 2000 --temperature 0 --json </dev/null
assert_status 1
assert_eq "stdout with nothing listening" "" "$(cat "$T/out")"
assert_eq "stderr lines with nothing listening" 1 "$(wc -l <"$T/err" | tr -d ' ')"
refused_msg=$(cat "$T/err")
assert_contains "the message with nothing listening" "$refused_msg" "cannot connect"
case $refused_msg in
llmchat:*) ;;
*) fail "the message does not start with 'llmchat: ': [$refused_msg]" ;;
esac
pass "nothing listening at $kill_url: exit 1, [$refused_msg]"

# the single server was untouched by all this
[ "$(curl -s --max-time 2 "$single_url/health")" = '{"status":"ok"}' ] || fail "$single_url stopped answering"

# ---- 6. distributed: the layers on two RPC servers (last: without an RPC server,
# the test skips here, the rest checked) ----
need_rpc_server
start_rpc_server
rpc_a=$RPC_ADDR rpc_a_log=$RPC_LOG
start_rpc_server
rpc_b=$RPC_ADDR rpc_b_log=$RPC_LOG
start_llama_server "$MODEL" --rpc "$rpc_a,$rpc_b" -ngl 99 -v
for dev in RPC0 RPC1; do
    grep -Eq "layer +[0-9]+ assigned to device $dev([^0-9]|\$)" "$SERVER_LOG" ||
        fail "no layer assigned to $dev in llama-server's log; its lines: $(grep 'assigned to device' "$SERVER_LOG")"
done
run_llmchat --server "$SERVER_URL" -m generate -i "$PROMPT" -n 16 --temperature 0 --json </dev/null
assert_status 0
assert_eq "the ids of the distributed server (the single one's)" "$single_ids" "$(token_ids "$T/out")"
run_llmchat "$MODEL" --weights f32 --compare-server "$SERVER_URL" -i "$PROMPT" -n 32 --json </dev/null
assert_status 0
kl_rpc=$(compare_summary "$T/out" 32) || fail "--compare-server (distributed): the summary is off (above)"
for log in "$rpc_a_log" "$rpc_b_log"; do
    grep -q 'Accepted client connection' "$log" || fail "the RPC server of $log saw no client: $(tail -n 5 "$log")"
done
pass "distributed over $rpc_a and $rpc_b: the same 16 ids; --compare-server 32/32, kl_max $kl_rpc"
