#!/bin/sh
# e2e_badinput.sh — hostile input to the plain modes, each a check that could fail:
# tokenizers whose piece is longer than their max_token_length or has a negative
# length; non-UTF-8, NUL and control bytes in chat messages (kept byte for byte in the
# saved chat, a NUL as U+2400; nothing raw reaches the terminal); a 1 MB message and
# a 1 MB prompt (refused with the sizes, or scored by perplexity in windows); a
# prompt longer than the context in every mode; end of input at once, and binary
# garbage, on stdin. (run_llmchat fails on any signal death or sanitizer report.)
. "$LLMCHAT_SRCDIR/tests/lib.sh"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin
export XDG_STATE_HOME=$T/state

# ---- tokenizers ----
"$PYTHON" - "$T" <<'EOF'
import struct, sys
d = sys.argv[1]
def tok(name, max_len, pieces, lens=None):
    out = struct.pack("<i", max_len)
    for i, p in enumerate(pieces):
        n = len(p) if lens is None else lens[i]
        out += struct.pack("<fi", 0.0, n) + p
    open(d + "/" + name, "wb").write(out)
base = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [b"<0x%02X>" % i for i in range(256)]
words = [b"w%03d" % i for i in range(512 - len(base))]
tok("longer.bin", 7, base + words[:-1] + [b"a piece of twenty b"])
tok("negative.bin", 7, base + words, lens=[5, 5, 6] + [6] * 256 + [4] * (len(words) - 1) + [-4])
tok("negative-max.bin", -1, base + words)
EOF
run_llmchat -m generate -n 4 -i hi -z "$T/longer.bin" "$MODEL" </dev/null
assert_status 1
assert_file_contains "a piece beyond max_token_length" "$T/err" "more than the 7 its header allows"
run_llmchat -m generate -n 4 -i hi -z "$T/negative.bin" "$MODEL" </dev/null
assert_status 1
assert_file_contains "a negative piece length" "$T/err" "claims -4 bytes"
run_llmchat -m tokenize -i hi -z "$T/negative-max.bin" </dev/null
assert_status 1
assert_file_contains "a negative max_token_length" "$T/err" "max_token_length is -1"
pass "tokenizers with a piece beyond max_token_length or a negative length are refused"

# ---- odd bytes in messages ----
"$PYTHON" - "$T/odd" <<'EOF'
import sys
lines = [b"red \x1b[31mRED\x1b[0m bell \x07 back\x08space del\x7f",
         b"latin-1 caf\xe9, cut UTF-8 \xe2\x82, surrogate \xed\xa0\x80, overlong \xc0\xaf",
         b"nul\x00in the\x00middle",
         b"\xff\xfe\xfd"]
open(sys.argv[1], "wb").write(b"\n".join(lines) + b"\n/save " + sys.argv[1].encode() + b".json\n")
EOF
run_llmchat -m chat -T 1 -t 0 -n 12 -z "$TOK" "$MODEL" <"$T/odd"
assert_status 0
[ "$(wc -l <"$T/out")" -eq 4 ] || fail "four replies expected, got $(wc -l <"$T/out")"
if LC_ALL=C grep -q "$(printf '\033')" "$T/out" "$T/err"; then
    fail "a raw escape byte reached the terminal"
fi
"$PYTHON" - "$T/odd" "$T/odd.json" <<'EOF' || fail "the saved chat does not hold the messages byte for byte (above)"
import sys
sent = open(sys.argv[1], "rb").read().split(b"\n")[:4]
raw = open(sys.argv[2], "rb").read()
# llmchat writes a byte that is not valid UTF-8 as \udcXX: Python's surrogateescape
import json
d = json.loads(raw.decode("utf-8"))
def back(s):
    return s.encode("utf-8", "surrogateescape")
for i, t in enumerate(d["turns"]):
    want = sent[i].replace(b"\x00", "\u2400".encode())
    if back(t["user"]) != want:
        sys.exit("turn %d: %r != %r" % (i + 1, back(t["user"]), want))
EOF
pass "non-UTF-8, NUL and control bytes in messages: answered, kept byte for byte, never raw on the terminal"

# ---- the saved chat rewritten by another JSON tool ----
# Python's json.dump writes é as \u00e9 and keeps \udcXX: llmchat must read both back
"$PYTHON" - "$T/odd.json" "$T/odd2.json" <<'EOF' || fail "rewriting the saved chat in Python"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
d["turns"][0]["user"] += " d\u00e9j\u00e0"
json.dump(d, open(sys.argv[2], "w"))  # ensure_ascii: every non-ASCII character escaped
EOF
grep -q 'd\\u00e9j\\u00e0' "$T/odd2.json" || fail "Python did not escape é"
printf '/load %s\n/save %s\n' "$T/odd2.json" "$T/odd3.json" >"$T/reload"
run_llmchat -m chat -T 1 -t 0 -n 12 -z "$TOK" "$MODEL" <"$T/reload"
assert_status 0
"$PYTHON" - "$T/odd.json" "$T/odd3.json" <<'EOF' || fail "the rewritten chat did not come back byte for byte (above)"
import json, sys
a = json.load(open(sys.argv[1], encoding="utf-8"))
b = json.load(open(sys.argv[2], encoding="utf-8"))
if len(a["turns"]) != len(b["turns"]):
    sys.exit("%d turns, not %d" % (len(b["turns"]), len(a["turns"])))
for i, (ta, tb) in enumerate(zip(a["turns"], b["turns"])):
    want = ta["user"].encode("utf-8", "surrogateescape")
    if i == 0:
        want += " d\u00e9j\u00e0".encode("utf-8")
    got = tb["user"].encode("utf-8", "surrogateescape")
    if got != want:
        sys.exit("turn %d: %r != %r" % (i + 1, got, want))
EOF
pass "a saved chat rewritten by Python's json (\\u00e9, \\udcXX) loads with its text intact"

# ---- a 1 MB message, a 1 MB prompt ----
"$PYTHON" -c 'import sys; sys.stdout.write("The dog ran to the park and played. " * 29000 + "\n")' >"$T/big"
run_llmchat -m chat -T 1 -z "$TOK" "$MODEL" <"$T/big"
assert_status 1
assert_file_contains "a 1 MB message" "$T/err" "but the context holds 512"
run_llmchat -m generate -T 1 -f "$T/big" -z "$TOK" "$MODEL" </dev/null
assert_status 1
assert_file_contains "a 1 MB prompt" "$T/err" "but the context holds 512"
run_llmchat -m tokenize -f "$T/big" -z "$TOK" </dev/null
assert_status 0
[ "$(wc -w <"$T/out")" -gt 200000 ] || fail "tokenize of 1 MB gave $(wc -w <"$T/out") ids"
# perplexity scores every token, so a 40 KB text (about 15,600 tokens, 30 windows of 512) stands for
# the 1 MB one: scoring 1 MB takes minutes in a sanitizer or scalar build on a busy machine
head -c 40000 "$T/big" >"$T/long"
run_llmchat -m perplexity -T 1 -f "$T/long" -z "$TOK" "$MODEL" </dev/null
assert_status 0
assert_file_contains "perplexity of 40 KB" "$T/out" "perplexity:"
pass "a 1 MB message or prompt is refused with its size or tokenized; 40 KB is scored in windows"

# ---- a prompt longer than the context, in every mode that has one ----
long=$("$PYTHON" -c 'print(" ".join(["Once upon a time there was a little girl named Lily."] * 20))')
run_llmchat -m generate -c 64 -i "$long" -z "$TOK" "$MODEL" </dev/null
assert_status 1
assert_file_contains "generate" "$T/err" "but the context holds 64"
printf '%s\n' "$long" >"$T/in"
run_llmchat -m chat -c 64 -z "$TOK" "$MODEL" <"$T/in"
assert_status 1
assert_file_contains "chat" "$T/err" "but the context holds 64"
run_llmchat -m chat -c 64 -i "$long" -z "$TOK" "$MODEL" </dev/null
assert_status 1
assert_file_contains "chat -i" "$T/err" "but the context holds 64"
run_llmchat -m perplexity -c 64 -i "$long" -z "$TOK" "$MODEL" </dev/null
assert_status 0
assert_file_contains "perplexity scores in windows" "$T/out" "perplexity:"
pass "a prompt longer than the context: generate and chat refuse it (exit 1), perplexity slides"

# ---- stdin: end of input at once, binary garbage ----
run_llmchat -m chat -T 1 -z "$TOK" "$MODEL" </dev/null
assert_status 0
[ ! -s "$T/out" ] || fail "chat printed something for no input: $(cat "$T/out")"
run_llmchat -m generate -f - -T 1 -n 4 -z "$TOK" "$MODEL" </dev/null
assert_status 0
run_llmchat -m tokenize -f - -z "$TOK" </dev/null
assert_status 0
head -c 65536 /dev/urandom >"$T/garbage"
run_llmchat -m chat -T 1 -n 8 -c 128 -z "$TOK" "$MODEL" <"$T/garbage"
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "chat on binary garbage: exit status $rc"
run_llmchat -m tokenize -f - -z "$TOK" <"$T/garbage"
assert_status 0
run_llmchat -m generate -f - -T 1 -n 4 -z "$TOK" "$MODEL" <"$T/garbage"
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "generate on binary garbage: exit status $rc"
run_llmchat -m perplexity -f - -T 1 -c 64 -z "$TOK" "$MODEL" <"$T/garbage"
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "perplexity on binary garbage: exit status $rc"
pass "end of input at once and binary garbage on stdin, in every mode"
