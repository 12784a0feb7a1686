#!/bin/sh
# e2e_debugger_tui.sh — the TUI's debugger views driven in tmux as a person does it,
# on the bundled chat260K: Tokens shows, after a sampled decision, each candidate's
# final probability or the stage that removed it; /set changes the sampler from the
# next token (the status line shows it) and refuses bad names and values; the
# Attention pane's views ('v'): the logit lens at the reply's " named" shows the
# requested name rising through the layers to the top at the last one, the lens grid,
# every head of a layer, the layers x heads grid (the arrows move its cell) and Enter
# from it to the heatmap.
# --attention-mib bounds the rows kept. Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

model=$BUNDLED/chat260K.bin

# ---- what the sampler did to each candidate ----
start -- -m tui -s 3 -k 5 -t 1.5 -i "Tell me a story about a dog named Lily." "$model"
wait_for "idle |"
wait_for "T 1.5 k 5 p 0.9"
keys Tab Tab
wait_for "(newest)"
keys Left
wait_for "sampler: T 1.5 k 5 p 0.9"
wait_for " final"
screen | grep -q ' top-k│' || show_screen_and_fail "no candidate is marked as removed by top-k"
screen | grep -q '^.*│> 1 .*%│' || show_screen_and_fail "the chosen candidate shows no final probability"
pass "Tokens shows each candidate's final probability or the stage that removed it"

# ---- /set ----
keys Tab Tab
type_text "/set temperature 0.3"
keys Enter
wait_for "[from the next token: temperature 0.3  top-k 5"
wait_for "T 0.3 k 5 p 0.9"
type_text "/set top-p 7"
keys Enter
wait_for "[/set: top-p must be in (0, 1], got '7'"
type_text "/set bogus 1"
keys Enter
wait_for "[/set: unknown setting 'bogus'"
type_text "/set"
keys Enter
wait_for "[temperature 0.3  top-k 5  top-p 0.9  min-p 0"
screen | grep -q "T 0.3 k 5 p 0.9" || show_screen_and_fail "a refused /set changed the status line"
pass "/set changes the sampler (status line), refuses bad names and values, shows all"

keys C-d
wait_exit
assert_status 0

# ---- the Attention pane's views, at the reply's " named" ----
start -- -m tui -t 0 -i "Tell me a story about a dog named Lily." "$model"
wait_for "idle |"
newest=$(screen | grep -o '[0-9]*/512 |' | head -n 1 | cut -d/ -f1)
[ -n "$newest" ] || show_screen_and_fail "no position count in the status line"
keys Tab Tab Tab
wait_for "layer 1/5  head 1/8"
p=$((newest - 1))
found=
while [ "$p" -gt 0 ]; do
    keys Left
    p=$((p - 1))
    wait_for "pos $p of 0-"
    if screen | grep -q "id [0-9]*  ␣named  gen"; then
        found=$p
        break
    fi
done
[ -n "$found" ] || show_screen_and_fail "no generated ' named' in the reply"
keys v
wait_for "logit lens  pos $found ␣named → ␣Lily"
screen | grep -q '│5   ␣Lily [0-9]' || show_screen_and_fail "the last layer's top token is not ␣Lily"
screen | grep -q '│1   ␣named' || show_screen_and_fail "the first layer does not predict its input"
screen | grep '│[234]   ' | grep -q '␣Lily' || show_screen_and_fail "␣Lily is in no middle layer's top 3"
pass "the logit lens at ' named' shows the name entering the top 3 in a middle layer"

keys v
wait_for "logit lens grid"
screen | grep -q '│5 .*␣Lily' || show_screen_and_fail "the lens grid's last layer does not reach ␣Lily"
keys v
wait_for "heads of layer 1/5 at pos $found"
screen | grep -q '│H8 .*H [0-9.]* .*@[0-9]' || show_screen_and_fail "head 8 shows no entropy and top key"
keys v
wait_for "layers x heads  pos $found"
screen | grep -q '│L5 ' || show_screen_and_fail "the grid has no layer 5"
keys e
wait_for "BOS weight (e)"
# the arrows move the grid's cell (Down: the next layer, Right: the next head), not
# the selected position
keys Down Down Right Right Right
wait_for "layers x heads  pos $found"
keys Enter
wait_for "layer 3/5  head 4/8"
wait_for "pos $found → "
pass "the lens grid, the heads of a layer, the layers x heads grid (arrows move its cell), Enter to the heatmap"
keys Tab
keys C-d
wait_exit
assert_status 0

# ---- --attention-mib: the rows of a long prompt's first positions are not kept ----
# chat260K's rows take 160 bytes a key: 1 MiB holds those of about 15 positions near
# 420; the default holds the whole context's. Home and a hundred Right in Tokens
# select position 100, where the heatmap's window ends.
long=$("$PYTHON" -c 'print(" ".join(["Tom had a red ball and a big dog."] * 30))')
for mib in 1 default; do
    set --
    [ "$mib" = default ] || set -- --attention-mib "$mib"
    start -- -m tui -t 0 -n 4 "$@" -i "$long" "$model"
    wait_for "idle |"
    keys Tab Tab
    wait_for "(newest)"
    # shellcheck disable=SC2046 # a hundred words: Right, Right, ...
    keys Home $(yes Right | head -n 100)
    wait_for "pos 100 "
    # the heatmap's footer, the keys position 100 attends to most: its rows are kept, or
    # computed again when selected
    wait_for "pos 100 → "
    if [ "$mib" = default ]; then
        screen | grep -q "(not kept)" && show_screen_and_fail "the default block dropped rows"
    else
        wait_for "(not kept)" # the rows above it were not
    fi
    keys Tab Tab
    keys C-d
    wait_exit
    assert_status 0
done
pass "--attention-mib 1: a long prompt's first rows are not kept, the selected one's computed again; the default keeps them"
