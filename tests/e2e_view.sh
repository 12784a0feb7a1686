#!/bin/sh
# e2e_view.sh — llmchat --view TRACE driven in tmux: a chat on the bundled chat260K is
# traced with attention and the logit lens, the trace's model path is pointed at a
# file that does not exist (a trace from another machine), and the viewer shows, with
# no model, the dialog, the recorded tokens in Tokens, the heatmap and the lens in
# Attention, all read from the trace (the expected pieces and positions are computed
# from the trace file here, not taken from llmchat). Keys that would generate or steer
# say read-only. A trace cut short and one with a line of garbage open with each bad
# line reported by number; a missing file and a file that is not a trace exit 1; a
# steered run's positions name the knocked-out head they ran with. Nothing asserts
# timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

# ---- a traced chat, then the trace alone ----
run_llmchat -m chat --no-config -t 0 -i "Tell me a story about a dog named Lily." \
    --trace "$T/run.jsonl" --trace-attn --trace-lens "$BUNDLED/chat260K.bin" </dev/null
assert_status 0
"$PYTHON" - "$T/run.jsonl" "$T/away.jsonl" "$T/facts" <<'PY' || fail "the trace is not as expected"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
head = json.loads(lines[0])
head["model"]["path"] = "/nowhere/else/chat260K.bin"   # another machine's model file
with open(sys.argv[2], "w", encoding="utf-8") as out:
    out.write(json.dumps(head) + "\n")
    for l in lines[1:]:
        out.write(l + "\n")
vocab = head["vocab"]
recs = [json.loads(l) for l in lines[1:]]
assert [r["pos"] for r in recs] == list(range(len(recs)))  # no rewinds in this run
named = next(r for r in recs if r["phase"] == "gen" and r["piece"] == " named")
lens = named["lens"]
reply = "".join(vocab[r["token"]] for r in recs if r["phase"] == "gen")
def shown(piece):
    return piece.replace(" ", "\u2423")
with open(sys.argv[3], "w", encoding="utf-8") as f:
    f.write("last=%d\n" % recs[-1]["pos"])
    f.write("last_id=%d\n" % recs[-1]["token"])
    f.write("named=%d\n" % named["pos"])
    f.write("named_id=%d\n" % named["token"])
    f.write("name='%s'\n" % shown(vocab[named["next"]]))
    f.write("lens_top='%s'\n" % shown(vocab[lens[-1]["top"][0][0]]))
    f.write("lens_first='%s'\n" % shown(vocab[lens[0]["top"][0][0]]))
    f.write("reply_start='%s'\n" % " ".join(reply.split()[:4]))
PY
# shellcheck disable=SC1091
. "$T/facts"
[ "$lens_top" = "$name" ] || fail "the trace's last lens layer ($lens_top) is not the chosen $name"

start -- --no-config --view "$T/away.jsonl"
wait_for "viewing away.jsonl (read-only) | chat260K.bin q8_0 | llama2 | 5 layers x 8 heads"
wait_for "attention | lens"
wait_for "Assistant: $reply_start"
wait_for "You: Tell me a story about a dog named Lily."
screen | grep -q "You: \[INST\]" && show_screen_and_fail "the message is shown with the template's markers"
screen | grep -q 'problem' && show_screen_and_fail "a whole trace reported problems"
pass "the viewer opens a trace whose model is elsewhere: dialog and status line from the trace"

keys Tab Tab
wait_for "pos $last (newest)  id $last_id"
i=$last
while [ "$i" -gt "$named" ]; do
    keys Left
    i=$((i - 1))
done
wait_for "pos $named of 0-$last  id $named_id  ␣named  gen"
wait_for "next (pos $((named + 1))): $name"
pass "Tokens browses the recorded positions and their candidates"

keys Tab
wait_for "layer 1/5  head 1/8"
wait_for "pos $named → "
keys v
wait_for "logit lens  pos $named ␣named → $name"
screen | grep -q "│5   $lens_top [0-9]" || show_screen_and_fail "the last layer's lens is not the trace's $lens_top"
screen | grep -q "│1   $lens_first [0-9]" || show_screen_and_fail "the first layer's lens is not the trace's $lens_first"
keys v
wait_for "logit lens grid"
keys v
wait_for "heads of layer 1/5 at pos $named"
pass "Attention shows the recorded heatmap, the logit lens, its grid and the heads"

keys p
wait_for "read-only: viewing a trace"
keys Left
wait_gone "read-only: viewing a trace"
keys 1
wait_for "read-only: viewing a trace"
keys Tab
type_text "hello"
keys Enter
wait_for "read-only: viewing a trace"
type_text "/set temperature 0.5"
keys Enter
wait_for "read-only: viewing a trace"
pass "keys and lines that would generate or steer say read-only"
keys C-d
wait_exit
assert_status 0

# ---- a trace cut short, and one with a line of garbage ----
size=$(wc -c <"$T/run.jsonl")
head -c $((size * 2 / 3)) "$T/run.jsonl" >"$T/cut.jsonl"
cut_line=$(($(wc -l <"$T/cut.jsonl") + 1))
start -- --no-config --view "$T/cut.jsonl"
wait_for "line $cut_line: cut short"
wait_for "viewing cut.jsonl (read-only) | 1 problem | chat260K.bin"
keys Tab Tab
wait_for "(newest)"
keys q
wait_exit
assert_status 0
{
    head -n 3 "$T/run.jsonl"
    printf '{"pos": 2, "token":\n'
    printf 'this is not json\n'
    tail -n +4 "$T/run.jsonl"
} >"$T/bad.jsonl"
start -- --no-config --view "$T/bad.jsonl"
wait_for "line 4: "
wait_for "line 5: not JSON"
wait_for "pos $last (newest)"
keys C-d
wait_exit
assert_status 0
pass "truncated and malformed lines are reported by line number and skipped"

# ---- a trace of a steered run: Tokens names what each position ran with ----
run_llmchat -m generate --no-config -t 0 -n 8 -i "Once upon a time" --knock-out 1:1 \
    --trace "$T/steered.jsonl" "$BUNDLED/chat260K.bin" </dev/null
assert_status 0
start -- --no-config --view "$T/steered.jsonl"
wait_for "viewing steered.jsonl"
keys Tab Tab
wait_for "heads out L2H2"
keys q
wait_exit
assert_status 0
pass "--view of a steered run: Tokens names the knocked-out head its positions ran with"

# ---- not a trace ----
run_llmchat --no-config --view "$T/missing.jsonl"
assert_status 1
assert_error_message
assert_file_contains "a missing trace" "$T/err" "missing.jsonl"
printf 'hello\nworld\n' >"$T/text.txt"
run_llmchat --no-config --view "$T/text.txt"
assert_status 1
assert_file_contains "a text file" "$T/err" "is not an llmchat trace"
run_llmchat --no-config --view "$T/run.jsonl" "$BUNDLED/chat260K.bin"
assert_status 2
assert_file_contains "--view with a model" "$T/err" "--view needs no model"
pass "a missing file or one that is not a trace: a message and exit 1"
