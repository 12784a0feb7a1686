#!/bin/sh
# e2e_tui_fit.sh — what fits where at the sizes people use (issue 31), driven in tmux as
# in e2e_tui.sh. At 80x24 and 100x30: the Tokens pane's labels are whole, in shorter
# words where the pane is narrow (paused with a digit to choose, at a sampled position
# and at one of the prompt); the layers x heads grid shows every cell with its digits ("1.55", ".93",
# not "1.…"); the attribution view's head cells keep two digits ("+.12", not "+0"), and
# where heads or layers do not fit, scroll markers say so and the cursor keys scroll
# them. At 60x20 the help overlay never splits an entry across columns and names every
# view. Nothing asserts timing: every wait polls the screen up to a deadline.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin

# no_cut TITLE WHAT: no line of the pane ends cut ("…").
no_cut() {
    pane "$1" >"$T/pane"
    [ -s "$T/pane" ] || show_screen_and_fail "no $1 pane on the screen"
    if grep -q '…' "$T/pane"; then
        sed 's/^/  |/' "$T/pane" >&2
        show_screen_and_fail "$2: a line of $1 is cut"
    fi
}

# grid_cells: every layer row of the layers x heads grid has its 8 heads' numbers,
# each with two digits at least ("1.6", ".93", "1.55").
grid_cells() {
    pane Attention | "$PYTHON" -c '
import re, sys
rows = [l for l in sys.stdin.read().split("\n") if re.match(r"L[1-5] ", l)]
ok = len(rows) == 5 and all(
    len(re.findall(r"(?<![\d.])(\d?\.\d\d?|\d\.\d\d?)(?![\d.])", r)) == 8 and "\u2026" not in r
    for r in rows)
sys.exit(0 if ok else 1)
'
}

# attribution_cells: the head cells of the attribution view's layer rows keep two
# digits ("+.12", "-1.3"), never a bare "+0" or "-0".
attribution_cells() {
    pane Attention | "$PYTHON" -c '
import re, sys
rows = [l for l in sys.stdin.read().split("\n") if re.match(r"L[1-5]", l)]
cells = [c for r in rows for c in re.findall(r"[+-][\d.]+", r)]
bare = [c for c in cells if len(re.sub(r"\D", "", c)) < 2]
sys.exit(0 if rows and cells and not bare else 1)
'
}

for size in 80x24 100x30; do
    cols=${size%x*}
    rows=${size#*x}
    start -- -m tui -s 7 -z "$TOK" "$MODEL"
    wait_for "idle |"
    $TM resize-window -t t -x "$cols" -y "$rows"
    wait_for "Attention"
    # ---- Tokens while a reply waits for a digit ----
    type_text "/step Tell me a story about Lily."
    keys Enter
    wait_for "paused |"
    keys n n n
    wait_for "digit"
    # "digit" is also in the conversation's pause note: Tokens may be a frame behind it
    for _ in $(seq 50); do
        pane Tokens | grep -q "model gave it [0-9.]*% (rank [0-9]*)" && break
        sleep 0.1
    done
    no_cut Tokens "$size, paused"
    pane Tokens | grep -q "model gave it [0-9.]*% (rank [0-9]*)" ||
        show_screen_and_fail "$size: Tokens does not say what the model gave the token"
    # ---- and at a sampled position of the reply ----
    keys p
    wait_for " idle |"
    keys Tab Tab Left Left
    wait_for "of 0-"
    wait_for "draw 0."
    no_cut Tokens "$size, a sampled position"
    keys Home Right # a position of the prompt: the next token came from it
    wait_for "from the prompt"
    no_cut Tokens "$size, a position of the prompt"
    pass "$size: the Tokens pane's labels fit, paused, at a sampled position and in the prompt"

    # ---- the layers x heads grid: every cell keeps its digits ----
    keys Tab v v v v
    wait_for "pos "
    wait_for "L5 "
    grid_cells || show_screen_and_fail "$size: the layers x heads grid cuts its numbers"
    pass "$size: the layers x heads grid shows every head's number"

    # ---- the attribution view: two digits a head; markers where heads do not fit ----
    keys v
    wait_for "largest: "
    attribution_cells || show_screen_and_fail "$size: the attribution view's head cells lost their digits"
    case $(pane Attention | sed -n 2p) in
    *H8*) ;;
    *▶*)
        keys } } } } } } } # the cursor to the last head: the view scrolls to it
        wait_for "H8"
        pane Attention | sed -n 2p | grep -q "◀" || show_screen_and_fail "$size: no marker for the heads before"
        ;;
    *) show_screen_and_fail "$size: heads are left out with no marker" ;;
    esac
    if ! pane Attention | grep -q "^L5"; then
        pane Attention | grep -q "▼" || show_screen_and_fail "$size: layers are left out with no marker"
        keys Down Down Down Down # the cursor to the last layer: the rows scroll to it
        wait_for "L5 "
        pane Attention | grep -q "▲" || show_screen_and_fail "$size: no marker for the layers above"
    fi
    pass "$size: the attribution view's cells keep two digits; what does not fit has a marker and scrolls"
    keys q
    wait_exit
    assert_status 0
done

# ---- the help overlay at 60x20: no entry split across columns, every view named ----
start -- -m tui -s 7 -z "$TOK" "$MODEL"
wait_for "idle |"
$TM resize-window -t t -x 60 -y 20
wait_for "idle |"
keys '?'
wait_for "Help: keys"
page=1
: >"$T/help"
while :; do
    screen >"$T/page$page"
    cat "$T/page$page" >>"$T/help"
    grep -q "Page $page/$page\|$page/$page:" "$T/page$page" && break
    grep -q "Page [0-9]*/\|[0-9]/[0-9]*:" "$T/page$page" || break
    [ "$page" -lt 10 ] || fail "the help overlay has more than 10 pages"
    keys Space
    page=$((page + 1))
    wait_for "$page/"
done
for p in "$T"/page*; do
    if grep -q "slow motion:" "$p"; then
        grep -q "off/100/300/1000" "$p" || { sed 's/^/  |/' "$p" >&2; fail "60x20: s's text is split across pages or columns"; }
    fi
    if grep -q " v V " "$p"; then
        grep -q "lens grid" "$p" && grep -q "layers x" "$p" ||
            { sed 's/^/  |/' "$p" >&2; fail "60x20: v's text is split or leaves out views"; }
    fi
done
grep -q "Ctrl-W" "$T/help" || fail "60x20: the help overlay cuts the readline keys"
pass "60x20: the help overlay keeps each entry in one column and names every view"
keys x
wait_gone "Help: keys"
# five rows cannot hold a page of it: ? says so rather than nothing
# resized_to COLS ROWS: the window resized, and the TUI's redraw at that size waited
# for (Conversation's box ends on the screen's row ROWS - 2)
resized_to() {
    $TM resize-window -t t -x "$1" -y "$2"
    deadline=$(($(now) + WAIT))
    until screen | sed -n "$(($2 - 2))p" | grep -q '^└'; do
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "the TUI did not redraw at $1x$2"
        sleep 0.1
    done
}
resized_to 60 5
keys '?'
wait_for "the help needs a screen of at least 10 x 6"
resized_to 60 6
keys '?'
wait_for "Help: keys"
keys x
wait_gone "Help: keys"
$TM resize-window -t t -x 60 -y 20
pass "at 60x5 ? says the help needs 6 rows; at 60x6 it opens"
keys C-d
wait_exit
assert_status 0
