#!/bin/sh
# e2e_experts_tui.sh — the experts view driven in tmux as a user would, at 80x24, on a
# tiny qwen3moe model (tests/make_family_gguf: 8 experts, 2 chosen a token, 2 layers;
# stories260K's vocabulary), greedy:
#   - E in a pane opens it at the selected position: a row per layer (L1, L2: numbered
#     from 1) with two chosen experts and their weights, the strip's scale names the 8
#     experts (1-8), the counts are over the reply; no line is wider than the screen;
#   - Left moves the position (the title follows), a counts over every position;
#   - Enter on a layer shows its router: 8 experts ranked with their probabilities;
#     Enter on one lists the positions that chose it; Esc goes back one level each
#     time and closes the view from the layers;
#   - /experts on the input line opens it too;
#   - in the router, x knocks the cursor's expert out (the status line and the notice
#     say which, with the command's numbers from 0) and x again puts it back; f forces
#     the least probable one, x on it is refused, and the next reply's positions all
#     route layer 1 to it first; f again stops forcing;
#   - on a dense model (stories260K) E and /experts say, in one line, that the model
#     has no mixture of experts, and nothing opens.
# Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$T/qwen3moe.gguf
"${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" qwen3moe "$MODEL" "$DATA/stories260K.gguf" ||
    fail "make_family_gguf failed"

# every_line_fits COLS: no line of the screen is wider than COLS.
every_line_fits() {
    screen | while IFS= read -r line; do
        n=$(printf '%s' "$line" | wc -m)
        [ "$n" -le "$1" ] || { echo "$line"; exit 1; }
    done || show_screen_and_fail "a line is wider than $1 columns"
}

start -- --no-config -s 1 -t 0 -n 16 -i "Tell me a story." "$MODEL"
wait_for " idle |"
$TM resize-window -t t -x 80 -y 24
keys Tab # Conversation
keys E
wait_for "experts  pos "
wait_for "8 experts, 2"
for l in 1 2; do
    screen | grep -Eq "^ L$l  #[0-9] [01]\.[0-9][0-9]  #[0-9] [01]\.[0-9][0-9] " ||
        show_screen_and_fail "no row for layer $l with two experts and their weights"
    screen | grep -Eq "^ L$l  #[1-8] .*#[1-8] " || show_screen_and_fail "layer $l's experts are not numbered 1-8"
done
screen | grep -q "1  2  3  4  5  6  7  8" || show_screen_and_fail "the strip's scale does not name the 8 experts"
screen | grep -q "times chosen, the reply, positions" || show_screen_and_fail "the counts are not over the reply"
every_line_fits 80
screen >"$T/layers"
pass "E opens the experts view: a row per layer with the chosen experts and weights, the heat strips over the reply"

pos=$(sed -n 's/^experts  pos \([0-9]*\) .*/\1/p' "$T/layers")
[ -n "$pos" ] || show_screen_and_fail "no position in the title"
keys Left
wait_for "experts  pos $((pos - 1)) "
keys a
wait_for "times chosen, every position, 0-"
keys a
wait_for "times chosen, the reply"
pass "Left moves the position; a counts over every position and back"

keys Enter
wait_for "router  layer 1/2  pos"
n=$(screen | grep -Ec '^ #[1-8] +[0-9.<]+%')
[ "$n" -eq 8 ] || show_screen_and_fail "the router lists $n experts, not 8"
every_line_fits 80
keys Enter
wait_for "L1 expert #"
screen | grep -Eq "chosen at [0-9]+ of [0-9]+ positions" || show_screen_and_fail "no count of who chose the expert"
keys Escape
wait_for "router  layer 1/2  pos"
keys Escape
wait_for "experts  pos "
keys Escape
wait_gone "experts  pos "
wait_for "┌ Conversation"
pass "Enter shows a layer's router, then the positions that chose an expert; Esc goes back and closes"

keys Tab Tab Tab # back to the input line
type_text "/experts"
keys Enter
wait_for "experts  pos "
keys q
wait_gone "experts  pos "
pass "/experts opens the view"

# ---- x and f: knock out and force the router's expert ----
# cursor_expert: the expert the router's cursor is on, from its bottom line.
cursor_expert() {
    screen | sed -n 's/^#\([0-9]*\) was chosen at .*/\1/p' | head -n 1
}
keys Tab # Conversation
keys E
wait_for "experts  pos "
keys x
wait_for "x and f act on an expert: Enter shows the layer's router"
keys Enter
wait_for "router  layer 1/2  pos"
top=$(cursor_expert)
[ -n "$top" ] || show_screen_and_fail "no expert under the router's cursor"
keys x
wait_for "L1 #$top knocked out from the next token (as /knock expert 0:$((top - 1))); x undoes"
keys a # any key: the status line again
wait_for "experts out L1E$top"
keys a
screen | grep -Eq "^ #$top +0% " || show_screen_and_fail "the router does not show #$top at 0% (the position run again with it out)"
[ "$(cursor_expert)" = "$top" ] || show_screen_and_fail "the cursor did not stay on #$top"
keys x
wait_for "L1 #$top back in from the next token (as /knock restore expert 0:$((top - 1)))"
keys a
wait_gone "experts out L1E"
keys a
low=$(screen | sed -n 's/^ #\([1-8]\)  .*/\1/p' | tail -n 1) # the least probable
[ -n "$low" ] && [ "$low" != "$top" ] || show_screen_and_fail "no least probable expert in the router"
keys Down Down Down Down Down Down Down
wait_for "#$low was chosen at"
keys f
wait_for "L1 #$low forced first from the next token (as /force_expert 0:$((low - 1))); f undoes"
keys a
wait_for "experts forced L1E$low"
keys a
[ "$(cursor_expert)" = "$low" ] || show_screen_and_fail "the cursor did not follow #$low"
keys x
wait_for "L1 #$low is forced: f stops forcing it, then x can knock it out"
keys Escape # the layers
wait_for "experts  pos "
keys Escape # closed
wait_gone "experts  pos "
for n in "L1 #$top knocked out" "L1 #$top back in" "L1 #$low forced first"; do
    screen | grep -q "\[$n" || show_screen_and_fail "Conversation has no note [$n ...]"
done
keys Tab Tab Tab # the input line
type_text "Go on."
keys Enter
wait_for " idle |"
keys Tab # Conversation
keys E
wait_for "experts  pos "
keys End # the newest position: the status line's "pos N/256" less one
n=$(screen | sed -n 's/.* | pos \([0-9]*\)\/256 .*/\1/p' | head -n 1)
[ -n "$n" ] || show_screen_and_fail "no position on the status line"
wait_for "experts  pos $((n - 1)) "
screen | grep -Eq "^ L1  #$low " || show_screen_and_fail "the newest position's layer 1 does not route to #$low first"
keys a # over every position: the reply's 16 positions chose it at least
keys Enter
wait_for "router  layer 1/2  pos"
keys f
wait_for "L1: no expert forced from the next token (as /force_expert off 0)"
keys a
wait_gone "experts forced L1E"
keys Escape
wait_for "experts  pos "
keys Escape
wait_gone "experts  pos "
pass "x knocks the router's expert out and back in; f forces one, and the next reply routes to it; f again stops"

# ---- a dense model: refused in one line ----
$TM kill-server >/dev/null 2>&1
sleep 0.2
start -- --no-config -s 1 -t 0 -n 4 -i "Hi." "$DATA/stories260K.gguf"
wait_for " idle |"
keys Tab E
wait_for "experts: this model has no mixture of experts"
screen | grep -q "experts  pos " && show_screen_and_fail "the view opened on a dense model"
keys Tab Tab Tab
type_text "/experts"
keys Enter
wait_for "experts: this model has no mixture of experts"
screen | grep -q "experts  pos " && show_screen_and_fail "/experts opened the view on a dense model"
pass "a dense model: E and /experts say it has no mixture of experts"
