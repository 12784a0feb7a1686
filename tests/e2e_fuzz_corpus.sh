#!/bin/sh
# e2e_fuzz_corpus.sh — replays the fuzz corpus through the fuzz targets' own entry
# points, built without libFuzzer (fuzz/replay.c): the crafted seeds and every input
# that once crashed a target (fuzz/corpus/TARGET/crash-*), plus the real model and
# tokenizer files. A target aborts when one of its checks fails, and under
# --enable-sanitizers ASan and UBSan watch every input, so each of these files stays
# a regression test.
. "$(dirname "$0")/lib.sh"

B=$(dirname "$LLMCHAT_BIN")/fuzz
C=$LLMCHAT_SRCDIR/fuzz/corpus

for t in model tokenizer encode template chatfile gguf config trace bpe_encode bpe_vocab control_vector \
    trace_order; do
    [ -x "$B/replay_$t" ] || hard_error "$B/replay_$t was not built"
    set -- "$C/$t"
    case $t in
    model) set -- "$@" "$DATA/stories260K.bin" "$DATA/stories260K_q80.bin" \
        "$DATA/aidreams260K.bin" "$DATA/stories260K-gguf-v1-head.gguf" "$BUNDLED/chat260K_q80.bin" \
        "$DATA/stories260K.gguf" "$DATA/stories260K-q8_0.gguf" "$DATA/gguf-types" ;;
    tokenizer) set -- "$@" "$DATA/tok512.bin" "$DATA/tokenizer.bin" "$DATA/babyllama_tok105.bin" ;;
    gguf) set -- "$@" "$DATA/stories260K.gguf" "$DATA/stories260K-q8_0.gguf" \
        "$DATA/ggml-vocab-llama-spm.gguf" "$DATA/stories260K-gguf-v1-head.gguf" "$DATA/gguf-types" ;;
    control_vector) set -- "$@" "$DATA/control_vector" "$DATA/stories260K-q8_0.gguf" ;;
    esac
    run_program "replay_$t" "$B/replay_$t" "$@"
    assert_status 0
    n=$(sed -n 's/^replay: \([0-9]*\) inputs.*/\1/p' "$T/err")
    [ "${n:-0}" -ge 5 ] || fail "replay_$t read ${n:-no} inputs from $C/$t"
    pass "fuzz_$t: $n inputs replayed"
done
