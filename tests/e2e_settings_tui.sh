#!/bin/sh
# e2e_settings_tui.sh — settings a person sees on a terminal, driven in tmux: which
# model is open and why (the TUI's first notice, the REPL's banner); the themes
# (dark, light and mono colour the status line and the notices differently, NO_COLOR
# makes mono over the config file's theme, --theme on the command line wins over
# NO_COLOR); history-size bounds the history files of the TUI and of the REPL, and 0
# keeps none. Colours are read from the screen's escape codes (capture-pane -e).
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

CONF=$XDG_CONFIG_HOME/llmchat/config
mkdir -p "$XDG_CONFIG_HOME/llmchat"
ESC=$(printf '\033')

# quit_tui: Ctrl-D on the empty input line, then the exit status must be 0.
quit_tui() {
    keys C-d
    wait_exit
    [ "$rc" -eq 0 ] || fail "llmchat exited $rc"
    $TM kill-server >/dev/null 2>&1
}

# line_with TEXT: the first screen line holding TEXT, with its colour escapes.
line_with() {
    screen_colors | grep -F "$1" | head -n 1
}

# has_sgr LINE CODE: LINE sets SGR CODE (alone or among others).
has_sgr() {
    case $1 in
    *"$ESC[$2m"* | *"$ESC[$2;"* | *";$2m"* | *";$2;"*) return 0 ;;
    esac
    return 1
}

# theme_of: dark, light, mono or unknown, from the status line's and the first
# notice's colours.
theme_of() {
    status=$(line_with "idle |")
    notice=$(line_with "[bundled demo model")
    if has_sgr "$status" 30 && has_sgr "$status" 46 && has_sgr "$notice" 33; then
        echo dark
    elif has_sgr "$status" 37 && has_sgr "$status" 44 && has_sgr "$notice" 31; then
        echo light
    elif has_sgr "$status" 7 && ! screen_colors | grep -q "$ESC\[[34][0-7]m"; then
        echo mono
    else
        echo unknown
    fi
}

# expect_theme WANT [VAR=VALUE...] -- ARGS...: starts the TUI and checks its theme.
expect_theme() {
    want=$1
    shift
    start "$@"
    wait_for "idle |"
    wait_for "[bundled demo model"
    got=$(theme_of)
    [ "$got" = "$want" ] || show_screen_and_fail "expected the $want theme, the screen looks $got"
    quit_tui
}

# ---- which model, and why: the TUI's first notice ----
start -- -s 3
wait_for "idle |"
wait_for "[bundled demo model chat260K.bin, 260K parameters:"
wait_for "llmchat-fetch tinyllama-chat"
quit_tui
pass "the TUI's first notice says it opened the bundled demo model and how to get a real one"

# ---- themes ----
expect_theme dark --
expect_theme light -- --theme light
expect_theme mono -- --theme mono
expect_theme mono -- --no-color
printf 'theme = light\n' >"$CONF"
expect_theme light --
expect_theme mono NO_COLOR=1 --
expect_theme dark NO_COLOR=1 -- --theme dark
rm -f "$CONF"
pass "dark, light and mono colour the screen differently; config < NO_COLOR < --theme"

# ---- history-size: the TUI ----
printf 'history-size = 2\n' >"$CONF"
start --
wait_for "idle |"
for line in "/help" "/reset" "/system Be brief."; do
    type_text "$line"
    keys Enter
    wait_gone "> $line"
done
wait_for "[system prompt: Be brief.]"
quit_tui
hist=$STATE/llmchat/history
[ -f "$hist" ] || fail "no TUI history file $hist"
printf '/reset\n/system Be brief.\n' >"$T/want"
history_text "$hist" | cmp -s - "$T/want" || fail "history-size = 2: the TUI history holds [$(cat "$hist")]"
start -- --history-size 0
wait_for "idle |"
type_text "/help"
keys Enter
wait_gone "> /help"
quit_tui
history_text "$hist" | cmp -s - "$T/want" || fail "--history-size 0 changed the history file: [$(cat "$hist")]"
pass "history-size bounds the TUI's history; 0 keeps none"

# ---- the REPL: its banner and its history ----
# wait_err_has TEXT: until the program's stderr holds TEXT.
wait_err_has() {
    deadline=$(($(now) + WAIT))
    until grep -qF "$1" "$T/err"; do
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "waited ${WAIT}s for [$1] on stderr"
        sleep 0.1
    done
}

start -- -m chat
wait_err_has "chatting with"
for line in "/help" "/reset" "/system Be brief."; do
    type_text "$line"
    keys Enter
done
wait_err_has "system prompt: "
keys C-d
wait_exit
[ "$rc" -eq 0 ] || fail "the REPL exited $rc"
assert_file_contains "the REPL's banner" "$T/err" "bundled demo model chat260K.bin"
assert_file_contains "the REPL's banner (weights)" "$T/err" "chatting with chat260K.bin (F32→Q8_0, 299 KB)."
assert_file_contains "the REPL's banner (template)" "$T/err" "chat template llama2 (the default)"
hist=$STATE/llmchat/chat_history
[ -f "$hist" ] || fail "no REPL history file $hist"
history_text "$hist" | cmp -s - "$T/want" || fail "history-size = 2: the REPL history holds [$(cat "$hist")]"
pass "the REPL's banner names the bundled model; history-size bounds its history"
