#!/bin/sh
# e2e_tui_prompt.sh — a long prompt being read (issue 47), driven in tmux: the status
# line says how far it is ("prompt N/M tokens") between the chunks the model reads it
# in (slow motion waits there too, which is what lets the test see it on this tiny
# model), Esc stops it (the message is not sent, and the chat goes on), and read to
# the end it is answered. Nothing asserts timing: every wait polls the screen up to a
# deadline.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin

# wait_progress: until the status line says a prompt is read past its first chunk.
wait_progress() {
    deadline=$(($(now) + WAIT))
    until screen | tail -n 2 | head -n 1 | grep -Eq 'prompt [1-9][0-9]*/[0-9]+ tokens'; do
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "the status line does not say how far the prompt is"
        sleep 0.1
    done
}

# A message of more tokens than the model reads at a time, within its 512 positions.
long=$("$PYTHON" -c 'print("Lily and Tom went to the park to play with a ball. " * 20)')

start -- -m tui -s 7 --slow-motion 1000 -z "$TOK" "$MODEL"
wait_for "idle |"
type_text "$long"
keys Enter
wait_progress
keys Escape
wait_for "tokens of the prompt: the message"
wait_for "stopped |"
case $(screen) in *"Assistant:"*) show_screen_and_fail "a stopped prompt got a reply" ;; esac
pass "the status line shows how far a long prompt is read; Esc stops it"

type_text "/set slow-motion 0"
keys Enter
type_text "Tell me a story."
keys Enter
wait_for "Assistant: Once"
wait_for " idle |"
pass "after a stopped prompt the chat goes on"

type_text "/set slow-motion 1000"
keys Enter
type_text "$long"
keys Enter
wait_progress
type_text "/set slow-motion 0" # typed while the prompt is read: kept for after it
keys Enter
wait_for " idle |"
screen | "$PYTHON" -c '
import sys
s = sys.stdin.read()
sys.exit(0 if s.rfind("Assistant: ") > s.rfind("You: Lily") >= 0 else 1)' ||
    show_screen_and_fail "the long prompt read to its end got no reply"
wait_gone "slow 1000 ms"
pass "a long prompt read to its end is answered; keys typed meanwhile act after it"
type_text "/quit"
keys Enter
wait_exit
assert_status 0
