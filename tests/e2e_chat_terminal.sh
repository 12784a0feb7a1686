#!/bin/sh
# e2e_chat_terminal.sh — llmchat -m chat typed at a terminal (tmux) with stdout
# redirected to a file, as in `llmchat -m chat MODEL > out.txt`: the prompt, the echo
# of what is typed and readline's terminal codes stay on the terminal, and the file
# holds the replies alone, one line each (the reply a pipe gets for the same message);
# the banner names the chat template once. A bracketed paste of 256 KB, one line with
# characters of two and three bytes, reaches the line editor byte for byte (the input
# history written at exit shows it; libedit in the C locale dropped every byte above
# 127); an arrow key whose bytes come 0.1 s apart is still the arrow (Up brings the
# last line back); two lines that come in one write are both sent: readline's keys are
# read in bulk (src/cli/tty_reader.c), and what one read brought beyond a line waits in
# a buffer that a select() does not see.
. "$LLMCHAT_SRCDIR/tests/lib.sh"
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin
MESSAGE="Tell me a story about Tom."

# the reply through pipes, for comparison
printf '%s\n' "$MESSAGE" >"$T/in"
run_llmchat -m chat -t 0 --weights f32 -z "$TOK" "$MODEL" <"$T/in"
assert_status 0
cp "$T/out" "$T/piped"
[ "$(wc -l <"$T/piped" | tr -d ' ')" -eq 1 ] || fail "the piped reply is not one line"

# in tmux: stdin and stderr the terminal, stdout a file
rm -f "$T/exit"
args=
for a in "$LLMCHAT_BIN" -m chat -t 0 --weights f32 -z "$TOK" "$MODEL"; do
    args="$args $(quote "$a")"
done
printf 'cd %s && env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen-256color XDG_STATE_HOME=%s%s >%s; echo $? >%s\n' \
    "$(quote "$T")" "$(quote "$STATE")" "$args" "$(quote "$T/replies.txt")" "$(quote "$T/exit")" >"$T/run.sh"
last_cmd="llmchat -m chat ... >replies.txt (in tmux)"
$TM new-session -d -s t -x 120 -y 40 "sh $(quote "$T/run.sh")" || hard_error "tmux cannot start a session"
: >"$T/err"
wait_for "Ctrl-D to leave"
type_text "$MESSAGE"
keys Enter
wait_for "> $MESSAGE"
deadline=$(($(now) + WAIT)) # until the reply is written and the next prompt shows
until [ -s "$T/replies.txt" ] && [ "$(screen | grep -c '^>')" -ge 2 ]; do
    [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "no reply, or no prompt after it"
    sleep 0.1
done
$TM capture-pane -p -J -t t >"$T/screen" # wrapped lines joined
type_text "/quit"
keys Enter
wait_exit
assert_status 0

cmp -s "$T/piped" "$T/replies.txt" ||
    fail "the file holds [$(cat -A "$T/replies.txt" | head -c 400)], not the reply alone [$(cat "$T/piped")]"
pass "stdout redirected: the file holds the reply alone, as a pipe gets it"

grep -q "^> $MESSAGE" "$T/screen" || fail "the typed message is not echoed on the terminal: $(cat "$T/screen")"
pass "the prompt and the echo are on the terminal"

n=$(grep '^llmchat:' "$T/screen" | grep -o 'template' | wc -l | tr -d ' ')
[ "$n" -eq 1 ] || fail "the banner names the template $n times, not once: $(cat "$T/screen")"
pass "the banner names the template once"

# ---- a 256 KB paste; an arrow key in two pieces ----
"$PYTHON" -c 'import sys; sys.stdout.write("The dög ran to the park — and played. " * 6800)' >"$T/paste"
$TM kill-server >/dev/null 2>&1
rm -f "$STATE/llmchat/chat_history"
# at_prompt: the screen's last line that is not empty is the prompt alone.
at_prompt() {
    [ "$(screen | grep -v '^$' | tail -n 1)" = ">" ]
}
start -- -m chat -t 0 --weights f32 -z "$TOK" "$MODEL"
deadline=$(($(now) + WAIT))
until at_prompt; do
    [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "no prompt"
    sleep 0.1
done
$TM load-buffer "$T/paste"
$TM paste-buffer -p -t t
keys Enter
deadline=$(($(now) + WAIT))
until grep -q "but the context" "$T/err"; do
    [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "the 256 KB message was not refused: $(head -c 300 "$T/err")"
    sleep 0.1
done
type_text "first line"
keys Enter
wait_for "> first line"
deadline=$(($(now) + WAIT)) # the reply written, the next prompt shown
until at_prompt; do
    [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "no prompt after the reply"
    sleep 0.1
done
$TM send-keys -t t -H 1b # Esc ...
sleep 0.1
type_text "[A" # ... and the rest of Up a tenth of a second later
keys Enter
deadline=$(($(now) + WAIT))
until [ "$(screen | grep -c '^> first line')" -ge 2 ] && at_prompt; do
    [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "Up and Enter did not send 'first line' again"
    sleep 0.1
done
# two lines in one write: the second, read with the first, is not left waiting
type_text "$(printf 'second line\rthird line\r')"
wait_for "> third line"
deadline=$(($(now) + WAIT))
until at_prompt; do
    [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "no prompt after the third line's reply"
    sleep 0.1
done
type_text "/quit"
keys Enter
wait_exit
assert_status 0
history_text "$STATE/llmchat/chat_history" >"$T/history"
"$PYTHON" - "$T/paste" "$T/history" <<'PY' || fail "the input history lacks the 256 KB paste, or Up did not bring back 'first line' (history: $(cut -c1-60 "$T/history" | tail -n 4))"
import sys
paste = open(sys.argv[1], "rb").read()
lines = open(sys.argv[2], "rb").read().split(b"\n")
sys.exit(0 if paste in lines and lines.count(b"first line") == 2 and b"third line" in lines else 1)
PY
pass "a 256 KB paste reaches readline whole; an arrow key in two pieces is the arrow; two lines in one write are both sent"
