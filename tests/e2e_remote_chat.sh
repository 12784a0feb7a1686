#!/bin/sh
# e2e_remote_chat.sh — a chat with a served model (-m chat; the TUI's is
# e2e_remote_tui.sh): what it keeps, against tests/fake_server answering with
# llama-server 0.4.0's recorded bytes: /save writes a saved chat that
# names the server (URL, API, model) and holds the turns' texts and no ids; autosave
# writes the session's file in the chats directory; --resume without --server goes on
# with the saved chat's server, the next render holding the earlier turns; /load of a
# local chat into a served one and of a served chat into a local one, each saying what
# it was saved with; --trace writes the server's records (the header's server, a reply
# token's top alternatives with their pieces, the probabilities the server gave); a damaged
# "server" object is one line; --trace with -m generate and --trace-attn over a server
# are refused (exit 2). Then a chat over ollama (its documented /api/chat shape): the
# dialog sent as messages, each reply streamed, the trace's tokens numbered by their
# text with the "<dialog>" position before each reply; the same over an
# OpenAI-compatible server that does not tokenize (POST /v1/chat/completions).
. "$LLMCHAT_SRCDIR/tests/lib.sh"

REC=$DATA/remote/llama-server
MODEL=$(model_file stories260K.gguf)
"$LLMCHAT_BIN" --server http://127.0.0.1:1 -m generate -i x 2>&1 | grep -q 'built without' &&
    skip "this llmchat was built without libcurl"
CHATS=$XDG_STATE_HOME/llmchat/chats
REPLY=", there was a little girl"

# json_get FILE EXPR: prints the Python expression EXPR of the JSON object d in FILE.
json_get() {
    "$PYTHON" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" ||
        fail "$1: cannot evaluate $2"
}

# ---- /save, autosave and --trace of a chat over the server ----
start_fake_server --routes "$REC" --log "$T/chat.log"
url=$FAKE_URL
printf 'Once upon a time\n/save %s\n/system Be brief\nTom had a dog\n/quit\n' "$T/saved.json" >"$T/in"
run_llmchat --no-config --server "$url" -m chat -n 8 --autosave always --trace "$T/t.jsonl" <"$T/in"
assert_status 0
assert_contains "/save" "$(cat "$T/err")" "saved to $T/saved.json"
assert_eq "/save: the server" "$url llama-server stories260K.gguf" \
    "$(json_get "$T/saved.json" 'd["server"]["url"], d["server"]["api"], d["server"]["model"]' | tr -d "(),'")"
assert_eq "/save: one turn, its texts" "1|Once upon a time|$REPLY" \
    "$(json_get "$T/saved.json" '"%d|%s|%s" % (len(d["turns"]), d["turns"][0]["user"], d["turns"][0]["reply"])')"
assert_eq "/save: no ids, no model, no template" "False False False" \
    "$(json_get "$T/saved.json" '"reply_tokens" in d["turns"][0], "model" in d, "template" in d' | tr -d '(),')"
# the step limit cut the reply: saved as cut, as a local chat's is
assert_eq "/save: a reply the step limit ended is cut" "False True" \
    "$(json_get "$T/saved.json" 'd["turns"][0]["complete"], d["turns"][0]["cut"]' | tr -d '(),')"
set -- "$CHATS"/*.json
[ "$#" -eq 1 ] && [ -f "$1" ] || fail "autosave: not one file in $CHATS: $*"
auto=$1
assert_eq "autosave: both turns and the system prompt" "2|Be brief|Tom had a dog" \
    "$(json_get "$auto" '"%d|%s|%s" % (len(d["turns"]), d["system"], d["turns"][1]["user"])')"
grep '^BODY: {"messages"' "$T/chat.log" | tail -n 1 | grep -q '"role":"system","content":"Be brief"' ||
    fail "/system did not reach the second render: $(grep '^BODY: {"messages"' "$T/chat.log")"
pass "a served chat: /save names the server and keeps the texts; autosave; /system"

# slow motion is a local model's: --slow-motion says it does nothing, /set refuses it
printf '/set slow-motion 300\n/set\n' >"$T/in"
run_llmchat --no-config --server "$url" -m chat --slow-motion 100 --autosave never <"$T/in"
assert_status 0
assert_contains "--slow-motion with a server" "$(cat "$T/err")" \
    "--slow-motion does nothing with a served model: its reply comes at the server's pace"
assert_contains "/set slow-motion with a server" "$(cat "$T/err")" \
    "/set: slow-motion needs a local model: a served reply comes at the server's pace"
case $(cat "$T/err") in *"from the next token"*) fail "/set slow-motion claimed a change" ;; esac
pass "a served chat: --slow-motion is said to do nothing, /set slow-motion is refused"

# the trace: the header names the server; the record before each reply token holds the
# server's top alternatives (20 asked; the recording has 5), their pieces and
# probabilities as the recorded answer gave them
"$PYTHON" - "$T/t.jsonl" "$REC/completion" "$url" <<'EOF' || fail "the served trace (above)"
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
head, recs = lines[0], lines[1:]
bad = []
s = head.get("server", {})
if (s.get("url"), s.get("api"), s.get("model"), head.get("mode")) != (sys.argv[3], "llama-server", "stories260K.gguf", "chat"):
    bad.append("header %r" % head)
if "vocab" in head or "model" in head:
    bad.append("a served trace with a vocabulary or a model")
events = [json.loads(l[6:]) for l in open(sys.argv[2]) if l.startswith("data: ")]
toks = [e["completion_probabilities"][0] for e in events if e.get("completion_probabilities")]
by_pos = {}
for r in recs:
    by_pos[r["pos"]] = r  # the last record of a position is the one that holds
first = toks[0]
r = by_pos.get(5)
if not r or r["next"] != first["id"] or r["phase"] != "prompt":
    bad.append("position 5 (the prompt's last) %r, not followed by %d" % (r, first["id"]))
else:
    n = len(first["top_logprobs"])
    if len(r["top"]) != n or len(r["top_pieces"]) != n:
        bad.append("top %d, top_pieces %d, not %d" % (len(r["top"]), len(r["top_pieces"]), n))
    for (tid, lp, p), piece, want in zip(r["top"], r["top_pieces"], first["top_logprobs"]):
        if tid != want["id"] or piece != want["token"] or abs(lp - want["logprob"]) > 1e-6 or abs(p - math.exp(want["logprob"])) > 1e-6:
            bad.append("candidate %r %r, the server said %r" % ([tid, lp, p], piece, want))
            break
    if abs(r["next_prob"] - math.exp(first["logprob"])) > 1e-6 or r["next_rank"] != 1:
        bad.append("next_prob %r rank %r" % (r["next_prob"], r["next_rank"]))
# the recorded /tokenize answers every render with the same 6 ids: the second reply
# takes the first one's positions again
gen = [r for p, r in sorted(by_pos.items()) if r["phase"] == "gen"]
if len(gen) != 8:
    bad.append("%d reply positions, not 8" % len(gen))
if any(not r["piece"] for r in gen):
    bad.append("a reply position without its piece")
if bad:
    print("\n".join(bad[:5]), file=sys.stderr)
    sys.exit(1)
EOF
pass "--trace over a server: the header's server, the server's alternatives with pieces and probabilities"

# ---- --resume goes on with the saved chat's server ----
: >"$T/chat.log"
printf 'And then\n' | run_llmchat --no-config -m chat -n 8 --resume
assert_status 0
assert_contains "--resume" "$(cat "$T/err")" "loaded $auto (2 turns)"
assert_eq "--resume: the reply" "$REPLY" "$(cat "$T/out")"
grep '^BODY: {"messages"' "$T/chat.log" | tail -n 1 >"$T/render"
for want in '"role":"system","content":"Be brief"' '"role":"user","content":"Once upon a time"' \
    '"role":"user","content":"Tom had a dog"' '"role":"user","content":"And then"'; do
    grep -q "$want" "$T/render" || fail "--resume: the render lacks $want: $(cat "$T/render")"
done
assert_eq "--resume: saved to the same file" "3" "$(json_get "$auto" 'len(d["turns"])')"
pass "--resume without --server: the saved chat's server, the earlier turns rendered again, the same file"

# ---- a local chat loaded into a served one, a served one into a local one ----
cat >"$T/local.json" <<EOF
{"llmchat_chat": 1, "model": "$MODEL", "template": "chatml", "system": "",
 "settings": {"temperature": 0},
 "turns": [{"user": "Lily saw a cat", "reply": "She smiled.", "complete": true, "cut": false,
            "in_context": true}]}
EOF
: >"$T/chat.log"
printf '/load %s\nWhat next\n' "$T/local.json" >"$T/in"
run_llmchat --no-config --server "$url" -m chat -n 8 <"$T/in"
assert_status 0
assert_contains "/load local" "$(cat "$T/err")" "loaded $T/local.json (1 turn)"
assert_contains "/load local" "$(cat "$T/err")" "saved with $MODEL; it goes on with stories260K.gguf at $url"
grep '^BODY: {"messages"' "$T/chat.log" | tail -n 1 |
    grep -q '"role":"assistant","content":"She smiled."},{"role":"user","content":"What next"}' ||
    fail "/load: the render lacks the loaded turn: $(grep '^BODY: {"messages"' "$T/chat.log")"
grep '^BODY: {"prompt"' "$T/chat.log" | tail -n 1 | grep -q '"temperature":0,' ||
    fail "/load: the saved settings did not reach the request"
# /load in a resumed served chat goes on in a new file: the resumed one stays as it was
before=$(cat "$auto")
printf '/load %s\nWhat next\n' "$T/local.json" >"$T/in"
run_llmchat --no-config -m chat -n 8 --resume <"$T/in"
assert_status 0
assert_contains "/load after --resume" "$(cat "$T/err")" "loaded $auto (3 turns)"
[ "$(cat "$auto")" = "$before" ] || fail "/load in a resumed served chat changed the resumed file"
printf '/load %s\n' "$T/saved.json" | run_llmchat --no-config "$MODEL" -m chat -n 2
assert_status 0
assert_contains "local /load of a served chat" "$(cat "$T/err")" "loaded $T/saved.json (1 turn)"
assert_contains "local /load of a served chat" "$(cat "$T/err")" \
    "saved with stories260K.gguf at $url; it goes on with"
pass "/load: a local chat into a served one and a served chat into a local one"

# ---- a damaged server object; refused options ----
"$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1])); d["server"] = {"api": "llama-server"}
json.dump(d, open(sys.argv[2], "w"))' "$T/saved.json" "$T/bad.json"
printf '/load %s\nWhat next\n' "$T/bad.json" | run_llmchat --no-config --server "$url" -m chat -n 8
assert_contains "a server without url" "$(cat "$T/err")" "\"server\" has no \"url\""
assert_eq "the chat goes on" "$REPLY" "$(cat "$T/out")"
run_llmchat --no-config --server "$url" -m generate -i x --trace "$T/g.jsonl"
assert_status 2
run_llmchat --no-config --server "$url" -m chat --trace "$T/g.jsonl" --trace-attn </dev/null
assert_status 2
assert_contains "--trace-attn" "$(cat "$T/err")" "need the weights"
pass "a saved chat whose server has no URL is one line; --trace with generate, --trace-attn refused"

# ---- a chat over ollama: the dialog rendered inside the request (POST /api/chat) ----
start_fake_server --routes "$DATA/remote/ollama" --log "$T/ollama.log"
printf 'Once upon a time\nAgain\n' >"$T/in"
run_llmchat --no-config --server "$FAKE_URL" --server-model stories260K -m chat -n 3 \
    --temperature 0 --trace "$T/o.jsonl" <"$T/in"
assert_status 0
assert_eq "ollama -m chat: a reply a line" ", there was
, there was" "$(cat "$T/out")"
[ "$(grep -c '^POST /api/chat' "$T/ollama.log")" -eq 2 ] || fail "ollama: not two POST /api/chat"
grep '^BODY: {"model":"stories260K","messages"' "$T/ollama.log" | tail -n 1 | grep -q \
    '"messages":\[{"role":"user","content":"Once upon a time"},{"role":"assistant","content":", there was"},{"role":"user","content":"Again"}\],"stream":true,"logprobs":true,"top_logprobs":20' ||
    fail "ollama: the second request: $(grep '^BODY' "$T/ollama.log" | tail -n 1)"
"$PYTHON" - "$T/o.jsonl" <<'EOF' || fail "the trace of a chat over ollama (above)"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
head, recs = lines[0], lines[1:]
bad = []
if head["server"]["api"] != "ollama":
    bad.append("header %r" % head["server"])
# per reply: the dialog's position, then the reply's 3 tokens, numbered by their text
shape = [(r["pos"], r["piece"], r["phase"]) for r in recs]
want = [(0, "<dialog>", "prompt"), (1, ",", "gen"), (2, " there", "gen"), (3, " was", "gen"),
        (4, "<dialog>", "prompt"), (5, ",", "gen"), (6, " there", "gen"), (7, " was", "gen")]
if shape != want:
    bad.append("records %r" % shape)
else:
    ids = [r["token"] for r in recs]
    if ids[1:4] != ids[5:8] or len(set(ids[1:4])) != 3 or ids[0] != ids[4]:
        bad.append("ids %r: the same text must have the same id, and no other" % ids)
    first = recs[0]
    if first["top_pieces"] != [",", " there", " in"] or first["next"] != ids[1]:
        bad.append("the dialog's record %r" % first)
    if abs(first["next_prob"] - 0.968718827) > 1e-6:
        bad.append("next_prob %r, not exp(-0.0317809)" % first["next_prob"])
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
EOF
pass "a chat over ollama: the dialog as messages, its replies, the trace numbered by text"

# ---- a chat over an OpenAI-compatible server that does not tokenize ----
start_fake_server --routes "$DATA/remote/openai" --log "$T/openai.log"
printf 'Once upon a time\nAgain\n' >"$T/in"
run_llmchat --no-config --server "$FAKE_URL" -m chat -n 3 --temperature 0 --trace "$T/oa.jsonl" <"$T/in"
assert_status 0
assert_eq "OpenAI -m chat: a reply a line" '"He
"He' "$(cat "$T/out")"
[ "$(grep -c '^POST /v1/chat/completions' "$T/openai.log")" -eq 2 ] ||
    fail "OpenAI: not two POST /v1/chat/completions: $(grep '^POST' "$T/openai.log")"
grep '^BODY: {"model":"stories260K","messages"' "$T/openai.log" | tail -n 1 | grep -q \
    '{"role":"assistant","content":"\\"He"},{"role":"user","content":"Again"}\],"max_tokens":3,"logprobs":true,"top_logprobs":20,"stream":true,"temperature":0,' ||
    fail "OpenAI: the second request: $(grep '^BODY' "$T/openai.log" | tail -n 1)"
"$PYTHON" - "$T/oa.jsonl" <<'EOF' || fail "the trace of a chat over an OpenAI-compatible server (above)"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])][1:]
shape = [(r["pos"], r["piece"]) for r in recs[:4]]
if shape != [(0, "<dialog>"), (1, '"'), (2, "H"), (3, "e")]:
    sys.exit("records %r" % shape)
if recs[0]["top_pieces"] != ['"', "H", "T"] or abs(recs[0]["next_prob"] - 0.344078481) > 1e-6:
    sys.exit("the dialog's record %r" % recs[0])
EOF
pass "a chat over an OpenAI-compatible server: POST /v1/chat/completions, the replies, the trace"
