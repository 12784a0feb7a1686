#!/bin/sh
# e2e_control_vector.sh — control vectors end to end: with llama.cpp's control-vector
# file, greedy fp32 text equals llama-cli's (tests/data/golden/control_vector_greedy.jsonl,
# made by tests/data/make_vector_goldens.sh: --control-vector-scaled FILE SCALE, with and
# without --control-vector-layer-range); the config key does what the option does; /vector
# in the REPL lists, makes (into the data directory, at a scale measured against the
# residual stream: chat260K's reply changes and stays text), rescales, limits and drops
# vectors, and loads one made by its name; a chat steered half-way is traced and
# --replay reproduces it, and refuses it once a vector file has changed; the TUI's
# status line shows the vectors in force; bad files and bad values get a message and a
# non-zero exit (a bad scale is a bad scale; a vector for layers the model lacks is
# named, or refused when none applies); a trace's knocked-out [layer, head] stays that
# head on a model with another number of heads, and a head the model lacks is refused
# by name.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"

golden=$GOLDEN/control_vector_greedy.jsonl
gguf=$DATA/stories260K.gguf
vec=$DATA/control_vector/happy.gguf

# ---- every golden line: the same text as llama-cli ----
count=$(jsonl_count "$golden")
[ "$count" -gt 0 ] || fail "no golden entries in $golden"
i=0
while [ "$i" -lt "$count" ]; do
    scale=$(jsonl_get "$golden" "$i" scale)
    layers=$(jsonl_get "$golden" "$i" layers)
    prompt=$(jsonl_get "$golden" "$i" prompt)
    steps=$(jsonl_get "$golden" "$i" steps)
    jsonl_get "$golden" "$i" text >"$T/want"
    set -- --control-vector "$vec:$scale"
    [ -z "$layers" ] || set -- "$@" --control-vector-layers "$layers"
    run_llmchat -m generate --weights f32 -t 0 -n "$steps" -i "$prompt" "$@" "$gguf" </dev/null
    assert_status 0
    assert_prefix "golden $i (scale $scale, layers '$layers'): not llama-cli's text" "$T/want" "$T/out"
    i=$((i + 1))
done
# without a vector the text is another one (the vector does something)
jsonl_get "$golden" 0 text >"$T/want"
run_llmchat -m generate --weights f32 -t 0 -n 60 -i "Once upon a time" "$gguf" </dev/null
"$PYTHON" -c 'import sys; sys.exit(open(sys.argv[2]).read().startswith(open(sys.argv[1]).read()))' \
    "$T/want" "$T/out" || fail "the unsteered text equals the steered one"

# ---- the config key ----
mkdir -p "$XDG_CONFIG_HOME/llmchat"
printf 'control-vector = %s:%s\n' "$vec" "$(jsonl_get "$golden" 0 scale)" >"$XDG_CONFIG_HOME/llmchat/config"
jsonl_get "$golden" 0 text >"$T/want"
run_llmchat -m generate --weights f32 -t 0 -n 60 -i "Once upon a time" "$gguf" </dev/null
assert_status 0
assert_prefix "control-vector in the config file" "$T/want" "$T/out"
rm "$XDG_CONFIG_HOME/llmchat/config"

# ---- /vector in the REPL ----
cp "$vec" "$T/happy.gguf"
cd "$T" || hard_error "cd $T"
printf '%s\n' '/vector' '/vector list' '/vector load happy.gguf 0.5' \
    '/vector make mood "She was happy and laughed and smiled." "She was sad and cried."' \
    '/vector mood -0.25' '/vector layers 1-3' '/vector drop happy' '/vector layers 9-9' \
    '/vector mood' '/vector load nothere.gguf' '/vector make x "unclosed' '/vector drop nobody' \
    '/vector layers all' >"$T/in"
run_llmchat -m chat -t 0 -n 5 --weights f32 "$gguf" <"$T/in"
assert_status 0
assert_file_contains "/vector alone" "$T/err" "llmchat: no control vectors (/vector load FILE [SCALE] reads one)"
assert_eq "/vector and /vector list" 2 "$(grep -c '^llmchat: no control vectors (/vector load FILE \[SCALE\] reads one)$' "$T/err")"
assert_file_contains "load" "$T/err" "llmchat: from the next token: control vectors: happy 0.50 (happy.gguf); after every layer"
# /vector make writes into the data directory, not the current one, and says where
vectors=$XDG_DATA_HOME/llmchat/vectors
made=$(grep -o "mood [0-9.]* ($vectors/mood.gguf); after every layer. mood was made from the two texts and written there" "$T/err") ||
    fail "/vector make does not say it wrote $vectors/mood.gguf: $(grep 'mood' "$T/err" | head -n 1)"
mood_scale=$(printf '%s\n' "$made" | head -n 1 | cut -d' ' -f2)
assert_file_contains "make" "$T/err" "llmchat: from the next token: control vectors: happy 0.50 (happy.gguf), mood $mood_scale ($vectors/mood.gguf); after every layer"
assert_file_contains "make's scale" "$T/err" "scale $mood_scale makes it 10% of the residual stream's norm after each layer"
assert_file_contains "rescale" "$T/err" "happy 0.50 (happy.gguf), mood -0.25 ($vectors/mood.gguf); after every layer"
assert_file_contains "layers" "$T/err" "happy 0.50 (happy.gguf), mood -0.25 ($vectors/mood.gguf); after layers 1-3"
assert_file_contains "drop" "$T/err" "llmchat: from the next token: control vectors: mood -0.25 ($vectors/mood.gguf); after layers 1-3"
assert_file_contains "layers past the model" "$T/err" "0 <= FIRST <= LAST <= 4"
assert_file_contains "a bad word" "$T/err" "llmchat: /vector takes: load FILE [SCALE], NAME SCALE"
assert_file_contains "a missing file" "$T/err" "llmchat: cannot open control vector nothere.gguf"
assert_file_contains "a missing file, also not in the data directory" "$T/err" "(nor is there one in $vectors)"
assert_file_contains "an unclosed quote" "$T/err" "an unclosed quote"
assert_file_contains "drop an unknown one" "$T/err" "no control vector called 'nobody' is loaded"
assert_file_contains "layers all" "$T/err" "mood -0.25 ($vectors/mood.gguf); after every layer"
[ -s "$vectors/mood.gguf" ] || fail "/vector make wrote no $vectors/mood.gguf"
[ ! -e "$T/mood.gguf" ] || fail "/vector make wrote mood.gguf into the current directory"
# what /vector make wrote loads as a control vector (the option reads it too)
run_llmchat -m generate --weights f32 -t 0 -n 5 -i "Once" --control-vector "$vectors/mood.gguf:0.3" "$gguf" </dev/null
assert_status 0
# by name, from any directory: /vector load and --control-vector find it in the data
# directory and apply it at the scale it was made with; a path is used as given
mkdir -p "$T/elsewhere"
cd "$T/elsewhere" || hard_error "cd $T/elsewhere"
printf '%s\n' '/vector load mood' '/vector make ./here-mood "She was happy." "She was sad."' >"$T/in"
run_llmchat -m chat -t 0 -n 5 --weights f32 "$gguf" <"$T/in"
assert_status 0
assert_file_contains "/vector load NAME" "$T/err" "llmchat: from the next token: control vectors: mood $mood_scale ($vectors/mood.gguf); after every layer"
assert_file_contains "/vector make ./PATH" "$T/err" "here-mood "
[ -s "$T/elsewhere/here-mood.gguf" ] || fail "/vector make ./here-mood wrote no ./here-mood.gguf"
cd "$T" || hard_error "cd $T"
run_llmchat -m chat -t 0 -n 5 --weights f32 --control-vector mood "$gguf" </dev/null
assert_status 0
echo '/vector' >"$T/in"
run_llmchat -m chat -t 0 -n 5 --weights f32 --control-vector mood "$gguf" <"$T/in"
assert_file_contains "--control-vector NAME" "$T/err" "control vectors: mood $mood_scale ($vectors/mood.gguf)"

# ---- /vector make's default scale on the demo model: the reply steers and stays text ----
# At scale 1 (the difference as it is, the default before issue 31) chat260K's reply
# turns into runs of letters ("ininineinininine..."); the scale make chooses keeps it
# text and changes it. text_check says which of the two a reply is.
model=$BUNDLED/chat260K.bin
text_check() {
    "$PYTHON" - "$1" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
words = re.findall(r"[A-Za-z']+", text)
why = None
if len(words) < 10:
    why = "fewer than 10 words"
elif max(len(w) for w in words) > 14:
    why = "a 'word' of %d letters" % max(len(w) for w in words)
else:
    run = best = 1
    for a, b in zip(words, words[1:]):
        run = run + 1 if a.lower() == b.lower() else 1
        best = max(best, run)
    if best >= 3:
        why = "a word %d times in a row" % best
    elif len(set(w.lower() for w in words)) < 0.4 * len(words):
        why = "few distinct words"
if why:
    print("  not text (%s): %s" % (why, text[:200].replace("\n", " ")), file=sys.stderr)
sys.exit(1 if why else 0)
PY
}
stories='Tell me a story about a girl named Lily.
Tell me a story about a dog.'
printf '%s\n' "$stories" >"$T/in"
run_llmchat -m chat -s 7 -n 200 "$model" <"$T/in"
assert_status 0
cp "$T/out" "$T/plain"
text_check "$T/plain" || fail "the unsteered replies are not text"
make_happy='/vector make happy "She was happy and laughed and smiled." "She was sad and cried."'
printf '%s\n%s\n' "$make_happy" "$stories" >"$T/in"
run_llmchat -m chat -s 7 -n 200 "$model" <"$T/in"
assert_status 0
assert_file_contains "the default scale" "$T/err" "makes it 10% of the residual stream's norm"
text_check "$T/out" || fail "with /vector make's default scale the reply is not text"
cmp -s "$T/plain" "$T/out" && fail "with /vector make's default scale the reply is the unsteered one"
# a vector made before is written over with --replace (the same texts: the same vector)
printf '%s\n%s\n%s\n' "$(printf '%s' "$make_happy" | sed 's/make happy/make --replace happy/')" \
    '/vector happy 1' "$stories" >"$T/in"
run_llmchat -m chat -s 7 -n 200 "$model" <"$T/in"
text_check "$T/out" 2>/dev/null && fail "the text check passes the degenerate reply of scale 1: it checks nothing"
pass "/vector make's default scale steers chat260K's reply and keeps it text (scale 1 does not)"

# ---- a chat steered half-way: the trace records it, --replay reproduces it ----
printf '%s\n' 'Tell me a story about Tom.' '/vector load happy.gguf 0.3' 'Tell me a story about Sue.' \
    '/vector happy -0.4' '/vector layers 1-3' 'Tell me a story about Max.' >"$T/in"
run_llmchat -m chat -t 0.8 -s 3 -n 30 --weights f32 --trace "$T/tr.jsonl" "$model" <"$T/in"
assert_status 0
"$PYTHON" - "$T/tr.jsonl" <<'PY' || fail "the trace does not record the vectors where they changed"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()][1:]
marks = [(r["pos"], r["steer"]) for r in rows if "steer" in r]
want = [([["happy", "happy.gguf", 0.3]], None, []), ([["happy", "happy.gguf", -0.4]], [1, 3], [])]
got = [([[v["name"], v["path"], round(v["scale"], 6)] for v in m["vectors"]], m["layers"], m["heads_out"])
       for _, m in marks]
if got != want or rows[0].get("steer") is not None:
    print("  vectors in the trace: %r" % marks, file=sys.stderr)
    sys.exit(1)
PY
run_llmchat --replay "$T/tr.jsonl"
assert_status 0
assert_file_contains "replay" "$T/out" "reproduced: every position ran"

# ---- bad files and values ----
run_llmchat -m generate -n 3 -i x --control-vector "$T/nothere.gguf" "$gguf" </dev/null
assert_status 1
assert_file_contains "missing file" "$T/err" "llmchat: --control-vector: cannot open control vector $T/nothere.gguf"
run_llmchat -m generate -n 3 -i x --control-vector "$gguf" "$gguf" </dev/null
assert_status 1
assert_file_contains "a model as a vector" "$T/err" "is not called direction.N"
run_llmchat -m generate -n 3 -i x --control-vector "$DATA/stories260K.bin" "$gguf" </dev/null
assert_status 1
assert_error_message
run_llmchat -m generate -n 3 -i x --control-vector ":0.5" "$gguf" </dev/null
assert_status 2
assert_file_contains "no file name" "$T/err" "must name a control-vector GGUF file"
run_llmchat -m generate -n 3 -i x --control-vector "$vec:1e9" "$gguf" </dev/null
assert_status 2
assert_file_contains "scale out of range" "$T/err" "scale from -1e6 to 1e6"
run_llmchat -m generate -n 3 -i x --control-vector "$vec" --control-vector-layers 4-2 "$gguf" </dev/null
assert_status 2
assert_file_contains "backwards range" "$T/err" "--control-vector-layers must be FIRST-LAST"
run_llmchat -m generate -n 3 -i x --control-vector "$vec" --control-vector-layers 2-7 "$gguf" </dev/null
assert_status 2
assert_file_contains "range past the model" "$T/err" "LAST <= 4"
run_llmchat -m generate -n 3 -i x --control-vector-layers two "$gguf" </dev/null
assert_status 2
assert_error_message

# ---- FILE:SCALE: a bad scale is a bad scale; a file whose name has a colon opens ----
run_llmchat -m generate -n 3 -i x --control-vector "$vec:abc" "$gguf" </dev/null
assert_status 2
assert_file_contains "bad scale" "$T/err" "--control-vector takes FILE or FILE:SCALE, but what follows the last ':' is not a number (a scale from -1e6 to 1e6), and no file has the whole name, got '$vec:abc'"
assert_not_contains "bad scale: not a missing file" "$(cat "$T/err")" "cannot open"
cp "$vec" "$T/odd.gguf:abc"
run_llmchat -m generate --weights f32 -t 0 -n 5 -i "Once" --control-vector "$T/odd.gguf:abc" "$gguf" </dev/null
assert_status 0

# ---- a vector for another depth: the layers the model lacks are named, and a vector
# none of whose layers it has is refused (mood.gguf: stories260K's direction.1-4) ----
cp "$vectors/mood.gguf" "$T/mood.gguf"
run_llmchat -m generate --weights f32 -t 0 -n 5 -i "Once" --control-vector "$T/mood.gguf" \
    -z "$DATA/aidreams_tok512.bin" "$DATA/aidreams260K.bin" </dev/null
assert_status 0
assert_file_contains "layers ignored" "$T/err" "llmchat: --control-vector: $T/mood.gguf: direction.4 ignored: the model has 4 layers (0-3); the vector applies after layers 1-3"
run_llmchat -m generate --weights f32 -t 0 -n 20 -i "Once" --control-vector "$T/mood.gguf" \
    -z "$DATA/tok512.bin" --trace "$T/mood.jsonl" "$DATA/stories260K.bin" </dev/null
assert_status 0
run_llmchat --replay "$T/mood.jsonl" --compare -z "$DATA/tok512.bin" "$DATA/aidreams260K.bin"
assert_status 0
assert_file_contains "replay says it" "$T/err" "llmchat: $T/mood.jsonl: $T/mood.gguf: direction.4 ignored: the model has 4 layers (0-3)"
printf '%s\n' '/vector load mood.gguf' >"$T/in"
run_llmchat -m chat -t 0 -n 5 --weights f32 -z "$DATA/aidreams_tok512.bin" "$DATA/aidreams260K.bin" <"$T/in"
assert_status 0
assert_file_contains "/vector says it" "$T/err" "llmchat: from the next token: mood.gguf: direction.4 ignored: the model has 4 layers (0-3); the vector applies after layers 1-3. control vectors: mood $mood_scale (mood.gguf)"
"$PYTHON" - "$T/deep.gguf" <<'PY' || hard_error "cannot write deep.gguf"
import struct, sys
def s(b): return struct.pack("<Q", len(b)) + b
names = [b"direction.%d" % n for n in range(11, 15)]
out = b"GGUF" + struct.pack("<IQQ", 3, len(names), 1)
out += s(b"general.architecture") + struct.pack("<I", 8) + s(b"controlvector")
for i, n in enumerate(names):
    out += s(n) + struct.pack("<IQIQ", 1, 64, 0, i * 256)
out += b"\0" * (-len(out) % 32)
out += struct.pack("<64f", *([0.5] * 64)) * len(names)
open(sys.argv[1], "wb").write(out)
PY
run_llmchat -m generate --weights f32 -t 0 -n 5 -i "Once" --control-vector "$T/deep.gguf" "$gguf" </dev/null
assert_status 1
assert_file_contains "no layer applies" "$T/err" "llmchat: --control-vector: $T/deep.gguf: its directions are for layers 11-14, but the model has 5 layers (0-4; a vector applies after layers 1-4): it was made for another model"

# ---- a vector file changed since the trace: said, before anything runs ----
printf '%s\n' '/vector make mk "She was happy and laughed." "She was sad and cried."' \
    'Tell me a story about Tom.' >"$T/in"
run_llmchat -m chat -t 0.8 -s 3 -n 30 --weights f32 --trace "$T/mk.jsonl" "$model" <"$T/in"
assert_status 0
grep -q '"fnv1a64":"[0-9a-f]\{16\}"' "$T/mk.jsonl" || fail "the trace does not record mk.gguf's checksum"
run_llmchat --replay "$T/mk.jsonl"
assert_status 0
assert_file_contains "replay with the same file" "$T/out" "reproduced: every position ran"
printf '%s\n' '/vector make --replace mk "The dog ran in the park." "The cat slept."' >"$T/in"
run_llmchat -m chat -t 0 -n 5 --weights f32 "$model" <"$T/in"
assert_status 0
run_llmchat --replay "$T/mk.jsonl"
assert_status 1
grep -q "^llmchat: $T/mk.jsonl: from position [0-9]* on: the control vector $vectors/mk.gguf has changed since it was recorded (FNV-1a [0-9a-f]\{16\} then, [0-9a-f]\{16\} now): it would not steer as it did$" "$T/err" \
    || fail "a changed vector file is not named"
assert_not_contains "nothing replayed" "$(cat "$T/out")" "reproduced"

# ---- a trace's knocked-out head stays [layer, head] on a model of another shape ----
run_llmchat -m generate --weights f32 -t 0 -n 30 -z "$DATA/tok512.bin" -i "Once upon a time" \
    --trace "$T/k.jsonl" "$DATA/stories260K.bin" </dev/null
assert_status 0
"$PYTHON" - "$T/k.jsonl" "$T" <<'PY' || hard_error "cannot write the knock-out traces"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
head, first = json.loads(lines[0]), json.loads(lines[1])
def write(name, heads, n_heads=None, model=True):
    h = dict(head)
    if n_heads:
        h["model"] = dict(h["model"], n_heads=n_heads)
    if not model:
        del h["model"]
    r = dict(first, steer={"vectors": [], "layers": None, "heads_out": heads})
    with open("%s/%s" % (sys.argv[2], name), "w", encoding="utf-8") as f:
        f.write("\n".join([json.dumps(h), json.dumps(r)] + lines[2:]) + "\n")
write("ko8.jsonl", [[1, 2]])             # traced on 8 heads a layer
write("ko4.jsonl", [[1, 2]], n_heads=4)  # the same head, 4 heads a layer
write("ko22.jsonl", [[2, 2]], n_heads=4) # what 1 * 8 + 2 is on 4 heads a layer
write("ko09.jsonl", [[0, 9]], model=False)
PY
kl() {
    run_llmchat --replay "$T/$1" --compare -z "$DATA/tok512.bin" "$DATA/aidreams260K.bin"
    assert_status 0
    sed -n 's/^KL divergence.*: \(mean .*\)/\1/p' "$T/out"
}
k8=$(kl ko8.jsonl)
k4=$(kl ko4.jsonl)
k22=$(kl ko22.jsonl)
[ -n "$k8" ] || fail "no KL line"
assert_eq "[1, 2] of an 8-head trace on the 4-head aidreams260K" "$k4" "$k8"
[ "$k8" != "$k22" ] || fail "[1, 2] of an 8-head trace knocked out [2, 2] on aidreams260K ($k8)"
run_llmchat --replay "$T/ko09.jsonl" -z "$DATA/tok512.bin" "$DATA/stories260K.bin"
assert_status 1
assert_file_contains "a head the model lacks" "$T/err" "llmchat: $T/ko09.jsonl: from position 0 on: head [0, 9] is knocked out ([layer, head], from 0), but the model has 5 layers (0-4) of 8 heads (0-7)"

# ---- the TUI's status line ----
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"
start -- --no-config -s 1 --control-vector "$vec:0.5" "$model"
wait_for "vectors happy 0.50"
type_text "/vector happy -1"
keys Enter
wait_for "vectors happy -1.00"
type_text "/vector layers 2-4"
keys Enter
wait_for "vectors happy -1.00, layers 2-4"
type_text '/vector make --replace mood "She was happy." "She was sad."'
keys Enter
wait_for_wrapped "mood was made from the"
wait_for "vectors happy -1.00, mood 0." # the status line: the scale made
keys C-d
wait_exit
[ "$rc" -eq 0 ] || fail "the TUI exited $rc"
$TM kill-server >/dev/null 2>&1

# ---- head knock-out: x in the heads views, the what-if in Tokens, trace and replay ----
start -- --no-config -s 1 -t 0 -n 12 --weights f32 --trace "$T/ko.jsonl" \
    -i "Tell me a story about a dog named Lily." "$model"
wait_for "idle"
keys Tab Tab Tab # input line, Conversation, Tokens, Attention
keys x
wait_for "x knocks a head out in the heads and attribution views"
keys v v v # the heads of a layer
wait_for "heads of layer 1/5"
keys x
wait_for "heads out L1H1"
wait_for "with them out:"
keys . x # the next head too
wait_for "heads out L1H1 L1H2"
keys v # the layers x heads grid marks them
wait_for "layers x heads"
screen | grep -q "L1  out   out" || show_screen_and_fail "the grid does not mark the heads out"
keys x # the cursor's head back in
wait_for "L1 H2 back in"
keys Tab # the input line
type_text "Tell me a story about Tom."
keys Enter
wait_for "You: Tell me a story about Tom."
wait_for "idle"
keys C-d
wait_exit
[ "$rc" -eq 0 ] || fail "the TUI exited $rc"
"$PYTHON" - "$T/ko.jsonl" <<'PY' || fail "the trace does not record the heads out"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()][1:]
marks = [(r["pos"], r["steer"]["heads_out"]) for r in rows if "steer" in r]
if [h for _, h in marks] != [[[0, 0]]]:
    print("  steer marks: %r" % marks, file=sys.stderr)
    sys.exit(1)
PY
run_llmchat --replay "$T/ko.jsonl"
assert_status 0
assert_file_contains "replay with a head out" "$T/out" "reproduced: every position ran"

pass "llama-cli's text with every golden vector; config key; /vector; trace and replay; status line; bad input"
