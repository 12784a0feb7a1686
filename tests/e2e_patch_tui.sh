#!/bin/sh
# e2e_patch_tui.sh — the patching view driven in tmux as a user would, at 80x24, on
# stories260K (fp32 weights, greedy, the llama2 template):
#   - /patch with a text of another length says both token counts in one line and
#     opens nothing; /patch before any message says there is none;
#   - /patch TEXT opens the grid: a row per layer and one for the stream after the last
#     (L0-L5), the clean prompt's tokens over the columns and the corrupted one's under
#     them where they differ; the two runs' top token agrees here, so the view says it
#     measures the KL divergence instead (as a fraction of the corrupted run's);
#   - the properties any model has: L0 at a position where the prompts agree is the
#     corrupted run (1.00), the stream after the last layer at the last position is the
#     clean run (0.00);
#   - Enter on that cell lists its patched run's top tokens: the clean run's, token for
#     token and probability for probability; the corrupted run's column differs;
#   - s runs the grid again at the next site (attn_out: L0-L4), Esc closes the list,
#     then the view; P reopens it; no line is wider than the screen.
# Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

M=$DATA/stories260K.gguf
CLEAN='Lily and Tim went to the park. Lily said to'
CORRUPT='Tim and Lily went to the park. Lily said to'

# every_line_fits COLS: no line of the screen is wider than COLS.
every_line_fits() {
    screen | while IFS= read -r line; do
        n=$(printf '%s' "$line" | wc -m)
        [ "$n" -le "$1" ] || { echo "$line"; exit 1; }
    done || show_screen_and_fail "a line is wider than $1 columns"
}

start -- --no-config --weights f32 -s 1 -t 0 -n 4 "$M"
wait_for " idle |"
$TM resize-window -t t -x 80 -y 24
type_text "/patch $CORRUPT"
keys Enter
wait_for "no message in the context to patch"
pass "/patch before any message says there is none"

type_text "$CLEAN"
keys Enter
wait_for "reply cut at the step limit"
type_text "/patch Tim went to the park."
keys Enter
wait_for "the clean prompt is"
screen | tr -d '\n│' | grep -Eq "the clean prompt is [0-9]+ tokens and the corrupted [0-9]+" ||
    show_screen_and_fail "the two token counts are not said"
screen | grep -q "^patching" && show_screen_and_fail "a grid opened for prompts of two lengths"
pass "/patch with a text of another length says both token counts and opens nothing"

type_text "/patch $CORRUPT"
keys Enter
wait_for "KL / "
wait_for " 180 cells"
for l in 0 1 2 3 4 5; do
    screen | grep -q "^L$l " || show_screen_and_fail "no row for L$l"
done
every_line_fits 80
keys Home
wait_for "<s>"
screen | grep -Eq "^cl[a-z]* *.*␣Li" || show_screen_and_fail "the clean prompt's tokens are not over the columns"
screen | grep -Eq "^cor[a-z]* +.*␣Tim" || show_screen_and_fail "the corrupted prompt's differing token is not under them"
screen | grep -Eq "^L0  1\.00 1\.00 " || show_screen_and_fail "L0 where the prompts agree is not the corrupted run"
keys End
keys Down Down Down Down Down Down
sleep 0.3
screen | grep -Eq "^L5 .* 0\.00 *$" || show_screen_and_fail "the stream after the last layer at the last position is not the clean run"
pass "/patch TEXT: the grid of L0-L5 over the prompt's tokens; L0 is the corrupted run where the prompts agree, L5 at the last position the clean run"

keys Enter
wait_for "patched L5 pos "
screen >"$T/list"
# the three columns, each "prob  piece" (pieces show spaces as ␣), two or more spaces
# apart: the clean run's and the patched run's agree
sed -n '/^clean run/,/^arrows/p' "$T/list" | sed '1d;$d; s/^ *//' | grep . >"$T/rows"
[ "$(wc -l <"$T/rows")" -ge 3 ] || show_screen_and_fail "the list has fewer than 3 tokens"
awk -F'   *' '{ print $1, $2 }' "$T/rows" >"$T/clean"
awk -F'   *' '{ print $3, $4 }' "$T/rows" >"$T/patched"
awk -F'   *' '{ print $5, $6 }' "$T/rows" >"$T/corrupt"
cmp -s "$T/clean" "$T/patched" ||
    fail "the patched run's tokens are not the clean run's: $(paste "$T/clean" "$T/patched")"
cmp -s "$T/clean" "$T/corrupt" && fail "the corrupted run's tokens are the clean run's"
grep -q '%' "$T/clean" || fail "no probabilities in the list"
every_line_fits 80
pass "Enter on a cell lists its patched run's top tokens beside the clean and corrupted runs'"

keys s
wait_for "attn_out"
wait_for " 150 cells"
screen | grep -q "^L5 " && show_screen_and_fail "attn_out has a row past the last layer"
screen | grep -q "^L4 " || show_screen_and_fail "attn_out has no row for L4"
pass "s runs the grid again at the next site"

keys m
tries=0
until screen | tr -d '\n│ ' | grep -q "thegridstaysKL"; do
    tries=$((tries + 1))
    [ "$tries" -lt 100 ] || show_screen_and_fail "m did not say why the grid stays KL"
    sleep 0.1
done
screen | grep -q " 150 cells" || show_screen_and_fail "m ran the grid again"
pass "m where the logit difference fell back to KL says why and keeps the grid"

keys Escape
wait_gone "patching\|attn_out"
wait_for "┌ Conversation"
screen | tr -d '\n│' | grep -q "the grid measures the KL divergence instead" ||
    show_screen_and_fail "the switch to the KL divergence is not said"
keys Tab
keys P
wait_for "attn_out"
keys Escape
wait_gone "attn_out"
pass "Esc closes the view, P opens it again"

# with an intervention in force the grid runs the model as it is, and says so
keys Tab Tab Tab # the input line
type_text "/knock head 0:0"
keys Enter
wait_for "heads out L1H1"
type_text "/patch $CORRUPT"
keys Enter
wait_for " cells"
keys Escape
wait_for "┌ Conversation"
screen | tr -d '\n│' | grep -q "the grid runs the model as it is, without the interventions in force (heads out L1H1)" ||
    show_screen_and_fail "/patch under a knock-out does not say it leaves it out"
pass "/patch under an intervention says the grid runs the model without it"

# --view of a patching trace (-m patch --trace): the grid as the run printed it
run_llmchat -m patch --weights f32 --clean "$CLEAN" --corrupt "$CORRUPT" --answer Tim \
    --wrong Lily --layers 0-2 --json --trace "$T/patch.jsonl" "$M" </dev/null
assert_status 0
cp "$T/out" "$T/patch.json"
$TM kill-server >/dev/null 2>&1
sleep 0.2
start -- --view "$T/patch.jsonl"
wait_for "viewing patch.jsonl"
$TM resize-window -t t -x 80 -y 24
wait_for "resid_pre"
for l in 0 1 2; do
    screen | grep -q "^L$l " || show_screen_and_fail "the trace's grid has no row for L$l"
done
screen | grep -q "^L3 " && show_screen_and_fail "the trace's grid has a row past its layers"
# the cell of layer 0 at position 1 (where the prompts differ), as the run printed it
want=$(sed 's/.*"grid": \[\[\([^],]*\), \([^],]*\),.*/\2/' "$T/patch.json")
keys Home
sleep 0.3
shown=$(screen | sed -n 's/^L0  *\([^ ]*\)  *\([^ ]*\) .*/\2/p')
awk -v a="$want" -v b="$shown" 'BEGIN { d = a - b; exit !(d < 0.01 && d > -0.01) }' ||
    show_screen_and_fail "L0 position 1 shows '$shown', the run printed $want"
keys Enter
wait_for "a trace keeps no cell's tokens"
keys s
wait_for "cannot run again"
every_line_fits 80
pass "--view of a patching trace shows its grid (L0-L2, the cells as -m patch printed them); Enter and s say a trace cannot run cells"
