#!/bin/sh
# e2e_tui_speculate.sh — speculative decoding watched in the TUI, driven in tmux as in
# e2e_tui.sh: with --lookup a greedy reply is token for token the one a plain TUI run
# gives (compared through both runs' traces), the status line says how many guesses the
# sampler accepted, how many tokens each call of the model added and how many guesses the
# newest step asked for (on 80 columns, shortened to the acceptance and the speed-up),
# C's fourth mode
# colours the reply by the guesses' verdicts with its legend, and Tokens says of an
# accepted guess's position that it was guessed and accepted and of a rejected one what
# was guessed instead, and, while a reply is stepped with n, the newest call's whole
# draft. Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin
MESSAGE="Tell me a story about Tom and his big red ball. Tom liked his big red ball."

# wait_re REGEX: until a line of the screen matches REGEX (grep's).
wait_re() {
    deadline=$(($(now) + WAIT))
    until screen | grep -q -- "$1"; do
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "waited ${WAIT}s for /$1/ on the screen"
        sleep 0.1
    done
}

# chat_run TAG ARGS...: one reply to MESSAGE in the TUI, traced into $T/TAG.jsonl.
chat_run() {
    tag=$1
    shift
    start -- -m tui -t 0 --no-config --trace "$T/$tag.jsonl" -z "$TOK" "$@" "$MODEL"
    wait_for "idle |"
    type_text "$MESSAGE"
    keys Enter
    wait_for "You: Tell me a story about Tom"
    wait_for " idle |"
}

chat_run plain
type_text "/quit"
keys Enter
wait_exit
assert_status 0

# always 6 guesses (--draft-min 6), so that the stepped reply below has drafts to show
chat_run lookup --lookup --draft-min 6 --draft-max 6
wait_re "lookup [0-9]*% of [0-9]* accepted, [0-9.]* tok/call.*, asked 6"
# on an 80-column terminal the status line keeps the acceptance, shortened
$TM resize-window -t t -x 80 -y 24
wait_re "| lookup [0-9]*% accepted\(, [0-9.]*x plain\)\? |"
$TM resize-window -t t -x 120 -y 40
# a reply stepped with n: Tokens shows the newest call's whole draft
type_text "/step $MESSAGE"
keys Enter
wait_for "[paused: n runs one step"
keys Tab Tab # Conversation, Tokens
k=0
until screen | grep -q "draft at pos [0-9]*: "; do
    k=$((k + 1))
    [ "$k" -le 40 ] || show_screen_and_fail "40 steps of a repeated reply and no draft in Tokens"
    keys n
    sleep 0.2
done
pass "n steps a reply one call of the model at a time, and Tokens shows the newest draft"
keys Escape
wait_for " stopped |"
keys C C C
wait_for "reply tokens coloured by speculative decoding"
keys Left
wait_gone "reply tokens coloured by speculative decoding"
wait_for "guesses accepted rejected"
keys q
wait_exit
assert_status 0

# the positions whose token was a guess, accepted or rejected (the record before them
# checked a guess)
"$PYTHON" - "$T/plain.jsonl" "$T/lookup.jsonl" "$T/where" <<'PY' || fail "the traces disagree (above)"
import json, sys

def records(path):
    out = {}
    for line in open(path, encoding="utf-8"):
        v = json.loads(line)
        if "pos" in v:
            out[v["pos"]] = v
    return out

plain, spec = records(sys.argv[1]), records(sys.argv[2])
tokens = lambda rs: [rs[p]["token"] for p in sorted(rs)]
# the first reply (the second, stepped and stopped, is not in the plain run)
if tokens(spec)[: len(plain)] != tokens(plain):
    print("the --lookup reply is not the plain one")
    sys.exit(1)
accepted = [p + 1 for p, r in spec.items() if "guess" in r and r["guess"] == r.get("next")]
rejected = [p + 1 for p, r in spec.items() if "guess" in r and r["guess"] != r.get("next")]
print(f"{len(accepted)} accepted, {len(rejected)} rejected guesses")
if not accepted or not rejected:
    sys.exit(1)
with open(sys.argv[3], "w") as f:
    f.write(f"{max(accepted)} {max(rejected)}\n")
PY
read -r acc rej <"$T/where"
pass "a --lookup reply in the TUI is the plain reply, token for token, with guesses accepted and rejected"

# ---- Tokens on the guessed positions, in --view of that trace ----
start -- --view "$T/lookup.jsonl"
wait_for "viewing the trace"
keys Tab Tab
keys End
wait_for "(newest)"
newest=$(screen | grep -o 'pos [0-9]* (newest)' | grep -o '[0-9][0-9]*')
[ -n "$newest" ] || show_screen_and_fail "Tokens shows no newest position"

# walk_to P: moves the selection from the newest position back to P.
walk_to() {
    k=$((newest - $1))
    [ "$k" -gt 0 ] || return 0
    while [ "$k" -gt 0 ]; do
        keys Left
        k=$((k - 1))
    done
    wait_for "pos $1 of"
}
walk_to "$rej"
wait_re "guess .* rejected"
keys End
wait_for "(newest)"
walk_to "$acc"
wait_re "a guess the sampler accepted\|guessed, accepted"
keys q
wait_exit
assert_status 0
pass "the status line counts the guesses, C colours them, Tokens says which were accepted and which rejected"
