#!/bin/sh
# e2e_set.sh — /set in the plain chat REPL (from a pipe): /set alone shows the
# settings; a change applies from the next token (the trace records the new
# settings in the following reply's decisions, and /set steps limits the reply); bad
# names and values get a message and change nothing.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

model=$BUNDLED/chat260K.bin
printf '%s\n' '/set' '/set temperature 0.5' '/set top-k 7' '/set top-p 2' '/set nonsense 1' \
    '/set steps 6' 'Tell me a story about Tom.' '/set' >"$T/in"
run_llmchat -m chat -s 5 --trace "$T/trace.jsonl" "$model" <"$T/in"
assert_status 0
assert_file_contains "/set alone" "$T/err" \
    "llmchat: temperature 1  top-k 0  top-p 0.9  min-p 0  repeat-penalty 1  repeat-last-n 64  seed 5  steps 0"
assert_file_contains "/set temperature" "$T/err" "llmchat: from the next token: temperature 0.5  top-k 0"
assert_file_contains "/set top-k" "$T/err" "llmchat: from the next token: temperature 0.5  top-k 7  top-p 0.9"
assert_file_contains "bad value" "$T/err" "llmchat: /set: top-p must be in (0, 1], got '2'"
assert_file_contains "bad name" "$T/err" "llmchat: /set: unknown setting 'nonsense'"
assert_file_contains "unchanged after bad ones" "$T/err" \
    "llmchat: temperature 0.5  top-k 7  top-p 0.9  min-p 0  repeat-penalty 1  repeat-last-n 64  seed 5  steps 6"
"$PYTHON" - "$T/trace.jsonl" <<'PY' || fail "the trace does not show the new settings (see above)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
head, rows = rows[0], rows[1:]
if head.get("template") != "llama2" or head.get("mode") != "chat":
    print("  the header says template %r, mode %r" % (head.get("template"), head.get("mode")), file=sys.stderr)
    sys.exit(1)
gen = [r for r in rows if r["sampler"] is not None]
if len(gen) != 6:
    print("  %d sampled tokens, /set steps 6 asked for 6" % len(gen), file=sys.stderr)
    sys.exit(1)
for r in gen:
    s = r["sampler"]
    if s["temperature"] != 0.5 or s["top_k"] != 7 or s["kept_top_k"] != 7:
        print("  position %d sampled with %r" % (r["pos"], s), file=sys.stderr)
        sys.exit(1)
PY
pass "/set shows and changes the settings; the trace records them; bad ones change nothing"
