#!/bin/sh
# e2e_native.sh — a Q4_K_M file computed in place (--weights native, the default):
# rand256-q4_k_m.gguf (Q4_K with Q6_K, made by llama-quantize) gives llama.cpp's greedy
# text (golden/llamacpp_greedy_q4_k_m.txt, llama-cli --temp 0; the KV cache in f32 as
# llama.cpp keeps it in f16, not int8); --verbose says the Q4_K and Q6_K tensors were
# used in place and nothing converted, and --weights q8_0 that they were converted;
# resident memory at its peak (VmHWM, from /proc/self/status) stays within the file, the
# KV cache and 64 MB; the x86 kernels (AVX2, AVX-VNNI, AVX-512) hold the Q4_K matrices as panels by
# default (said by --verbose) and leave the greedy text as --panels off gives it; the
# logit lens and a trace replay work on the file.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

model=$DATA/rand256-q4_k_m.gguf
golden=$GOLDEN/llamacpp_greedy_q4_k_m.txt

# ---- greedy text equal to llama-cli's ----
"$PYTHON" - "$golden" >"$T/prompts" <<'PYEOF' || fail "cannot read $golden"
import sys
for block in open(sys.argv[1], "rb").read().split(b"=== ")[1:]:
    head = block.split(b"\n", 1)[0].decode()
    print(head)
PYEOF
checked=0
while IFS='	' read -r prompt n; do
    # -n counts positions with the prompt: enough for llama-cli's n new tokens and more
    run_llmchat -m generate -t 0 -n $((n + 24)) --kv-cache f32 -i "$prompt" "$model" </dev/null
    assert_status 0
    "$PYTHON" - "$golden" "$prompt" "$T/out" <<'PYEOF' || fail "prompt '$prompt': llmchat's greedy text is not llama-cli's"
import sys
golden, prompt, out = sys.argv[1], sys.argv[2], sys.argv[3]
for block in open(golden, "rb").read().split(b"=== ")[1:]:
    head, text = block.split(b"\n", 1)
    if head.decode().split("\t")[0] != prompt:
        continue
    # byte tokens that end a text may be half a character: compare whole characters
    want = text.rstrip(b"\n").decode("utf-8", "replace")[:-1]
    got = open(out, "rb").read().decode("utf-8", "replace")
    if not got.startswith(want):
        i = 0
        while i < min(len(want), len(got)) and want[i] == got[i]:
            i += 1
        print("differs at character %d of %d:\n  llama-cli %r\n  llmchat   %r"
              % (i, len(want), want[i:i + 30], got[i:i + 30]), file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
sys.exit(1)
PYEOF
    checked=$((checked + 1))
done <"$T/prompts"
[ "$checked" -eq 2 ] || fail "checked $checked prompts, expected 2"
pass "greedy text on rand256-q4_k_m.gguf in place equals llama-cli's for $checked prompts"

# ---- --verbose: in place, nothing converted; resident memory ----
run_llmchat --verbose -m generate -t 0 -n 64 -i "Once upon a time" "$model" </dev/null
assert_status 0
assert_file_contains "the Q4_K and Q6_K tensors are in place" "$T/err" "weights: Q4_K, Q6_K in place"
# (with the x86 kernels, the Q4_K panels are said between, and take no memory more)
assert_file_contains "the weights' memory is the file's" "$T/err" ": 1.2 MB resident"
assert_not_contains "nothing converted" "$(cat "$T/err")" "at load"
if [ "${LLMCHAT_SANITIZERS:-no}" = no ] && grep -q "resident memory" "$T/err"; then
    "$PYTHON" - "$T/err" <<'PYEOF' || fail "resident memory above the file, the KV cache and 64 MB"
import re, sys
text = open(sys.argv[1]).read()
peak, file_mb = map(float, re.search(r"peak ([0-9.]+) MB .*file is ([0-9.]+) MB", text).groups())
kv_mb = 2 * 2 * 256 * 256 * 4 / 1e6   # layers x (K, V) x context x kv_dim x fp32: an upper bound
bound = file_mb + kv_mb + 64
print("peak %.1f MB, bound %.1f MB" % (peak, bound))
sys.exit(0 if peak <= bound else 1)
PYEOF
    pass "resident memory at its peak within file + KV cache + 64 MB"
fi
run_llmchat --verbose -m generate -t 0 -n 8 -i "Once" --weights q8_0 "$model" </dev/null
assert_status 0
assert_file_contains "--weights q8_0 converts" "$T/err" "Q4_K, Q6_K → Q8_0 at load"
pass "--verbose says what was in place and what was converted"

# ---- Q4_K decode panels (the x86 kernels' default; --panels off): said, the same text ----
for isa in avx2 avxvnni avx512; do
    "$LLMCHAT_BIN" --kernels $isa -m tokenize -i x "$model" >/dev/null 2>&1 || continue
    run_llmchat --verbose --kernels $isa --panels off -m generate -t 0 -n 48 --kv-cache f32 \
        -i "Once upon a time" "$model" </dev/null
    assert_status 0
    assert_not_contains "--panels off packs no Q4_K panels ($isa)" "$(cat "$T/err")" \
        "Q4_K as decode panels"
    cp "$T/out" "$T/plain"
    for pages in on off; do
        run_llmchat --verbose --kernels $isa --huge-pages $pages -m generate -t 0 -n 48 \
            --kv-cache f32 -i "Once upon a time" "$model" </dev/null
        assert_status 0
        assert_file_contains "the Q4_K matrices are held as panels ($isa, --huge-pages $pages)" \
            "$T/err" "Q4_K as decode panels, in place of"
        cmp -s "$T/out" "$T/plain" || fail "Q4_K panels change the $isa kernels' greedy text"
    done
    pass "the $isa kernels hold the Q4_K matrices as panels by default, the same greedy text"
done

# ---- the rest works on the file: a trace with the lens and attention, its replay ----
run_llmchat -m generate -t 0 -n 12 -i "Once upon a time" --trace "$T/run.jsonl" --trace-lens \
    --trace-attn "$model" </dev/null
assert_status 0
assert_file_contains "the trace records native weights" "$T/run.jsonl" '"weights":"native"'
run_llmchat --replay "$T/run.jsonl" --compare
assert_status 0
assert_file_contains "replay on the same weights agrees" "$T/out" "top-1 agreement: 100.00%"
run_llmchat --replay "$T/run.jsonl" --compare --weights q8_0
assert_status 0
assert_file_contains "replay with q8_0 reports the agreement" "$T/out" "top-1 agreement:"
pass "traces with the lens and attention, and their replay, work on a Q4_K_M file"
