#!/bin/sh
# e2e_tui_typeahead.sh — keys pressed faster than the TUI acts on them (issue 31), driven
# in tmux as in e2e_tui.sh. Every key that acts acts once, in order: five n sent in one
# send-keys (no delay between them) to a paused reply add five tokens, from a pane and
# from the empty input line; two messages typed while a reply runs are both sent, in
# turn. Keys that did nothing now act or say why: Backspace on the empty input line takes
# a token back from a paused reply (and says why not when the reply runs or there is
# none); r with the newest position of a paused reply selected says there is nothing to
# rewind. Nothing asserts timing: every wait polls the screen up to a deadline.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin

status() {
    screen | tail -n 2 | head -n 1
}

# wait_pos N WHAT: until Tokens shows position N as the newest.
wait_pos() {
    deadline=$(($(now) + WAIT))
    while [ "$(newest_pos)" != "$1" ]; do
        [ "$(now)" -lt "$deadline" ] ||
            show_screen_and_fail "$2: the newest position is $(newest_pos), not $1"
        sleep 0.1
    done
}

start -- -m tui -s 7 -z "$TOK" "$MODEL"
wait_for "idle |"

# ---- five n at once, from the empty input line: five tokens ----
type_text "/step Tell me a story about Tim."
keys Enter
wait_for "paused |"
wait_for "(newest)"
p0=$(newest_pos)
keys n n n n n
wait_pos $((p0 + 5)) "five n sent at once from the input line"
pass "five n sent at once from the empty input line add five tokens ($p0 -> $((p0 + 5)))"

# ---- and from a pane ----
keys Tab Tab # Conversation, Tokens
wait_for "(newest)"
keys n n n n n
wait_pos $((p0 + 10)) "five n sent at once in Tokens"
pass "five n sent at once in Tokens add five tokens"

# ---- r at the newest position of the paused reply: nothing to rewind, it says so ----
keys r
wait_for "r rewinds the reply to the selected position: it is the newest already"
assert_eq "r at the newest position" "$(newest_pos)" $((p0 + 10))
pass "r with the newest position of a paused reply selected says why it does nothing"

# ---- Backspace on the empty input line of a paused reply takes a token back ----
keys Tab Tab # Attention, the input line
keys BSpace
wait_pos $((p0 + 9)) "Backspace on the empty input line while paused"
keys BSpace BSpace
wait_pos $((p0 + 7)) "two Backspaces at once on the empty input line"
type_text "ab"
keys BSpace BSpace BSpace # two letters, then one token
wait_pos $((p0 + 6)) "Backspace past a typed word"
case $(screen | tail -n 1) in *ab* | *a*) show_screen_and_fail "the typed letters were not deleted" ;; esac
pass "Backspace on the empty input line takes tokens back from a paused reply, after deleting what was typed"

# ---- the reply runs: Backspace on the empty line says why it does nothing ----
keys p
wait_for " idle |"
keys BSpace
wait_for "the line is empty; Backspace takes a reply token back while a reply is paused"
pass "Backspace on the empty input line with no reply says why it does nothing"

# ---- two messages typed while a reply runs: both are sent, in order ----
keys C-d
wait_exit
start -- -m tui -s 7 -n 6 --slow-motion 300 -z "$TOK" "$MODEL"
wait_for "idle |"
type_text "Tell me a story."
keys Enter
wait_for "generating |"
keys -l "One."
keys Enter
keys -l "Two."
keys Enter
wait_for "You: One."
wait_for "You: Two."
wait_for " idle |"
one=$(screen | grep -n "You: One." | cut -d: -f1)
two=$(screen | grep -n "You: Two." | cut -d: -f1)
[ "$one" -lt "$two" ] || show_screen_and_fail "the queued messages were sent out of order"
pass "two messages typed while a reply runs are both sent, in the order typed"
keys C-d
wait_exit
assert_status 0
