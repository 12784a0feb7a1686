#!/bin/sh
# e2e_branches.sh — a reply's branches in the TUI, as a person uses them (tmux, as in
# e2e_steer.sh), on chat260K with greedy sampling. Checks: choosing another candidate
# at a selected position keeps the old reply as branch 1 and labels the reply
# "branch 2/2"; '<' switches back to branch 1 (the label says so, and a /save of it
# is byte for byte the /save made before the branch existed); 'B' lists the branch
# that parts at the selection; /save --all writes both branches (version 2), and
# /load of that file brings back "branch 1/2", '>' then the other branch; in --view
# the branch keys say read-only; a branch switched back to after /knock runs as it ran
# (without the knock-out, which stays in force) and records it, so its trace replays.
# Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

# save ARGS NAME: writes the dialog to $T/NAME with /save from the input line.
save() {
    type_text "/save $1 $T/$2"
    keys Enter
    wait_for_wrapped "$T/$2]"
}

# The focus starts on the input line; Tab Tab reaches Tokens, Tab Tab from there
# comes back.
start -- -m tui -t 0 -s 1 --trace "$T/run.jsonl" -i "Tell me a story about a dog named Max." -z "$DATA/tok512.bin" "$BUNDLED/chat260K.bin"
wait_for "Assistant: Once"
wait_for "idle |"
save "" first.json
eos=$(newest_pos)
[ -n "$eos" ] || show_screen_and_fail "no newest position in the Tokens pane"

keys Tab Tab
keys Left Left Left Left Left Left Left Left Left Left
wait_for "pos $((eos - 10)) of 0-$eos"
keys 2
wait_for "forced"
wait_for "Assistant [branch 2/2]: "
keys p
wait_for "idle |"
pass "choosing another candidate keeps the old reply as a branch: the reply is branch 2/2"

keys '<'
wait_for "Assistant [branch 1/2]: "
wait_for "[branch 1/2: parts from branch 2 at position $((eos - 9))]"
wait_for "idle |"
keys Tab Tab
save "" back.json
cmp -s "$T/first.json" "$T/back.json" ||
    fail "switching back did not restore the first reply: $(diff "$T/first.json" "$T/back.json")"
pass "< switches back to branch 1: the same tokens and text as before the branch"

keys Tab Tab B
wait_for "[branches at position $((eos - 9)): 1 on screen, 2 \""
pass "B lists the branch that parts at the selection"

keys Tab Tab
save --all all.json
assert_file_contains "the saved tree" "$T/all.json" '"llmchat_chat": 2'
assert_file_contains "the saved tree" "$T/all.json" '"branch": 1, "branches": ['
grep -q '"llmchat_chat": 1' "$T/back.json" || fail "a /save without branches is not version 1"
pass "/save --all writes both branches (version 2); /save the branch on screen (version 1)"

type_text "/reset"
keys Enter
wait_for "[the conversation was reset]"
type_text "/load $T/all.json"
keys Enter
wait_for_wrapped "[loaded $T/all.json (1 turn)]"
wait_for "Assistant [branch 1/2]: "
keys Tab Tab '>'
wait_for "Assistant [branch 2/2]: "
pass "/load brings the branches back; > switches to the other one"

keys q
wait_exit

# a trace has no branches to switch: the keys say read-only
start -- --view "$T/run.jsonl"
wait_for "(read-only)"
keys Tab Tab '<'
wait_for "read-only: viewing a trace"
keys Left
wait_gone "read-only: viewing a trace"
keys B
wait_for "read-only: viewing a trace"
keys q
wait_exit
pass "--view: < and B say read-only"

# a branch switched back to after an intervention changed runs as it first ran: its
# records are its own again, the trace says what they ran with (no head out), so it
# replays; the knock-out stays in force (Backspace takes reply tokens back and pauses;
# the knock-out comes in; p goes on as branch 2; < is branch 1)
start -- -m tui -t 0.9 -s 3 -n 24 --trace "$T/br.jsonl" -i "Hello" "$DATA/stories260K.gguf"
wait_for "idle |"
keys Tab BSpace BSpace BSpace BSpace
wait_for "paused"
keys Tab Tab Tab # the input line
type_text "/knock head 1:2"
keys Enter
wait_for "heads out L2H3"
keys Tab p
wait_for "Assistant [branch 2/2]: "
wait_for "idle |"
keys '<'
wait_for "Assistant [branch 1/2]: "
wait_for "idle |"
screen | grep -q "heads out L2H3" || show_screen_and_fail "the knock-out is no longer in force"
keys q
wait_exit
assert_eq "the heads out of the trace's last steer (branch 1, as it ran)" "[]" \
    "$("$PYTHON" -c 'import json, sys
print([r["steer"] for r in map(json.loads, open(sys.argv[1])) if "steer" in r][-1]["heads_out"])' "$T/br.jsonl")"
run_llmchat --replay "$T/br.jsonl"
assert_status 0
assert_file_contains "the replay of a branch switched back under a knock-out" "$T/out" "reproduced"
pass "a branch switched back to after /knock runs as it ran, the knock-out in force after; its trace replays"
