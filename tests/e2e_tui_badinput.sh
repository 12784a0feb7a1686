#!/bin/sh
# e2e_tui_badinput.sh — the TUI (in tmux) against hostile conditions, each a check
# that could fail: TERM unset, empty or dumb (-m tui explains and exits 1; without -m
# the plain chat starts instead); a 10x5 terminal; a storm of 100 resizes in 2 s
# during a reply (the reply ends, the screen redraws whole); escape sequences,
# control and non-UTF-8 bytes in a message (shown as symbols, never obeyed); a 256 KB
# paste (whole, byte for byte) and a prompt longer than the context (refused in Conversation, the chat goes
# on); an input history that cannot be written (said at exit, in the TUI and in the
# chat on a terminal).
. "$LLMCHAT_SRCDIR/tests/lib.sh"
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin

# run_env ENV-ARGS... -- LLMCHAT-ARGS...: llmchat in a fresh 120x40 session "t" under
# `env ENV-ARGS` (which set TERM, or unset it with -u TERM); stderr to $T/err, exit
# status to $T/exit.
run_env() {
    envs=
    while [ "$1" != "--" ]; do
        envs="$envs $(quote "$1")"
        shift
    done
    shift
    rm -f "$T/exit"
    cmd="cd $(quote "$T") && env$envs LANG=C.UTF-8 LC_ALL=C.UTF-8 XDG_STATE_HOME=$(quote "$STATE")"
    cmd="$cmd $(quote "$LLMCHAT_BIN")"
    for a in "$@"; do
        cmd="$cmd $(quote "$a")"
    done
    last_cmd="llmchat $* (in tmux, env$envs)"
    printf '%s 2>%s; echo $? >%s\n' "$cmd" "$(quote "$T/err")" "$(quote "$T/exit")" >"$T/run.sh"
    $TM kill-server >/dev/null 2>&1
    tries=0
    until $TM new-session -d -s t -x 120 -y 40 "sh $(quote "$T/run.sh")" 2>/dev/null; do
        tries=$((tries + 1))
        [ $tries -lt 50 ] || hard_error "tmux cannot start a session"
        sleep 0.1
    done
}

# chat_one_turn_and_quit: in the plain chat just started on the terminal, one message
# gets a reply and /quit ends it with status 0.
chat_one_turn_and_quit() {
    wait_err "chatting with chat260K.bin"
    type_text "Tell me a story about Tom."
    keys Enter
    wait_for "Once upon"
    type_text "/quit"
    keys Enter
    wait_exit
    assert_status 0
}

# tui_one_turn_and_quit: in the TUI, idle, one message gets a reply and /quit ends it
# with status 0.
tui_one_turn_and_quit() {
    type_text "Tell me a story about Tom."
    keys Enter
    wait_for "Assistant: Once"
    wait_for "idle |"
    type_text "/quit"
    keys Enter
    wait_exit
    assert_status 0
}

# gone: until the last session's tmux server has exited (start() makes a new one).
gone() {
    deadline=$(($(now) + WAIT))
    while $TM has-session 2>/dev/null; do
        [ "$(now)" -lt "$deadline" ] || fail "the tmux session did not end"
        sleep 0.1
    done
}

# wait_err TEXT: until llmchat's stderr holds TEXT.
wait_err() {
    deadline=$(($(now) + WAIT))
    until grep -qF -- "$1" "$T/err" 2>/dev/null; do
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "waited ${WAIT}s for [$1] on stderr"
        sleep 0.1
    done
}

# ---- TERM ----
for spec in "-u TERM" "TERM=" "TERM=dumb"; do
    # shellcheck disable=SC2086 # spec is two words or one
    run_env $spec -- -m tui -z "$TOK" "$MODEL"
    wait_exit
    assert_eq "-m tui with $spec: exit status" 1 "$rc"
    assert_file_contains "-m tui with $spec" "$T/err" "cannot start the terminal UI"
done
assert_file_contains "-m tui with TERM=dumb" "$T/err" "cannot place the cursor"
run_env TERM=dumb -- -t 0 -n 8 -z "$TOK" "$MODEL"
chat_one_turn_and_quit
pass "TERM unset, empty or dumb: -m tui says why and exits 1; without -m the plain chat starts"

# ---- a 10x5 terminal ----
gone
start -- -m tui -t 0 -n 20 -i "Tell me a story about Tom." -z "$TOK" "$MODEL"
$TM resize-window -t t -x 10 -y 5
wait_for "idle"
type_text "/quit"
keys Enter
wait_exit
assert_status 0
pass "a 10x5 terminal: the TUI runs a reply and quits cleanly"

# ---- a resize storm during a reply ----
# Slow motion (150 ms a token, 40 tokens at most: resizes do not hurry it) keeps the
# reply running while the first ten resizes land; the rest of the storm may outlast it.
gone
start LLMCHAT_STEP_DELAY_MS=150 -- -m tui -t 0 -n 40 -i "Tell me a story about a dog named Max." -z "$TOK" "$MODEL"
wait_for "generating"
i=0
while [ $i -lt 100 ]; do
    $TM resize-window -t t -x $((10 + (i * 37) % 150)) -y $((5 + (i * 11) % 50))
    sleep 0.02
    i=$((i + 1))
    if [ $i -eq 10 ]; then
        wait_for "generating" # the redraw after the last resize, mid-reply
    fi
done
$TM resize-window -t t -x 120 -y 40
wait_for "idle |"
wait_for "┌ Conversation"
wait_for "You: Tell me a story about a dog named Max."
type_text "/quit"
keys Enter
wait_exit
assert_status 0
pass "100 resizes in 2 s during a reply: the reply ends, the screen is whole again"

# ---- escapes, control and non-UTF-8 bytes in a message ----
odd=$(printf 'red \033[31mRED\033[0m bell \007 bad \377\376 end')
gone
start -- -m tui -t 0 -n 8 -i "$odd" -z "$TOK" "$MODEL"
wait_for "idle |"
wait_for "You: red ␛[31mRED␛[0m bell ␇ bad"
wait_for " end"
pass "escape sequences, control and invalid bytes in a message are shown as symbols"

# ---- a 256 KB paste, a prompt longer than the context ----
# (past any fixed buffer of the line editors: libedit's 1,024-byte one once corrupted
# the heap, docs/testing.md). The paste is one line with characters of two and three
# bytes: it must reach the line byte for byte, whatever the reads cut, which the input
# history written at exit shows.
"$PYTHON" -c 'import sys; sys.stdout.write("The dög ran to the park — and played. " * 6800)' >"$T/paste"
rm -f "$STATE/llmchat/history"
$TM load-buffer "$T/paste"
$TM paste-buffer -p -t t
wait_for "and played. The dög ran to the park — and played."
keys Enter
wait_for "[could not start the reply:"
wait_for "but the context holds 512"
tui_one_turn_and_quit
history_text "$STATE/llmchat/history" >"$T/history"
"$PYTHON" - "$T/paste" "$T/history" <<'PY' || fail "the 256 KB paste is not in the input history byte for byte"
import sys
paste = open(sys.argv[1], "rb").read()
lines = open(sys.argv[2], "rb").read().split(b"\n")
sys.exit(0 if paste in lines else 1)
PY
long=$("$PYTHON" -c 'print(" ".join(["Once upon a time there was a little girl named Lily."] * 20))')
gone
start -- -m tui -c 64 -i "$long" -z "$TOK" "$MODEL"
wait_for "but the context holds 64"
type_text "/quit"
keys Enter
wait_exit
assert_status 0
pass "a 256 KB paste reaches the line whole; it and a prompt longer than the context are refused in Conversation; the chat goes on"

# ---- an input history that cannot be written ----
rm -f "$STATE/llmchat/history" "$STATE/llmchat/chat_history"
mkdir -p "$STATE/llmchat/history" "$STATE/llmchat/chat_history" # directories, not files
gone
start -- -m tui -t 0 -n 8 -z "$TOK" "$MODEL"
wait_for "idle |"
tui_one_turn_and_quit
assert_file_contains "tui: unwritable history" "$T/err" "cannot write the input history $STATE/llmchat/history"
gone
start -- -m chat -t 0 -n 8 -z "$TOK" "$MODEL"
chat_one_turn_and_quit
assert_file_contains "chat: unwritable history" "$T/err" "cannot write the input history $STATE/llmchat/chat_history"
pass "an input history that cannot be written: said at exit, the chat unharmed"
