#!/bin/sh
# e2e_tui_persist.sh — nothing is lost in the TUI (in tmux): a reply, a steering
# action and /system are each autosaved, and so is a reply cut short by quitting; SIGTERM puts the terminal back (the
# alternate screen left, the terminal modes sane), saves and quits with 143 and a
# message; --resume shows the saved dialog again; /load and /resume work on the
# input line; a crash (SIGABRT, SIGILL, and SIGSEGV when no sanitizer handles it)
# puts the terminal back before the process dies of the signal.
. "$LLMCHAT_SRCDIR/tests/lib.sh"
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin
CHATS=$STATE/llmchat/chats

# start_kept ARGS...: llmchat ARGS in session "t" as start() does, but the pane stays
# after llmchat ends: then `stty -a` of the terminal goes to $T/stty, and llmchat's
# pid is in $T/pid while it runs.
start_kept() {
    rm -f "$T/exit" "$T/stty" "$T/pid"
    cmd="cd $(quote "$T") && env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=screen-256color"
    cmd="$cmd XDG_STATE_HOME=$(quote "$STATE") sh -c 'echo \$\$ >pid; exec \"\$@\"' sh $(quote "$LLMCHAT_BIN")"
    for a in "$@"; do
        cmd="$cmd $(quote "$a")"
    done
    last_cmd="llmchat $* (in tmux)"
    printf '%s 2>%s; echo $? >%s; stty -a >%s; sleep 600\n' "$cmd" "$(quote "$T/err")" \
        "$(quote "$T/exit")" "$(quote "$T/stty")" >"$T/run.sh"
    new_session "sh $(quote "$T/run.sh")"
    deadline=$(($(now) + WAIT))
    while [ ! -s "$T/pid" ]; do
        [ "$(now)" -lt "$deadline" ] || fail "llmchat did not start"
        sleep 0.1
    done
    pid=$(cat "$T/pid")
}

# wait_terminal_back: llmchat ended, and the terminal it leaves is usable: the normal
# screen, canonical mode and echo on.
wait_terminal_back() {
    wait_exit
    deadline=$(($(now) + WAIT))
    while [ ! -s "$T/stty" ]; do
        [ "$(now)" -lt "$deadline" ] || fail "no stty output after llmchat ended"
        sleep 0.1
    done
    assert_eq "the alternate screen after llmchat ($1)" 0 "$($TM display -p -t t '#{alternate_on}')"
    grep -q -- '-icanon' "$T/stty" && fail "the terminal was left without canonical mode ($1)"
    grep -q -- '-echo ' "$T/stty" && fail "the terminal was left without echo ($1)"
    :
}

# wait_saved EXPR: until the newest saved chat d makes the Python expression true.
wait_saved() {
    deadline=$(($(now) + WAIT))
    while :; do
        f=$(ls -t "$CHATS"/*.json 2>/dev/null | head -n 1)
        if [ -n "$f" ] && "$PYTHON" -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$f" "$1" 2>/dev/null; then
            return 0
        fi
        [ "$(now)" -lt "$deadline" ] || show_screen_and_fail "no saved chat with $1 (newest: ${f:-none})"
        sleep 0.1
    done
}

# ---- autosave of a reply, a steering action, /system; SIGTERM ----
start_kept -m tui -t 0 -i "Tell me a story about Tom." -z "$TOK" "$MODEL"
wait_for "Assistant: Once"
wait_for "idle |"
wait_saved 'len(d["turns"]) == 1 and d["turns"][0]["complete"] and d["turns"][0]["reply"].startswith("Once")'
saved=$f
reply_len=$("$PYTHON" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["turns"][0]["reply_tokens"]))' "$saved")
pass "a finished reply is autosaved"

keys Tab Tab
wait_for "</s>  gen"
keys BSpace
wait_for "paused |"
wait_saved "not d['turns'][0]['complete'] and len(d['turns'][0]['reply_tokens']) == $reply_len - 1"
pass "a steering action (Backspace) is autosaved"

keys Tab Tab
type_text "/system Be kind."
keys Enter
wait_for "[system prompt: Be kind.]"
wait_saved 'd["system"] == "Be kind."'
pass "/system is autosaved"

kill -s TERM "$pid"
wait_terminal_back SIGTERM
assert_eq "exit status on SIGTERM" 143 "$rc"
assert_file_contains "the SIGTERM message" "$T/err" "quitting on SIGTERM; the chat is saved in $saved"
[ "$(ls "$CHATS" | wc -l)" -eq 1 ] || fail "one TUI session wrote more than one file: $(ls "$CHATS")"
pass "SIGTERM puts the terminal back, saves the chat and quits with 143"

# ---- --resume, /resume, /load ----
start_kept -m tui --resume -t 0 -n 60 -z "$TOK"
wait_for "[loaded " # (the rest of the notice, a long path, wraps)
wait_for "Tell me a story about Tom."
wait_for "Assistant [branch 2/2]: Once" # the autosave kept the reply before Backspace as branch 1
type_text "/resume"
keys Enter
wait_for "[no saved chats yet]" # the only one is this session's own
cp "$saved" "$T/copy.json"
type_text "/reset"
keys Enter
wait_for "[the conversation was reset]"
wait_gone "Tell me a story about Tom."
type_text "/load $T/copy.json"
keys Enter
wait_for "[loaded "
wait_for "Tell me a story about Tom."
type_text "/load $T/nothing.json"
keys Enter
wait_for "No such file"
type_text "/quit"
keys Enter
wait_exit
assert_status 0
pass "--resume shows the saved dialog; /load and /resume work on the input line"

# ---- quitting while a reply runs: the reply so far is saved, stopped ----
rm -f "$CHATS"/*.json
start_kept -m tui -t 0 --slow-motion 200 -n 100 -z "$TOK" "$MODEL"
wait_for "idle |"
type_text "Tell me a story about Lily."
keys Enter
wait_for "Assistant: Once"
keys C-d
wait_for "Quit anyway? (y/n)"
keys y
wait_terminal_back "a quit confirmed during a reply"
assert_status 0
wait_saved 'len(d["turns"]) == 1 and d["turns"][0]["user"] == "Tell me a story about Lily." and d["turns"][0]["reply"].startswith("Once") and len(d["turns"][0]["reply_tokens"]) < 100'
pass "quitting during a reply saves the turn, its reply as far as it went"

# ---- a crash puts the terminal back ----
crashes="ABRT ILL"
[ "${LLMCHAT_SANITIZERS:-no}" = yes ] || crashes="$crashes SEGV"
for sig in $crashes; do
    start_kept -m tui -t 0 -z "$TOK" "$MODEL"
    wait_for "idle |"
    kill -s "$sig" "$pid"
    wait_terminal_back "SIG$sig"
    [ "$rc" -gt 128 ] || fail "llmchat did not die of SIG$sig (exit status $rc)"
done
pass "a crash ($crashes) puts the terminal back before the default action"
