#!/bin/sh
# e2e_fifo.sh — a FIFO (or a directory) where a file is read is refused at once with a
# message, never waited on: the model, -z, --control-vector, the config file's
# control-vector, --config, --replay, --view, /load, /vector load, llmchat-convert's IN.
# -f, which reads text as a stream, takes a FIFO and reads what its writer sends.
LLMCHAT_TEST_TIMEOUT=20 # a hang fails the test in seconds, not in minutes
. "$LLMCHAT_SRCDIR/tests/lib.sh"

model=$BUNDLED/chat260K.bin
mkfifo "$T/fifo"

# refused WHAT ARGS...: exit 1 at once, the message says what the file is
refused() {
    what=$1
    shift
    run_llmchat "$@" </dev/null
    assert_status 1
    grep -q "is a FIFO (named pipe), not a regular file\|not a regular file" "$T/err" ||
        fail "$what: no message saying it is a FIFO: $(cat "$T/err")"
}
refused "the model" -m generate -n 2 -i hi "$T/fifo"
refused "-z" -m generate -n 2 -i hi -z "$T/fifo" "$model"
refused "--control-vector" -m generate -n 2 -i hi --control-vector "$T/fifo" "$model"
refused "--config" --config "$T/fifo" -m generate -n 2 -i hi "$model"
refused "--replay" --replay "$T/fifo"
refused "--view" --view "$T/fifo"
mkdir -p "$XDG_CONFIG_HOME/llmchat"
printf 'control-vector = %s\n' "$T/fifo" >"$XDG_CONFIG_HOME/llmchat/config"
refused "the config's control-vector" -m generate -n 2 -i hi "$model"
rm "$XDG_CONFIG_HOME/llmchat/config"
run_program llmchat-convert "$(dirname "$LLMCHAT_BIN")/llmchat-convert" "$T/fifo" "$T/out.gguf"
assert_status 1
assert_file_contains "llmchat-convert IN" "$T/err" "is a FIFO (named pipe), not a regular file"
refused "a directory as -z" -m generate -n 2 -i hi -z "$T" "$model"
pass "a FIFO or a directory where a file is read is refused at once"

printf '/load %s\n/vector load %s\n' "$T/fifo" "$T/fifo" >"$T/in"
run_llmchat -m chat "$model" <"$T/in"
assert_status 0
[ "$(grep -c 'is a FIFO (named pipe), not a regular file' "$T/err")" -eq 2 ] ||
    fail "/load and /vector load did not both refuse the FIFO: $(cat "$T/err")"
pass "/load and /vector load refuse a FIFO and the chat goes on"

# -f reads a FIFO as a stream, waiting for its writer
(sleep 1 && printf 'Once upon a time' >"$T/fifo") &
run_llmchat -m generate -n 4 -s 1 -f "$T/fifo" "$model" </dev/null
assert_status 0
assert_file_contains "-f FIFO" "$T/out" "Once upon a time"
wait
pass "-f reads a FIFO as a stream"
