#!/bin/sh
# e2e_config.sh — the config file through the real binary: its settings take effect
# (a run with them equals a run with the same options and no config file), the
# command line overrides them, bad lines get a warning naming the file and line and
# the run goes on, --config FILE reads another file (a missing one is an error),
# --no-config reads none, and a missing default file is fine.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

CONF=$XDG_CONFIG_HOME/llmchat/config
mkdir -p "$XDG_CONFIG_HOME/llmchat"
model=$BUNDLED/chat260K.bin
prompt="Once upon a time"

# gen ARGS...: a short sampled generation; its text in $T/gen.N (N counts calls).
n_gen=0
gen() {
    run_llmchat -m generate -n 24 -i "$prompt" "$@" </dev/null
    assert_status 0
    n_gen=$((n_gen + 1))
    cp "$T/out" "$T/gen.$n_gen"
}

# ---- no config file: the defaults, no warning ----
gen -s 5 "$model"
if grep -v '^prompt:' "$T/err" | grep -q .; then
    fail "warnings without a config file: $(cat "$T/err")"
fi
pass "no config file is fine"

# ---- the file's settings take effect; the command line overrides them ----
printf '# sampling\nseed = 11\ntemperature = 0.8\n\ntop-k = 5\n' >"$CONF"
gen "$model"                                   # gen.2: from the config file
gen --no-config -s 11 -t 0.8 -k 5 "$model"     # gen.3: the same from the command line
cmp -s "$T/gen.2" "$T/gen.3" || fail "the config file's seed/temperature/top-k did not apply: [$(cat "$T/gen.2")] vs [$(cat "$T/gen.3")]"
gen -s 12 "$model"                             # gen.4: -s overrides the file's seed
gen --no-config -s 12 -t 0.8 -k 5 "$model"     # gen.5
cmp -s "$T/gen.4" "$T/gen.5" || fail "-s on the command line did not override the config file's seed"
cmp -s "$T/gen.4" "$T/gen.2" && fail "-s 12 gave the same text as the config file's seed 11"
pass "the config file's settings apply, and the command line overrides them"

# ---- bad lines: warnings with file and line; the good lines still apply ----
printf 'seed = 11\ntemprature = 0.8\ntemperature = 0.8\ntop-k = many\ntop-k = 5\nnonsense\n' >"$CONF"
gen "$model"
cmp -s "$T/gen.$n_gen" "$T/gen.3" || fail "the good lines around bad ones did not apply"
assert_file_contains "unknown key" "$T/err" "llmchat: ~/.config/llmchat/config:2: unknown key 'temprature' (did you mean 'temperature'?)"
assert_file_contains "bad value" "$T/err" "llmchat: ~/.config/llmchat/config:4: top-k must be an integer from 0 to 2147483647, got 'many'"
assert_file_contains "not key = value" "$T/err" "llmchat: ~/.config/llmchat/config:6: expected 'key = value'"
pass "unknown keys, bad values and bad lines are warnings naming the file and line"

# ---- values only the model can judge: refused naming the file's line, not an option ----
for line in "ctx = 99999|ctx 99999 is larger than the model's context" \
    "knock-out = 99:0|knock-out 99:0: the model has layers 0-" \
    "knock-out-expert = 0:1|knock-out-expert 0:1: the model has no experts" \
    "control-vector-layers = 50-60|control-vector-layers: control vector layers must be"; do
    printf 'seed = 11\n%s\n' "${line%%|*}" >"$CONF"
    run_llmchat -m generate -n 4 -i "$prompt" "$model" </dev/null
    assert_status 2
    assert_file_contains "${line%%|*}" "$T/err" "llmchat: ~/.config/llmchat/config:2: ${line#*|}"
done
run_llmchat -m generate -n 4 -i "$prompt" -c 99999 "$model" </dev/null # the command line's
assert_status 2
assert_file_contains "-c over the file's ctx" "$T/err" "llmchat: --ctx 99999 is larger"
run_llmchat -m generate -n 4 -i "$prompt" -c 99999999999 "$model" </dev/null # past an int
assert_status 2
assert_file_contains "-c past an int" "$T/err" "llmchat: --ctx must be an integer from 1 to 2147483647, got '99999999999'"
printf 'seed = 11\ntokenizer = %s/no-such-tokenizer.bin\n' "$T" >"$CONF"
run_llmchat -m generate -n 4 -i "$prompt" "$model" </dev/null
assert_status 1
assert_file_contains "the file's tokenizer" "$T/err" \
    "llmchat: ~/.config/llmchat/config:2: tokenizer: cannot open the tokenizer: $T/no-such-tokenizer.bin"
run_llmchat -m generate -n 4 -i "$prompt" -z "$T/typed.bin" "$model" </dev/null
assert_status 1
assert_file_contains "-z over the file's tokenizer" "$T/err" "llmchat: $T/typed.bin:"
grep -q "llmchat/config:" "$T/err" && fail "-z's missing tokenizer is blamed on the config file: $(cat "$T/err")"
pass "a value the model refuses, or a file that cannot be opened, names the config file's line (the command line's, its option)"

# ---- --config FILE, --no-config, a missing --config FILE ----
printf 'seed = 11\ntemperature = 0.8\ntop-k = 5\n' >"$T/other.conf"
printf 'seed = 99\n' >"$CONF"
gen --config "$T/other.conf" "$model"
cmp -s "$T/gen.$n_gen" "$T/gen.3" || fail "--config FILE was not read instead of the default file"
run_llmchat -m generate -n 4 -i "$prompt" --config "$T/no-such.conf" "$model" </dev/null
assert_status 1
assert_file_contains "missing --config" "$T/err" "$T/no-such.conf"
printf 'seed = 11\ntemperature = 0.8\ntop-k = 5\nmodel = %s/missing.bin\n' "$T" >"$CONF"
gen --no-config -s 11 -t 0.8 -k 5 "$model"
cmp -s "$T/gen.$n_gen" "$T/gen.3" || fail "--no-config changed the run"
run_llmchat -m generate -n 4 -i "$prompt" --config "$T/other.conf" --no-config "$model" </dev/null
assert_status 2
pass "--config FILE, --no-config, and a missing --config FILE (exit 1)"

# ---- XDG_CONFIG_HOME, then ~/.config ----
rm -f "$CONF"
mkdir -p "$T/xdg/llmchat"
printf 'seed = 11\ntemperature = 0.8\ntop-k = 5\n' >"$T/xdg/llmchat/config"
XDG_CONFIG_HOME=$T/xdg
gen "$model"
XDG_CONFIG_HOME=$HOME/.config
cmp -s "$T/gen.$n_gen" "$T/gen.3" || fail "\$XDG_CONFIG_HOME/llmchat/config was not read"
pass "the config file is \$XDG_CONFIG_HOME/llmchat/config"
