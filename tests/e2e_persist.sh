#!/bin/sh
# e2e_persist.sh — nothing is lost in -m chat: with --autosave always (a chat from a
# pipe saves nothing by default) every turn is autosaved under
# $XDG_STATE_HOME/llmchat/chats/; --resume (with no model named) reopens the newest
# chat and goes on exactly as the unbroken chat does (same greedy reply: the history
# is back in the KV cache); /save and /load round-trip; /resume lists and reopens;
# SIGTERM, SIGHUP and SIGINT twice quit with the chat saved and 128 + the signal,
# while one SIGINT leaves the chat going (each SIGINT waits for the one before to be
# acknowledged: no sleeps); keep-chats keeps the newest autosaves, but not over a
# running session's; two sessions on one chat lose neither's turns; /reset and /load
# start a new file; an unreadable newest chat is said; a state directory
# that cannot be written (not a directory, or "full": writes fail with EFBIG) gives
# one warning and the chat goes on; interventions (a control vector, a knocked-out
# head) are saved with the chat and set again by /load, so the next reply is the
# unbroken steered chat's; /load and /resume N set the settings a file names (the step
# limit too) and leave the others; --resume puts the command line first (said), then
# the saved chat, then the config file.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

STATE=$T/state
CHATS=$STATE/llmchat/chats
MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin
m1="Tell me a story about a dog named Max."
m2="What did Max do next?"
m3="Tell me a story about a cat."

chat() {
    XDG_STATE_HOME=$STATE run_llmchat -m chat --autosave always -T 1 -t 0 --weights f32 -n 60 "$@"
}

# newest_chat: the newest file in $CHATS.
newest_chat() {
    ls -t "$CHATS"/*.json 2>/dev/null | head -n 1
}

# json_get FILE EXPR: a Python expression over the saved chat d.
json_get() {
    "$PYTHON" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# ---- the unbroken chat: three turns ----
printf '%s\n%s\n%s\n' "$m1" "$m2" "$m3" >"$T/in"
chat -z "$TOK" "$MODEL" <"$T/in"
assert_status 0
[ "$(wc -l <"$T/out")" -eq 3 ] || fail "three replies expected"
sed -n 3p "$T/out" >"$T/want3"
f=$(newest_chat)
[ -n "$f" ] || fail "no chat was autosaved in $CHATS"
[ "$(ls "$CHATS" | wc -l)" -eq 1 ] || fail "one session wrote more than one file: $(ls "$CHATS")"
assert_eq "turns saved" 3 "$(json_get "$f" 'len(d["turns"])')"
assert_eq "first message saved" "$m1" "$(json_get "$f" 'd["turns"][0]["user"]')"
assert_eq "third reply saved" "$(cat "$T/want3")" "$(json_get "$f" 'd["turns"][2]["reply"]')"
assert_eq "model path saved" "$(cd "$(dirname "$MODEL")" && pwd -P)/chat260K.bin" "$(json_get "$f" 'd["model"]')"
assert_eq "settings saved" "0 60" "$(json_get "$f" '"%g %d" % (d["settings"]["temperature"], d["settings"]["steps"])')"
pass "every turn is autosaved under \$XDG_STATE_HOME/llmchat/chats"

# ---- who autosaves: a chat from a pipe only when asked; --keep-chats ----
saved=$STATE.policy
printf '%s\n' "$m1" >"$T/in1"
XDG_STATE_HOME=$saved run_llmchat -m chat -T 1 -t 0 -n 10 -z "$TOK" "$MODEL" <"$T/in1"
assert_status 0
[ -z "$(ls "$saved/llmchat/chats" 2>/dev/null)" ] ||
    fail "a chat from a pipe was autosaved without --autosave always: $(ls "$saved/llmchat/chats")"
printf 'autosave = always\nkeep-chats = 2\n' >"$T/policy.conf"
mkdir -p "$saved/llmchat/chats"
printf '{}\n' >"$saved/llmchat/chats/mine.json" # not an autosave's name: never removed
for i in 1 2 3; do
    XDG_STATE_HOME=$saved run_llmchat --config "$T/policy.conf" -m chat -T 1 -t 0 -n 10 -z "$TOK" "$MODEL" <"$T/in1"
    assert_status 0
done
assert_eq "autosaved chats kept (keep-chats = 2)" 2 "$(ls "$saved/llmchat/chats" | grep -c '^[0-9]\{8\}-[0-9]\{6\}-[0-9]*\.json$')"
[ -f "$saved/llmchat/chats/mine.json" ] || fail "keep-chats removed a file the autosave did not write"
pass "a chat from a pipe is saved only with autosave = always; keep-chats keeps the newest"

# The third reply depends on the history (else --resume below would prove nothing).
printf '%s\n' "$m3" >"$T/in"
XDG_STATE_HOME=$T/other run_llmchat -m chat -t 0 --weights f32 -n 60 -z "$TOK" "$MODEL" <"$T/in"
if [ "$(cat "$T/out")" = "$(cat "$T/want3")" ]; then
    fail "the third reply is the same without the history: pick other messages"
fi

# ---- --resume: two turns, then the third in a new process ----
rm -rf "$STATE"
printf '%s\n%s\n' "$m1" "$m2" >"$T/in"
chat -z "$TOK" "$MODEL" <"$T/in"
assert_status 0
first=$(newest_chat)
# the autosave says how each reply ended and which vocabulary its ids belong to
assert_eq "end tokens and vocabulary saved" True \
    "$(json_get "$first" 'len(d["vocab_hash"]) == 16 and all(t["end_token"] == 2 for t in d["turns"])')"
ids='[(t["reply_tokens"], t["end_token"]) for t in d["turns"][:2]]'
before=$(json_get "$first" "$ids")
printf '%s\n' "$m3" >"$T/in"
XDG_STATE_HOME=$STATE run_llmchat -m chat --resume --weights f32 <"$T/in"
assert_status 0
assert_file_contains "the resume message" "$T/err" "loaded $first (2 turns)"
assert_eq "the reply after --resume" "$(cat "$T/want3")" "$(cat "$T/out")"
[ "$(newest_chat)" = "$first" ] || fail "--resume did not go on in $first"
assert_eq "turns after --resume" 3 "$(json_get "$first" 'len(d["turns"])')"
assert_eq "the resumed turns' ids and end tokens" "$before" "$(json_get "$first" "$ids")"
pass "--resume reopens the newest chat (model, settings, dialog) and goes on as the unbroken chat"

XDG_STATE_HOME=$T/empty run_llmchat -m chat --resume </dev/null
assert_status 1
assert_file_contains "no chat to resume" "$T/err" "no saved chat"
run_llmchat -m generate --resume -i hi "$MODEL" </dev/null
assert_status 2
pass "--resume without a saved chat, or in generate mode, is refused"

# ---- /save and /load ----
rm -rf "$STATE"
printf '%s\n%s\n/save %s\n/reset\n/load %s\n%s\n' "$m1" "$m2" "$T/saved.json" "$T/saved.json" "$m3" >"$T/in"
chat -z "$TOK" "$MODEL" <"$T/in"
assert_status 0
assert_file_contains "/load" "$T/err" "loaded $T/saved.json (2 turns)"
assert_eq "the reply after /reset and /load" "$(cat "$T/want3")" "$(sed -n 3p "$T/out")"
printf '/load %s\n/load\n' "$T/nonexistent.json" >"$T/in"
chat -z "$TOK" "$MODEL" <"$T/in"
assert_status 0
assert_file_contains "/load of a missing file" "$T/err" "$T/nonexistent.json"
assert_file_contains "/load without a file" "$T/err" "/load needs a file name"
printf 'not a chat\n' >"$T/bad.json"
printf '/load %s\n%s\n' "$T/bad.json" "$m1" >"$T/in"
chat -z "$TOK" "$MODEL" <"$T/in"
assert_status 0
assert_file_contains "/load of a foreign file" "$T/err" "not a saved chat"
[ "$(wc -l <"$T/out")" -eq 1 ] || fail "the chat did not go on after a failed /load"
pass "/save and /load round-trip; bad files are refused and the chat goes on"

# A file without "settings" (written by hand) leaves the session's settings as they
# are; one with them sets them (/set alone prints the live ones).
printf '{"llmchat_chat": 1, "turns": [{"user": "Hi", "reply": "Hello."}]}\n' >"$T/bare.json"
printf '/load %s\n/set\n/load %s\n/set\n' "$T/bare.json" "$T/saved.json" >"$T/in"
chat -z "$TOK" "$MODEL" -t 0.3 -s 7 <"$T/in"
assert_status 0
assert_file_contains "/load of a file without settings" "$T/err" "loaded $T/bare.json (1 turn)"
[ "$(grep -c 'llmchat: temperature ' "$T/err")" -eq 2 ] || fail "/set did not print twice"
grep 'llmchat: temperature ' "$T/err" | sed -n 1p | grep -q '^llmchat: temperature 0.3 .* seed 7 ' ||
    fail "a file without settings changed them: $(grep 'llmchat: temperature ' "$T/err" | sed -n 1p)"
saved_t=$("$PYTHON" -c 'import json,sys; print("%g" % json.load(open(sys.argv[1]))["settings"]["temperature"])' "$T/saved.json")
grep 'llmchat: temperature ' "$T/err" | sed -n 2p | grep -q "^llmchat: temperature $saved_t " ||
    fail "a file with settings did not set them (want temperature $saved_t): $(grep 'llmchat: temperature ' "$T/err" | sed -n 2p)"
pass "/load keeps the session's settings for a file without them, takes a file's own"

# A file whose "settings" name some: those are set, the others (the seed too) stay.
printf '{"llmchat_chat": 1, "settings": {"temperature": 0.5, "steps": 7}, "turns": [{"user": "Hi", "reply": "Hello."}]}\n' >"$T/part.json"
printf '/load %s\n/set\n' "$T/part.json" >"$T/in"
chat -z "$TOK" "$MODEL" -k 5 -s 77 -p 0.5 --repeat-penalty 1.3 <"$T/in"
assert_status 0
grep 'llmchat: temperature ' "$T/err" | grep -q '^llmchat: temperature 0.5  top-k 5  top-p 0.5 .*repeat-penalty 1.3 .*seed 77  steps 7 ' ||
    fail "a file naming some settings: $(grep 'llmchat: temperature ' "$T/err")"
pass "/load sets the settings a file names (the step limit too) and leaves the others, the seed too"

# --resume: the command line first, then the saved chat, then the config file; what
# the command line changes is said, -y too.
prec=$T/prec
printf '/set temperature 0.7\n/set steps 5\n/set seed 42\n%s\n' "$m1" |
    XDG_STATE_HOME=$prec "$LLMCHAT_BIN" -m chat --no-config --autosave always -T 1 -c 128 \
        -y "Be brief." -z "$TOK" "$MODEL" >/dev/null 2>"$T/prec.err" || fail "$(cat "$T/prec.err")"
mkdir -p "$prec/cfg/llmchat"
printf 'template = chatml\nsteps = 50\nctx = 256\ntemperature = 0.1\ntop-k = 9\n' >"$prec/cfg/llmchat/config"
printf '/set\n%s\n' "$m2" | XDG_STATE_HOME=$prec XDG_CONFIG_HOME=$prec/cfg \
    "$LLMCHAT_BIN" -m chat --autosave never -T 1 --resume --trace "$T/prec1.jsonl" >/dev/null 2>"$T/err" ||
    fail "--resume under a config file: $(cat "$T/err")"
"$PYTHON" - "$T/prec1.jsonl" <<'PY' || fail "--resume: the saved chat's settings over the config file's (above)"
import json, sys
h = json.loads(open(sys.argv[1]).readline())
o = h["options"]
assert h["template"] == "llama2", h["template"]
assert (o["steps"], o["ctx"], o["temperature"], o["seed"]) == (5, 128, 0.7, 42), o
assert o["top_k"] == 0, o  # the chat names every setting: its top-k, not the config's
PY
printf '/set\n%s\n' "$m2" | XDG_STATE_HOME=$prec XDG_CONFIG_HOME=$prec/cfg \
    "$LLMCHAT_BIN" -m chat --autosave never -T 1 --resume -t 0 -s 7 -k 3 -c 64 --template llama2 \
        -y "From the command line." --trace "$T/prec2.jsonl" >/dev/null 2>"$T/err" ||
    fail "--resume with options: $(cat "$T/err")"
assert_file_contains "what the command line changes" "$T/err" \
    "llmchat: --resume: from the command line: temperature 0 (saved: 0.7), top-k 3 (saved: 0), seed 7 (saved: 42)"
assert_file_contains "-y over the saved system prompt" "$T/err" "system prompt from -y, in place of the saved chat's"
"$PYTHON" - "$T/prec2.jsonl" <<'PY' || fail "--resume: the command line's settings (above)"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
o = lines[0]["options"]
assert (o["temperature"], o["top_k"], o["seed"], o["steps"], o["ctx"]) == (0, 3, 7, 5, 64), o
text = "".join(r.get("piece", "") for r in lines[1:] if "pos" in r).replace("\u2581", " ")
assert "From the command line." in text and "Be brief." not in text, text[:300]
PY
pass "--resume: the command line's settings and -y win and are said; the saved chat's beat the config file's"

# /resume N takes the chat's step limit, and the file keeps it
printf '/resume 1\n/set\n' | XDG_STATE_HOME=$prec "$LLMCHAT_BIN" -m chat --no-config -T 1 -n 9 \
    -z "$TOK" "$MODEL" >/dev/null 2>"$T/err" || fail "/resume 1: $(cat "$T/err")"
grep -q '^llmchat: temperature 0.7 .* seed 42  steps 5 ' "$T/err" ||
    fail "/resume 1 did not take the chat's settings: $(grep 'llmchat: temperature ' "$T/err")"
f=$(ls -t "$prec/llmchat/chats"/*.json | head -n 1)
assert_eq "the reopened chat's file keeps its step limit" 5 "$(json_get "$f" 'd["settings"]["steps"]')"
pass "/resume N sets the chat's step limit and settings; its file keeps them"

# ---- /resume: the list, and one reopened ----
printf '/resume\n/resume 9\n/resume 1\n%s\n' "$m3" >"$T/in"
chat -z "$TOK" "$MODEL" <"$T/in"
assert_status 0
assert_file_contains "/resume's list" "$T/err" "recent chats"
assert_file_contains "/resume's list" "$T/err" "turns  $m1"
assert_file_contains "/resume out of range" "$T/err" "/resume takes the number of a chat"
assert_file_contains "/resume 1" "$T/err" "loaded "
pass "/resume lists the recent chats and reopens one"

# ---- signals ----
# start_fifo ARGS: llmchat -m chat reading the fifo $T/fifo (held open on fd 3). Not
# under timeout(1), which would pass the signals on in its own way: a watchdog kills
# a run that outlives LLMCHAT_TEST_TIMEOUT instead.
start_fifo() {
    rm -f "$T/fifo"
    mkfifo "$T/fifo"
    : >"$T/out" # (the redirections below wait for the fifo's writer)
    : >"$T/err"
    XDG_STATE_HOME=$STATE "$LLMCHAT_BIN" -m chat --autosave always -t 0 -n 60 -z "$TOK" "$MODEL" "$@" \
        <"$T/fifo" >"$T/out" 2>"$T/err" &
    pid=$!
    (
        trap 'kill "$nap" 2>/dev/null; exit 0' TERM
        sleep "$LLMCHAT_TEST_TIMEOUT" &
        nap=$!
        wait "$nap" && kill -9 "$pid"
    ) 2>/dev/null &
    watchdog=$!
    exec 3>"$T/fifo"
}

# wait_lines N: until $T/out holds N lines (at most 60 s).
wait_lines() {
    n=0
    while [ "$(wc -l <"$T/out")" -lt "$1" ]; do
        n=$((n + 1))
        [ $n -lt 600 ] || fail "no reply after 60 s"
        sleep 0.1
    done
}

# stop_fifo: closes the input and collects the exit status in $rc.
stop_fifo() {
    exec 3>&-
    rc=0
    wait "$pid" || rc=$?
    kill "$watchdog" 2>/dev/null
    [ "$rc" -ne 137 ] || fail "llmchat hung (killed after ${LLMCHAT_TEST_TIMEOUT}s)"
}

# wait_saved N: until the newest autosave holds N turns, so the turn is over and its
# save written (at most 60 s).
wait_saved() {
    n=0
    until f=$(newest_chat) && [ -n "$f" ] && [ "$(json_get "$f" 'len(d["turns"])')" = "$1" ]; do
        n=$((n + 1))
        [ $n -lt 600 ] || fail "no autosave of $1 turn(s) after 60 s"
        sleep 0.1
    done
}

for sig in TERM HUP; do
    rm -rf "$STATE"
    start_fifo
    printf '%s\n' "$m1" >&3
    wait_lines 1
    wait_saved 1
    kill -s "$sig" "$pid"
    stop_fifo
    case $sig in TERM) want=143 ;; HUP) want=129 ;; esac
    assert_status "$want"
    f=$(newest_chat)
    assert_file_contains "the SIG$sig message" "$T/err" "quitting on SIG$sig; the chat is saved in $f"
    assert_eq "turns saved on SIG$sig" 1 "$(json_get "$f" 'len(d["turns"])')"
done
pass "SIGTERM and SIGHUP save the chat and quit with 128 + the signal"

# wait_acks N: until llmchat has acknowledged N SIGINTs on stderr, or has exited.
wait_acks() {
    n=0
    while [ "$(grep -c '^llmchat: interrupted' "$T/err")" -lt "$1" ] && kill -0 "$pid" 2>/dev/null; do
        n=$((n + 1))
        [ $n -lt 600 ] || fail "SIGINT was not acknowledged after 60 s"
        sleep 0.1
    done
}

# No sleeps around the one-second window: each SIGINT is sent once the one before
# was acknowledged. The chat goes on after the first (m2 gets its reply); the last
# two come within a second of each other (if the reply came within a second of the
# first, the third SIGINT already quits, which is the same rule).
rm -rf "$STATE"
start_fifo
printf '%s\n' "$m1" >&3
wait_lines 1
kill -s INT "$pid"
wait_acks 1
printf '%s\n' "$m2" >&3
wait_lines 2
kill -s INT "$pid"
wait_acks 2
kill -s INT "$pid" 2>/dev/null || :
stop_fifo
assert_status 130
assert_file_contains "the SIGINT message" "$T/err" "quitting on SIGINT"
assert_eq "turns saved on SIGINT twice" 2 "$(json_get "$(newest_chat)" 'len(d["turns"])')"
pass "one SIGINT leaves the chat going; two within a second save it and quit"

# ---- two sessions on one chat; a running session's file is not pruned ----
rm -rf "$STATE"
start_fifo --keep-chats 1
printf '%s\n' "$m1" >&3
wait_lines 1 # the reply's line ends after its save: A writes nothing more until the next
a_file=$(newest_chat)
# another session, new, keeping 1: A's file is a running session's and stays
printf '%s\n' "$m3" | XDG_STATE_HOME=$STATE "$LLMCHAT_BIN" -m chat --autosave always --keep-chats 1 \
    -t 0 -n 30 -z "$TOK" "$MODEL" >"$T/c.out" 2>"$T/c.err" || fail "a second session failed: $(cat "$T/c.err")"
[ -f "$a_file" ] || fail "--keep-chats removed the file of a session still running"
printf '%s\n' "$m2" >&3
wait_lines 2 # A's file is the newest again
[ "$(newest_chat)" = "$a_file" ] || fail "A's second turn went to $(newest_chat), not $a_file"
# B resumes A's chat and saves a turn to it; A's next save must not wipe B's turn
printf 'B says this.\n' | XDG_STATE_HOME=$STATE "$LLMCHAT_BIN" -m chat -t 0 -n 30 --resume \
    >"$T/b.out" 2>"$T/b.err" || fail "the resuming session failed: $(cat "$T/b.err")"
[ "$(json_get "$a_file" 'd["turns"][-1]["user"]')" = "B says this." ] || fail "B's turn is not in $a_file: $(cat "$T/b.err")"
printf 'A says this.\n' >&3
wait_lines 3
stop_fifo
assert_eq "A's exit status" 0 "$rc"
assert_file_contains "A moving on" "$T/err" "changed since this session saved or read it"
[ "$(json_get "$a_file" 'd["turns"][-1]["user"]')" = "B says this." ] || fail "A's save wiped B's turn in $a_file: $(cat "$T/err")"
moved=$(newest_chat)
[ "$moved" != "$a_file" ] && [ "$(json_get "$moved" '[t["user"] for t in d["turns"]][-1]')" = "A says this." ] ||
    fail "A's chat did not go on in a new file"
pass "two sessions on one chat keep both (the later saver moves to a new file); --keep-chats spares running sessions"

# ---- /reset and /load leave the resumed chat's file as it was ----
before=$(cat "$moved")
printf '/reset\n%s\n' "$m1" | XDG_STATE_HOME=$STATE "$LLMCHAT_BIN" -m chat -t 0 -n 20 --resume >/dev/null 2>"$T/r.err" ||
    fail "/reset after --resume failed: $(cat "$T/r.err")"
[ "$(cat "$moved")" = "$before" ] || fail "/reset after --resume changed the resumed chat's file"
resumed=$(newest_chat) # the /reset run's new file: the one the next --resume opens
before=$(cat "$resumed")
printf '/load %s\n%s\n' "$a_file" "$m2" | XDG_STATE_HOME=$STATE "$LLMCHAT_BIN" -m chat -t 0 -n 20 --resume \
    >/dev/null 2>"$T/l.err" || fail "/load after --resume failed: $(cat "$T/l.err")"
assert_file_contains "/load's resume" "$T/l.err" "loaded $resumed"
[ "$(cat "$resumed")" = "$before" ] || fail "/load after --resume changed the resumed chat's file"
pass "/reset and /load start a new file: the resumed chat stays"

# ---- the newest saved chat cannot be read: said, and the one before resumed ----
newest=$(newest_chat)
printf '{"llmchat_chat": 1, "turns": [' >"$newest"
touch "$newest"
printf 'hi\n' | XDG_STATE_HOME=$STATE "$LLMCHAT_BIN" -m chat -t 0 -n 5 --resume >/dev/null 2>"$T/u.err" ||
    fail "--resume past an unreadable chat failed: $(cat "$T/u.err")"
assert_file_contains "an unreadable newest chat" "$T/u.err" "the newest saved chat cannot be read"
pass "--resume says that the newest saved chat cannot be read, and resumes the one before"

# ---- a saved chat whose tokenizer is gone: the message says where the name came from ----
cp "$TOK" "$T/gone.bin"
printf 'hi\n' | XDG_STATE_HOME=$STATE "$LLMCHAT_BIN" -m chat --autosave always -t 0 -n 5 -z "$T/gone.bin" \
    "$MODEL" >/dev/null 2>"$T/g.err" || fail "a chat with a tokenizer copy failed: $(cat "$T/g.err")"
rm "$T/gone.bin"
printf 'x\n' >"$T/in"
XDG_STATE_HOME=$STATE run_llmchat -m chat -n 5 --resume <"$T/in"
assert_status 1
assert_file_contains "a resumed chat's tokenizer gone" "$T/err" "cannot open the tokenizer the saved chat"
pass "a resumed chat's missing tokenizer is named as the saved chat's"

# ---- the trace's records reach its temporary file by the end of each reply ----
rm -f "$T"/live.jsonl*
start_fifo --trace "$T/live.jsonl"
printf '%s\n' "$m1" >&3
wait_lines 1
live=$(ls "$T"/live.jsonl.tmp-* 2>/dev/null | head -n 1)
[ -n "$live" ] || fail "no temporary trace file while the chat runs"
[ "$(grep -c '"pos":' "$live")" -gt 10 ] || fail "the trace's records are not in $live after the reply (what a crash would leave)"
kill -9 "$pid"
wait "$pid" 2>/dev/null
exec 3>&-
kill "$watchdog" 2>/dev/null
[ "$(grep -c '"pos":' "$live")" -gt 10 ] || fail "a killed chat left its trace's records unwritten"
pass "the trace's records are in its temporary file at the end of each reply, and after a kill"

# ---- a state directory that cannot be written: one warning, the chat goes on ----
printf 'a file\n' >"$T/not-a-dir"
printf '%s\n%s\n%s\n' "$m1" "$m2" "$m3" >"$T/in"
XDG_STATE_HOME=$T/not-a-dir run_llmchat -m chat --autosave always -t 0 -n 30 -z "$TOK" "$MODEL" <"$T/in"
assert_status 0
[ "$(wc -l <"$T/out")" -eq 3 ] || fail "the chat did not go on without its state directory"
assert_eq "autosave warnings (state dir is a file)" 1 "$(grep -c 'cannot autosave' "$T/err")"

# A full disk: RLIMIT_FSIZE 0 makes every write to a regular file fail (EFBIG, with
# SIGXFSZ ignored); stdout and stderr go through a pipe, which the limit spares.
rm -rf "$STATE"
rc=0
(
    trap '' XFSZ
    ulimit -f 0
    XDG_STATE_HOME=$STATE exec "$LLMCHAT_BIN" -m chat --autosave always -t 0 -n 30 -z "$TOK" "$MODEL" <"$T/in" 2>&1
) | cat >"$T/out" || rc=$?
assert_eq "autosave warnings (full disk)" 1 "$(grep -c 'cannot autosave' "$T/out")"
[ "$(grep -vc 'llmchat:' "$T/out")" -eq 3 ] || fail "the chat did not go on with a full disk: $(cat "$T/out")"
[ -z "$(ls "$CHATS" 2>/dev/null)" ] || fail "a failed save left files behind: $(ls "$CHATS")"
pass "an unwritable or full state directory: one warning, the chat goes on"

# ---- interventions go with the chat ----
# a chat steered by a control vector and a knocked-out head is saved with them (version
# 3); /load in a plain session sets them again before the context is read, so the next
# reply is the unbroken steered chat's; --resume with interventions of its own keeps
# those and says so; a vector file that is gone is said, and the chat loads all the same
VEC=$DATA/control_vector/happy.gguf
steered() {
    XDG_STATE_HOME=$T/steer run_llmchat -m chat -T 1 -t 0 --weights f32 -n 30 -z "$TOK" "$@"
}
printf '%s\n%s\n' "$m1" "$m2" >"$T/two"
steered --control-vector "$VEC" --knock-out 4:4 "$MODEL" <"$T/two"
assert_status 0
sed -n 2p "$T/out" >"$T/steered2"
steered "$MODEL" <"$T/two"
sed -n 2p "$T/out" >"$T/plain2"
[ "$(cat "$T/steered2")" != "$(cat "$T/plain2")" ] || fail "the interventions change nothing here: the test would prove nothing"
printf '%s\n/save %s\n' "$m1" "$T/steered.json" | steered --control-vector "$VEC" --knock-out 4:4 "$MODEL"
assert_status 0
assert_eq "a steered chat's format version" 3 "$(json_get "$T/steered.json" 'd["llmchat_chat"]')"
assert_eq "the interventions saved" "[[4, 4]] happy" \
    "$(json_get "$T/steered.json" '"%s %s" % (d["steer"]["heads_out"], d["steer"]["vectors"][0]["name"])')"
printf '/load %s\n%s\n' "$T/steered.json" "$m2" | steered "$MODEL"
assert_status 0
assert_file_contains "/load says the interventions it set" "$T/err" "interventions as saved: vectors happy 1.00 | heads out L5H5 (were: none)"
assert_eq "the reply after /load of a steered chat" "$(cat "$T/steered2")" "$(cat "$T/out")"
# a vector named relative to where the chat ran is saved by its absolute place
mkdir -p "$T/vecdir"
cp "$VEC" "$T/vecdir/happy.gguf"
(cd "$T/vecdir" && printf '%s\n/save %s\n' "$m1" "$T/relative.json" |
    XDG_STATE_HOME=$T/steer "$LLMCHAT_BIN" -m chat -T 1 -t 0 -n 5 -z "$TOK" \
        --control-vector happy.gguf "$MODEL" >/dev/null 2>&1) || fail "the chat steered from vecdir"
assert_eq "the saved vector's place" "$T/vecdir/happy.gguf" \
    "$(json_get "$T/relative.json" 'd["steer"]["vectors"][0]["path"]')"
pass "interventions are saved with the chat and set again when it is loaded (the unbroken chat's reply)"

mkdir -p "$T/steer/llmchat/chats"
cp "$T/steered.json" "$T/steer/llmchat/chats/20250101-000000-1.json"
printf '%s\n' "$m2" | steered --resume --autosave always --knock-out 1:1 "$MODEL"
assert_status 0
assert_file_contains "--resume with interventions of its own" "$T/err" "this session keeps its own: heads out L2H2"
assert_file_contains "--resume apart goes on in a new file" "$T/err" "it goes on in a new file"
assert_eq "the resumed file keeps its interventions and turns" "[[4, 4]] 1" \
    "$(json_get "$T/steer/llmchat/chats/20250101-000000-1.json" '"%s %d" % (d["steer"]["heads_out"], len(d["turns"]))')"
"$PYTHON" -c 'import sys; t = open(sys.argv[1]).read(); open(sys.argv[2], "w").write(t.replace("happy.gguf", "gone.gguf"))' \
    "$T/steered.json" "$T/gone.json"
printf '/load %s\n' "$T/gone.json" | steered "$MODEL"
assert_status 0
assert_file_contains "a vector file that is gone" "$T/err" "were not set again"
assert_file_contains "the chat loads all the same" "$T/err" "loaded $T/gone.json (1 turn)"
pass "--resume keeps the command line's interventions and the file its own (a new file); a vector file that is gone is said"

# ---- each turn read back with the interventions it ran with ----
# a vector loaded after the first turn: the first turn ran without it, the second with
# it; the saved file (version 4) says so for the first turn, and /load reads each turn
# back as it ran, so the third reply is the unbroken chat's. The same file without
# "ran_with" (what version 3 wrote) reads the first turn with the vector too, and its
# third reply differs: the check above could fail
printf '%s\n/vector load %s 1\n%s\n/save %s\n%s\n' "$m1" "$VEC" "$m2" "$T/turns.json" "$m3" |
    steered "$MODEL"
assert_status 0
sed -n 3p "$T/out" >"$T/unbroken3"
assert_eq "a chat whose turns ran apart: its format version" 4 "$(json_get "$T/turns.json" 'd["llmchat_chat"]')"
assert_eq "what each turn ran with" "happy [[-1, []]] none" \
    "$(json_get "$T/turns.json" '"%s %s %s" % (d["steer"]["vectors"][0]["name"], [[-1 if s["from"] < 0 else s["from"], s["steer"]["vectors"]] for s in d["turns"][0]["ran_with"]], d["turns"][1].get("ran_with", "none"))')"
printf '/load %s\n%s\n' "$T/turns.json" "$m3" | steered "$MODEL"
assert_status 0
assert_eq "the third reply after /load of turns that ran apart" "$(cat "$T/unbroken3")" "$(cat "$T/out")"
"$PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["llmchat_chat"] = 3
for t in d["turns"]:
    t.pop("ran_with", None)
json.dump(d, open(sys.argv[2], "w"))' "$T/turns.json" "$T/turns3.json"
printf '/load %s\n%s\n' "$T/turns3.json" "$m3" | steered "$MODEL"
[ "$(cat "$T/out")" != "$(cat "$T/unbroken3")" ] || fail "every turn read with the vector gives the same reply: the check proves nothing"
"$PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["turns"][0]["ran_with"].append(dict(d["turns"][0]["ran_with"][0]))
json.dump(d, open(sys.argv[2], "w"))' "$T/turns.json" "$T/badran.json"
printf '/load %s\n' "$T/badran.json" | steered "$MODEL"
assert_file_contains "a ran_with out of order" "$T/err" 'turn 1: "ran_with" must list objects whose "from" are whole numbers, ascending'
# the same in one session: the context fills and the second turn, which ran with the
# vector, is read again with it after the first leaves; the third runs without (trace)
printf '%s\n/vector load %s 1\n%s\n/vector drop happy\n%s\n' "$m1" "$VEC" "$m2" "$m3" |
    steered -c 160 --trace "$T/reread.jsonl" "$MODEL"
assert_file_contains "the context filled" "$T/err" "context full: dropped the oldest turn"
assert_eq "the second turn read again with the vector, the third without" "happy none" \
    "$("$PYTHON" -c 'import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])][1:]
again = [i for i, r in enumerate(recs) if r["pos"] == 0][1]
steer = [(i, r["steer"]) for i, r in enumerate(recs) if "steer" in r]
at = lambda k: [s for i, s in steer if i <= k][-1]
third = again + [r["pos"] for r in recs[again:]].index(max(r["pos"] for r in recs[again:]))
print(" ".join(v[0]["name"] if v else "none" for v in (at(again)["vectors"], at(third)["vectors"])))' "$T/reread.jsonl")"
pass "each turn is read back with the interventions it ran with (a loaded chat, a full context)"

# a turn's state that cannot be set again (its vector file is gone) is said and read
# with the state in force; so is the whole context when the state in force could not
# be set back (its own vector file, which the second turn's state lacks, gone since it
# was loaded)
"$PYTHON" -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["turns"][0]["ran_with"][0]["steer"]["vectors"] = [dict(d["steer"]["vectors"][0], path=sys.argv[3])]
json.dump(d, open(sys.argv[2], "w"))' "$T/turns.json" "$T/goneran.json" "$T/gone.gguf"
printf '/load %s\n' "$T/goneran.json" | steered "$MODEL"
assert_status 0
assert_file_contains "a turn's vector file that is gone" "$T/err" "are read again with the interventions in force, not those they ran with: "
assert_file_contains "the file named" "$T/err" "$T/gone.gguf"
assert_file_contains "the chat loads all the same" "$T/err" "loaded $T/goneran.json (2 turns)"
mkdir -p "$T/gonedir"
cp "$VEC" "$T/gonedir/happy.gguf"
rm -f "$T/fifo"
mkfifo "$T/fifo"
XDG_STATE_HOME=$T/steer "$LLMCHAT_BIN" -m chat -T 1 -t 0 --weights f32 -n 30 -z "$TOK" -c 160 \
    "$MODEL" <"$T/fifo" >"$T/out" 2>"$T/err" &
pid=$!
exec 3>"$T/fifo"
printf '%s\n%s\n/vector load %s 1\n' "$m1" "$m2" "$T/gonedir/happy.gguf" >&3
n=0
while ! grep -q 'control vectors: happy' "$T/err" && [ "$n" -lt 600 ]; do
    sleep 0.1
    n=$((n + 1))
done
rm "$T/gonedir/happy.gguf"
printf '%s\n/vector\n' "$m3" >&3
exec 3>&-
wait "$pid" || fail "the chat whose vector file went away: exit $?"
assert_file_contains "the context filled" "$T/err" "context full: dropped the oldest turn"
assert_file_contains "the state in force cannot be set back" "$T/err" "the context is read again with the interventions in force, not those it ran with: "
[ "$(grep -c . "$T/out")" -eq 3 ] || fail "the third reply is missing: $(cat "$T/out")"
assert_file_contains "the vector in force stays in force" "$T/err" "llmchat: control vectors: happy 1.00"
pass "a state that cannot be set again is said, and read with the one in force"
