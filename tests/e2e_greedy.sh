#!/bin/sh
# e2e_greedy.sh — llmchat -m generate's greedy text equals the reference C
# implementation's (tests/data/golden/generate_greedy.jsonl) on every golden model with
# fp32 weights; the int8 paths (quantized at load, and the int8 file stories260K_q80.bin,
# whose groups straddle its rows) agree with it on the first sentence and stay fluent;
# every kernel family the CPU has agrees too, and one it lacks is refused cleanly.
# scripts/check-aarch64 runs this under qemu-user on each AArch64 kernel table.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

golden=$GOLDEN/generate_greedy.jsonl

# ---- every golden entry, fp32 reference weights, greedy ----
# The golden "steps" counts positions including the prompt, so the reference text is a
# prefix of ours (which runs "steps" NEW tokens), up to the reference's final newline.
count=$(jsonl_count "$golden")
[ "$count" -gt 0 ] || fail "no golden entries in $golden"
i=0
while [ "$i" -lt "$count" ]; do
    model=$(jsonl_get "$golden" "$i" model)
    tok=$(jsonl_get "$golden" "$i" tokenizer)
    prompt=$(jsonl_get "$golden" "$i" prompt)
    steps=$(jsonl_get "$golden" "$i" steps)
    jsonl_get "$golden" "$i" text | "$PYTHON" -c \
        'import sys; t = sys.stdin.read(); sys.stdout.write(t[:-1] if t.endswith("\n") else t)' \
        >"$T/want"
    run_llmchat -m generate --weights f32 -t 0 -n "$steps" -z "$(model_file "$tok")" -i "$prompt" \
        "$(model_file "$model")" </dev/null
    assert_status 0
    assert_prefix "golden $i ($model, prompt '$prompt'): our text does not start with the reference text" \
        "$T/want" "$T/out"
    i=$((i + 1))
done
pass "$count golden greedy generations match the reference (fp32)"

# ---- the default int8 path on the same model agrees with the fp32 golden ----
once=$(jsonl_get "$golden" 0 text)
assert_eq "golden entry 0 prompt" "Once upon a time" "$(jsonl_get "$golden" 0 prompt)"
first_sentence=${once%%.*}.
run_llmchat -m generate -t 0 -n 200 -z "$DATA/tok512.bin" -i "Once upon a time" "$DATA/stories260K.bin" </dev/null
assert_status 0
out=$(cat "$T/out")
case $out in
"$first_sentence"*) ;;
*) fail "stories260K.bin at Q8_0 (load-time quantization): first sentence differs from fp32: [$first_sentence]" ;;
esac
pass "stories260K.bin quantized at load agrees with fp32 on the first sentence"

# ---- the int8 file (groups straddle the 172-wide rows): fluent, not "upon upon" ----
run_llmchat -m generate -t 0 -n 200 -z "$DATA/tok512.bin" -i "Once upon a time" "$DATA/stories260K_q80.bin" </dev/null
assert_status 0
out=$(cat "$T/out")
assert_not_contains "stories260K_q80.bin greedy text" "$out" "upon upon"
case $out in
"$first_sentence"*) ;;
*) fail "stories260K_q80.bin: first sentence differs from the fp32 model's: [$first_sentence]" ;;
esac
pass "stories260K_q80.bin agrees with fp32 on the first sentence"

# ---- every kernel family this CPU has gives the golden text ----
tables=$(kernel_tables)
[ -n "$tables" ] || fail "llmchat --help lists no kernel tables"
for k in $tables; do
    run_llmchat -m generate -t 0 -n 40 --kernels "$k" -z "$DATA/tok512.bin" -i "Once upon a time" \
        "$DATA/stories260K.bin" </dev/null
    if [ "$rc" -ne 0 ]; then
        # A family the CPU lacks must be refused cleanly, not crash.
        assert_status 2
        assert_error_message
        echo "note: --kernels $k refused on this CPU: $(head -n 1 "$T/err")"
        continue
    fi
    out=$(cat "$T/out")
    case $out in
    "$first_sentence"*) ;;
    *) fail "--kernels $k: first sentence differs from fp32: [$first_sentence]" ;;
    esac
done
pass "kernel families agree on the first sentence"

