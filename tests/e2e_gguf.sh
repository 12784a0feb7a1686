#!/bin/sh
# e2e_gguf.sh — GGUF models end to end: stories260K.gguf gives the reference C
# implementation's greedy text with --weights f32, and exactly stories260K.bin's text in
# fp32 and when quantized at load; stories260K-q8_0.gguf agrees with stories260K_q80.bin on
# the first sentence of every golden prompt (the same int8 values, but GGUF keeps the
# scales in half precision, so the texts part later); the tokenizer comes from the file
# (no tokenizer.bin anywhere); -z takes a vocabulary-only GGUF; a gpt2 tokenizer without
# its pre-tokenizer is refused with a message saying so; --verbose says what loading
# did; every hostile file (made at test time, byte-identical to the reference set's) is
# refused with a message and exit status 1.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

golden=$GOLDEN/generate_greedy.jsonl

# A directory holding the GGUF models alone: no tokenizer.bin or tok512.bin beside them.
mkdir "$T/alone"
cp "$DATA/stories260K.gguf" "$DATA/stories260K-q8_0.gguf" "$T/alone/"

# ---- greedy text on every golden prompt of stories260K ----
count=$(jsonl_count "$golden")
i=0
n=0
while [ "$i" -lt "$count" ]; do
    model=$(jsonl_get "$golden" "$i" model)
    if [ "$model" != stories260K.bin ]; then
        i=$((i + 1))
        continue
    fi
    prompt=$(jsonl_get "$golden" "$i" prompt)
    steps=$(jsonl_get "$golden" "$i" steps)
    golden_text "$golden" "$i" >"$T/want"

    # fp32: the reference implementation's text
    run_llmchat -m generate --weights f32 -t 0 -n "$steps" -i "$prompt" "$T/alone/stories260K.gguf" </dev/null
    assert_status 0
    assert_prefix "golden $i (stories260K.gguf --weights f32, prompt '$prompt')" "$T/want" "$T/out"

    # the same numbers: exactly the text of stories260K.bin in fp32
    cp "$T/out" "$T/gguf_f32"
    run_llmchat -m generate --weights f32 -t 0 -n "$steps" -z "$DATA/tok512.bin" -i "$prompt" "$DATA/stories260K.bin" </dev/null
    assert_status 0
    cmp -s "$T/out" "$T/gguf_f32" || fail "prompt '$prompt': stories260K.gguf and stories260K.bin give different text in fp32"

    # quantized at load: exactly what stories260K.bin gives (the same fp32 numbers)
    run_llmchat -m generate -t 0 -n "$steps" -i "$prompt" "$T/alone/stories260K.gguf" </dev/null
    assert_status 0
    cp "$T/out" "$T/gguf_q8"
    run_llmchat -m generate -t 0 -n "$steps" -z "$DATA/tok512.bin" -i "$prompt" "$DATA/stories260K.bin" </dev/null
    assert_status 0
    cmp -s "$T/out" "$T/gguf_q8" || fail "prompt '$prompt': stories260K.gguf and stories260K.bin quantized at load give different text"

    # the Q8_0 file (scales in half precision, rows of 172 straddling blocks) and the
    # llama2.c int8 file (fp32 scales): the same int8 values; they agree on the first sentence
    run_llmchat -m generate -t 0 -n "$steps" -i "$prompt" "$T/alone/stories260K-q8_0.gguf" </dev/null
    assert_status 0
    gguf_first=$("$PYTHON" -c 'import sys; t = open(sys.argv[1]).read(); p = len(sys.argv[2]); print(t[:t.find(".", p) + 1])' "$T/out" "$prompt")
    run_llmchat -m generate -t 0 -n "$steps" -z "$DATA/tok512.bin" -i "$prompt" "$DATA/stories260K_q80.bin" </dev/null
    assert_status 0
    bin_first=$("$PYTHON" -c 'import sys; t = open(sys.argv[1]).read(); p = len(sys.argv[2]); print(t[:t.find(".", p) + 1])' "$T/out" "$prompt")
    assert_eq "prompt '$prompt': first sentence of stories260K-q8_0.gguf vs stories260K_q80.bin" "$bin_first" "$gguf_first"
    assert_not_contains "stories260K-q8_0.gguf greedy text" "$(cat "$T/out")" "upon upon"
    n=$((n + 1))
    i=$((i + 1))
done
[ "$n" -ge 5 ] || fail "only $n golden prompts for stories260K.bin"
pass "$n golden prompts: stories260K.gguf = reference = stories260K.bin (fp32) and = stories260K.bin (Q8_0); stories260K-q8_0.gguf agrees with stories260K_q80.bin"

# ---- the tokenizer: from the file, or a vocabulary-only GGUF with -z ----
run_llmchat -m tokenize -i "Once upon a time" "$T/alone/stories260K.gguf" </dev/null
assert_status 0
assert_eq "ids from the model's own vocabulary" "403 407 261 378" "$(trim <"$T/out")"
golden_tok=$GOLDEN/tokenizer_llama2.jsonl
for k in 0 7 100 479; do
    jsonl_get "$golden_tok" "$k" text >"$T/text"
    run_llmchat -m tokenize -z "$DATA/ggml-vocab-llama-spm.gguf" -f "$T/text" </dev/null
    assert_status 0
    assert_eq "vocabulary GGUF, golden $k" "$(jsonl_get "$golden_tok" "$k" ids)" "$(trim <"$T/out")"
done
pass "the tokenizer comes from the GGUF file; -z takes a vocabulary-only GGUF"

# a tokenizer llmchat cannot run: stories260K.gguf with tokenizer.ggml.model "gpt2" (and
# no tokenizer.ggml.pre nor merges)
# (one byte shorter; one more padding byte keeps the data at byte 14,176)
"$PYTHON" - "$DATA/stories260K.gguf" "$T/alone/tok-gpt2.gguf" <<'PY' || fail "could not make tok-gpt2.gguf"
import struct, sys
b = open(sys.argv[1], "rb").read()
k = b.index(b"tokenizer.ggml.model") + len(b"tokenizer.ggml.model")
assert struct.unpack_from("<IQ", b, k) == (8, 5) and b[k + 12:k + 17] == b"llama"
out = b[:k] + struct.pack("<IQ", 8, 4) + b"gpt2" + b[k + 17:14176] + b"\0" + b[14176:]
open(sys.argv[2], "wb").write(out)
PY
run_llmchat -m generate -t 0 -n 4 -i "Once" "$T/alone/tok-gpt2.gguf" </dev/null
assert_status 1
assert_error_message
assert_file_contains "what the gpt2 tokenizer lacks is named" "$T/err" \
    "a byte-level BPE vocabulary without tokenizer.ggml.pre"
pass "a GGUF model whose gpt2 (byte-level BPE) tokenizer has no pre-tokenizer is refused"

# ---- --verbose says what loading did ----
run_llmchat --verbose -m generate -t 0 -n 4 -i "Once" "$T/alone/stories260K.gguf" </dev/null
assert_status 0
assert_file_contains "--verbose names the format" "$T/err" "GGUF v3"
assert_file_contains "--verbose gives the RoPE base" "$T/err" "RoPE base 10000"
assert_file_contains "--verbose says what was converted" "$T/err" "F32 → Q8_0 at load"
assert_file_contains "--verbose names the tokenizer" "$T/err" "tokenizer: the model's own (512 tokens)"
run_llmchat --verbose -m generate -t 0 -n 4 -i "Once" "$T/alone/stories260K-q8_0.gguf" </dev/null
assert_status 0
assert_file_contains "--verbose on the Q8_0 file" "$T/err" "Q8_0 in place"
pass "--verbose describes the model, the conversion and the tokenizer"

# ---- --huge-pages: the file read into memory or mapped, the same output ----
run_llmchat --huge-pages on --verbose -m generate -t 0 -n 8 -i "Once" "$T/alone/stories260K-q8_0.gguf" </dev/null
assert_status 0
assert_file_contains "--huge-pages on reads the file in" "$T/err" \
    "memory: the file read into memory that asked for 2 MiB pages"
cp "$T/out" "$T/huge.out"
run_llmchat --huge-pages off --verbose -m generate -t 0 -n 8 -i "Once" "$T/alone/stories260K-q8_0.gguf" </dev/null
assert_status 0
assert_file_contains "--huge-pages off maps the file" "$T/err" "memory: the file mapped (4 KiB pages"
cmp -s "$T/out" "$T/huge.out" || fail "--huge-pages on and off generate different text"
printf 'huge-pages = off\n' >"$T/huge.conf"
run_llmchat --config "$T/huge.conf" --verbose -m generate -t 0 -n 8 -i "Once" "$T/alone/stories260K-q8_0.gguf" </dev/null
assert_status 0
assert_file_contains "the config key huge-pages" "$T/err" "memory: the file mapped (4 KiB pages"
run_llmchat --huge-pages maybe -m generate -i "Once" "$T/alone/stories260K-q8_0.gguf" </dev/null
assert_status 2
assert_file_contains "a bad --huge-pages is named" "$T/err" "--huge-pages must be auto, on or off"
pass "--huge-pages on and off give the same text; --verbose says which; a bad value is refused"

# ---- hostile files ----
maker=${LLMCHAT_BUILDDIR:-}/tests/make_bad_gguf
[ -x "$maker" ] || hard_error "$maker is not built (run through make check)"
mkdir "$T/bad"
"$maker" "$DATA/stories260K.gguf" "$T/bad" || fail "make_bad_gguf failed"
if command -v sha256sum >/dev/null 2>&1; then
    tail -n +2 "$DATA/gguf_bad.tsv" | while IFS='	' read -r file bytes sha rest; do
        [ -f "$T/bad/$file" ] || fail "make_bad_gguf did not make $file"
        got=$(sha256sum "$T/bad/$file" | cut -d' ' -f1)
        [ "$got" = "$sha" ] || fail "$file made here differs from the reference file (sha256 $got, want $sha)"
    done || exit 1
    pass "the hostile files made here are byte-identical to the reference set's"
fi
checked=0
for f in "$T"/bad/*.gguf "$DATA/stories260K-gguf-v1-head.gguf"; do
    run_llmchat -m generate -t 0 -n 4 -i "Once" "$f" </dev/null
    assert_status 1
    assert_error_message
    assert_file_contains "message for $f names it" "$T/err" "$f"
    case $f in
    *arch-gpt2*) assert_file_contains "arch-gpt2" "$T/err" "architecture 'gpt2'" ;;
    *align-0*) assert_file_contains "align-0" "$T/err" "general.alignment is 0" ;;
    *align-48*) assert_file_contains "align-48" "$T/err" "general.alignment is 48" ;;
    *type-99*) assert_file_contains "type-99" "$T/err" "type 99" ;;
    *ndims-5*) assert_file_contains "ndims-5" "$T/err" "5 dimensions" ;;
    *strlen*|*arraylen*|*trunc-metadata*) assert_file_contains "$f" "$T/err" "tokenizer.ggml.tokens" ;;
    *trunc-tensordata*) assert_file_contains "$f" "$T/err" "blk.2.ffn_gate.weight" ;;
    *offset-past-end*) assert_file_contains "$f" "$T/err" "blk.4.ffn_norm.weight" ;;
    *v1-head*) assert_file_contains "$f" "$T/err" "obsolete" ;;
    esac
    checked=$((checked + 1))
done
[ "$checked" -eq 11 ] || fail "checked $checked hostile files, expected 11"
pass "all $checked hostile GGUF files are refused with a message and exit status 1"

# ---- chat templates ----
# the default, said by --verbose; --template chooses another; the trace's first line names it
printf 'Tell me a story about a dog named Max.\n' >"$T/msg"
run_llmchat --verbose -m chat -t 0 -n 20 "$BUNDLED/chat260K.bin" <"$T/msg"
assert_status 0
assert_file_contains "--verbose names the default template" "$T/err" "chat template llama2 (the default)"
run_llmchat -m chat -t 0 -n 20 --template chatml --trace "$T/trace.jsonl" "$BUNDLED/chat260K.bin" <"$T/msg"
assert_status 0
[ -s "$T/out" ] || fail "no reply in the chatml template"
"$PYTHON" - "$T/trace.jsonl" <<'PY' || fail "the trace of a chatml chat"
import json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
byte = lambda p: chr(int(p[3:5], 16)) if re.fullmatch(r"<0x[0-9A-F]{2}>", p) else p
assert lines[0]["template"] == "chatml", lines[0].get("template")
prompt = "".join(byte(r["piece"]) for r in lines[1:] if r["phase"] == "prompt")
# the vocabulary has no <|im_start|> token: the markers are text, the user's words inside
assert prompt.startswith("\n<s>\n <|im_start|>user\nTell me a story"), repr(prompt[:60])
assert "<|im_end|>\n<|im_start|>assistant\n" in prompt, repr(prompt)
PY
run_llmchat -m chat --template vicuna "$BUNDLED/chat260K.bin" </dev/null
assert_status 2
assert_file_contains "a bad --template names the choices" "$T/err" "chatml"
pass "chat templates: the default, --template, the trace header, a bad name"

# ---- a model's own Llama 3.1 or 3.2 template: the dated system block ----
# stories260K's vocabulary with Meta's template (llama.cpp 0.4.0's models/templates), under
# a tiny Llama (tests/make_family_gguf): 3.2's gives today's date, 3.1's its fixed one
for v in 31 32; do
    "$PYTHON" - "$DATA/stories260K.gguf" "$DATA/llama$v-chat-template.jinja" "$T/vocab$v.gguf" <<'PY' ||
import struct, sys
# a vocabulary-only GGUF: the tokenizer.* records of argv[1] as they are, the template new
data = open(sys.argv[1], "rb").read()
_, _, n_tensors, n_kv = struct.unpack_from("<4sIQQ", data, 0)
SIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
pos = 24
def skip(t):
    global pos
    if t in SIZE:
        pos += SIZE[t]
    elif t == 8:
        pos += 8 + struct.unpack_from("<Q", data, pos)[0]
    else:
        et, n = struct.unpack_from("<IQ", data, pos)
        pos += 12
        for _ in range(n):
            skip(et)
def string(b):
    return struct.pack("<Q", len(b)) + b
records = []
for _ in range(n_kv):
    start = pos
    (n,) = struct.unpack_from("<Q", data, pos)
    key = data[pos + 8:pos + 8 + n]
    pos += 8 + n
    (t,) = struct.unpack_from("<I", data, pos)
    pos += 4
    skip(t)
    if key.startswith(b"tokenizer.") and key != b"tokenizer.chat_template":
        records.append(data[start:pos])
template = open(sys.argv[2], "rb").read()
records.append(string(b"tokenizer.chat_template") + struct.pack("<I", 8) + string(template))
open(sys.argv[3], "wb").write(struct.pack("<4sIQQ", b"GGUF", 3, 0, len(records)) + b"".join(records))
PY
        fail "writing the vocabulary with Llama 3.${v#3}'s template"
    "${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" llama "$T/llama$v.gguf" "$T/vocab$v.gguf" ||
        fail "make_family_gguf llama with Llama 3.${v#3}'s template"
    before=$(LC_ALL=C date '+%d %b %Y')
    run_llmchat --verbose -m chat -t 0 -n 4 --trace "$T/llama$v.jsonl" "$T/llama$v.gguf" <"$T/msg"
    assert_status 0
    after=$(LC_ALL=C date '+%d %b %Y')
    assert_file_contains "Llama 3.${v#3}'s template is recognised" "$T/err" "chat template llama3.1 (the model's)"
    "$PYTHON" - "$T/llama$v.jsonl" "$v" "$before" "$after" <<'PY' || fail "Llama 3.${v#3}'s system block (above)"
import json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
byte = lambda p: chr(int(p[3:5], 16)) if re.fullmatch(r"<0x[0-9A-F]{2}>", p) else p
prompt = "".join(byte(r["piece"]) for r in lines[1:] if r["phase"] == "prompt")
dates = {"26 Jul 2024"} if sys.argv[2] == "31" else {sys.argv[3], sys.argv[4]}
block = "system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: "
assert any(block + d + "\n\n<|eot_id|>" in prompt for d in dates), (dates, prompt[:200])
assert "user<|end_header_id|>\n\nTell me a story about a dog named Max.<|eot_id|>" in prompt, prompt
PY
done
# --template llama3.2 on a model without a template of its own: today's date as well
before=$(LC_ALL=C date '+%d %b %Y')
run_llmchat -m chat -t 0 -n 4 --template llama3.2 --trace "$T/l32name.jsonl" "$BUNDLED/chat260K.bin" <"$T/msg"
assert_status 0
after=$(LC_ALL=C date '+%d %b %Y')
"$PYTHON" - "$T/l32name.jsonl" "$before" "$after" <<'PY' || fail "--template llama3.2's date (above)"
import json, re, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
byte = lambda p: chr(int(p[3:5], 16)) if re.fullmatch(r"<0x[0-9A-F]{2}>", p) else p
prompt = "".join(byte(r["piece"]) for r in lines[1:] if r["phase"] == "prompt")
assert any("Today Date: " + d + "\n\n" in prompt for d in sys.argv[2:]), prompt[:200]
PY
pass "a model's own Llama 3.1 and 3.2 templates: the system block with 3.1's fixed date and 3.2's today (--template llama3.2 too)"
