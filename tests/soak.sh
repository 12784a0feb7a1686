#!/bin/sh
# soak.sh — `make soak`: a scripted 500-turn chat on the bundled model, first in the
# plain chat (-m chat through a fifo), then in the TUI under tmux. The context (512
# positions) overflows again and again, so old turns are dropped and the rest re-read
# many times; every turn is autosaved. Each run must end without error (exit 0, no
# error message, no sanitizer report), its resident memory around turn 500 must not
# exceed that around turn 50 by more than 5%, and it must not hold more open files
# after turn 500 than after turn 50. Resident memory is sampled after every turn, and
# the peak of turns 1-50 compared with that of turns 451-500 (see check_growth). Prints
# the figures (recorded in docs/testing.md). Not part of make check (it runs for
# minutes). SOAK_TURNS overrides 500 (the windows then end at turns SOAK_TURNS/10 and
# SOAK_TURNS); SOAK_PARTS="chat" or "tui" runs one of the two.
. "$LLMCHAT_SRCDIR/tests/lib.sh"
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

TURNS=${SOAK_TURNS:-500}
EARLY=$((TURNS / 10))
MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin
ARGS="-T 1 -t 0.8 -s 42 -n 80 -z $TOK $MODEL"
topics="a dog named Max|a cat|a girl named Lily|a big red ball|Tom and his friend|a bird|a little boat|the sun and the moon|a bunny in the park|a toy car"

# message N: the N-th message (topics cycle; the number keeps every one distinct).
message() {
    k=$(( ($1 - 1) % 10 + 1 ))
    topic=$(printf '%s\n' "$topics" | cut -d'|' -f"$k")
    printf 'Tell me a story about %s. (%d)' "$topic" "$1"
}

# rss PID: resident memory in kB; fds PID: open file descriptors.
rss() {
    sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status"
}
fds() {
    ls "/proc/$1/fd" | wc -l
}

# sample N PID: after turn N, notes the resident memory in $T/rss (a line "N kB"),
# and the open files after turns EARLY and TURNS.
sample() {
    echo "$1 $(rss "$2")" >>"$T/rss"
    [ "$1" -eq "$EARLY" ] && fds_early=$(fds "$2")
    [ "$1" -eq "$TURNS" ] && fds_late=$(fds "$2")
    return 0
}

# check_growth PART FDS_EARLY FDS_LATE: compares the highest resident memory of turns
# 1..EARLY with that of the last EARLY turns. What is resident after a turn moves by
# megabytes with how full the context is (the TUI keeps attention rows for every
# position it holds) and with where malloc stands; each window holds several full
# contexts, so its peak is the full context's memory, and a leak raises it.
# In a sanitizer build only the open files are checked (ASan holds freed memory in its
# quarantine). SOAK_KEEP=DIR keeps every turn's figure in DIR/soak-PART-rss.txt.
check_growth() {
    if [ -n "${SOAK_KEEP:-}" ]; then cp "$T/rss" "$SOAK_KEEP/soak-$1-rss.txt"; fi
    "$PYTHON" - "$1" "$T/rss" "$EARLY" "$TURNS" "$2" "$3" "${LLMCHAT_SANITIZERS:-no}" <<'PYEOF' || fail "$1: memory or file descriptors grew (above)"
import statistics, sys
name, path = sys.argv[1], sys.argv[2]
early_n, turns, f1, f2 = (int(x) for x in sys.argv[3:7])
sanitizers = sys.argv[7] == "yes"
rss = dict(tuple(int(x) for x in line.split()) for line in open(path))
early = [rss[n] for n in range(1, early_n + 1)]
late = [rss[n] for n in range(turns - early_n + 1, turns + 1)]
print("%s: RSS in kB after every %d turns: %s"
      % (name, early_n, " ".join(str(rss[n]) for n in range(early_n, turns + 1, early_n))))
r1, r2 = max(early), max(late)
growth = (r2 - r1) / r1 * 100
print("%s: peak RSS of turns 1-%d %d kB (median %d), of turns %d-%d %d kB (median %d): %+.1f%%;"
      " open files after turn %d: %d, after turn %d: %d"
      % (name, early_n, r1, statistics.median(early), turns - early_n + 1, turns, r2,
         statistics.median(late), growth, early_n, f1, turns, f2))
if sanitizers:
    print("%s: resident memory is not bounded in a sanitizer build" % name)
elif growth > 5:
    sys.exit("%s: RSS grew by %.1f%% (more than 5%%)" % (name, growth))
if f2 > f1:
    sys.exit("%s: %d open files after turn %d, %d after turn %d: a descriptor leaked"
             % (name, f2, turns, f1, early_n))
PYEOF
}

[ -d /proc/self ] || skip "no /proc: cannot read resident memory"
[ "$TURNS" -ge 20 ] || hard_error "SOAK_TURNS must be 20 at least"

# ---- the plain chat, fed one message at a time through a fifo ----
soak_chat() {
rm -f "$T/fifo"
mkfifo "$T/fifo"
# shellcheck disable=SC2086 # ARGS is words
XDG_STATE_HOME=$STATE "$LLMCHAT_BIN" -m chat --autosave always $ARGS <"$T/fifo" >"$T/out" 2>"$T/err" &
pid=$!
exec 3>"$T/fifo"
start_s=$(date +%s)
: >"$T/rss"
n=0
while [ $n -lt "$TURNS" ]; do
    n=$((n + 1))
    message $n >&3
    printf '\n' >&3
    deadline=$(($(date +%s) + 120))
    while [ "$(wc -l <"$T/out")" -lt $n ]; do
        kill -0 "$pid" 2>/dev/null || fail "chat: llmchat died at turn $n: $(tail -n 3 "$T/err")"
        [ "$(date +%s)" -lt "$deadline" ] || fail "chat: no reply to turn $n after 120 s"
        sleep 0.02
    done
    sample $n "$pid"
done
exec 3>&-
rc=0
wait "$pid" || rc=$?
assert_status 0
grep -v 'context full: dropped\|the context is full: the reply was cut' "$T/err" | grep 'llmchat:' &&
    fail "chat: unexpected messages on stderr (above)"
drops=$(grep -c 'context full: dropped' "$T/err")
[ "$drops" -ge 10 ] || fail "chat: the context overflowed only $drops times"
f=$(ls -t "$STATE"/llmchat/chats/*.json | head -n 1)
assert_eq "chat: turns saved" "$TURNS" "$("$PYTHON" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["turns"]))' "$f")"
echo "chat: $TURNS turns in $(($(date +%s) - start_s)) s, the context overflowed $drops times"
check_growth chat "$fds_early" "$fds_late"
pass "chat: $TURNS turns"
}

# ---- the TUI in tmux: type, wait for the turn's autosave, repeat ----
soak_tui() {
rm -rf "$STATE/llmchat/chats"
cmd="cd $(quote "$T") && exec env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen-256color XDG_STATE_HOME=$(quote "$STATE")"
cmd="$cmd sh -c 'echo \$\$ >pid; exec \"\$@\"' sh $(quote "$LLMCHAT_BIN") -m tui"
for a in $ARGS; do
    cmd="$cmd $(quote "$a")"
done
rm -f "$T/pid" "$T/exit"
printf '(%s) 2>%s; echo $? >%s\n' "$cmd" "$(quote "$T/err")" "$(quote "$T/exit")" >"$T/run.sh"
$TM new-session -d -s t -x 120 -y 40 "sh $(quote "$T/run.sh")" || hard_error "tmux cannot start a session"
wait_for "idle |"
pid=$(cat "$T/pid")
start_s=$(date +%s)
: >"$T/rss"
n=0
while [ $n -lt "$TURNS" ]; do
    n=$((n + 1))
    type_text "$(message $n)"
    keys Enter
    deadline=$(($(date +%s) + 120))
    while :; do
        f=$(ls -t "$STATE"/llmchat/chats/*.json 2>/dev/null | head -n 1)
        [ -n "$f" ] && [ "$(grep -c '^    {"user": ' "$f")" -ge $n ] && break
        kill -0 "$pid" 2>/dev/null || fail "tui: llmchat died at turn $n: $(tail -n 3 "$T/err")"
        [ "$(date +%s)" -lt "$deadline" ] || show_screen_and_fail "tui: turn $n was not saved after 120 s"
        sleep 0.05
    done
    wait_for "idle |"
    sample $n "$pid"
done
screen | grep -q '\[error' && show_screen_and_fail "tui: an error notice"
type_text "/quit"
keys Enter
wait_exit
assert_status 0
echo "tui: $TURNS turns in $(($(date +%s) - start_s)) s"
check_growth tui "$fds_early" "$fds_late"
pass "tui: $TURNS turns"
}

for part in ${SOAK_PARTS:-chat tui}; do
    "soak_$part"
done
