#!/bin/sh
# e2e_tui_views.sh — every view of the Attention pane at 80x24, 100x30, 120x35 and
# 160x50 (issue 47), driven in tmux as in e2e_tui.sh: nothing a view promises goes
# missing without a sign. The heatmap keeps its row of key labels and its "pos N →"
# line; the lens its "next: rank p" column and its top 3, or "…" in the heading where
# they do not fit; the lens grid its legend (below, or in the title); the heads view
# each head's entropy and weight; the layers x heads grid and the attribution view
# every head and layer, the attribution its "parts sum" and "largest" lines. Where rows
# or columns do not fit, scroll markers (▲ ▼ ◀ ▶) say where the others are, and in the
# heads view the head cursor (here moved to the last head, which x would knock out)
# stays on screen. Nothing asserts timing: every wait polls the screen up to a deadline.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin

# The model's shape, as the layers x heads grid shows it at 120x40 (the views must
# show every one of them, or mark where they are left out).
N_LAYERS=5
N_HEADS=8

# check_view VIEW: reads the Attention pane on stdin; exit 0 when it is VIEW and shows
# what VIEW promises, else 1 with the reason on stdout.
cat >"$T/check_view.py" <<'EOF'
import re, sys

view, n_layers, n_heads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = sys.stdin.read().split("\n")
while lines and not lines[-1].strip():
    lines.pop()
text = "\n".join(lines)
UP, DOWN, LEFT, RIGHT, CUT = "\u25b2", "\u25bc", "\u25c0", "\u25b6", "\u2026"


def fail(why):
    print(why)
    sys.exit(1)


def numbered(found, n, what, before, after):
    """Items 1..n: all of them, or markers where the left out ones are."""
    if not found:
        fail("no %s at all" % what)
    lo, hi = min(found), max(found)
    if found != set(range(lo, hi + 1)):
        fail("%s %s: a gap in the middle" % (what, sorted(found)))
    if lo > 1 and before not in text:
        fail("%s 1-%d are left out with no %s" % (what, lo - 1, before))
    if hi < n and after not in text:
        fail("%s %d-%d are left out with no %s" % (what, hi + 1, n, after))


def rows(lines, pattern):
    return {int(m.group(1)) for l in lines for m in [re.match(pattern, l)] if m}


title = lines[0] if lines else ""
titles = {
    "heatmap": r"^(layer \d+/\d+  head|L\d+/\d+ H\d+/)",
    "lens": r"^(logit lens  pos|lens pos)",
    "lens grid": r"^(logit lens grid|lens grid)",
    "heads": r"^(heads of layer|heads L\d|L\d+/\d+ pos)",
    "layers x heads": r"^(layers x heads|L x H)",
    "attribution": r"^(attribution to|DLA)",
}
if not re.match(titles[view], title):
    fail("the title is not the %s view's: [%s]" % (view, title))

if view == "heatmap":
    if len(lines) < 4:
        fail("too few lines")
    if lines[1][:4].strip() or not lines[1].strip():
        fail("no row of key labels under the title")
    if not re.match(r"^pos \d+ (\u2192|->) ", lines[-1]):
        fail("no 'pos N \u2192' line at the bottom")
elif view == "lens":
    header = lines[1]
    if "top 1 / top 2 / top 3" not in header and CUT not in header:
        fail("fewer than the top 3 and no \u2026 in the heading")
    if "(next not known" not in title and "(not yet)" not in title:
        if "next: rank p" not in header and CUT not in header:
            fail("the next token's column is gone with no \u2026 in the heading")
    layer_lines = [l for l in lines[2:] if re.match(r"^\d+\b", l)]
    for l in layer_lines:
        if "%" not in l:
            fail("a layer row without a probability: [%s]" % l)
    numbered(rows(layer_lines, r"^(\d+)\b"), n_layers, "layers", UP, DOWN)
elif view == "lens grid":
    if "shade" not in text or not ("underlined" in text or "_ next" in text):
        fail("the legend is gone")
    numbered(rows(lines[2:], r"^(\d+)\b"), n_layers, "layers", UP, DOWN)
elif view == "heads":
    head_lines = [l for l in lines[1:] if re.match(r"^[Hx]\d+\b", l)]
    for l in head_lines:
        if not re.search(r"\d\.\d\d", l) or "%" not in l:
            fail("a head without its entropy or its weight: [%s]" % l)
    numbered(rows(head_lines, r"^[Hx](\d+)\b"), n_heads, "heads", UP, DOWN)
elif view == "layers x heads":
    numbered(rows(lines[2:], r"^L(\d+)\b"), n_layers, "layers", UP, DOWN)
    numbered({int(h) for h in re.findall(r"H(\d+)", lines[1])}, n_heads, "heads", LEFT, RIGHT)
elif view == "attribution":
    if not any(l.startswith("parts sum") for l in lines):
        fail("no 'parts sum' line")
    if not any(l.startswith("largest:") for l in lines):
        fail("no 'largest' line")
    body = []
    for l in lines[3:]:
        if l.startswith("parts sum"):
            break
        body.append(l)
    numbered(rows(body, r"^L(\d+)\b"), n_layers, "layers", UP, DOWN)
    if "MLP" not in lines[1]:
        fail("no MLP column")
    numbered({int(h) for h in re.findall(r"H(\d+)", lines[1])}, n_heads, "heads", LEFT, RIGHT)
sys.exit(0)
EOF

# wait_view VIEW SIZE: until the Attention pane is VIEW showing what it promises.
wait_view() {
    deadline=$(($(now) + WAIT))
    while :; do
        pane Attention >"$T/pane"
        "$PYTHON" "$T/check_view.py" "$1" "$N_LAYERS" "$N_HEADS" <"$T/pane" >"$T/why" && return 0
        if [ "$(now)" -ge "$deadline" ]; then
            sed 's/^/  |/' "$T/pane" >&2
            show_screen_and_fail "$2, the $1 view: $(cat "$T/why")"
        fi
        sleep 0.1
    done
}

# wait_size COLS ROWS: until the screen has been drawn at that size.
wait_size() {
    deadline=$(($(now) + WAIT))
    while :; do
        screen | "$PYTHON" -c '
import sys
rows = sys.stdin.read().rstrip("\n").split("\n")
sys.exit(0 if len(rows) == int(sys.argv[2]) and len(rows[0]) == int(sys.argv[1]) and
         "\u2510" in rows[0] else 1)' "$1" "$2" && return 0
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "the screen was not drawn at $1x$2"
        sleep 0.1
    done
}

start -- -m tui -s 7 -z "$TOK" "$MODEL"
wait_for "idle |"
type_text "Tell me a story about Lily."
keys Enter
wait_for " idle |"
keys Tab Tab Tab Left # the Attention pane, the position before the newest (its next is known)
wait_for "Attention"
for size in 80x24 100x30 120x35 160x50; do
    cols=${size%x*}
    rows=${size#*x}
    $TM resize-window -t t -x "$cols" -y "$rows"
    wait_size "$cols" "$rows"
    for view in heatmap lens "lens grid" heads "layers x heads" attribution; do
        wait_view "$view" "$size"
        if [ "$view" = heads ]; then
            keys } } } } } } } # the head cursor to the last head
            deadline=$(($(now) + WAIT))
            until pane Attention >"$T/pane" && grep -q "^H$N_HEADS\\b" "$T/pane"; do
                [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "$size: the cursor's head H$N_HEADS is not on screen"
                sleep 0.1
            done
            wait_view heads "$size (the cursor on the last head)"
            keys { { { { { { {
        fi
        keys v
    done
    pass "$size: every Attention view shows what it promises, or marks what it leaves out"
done
keys q
wait_exit
assert_status 0
