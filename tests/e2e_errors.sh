#!/bin/sh
# e2e_errors.sh — bad input gets a clear "llmchat: ..." message and exit status 1
# (runtime: bad or missing files, a prompt that does not fit) or 2 (usage), never a crash:
# missing, truncated, foreign and absurd model files, a mismatched tokenizer, GGUF v1,
# unknown options and out-of-range values. (run_llmchat fails on any signal death.)
. "$LLMCHAT_SRCDIR/tests/lib.sh"

tok=$DATA/tok512.bin
model=$DATA/stories260K.bin

# expect STATUS WHAT ARGS...: llmchat ARGS exits with STATUS and says why on stderr.
expect() {
    want=$1 what=$2
    shift 2
    run_llmchat "$@" </dev/null
    [ "$rc" -eq "$want" ] || fail "$what: expected exit status $want, got $rc"
    assert_error_message
}

# stderr_has WHAT EXTENDED-REGEX: the last run's stderr matches.
stderr_has() {
    grep -Eq -- "$2" "$T/err" || fail "$1: stderr does not match /$2/"
}

# ---- model files ----
expect 1 "missing model" -m generate -z "$tok" -i hi "$T/no-such-model.bin"
assert_file_contains "missing model message" "$T/err" "$T/no-such-model.bin"

head -c 500000 "$model" >"$T/truncated.bin"
expect 1 "truncated model" -m generate -z "$tok" -i hi "$T/truncated.bin"
stderr_has "truncated model message" 'truncated'
assert_file_contains "truncated model message names the file" "$T/err" "truncated.bin"

: >"$T/empty.bin"
expect 1 "empty model file" -m generate -z "$tok" -i hi "$T/empty.bin"

"$PYTHON" - "$T" <<'EOF'
import os, random, struct, sys
d = sys.argv[1]
rnd = random.Random(42)
with open(os.path.join(d, "random.bin"), "wb") as f:
    f.write(bytes(rnd.randrange(256) for _ in range(65536)))
# "ak42" magic with a version that does not exist.
with open(os.path.join(d, "version7.bin"), "wb") as f:
    hdr = struct.pack("<Ii7i", 0x616B3432, 7, 64, 172, 5, 8, 4, 512, 512)
    f.write(hdr + bytes(256 - len(hdr)) + bytes(4096))
# Legacy v0 headers with absurd shapes.
with open(os.path.join(d, "negdim.bin"), "wb") as f:
    f.write(struct.pack("<7i", -64, 172, 5, 8, 4, 512, 512) + bytes(4096))
with open(os.path.join(d, "huge.bin"), "wb") as f:
    f.write(struct.pack("<7i", 1 << 30, 1 << 30, 1 << 20, 8, 4, 512, 1 << 30) + bytes(4096))
with open(os.path.join(d, "badheads.bin"), "wb") as f:
    f.write(struct.pack("<7i", 64, 172, 5, 0, 0, 512, 512) + bytes(4096))
with open(os.path.join(d, "gqa.bin"), "wb") as f:   # n_heads not a multiple of n_kv_heads
    f.write(struct.pack("<7i", 64, 172, 5, 8, 3, 512, 512) + bytes(4096))
EOF
for f in random version7 negdim huge badheads gqa; do
    expect 1 "bad model $f.bin" -m generate -z "$tok" -i hi "$T/$f.bin"
    assert_file_contains "bad model $f.bin message names the file" "$T/err" "$f.bin"
done
stderr_has "GQA shape message" 'head'

expect 1 "a directory as the model" -m generate -z "$tok" -i hi "$T"

expect 1 "GGUF version 1" -m generate -z "$tok" -i hi "$DATA/stories260K-gguf-v1-head.gguf"
assert_file_contains "GGUF v1 message names the file" "$T/err" "stories260K-gguf-v1-head.gguf"

expect 1 "missing model in chat mode" -m chat -z "$tok" "$T/no-such-model.bin"
pass "bad model files are refused with exit status 1"

# ---- tokenizers ----
expect 1 "tokenizer/model vocab mismatch" -m generate -z "$DATA/tokenizer.bin" -i hi "$model"
stderr_has "vocab mismatch message" '32,?000'
stderr_has "vocab mismatch message" '512'

expect 1 "missing tokenizer" -m generate -z "$T/no-such-tok.bin" -i hi "$model"
assert_file_contains "missing tokenizer message" "$T/err" "$T/no-such-tok.bin"

head -c 3000 "$tok" >"$T/tok-truncated.bin"
expect 1 "truncated tokenizer" -m generate -z "$T/tok-truncated.bin" -i hi "$model"
pass "bad tokenizers are refused with exit status 1"

# ---- other runtime failures ----
long=$("$PYTHON" -c 'print(" ".join(["Once upon a time there was a little girl named Lily."] * 20))')
expect 1 "prompt longer than the context" -m generate -c 16 -z "$tok" -i "$long" "$model"
stderr_has "prompt too long message" 'context|too long'

expect 1 "missing -f file" -m generate -z "$tok" -f "$T/no-such-prompt.txt" "$model"
assert_file_contains "missing -f file message" "$T/err" "$T/no-such-prompt.txt"

expect 1 "unwritable --trace" -m generate -n 4 -z "$tok" -i hi --trace "$T/no-such-dir/trace.jsonl" "$model"
assert_file_contains "unwritable trace message" "$T/err" "$T/no-such-dir/trace.jsonl"

# A failing /save is reported and the conversation goes on.
# Corrupt weights: NaN in a norm, in an fp32 matrix (quantized at load, or used as
# fp32), in a Q8_0 scale; a damaged header's padding; finite weights so large that the
# logits overflow (caught at run time, in every mode).
"$PYTHON" - "$T" "$DATA/stories260K.bin" "$DATA/stories260K_q80.bin" <<'EOF'
import struct, sys
d, v0, v2 = sys.argv[1], open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read()
nan = struct.pack("<f", float("nan"))
def write(name, data, off, val):
    b = bytearray(data)
    b[off:off + len(val)] = val
    open(d + "/" + name, "wb").write(b)
dim, vocab, layers = 64, 512, 5
emb = 28 + 4 * vocab * dim                                   # v0: rms_att follows the embedding
write("nan-norm.bin", v0, emb + 12, nan)                     # rms_att of layer 0
write("nan-wq.bin", v0, emb + 4 * layers * dim + 40, nan)    # wq of layer 0, row 0
norms = 4 * (2 * layers * dim + dim)
write("nan-scale.bin", v2, 256 + norms + vocab * dim + 8, nan)  # token_embedding's scales
write("bad-padding.bin", v2, 200, b"\x01")
write("huge-row.bin", v0, 28 + 4 * 300 * dim, struct.pack("<64f", *([3e38] * 64)))
EOF
expect 1 "NaN in a norm" -m generate -z "$tok" -i hi "$T/nan-norm.bin"
stderr_has "NaN in a norm" 'rms_att of layer 0 holds a NaN'
expect 1 "NaN in an fp32 matrix" -m generate -z "$tok" -i hi "$T/nan-wq.bin"
stderr_has "NaN in an fp32 matrix" 'wq of layer 0 holds NaN'
expect 1 "NaN in an fp32 matrix, --weights f32" -m generate --weights f32 -z "$tok" -i hi "$T/nan-wq.bin"
stderr_has "NaN in an fp32 matrix, --weights f32" 'wq of layer 0 holds NaN'
expect 1 "NaN in a Q8_0 scale" -m generate -z "$tok" -i hi "$T/nan-scale.bin"
stderr_has "NaN in a Q8_0 scale" 'token_embedding holds NaN'
expect 1 "header padding" -m generate -z "$tok" -i hi "$T/bad-padding.bin"
stderr_has "header padding" 'padding'
for w in q8_0 f32; do
    expect 1 "overflowing logits ($w)" -m generate --weights "$w" -z "$tok" -i "Once upon a time" "$T/huge-row.bin"
    stderr_has "overflowing logits ($w)" 'NaN or infinite logits'
done
expect 1 "overflowing logits (perplexity)" -m perplexity -z "$tok" -i "Once upon a time" "$T/huge-row.bin"
printf 'Hi.\n' >"$T/in"
run_llmchat -m chat -z "$tok" "$T/huge-row.bin" <"$T/in"
[ "$rc" -eq 1 ] || fail "overflowing logits (chat): expected exit status 1, got $rc"
assert_error_message

# Chat exits 1 when no message could be answered (each too long for -c 32).
printf 'Tell me a long story about a dog named Max who runs in the park.\nAnd another one about a cat.\n' >"$T/in"
run_llmchat -m chat -c 32 -z "$tok" "$BUNDLED/chat260K.bin" <"$T/in"
[ "$rc" -eq 1 ] || fail "chat with every message refused: expected exit status 1, got $rc"
assert_file_contains "chat with every message refused" "$T/err" "no message could be answered"

printf '/save %s\nTell me a story about Tom.\n' "$T/no-such-dir/conv.txt" >"$T/in"
run_llmchat -m chat -t 0 -n 10 -z "$tok" "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
assert_file_contains "failed /save message" "$T/err" "$T/no-such-dir/conv.txt"
[ -s "$T/out" ] || fail "no reply after a failed /save"
pass "runtime failures exit 1 with a message"

# ---- usage errors: exit status 2 ----
expect 2 "unknown option" --frobnicate "$model"
expect 2 "negative temperature" -t -1 -z "$tok" "$model"
expect 2 "temperature not a number" -t warm -z "$tok" "$model"
expect 2 "top-p above 1" -p 1.5 -z "$tok" "$model"
expect 2 "zero threads" -T 0 -z "$tok" "$model"
expect 2 "steps not a number" -n abc -z "$tok" "$model"
expect 2 "steps with trailing junk" -n 10x -z "$tok" "$model"
expect 2 "steps beyond any context" -n 2147483647 -z "$tok" "$model"
expect 2 "negative top-k" -k -1 -z "$tok" "$model"
expect 2 "min-p above 1" --min-p 2 -z "$tok" "$model"
expect 2 "negative context" -c -5 -z "$tok" "$model"
expect 2 "seed not a number" -s abc -z "$tok" "$model"
expect 2 "unknown mode" -m bogus -z "$tok" "$model"
expect 2 "unknown weights type" --weights q4 -z "$tok" "$model"
expect 2 "unknown kernel family" --kernels sse9 -z "$tok" "$model"
expect 2 "unknown KV cache type" --kv-cache q4 -z "$tok" "$model"
stderr_has "unknown KV cache type" "--kv-cache must be auto, q8_0 or f32"
expect 2 "option without its argument" -z "$tok" "$model" -i
expect 2 "two MODELs" -m generate -z "$tok" -i hi "$model" "$model"
expect 2 "MODEL and --model" -m generate -z "$tok" -i hi --model "$model" "$model"
expect 2 "a position past the input" -m tensors -z "$tok" -i "" --position 3 "$model"
stderr_has "a position past the input (one position: singular)" "the input has 1 position \(0-0"
expect 2 "a flag given a value" --lookup=1 -z "$tok" "$model"
stderr_has "a flag given a value" "option '--lookup' takes no value"
expect 2 "a flag with a short name given a value" --help=1
stderr_has "a flag with a short name given a value" "option '--help' takes no value"
expect 2 "--trace-tensors past the last layer" -m generate -n 2 -z "$tok" -i hi --trace "$T/tt.jsonl" \
    --trace-tensors 3-99 "$model"
stderr_has "--trace-tensors past the last layer" "the model has layers 0-4"
[ ! -e "$T/tt.jsonl" ] || fail "a refused --trace-tensors left a trace"
expect 2 "--trace with -m tokenize" -m tokenize -z "$tok" -i hi --trace "$T/tk.jsonl"
expect 2 "--pieces outside -m tokenize" -m generate --pieces -z "$tok" -i hi "$model"
pass "usage errors exit 2"

# ---- --help and --version ----
run_llmchat --help </dev/null
assert_status 0
assert_file_contains "--help" "$T/out" "--tokenizer"
assert_file_contains "--help" "$T/out" "--mode"
run_llmchat -V </dev/null
assert_status 0
grep -Eq '[0-9]+\.[0-9]+' "$T/out" || fail "--version prints no version number"
pass "--help and --version"
