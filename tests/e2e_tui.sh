#!/bin/sh
# e2e_tui.sh — the curses TUI as a person sees it: the real binary runs in a detached
# tmux session (private socket, 120x40), keys go in with send-keys and the screen is
# read with capture-pane. Checks: the three pane titles and the status line; the help
# overlay; a typed message and a streamed reply in Conversation; top-k rows in Tokens
# that change when Left moves the selection; the heatmap changing with the layer and
# the head; resizing to 80x24, to tiny sizes and back; Esc and Ctrl-C stopping a long
# reply while the program keeps answering; p pausing a reply and n stepping it;
# quitting while a reply runs asks first; history recalled with Up after a restart;
# q quits with status 0; on a monochrome terminal (vt100, NO_COLOR) the heatmap is
# drawn with shading characters and Ctrl-D on an empty line quits. Every wait polls
# the screen up to a deadline; nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"

# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

# Tokens pane candidate rows ("││> 1 ␣Once  14.96  68.5% ███"): the right column's rows.
token_rows() {
    screen | grep -o '││[ >][ 0-9][0-9] .*'
}

# The attention grid: rows 27-36 of the 120x40 layout (below the header and the column
# labels, above the footer), with colours.
heat_rows() {
    screen_colors | sed -n '27,36p'
}

# ---- session 1: chat260K, a real reply, the panes, resizing, quit ----
start -- -m tui -s 7 -z "$DATA/tok512.bin" "$BUNDLED/chat260K.bin"
wait_for "Conversation"
wait_for "Tokens"
wait_for "Attention"
wait_for "idle |"
s=$(screen)
# the status line alone (the Conversation pane's notice names the model too, wrapped
# wherever its path makes it wrap)
st=$(printf '%s\n' "$s" | grep ' idle |')
assert_contains "status line" "$st" "chat260K"
assert_contains "status line (what the weights were, are, and take)" "$st" "F32→Q8_0 (299 KB)"
assert_contains "status line (the chat template)" "$st" "llama2"
assert_contains "status line" "$st" "seed 7"
pass "the three panes and the status line are shown"

# ? on the empty input line shows the key bindings; any key closes them.
keys '?'
wait_for "Help: keys"
wait_for "mask BOS sink column"
keys x
wait_gone "Help: keys"
assert_not_contains "input line after closing the help" "$(screen | tail -n 1)" "x"
pass "? shows the help overlay and a key closes it"

type_text "Tell me a story about Lily."
keys Enter
wait_for "You: Tell me a story about Lily."
wait_for "Assistant: "
wait_for "idle |"
reply=$(screen | grep -o 'Assistant: [^│]*' | head -n 1)
reply=${reply#Assistant: }
reply=$(printf '%s' "$reply" | trim)
[ "${#reply}" -ge 10 ] || show_screen_and_fail "the reply is empty or very short: [$reply]"
pass "the message and a streamed reply are in Conversation: $reply"

# Tokens: focus it (input -> Conversation -> Tokens) and move left along the sequence.
keys Tab Tab
token_rows >"$T/rows0"
n=$(wc -l <"$T/rows0")
[ "$n" -ge 5 ] || show_screen_and_fail "expected at least 5 top-k rows in Tokens, found $n"
assert_contains "Tokens pane" "$(screen)" "(newest)"
keys Left
wait_change "$T/rows0" token_rows "top-k rows after Left"
token_rows >"$T/rows1"
keys Left
wait_change "$T/rows1" token_rows "top-k rows after a second Left"
s=$(screen)
assert_not_contains "Tokens pane after Left" "$s" "(newest)"
keys End
wait_for "(newest)"
pass "Tokens shows $n top-k rows that change with Left; End follows the newest again"

# Attention: focus it and change the layer, then the head.
keys Tab
wait_for "layer 1/"
heat_rows >"$T/heat0"
grep -q '48;5;' "$T/heat0" || show_screen_and_fail "no 256-colour heatmap cells in the Attention pane"
keys ']'
wait_for "layer 2/"
heat_rows >"$T/heat1"
cmp -s "$T/heat0" "$T/heat1" && show_screen_and_fail "the heatmap did not change with the layer"
keys '.'
wait_for "head 2/"
heat_rows >"$T/heat2"
cmp -s "$T/heat1" "$T/heat2" && show_screen_and_fail "the heatmap did not change with the head"
keys m
wait_for "mean of"
keys l
wait_for "  log"
keys b
wait_change "$T/heat2" heat_rows "heatmap after m, l, b"
pass "the heatmap changes with the layer, the head, mean, log scale and the BOS mask"

# Resize to 80x24: all three panes still there; then tiny sizes; then back.
$TM resize-window -t t -x 80 -y 24
deadline=$(($(now) + WAIT))
while :; do
    s=$(screen)
    lines=$(printf '%s\n' "$s" | wc -l)
    case $s in *Conversation*Tokens*Attention*) [ "$lines" -le 24 ] && break ;; esac
    [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "the three panes are not all shown at 80x24"
    sleep 0.1
done
$TM resize-window -t t -x 20 -y 5
sleep 0.3
$TM resize-window -t t -x 1 -y 1
sleep 0.3
$TM resize-window -t t -x 120 -y 40
wait_for "Attention"
wait_for "Assistant: "
[ ! -s "$T/exit" ] || fail "llmchat exited while being resized (status $(cat "$T/exit"))"
pass "resized to 80x24, 20x5, 1x1 and back to 120x40; the panes come back"

# q in a pane quits (nothing is running): status 0, history saved.
keys q
wait_exit
assert_status 0
[ -s "$STATE/llmchat/history" ] || fail "no history file in \$XDG_STATE_HOME/llmchat/history"
history_text "$STATE/llmchat/history" >"$T/history"
assert_file_contains "history file" "$T/history" "Tell me a story about Lily."
pass "q quits with status 0 and saves the history"

# ---- session 2: history after a restart; Esc stops a long reply; quitting asks ----
# stories260K is no chat model: it talks until the context is full. The slow-motion
# delay keeps the reply running long enough to be stopped.
start LLMCHAT_STEP_DELAY_MS=100 -- -m tui -n 0 -z "$DATA/tok512.bin" "$DATA/stories260K.bin"
wait_for "idle |"
keys Up
wait_for "> Tell me a story about Lily."
pass "Up recalls the previous run's message"
keys C-u
type_text "Once upon a time there was a dog"
keys Enter
wait_for "generating |"
keys Escape
wait_for "[stopped]"
wait_for "stopped |"
type_text "/help"
keys Enter
wait_for "Commands: /reset"
pass "Esc stops the reply; the program still takes commands"

type_text "The cat sat"
keys Enter
wait_for "generating |"
keys C-c
wait_for "stopped |"
[ "$(screen | grep -c '\[stopped\]')" -ge 2 ] || show_screen_and_fail "Ctrl-C did not stop the second reply"
[ ! -s "$T/exit" ] || fail "Ctrl-C ended the program (status $(cat "$T/exit"))"
pass "Ctrl-C stops a reply too and the program keeps running"

# p pauses the reply (in a pane); n then advances it by exactly one token.
type_text "The bird flew"
keys Enter
wait_for "generating |"
keys Tab p
wait_for "paused |"
p0=$(newest_pos)
[ -n "$p0" ] || show_screen_and_fail "no newest position in the Tokens pane"
keys n
wait_for "pos $((p0 + 1)) (newest)"
sleep 0.5 # a paused reply must not move on by itself: look again after a while
assert_eq "position after one step while paused" "$((p0 + 1))" "$(newest_pos)"
keys p
wait_for "generating |"
keys Escape
wait_for "stopped |"
keys Tab Tab Tab
pass "p pauses a reply and n advances it by one token"

type_text "The dog ran"
keys Enter
wait_for "generating |"
keys Tab q
wait_for "Quit anyway? (y/n)"
keys n
wait_for "generating |"
[ ! -s "$T/exit" ] || fail "llmchat quit although the question was answered n"
keys q
wait_for "Quit anyway? (y/n)"
keys y
wait_exit
assert_status 0
pass "quitting during a reply asks first; n keeps going, y quits with status 0"

# ---- session 3: vt100 without colour: shading characters; Ctrl-D quits ----
LLMCHAT_TUI_TERM=vt100
start NO_COLOR=1 -- -m tui -s 3 -n 40 -i "Tell me a story about Tom." -z "$DATA/tok512.bin" "$BUNDLED/chat260K.bin"
wait_for "Attention"
wait_for "You: Tell me a story about Tom."
wait_for "Assistant: "
wait_for "idle |"
s=$(screen)
case $s in
*"░"* | *"▒"* | *"▓"* | *"█"*) ;;
*) show_screen_and_fail "no shading characters in the monochrome heatmap" ;;
esac
keys C-d
wait_exit
assert_status 0
pass "vt100 with NO_COLOR: the heatmap is shaded with characters; Ctrl-D quits with status 0"
