#!/bin/sh
# e2e_attribution.sh — the Attention pane's direct logit attribution view, driven in
# tmux as a user would on the bundled chat260K (fp32 weights, greedy): v reaches it after
# the layers x heads grid; at the reply's " named" it splits " Lily"'s logit into a
# grid of layers x heads with an MLP column and an embedding row, the parts' sum equals
# the logit, the largest parts are listed (docs/debugging.md quotes them); t and T step
# the target through the candidates; x on its cursor knocks a head out (the grid says
# "out", the logit changes); NO_COLOR marks negative parts by an attribute; a trace
# viewed without the model says the view needs the weights; t elsewhere says why.
# Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin

# attn: the Attention pane's inside (the right column below Tokens).
attn() {
    screen | sed -n '/┌ Attention/,/└/p'
}

# the_sum: "parts sum 19.684, logit 19.684" -> "19.684 19.684".
the_sum() {
    attn | sed -n 's/.*parts sum \(-*[0-9.]*\), logit \(-*[0-9.]*\).*/\1 \2/p'
}

start -- --no-config -s 1 -t 0 -n 60 --weights f32 --trace "$T/run.jsonl" \
    -i "Tell me a story about a dog named Lily." "$MODEL"
wait_for " idle |"
keys Tab Tab Tab # input line, Conversation, Tokens, Attention
keys t
wait_for "t and T pick the attribution's target: v shows the attribution view"
keys v v v v v
wait_for "attribution to "
wait_for "largest: "
for text in "H1" "H8" "MLP" "emb " "L1 " "L5 " "parts sum "; do
    attn | grep -q "$text" || show_screen_and_fail "the attribution view has no [$text]"
done
pass "v reaches the attribution view: a layers x heads grid, an MLP column, an embedding row"

# ---- the reply's " named" (position 44): who writes " Lily" ----
keys Home
i=0
while [ "$i" -lt 44 ]; do
    keys Right
    i=$((i + 1))
done
wait_for "pos 44 of 0-"
wait_for "attribution to ␣Lily at pos 44 (next, logit 19.6"
# the largest parts: the second layer's MLP, then head 5 of the last layer
attn | grep -q "largest: L2 MLP +3.6[0-9]  L5 H5 +3.0[0-9]" ||
    show_screen_and_fail "the largest parts are not L2 MLP and L5 H5"
set -- $(the_sum)
[ $# -eq 2 ] || show_screen_and_fail "no sum of the parts"
assert_eq "the parts' sum against the logit (fp32)" "$1" "$2"
pass "at ' named', ' Lily''s logit splits into parts that add up to it, L2 MLP and L5 H5 largest"

# ---- t and T: the other candidates ----
keys t
wait_for "attribution to ␣M at pos 44 (top 2, logit 14."
set -- $(the_sum)
assert_eq "the parts' sum against ␣M's logit" "$1" "$2"
keys T
wait_for "attribution to ␣Lily at pos 44 (next"
pass "t and T step the target through the candidates"

# ---- x on the cursor: L5 H5 out ----
keys Up . . . . # the cursor from L1 H1 to L5 H5
keys x
wait_for "L5 H5 knocked out"
wait_for "heads out L5H5"
attn | grep -q "L5 .* out " || show_screen_and_fail "the grid does not mark L5 H5 out"
wait_gone "logit 19.68)"
set -- $(the_sum)
assert_eq "the parts' sum with L5 H5 out" "$1" "$2"
screen | grep -q "heads out: ␣Lily" || show_screen_and_fail "Tokens shows no what-if"
keys x
wait_for "L5 H5 back in"
wait_for "(next, logit 19.6"
pass "x knocks the cursor's head out: the grid says out, the parts still add up"
keys Tab # the input line
keys C-d
wait_exit
assert_status 0

# ---- no colours: negative parts underlined ----
$TM kill-server >/dev/null 2>&1
start NO_COLOR=1 -- --no-config -s 1 -t 0 -n 20 --weights f32 -i "Tell me a story." "$MODEL"
wait_for " idle |"
keys Tab Tab Tab v v v v v
wait_for "largest: "
esc=$(printf '\033')
screen_colors | grep -qE "$esc\[([0-9]+;)*4m-[0-9]" ||
    show_screen_and_fail "no negative part is underlined without colours"
screen_colors | grep -qE "$esc\[([0-9]+;)*4m\+[0-9]" &&
    show_screen_and_fail "a positive part is underlined"
pass "with NO_COLOR negative parts are underlined"
keys Tab C-d
wait_exit
assert_status 0

# ---- a trace without the model ----
$TM kill-server >/dev/null 2>&1
start -- --no-config --view "$T/run.jsonl"
wait_for "viewing run.jsonl (read-only)"
keys Tab Tab Tab v v v v v
wait_for "attribution needs the model: a trace has no weights"
pass "a trace viewed without the model: the view says it needs the weights"
keys q
wait_exit
assert_status 0
