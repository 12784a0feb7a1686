#!/bin/sh
# e2e_discovery.sh — which model llmchat opens: with none given, the bundled demo
# model (saying so), which answers a request for a story about Max with one; the
# argument wins over LLMCHAT_MODEL, which wins over the config file's model, which
# wins over the bundled model; a model that is missing (a file, a name not fetched
# yet, or no bundled model at all) exits 1 with the llmchat-fetch command that gets
# one; a name fetched into $XDG_DATA_HOME/llmchat/models opens by its name; with no
# LLMCHAT_DATADIR, the program run from its build tree finds the source tree's data/
# and a copy of it elsewhere does not. Runs with a private HOME and LLMCHAT_DATADIR
# (lib.sh): no file of the user's is read.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

CONF=$XDG_CONFIG_HOME/llmchat/config
mkdir -p "$XDG_CONFIG_HOME/llmchat"
bundled=$BUNDLED/chat260K.bin
printf 'Tell me a story about a dog named Max.\n' >"$T/max"

# chat ARGS...: a greedy chat of one message (the Max request).
chat() {
    run_llmchat -m chat -t 0 -n 80 "$@" <"$T/max"
}

# ---- no model anywhere: the bundled one, and it says so ----
chat
assert_status 0
assert_file_contains "the fallback notice" "$T/err" "bundled demo model"
assert_file_contains "the fallback notice" "$T/err" "llmchat-fetch tinyllama-chat"
assert_file_contains "a story about Max" "$T/out" "Max"
cp "$T/out" "$T/bundled.out"
chat "$bundled"
cmp -s "$T/out" "$T/bundled.out" || fail "the fallback did not open $bundled"
if grep -q "bundled demo model" "$T/err"; then
    fail "a model given as an argument was called the bundled demo model"
fi
pass "no model given: the bundled demo model, which tells a story about Max"

# ---- a program run from its build tree finds the source tree's data/ by itself;
# a copy of it elsewhere (as an installed one) does not look there ----
LLMCHAT_DATADIR= chat
assert_status 0
assert_file_contains "the build tree's bundled model" "$T/err" "bundled demo model"
cmp -s "$T/out" "$T/bundled.out" || fail "the build tree's llmchat did not find the source tree's data/"
mkdir "$T/elsewhere"
cp "$LLMCHAT_BIN" "$T/elsewhere/llmchat"
rc=0
LLMCHAT_DATADIR= "$T/elsewhere/llmchat" -m chat -n 5 <"$T/max" >"$T/out" 2>"$T/err" || rc=$?
# (status 0 only where llmchat is also installed: the copy then uses that data)
if [ "$rc" -ne 0 ]; then
    assert_eq "a copy outside the build tree, with no data directory" 1 "$rc"
    assert_file_contains "a copy outside the build tree" "$T/err" "the bundled demo model is not at"
    assert_not_contains "a copy outside the build tree" "$(cat "$T/err")" "$LLMCHAT_SRCDIR/data"
fi
pass "run from its build tree, llmchat finds the source tree's data/ (a copy elsewhere does not)"

# ---- precedence: argument > LLMCHAT_MODEL > config model > bundled ----
printf 'model = %s/from-config.bin\n' "$T" >"$CONF"
chat
assert_status 1
assert_file_contains "a missing config model" "$T/err" "$T/from-config.bin"
assert_file_contains "where it came from" "$T/err" "~/.config/llmchat/config:1"
LLMCHAT_MODEL=$bundled
export LLMCHAT_MODEL
chat
assert_status 0  # LLMCHAT_MODEL wins over the config file's (missing) model
cmp -s "$T/out" "$T/bundled.out" || fail "LLMCHAT_MODEL=$bundled did not open it"
printf 'model = %s\n' "$bundled" >"$CONF"
LLMCHAT_MODEL=$T/from-env.bin
chat
assert_status 1  # ... even when the config file's model is good: no silent fallback
assert_file_contains "a missing LLMCHAT_MODEL" "$T/err" "$T/from-env.bin (from LLMCHAT_MODEL)"
chat "$bundled"
assert_status 0  # the argument wins over LLMCHAT_MODEL
chat --model "$bundled"
assert_status 0
unset LLMCHAT_MODEL
chat
assert_status 0  # the config file's model
cmp -s "$T/out" "$T/bundled.out" || fail "the config file's model = $bundled did not open it"
rm -f "$CONF"
pass "the argument wins over LLMCHAT_MODEL, which wins over the config file's model"

# ---- missing models: a message with the command that gets one ----
chat "$T/nothere.bin"
assert_status 1
assert_file_contains "a missing file" "$T/err" "$T/nothere.bin"
assert_file_contains "a missing file" "$T/err" "llmchat-fetch tinyllama-chat"
chat tinyllama-chat
assert_status 1
assert_file_contains "a name not fetched yet" "$T/err" "llmchat-fetch tinyllama-chat"
assert_file_contains "a name not fetched yet" "$T/err" "$XDG_DATA_HOME/llmchat/models/tinyllama-1.1b-chat-v1.0.Q8_0.gguf"
mkdir "$T/empty"
LLMCHAT_DATADIR=$T/empty chat
assert_status 1
assert_file_contains "no bundled model" "$T/err" "$T/empty/models/chat260K.bin"
assert_file_contains "no bundled model" "$T/err" "llmchat-fetch tinyllama-chat"
pass "a missing model's message names the llmchat-fetch command"

# ---- a model fetched into the default directory opens by its name ----
mkdir -p "$XDG_DATA_HOME/llmchat/models"
cp "$DATA/stories260K.bin" "$DATA/tok512.bin" "$XDG_DATA_HOME/llmchat/models/"
run_llmchat -m generate -t 0 -n 16 -i "Once upon a time" stories260K </dev/null
assert_status 0
cp "$T/out" "$T/by-name"
run_llmchat -m generate -t 0 -n 16 -i "Once upon a time" "$DATA/stories260K.bin" </dev/null
cmp -s "$T/out" "$T/by-name" || fail "'llmchat stories260K' did not open the fetched stories260K.bin"
run_llmchat -m generate -t 0 -n 16 -i "Once upon a time" stories260K.bin </dev/null
assert_status 0  # the file name of the row works too
pass "a fetched model opens by its name"
