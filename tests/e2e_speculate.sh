#!/bin/sh
# e2e_speculate.sh — speculative decoding end to end: -m generate --lookup (prompt
# lookup) and --draft FILE (a draft model) print, greedy and seeded sampled, byte for
# byte what plain decoding prints, asking for as many guesses a step as pay (the
# default) or for a fixed number (--draft-min), with some guesses accepted and stderr
# saying how many; the trace marks the guessed positions ("guess"), each accepted one
# equal to its next, and --replay reproduces such a trace; a draft with another
# vocabulary is refused (exit status 1), bad uses get one line and exit status 2.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

model=$DATA/stories260K.bin
tok=$DATA/tok512.bin
prompt="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. Once upon a time, there was a little"

for how in "-t 0" "-t 0.8 -s 3" "-t 1 -p 0.9 -s 11 --repeat-penalty 1.1"; do
    # shellcheck disable=SC2086 # $how is several options
    run_llmchat -m generate $how -n 120 -z "$tok" -i "$prompt" "$model" </dev/null
    assert_status 0
    cp "$T/out" "$T/plain.txt"
    # shellcheck disable=SC2086
    run_llmchat -m generate $how -n 120 -z "$tok" -i "$prompt" --lookup --draft-max 6 \
        "$model" </dev/null
    assert_status 0
    cmp -s "$T/out" "$T/plain.txt" || {
        diff "$T/plain.txt" "$T/out" | head -5 >&2
        fail "--lookup ($how) printed other text than plain decoding"
    }
    # as many guesses as pay (--draft-min 0, the default): how many depends on the timing
    grep -q "^lookup: [0-9]* guessed, [0-9]* accepted ([0-9]*%) in [0-9]* checks" "$T/err" ||
        fail "--lookup ($how): no summary on stderr: $(cat "$T/err")"
    # always 6 (--draft-min 6): the same text, and guesses accepted
    # shellcheck disable=SC2086
    run_llmchat -m generate $how -n 120 -z "$tok" -i "$prompt" --lookup --draft-min 6 \
        --draft-max 6 "$model" </dev/null
    assert_status 0
    cmp -s "$T/out" "$T/plain.txt" || fail "--lookup --draft-min 6 ($how) printed other text"
    grep -q "^lookup: [0-9]* guessed, [1-9][0-9]* accepted ([0-9]*%) in [0-9]* checks" "$T/err" ||
        fail "--lookup --draft-min 6 ($how): no summary with accepted guesses: $(cat "$T/err")"
done
pass "--lookup prints plain decoding's text, greedy and sampled, and says what it accepted"

for how in "-t 0" "-t 0.8 -s 3"; do
    # shellcheck disable=SC2086 # $how is several options
    run_llmchat -m generate $how -n 120 -z "$tok" -i "$prompt" "$model" </dev/null
    assert_status 0
    cp "$T/out" "$T/plain.txt"
    # shellcheck disable=SC2086
    for fixed in "" "--draft-min 4"; do
        # shellcheck disable=SC2086
        run_llmchat -m generate $how -n 120 -z "$tok" -i "$prompt" \
            --draft "$DATA/stories260K_q80.bin" --draft-max 4 $fixed "$model" </dev/null
        assert_status 0
        cmp -s "$T/out" "$T/plain.txt" ||
            fail "--draft $fixed ($how) printed other text than plain decoding"
    done
    grep -q "^draft: [0-9]* guessed, [1-9][0-9]* accepted ([0-9]*%) in [0-9]* checks" "$T/err" ||
        fail "--draft --draft-min 4 ($how): no summary with accepted guesses: $(cat "$T/err")"
done
pass "--draft (the int8 twin) prints plain decoding's text, greedy and sampled"

# ---- -m chat: the same replies, turn after turn ----
chat=$BUNDLED/chat260K.bin
printf '%s\n' "Tell me a story about Tom." "Now one about a dog named Max." \
    "And one about Lily and her cat." >"$T/messages"
for how in "-t 0" "-t 0.8 -s 7"; do
    # shellcheck disable=SC2086 # $how is several options
    run_llmchat -m chat $how -z "$tok" "$chat" <"$T/messages"
    assert_status 0
    cp "$T/out" "$T/plain.txt"
    for spec in "--lookup" "--draft $BUNDLED/chat260K_q80.bin --draft-min 3 --draft-max 3"; do
        # shellcheck disable=SC2086
        run_llmchat -m chat $how -z "$tok" $spec "$chat" <"$T/messages"
        assert_status 0
        cmp -s "$T/out" "$T/plain.txt" || {
            diff "$T/plain.txt" "$T/out" | head -5 >&2
            fail "-m chat $spec ($how) replied otherwise than plain decoding"
        }
        grep -q "^[a-z]*: [0-9]* guessed, [0-9]* accepted ([0-9]*%) in [0-9]* checks" "$T/err" ||
            fail "-m chat $spec ($how): no summary on stderr: $(cat "$T/err")"
    done
done
grep -q "^draft: [0-9]* guessed, [1-9][0-9]* accepted" "$T/err" ||
    fail "-m chat --draft: no guess accepted: $(cat "$T/err")"
pass "-m chat with --lookup or --draft replies as plain decoding does, greedy and sampled"

# ---- the trace: guessed positions, and a replay of it ----
run_llmchat -m generate -t 0.8 -s 5 -n 100 -z "$tok" -i "$prompt" --lookup --draft-min 8 \
    --trace "$T/run.jsonl" "$model" </dev/null
assert_status 0
"$PYTHON" - "$T/run.jsonl" <<'PY' || fail "the trace's guesses do not add up"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()][1:]
guessed = [r for r in rows if "guess" in r]
accepted = [r for r in guessed if r["guess"] == r["next"]]
assert guessed and accepted, (len(guessed), len(accepted))
assert all(r["phase"] == "gen" and r["sampler"] for r in guessed)
assert all(r["batch"] is False for r in rows if r["phase"] == "gen")
PY
run_llmchat --replay "$T/run.jsonl" -z "$tok"
assert_status 0
assert_file_contains "replay of a --lookup trace" "$T/out" "reproduced"
pass "the trace marks guesses, and a --lookup run replays from it"

# ---- bad uses ----
run_llmchat -m perplexity --lookup -z "$tok" -i hi "$model" </dev/null
assert_status 2
assert_file_contains "--lookup in perplexity" "$T/err" "--lookup is for -m generate, -m chat and the TUI"
run_llmchat -m generate --draft-max 4 -z "$tok" -i hi "$model" </dev/null
assert_status 2
assert_file_contains "--draft-max alone" "$T/err" "--draft-max is for --lookup and --draft"
run_llmchat -m generate --lookup --draft-max 17 -z "$tok" -i hi "$model" </dev/null
assert_status 2
assert_file_contains "--draft-max out of range" "$T/err" "from 1 to 16"
run_llmchat -m generate --draft-min 2 -z "$tok" -i hi "$model" </dev/null
assert_status 2
assert_file_contains "--draft-min alone" "$T/err" "--draft-min is for --lookup and --draft"
run_llmchat -m generate --draft-min 0 -z "$tok" -i hi "$model" </dev/null
assert_status 2
assert_file_contains "--draft-min alone, as the default" "$T/err" "--draft-min is for --lookup and --draft"
run_llmchat -m generate --lookup --draft-min 5 --draft-max 4 -z "$tok" -i hi "$model" </dev/null
assert_status 2
assert_file_contains "--draft-min over --draft-max" "$T/err" "--draft-min 5 is more than --draft-max 4"
run_llmchat -m generate --lookup --draft-min 17 -z "$tok" -i hi "$model" </dev/null
assert_status 2
assert_file_contains "--draft-min out of range" "$T/err" "from 0 to 16"
run_llmchat -m generate --lookup --draft "$DATA/stories260K_q80.bin" -z "$tok" -i hi "$model" </dev/null
assert_status 2
assert_file_contains "--lookup and --draft" "$T/err" "not both"
run_llmchat -m tokenize --draft "$DATA/stories260K_q80.bin" -z "$tok" -i hi "$model" </dev/null
assert_status 2
assert_file_contains "--draft in tokenize" "$T/err" "--draft is for -m generate, -m chat and the TUI"
run_llmchat --server http://127.0.0.1:9 -m generate --lookup -i hi </dev/null
assert_status 2
assert_file_contains "--lookup with --server" "$T/err" "drop --server"
run_llmchat -m generate --compare-server http://127.0.0.1:9 --draft "$DATA/stories260K_q80.bin" \
    -z "$tok" -i hi "$model" </dev/null
assert_status 2
assert_file_contains "--draft with --compare-server" "$T/err" "drop --lookup and --draft"
pass "bad uses of --lookup, --draft, --draft-max and --draft-min get one line and exit status 2"

# ---- a draft with another vocabulary ----
run_llmchat -m generate --draft "$DATA/babyllama_tok105_model5000.bin" -z "$tok" -i hi \
    "$model" </dev/null
assert_status 1
assert_file_contains "--draft of another vocabulary" "$T/err" "must share the model's vocabulary"
[ ! -s "$T/out" ] || fail "a refused draft still printed: $(cat "$T/out")"
pass "a draft model with another vocabulary is refused before anything is printed"
