# tui_lib.sh — driving the curses TUI in tmux for the end-to-end tests, sourced after
# lib.sh, POSIX sh.
#
# Owns: a private tmux server (one per test script, killed on exit), starting llmchat
# in a 120x40 session, sending keys and text, reading the screen (or one pane of it),
# and waits that poll the screen up to a deadline (LLMCHAT_TUI_WAIT seconds, 60 by
# default): nothing asserts timing. Skips the test when tmux is absent.

need_tool tmux

SOCK=llmchat-test-$$
TM="tmux -L $SOCK -f /dev/null"
# finish: the tmux server killed and its socket removed (tmux leaves it), then $T
# removed once the last llmchat started has ended: the hangup makes it save its
# history under $T, which must not come back after the removal.
finish() {
    $TM kill-server >/dev/null 2>&1
    rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$SOCK"
    if [ -s "$T/pid" ]; then
        pid=$(cat "$T/pid")
        tries=0
        while kill -0 "$pid" 2>/dev/null && [ $tries -lt 100 ]; do
            sleep 0.1
            tries=$((tries + 1))
        done
    fi
    rm -rf "$T"
}
trap finish EXIT
STATE=$T/state
mkdir -p "$STATE"
WAIT=${LLMCHAT_TUI_WAIT:-60} # seconds any one wait may take before the test fails

# quote ARG: ARG as a single-quoted shell word.
quote() {
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# start [VAR=VALUE...] -- ARGS...: runs llmchat ARGS in a new 120x40 session "t".
# Its stderr goes to $T/err, its exit status to $T/exit.
start() {
    envs=
    while [ "$1" != "--" ]; do
        envs="$envs $(quote "$1")"
        shift
    done
    shift
    rm -f "$T/exit"
    # the process's id goes to $T/pid: sh -c writes its own and becomes llmchat (or the
    # timeout that waits for it)
    cmd="cd $(quote "$T") && exec sh -c 'echo \$\$ >\"\$0\"; exec \"\$@\"' $(quote "$T/pid") env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=${LLMCHAT_TUI_TERM:-screen-256color}"
    cmd="$cmd XDG_STATE_HOME=$(quote "$STATE")$envs ${run_timeout:+timeout --foreground $LLMCHAT_TEST_TIMEOUT}"
    cmd="$cmd $(quote "$LLMCHAT_BIN")"
    for a in "$@"; do
        cmd="$cmd $(quote "$a")"
    done
    last_cmd="llmchat $* (in tmux)"
    printf '(%s) 2>%s; echo $? >%s\n' "$cmd" "$(quote "$T/err")" "$(quote "$T/exit")" >"$T/run.sh"
    $TM new-session -d -s t -x 120 -y 40 "sh $(quote "$T/run.sh")" || hard_error "tmux cannot start a session"
}

# new_session COMMAND: a fresh 120x40 session "t" running COMMAND, the last one's
# server gone (it may take a moment to exit).
new_session() {
    $TM kill-server >/dev/null 2>&1
    tries=0
    until $TM new-session -d -s t -x 120 -y 40 "$1" 2>/dev/null; do
        tries=$((tries + 1))
        [ $tries -lt 50 ] || hard_error "tmux cannot start a session"
        sleep 0.1
    done
}

screen() {
    $TM capture-pane -p -t t 2>/dev/null
}

# screen_colors: the screen with its colour escapes (the heatmap is coloured spaces).
screen_colors() {
    $TM capture-pane -p -e -t t 2>/dev/null
}

keys() {
    $TM send-keys -t t "$@"
}

type_text() {
    $TM send-keys -t t -l "$1"
}

now() {
    date +%s
}

# show_screen_and_fail MESSAGE
show_screen_and_fail() {
    {
        printf 'screen:\n'
        screen | sed 's/^/  |/'
    } >&2
    fail "$1"
}

# wait_for TEXT: until TEXT is on the screen.
wait_for() {
    deadline=$(($(now) + WAIT))
    while :; do
        case $(screen) in *"$1"*) return 0 ;; esac
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "waited ${WAIT}s for [$1] on the screen"
        sleep 0.1
    done
}

# wait_for_wrapped TEXT: until TEXT is in the Conversation pane, where the pane may
# have wrapped it over lines (a path in TMPDIR can be longer than the pane is wide):
# the pane's lines and TEXT are compared with their spaces taken out.
wait_for_wrapped() {
    want=$(printf '%s' "$1" | tr -d ' ')
    deadline=$(($(now) + WAIT))
    while :; do
        case $(pane Conversation | tr -d ' \n') in *"$want"*) return 0 ;; esac
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "waited ${WAIT}s for [$1] in the conversation"
        sleep 0.1
    done
}

# wait_gone TEXT: until TEXT is no longer on the screen.
wait_gone() {
    deadline=$(($(now) + WAIT))
    while :; do
        case $(screen) in *"$1"*) ;; *) return 0 ;; esac
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "waited ${WAIT}s for [$1] to go away"
        sleep 0.1
    done
}

# wait_change FILE COMMAND: until the output of COMMAND differs from FILE's contents.
wait_change() {
    deadline=$(($(now) + WAIT))
    while :; do
        eval "$2" >"$T/now"
        cmp -s "$1" "$T/now" || return 0
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "the screen did not change: $3"
        sleep 0.1
    done
}

# wait_exit: until the program has exited; its status in $rc.
wait_exit() {
    deadline=$(($(now) + WAIT))
    while [ ! -s "$T/exit" ]; do
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "llmchat did not exit"
        sleep 0.1
    done
    rc=$(cat "$T/exit")
    if grep -q 'Sanitizer\|runtime error:' "$T/err"; then
        fail "a sanitizer reported an error"
    fi
}

# pane TITLE: the inside of the pane titled TITLE on the screen, one line per row.
pane() {
    screen | "$PYTHON" -c '
import sys
title = "\u250c " + sys.argv[1] + " "
rows = sys.stdin.read().split("\n")
for y, row in enumerate(rows):
    x = row.find(title)
    if x < 0:
        continue
    right = row.find("\u2510", x)
    for below in rows[y + 1:]:
        if below[x:x + 1] == "\u2514":
            break
        print(below[x + 1:right])
    break
' "$1"
}

# newest_pos: the position the Tokens pane shows as the newest.
newest_pos() {
    screen | grep -o 'pos [0-9]* (newest)' | head -n 1 | grep -o '[0-9][0-9]*'
}
