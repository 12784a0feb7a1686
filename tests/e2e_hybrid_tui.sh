#!/bin/sh
# e2e_hybrid_tui.sh — what the debugger shows of a hybrid model's layers, driven in tmux
# as a user would, on a tiny qwen35 (tests/make_family_gguf: layers 1 and 3 gated
# attention, 0 and 2 Gated DeltaNets of 4 value heads; stories260K's vocabulary), greedy:
#   - the status line says what stepping back one position costs (the positions run
#     again from the state's checkpoint);
#   - the heatmap of a Gated DeltaNet layer says what its rows are, "linear attention
#     (effective)", and an attention layer's does not;
#   - the heads view of a DeltaNet layer lists its value heads, each with the position
#     its output weighs most ("@N"), as an attention head's most attended key.
#   - X in the heads view knocks a DeltaNet head out with its state reset (the status
#     line says "(reset)"), X again puts it back; an attention layer refuses it;
#   - a knock-out then a rewind, and tokens taken back then a knock-out: the positions
#     run again for the recurrent state run as they first ran, so the trace replays bit
#     for bit.
# What the rows hold is checked against the reference in e2e_hybrid.sh. Nothing asserts
# timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$T/qwen35.gguf
"${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" qwen35 "$MODEL" "$DATA/stories260K.gguf" ||
    fail "make_family_gguf failed"

start -- --no-config -s 1 -t 0 -n 12 -i "Tell me a story." "$MODEL"
wait_for " idle |"
$TM resize-window -t t -x 140 -y 40
$TM resize-window -t t -x 220 -y 40 # room for every field of the status line
sleep 0.5
screen | grep -Eq "KV [A-Z0-9_]+ \+ state \(rewind 1: [0-9]+ rerun\)" ||
    show_screen_and_fail "no status of what a rewind costs"
pass "the status line says what a rewind costs"
$TM resize-window -t t -x 140 -y 40
keys Tab Tab Tab # the Attention pane
tries=0 # until the TUI has redrawn after the resize and the keys
until screen | grep -q "layer 1/4 .*linear attention (effective)"; do
    tries=$((tries + 1))
    [ "$tries" -lt 100 ] ||
        show_screen_and_fail "no heatmap of layer 1 saying linear attention (effective)"
    sleep 0.1
done
keys ']'
wait_for "layer 2/4 "
screen | grep -q "layer 2/4 .*linear attention" &&
    show_screen_and_fail "layer 2 (gated attention) called linear attention"
pass "the heatmap says which layers' rows are a DeltaNet's effective attention"

keys '['
wait_for "layer 1/4 "
for _ in 1 2 3 4 5 6 7 8; do
    case $(screen) in *"heads of layer 1/4"* | *"heads L1/4 "*) break ;; esac
    keys v
    sleep 0.3
done
screen | grep -Eq "heads (of layer |L)1/4" || show_screen_and_fail "no heads view of layer 1"
screen | grep -Eq "H4 .*@[0-9]+" || show_screen_and_fail "no row of value head 4 with its strongest position"
pass "the heads view lists a DeltaNet layer's value heads"

# X on a DeltaNet head: out with its state reset, as the status line says; X again puts
# it back; on an attention layer it is refused (no state)
keys X
sleep 0.5
$TM resize-window -t t -x 220 -y 40
sleep 0.5
screen | grep -Eq "heads out L1H[0-9]+\(reset\)" || show_screen_and_fail "no reset head in the status line"
$TM resize-window -t t -x 140 -y 40
keys X
sleep 0.5
screen | grep -q "(reset)" && show_screen_and_fail "X again left the head out"
keys ']'
wait_for "heads of layer 2/4"
keys X
wait_for "no state to reset"
pass "X knocks a DeltaNet head out with its state reset, puts it back, and refuses attention"

# replayed_after TRACE STEPS: a session that is told a story, then does STEPS (a
# function that leaves the focus on the input line) and quits; its trace must replay
# bit for bit (positions run again with the knock-out parted from it at position 39)
replayed_after() {
    $TM kill-server >/dev/null 2>&1
    sleep 0.2
    start -- --no-config -t 0 -n 20 -T 1 --trace "$1" "$MODEL"
    wait_for " idle |"
    type_text "Tell me a story."
    keys Enter
    wait_for " idle |"
    $2
    type_text "/quit"
    keys Enter
    wait_exit
    run_llmchat --replay "$1" "$MODEL"
    assert_status 0
    assert_file_contains "bit for bit" "$T/out" "logits: the trace's, bit for bit"
}

# a knock-out, then a rewind (r in Tokens) 7 positions back: the recurrent state made
# again from its checkpoint runs the positions before the rewind as they ran (without it)
knock_then_rewind() {
    type_text "/knock head 0:1"
    keys Enter
    wait_for "heads out L1H2"
    keys Tab Tab Left Left Left Left Left Left Left r p
    wait_for " idle |"
    keys Tab Tab
}
replayed_after "$T/rw.jsonl" knock_then_rewind
pass "a rewind after a knock-out runs the positions before it again as they ran: the trace replays bit for bit"

# the other order: Backspace takes reply tokens back (and pauses), then /knock, then p
take_back_then_knock() {
    keys Tab BSpace BSpace BSpace BSpace BSpace BSpace BSpace
    wait_for "paused"
    keys Tab Tab Tab
    type_text "/knock head 0:1"
    keys Enter
    wait_for "heads out L1H2"
    keys Tab p
    wait_for " idle |"
    keys Tab Tab Tab
}
replayed_after "$T/bk.jsonl" take_back_then_knock
pass "tokens taken back, then a knock-out: the positions before run again as they ran"
