#!/bin/sh
# e2e_remote_hostile.sh — answers a served model's client cannot take on trust, from
# tests/fake_server (llama-server's recorded answers in tests/data/remote, edited):
# a user and password in the URL go to the server and nowhere else (not stderr, not
# the trace, not the saved chat); a logprob that is not finite or is above 0 is a
# malformed answer (exit 1), never "inf" in the JSON written; a stream whose
# connection closes in the middle of an event (a close-delimited body) says so; a
# server that fails while it starts (503 "Loading model") is named with its message,
# not "not a server llmchat knows"; a model name with a terminal escape or a
# direction override is shown with '?' in their place; a NUL byte in a token's piece
# is \u0000 in --json and U+2400 in -m chat; a server that escapes non-ASCII text
# (\u00e9) is read as standard JSON; a URL with no host, a query or a fragment
# is refused; a proxy that cannot be reached is named as the cause.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

REC=$DATA/remote/llama-server
"$LLMCHAT_BIN" --server http://127.0.0.1:1 -m generate -i x 2>&1 | grep -q 'built without' &&
    skip "this llmchat was built without libcurl (configure found no libcurl4-openssl-dev)"

# one_line WHAT TEXT: exit status 1 and one "llmchat: " line holding TEXT.
one_line() {
    assert_status 1
    [ "$(grep -c '^llmchat: ' "$T/err")" -eq 1 ] || fail "$1: not one message: $(cat "$T/err")"
    assert_contains "$1" "$(grep '^llmchat: ' "$T/err")" "$2"
}

# routes DIR: a copy of the recorded llama-server answers in DIR.
routes() {
    mkdir -p "$1"
    cp "$REC"/* "$1/"
}

# edit FILE PYTHON: FILE rewritten by the Python expression PYTHON over its text t.
edit() {
    "$PYTHON" -c 'import sys; t = open(sys.argv[1], encoding="utf-8").read(); open(sys.argv[1], "w", encoding="utf-8").write(eval(sys.argv[2]))' "$1" "$2" ||
        hard_error "cannot edit $1"
}

# ---- a password in the URL: sent, and written nowhere ----
routes "$T/ok"
start_fake_server --routes "$T/ok" --log "$T/auth.log"
url=$(printf '%s' "$FAKE_URL" | sed 's|http://|http://bob:hunter%402@|')
printf 'Once upon a time\n' >"$T/msg"
run_llmchat --server "$url" -m chat -n 4 --trace "$T/auth.jsonl" --autosave always <"$T/msg"
assert_status 0
grep -q "^Authorization: Basic Ym9iOmh1bnRlckAy" "$T/auth.log" ||
    fail "the URL's user and password did not reach the server as Basic authentication"
for f in "$T/err" "$T/out" "$T/auth.jsonl" $(find "$HOME" -name '*.json'); do
    if grep -q "hunter" "$f"; then fail "the password is in $f"; fi
done
[ -n "$(find "$HOME" -name '*.json')" ] || fail "no chat was saved (the check above saw none)"
pass "a password in the URL goes to the server and into no output, trace or saved chat"

# ---- a logprob no probability has ----
for bad in 1e999 3.5; do
    routes "$T/lp$bad"
    edit "$T/lp$bad/completion" "t.replace('\"logprob\":-0.031780876219272614', '\"logprob\":$bad', 1)"
    start_fake_server --routes "$T/lp$bad"
    run_llmchat --server "$FAKE_URL" -m generate -i x -n 4 --json
    one_line "logprob $bad" "not a logprob"
    if grep -qi 'inf' "$T/out"; then fail "logprob $bad: inf written: $(cat "$T/out")"; fi
done
pass "a logprob that is not finite or is above 0 is a malformed answer"

# ---- a close-delimited stream cut in the middle of an event ----
start_fake_server --routes "$T/ok" --close-delimited --cut-after 2200 # past props (2024 bytes), inside the 4th event
run_llmchat --server "$FAKE_URL" -m generate -i x --json
one_line "cut event" "the connection closed in the middle of an event of the stream"
pass "a stream whose connection closes inside an event says so"

# ---- a server starting: 503 with its message ----
printf '{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}' >"$T/loading.json"
start_fake_server --status 503 --body "$T/loading.json"
run_llmchat --server "$FAKE_URL" -m generate -i x
one_line "503" "/props answered 503: Loading model"
pass "a server answering 503 while it loads is named with its message"

# ---- a model name that would drive the terminal ----
routes "$T/esc"
edit "$T/esc/props" "t.replace('\"model_alias\":', '\"model_alias\":\"\\\\u001b[31mEVIL\\\\u202e\",\"x_alias\":', 1)"
grep -q 'x_alias' "$T/esc/props" || hard_error "the recorded props has no model_alias to replace"
start_fake_server --routes "$T/esc"
run_llmchat --server "$FAKE_URL" -m generate -i x -n 2
assert_status 0
grep -q 'model ?\[31mEVIL?' "$T/err" || fail "the model's name was not made safe: $(grep server: "$T/err" | cat -v)"
if grep -q "$(printf '\033')" "$T/err"; then fail "an escape reached stderr"; fi
pass "a model name's escape and direction override are shown as '?'"

# ---- a NUL byte in a piece ----
routes "$T/nul"
edit "$T/nul/completion" "t.replace('\"bytes\":[44],\"logprob\":-0.031780876219272614,\"top_logprobs\"', '\"bytes\":[104,0,105],\"logprob\":-0.031780876219272614,\"top_logprobs\"', 1)"
start_fake_server --routes "$T/nul"
run_llmchat --server "$FAKE_URL" -m generate -i x -n 2 --json
assert_status 0
grep -q '"piece":"h\\u0000i"' "$T/out" || fail "--json: the piece with a NUL byte: $(head -n 1 "$T/out")"
printf 'x\n' | run_llmchat --server "$FAKE_URL" -m chat -n 2
assert_status 0
grep -q "h$(printf '\342\220\200')i" "$T/out" || fail "-m chat: the piece with a NUL byte: $(cat -v "$T/out")"
pass "a NUL byte in a piece: \\u0000 in --json, U+2400 in -m chat"

# ---- a server that escapes every non-ASCII character (Python's json.dumps does) ----
mkdir -p "$T/esc8"
cp "$DATA/remote/vllm/"* "$T/esc8/"
edit "$T/esc8/v1_completions" "t.replace('\"text\":\" there\"', '\"text\":\" th\\\\u00e9re \\\\u4e2d\"', 1)"
grep -q 'th\\u00e9re' "$T/esc8/v1_completions" || hard_error "the recorded vLLM stream has no ' there' to replace"
start_fake_server --routes "$T/esc8"
run_llmchat --server "$FAKE_URL" -m generate -i "Once upon a time" -n 3 --temperature 0
assert_status 0
grep -q "th$(printf '\303\251')re $(printf '\344\270\255')" "$T/out" ||
    fail "\\u00e9 from a server is not é: $(cat -v "$T/out")"
pass "a server's \\u00e9 is é (standard JSON), not the byte 0xE9"

# ---- a byte that is not UTF-8 in a request: Latin-1's character, never a lone surrogate
# (llama-server refuses a request holding one) ----
start_fake_server --routes "$T/ok" --log "$T/latin.log"
run_llmchat --server "$FAKE_URL" -m generate -i "$(printf 'caf\351')" -n 2
assert_status 0
grep '^BODY:' "$T/latin.log" | grep -q 'caf\\u00e9' || fail "the request's byte: $(grep '^BODY:' "$T/latin.log")"
if grep '^BODY:' "$T/latin.log" | grep -q '\\ud[c-f]'; then fail "a lone surrogate went to the server"; fi
pass "a byte that is not UTF-8 goes to a server as its Latin-1 character, never a lone surrogate"

# ---- URLs that name no server; a proxy that is not there ----
run_llmchat --server "http://" -m generate -i x
one_line "no host" "names no host"
run_llmchat --server "http://127.0.0.1:1/?a=b" -m generate -i x
one_line "a query" "no query"
run_llmchat --server "HTTP://127.0.0.1:1" -m generate -i x
one_line "an upper-case scheme" "cannot connect to http://127.0.0.1:1/props"
start_fake_server --routes "$T/ok"
http_proxy=http://127.0.0.1:1 no_proxy= NO_PROXY= run_llmchat --server "$FAKE_URL" -m generate -i x
one_line "a proxy" "through the proxy http://127.0.0.1:1 (from http_proxy)"
pass "a URL with no host or with a query is refused; an unreachable proxy is named"
