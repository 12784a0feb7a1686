#!/bin/sh
# e2e_debugger_tui.sh — the TUI's debugger views driven in tmux as a person does it,
# on the bundled chat260K: Tokens shows, after a sampled decision, each candidate's
# final probability or the stage that removed it; /set changes the sampler from the
# next token (the status line shows it) and refuses bad names and values.
# Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

model=$BUNDLED/chat260K.bin

# ---- what the sampler did to each candidate ----
start -- -m tui -s 3 -k 5 -t 1.5 -i "Tell me a story about a dog named Lily." "$model"
wait_for "idle |"
wait_for "T 1.5 k 5 p 0.9"
keys Tab Tab
wait_for "(newest)"
keys Left
wait_for "sampler: T 1.5 k 5 p 0.9"
wait_for " final"
screen | grep -q ' top-k│' || show_screen_and_fail "no candidate is marked as removed by top-k"
screen | grep -q '^.*│> 1 .*%│' || show_screen_and_fail "the chosen candidate shows no final probability"
pass "Tokens shows each candidate's final probability or the stage that removed it"

# ---- /set ----
keys Tab Tab
type_text "/set temperature 0.3"
keys Enter
wait_for "[from the next token: temperature 0.3  top-k 5"
wait_for "T 0.3 k 5 p 0.9"
type_text "/set top-p 7"
keys Enter
wait_for "[/set: top-p must be in (0, 1], got '7'"
type_text "/set bogus 1"
keys Enter
wait_for "[/set: unknown setting 'bogus'"
type_text "/set"
keys Enter
wait_for "[temperature 0.3  top-k 5  top-p 0.9  min-p 0"
screen | grep -q "T 0.3 k 5 p 0.9" || show_screen_and_fail "a refused /set changed the status line"
pass "/set changes the sampler (status line), refuses bad names and values, shows all"

keys C-d
wait_exit
assert_status 0
