#!/bin/sh
# e2e_compute_tui.sh — the compute view driven in tmux as a user would, on the bundled
# chat260K with fp32 weights (greedy): g from a pane opens it at the selected
# position; the list names the layer's 15 steps with their shapes, and its L2 norms
# are the ones `-m tensors` writes for that position (computed here from its JSON);
# [ and ] walk the layers to the embedding before them and the output after; Up,
# Down, Enter open a step's values, { } its heads; w shows the weight behind it (the
# tensor, the block, the activation group, the partial and the row); Esc goes back
# and closes. At 80x24 and at 60x20 every row's name is whole and what does not fit
# is marked (the columns left out are named, the rows scrolled away have a marker).
# A trace written with --trace-tensors opens in --view, without the model: the same
# list, the first values, and the weight says it needs the model. Nothing asserts
# timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin
STEPS="attn_norm Qcur Kcur Vcur kq kq_soft_max kqv kqv_out ffn_inp ffn_norm ffn_gate ffn_up ffn_gate_par ffn_out l_out"

# every_line_fits COLS: no line of the screen is wider than COLS, and a row cut short
# ends with the ellipsis.
every_line_fits() {
    screen | while IFS= read -r line; do
        n=$(printf '%s' "$line" | wc -m)
        [ "$n" -le "$1" ] || { echo "$line"; exit 1; }
    done || show_screen_and_fail "a line is wider than $1 columns"
}

start -- --no-config -s 1 -t 0 -n 30 --weights f32 --trace "$T/run.jsonl" --trace-tensors 0-1 \
    -i "Tell me a story about Tim." "$MODEL"
wait_for " idle |"
$TM resize-window -t t -x 80 -y 24
keys Tab Tab # Conversation, Tokens
keys Home Right Right Right Right Right # position 5
wait_for "pos 5 of 0-"
keys g
wait_for "compute  pos 5 "
wait_for "layer 1/5 (il 0)"
for s in $STEPS; do
    screen | grep -q "^ $s  *\[" || show_screen_and_fail "the list has no row for $s"
done
screen | grep -q "kq_soft_max  *\[8,6\]" || show_screen_and_fail "kq_soft_max is not [8,6] at position 5"
screen | grep -q "Qcur  *\[8,8\]" || show_screen_and_fail "Qcur is not [8,8]"
every_line_fits 80
pass "g opens the compute view at the selected position: 15 steps of layer 1 with their shapes"

screen >"$T/list" # checked against the trace once it is written (at the end)

keys ']'
wait_for "layer 2/5 (il 1)"
keys '[' '['
wait_for "before the layers"
screen | grep -q "^ inp_embd  *\[64\]" || show_screen_and_fail "no inp_embd before the layers"
keys '['
wait_for "after the layers"
screen | grep -q "^ result_output *\[512\]" || show_screen_and_fail "no result_output after the layers"
screen | grep -q "^ result_norm  *\[64\]" || show_screen_and_fail "no result_norm after the layers"
keys ']' ']'
wait_for "layer 1/5 (il 0)"
pass "[ and ] walk the layers, the embedding before them and the output after"

keys Down Enter
wait_for "Qcur [8,8]  layer 1/5 (il 0)  pos 5  head 1/8"
keys '}'
wait_for "head 2/8"
keys Right
wait_for "Qcur[1,1] (flat 9) = "
pass "Enter opens a step's values, { } its heads, the cursor shows the value"

keys w
wait_for "the weight behind Qcur"
for text in "Qcur element 9 = row 9 of blk.0.attn_q.weight . attn_norm" "computed F32 in place" \
    "input group 0 of 2" "weight: F32 block 0 of the row" "dequantized:"; do
    wait_for "$text"
done
keys End
for text in "activation: attn_norm[0..31] as it is" "part of the row's dot product" \
    "the pass computed"; do
    wait_for "$text"
done
screen | grep -q "▲" || show_screen_and_fail "the lines above are not marked"
every_line_fits 80
keys Right
wait_for "input group 1 of 2"
pass "w shows the weight behind Qcur: the tensor, the block, the input group, the parts"

keys Escape
wait_for "Qcur [8,8]"
keys Escape
wait_for "compute  pos 5"
keys Down Down Down Down Down Down w # from Qcur to kqv_out
wait_for "the weight behind kqv_out"
keys Escape Escape
wait_gone "compute  pos"
wait_for "┌ Tokens"
pass "Esc goes back a level, then closes the view"

# ---- 60 x 20 ----
$TM resize-window -t t -x 60 -y 20
keys g
wait_for "compute  pos 5"
screen | grep -q "not shown at this width: first values\|hidden: first values" ||
    show_screen_and_fail "the columns left out at 60 are not named"
screen | grep -q "▼" || show_screen_and_fail "the rows below are not marked at 60x20"
every_line_fits 60
keys End
keys Down Down Down Down Down Down Down Down Down Down Down Down Down Down
wait_for " l_out "
screen | grep -q "▲" || show_screen_and_fail "the rows above are not marked at 60x20"
keys w
wait_for "this step multiplies by no weight"
keys Up w
wait_for "the weight behind ffn_out"
wait_for "ffn_out element"
every_line_fits 60
keys Escape Escape
pass "at 60x20 the list scrolls with markers, the columns left out are named, nothing is wider"

keys q
wait_exit
# the L2 column is the norm of the steps at the same position as the run's trace
# (--trace-tensors, written when the session ends) records them
"$PYTHON" - "$T/run.jsonl" "$T/list" <<'PY' || show_screen_and_fail "the list's L2 norms are not the trace's"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]).read().splitlines()[1:]]
steps = {t["name"]: t for t in recs[5]["tensors"] if t["layer"] == 0}
for line in open(sys.argv[2]):
    w = line.split()
    if len(w) > 3 and w[0] in steps:
        l2 = float(w[2])
        want = steps[w[0]]["l2"]
        assert abs(l2 - want) <= 1e-3 * want + 1e-4, (w[0], l2, want)
PY
pass "its L2 norms are those of the run's own trace (--trace-tensors) at position 5"


# ---- the trace, without the model ----
start -- --no-config --view "$T/run.jsonl"
wait_for "viewing run.jsonl"
$TM resize-window -t t -x 80 -y 24
keys Tab Tab Home Right Right
keys g
wait_for "compute  pos 2 "
screen | grep -q "^ kq_soft_max  *\[8,3\]" || show_screen_and_fail "the trace's list has no kq_soft_max [8,3]"
keys Down Enter
wait_for "(a trace keeps the first values only)"
keys w
wait_for "the weights need the model: a trace has none"
keys Escape ']' ']'
wait_for "layer 3/5 (il 2)"
wait_for "the trace did not record this layer"
pass "--view: the compute view of a --trace-tensors trace, its first values, no weights"
