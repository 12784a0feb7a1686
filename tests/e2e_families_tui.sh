#!/bin/sh
# e2e_families_tui.sh — the debugger on a family that is not llama, driven in tmux as a
# person does it: a tiny Gemma-2-shaped model (tests/make_family_gguf: a sliding window
# of 4 keys on layers 1 and 3, post-norms, soft-caps 50 and 30; stories260K's
# vocabulary). The model note names the architecture; the heatmap says "window 4" on a
# sliding layer and draws the keys outside the window as dashes, and not on a global
# one; the attribution view's parts add up to the logit before the soft-cap, and it says
# by how much they miss the logit (the residual) and that the post-norms' scales are
# held; a head knocked out shows "out"; the trace records the windows, --view shows
# them without the model, --replay reproduces the run, and a control vector changes
# the reply; on a tiny Gemma 4 with per-layer inputs the attribution grid has a PLE
# column and the parts still cap to the logit; Qwen3-, Gemma-3- and Phi-4-mini-shaped
# models with their real vocabularies
# chat with the templates their files carry; an unsupported architecture gets one line
# naming what it lacks; llmchat-convert refuses to write one. Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$T/gemma2-tiny.gguf
"${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" gemma2 "$MODEL" "$DATA/stories260K.gguf" ||
    fail "make_family_gguf failed"
# Gemma 4 in small with per-layer inputs (for the attribution's PLE parts)
"${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" gemma4 "$T/gemma4.gguf" "$DATA/stories260K.gguf" ||
    fail "make_family_gguf gemma4 failed"

attn() {
    screen | sed -n '/┌ Attention/,/└/p'
}

start -- --no-config -s 1 -t 0 -n 12 --weights f32 --kv-cache f32 --trace "$T/run.jsonl" \
    --trace-attn -i "Once upon a time there was a little girl named Lily" "$MODEL"
wait_for " idle |"
wait_for "(gemma2, "
pass "the model note names the architecture"

# ---- the heatmap: layer 1 slides over 4 keys, layer 2 sees them all ----
keys Tab Tab Tab
wait_for "layer 1/4  head 1/4  window 4"
attn | grep -q '│[^│]* -----' || show_screen_and_fail "no key outside the window is drawn as a dash"
keys ']'
wait_for "layer 2/4  head 1/4  linear"
attn | grep -q 'window' && show_screen_and_fail "layer 2 has no window, but the pane says one"
attn | grep -q '│[^│]* ---' && show_screen_and_fail "layer 2 draws keys as outside a window"
keys '['
wait_for "layer 1/4  head 1/4  window 4"
pass "the heatmap says 'window 4' on a sliding layer and draws the keys outside it as dashes"

# ---- attribution: post-norms and the final soft-cap ----
keys v v v v v
wait_for "attribution to "
wait_for "soft-capped: logit = 30 tanh(sum / 30)"
wait_for "post-norms: scales as at this position"
line=$(attn | grep -o 'parts sum [-0-9.]*, logit [-0-9.]*, residual [-+0-9.]*' | head -n 1)
[ -n "$line" ] || show_screen_and_fail "no parts sum, logit and residual"
set -- $(printf '%s\n' "$line" | sed 's/parts sum \(.*\), logit \(.*\), residual \(.*\)/\1 \2 \3/')
awk -v s="$1" -v l="$2" -v r="$3" 'BEGIN {
    e = exp(2 * s / 30); capped = 30 * (e - 1) / (e + 1)
    d = l - capped; d = d < 0 ? -d : d; q = l - s - r; q = q < 0 ? -q : q
    exit !(d < 0.002 && q < 0.002) }' ||
    show_screen_and_fail "the logit $2 is not 30 tanh($1 / 30), or the residual $3 not its difference"
pass "attribution: the parts sum $1 caps to the logit $2 (residual $3), the post-norms noted"

# ---- a knock-out from the attribution grid: the sum still caps to the logit ----
keys x
wait_for "L1 H1 knocked out"
wait_for "heads out L1H1"
attn | grep -q "L1 .* out " || show_screen_and_fail "the grid does not mark L1 H1 out"
keys x
wait_for "L1 H1 back in"
pass "x knocks the head out: the grid says so"

keys q
wait_exit

# ---- the trace: windows in its header, --view without the model, --replay ----
grep -q '"arch":"gemma2","windows":\[4,0,4,0\]' "$T/run.jsonl" ||
    fail "the trace's header lacks the architecture and windows: $(head -c 300 "$T/run.jsonl")"
start -- --no-config --view "$T/run.jsonl"
keys Tab Tab Tab
wait_for "layer 1/4  head 1/4  window 4"
attn | grep -q '│[^│]* -----' || show_screen_and_fail "--view draws no key outside the window"
keys q
pass "--view shows the windows from the trace's header"

run_llmchat --no-config --weights f32 --kv-cache f32 --replay "$T/run.jsonl" "$MODEL" </dev/null
assert_status 0
cat "$T/out" "$T/err" | grep -q "reproduced: every position ran" || fail "the replay did not reproduce the run"
pass "--replay reproduces the run on the family"

# ---- a control vector changes the reply ----
run_llmchat --no-config -m generate -t 0 -n 8 --weights f32 -i "Once upon a time" "$MODEL" </dev/null
assert_status 0
cp "$T/out" "$T/plain"
run_llmchat --no-config -m generate -t 0 -n 8 --weights f32 -i "Once upon a time" \
    --control-vector "$DATA/control_vector/happy.gguf:2" "$MODEL" </dev/null
assert_status 0
cmp -s "$T/out" "$T/plain" && fail "the control vector changed nothing"
pass "a control vector steers the family's reply"

# ---- Gemma 4 with per-layer inputs: a PLE column, and the parts still add up ----
start -- --no-config -s 1 -t 0 -n 6 --weights f32 --kv-cache f32 \
    -i "Once upon a time there was a little girl named Lily" "$T/gemma4.gguf"
wait_for " idle |"
keys Tab Tab Tab v v v v v
wait_for "attribution to "
attn | grep -q 'MLP *PLE' || show_screen_and_fail "the attribution grid has no PLE column"
attn | grep -q '│L1 .*[-+][0-9]*\.[0-9][0-9] *[-+][0-9]*\.[0-9][0-9] *│' ||
    show_screen_and_fail "layer 1's row has no MLP and PLE cells"
line=$(attn | grep -o 'parts sum [-0-9.]*, logit [-0-9.]*, residual [-+0-9.]*' | head -n 1)
[ -n "$line" ] || show_screen_and_fail "no parts sum, logit and residual"
set -- $(printf '%s\n' "$line" | sed 's/parts sum \(.*\), logit \(.*\), residual \(.*\)/\1 \2 \3/')
awk -v s="$1" -v l="$2" 'BEGIN {
    e = exp(2 * s / 30); capped = 30 * (e - 1) / (e + 1)
    d = l - capped; d = d < 0 ? -d : d; exit !(d < 0.002) }' ||
    show_screen_and_fail "with per-layer inputs the parts sum $1 does not cap to the logit $2"
keys q
wait_exit
pass "gemma4's per-layer inputs are attribution parts (a PLE column); the sum $1 caps to the logit $2"

# ---- Gemma 4 with experts beside the dense feed-forward (26B-A4B's layout) ----
"${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" gemma4-moe "$T/gemma4-moe.gguf" \
    "$DATA/stories260K.gguf" || fail "make_family_gguf gemma4-moe failed"
start -- --no-config -s 1 -t 0 -n 6 --weights f32 --kv-cache f32 \
    -i "Once upon a time there was a little girl named Lily" "$T/gemma4-moe.gguf"
wait_for " idle |"
keys Tab Tab Tab v v v v v
wait_for "attribution to "
attn | grep -Eq 'L[1-5] E[1-8] [-+][0-9]' ||
    show_screen_and_fail "the largest parts name no expert"
line=$(attn | grep -o 'parts sum [-0-9.]*, logit [-0-9.]*' | head -n 1)
[ -n "$line" ] || show_screen_and_fail "no parts sum and logit"
set -- $(printf '%s\n' "$line" | sed 's/parts sum \(.*\), logit \(.*\)/\1 \2/')
awk -v s="$1" -v l="$2" 'BEGIN {
    e = exp(2 * s / 30); capped = 30 * (e - 1) / (e + 1)
    d = l - capped; d = d < 0 ? -d : d; exit !(d < 0.002) }' ||
    show_screen_and_fail "with experts beside the feed-forward the parts sum $1 does not cap to the logit $2"
keys Tab # back to the input line
type_text "/experts"
keys Enter
wait_for "8 experts, 2 chosen a token"
for l in 1 2 3 4 5; do
    screen | grep -Eq "^ L$l  #[1-8] [01]\.[0-9][0-9]  #[1-8] [01]\.[0-9][0-9] " ||
        show_screen_and_fail "the experts view has no row for layer $l"
done
keys q
wait_gone "experts  pos "
type_text "/quit"
keys Enter
wait_exit
pass "gemma4 with experts: attribution names them and the sum $1 caps to the logit $2; the experts view has every layer's two"

# ---- each family chats with the template its file carries ----
# chat_template NAME VOCAB TEMPLATE MARKER: a NAME-shaped model with VOCAB's tokenizer
# and template; a chat turn's trace names TEMPLATE and its prompt holds MARKER's token.
chat_template() {
    [ -f "${LLMCHAT_BUILDDIR:-.}/tests/$2" ] ||
        hard_error "tests/$2 is missing (make check decompresses tests/data/*.gguf.gz)"
    "${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" "$1" "$T/$1-chat.gguf" \
        "${LLMCHAT_BUILDDIR:-.}/tests/$2" || fail "make_family_gguf $1 $2 failed"
    printf 'Hello there\n' >"$T/turn"
    run_llmchat --no-config -m chat -t 0 -n 3 --trace "$T/$1-chat.jsonl" "$T/$1-chat.gguf" <"$T/turn"
    assert_status 0
    "$PYTHON" - "$T/$1-chat.jsonl" "$3" "$4" <<'PYEOF' || fail "$1 did not chat with its template $3"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
pieces = [r.get("piece") for r in lines[1:]]
if lines[0].get("template") != sys.argv[2] or sys.argv[3] not in pieces:
    sys.exit("template %r, pieces %r" % (lines[0].get("template"), pieces))
PYEOF
}
chat_template qwen3 qwen3-vocab.gguf qwen3 '<|im_start|>'
chat_template gemma3 gemma3-vocab.gguf gemma '<start_of_turn>'
chat_template phi3-partial phi4-mini-vocab.gguf phi4-mini '<|user|>'
pass "qwen3, gemma3 and phi3 (Phi-4-mini-shaped) chat with their files' templates"

# ---- an architecture llmchat does not run: one line, exit 1 ----
"${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" qwen2 "$T/moe.gguf" "$DATA/stories260K.gguf" \
    --arch deepseek || fail "make_family_gguf --arch failed"
run_llmchat --no-config -m generate -n 4 -i "Hello" "$T/moe.gguf" </dev/null
assert_status 1
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "not one line: $(cat "$T/err")"
assert_file_contains "refusal" "$T/err" "architecture 'deepseek' is not supported: shared experts beside the routed ones (ffn_*_shexp) and dense leading layers"
pass "an unsupported architecture gets one line naming what it lacks: $(cat "$T/err")"

# ---- llmchat-convert writes the llama architecture only ----
CONVERT=$(dirname "$LLMCHAT_BIN")/llmchat-convert
for out in "$T/conv.gguf" "$T/conv.bin"; do
    run_program llmchat-convert "$CONVERT" "$MODEL" "$out" </dev/null
    assert_status 1
    assert_file_contains "convert $out" "$T/err" "a gemma2 model"
    [ ! -e "$out" ] || fail "llmchat-convert wrote $out"
done
pass "llmchat-convert refuses a gemma2 model, saying why"
