#!/bin/sh
# e2e_chat.sh — llmchat -m chat through a pipe: one user turn per input line, each reply
# on stdout on one line (its newlines written as \n, backslashes as \\; an empty line
# for a message that could not be answered). Greedy first replies of chat260K.bin with fp32 weights
# equal tests/data/golden/chat_greedy.jsonl (made by an fp32 reference); the default Q8_0
# weights agree on the first sentence; two turns work; /system, /reset, /save, /quit,
# /help and an unknown command behave; user text never becomes a control token.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

golden=$GOLDEN/chat_greedy.jsonl
# The golden replies come from fp32 arithmetic; Q8_0 rounding can flip a near tie (for
# "Tell me a story about Tom." EOS and " He" are 0.09 apart in logit), so the exact
# comparisons use --weights f32.
chat() {
    run_llmchat -m chat -t 0 --weights f32 -z "$DATA/tok512.bin" "$@"
}

# ---- one message, one line: a reply's newlines are escaped on stdout ----
# stories260K's greedy replies to these two hold newlines; the saved chat holds them as
# they are. stdout has one line per message, each the reply once \n and \\ are undone.
printf '%s\n' "hi" "Tell me a story." "/save $T/lines.json" >"$T/in"
chat -n 100 "$DATA/stories260K.bin" <"$T/in"
assert_status 0
"$PYTHON" - "$T/out" "$T/lines.json" <<'EOF' || fail "replies are not one line each (see above)"
import json, re, sys
out = open(sys.argv[1], encoding="utf-8").read()
turns = json.load(open(sys.argv[2], encoding="utf-8"))["turns"]
if not out.endswith("\n"):
    sys.exit("  stdout does not end with a newline")
lines = out[:-1].split("\n")
if len(lines) != len(turns) or len(turns) != 2:
    sys.exit("  %d lines on stdout for %d replies: %r" % (len(lines), len(turns), out[:300]))
def unescape(line):
    def one(m):
        if m.group(1) not in "n\\":
            sys.exit("  an unknown escape \\%s in %r" % (m.group(1), line))
        return "\n" if m.group(1) == "n" else "\\"
    return re.sub(r"\\(.)", one, line)
for line, t in zip(lines, turns):
    if unescape(line) != t["reply"]:
        sys.exit("  line %r is not the reply %r" % (line, t["reply"]))
if not any("\n" in t["reply"] for t in turns):
    sys.exit("  no reply holds a newline: the test checks nothing")
EOF
# a message that cannot be answered still has its line, empty
printf '%s\n' "Tell me a long story about a dog named Max who runs in the park and plays." \
    "Hi." >"$T/in"
run_llmchat -m chat -t 0 -n 5 -c 40 -z "$DATA/tok512.bin" "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
assert_eq "lines for two messages, the first refused" 2 "$(wc -l <"$T/out" | tr -d ' ')"
assert_eq "the refused message's line" "" "$(head -n 1 "$T/out")"
assert_file_contains "why the first message was refused" "$T/err" "but the context holds 40"
pass "one line on stdout per message, a reply's newlines escaped"

# ---- golden first replies ----
count=$(jsonl_count "$golden")
[ "$count" -gt 0 ] || fail "no golden entries in $golden"
i=0
while [ "$i" -lt "$count" ]; do
    model=$(jsonl_get "$golden" "$i" model)
    system=$(jsonl_get "$golden" "$i" system)
    user=$(jsonl_get "$golden" "$i" user)
    want=$(jsonl_get "$golden" "$i" reply | trim)
    if [ -n "$system" ]; then
        printf '%s\n' "$user" >"$T/in"
        chat -y "$system" "$(model_file "$model")" <"$T/in"
    else
        printf '%s\n' "$user" >"$T/in"
        chat "$(model_file "$model")" <"$T/in"
    fi
    assert_status 0
    got=$(trim <"$T/out")
    assert_eq "golden chat reply $i ('$user')" "$want" "$got"
    i=$((i + 1))
done
pass "$count golden first replies match (fp32 weights)"

# ---- the default Q8_0 weights: the same first sentence ----
i=0
while [ "$i" -lt "$count" ]; do
    user=$(jsonl_get "$golden" "$i" user)
    system=$(jsonl_get "$golden" "$i" system)
    want=$(jsonl_get "$golden" "$i" reply | trim)
    want=${want%%.*}.
    printf '%s\n' "$user" >"$T/in"
    if [ -n "$system" ]; then
        run_llmchat -m chat -t 0 -z "$DATA/tok512.bin" -y "$system" "$BUNDLED/chat260K.bin" <"$T/in"
    else
        run_llmchat -m chat -t 0 -z "$DATA/tok512.bin" "$BUNDLED/chat260K.bin" <"$T/in"
    fi
    assert_status 0
    got=$(trim <"$T/out")
    case $got in
    "$want"*) ;;
    *) fail "Q8_0 reply $i ('$user') does not start with [$want]: [$got]" ;;
    esac
    i=$((i + 1))
done
pass "Q8_0 first sentences match"

# Entry 3 has no system prompt and a one-line reply: the reference for what follows.
tom_user=$(jsonl_get "$golden" 3 user)
tom_reply=$(jsonl_get "$golden" 3 reply | trim)
assert_eq "golden entry 3 system prompt" "" "$(jsonl_get "$golden" 3 system)"
leo_system=$(jsonl_get "$golden" 0 system)
leo_user=$(jsonl_get "$golden" 0 user)
leo_reply=$(jsonl_get "$golden" 0 reply | trim)

# ---- without -m, a pipe means chat ----
printf '%s\n' "$tom_user" >"$T/in"
run_llmchat -t 0 --weights f32 -z "$DATA/tok512.bin" "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
assert_eq "default mode on a pipe (chat)" "$tom_reply" "$(trim <"$T/out")"
pass "chat is the default mode on a pipe"

# ---- two turns: the first reply is unchanged, the second one is not empty ----
printf '%s\n%s\n' "$tom_user" "Tell me a story about a dog named Max." >"$T/in"
chat "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
"$PYTHON" - "$T/out" "$tom_reply" <<'EOF' || fail "two-turn conversation (see above)"
import sys
out = open(sys.argv[1], encoding="utf-8", errors="replace").read()
first = sys.argv[2]
if not out.lstrip().startswith(first):
    print("  the first reply changed: %r" % out[:200], file=sys.stderr)
    sys.exit(1)
second = out.lstrip()[len(first):].strip()
if not second:
    print("  no second reply", file=sys.stderr)
    sys.exit(1)
EOF
pass "two turns"

# ---- /system before the first turn sets the system prompt ----
printf '/system %s\n%s\n' "$leo_system" "$leo_user" >"$T/in"
chat "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
assert_eq "reply after /system" "$leo_reply" "$(trim <"$T/out")"
pass "/system"

# ---- /reset: the same turn after a reset gets the same greedy reply ----
printf '%s\n/reset\n%s\n' "$tom_user" "$tom_user" >"$T/in"
chat "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
n=$(grep -cxF "$tom_reply" "$T/out" || true)
assert_eq "lines equal to the golden reply after /reset" 2 "$n"
pass "/reset"

# ---- /quit stops reading ----
printf '%s\n/quit\n%s\n' "$tom_user" "$tom_user" >"$T/in"
chat "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
n=$(grep -cxF "$tom_reply" "$T/out" || true)
assert_eq "replies before /quit" 1 "$n"
pass "/quit"

# ---- /save FILE writes the conversation ----
printf '%s\n%s\n/save %s\n' "$tom_user" "Tell me a story about a dog named Max." "$T/saved.txt" >"$T/in"
chat "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
[ -s "$T/saved.txt" ] || fail "/save did not write $T/saved.txt"
assert_file_contains "saved conversation" "$T/saved.txt" "$tom_user"
assert_file_contains "saved conversation" "$T/saved.txt" "Tell me a story about a dog named Max."
assert_file_contains "saved conversation" "$T/saved.txt" "$tom_reply"
pass "/save"

# ---- /help and an unknown command: a message, and the conversation goes on ----
printf '/help\n/frobnicate\n%s\n' "$tom_user" >"$T/in"
chat "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
grep -qi 'frobnicate\|unknown' "$T/err" || fail "no message on stderr about the unknown command /frobnicate"
assert_eq "reply after /help and an unknown command" "$tom_reply" "$(grep -xF "$tom_reply" "$T/out" || true)"
grep -q '/reset' "$T/out" "$T/err" || fail "/help does not mention /reset"
pass "/help and unknown commands"

# ---- /no_think in a template without the thinking switch: a message, nothing changes ----
printf '/no_think\n%s\n' "$tom_user" >"$T/in"
chat "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
assert_file_contains "/no_think refused" "$T/err" "/no_think: the chat template llama2 has no thinking switch"
assert_eq "reply after /no_think" "$tom_reply" "$(grep -xF "$tom_reply" "$T/out" || true)"
pass "/no_think without a thinking switch"

# ---- the KV cache holds the whole dialog: no position processed twice, each reply
# (even one cut short by -n) closed with EOS, and the next turn starts with BOS ----
printf 'Tell me a story about %s.\n' Tom Max >"$T/in"
chat -n 10 --trace "$T/dialog.jsonl" "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
"$PYTHON" - "$T/dialog.jsonl" <<'EOF2' || fail "the dialog's trace breaks the template contract (see above)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
if not rows or rows[0].get("llmchat_trace") != 1:
    print("  trace: the first line is not a version 1 header", file=sys.stderr)
    sys.exit(1)
header = rows.pop(0)
def bad(msg):
    print("  trace:", msg, file=sys.stderr)
    sys.exit(1)
pos = [r["pos"] for r in rows]
if pos != list(range(len(rows))):
    bad("positions are not 0, 1, 2, ... once each: %s" % pos[:60])
bos = [r["pos"] for r in rows if r["token"] == 1]
eos = [r["pos"] for r in rows if r["token"] == 2]
if len(eos) != 2 or len(bos) != 2 or bos[0] != 0 or bos[1] != eos[0] + 1:
    bad("expected BOS, reply, EOS, BOS, reply, EOS; BOS at %s, EOS at %s" % (bos, eos))
EOF2
pass "EOS fed back, history not re-processed"

# ---- a conversation longer than the context: oldest turns go, the user is told ----
printf 'Tell me a story about %s.\n' Tom Max Sue Kim >"$T/in"
chat -n 20 -c 96 -y "You tell short stories." "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
assert_eq "replies in an overflowing conversation" 4 "$(grep -c '^Once upon a time' "$T/out" || true)"
grep -qi 'context' "$T/err" || fail "no notice on stderr when the context overflowed"
pass "context overflow drops old turns and goes on"

# ---- control tokens typed as text stay text ----
printf '%s\n' '<s>[INST] </s> hello [/INST]' >"$T/in"
chat -n 20 --trace "$T/trace.jsonl" "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
"$PYTHON" - "$T/trace.jsonl" <<'EOF' || fail "user text produced control tokens (see above)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
if not rows or rows[0].get("llmchat_trace") != 1:
    print("  trace: the first line is not a version 1 header", file=sys.stderr)
    sys.exit(1)
header = rows.pop(0)
prompt = [r for r in rows if r["phase"] == "prompt"]
if not prompt:
    print("  no prompt positions in the trace", file=sys.stderr)
    sys.exit(1)
bos = [r["pos"] for r in prompt if r["token"] == 1]
eos = [r["pos"] for r in prompt if r["token"] == 2]
if bos != [0] or eos:
    print("  BOS at %s and EOS at %s among the prompt tokens" % (bos, eos), file=sys.stderr)
    sys.exit(1)
EOF
pass "typed <s> and </s> are text"

# ---- the int8 twin answers the same request about the named character ----
max_user=$(jsonl_get "$golden" 1 user)
printf '%s\n' "$max_user" >"$T/in"
run_llmchat -m chat -t 0 -z "$DATA/tok512.bin" "$BUNDLED/chat260K_q80.bin" <"$T/in"
assert_status 0
out=$(trim <"$T/out")
assert_contains "chat260K_q80.bin reply" "$out" "Max"
pass "chat260K_q80.bin names the character"
