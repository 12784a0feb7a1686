#!/bin/sh
# e2e_fake_server.sh — tests/fake_server, the stand-in for llama-server that the remote
# client's tests talk to, checked with curl: it answers a route with the recorded body
# byte for byte (JSON with Content-Length, an SSE stream chunked, event by event), a
# path it has no file for with llama-server's 404, a route's Nth request with ROUTE.N
# (a sequence of answers), a fixed status and body; it cuts a
# body short, answers bytes that are not HTTP, stalls, stops after --max-requests; its
# log holds each request's headers and body; a stopped one refuses connections. Its
# stderr must stay empty (sanitizer reports included) up to its exit.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

need_tool curl
REC=$DATA/remote/llama-server
[ -f "$REC/props" ] || hard_error "$REC has no recorded answers"

# get NAME URL [CURL ARGS...]: curl's exit status in $rc, the status code in $code, the
# body in $T/NAME.body, the headers in $T/NAME.head.
get() {
    get_name=$1 get_url=$2
    shift 2
    last_cmd="curl $* $get_url"
    rc=0
    code=$(curl -s -o "$T/$get_name.body" -D "$T/$get_name.head" -w '%{http_code}' \
        --max-time 10 "$@" "$get_url" 2>"$T/err") || rc=$?
}

# ---- routes: the recorded answers ----
start_fake_server --routes "$REC" --log "$T/fake.log"
routes_url=$FAKE_URL

get props "$FAKE_URL/props"
assert_status 0
assert_eq "GET /props: status" 200 "$code"
cmp -s "$T/props.body" "$REC/props" || fail "GET /props: the body is not the file's"
grep -qi '^Content-Type: application/json' "$T/props.head" || fail "GET /props: not JSON"
grep -qi '^Content-Length: ' "$T/props.head" || fail "GET /props: no Content-Length"

get health "$FAKE_URL/health?verbose=1"
assert_eq "GET /health?query: status" 200 "$code"
assert_eq "GET /health?query: body" '{"status":"ok"}' "$(cat "$T/health.body")"

get models "$FAKE_URL/v1/models"
cmp -s "$T/models.body" "$REC/v1_models" || fail "GET /v1/models: not v1_models"

# the SSE stream arrives whole, chunked
get stream "$FAKE_URL/completion" -N -H 'Authorization: Bearer xyz' \
    -H 'Content-Type: application/json' -d '{"prompt":[1,403],"stream":true}'
assert_status 0
assert_eq "POST /completion: status" 200 "$code"
cmp -s "$T/stream.body" "$REC/completion" || fail "POST /completion: the stream is not the file's"
grep -qi '^Content-Type: text/event-stream' "$T/stream.head" || fail "the stream is not text/event-stream"
grep -qi '^Transfer-Encoding: chunked' "$T/stream.head" || fail "the stream is not chunked"

# a path with no file: llama-server's own 404
get missing "$FAKE_URL/no/such/route"
assert_eq "GET /no/such/route: status" 404 "$code"
assert_file_contains "404 body" "$T/missing.body" '"type":"not_found_error"'

# the log: one block a request, headers as sent, the body
assert_file_contains "log" "$T/fake.log" 'GET /props'
assert_file_contains "log" "$T/fake.log" 'GET /health?verbose=1'
assert_file_contains "log" "$T/fake.log" 'POST /completion'
assert_file_contains "log" "$T/fake.log" 'Authorization: Bearer xyz'
assert_file_contains "log" "$T/fake.log" 'BODY: {"prompt":[1,403],"stream":true}'
assert_eq "requests logged" 5 "$(grep -c '^BODY: ' "$T/fake.log")"

# a route's .status file; the stream's chunks paced by --chunk-delay-ms
mkdir -p "$T/routes"
cp "$REC/error_400.json" "$T/routes/completion"
echo 400 >"$T/routes/completion.status"
cp "$REC/completion" "$T/routes/slow"
start_fake_server --routes "$T/routes" --chunk-delay-ms 40
get bad "$FAKE_URL/completion" -d '{"prompt":[1,9999]}'
assert_eq "a .status file: status" 400 "$code"
cmp -s "$T/bad.body" "$REC/error_400.json" || fail "the 400's body is not the file's"
last_cmd="curl -N $FAKE_URL/slow"
took=$(curl -sN -o "$T/slow.body" -w '%{time_total}' --max-time 10 "$FAKE_URL/slow") ||
    fail "the paced stream failed"
cmp -s "$T/slow.body" "$REC/completion" || fail "the paced stream is not the file's"
# 9 events, 8 pauses of 40 ms: not under 0.3 s (a lower bound only)
awk -v t="$took" 'BEGIN { exit !(t >= 0.3) }' || fail "the paced stream took ${took}s"

# a sequence of answers: the route's Nth request gets ROUTE.N (and ROUTE.N.status) where
# there is no ROUTE; past the last, the 404
mkdir -p "$T/seq"
printf '{"n":1}' >"$T/seq/completion.1"
printf '{"n":2}' >"$T/seq/completion.2"
echo 503 >"$T/seq/completion.2.status"
printf '{"other":1}' >"$T/seq/tokenize.1"
start_fake_server --routes "$T/seq"
get s1 "$FAKE_URL/completion" -d '{}'
assert_eq "sequence: the first answer" '200 {"n":1}' "$code $(cat "$T/s1.body")"
get t1 "$FAKE_URL/tokenize" -d '{}'
assert_eq "sequence: another route counts on its own" '200 {"other":1}' "$code $(cat "$T/t1.body")"
get s2 "$FAKE_URL/completion" -d '{}'
assert_eq "sequence: the second answer, its status" '503 {"n":2}' "$code $(cat "$T/s2.body")"
get s3 "$FAKE_URL/completion" -d '{}'
assert_eq "sequence: past the last" 404 "$code"
stop_fake_server

# the first server still answers beside the second
get again "$routes_url/health"
assert_eq "the first server, still there" 200 "$code"

# ---- --status --body: every request ----
start_fake_server --status 500 --body "$REC/error_500.json"
for path in /completion /props; do
    get e500 "$FAKE_URL$path"
    assert_eq "--status 500 $path" 500 "$code"
    cmp -s "$T/e500.body" "$REC/error_500.json" || fail "--body: not the file's on $path"
done

# ---- --cut-after: a server dying mid-body ----
start_fake_server --routes "$REC" --cut-after 700
get cut "$FAKE_URL/completion" -N -d '{}'
assert_eq "--cut-after, stream: curl's status (partial file)" 18 "$rc"
assert_eq "--cut-after, stream: bytes received" 700 "$(wc -c <"$T/cut.body" | tr -d ' ')"
head -c 700 "$REC/completion" | cmp -s - "$T/cut.body" ||
    fail "--cut-after: the bytes received are not the file's first 700"
get cutjson "$FAKE_URL/props"
assert_eq "--cut-after, JSON: curl's status (partial file)" 18 "$rc"
get short "$FAKE_URL/health"
assert_status 0
assert_eq "--cut-after, a body shorter than N: whole" '{"status":"ok"}' "$(cat "$T/short.body")"

# ---- --garbage: not HTTP ----
start_fake_server --garbage
get junk "$FAKE_URL/health"
[ "$rc" -ne 0 ] || fail "--garbage: curl took the answer (status $code)"

# ---- --stall: the request read, nothing answered ----
start_fake_server --stall --log "$T/stall.log"
get stall "$FAKE_URL/completion" --max-time 0.5 -d '{"n_predict":1}'
assert_eq "--stall: curl's status (timeout)" 28 "$rc"
assert_file_contains "--stall: the request still logged" "$T/stall.log" 'BODY: {"n_predict":1}'

# ---- --max-requests: gone after N ----
start_fake_server --routes "$REC" --max-requests 1
get once "$FAKE_URL/health"
assert_eq "--max-requests 1: the first" 200 "$code"
lib_rc=0
wait "$FAKE_PID" || lib_rc=$?
lib_unregister_server "$FAKE_PID"
assert_eq "--max-requests 1: exit status" 0 "$lib_rc"
get none "$FAKE_URL/health"
assert_eq "--max-requests 1: then refused (curl: cannot connect)" 7 "$rc"

# ---- stop_fake_server: nothing listens any more ----
start_fake_server --routes "$REC"
stopped_url=$FAKE_URL
stop_fake_server
get refused "$stopped_url/health"
assert_eq "stopped: curl cannot connect" 7 "$rc"

# ---- a usage error is reported, not waited on ----
lib_rc=0
"${LLMCHAT_BUILDDIR:-.}/tests/fake_server" --port-file "$T/p" --stall --garbage 2>"$T/usage.err" ||
    lib_rc=$?
assert_eq "--stall --garbage: exit status" 2 "$lib_rc"
[ ! -e "$T/p" ] || fail "a usage error wrote the port file"

# every server stopped (SIGTERM): each exits quietly, sanitizers included
lib_stop_servers
for f in "$T"/fake_server.*.err; do
    [ ! -s "$f" ] || fail "fake_server wrote to stderr ($f): $(head -c 2000 "$f")"
done

pass "routes, SSE, 404, --status, --cut-after, --garbage, --stall, --max-requests, the log"
