#!/bin/sh
# e2e_numbers.sh — every number the user types goes through one parser that refuses
# what does not fit instead of wrapping it: 2^32 (which sscanf("%d") made 0) and 2^32+1
# in every option that takes an integer or a layer, head or position, 1e39 (past a
# float's range) in those that take a number, the same keys in
# the config file (a warning naming the line, the run goes on with the default), and
# the slash commands that take numbers (/set, /vector layers, /resume, /knock). --knock-out
# 4294967296:1 used to knock out head [0,1] and record it so; --layers
# 4294967296-4294967297 dumped layers 0-1.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

model=$BUNDLED/chat260K.bin
big=4294967296
next=4294967297

# refused OPTION VALUE: exit 2, one message naming the option, nothing run
refused() {
    run_llmchat -m generate -n 2 -i hi "$1" "$2" --trace "$T/tr.jsonl" "$model" </dev/null
    assert_status 2
    assert_file_contains "$1 $2" "$T/err" "llmchat: $1"
    [ ! -e "$T/tr.jsonl" ] || fail "$1 $2: the run went on (a trace was written)"
}
for opt in --top-k --repeat-last-n --steps --slow-motion --ctx --threads --attention-mib \
    --position --history-size --keep-chats; do
    refused "$opt" "$big"
done
for opt in --temperature --top-p --min-p --repeat-penalty; do # past a float's range
    refused "$opt" 1e39
done
refused --seed 18446744073709551616
refused --temperature 1e999
refused --knock-out "$big:1"
refused --knock-out "1:$next"
refused --knock-out "0:1,$big:0"
refused --knock-out-expert "$big:1"
refused --knock-out-expert "1:$next"
refused --knock-out-expert "0:1,$big:0"
refused --layers "$big-$next"
refused --layers "0-$next"
refused --layers "$big"
refused --trace-tensors "$big-$next"
refused --control-vector-layers "$big-$next"
pass "2^32 and beyond are refused in every numeric option, never wrapped to 0"

# the config file: each key warned about with its line, the run goes on
mkdir -p "$XDG_CONFIG_HOME/llmchat"
{
    for key in top-k repeat-last-n steps slow-motion ctx threads attention-mib history-size \
        keep-chats; do
        printf '%s = %s\n' "$key" "$big"
    done
    for key in temperature top-p min-p repeat-penalty; do
        printf '%s = 1e39\n' "$key"
    done
    printf 'knock-out-expert = %s:1\n' "$big"
    printf 'knock-out = %s:1\ncontrol-vector-layers = %s-%s\nseed = 18446744073709551616\n' \
        "$big" "$big" "$next"
} >"$XDG_CONFIG_HOME/llmchat/config"
run_llmchat -m generate -n 2 -i hi "$model" </dev/null
assert_status 0
lines=$(wc -l <"$XDG_CONFIG_HOME/llmchat/config")
warned=$(grep -c "^llmchat: .*config:[0-9]*: " "$T/err")
[ "$warned" -eq "$lines" ] || fail "$warned of $lines config lines warned about: $(cat "$T/err")"
rm "$XDG_CONFIG_HOME/llmchat/config"
pass "the config file's numeric keys past 2^32 are warned about, line by line"

# the slash commands
printf '%s\n' "/set top-k $big" "/set steps $next" "/vector layers $big-$next" \
    "/vector layers 0-$next" "/resume $big" "/knock head $big:1" "/knock head 0:$next" \
    >"$T/in"
run_llmchat -m chat "$model" <"$T/in"
assert_status 0
[ "$(grep -c '^llmchat: ' "$T/err")" -eq 7 ] || fail "not seven refusals: $(cat "$T/err")"
if grep -q 'top-k = \|layers 0-1\|after layers 0\|knocked out (' "$T/err"; then
    fail "a number wrapped: $(cat "$T/err")"
fi
pass "/set, /vector layers, /resume and /knock refuse numbers past 2^32"
