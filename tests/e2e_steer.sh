#!/bin/sh
# e2e_steer.sh — steering a reply by hand in the TUI, as a person does it (tmux, as in
# e2e_tui.sh), on chat260K with greedy sampling. Checks: Backspace takes the closing
# EOS and a token back and pauses the reply; resuming redoes the same reply (compared
# through /save); a digit at a selected position rewinds there and forces the model's
# second candidate (Tokens shows it as forced, rank 2) and the reply changes; r
# rewinds to the selection; /force puts typed text into a reply that had ended; taking
# back every token ends with a message, as do /force without text and steering
# after /reset; pausing ends with the reply, and a message sent with /step waits at
# its first token, which a digit chooses; quitting works throughout. Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

# save NAME: writes the dialog to $T/NAME with /save from the input line.
save() {
    type_text "/save $T/$1"
    keys Enter
    wait_for_wrapped "[saved to $T/$1]"
}

# The focus starts on the input line; Tab Tab reaches Tokens, Tab Tab from there
# comes back.
start -- -m tui -t 0 -s 1 -i "Tell me a story about Tom." -z "$DATA/tok512.bin" "$BUNDLED/chat260K.bin"
wait_for "Assistant: Once"
wait_for "idle |"
save first.txt
eos=$(newest_pos)
[ -n "$eos" ] || show_screen_and_fail "no newest position in the Tokens pane"
keys Tab Tab
wait_for "</s>  gen"
keys BSpace
wait_for "paused |"
wait_for "pos $((eos - 2)) (newest)"
pass "Backspace takes back the closing EOS and one token, and pauses the reply"

keys p
wait_for "idle |"
wait_for "pos $eos (newest)"
keys Tab Tab
save again.txt
cmp -s "$T/first.txt" "$T/again.txt" || fail "the reply after a rewind and resume differs: $(cat "$T/again.txt")"
pass "resuming a rewound greedy reply redoes the same reply"

keys Tab Tab
keys Left Left Left Left Left Left Left Left
wait_for "pos $((eos - 8)) of 0-$eos"
keys 2
wait_for "pos $((eos - 7)) (newest)"
wait_for "forced"
wait_for "(rank 2)"
wait_for "paused |"
keys p
wait_for "idle |"
keys Tab Tab
save branched.txt
if cmp -s "$T/first.txt" "$T/branched.txt"; then
    fail "choosing the second candidate did not change the reply: $(cat "$T/branched.txt")"
fi
pass "a digit at a selected position forces that candidate there; the reply goes on from it"

keys Tab Tab
wait_for "(newest)"
top=$(newest_pos)
keys Left Left Left
wait_for "pos $((top - 3)) of 0-" # the keys take effect before the screen is read
p_sel=$(screen | sed -n 's/.*pos \([0-9]*\) of 0-.*/\1/p' | head -n 1)
[ -n "$p_sel" ] || show_screen_and_fail "no selected position in the Tokens pane"
keys r
wait_for "paused |"
wait_for "pos $p_sel (newest)"
pass "r rewinds the reply to the selected position"

keys Tab Tab
type_text "/force and a big red ball"
keys Enter
wait_for "big red ball"
save forced.txt
assert_file_contains "the saved dialog" "$T/forced.txt" "and a big red ball"
pass "/force puts typed text into the reply"

keys Tab Tab
n=0
while [ $n -lt 30 ]; do
    keys BSpace BSpace BSpace BSpace BSpace BSpace BSpace BSpace BSpace BSpace
    n=$((n + 1))
done
wait_for "[the reply is empty: nothing to take back]"
keys Tab Tab
save empty.txt
assert_file_contains "the saved dialog (an empty reply)" "$T/empty.txt" '"reply": ""'
type_text "/force"
keys Enter
wait_for "[/force needs text"
type_text "/reset"
keys Enter
wait_for "[the conversation was reset]"
keys Tab Tab BSpace
wait_for "[there is no reply to take tokens back from]"
pass "steering past the reply's start, without text or without a reply explains itself"

# steering paused replies, but that ends with the reply (the status line says idle,
# not paused); /step sends a message whose reply waits at its first token, which a
# digit chooses
wait_for "idle |"
screen | grep -q "idle (paused)" && show_screen_and_fail "pausing outlasted the reply"
keys Tab Tab
type_text "/step Tell me a story about Max."
keys Enter
wait_for "[paused: n generates a token, a digit chooses one, p resumes]"
first=$(newest_pos)
keys Tab Tab 3
wait_for "pos $((first + 1)) (newest)"
wait_for "forced"
wait_for "(rank 3)"
pass "pausing ends with the reply; /step's reply waits and a digit chooses its first token"

keys q
wait_for "Quit anyway? (y/n)"
keys y
wait_exit
assert_status 0
pass "q quits with status 0"
