#!/bin/sh
# e2e_tui_terminal.sh — what the terminal sends, as the TUI reads it (issue 47), driven
# in tmux: an arrow key whose bytes come in two writes (ESC, then "[D" 0.1 s later:
# longer than curses waits for the rest of a sequence, shorter than the TUI's own
# wait) is the arrow key, on the input line and while a reply runs (it moves the
# selection and does not stop the reply), and a lone Esc still stops a reply; a
# bracketed paste of three lines is one message with its newlines (tmux paste-buffer
# -p, which brackets a paste only for a program that asked for it), pasted into the
# input line even while a pane has the focus, and one history entry in the next run;
# bracketed paste is off again after
# the TUI quits and after it crashes (what a shell then reads has no markers).
# Nothing asserts timing: every wait polls the screen up to a deadline.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin

# input_line: the screen's last line (the input line).
input_line() {
    screen | tail -n 1
}

# split_left: the Left arrow in two writes, ESC then "[D".
split_left() {
    keys Escape
    sleep 0.1
    type_text "[D"
}

# ---- an arrow key in pieces, on the input line ----
start -- -m tui -s 7 -z "$TOK" "$MODEL"
wait_for "idle |"
type_text "ab"
split_left
type_text "X"
deadline=$(($(now) + WAIT))
until [ "$(input_line)" = "> aXb" ]; do
    case $(input_line) in *"[D"*) show_screen_and_fail "ESC and [D were read as Esc and two letters" ;; esac
    [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "the Left arrow in two writes did not move the cursor"
    sleep 0.1
done
pass "an arrow key whose bytes come in two writes moves the cursor of the input line"

# ---- ... and while a reply runs: no stop; a lone Esc stops it ----
keys C-e C-u
type_text "/set slow-motion 300"
keys Enter
type_text "Tell me a story about Lily."
keys Enter
wait_for "Assistant: Once"
keys Tab Tab # Tokens: Left selects the position before
split_left
wait_for "of 0-"
case $(screen) in *"[stopped]"*) show_screen_and_fail "the Left arrow in two writes stopped the reply" ;; esac
wait_for "generating |"
keys Escape
wait_for "[stopped]"
wait_for "stopped |"
pass "an arrow key in two writes moves the selection without stopping the reply; a lone Esc stops it"
keys Tab Tab # the input line
type_text "/set slow-motion 0"
keys Enter
wait_for "slow-motion"
keys Tab Tab Tab # Tokens again

# ---- a bracketed paste is one message, newlines kept ----
printf 'first line\nsecond line\nthird line' >"$T/paste"
$TM load-buffer "$T/paste"
$TM paste-buffer -p -t t # Tokens has the focus: the paste goes to the input line all the same
wait_for "> first line"
case $(input_line) in *"third line"*) ;; *) show_screen_and_fail "the pasted lines are not all on the input line" ;; esac
case $(screen) in *"You: first line"*) show_screen_and_fail "the paste was sent before Enter" ;; esac
keys Enter
wait_for "You: first line"
wait_for " idle |"
screen >"$T/screen"
[ "$(grep -c 'You:' "$T/screen")" -eq 2 ] || show_screen_and_fail "the paste became more than one message"
grep -q '^│second line' "$T/screen" || show_screen_and_fail "the paste's second line is not in the message"
grep -q '^│third line' "$T/screen" || show_screen_and_fail "the paste's third line is not in the message"
grep -q 'queued' "$T/screen" && show_screen_and_fail "the paste's lines were queued as messages"
pass "a bracketed paste of three lines is one message with its newlines, whatever has the focus"
type_text "/quit"
keys Enter
wait_exit
assert_status 0
# the next run's history holds the pasted message as one entry, newlines and all
start -- -m tui -t 0 -z "$TOK" "$MODEL"
wait_for "idle |"
keys Up Up # "/quit", then the paste
wait_for "> first line"
case $(input_line) in *"first line"*"second line"*"third line"*) ;;
*) show_screen_and_fail "the pasted message came back from the history file as more than one entry" ;; esac
pass "a pasted message of three lines is one entry of the history in the next run"
# incremental search takes a character of several bytes whole
keys C-u
type_text "café ☕"
keys Enter
wait_for "You: café ☕"
wait_for " idle |"
keys C-r
type_text "é"
wait_for "(reverse-i-search)\`é': café ☕"
keys C-g
keys C-u
type_text "/quit"
keys Enter
wait_exit
assert_status 0
pass "Ctrl-R searches for a character of several bytes"

# ---- bracketed paste is off once the TUI is gone (quit, crash) ----
# start_then_cat ARGS...: llmchat ARGS, then `cat -v` of what the terminal sends into
# $T/after; llmchat's pid in $T/pid.
start_then_cat() {
    rm -f "$T/exit" "$T/pid" "$T/after"
    cmd="cd $(quote "$T") && env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen-256color"
    cmd="$cmd XDG_STATE_HOME=$(quote "$STATE") sh -c 'echo \$\$ >pid; exec \"\$@\"' sh $(quote "$LLMCHAT_BIN")"
    for a in "$@"; do
        cmd="$cmd $(quote "$a")"
    done
    last_cmd="llmchat $* (in tmux)"
    printf '%s 2>%s; echo $? >%s; cat -v >%s; sleep 600\n' "$cmd" "$(quote "$T/err")" \
        "$(quote "$T/exit")" "$(quote "$T/after")" >"$T/run.sh"
    new_session "sh $(quote "$T/run.sh")"
    deadline=$(($(now) + WAIT))
    while [ ! -s "$T/pid" ]; do
        [ "$(now)" -lt "$deadline" ] || fail "llmchat did not start"
        sleep 0.1
    done
    pid=$(cat "$T/pid")
}

# pasted_after WHAT: once llmchat has ended, a paste reaches the shell's cat unbracketed.
pasted_after() {
    wait_exit
    printf 'after' >"$T/paste"
    $TM load-buffer "$T/paste"
    $TM paste-buffer -p -t t
    keys Enter C-d
    deadline=$(($(now) + WAIT))
    until grep -q after "$T/after" 2>/dev/null; do
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "nothing pasted reached the shell after llmchat ($1)"
        sleep 0.1
    done
    if grep -q '200~' "$T/after"; then
        sed 's/^/  |/' "$T/after" >&2
        fail "bracketed paste was left on ($1)"
    fi
}

start_then_cat -m tui -t 0 -z "$TOK" "$MODEL"
wait_for "idle |"
keys Tab q
pasted_after "q"
assert_status 0
start_then_cat -m tui -t 0 -z "$TOK" "$MODEL"
wait_for "idle |"
kill -s ABRT "$pid"
pasted_after "SIGABRT"
[ "$rc" -gt 128 ] || fail "llmchat did not die of SIGABRT (exit status $rc)"
pass "bracketed paste is off again after the TUI quits and after it crashes"
