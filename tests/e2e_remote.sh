#!/bin/sh
# e2e_remote.sh — the served-model client (--server, --compare-server, llmchat-bench
# --server) against tests/fake_server answering as llama-server 0.4.0 did (its recorded
# answers), and as vLLM and ollama answer by their documented shapes
# (tests/data/remote): the tokens, ids and top log-probabilities each gives, the request
# llmchat sends each (ids as the prompt, the top-k asked for, the sampler), the API key
# sent as a bearer token and written nowhere else, the comparison of the local
# stories260K with the server's answer; -m perplexity over a server (llama-server: one
# request a token, the token forced by logit_bias; vLLM: prompt_logprobs; ollama
# refused; a 500 in the middle); --replay TRACE --server's failures (ollama, the trace's
# model gone, an answer for another token); and the failures, each one line and exit 1: an
# error status with the server's message, an answer that is not HTTP, a stream cut in
# the middle (the tokens before it kept), a server that says nothing (--server-timeout),
# nothing listening, a key variable that is not set; Ctrl-C stopping a reply; the
# option errors (exit 2) and the config file's server key; a llama-server with a draft
# model (recorded), whose guessed tokens come without log-probabilities: all delivered,
# and --compare-server refusing them. The program does not link libcurl (it opens it on
# the first request): no start of llmchat loads it.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

REC=$DATA/remote
MODEL=$(model_file stories260K.gguf)
"$LLMCHAT_BIN" --help | grep -q -- '--server URL' || hard_error "no --server in --help"
"$LLMCHAT_BIN" --server http://127.0.0.1:1 -m generate -i x 2>&1 | grep -q 'built without' &&
    skip "this llmchat was built without libcurl (configure found no libcurl4-openssl-dev)"
if command -v ldd >/dev/null 2>&1; then
    ldd "$LLMCHAT_BIN" >"$T/ldd" 2>&1 || fail "ldd cannot read $LLMCHAT_BIN: $(cat "$T/ldd")"
    grep -q libcurl "$T/ldd" && fail "llmchat links libcurl, which every start then loads: $(grep libcurl "$T/ldd")"
    pass "llmchat does not link libcurl (ldd)"
    # a library named libcurl.so.4 that is not libcurl (the math library, which llmchat
    # links), first on the loader's path: refused with one line, not a crash
    libm=$(awk '/libm\.so/ { print $3; exit }' "$T/ldd")
    if [ -n "$libm" ] && [ -f "$libm" ]; then
        mkdir -p "$T/fakecurl"
        ln -sf "$libm" "$T/fakecurl/libcurl.so.4"
        run_program llmchat env "LD_LIBRARY_PATH=$T/fakecurl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
            "$LLMCHAT_BIN" --server http://127.0.0.1:1 -m generate -i x </dev/null
        assert_status 1
        assert_file_contains "a libcurl without its functions" "$T/err" \
            "llmchat: the libcurl found lacks curl_global_init (libcurl 7.68 or later is needed)"
        pass "a library that is not libcurl in its place is refused with one line"
    fi
fi

# token_ids FILE: the ids of the --json token lines, space-separated.
token_ids() {
    "$PYTHON" -c '
import json, sys
ids = []
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "i" in o:
        ids.append(str(o["id"]))
print(" ".join(ids))' "$1"
}

# recorded_ids FILE: the ids of llama-server's recorded stream, in order.
recorded_ids() {
    "$PYTHON" -c '
import json, sys
ids = []
for line in open(sys.argv[1]):
    if line.startswith("data: "):
        for p in json.loads(line[6:]).get("completion_probabilities", []):
            ids.append(str(p["id"]))
print(" ".join(ids))' "$1"
}

# ---- llama-server (recorded) ----
start_fake_server --routes "$REC/llama-server" --log "$T/llama.log"
run_llmchat --server "$FAKE_URL" -m generate -i "Once upon a time" -n 8 --temperature 0 --json
assert_status 0
want=$(recorded_ids "$REC/llama-server/completion")
got=$(token_ids "$T/out")
assert_eq "llama-server: the token ids" "$want" "$got"
# every token's top list is the recorded one: ids and log-probabilities
"$PYTHON" -c '
import json, sys
rec = []
for line in open(sys.argv[1]):
    if line.startswith("data: "):
        rec += json.loads(line[6:]).get("completion_probabilities", [])
got = [json.loads(l) for l in open(sys.argv[2])]
toks = [g for g in got if "i" in g]
assert len(toks) == len(rec), (len(toks), len(rec))
for g, r in zip(toks, rec):
    assert abs(g["logprob"] - r["logprob"]) < 1e-6, (g, r)
    assert [t[0] for t in g["top"]] == [t["id"] for t in r["top_logprobs"]], (g, r)
    for t, rt in zip(g["top"], r["top_logprobs"]):
        assert abs(t[2] - rt["logprob"]) < 1e-6 and t[1] == rt["token"], (t, rt)
last = got[-1]
assert last["stop"] == "limit" and last["generated"] == len(rec), last
' "$REC/llama-server/completion" "$T/out" || fail "the --json lines are not the recorded answer"
assert_contains "line 68" "$(cat "$T/err")" "server: llama-server at $FAKE_URL, model stories260K.gguf (ctx 512)"
# the request: the server's ids as the prompt, the top 10, greedy
body=$(grep '^BODY: {"prompt"' "$T/llama.log")
assert_contains "line 71" "$body" '"prompt":[1,410,403,407,261,378]'
assert_contains "line 72" "$body" '"n_probs":10'
assert_contains "line 73" "$body" '"stream":true'
assert_contains "line 74" "$body" '"temperature":0'
assert_contains "line 75" "$body" '"n_predict":8'
grep -q '^BODY: {"content":"Once upon a time","add_special":true}' "$T/llama.log" ||
    fail "POST /tokenize did not ask for BOS: $(grep '^BODY' "$T/llama.log")"
# the text as -m generate prints it
run_llmchat --server "$FAKE_URL" -m generate -i "Once upon a time" -n 8 --temperature 0
assert_status 0
assert_eq "llama-server: the text" "Once upon a time, there was a little girl" "$(cat "$T/out")"
pass "llama-server: 8 tokens, their ids and top-10 log-probabilities as recorded; the request"

# ---- the local model against the recorded answer ----
run_llmchat "$MODEL" --weights f32 --compare-server "$FAKE_URL" -i "Once upon a time" -n 8 --json
assert_status 0
"$PYTHON" -c '
import json, sys
o = json.load(open(sys.argv[1]))
s = o["summary"]
assert s["positions"] == 8 and s["top1_agree"] == 8, s
assert s["kl_max"] < 1e-5, s
assert [p["pos"] for p in o["positions"]] == list(range(4, 12)), o["positions"]
print("kl_max %.3g" % s["kl_max"])' "$T/out" >"$T/kl" || fail "--compare-server: $(cat "$T/out")"
run_llmchat "$MODEL" --weights f32 --compare-server "$FAKE_URL" -i "Once upon a time" -n 8
assert_status 0
assert_contains "line 97" "$(cat "$T/out")" "top-1 agreement 8/8 (100.0%)"
pass "--compare-server: f32 stories260K against llama-server's answer, 8/8 top-1, $(cat "$T/kl")"

# ---- the API key: a bearer token, and nowhere else ----
LLMCHAT_TEST_KEY=sekrit-42 run_llmchat --server "$FAKE_URL" -m generate -i "Once upon a time" \
    -n 2 --api-key-env LLMCHAT_TEST_KEY
assert_status 0
grep -q '^Authorization: Bearer sekrit-42' "$T/llama.log" || fail "the key was not sent"
assert_not_contains "line 105" "$(cat "$T/out" "$T/err")" "sekrit"
run_llmchat --server "$FAKE_URL" -m generate -i x --api-key-env LLMCHAT_TEST_UNSET_KEY
assert_status 1
assert_eq "unset key" "llmchat: the environment variable LLMCHAT_TEST_UNSET_KEY (--api-key-env) is not set" "$(cat "$T/err")"
pass "--api-key-env: sent as Authorization: Bearer, not printed; an unset variable said"

# ---- Ctrl-C stops the reply: the tokens so far printed, exit 0 ----
start_fake_server --routes "$REC/llama-server" --chunk-delay-ms 400
# the file exists before the wait reads it (the background shell may open it later);
# the signal goes after the first token, when llmchat's handler is in place (before
# it, a background job of a non-interactive shell ignores SIGINT)
: >"$T/int.out"
"$LLMCHAT_BIN" --server "$FAKE_URL" -m generate -i "Once upon a time" -n 8 --json \
    >"$T/int.out" 2>"$T/int.err" &
pid=$!
n=0
while [ "$(grep -c '"i":' "$T/int.out")" -lt 1 ] && [ "$n" -lt 200 ]; do
    sleep 0.05
    n=$((n + 1))
done
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
last_cmd="llmchat --server $FAKE_URL -m generate (SIGINT after the first token)"
assert_eq "Ctrl-C: exit status" 0 "$rc"
grep -q '"stop":"interrupted"' "$T/int.out" || fail "Ctrl-C: no interrupted line: $(cat "$T/int.out")"
grep -q '(interrupted)' "$T/int.err" || fail "Ctrl-C: stderr: $(cat "$T/int.err")"
pass "Ctrl-C: the request cancelled after $(grep -c '"i":' "$T/int.out") token(s), exit 0"

# ---- vLLM (documented shape) ----
start_fake_server --routes "$REC/vllm" --log "$T/vllm.log"
run_llmchat --server "$FAKE_URL" -m generate -i "Once upon a time" -n 3 --temperature 0 --json
assert_status 0
assert_eq "vLLM: the token ids" "432 383 286" "$(token_ids "$T/out")"
"$PYTHON" -c '
import json, sys
toks = [json.loads(l) for l in open(sys.argv[1])][:3]
assert [t["piece"] for t in toks] == [",", " there", " was"], toks
for t in toks:
    lps = [x[2] for x in t["top"]]
    assert lps == sorted(lps, reverse=True), t     # most probable first
    assert t["top"][0][0] == t["id"], t
' "$T/out" || fail "vLLM: $(cat "$T/out")"
assert_contains "line 144" "$(cat "$T/err")" "server: openai at $FAKE_URL, model stories260K (ctx 512)"
body=$(grep '^BODY: {"model":"stories260K","prompt":\[' "$T/vllm.log")
assert_contains "line 146" "$body" '"prompt":[1,403,407,261,378]'
assert_contains "line 147" "$body" '"return_tokens_as_token_ids":true'
assert_contains "line 148" "$body" '"logprobs":10'
grep -q '"add_special_tokens":true' "$T/vllm.log" || fail "vLLM: /tokenize without add_special_tokens"
pass "vLLM: ids from token_id:N, alternatives sorted, the chunk's text as the piece"

# ---- ollama (documented shape): text only ----
start_fake_server --routes "$REC/ollama" --log "$T/ollama.log"
run_llmchat --server "$FAKE_URL" -m generate -i "Once upon a time" -n 3 --server-model stories260K --json
assert_status 0
assert_eq "ollama: no ids" "-1 -1 -1" "$(token_ids "$T/out")"
assert_contains "line 157" "$(head -n 1 "$T/out")" '"piece":","'
body=$(grep '^BODY: ' "$T/ollama.log")
assert_contains "line 159" "$body" '"prompt":"Once upon a time","raw":true'
assert_contains "line 160" "$body" '"top_logprobs":10'
run_llmchat "$MODEL" --compare-server "$FAKE_URL" --server-model stories260K -i "Once upon a time"
assert_status 1
assert_contains "line 163" "$(cat "$T/err")" "needs a server that answers with token ids"
pass "ollama: pieces and log-probabilities without ids; --compare-server refuses it"

# ---- failures: one line, exit 1 ----
# assert_one_line WHAT TEXT: the run failed with one message on stderr ("llmchat: ...")
# holding TEXT (the server line and the speed of the tokens before may come with it).
assert_one_line() {
    assert_status 1
    [ "$(grep -c '^llmchat: ' "$T/err")" -eq 1 ] || fail "$1: not one message: $(cat "$T/err")"
    assert_contains "$1" "$(grep '^llmchat: ' "$T/err")" "$2"
}
mkdir "$T/r500"
cp "$REC/llama-server/props" "$REC/llama-server/tokenize" "$T/r500/"
cp "$REC/llama-server/error_500.json" "$T/r500/completion"
echo 500 >"$T/r500/completion.status"
start_fake_server --routes "$T/r500"
run_llmchat --server "$FAKE_URL" -m generate -i x --json
assert_one_line "500" "/completion answered 500: [json.exception.parse_error.101]"

start_fake_server --garbage
run_llmchat --server "$FAKE_URL" -m generate -i x
assert_one_line "garbage" "answered something that is not HTTP"

start_fake_server --routes "$REC/llama-server" --cut-after 3000
run_llmchat --server "$FAKE_URL" -m generate -i x --json
assert_one_line "cut" "closed the connection in the middle of its answer"
[ "$(grep -c '"i":' "$T/out")" -ge 1 ] || fail "cut: the tokens before the cut were lost"

start_fake_server --stall
run_llmchat --server "$FAKE_URL" --server-timeout 1 -m generate -i x
assert_one_line "stall" "did not answer within 1 s (--server-timeout)"

start_fake_server --routes "$REC/ollama"
run_llmchat --server "$FAKE_URL" -m generate -i x
assert_one_line "ollama without a model" "/api/tags answered 404"

url=$FAKE_URL
stop_fake_server
run_llmchat --server "$url" -m generate -i x
assert_one_line "nothing listening" "cannot connect to $url/props (is the server running?)"
pass "failures: 500 with the server's message, not HTTP, cut (tokens kept), silent, 404, refused"

# ---- options ----
run_llmchat --server "$url" "$MODEL" -m generate -i x
assert_status 2
assert_contains "line 207" "$(cat "$T/err")" "give MODEL or --server, not both"
run_llmchat --server "$url" -m tensors -i x
assert_status 2
run_llmchat --server "$url" --view "$T/t.jsonl"
assert_status 2
run_llmchat --server ftp://x -m generate -i x
assert_status 2
run_llmchat --server "$url" -m generate -i x --trace "$T/t.jsonl"
assert_status 2
run_llmchat "$MODEL" -m generate -i x --json
assert_status 2
run_llmchat "$MODEL" --compare-server "$url" -m chat
assert_status 2
# the config file's server serves -m generate; MODEL on the command line outranks it
start_fake_server --routes "$REC/llama-server"
printf 'server = %s\n' "$FAKE_URL" >"$T/llmchat.conf"
run_llmchat --config "$T/llmchat.conf" -m generate -i "Once upon a time" -n 3 --temperature 0
assert_status 0
assert_eq "config server (the recorded 8 tokens)" "Once upon a time, there was a little girl" "$(cat "$T/out")"
run_llmchat --config "$T/llmchat.conf" "$MODEL" -m generate -i "Once upon a time" -n 3 --temperature 0
assert_status 0
assert_not_contains "line 227" "$(cat "$T/err")" "server:"
pass "options: MODEL with --server, -m tensors, --view, ftp://, --trace, --json alone refused; config server"

# ---- -m chat over the server: one reply a line; /set; a failed message's empty line ----
start_fake_server --routes "$REC/llama-server" --log "$T/chat.log"
printf 'Once upon a time\n/set temperature 0.5\n/vector\nTom had a dog\n' >"$T/in"
run_llmchat --no-config --server "$FAKE_URL" -m chat -n 8 <"$T/in"
assert_status 0
assert_eq "-m chat: one line a reply" ", there was a little girl
, there was a little girl" "$(cat "$T/out")"
assert_contains "/set" "$(cat "$T/err")" "from the next token: temperature 0.5"
assert_contains "/vector" "$(cat "$T/err")" "this needs a local model: the chat runs on a server"
[ "$(grep -c '^POST /apply-template' "$T/chat.log")" -eq 2 ] || fail "-m chat: not two renders"
grep '^BODY: {"messages"' "$T/chat.log" | tail -n 1 | grep -q '"role":"assistant","content":", there was a little girl"' ||
    fail "-m chat: the second render lacks the first reply: $(grep '^BODY: {"messages"' "$T/chat.log")"
grep '^BODY: {"prompt"' "$T/chat.log" | tail -n 1 | grep -q '"temperature":0.5,' ||
    fail "-m chat: /set did not reach the request"
mkdir "$T/rchat500"
cp "$REC/llama-server/props" "$REC/llama-server/tokenize" "$REC/llama-server/apply-template" "$T/rchat500/"
cp "$REC/llama-server/error_500.json" "$T/rchat500/completion"
echo 500 >"$T/rchat500/completion.status"
start_fake_server --routes "$T/rchat500"
printf 'one\ntwo\n' >"$T/in"
run_llmchat --no-config --server "$FAKE_URL" -m chat <"$T/in"
assert_status 1
assert_eq "-m chat: failed replies are empty lines (bytes)" 2 "$(wc -c <"$T/out" | tr -d ' ')"
[ "$(grep -c 'answered 500' "$T/err")" -eq 2 ] || fail "-m chat: $(cat "$T/err")"
pass "-m chat over a server: a reply a line, /set, the dialog rendered again, failures said"

# ---- -m perplexity over a server: one request a token (llama-server), prompt_logprobs
# (vLLM); ollama refused; a failure in the middle ----
SC=$REC/llama-server-score
# ppl_of FILES...: the lines -m perplexity prints for the recorded answers' logprobs
ppl_of() {
    "$PYTHON" -c '
import json, math, sys
lps = [json.load(open(f))["completion_probabilities"][0]["logprob"] for f in sys.argv[1:]]
nll = -sum(lps) / len(lps)
print("tokens: %d\nnll: %.6f\nperplexity: %.6f" % (len(lps), nll, math.exp(nll)))' "$@"
}
# bodies LOG PATH: the JSON bodies of the requests to PATH in a fake_server log, one a line
bodies() {
    "$PYTHON" -c '
import sys
want, cur = "POST " + sys.argv[2], None
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith(("GET ", "POST ")):
        cur = line
    elif line.startswith("BODY: ") and cur == want:
        print(line[6:])' "$1" "$2"
}
mkdir "$T/rppl"
cp "$REC/llama-server/props" "$REC/llama-server/v1_models" "$SC"/tokenize.1 "$SC"/tokenize.2 \
    "$SC"/completion.1 "$SC"/completion.2 "$SC"/completion.3 "$SC"/completion.4 "$T/rppl/"
start_fake_server --routes "$T/rppl" --log "$T/ppl.log"
run_llmchat --no-config --server "$FAKE_URL" -m perplexity -i "Once upon a time"
assert_status 0
want=$(ppl_of "$SC"/completion.1 "$SC"/completion.2 "$SC"/completion.3 "$SC"/completion.4)
assert_eq "--server -m perplexity (llama-server)" "$want" "$(cat "$T/out")"
assert_contains "line 293" "$(cat "$T/err")" "server: llama-server at $FAKE_URL"
# each position one request: the tokens before it as the prompt, its own forced
bodies "$T/ppl.log" /completion | "$PYTHON" -c '
import json, sys
seq = [1, 403, 407, 261, 378]
got = [json.loads(l) for l in sys.stdin]
assert len(got) == 4, got
for i, b in enumerate(got, 1):
    assert b["prompt"] == seq[:i], (i, b)
    assert b["logit_bias"] == [[seq[i], 1000]], (i, b)
    assert b["n_predict"] == 1 and b["temperature"] == 0 and b["stream"] is False, b
    assert b["cache_prompt"] is True and b["post_sampling_probs"] is False, b' ||
    fail "--server -m perplexity: the requests to /completion: $(bodies "$T/ppl.log" /completion)"
stop_fake_server

# vLLM: the text from stdin, one request with prompt_logprobs
mkdir "$T/vppl"
cp "$REC/vllm/v1_models" "$T/vppl/"
cp "$REC/vllm/tokenize" "$T/vppl/tokenize.1"
cp "$REC/vllm/tokenize_no_bos" "$T/vppl/tokenize.2"
cp "$REC/vllm/v1_completions_prompt_logprobs" "$T/vppl/v1_completions"
start_fake_server --routes "$T/vppl" --log "$T/vppl.log"
printf 'Once upon a time' >"$T/in"
run_llmchat --no-config --server "$FAKE_URL" -m perplexity -f - <"$T/in"
assert_status 0
assert_eq "--server -m perplexity (vLLM)" "$want" "$(cat "$T/out")"
bodies "$T/vppl.log" /v1/completions | "$PYTHON" -c '
import json, sys
got = [json.loads(l) for l in sys.stdin]
assert len(got) == 1, got
b = got[0]
assert b["prompt"] == [1, 403, 407, 261, 378] and b["prompt_logprobs"] == 1, b
assert b["max_tokens"] == 1 and b["stream"] is False and b["model"] == "stories260K", b' ||
    fail "vLLM: the request to /v1/completions: $(bodies "$T/vppl.log" /v1/completions)"
stop_fake_server

start_fake_server --routes "$REC/ollama"
run_llmchat --no-config --server "$FAKE_URL" --server-model stories260K -m perplexity -i "Once upon a time"
assert_one_line "ollama" "(ollama) gives no log-probabilities of a given text's tokens"
stop_fake_server

# the third position's request fails: one line, exit 1, no result printed
mkdir "$T/rppl500"
cp "$REC/llama-server/props" "$SC"/tokenize.1 "$SC"/tokenize.2 "$SC"/completion.1 \
    "$SC"/completion.2 "$T/rppl500/"
cp "$REC/llama-server/error_500.json" "$T/rppl500/completion.3"
echo 500 >"$T/rppl500/completion.3.status"
start_fake_server --routes "$T/rppl500"
run_llmchat --no-config --server "$FAKE_URL" -m perplexity -i "Once upon a time"
assert_one_line "perplexity, 500 at the third token" "/completion answered 500"
assert_eq "perplexity, 500: nothing on stdout" "" "$(cat "$T/out")"
stop_fake_server
pass "--server -m perplexity: llama-server token by token, vLLM's prompt_logprobs, ollama refused, a 500 said"

# ---- --replay TRACE --server: options ----
run_llmchat --no-config --replay "$T/none.jsonl" --server "$url" --trace "$T/t2.jsonl"
assert_status 2
assert_contains "line 350" "$(cat "$T/err")" "a served model's trace is written by the TUI and -m chat"
run_llmchat --no-config --replay "$T/none.jsonl" --server "$url" --compare
assert_status 2
assert_contains "--compare" "$(cat "$T/err")" "drop --compare"
run_llmchat --no-config --server "$url" -m perplexity -i x --json
assert_status 2
assert_contains "--json" "$(cat "$T/err")" "--json is for --server -m generate and --replay --server"
run_llmchat "$MODEL" -m generate -i "Once upon a time" -n 3 --temperature 0 --trace "$T/g.jsonl"
assert_status 0
start_fake_server --routes "$REC/ollama"
run_llmchat --no-config --replay "$T/g.jsonl" --server "$FAKE_URL" --server-model stories260K
assert_one_line "--replay --server, ollama" "(ollama) gives no log-probabilities"
stop_fake_server
sed 's|"path":"[^"]*"|"path":"/nonexistent/x.gguf"|' "$T/g.jsonl" >"$T/g_gone.jsonl"
run_llmchat --no-config --replay "$T/g_gone.jsonl" --server "$url"
assert_one_line "--replay --server, the trace's model gone" "names the model /nonexistent/x.gguf, which cannot be read"
# the recorded answers score positions 1-4; the fifth answer forced another token than
# the trace's (fake_server answers completion.1 again): one line, exit 1
mkdir "$T/rreplay"
cp "$T/rppl/props" "$T/rppl/v1_models" "$SC"/completion.1 "$SC"/completion.2 "$SC"/completion.3 \
    "$SC"/completion.4 "$T/rreplay/"
cp "$SC/completion.1" "$T/rreplay/completion.5"
start_fake_server --routes "$T/rreplay"
run_llmchat --no-config --replay "$T/g.jsonl" --server "$FAKE_URL"
assert_one_line "--replay --server, another token" "generated token 403 where token 432 was forced"
stop_fake_server
pass "--replay TRACE --server: --trace refused; ollama, a trace's model that is gone, a wrong token: one line each"

# ---- llmchat-bench --server ----
start_fake_server --routes "$REC/llama-server"
run_program llmchat-bench "$(dirname "$LLMCHAT_BIN")/llmchat-bench" --server "$FAKE_URL" -p 16 --gen 8 --rounds 2 --json
assert_status 0
"$PYTHON" -c '
import json, sys
o = json.load(open(sys.argv[1]))
assert o["api"] == "llama-server" and o["rounds"] == 2 and o["prompt"] == 16, o
assert o["first_token_ms"] >= 0 and o["decode_tok_s"] > 0, o' "$T/out" || fail "bench: $(cat "$T/out")"
pass "llmchat-bench --server: time to first token and decode tok/s, as JSON"
stop_fake_server

# ---- a llama-server with a draft model (recorded): the draft's tokens come without
# log-probabilities, ids and text only; every one is delivered ----
start_fake_server --routes "$REC/llama-server-speculative"
run_llmchat --server "$FAKE_URL" -m generate -i "Once upon a time" -n 8 --temperature 0 --json
assert_status 0
want=$("$PYTHON" -c '
import json, sys
ids = []
for line in open(sys.argv[1]):
    if line.startswith("data: "):
        ids += [str(i) for i in json.loads(line[6:]).get("tokens", [])]
print(" ".join(ids))' "$REC/llama-server-speculative/completion")
assert_eq "speculative llama-server: 8 ids" "432 383 286 261 376 298 315 421" "$want"
assert_eq "speculative llama-server: the token ids" "$want" "$(token_ids "$T/out")"
"$PYTHON" -c '
import json, sys
toks = [json.loads(l) for l in open(sys.argv[1])]
toks = [t for t in toks if "i" in t]
assert len(toks[0]["top"]) == 10, toks[0]
assert all(t["logprob"] is None and t["top"] == [] for t in toks[1:]), toks
' "$T/out" || fail "the tokens without log-probabilities are not said so: $(cat "$T/out")"
run_llmchat --server "$FAKE_URL" -m generate -i "Once upon a time" -n 8 --temperature 0
assert_status 0
assert_eq "speculative llama-server: the text" "Once upon a time, there was a little girl" "$(cat "$T/out")"
run_llmchat "$MODEL" --compare-server "$FAKE_URL" -i "Once upon a time" -n 8
assert_status 1
assert_contains "compare with a draft's tokens" "$(cat "$T/err")" "the server gave no probabilities for its token 1"
stop_fake_server
pass "a llama-server with a draft model: all 8 tokens (7 without log-probabilities), the text; --compare-server refuses them"
