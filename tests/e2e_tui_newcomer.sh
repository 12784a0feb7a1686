#!/bin/sh
# e2e_tui_newcomer.sh — what a new user trips on in the TUI's first minutes (issue 21),
# driven in tmux as in e2e_tui.sh. Checks: a reply that cannot start (a 5-token
# context) leaves the status line idle and q quits without asking; the help overlay
# shows every text whole at 120x40 and 80x24; Tokens' heading counts the rows it
# shows and keeps the chosen token's line; r at the newest position reopens the reply;
# the two probabilities of a token say which is before and which after the sampler;
# the lens table's numbers and the lens grid's legend are whole; /step sends a message
# paused, its hint goes when p (from the empty input line) resumes it, and the next
# message runs unpaused; keys with nothing to do say why on the status line; slow
# motion from the option, the s key and /set; the status line keeps its fields in
# one order whatever the seed. Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin

# status: the status line (the screen's last line but one).
status() {
    screen | tail -n 2 | head -n 1
}

# token_rows: the Tokens pane's candidate rows ("││> 1 ␣Once  14.96  68.5% ███").
token_rows() {
    screen | grep -o '││[ >][ 0-9][0-9] .*'
}

# ---- a reply that cannot start: the run state is reset ----
start -- -m tui -c 5 -s 7 -z "$TOK" "$MODEL"
wait_for "idle |"
type_text "hi"
keys Enter
wait_for "[could not start the reply"
wait_for " idle |"
case $(status) in *generating*) show_screen_and_fail "the status line still says generating" ;; esac
keys Tab q
wait_exit
assert_status 0
pass "a reply that cannot start: the status line says idle and q quits without asking"

# ---- the help overlay: no text is cut (sampling: the sampler's line has a p) ----
start -- -m tui -s 7 -z "$TOK" "$MODEL"
wait_for "idle |"
keys '?'
wait_for "Help: keys"
for text in "lens grid, heads, layers x" "attribution: next / prev target" "heads grid: open in heatmap" "attention capture on/off" \
    "slow motion: off/100/300/1000 ms"; do
    wait_for "$text"
done
keys x
wait_gone "Help: keys"
$TM resize-window -t t -x 80 -y 24
wait_for "Attention"
keys '?'
wait_for "Help: keys"
: >"$T/help80"
for page in 1 2 3 4; do
    screen >>"$T/help80"
    screen | grep -q "Page $page/$page" && break
    screen | grep -q "Page [0-9]/" || break
    keys Space
    wait_for "Page $((page + 1))/"
done
for word in "attention capture" "on/off" "heads, attribution" "heatmap"; do
    grep -q "$word" "$T/help80" || fail "the 80x24 help overlay does not show [$word]"
done
grep '…' "$T/help80" | grep -q '│ *[^ ]' && {
    sed 's/^/  |/' "$T/help80" >&2
    fail "the 80x24 help overlay cuts a text"
}
keys x
$TM resize-window -t t -x 120 -y 40
wait_gone "Help: keys"
pass "the help overlay shows every text whole at 120x40 and 80x24"

# ---- before any token, the Attention pane says which view v chose ----
keys Tab Tab Tab
wait_for "no tokens yet"
keys v v v v v
wait_for "v chose attribution: shown once there are tokens"
keys v
wait_gone "v chose"
keys Tab
pass "before any token, the Attention pane names the view v chose"

# ---- a reply; the Tokens pane; r at the newest position ----
type_text "Tell me a story about Sue."
keys Enter
wait_for "Assistant: "
wait_for " idle |"
keys Tab Tab
wait_for "(newest)"
wait_for "before the sampler"
keys Left
wait_for "after the sampler)"
pass "the two probabilities say which is before and which after the sampler"
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22; do
    keys +
done
wait_for " of 32 (no room)" # every + taken (the heading counts what was asked for)
shown=$(token_rows | wc -l)
said=$(screen | grep -o 'top [0-9]*' | head -n 1 | grep -o '[0-9]*')
assert_eq "Tokens' heading against its rows" "$said" "$shown"
[ "$shown" -lt 32 ] || show_screen_and_fail "the test expected fewer rows than asked for"
screen | grep -q "top $shown of 32 (no room)" || show_screen_and_fail "the heading does not say rows were left out"
keys End
wait_for "(newest)"
keys Left
wait_for "of 0-"
s=$(screen)
if ! printf '%s\n' "$s" | grep -q '││>'; then
    printf '%s\n' "$s" | grep -q '> rank [0-9]*:' || show_screen_and_fail "the chosen token's line is gone"
fi
pass "Tokens' heading counts the $shown rows it shows"

keys End
wait_for "(newest)"
keys +
keys r
wait_for "paused |"
screen | grep -q "cannot rewind" && show_screen_and_fail "r at the newest position was refused"
keys p
wait_for " idle |"
pass "r at the newest position reopens the reply; p lets it end again"

# r before the reply: refused in the positions Tokens shows (its newest is the reply's last)
keys Home
wait_for "pos 0 of 0-"
newest=$(screen | grep -o 'pos 0 of 0-[0-9]*' | head -n 1 | sed 's/.*-//')
keys r
wait_for "r steers the last reply, positions "
screen | tr -d '\n│' | grep -q -- "-$newest: position 0 is before" ||
    show_screen_and_fail "the refusal's positions are not those of Tokens (0-$newest)"
pass "r before the reply is refused in Tokens' positions"

# ---- the lens: whole numbers, and the grid's legend ----
keys Tab
wait_for "layer 1/"
keys Left
keys v
wait_for "logit lens  pos"
screen | grep '│[1-5]   ' >"$T/lens"
[ "$(wc -l <"$T/lens")" -ge 5 ] || show_screen_and_fail "the lens table has no five layers"
grep -v '│[1-5]   [^ ]* *[<0-9.]*%' "$T/lens" && show_screen_and_fail "a lens cell lost its number"
grep -q '[0-9]…' "$T/lens" && show_screen_and_fail "a lens number is cut"
keys v
wait_for "logit lens grid"
wait_for "underlined: the token that came next"
pass "the lens table's numbers and the lens grid's legend are whole"

# ---- keys that do nothing say why ----
keys v v
wait_for "layers x heads"
keys v
wait_for "attribution to "
keys v
wait_for "layer 1/"
keys e
wait_for "e works in the heads views"
keys n
wait_for "n steps a paused reply: none is running"
keys Escape
wait_for "nothing to stop: no reply is running"
keys End
keys Right
wait_for "already at the newest position"
keys x
wait_for "x knocks a head out in the heads and attribution views: v shows them"
keys z
wait_for "z does nothing in Attention"
keys F5
wait_for "F5 does nothing in Attention" # a key code by the name the help gives keys
pass "e and x outside the heads views, n with no paused reply, Esc with no reply, Right at the end, an unbound key say why"

# ---- /step: a message that starts paused; the hint goes when it resumes ----
keys Tab
type_text "/step Tell me a story about Tom."
keys Enter
wait_for "[paused: n generates a token, a digit chooses one, p resumes]"
wait_for "paused |"
keys n
keys n
keys p # from the empty input line: the reply runs
wait_for " idle |"
wait_gone "[paused: n generates a token"
type_text "Tell me a story about Max."
keys Enter
wait_for "You: Tell me a story about Max."
wait_for " idle |"
screen | grep -q "\[paused:" && show_screen_and_fail "the next message started paused"
pass "/step sends a message paused; p from the input line resumes it, the hint goes; the next message runs"

# ---- the status line: one order, whatever the seed ----
type_text "/set seed 12345678901234"
keys Enter
wait_for "| seed 12345678901234" # the status line, not the input line that typed it
st=$(status)
case $st in " idle | chat260K | "*) ;; *) show_screen_and_fail "the status line does not start with the state and the model: [$st]" ;; esac
printf '%s\n' "$st" | grep -q 'idle | chat260K | .*F32→Q8_0 (299 KB) | .*llama2 | .*pos [0-9]*/512 | .*T 1 p 0.9 | seed 12345678901234' ||
    show_screen_and_fail "the status line's fields are out of order: [$st]"
$TM resize-window -t t -x 80 -y 24
wait_for "Attention"
st=$(status)
printf '%s\n' "$st" | grep -q '^ idle | chat260K | .*pos [0-9]*/512 | .*T 1 p 0.9' ||
    show_screen_and_fail "at 80 columns the status line lost its order: [$st]"
$TM resize-window -t t -x 120 -y 40
pass "the status line keeps its order and drops the least important fields first"

# ---- slow motion: the s key and /set ----
keys Tab
keys s
wait_for "slow motion: 100 ms after each token"
keys Tab Tab Tab # any key: the status line shows its fields again
wait_for "slow 100 ms"
type_text "/set slow-motion 300"
keys Enter
wait_for "slow 300 ms"
type_text "/set slow-motion 0"
keys Enter
wait_gone "slow 300 ms"
keys C-d
wait_exit
assert_status 0
pass "slow motion from the s key and /set slow-motion, shown on the status line"

# ---- --slow-motion: a long reply can be paused mid-way ----
start -- -m tui -n 0 --slow-motion 200 -z "$DATA/tok512.bin" "$DATA/stories260K.bin"
wait_for "slow 200 ms"
type_text "Once upon a time there was a dog"
keys Enter
wait_for "generating |"
keys p
wait_for "paused |"
wait_for "[paused: n generates a token"
keys Escape
wait_for "stopped |"
wait_gone "[paused: n generates a token"
keys C-d
wait_exit
assert_status 0
pass "--slow-motion slows a reply enough to pause it from the input line"
