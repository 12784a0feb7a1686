#!/bin/sh
# e2e_tui_shade.sh — the Conversation's tokens (replies and messages) coloured by the
# probability the model gave them or by the entropy they were drawn from (the C key),
# driven in tmux as in e2e_tui.sh. Checks: C cycles probability, entropy and off, each
# with its legend on the status line; moving the selection in Tokens highlights that
# token in the reply or in the message;
# the highlighted token's colour is the level of its probability (or entropy) as the
# run's own trace records it, at several positions; the same in --view of that trace
# with NO_COLOR, where the levels are attributes (dim, plain, underline, bold, bold
# underlined). Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin
PROB_LEGEND="probability 90%+ 50%+ 20%+ 5%+ <5%"
ENTROPY_LEGEND="entropy <0.5 <1.5 <2.5 <3.5 3.5+"

# sel_pos: the position Tokens shows.
sel_pos() {
    screen | grep -o 'pos [0-9]* \(of\|(newest)\)' | head -n 1 | grep -o '[0-9][0-9]*'
}

# walk TAG MODE N [KEY STEP]: moves the selection N times (back, or with KEY by STEP),
# saving each screen (plain and with its escapes) as $T/cap/TAG.K with the mode the
# colours stand for.
walk() {
    p=$(sel_pos)
    k=0
    while [ "$k" -lt "$3" ]; do
        keys "${4:-Left}"
        p=$((p + ${5:--1}))
        wait_for "pos $p of"
        screen >"$T/cap/$1.$k.txt"
        screen_colors >"$T/cap/$1.$k.esc"
        echo "$2" >"$T/cap/$1.$k.mode"
        k=$((k + 1))
    done
}

mkdir -p "$T/cap"

# ---- a live chat: C cycles the modes; the highlighted token's colour is its level ----
start -- -m tui -s 7 --no-config --trace "$T/t.jsonl" -z "$TOK" "$MODEL"
wait_for "idle |"
type_text "Tell me a story about a dog named Max."
keys Enter
wait_for "You: Tell me a story about a dog named Max."
wait_for " idle |"
keys Tab Tab # Conversation, Tokens
keys C
wait_for "reply tokens coloured by the probability the model gave each"
walk live-prob color 8
wait_for "$PROB_LEGEND"
keys Home
wait_for "pos 0 of"
walk live-message color 16 Right 1
keys C
wait_for "reply tokens coloured by the entropy each was drawn from"
keys End
wait_for "(newest)"
walk live-entropy color 8
wait_for "$ENTROPY_LEGEND"
keys C
wait_for "reply tokens coloured by speculative decoding"
keys C
wait_for "reply tokens in plain colours"
keys Left
wait_gone "reply tokens in plain colours"
screen | grep -q "probability 90%\|entropy <0.5" && show_screen_and_fail "the legend outlived the colours"
keys q
wait_exit
assert_status 0
pass "C colours the reply by probability, then entropy, then guesses, then not, with the legend on the status line"

# ---- --view of that trace, without colours: the levels are attributes ----
start NO_COLOR=1 -- --view "$T/t.jsonl"
wait_for "viewing the trace"
keys Tab Tab
keys C
wait_for "reply tokens coloured by the probability"
walk view-prob mono 8
wait_for "$PROB_LEGEND"
keys Home
wait_for "pos 0 of"
walk view-message mono 16 Right 1
keys q
wait_exit
assert_status 0

# ---- each highlighted token against the trace ----
"$PYTHON" - "$T/t.jsonl" "$T/cap" <<'PY' || fail "a token's colour is not its level (above)"
import json, math, os, re, sys

trace, cap = sys.argv[1], sys.argv[2]
recs = {}
for line in open(trace, encoding="utf-8"):
    v = json.loads(line)
    if "pos" in v:
        recs[v["pos"]] = v

def level(mode, r):
    if mode == "prob":
        p = r["next_prob"]
        return sum(p < b for b in (0.9, 0.5, 0.2, 0.05))
    h = r["entropy"]
    return sum(h >= b for b in (0.5, 1.5, 2.5, 3.5))

SGR = re.compile(r"\x1b\[([0-9;]*)m")

def cells(line):
    """(char, attrs) of a screen line with its escapes."""
    st = {"fg": None, "bold": False, "dim": False, "ul": False, "rev": False}
    out, i = [], 0
    while i < len(line):
        m = SGR.match(line, i)
        if m:
            ps = [int(x) if x else 0 for x in m.group(1).split(";")]
            j = 0
            while j < len(ps):
                c = ps[j]
                if c == 0:
                    st = {"fg": None, "bold": False, "dim": False, "ul": False, "rev": False}
                elif c == 1: st["bold"] = True
                elif c == 2: st["dim"] = True
                elif c == 22: st["bold"] = st["dim"] = False
                elif c == 4: st["ul"] = True
                elif c == 24: st["ul"] = False
                elif c == 7: st["rev"] = True
                elif c == 27: st["rev"] = False
                elif 30 <= c <= 37: st["fg"] = c
                elif c == 39: st["fg"] = None
                elif c in (38, 48):
                    if c == 38: st["fg"] = ("256", ps[j + 2] if j + 2 < len(ps) else 0)
                    j += 2
                j += 1
            i = m.end()
            continue
        out.append((line[i], dict(st)))
        i += 1
    return out

COLOR_FG = {0: None, 1: 32, 2: 33, 3: 35, 4: 31}
MONO = {0: (False, True, False), 1: (False, False, False), 2: (False, False, True),
        3: (True, False, False), 4: (True, False, True)}  # bold, dim, underline

MESSAGE = "Tell me a story about a dog named Max."
checked, levels, bad = {}, set(), 0
for name in sorted(os.listdir(cap)):
    if not name.endswith(".txt"):
        continue
    base = name[:-4]
    tag = base.rsplit(".", 1)[0]
    text = open(os.path.join(cap, name), encoding="utf-8").read()
    pos = int(re.search(r"pos (\d+) of", text).group(1))
    theme = open(os.path.join(cap, base + ".mode")).read().strip()
    mode = "entropy" if "entropy" in tag else "prob"
    run = []
    for line in open(os.path.join(cap, base + ".esc"), encoding="utf-8"):
        cs = cells(line.rstrip("\n"))
        chars = "".join(c for c, _ in cs)
        if not chars.startswith("\u2502"):
            continue
        end = chars.find("\u2502", 1)  # Conversation's right border
        run += [(c, a) for c, a in cs[1:end] if a["rev"]]
    if not run:
        continue  # a token without text (the end of the turn)
    want = level(mode, recs[pos - 1])
    a = run[0][1]
    if theme == "color":
        ok = a["fg"] == COLOR_FG[want]
        got = a["fg"]
    else:
        got = (a["bold"], a["dim"], a["ul"])
        ok = got == MONO[want]
    word = "".join(c for c, _ in run)
    if "message" in tag and word.strip() not in MESSAGE:
        print(f"{tag}: pos {pos}: [{word}] is highlighted, not a piece of the message")
        bad += 1
    print(f"{tag}: pos {pos} [{word}] level {want} ({mode}), drawn {got}: {'ok' if ok else 'WRONG'}")
    bad += not ok
    checked[tag] = checked.get(tag, 0) + 1
    levels.add(want)
for tag in ("live-prob", "live-entropy", "live-message", "view-prob", "view-message"):
    if checked.get(tag, 0) < 4:
        print(f"{tag}: only {checked.get(tag, 0)} highlighted tokens found")
        bad += 1
if len(levels) < 2:
    print("every checked token had the same level: the check shows nothing")
    bad += 1
sys.exit(1 if bad else 0)
PY
pass "the highlighted token's colour (and, without colours, its attribute) is its level in the trace, live and in --view"
