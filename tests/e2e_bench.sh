#!/bin/sh
# e2e_bench.sh — llmchat-bench end to end on its smallest shape (15M, a 17 MB file
# written into a scratch cache): --json prints one object with the documented keys,
# every figure a positive finite number; peak resident memory stays within the file
# plus the KV cache plus 64 MB (except in a sanitizer build, whose shadow memory is
# resident too); --scaling adds the thread and stream speedups; the
# file it writes is a model llmchat itself loads and runs; bad options get a message
# and a non-zero exit; --anchor writes a GGUF file of the shape and reads a llama-bench's
# JSON back (a stand-in that checks the file); --sweep prints one row per thread count,
# 1, 2, 4, ... up to -T, each with llama-bench run on that count; --quant runs a
# llama-quantize (a stand-in that copies) on all usable CPUs, or -T's count;
# --agreeing-draft writes a model and a draft of its first layers that write the same
# text, and times speculative decoding with it (no llama-server: llmchat alone). Asserts
# no speed: timing belongs to the benchmark, not to tests. scripts/bench-many-core
# without llama.cpp keeps llmchat's rows, and stops at once, saying why, when
# llmchat-bench cannot run.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

BENCH=$(dirname "$LLMCHAT_BIN")/llmchat-bench
[ -x "$BENCH" ] || hard_error "$BENCH is not an executable (was it built?)"

# A 64 MiB bandwidth probe instead of 1 GiB: filling the buffer was most of a 15M run
# (and more under the sanitizers); the figures here are checked for their form only.
run_bench() {
    run_program llmchat-bench "$BENCH" --probe-mib 64 "$@"
}

# ---- one shape, JSON, with --scaling ----
run_bench --shape 15M --json --steps 16 --prompt 32 --scaling --cache "$T/cache" </dev/null
assert_status 0
[ -s "$T/cache/random-15M-q8_0.bin" ] || fail "no model file in the cache directory"
"$PYTHON" - "$T/out" "$T/cache/random-15M-q8_0.bin" "${LLMCHAT_SANITIZERS:-no}" <<'PYEOF' || fail "the JSON object is not what --help documents"
import json, math, os, sys
lines = [l for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
if len(lines) != 1:
    sys.exit("expected one JSON line, got %d" % len(lines))
r = json.loads(lines[0])
if r.get("shape") != "15M":
    sys.exit("shape is %r" % r.get("shape"))
positive = ["prefill_tok_s", "decode_tok_s", "bandwidth_gb_s", "decode_roofline", "ttft_s",
            "peak_rss_mb", "file_mb", "decode_bytes_per_token", "thread_speedup",
            "stream_gb_s_1t", "stream_speedup", "decode_tok_s_1t"]
for k in positive:
    v = r.get(k)
    if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        sys.exit("%s = %r, not a positive number" % (k, v))
if r.get("bandwidth_way") not in ("plain", "t0", "nta"):
    sys.exit("bandwidth_way = %r" % r.get("bandwidth_way"))
if not isinstance(r.get("huge_pages"), bool):
    sys.exit("huge_pages = %r, not true or false" % r.get("huge_pages"))
if r.get("probe_mib") != 64:
    sys.exit("probe_mib = %r, asked for 64" % r.get("probe_mib"))
if r["prefill_tokens"] != 32:
    sys.exit("prefill_tokens = %r, asked for 32" % r["prefill_tokens"])
# decode reads every weight byte once a token: about the file (less its header, plus
# the token's embedding row, which the shared classifier reads again)
size = os.path.getsize(sys.argv[2])
if not 0.9 * size <= r["decode_bytes_per_token"] <= 1.001 * size:
    sys.exit("decode_bytes_per_token %r is not about the file's %d bytes"
             % (r["decode_bytes_per_token"], size))
limit = r["file_mb"] + r["kv_cache_mb"] + 64
if sys.argv[3] == "yes":  # ASan's shadow memory and quarantine are not the program's
    print("note: a sanitizer build: the RSS bound is checked only without sanitizers")
elif r["peak_rss_mb"] > limit:
    sys.exit("peak_rss_mb %.1f is above file + KV cache + 64 MB = %.1f" % (r["peak_rss_mb"], limit))
PYEOF
pass "--json: one object, documented keys, RSS within file + KV + 64 MB (unless a sanitizer build)"

# ---- side by side: --anchor runs "llama-bench" on a GGUF file of the shape ----
# A stand-in llama-bench (python) reads the GGUF file the benchmark wrote as llama.cpp
# needs it (GGUF v3, llama metadata, Q8_0 tensors of the shape at aligned offsets inside
# the file) and answers with llama-bench's JSON.
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$PYTHON" "$T/fake_llama_bench.py" >"$T/llama-bench"
chmod +x "$T/llama-bench"
cat >"$T/fake_llama_bench.py" <<'PYEOF'
import json, struct, sys
args = sys.argv[1:]
opt = {args[i]: args[i + 1] for i in range(0, len(args) - 1) if args[i].startswith("-")}
path, n_prompt, n_gen = opt["-m"], int(opt["-p"]), int(opt["-n"])
assert opt["-o"] == "json" and int(opt["-t"]) >= 1, args
data = open(path, "rb").read()
pos = 0
def take(fmt):
    global pos
    v = struct.unpack_from("<" + fmt, data, pos)
    pos += struct.calcsize("<" + fmt)
    return v[0]
def string():
    global pos
    n = take("Q")
    s = data[pos:pos + n].decode("utf-8")
    pos += n
    return s
SIZES = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
def value(t):
    if t == 8:
        return string()
    if t == 9:
        et, n = take("I"), take("Q")
        return [value(et) for _ in range(n)]
    return take(SIZES[t])
assert data[:4] == b"GGUF", "not a GGUF file"
pos = 4
assert take("I") == 3
n_tensors, n_kv = take("Q"), take("Q")
kv = {}
for _ in range(n_kv):
    k = string()
    kv[k] = value(take("I"))
assert kv["general.architecture"] == "llama"
dim, layers = kv["llama.embedding_length"], kv["llama.block_count"]
hidden = kv["llama.feed_forward_length"]
heads, kv_heads = kv["llama.attention.head_count"], kv["llama.attention.head_count_kv"]
vocab = len(kv["tokenizer.ggml.tokens"])
assert vocab == len(kv["tokenizer.ggml.scores"]) == len(kv["tokenizer.ggml.token_type"]) == 32000
align = kv.get("general.alignment", 32)
tensors = {}
for _ in range(n_tensors):
    name = string()
    dims = [take("Q") for _ in range(take("I"))]
    tensors[name] = (dims, take("I"), take("Q"))
start = (pos + align - 1) // align * align
kv_dim = dim // heads * kv_heads
want = {"token_embd.weight": [dim, vocab], "output_norm.weight": [dim]}
for l in range(layers):
    b = "blk.%d." % l
    want.update({b + "attn_q.weight": [dim, dim], b + "attn_k.weight": [dim, kv_dim],
                 b + "attn_v.weight": [dim, kv_dim], b + "attn_output.weight": [dim, dim],
                 b + "ffn_gate.weight": [dim, hidden], b + "ffn_up.weight": [dim, hidden],
                 b + "ffn_down.weight": [hidden, dim], b + "attn_norm.weight": [dim],
                 b + "ffn_norm.weight": [dim]})
assert len(tensors) == len(want), sorted(set(tensors) ^ set(want))
for name, dims in want.items():
    got, typ, off = tensors[name]
    assert got == dims, (name, got, dims)
    n = 1
    for d in dims:
        n *= d
    size = n * 4 if typ == 0 else n // 32 * 34
    assert typ == (0 if len(dims) == 1 else 8), (name, typ)
    assert off % align == 0 and start + off + size <= len(data), (name, off, size)
    if typ == 8:  # a block: a positive fp16 scale, then 32 values in [-127, 127]
        d = struct.unpack_from("<e", data, start + off)[0]
        assert 0 < d < 1, (name, d)
        assert b"\x80" not in data[start + off + 2:start + off + 34], name
import os
per = int(opt["-t"]) if os.environ.get("FAKE_PER_THREAD") else 1  # --sweep: tells -t apart
rate = lambda p, g: {"n_prompt": p, "n_gen": g, "avg_ts": 100.0 * per, "stddev_ts": 0.0}
print(json.dumps([rate(n_prompt, 0), rate(0, n_gen)], indent=2))
PYEOF
run_bench --shape 15M --json --steps 16 --prompt 32 --cache "$T/cache" --anchor "$T/llama-bench" \
    --rounds 2 --anchor-reps 1 </dev/null
assert_status 0
[ -s "$T/cache/random-15M-q8_0.gguf" ] || fail "no GGUF file in the cache directory: $(cat "$T/err")"
"$PYTHON" - "$T/out" <<'PYEOF' || fail "the side-by-side keys are not what --help documents"
import json, math, sys
r = json.loads(open(sys.argv[1], encoding="utf-8").read())
if r.get("anchor") != "llama.cpp" or r.get("anchor_rounds") != 2:
    sys.exit("anchor %r, rounds %r: %s" % (r.get("anchor"), r.get("anchor_rounds"), r.get("anchor_note")))
for k in ("llmchat_prefill_tok_s", "llmchat_decode_tok_s", "llamacpp_prefill_tok_s",
          "llamacpp_decode_tok_s"):
    if len(r[k]) != 2 or not all(v > 0 for v in r[k]):
        sys.exit("%s = %r" % (k, r[k]))
if r["llamacpp_prefill_tok_s"] != [100.0, 100.0]:
    sys.exit("llama-bench's figure was not read back: %r" % r["llamacpp_prefill_tok_s"])
ratios = [a / b for a, b in zip(r["llmchat_prefill_tok_s"], r["llamacpp_prefill_tok_s"])]
if not math.isclose(r["prefill_ratio"], sum(ratios) / 2, rel_tol=1e-2):
    sys.exit("prefill_ratio %r is not the median of the rounds' ratios %r"
             % (r["prefill_ratio"], ratios))
if r["anchor_prompt"] != 32 or r["anchor_gen"] != 128:
    sys.exit("pp%r tg%r" % (r["anchor_prompt"], r["anchor_gen"]))
PYEOF
pass "--anchor: a GGUF file of the shape that a llama-bench reads, its figures read back, median ratios"
run_bench --shape 15M --json --steps 16 --prompt 32 --gen 16 --cache "$T/cache" \
    --anchor "$T/llama-bench" --rounds 1 --anchor-reps 1 </dev/null
assert_status 0
"$PYTHON" - "$T/out" <<'PYEOF' || fail "--gen 16: not the side-by-side decode test's length"
import json, sys
r = json.loads(open(sys.argv[1], encoding="utf-8").read())
if r.get("anchor_gen") != 16 or r.get("llamacpp_decode_tok_s") != [100.0]:
    sys.exit("anchor_gen %r, llama.cpp decode %r" % (r.get("anchor_gen"), r.get("llamacpp_decode_tok_s")))
PYEOF
pass "--gen 16: both engines' side-by-side decode test is 16 tokens (llama-bench -n 16)"

# ---- --sweep: one row per thread count, 1, 2, 4, ... up to -T, llama-bench beside it ----
FAKE_PER_THREAD=1 run_bench --shape 15M --json --sweep -T 3 --prompt 32 --cache "$T/cache" \
    --anchor "$T/llama-bench" --rounds 1 --anchor-reps 1 </dev/null
assert_status 0
"$PYTHON" - "$T/out" <<'PYEOF' || fail "--sweep's rows are not what --help documents"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
threads = [r.get("sweep_threads") for r in rows]
if threads != [1, 2, 3]:
    sys.exit("thread counts %r, expected [1, 2, 3]" % threads)
for r in rows:
    t = r["sweep_threads"]
    if r.get("shape") != "15M" or r.get("rounds") != 1:
        sys.exit("row %r" % r)
    if r.get("huge_pages_option") != "auto" or r.get("panels_option") != "auto":
        sys.exit("the options asked for, in row %r" % r)
    if not (r["prefill_tok_s"] > 0 and r["decode_tok_s"] > 0):
        sys.exit("llmchat's figures at %d threads: %r" % (t, r))
    # the stand-in answers 100 x its -t: the row's llama-bench ran on the row's threads
    if r["llamacpp_prefill_tok_s"] != [100.0 * t] or r["llamacpp_decode_tok_s_median"] != 100.0 * t:
        sys.exit("llama-bench at %d threads answered %r" % (t, r["llamacpp_prefill_tok_s"]))
    if abs(r["decode_ratio"] - r["decode_tok_s"] / (100.0 * t)) > 1e-3 * r["decode_ratio"] + 1e-3:
        sys.exit("decode_ratio %r at %d threads" % (r["decode_ratio"], t))
PYEOF
unset FAKE_PER_THREAD # (an assignment before a function may stay)
pass "--sweep --json: rows for 1, 2 and 3 threads, llama-bench on each row's count"

# --sweep-at: those thread counts only, in the order given (a round each: the rows'
# order and fields are what is checked)
run_bench --shape 15M --json --sweep-at 3,1 --rounds 1 --prompt 32 --steps 16 --cache "$T/cache" </dev/null
assert_status 0
threads=$("$PYTHON" -c 'import json, sys; print(" ".join(str(json.loads(l)["sweep_threads"]) for l in open(sys.argv[1]) if l.strip()))' "$T/out")
[ "$threads" = "3 1" ] || fail "--sweep-at 3,1 gave rows for '$threads': $(cat "$T/out")"
run_bench --shape 15M --json --sweep-at 1 --panels off --rounds 1 --prompt 32 --steps 16 \
    --cache "$T/cache" </dev/null
assert_status 0
assert_file_contains "a sweep row says the --panels asked for" "$T/out" '"panels_option":"off"'
pass "--sweep-at 3,1: one row for 3 threads, then one for 1"

# a llama-bench that dies (SIGILL: built for another machine) keeps llmchat's figures of
# the row and says how it died
printf '#!/bin/sh\nkill -ILL $$\n' >"$T/sigill-llama-bench"
chmod +x "$T/sigill-llama-bench"
run_bench --shape 15M --json --sweep-at 1 --prompt 32 --steps 16 --cache "$T/cache" \
    --anchor "$T/sigill-llama-bench" --rounds 1 --anchor-reps 1 </dev/null
assert_status 1
"$PYTHON" - "$T/out" <<'PYEOF' || fail "--sweep with a llama-bench that dies: $(cat "$T/out")"
import json, sys
r = json.loads(open(sys.argv[1], encoding="utf-8").readline())
assert r["sweep_threads"] == 1 and r["rounds"] == 1 and r["decode_tok_s"] > 0, r
assert "killed by signal 4" in r["anchor_error"] and "decode_ratio" not in r, r
PYEOF
pass "--sweep with a llama-bench that dies keeps llmchat's row and says how it died"

# --prefetch: each way runs and is named in the JSON (the table header says it too)
for way in nta none; do
    run_bench --shape 15M --json --steps 16 --prompt 32 --cache "$T/cache" --prefetch "$way" </dev/null
    assert_status 0
    grep -q "\"prefetch\":\"$way\"" "$T/out" || fail "--prefetch $way: not in the JSON: $(cat "$T/out")"
done
run_bench --shape 15M --steps 16 --prompt 32 --cache "$T/cache" </dev/null
assert_status 0
assert_file_contains "table header" "$T/out" "prefetch t0"
pass "--prefetch nta and none run and are reported; t0 is the default"

run_bench --shape 15M --sweep -T 2 --prompt 32 --cache "$T/cache" --rounds 1 --anchor-reps 1 </dev/null
assert_status 0
assert_file_contains "sweep table" "$T/out" "llmchat-bench --sweep: 15M"
rows=$(awk '$1 ~ /^[0-9]+$/ {print $1}' "$T/out" | tr '\n' ' ')
[ "$rows" = "1 2 " ] || fail "sweep table rows for threads '$rows', expected '1 2 ': $(cat "$T/out")"
pass "--sweep table without llama.cpp: one row for 1 and for 2 threads"

# ---- --quant: llama-quantize makes the file, on the bench's threads (all CPUs by default) ----
printf '#!/bin/sh\necho "$*" >>"%s"\ncp "$2" "$3"\n' "$T/quantize_args" >"$T/llama-quantize"
chmod +x "$T/llama-quantize"
run_bench --shape 15M --quant q4_k_m --quantize "$T/llama-quantize" --steps 16 --prompt 32 \
    --cache "$T/cache" </dev/null
assert_status 0
[ -s "$T/cache/random-15M-q4_k_m.gguf" ] || fail "--quant q4_k_m: no random-15M-q4_k_m.gguf"
rm -f "$T/cache/random-15M-q4_k_m.gguf"
run_bench --shape 15M --quant q4_k_m --quantize "$T/llama-quantize" -T 1 --steps 16 --prompt 32 \
    --cache "$T/cache" </dev/null
assert_status 0
expected="--allow-requantize $T/cache/random-15M-q8_0.gguf $T/cache/random-15M-q4_k_m.gguf.part Q4_K_M $(nproc)
--allow-requantize $T/cache/random-15M-q8_0.gguf $T/cache/random-15M-q4_k_m.gguf.part Q4_K_M 1"
[ "$(cat "$T/quantize_args")" = "$expected" ] ||
    fail "llama-quantize's arguments: $(cat "$T/quantize_args"), expected $expected"
pass "--quant: llama-quantize on all usable CPUs by default, on -T's count when given"

# without a llama-bench the comparison is skipped with a message, the rest is measured
unset LLMCHAT_ANCHOR_LLAMA_BENCH
run_bench --shape 15M --steps 16 --prompt 32 --cache "$T/cache" \
    --against llama.cpp </dev/null
assert_status 0
assert_file_contains "skip message" "$T/out" "against llama.cpp: not measured: no llama-bench"
grep -q '^15M ' "$T/out" || fail "no 15M row in the table"
pass "--against llama.cpp without a llama-bench: skipped with a message"

# ---- the file it wrote is a model llmchat runs (random weights: any tokens) ----
run_llmchat -m generate -z "$DATA/tokenizer.bin" -n 8 -t 0 -i "Once" "$T/cache/random-15M-q8_0.bin" </dev/null
assert_status 0
cp "$T/out" "$T/bin_text"
# the GGUF file of the same weights (Q8_0 blocks, read in place) gives the same text
run_llmchat -m generate -z "$DATA/tokenizer.bin" -n 8 -t 0 -i "Once" "$T/cache/random-15M-q8_0.gguf" </dev/null
assert_status 0
cmp -s "$T/out" "$T/bin_text" || fail "the GGUF file's text differs from the llama2.c file's: $(cat "$T/out")"
pass "llmchat runs the benchmark's model files, llama2.c and GGUF, to the same text"

# ---- the table, reusing the cached file ----
run_bench --shape 15M --steps 16 --prompt 32 --cache "$T/cache" </dev/null
assert_status 0
assert_not_contains "stderr of a second run" "$(cat "$T/err")" "writing"
assert_file_contains "table" "$T/out" "prefill"
grep -q '^15M ' "$T/out" || fail "no 15M row in the table"
pass "table; the cached file is reused"

# ---- --speculate: plain decoding's tokens at every fixed rate, the draft's cost paid ----
run_bench --shape 15M --speculate 3 --prompt 16 --gen 12 --json --cache "$T/cache" \
    --draft-shape 15M </dev/null
assert_status 0
"$PYTHON" - "$T/out" <<'PY' || fail "--speculate's JSON is not what it should be: $(cat "$T/out")"
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert r["shape"] == "15M" and r["guesses"] == 3 and r["draft"] == "15M", r
assert r["draft_min"] is None, r
assert r["same"] is True and r["plain_tok_s"] > 0, r
rates = [x["rate"] for x in r["runs"]]
assert rates == [1.0, 0.8, 0.6, 0.0], rates
full, none = r["runs"][0], r["runs"][-1]
assert full["accepted"] == 1.0 and full["tokens_per_check"] > 3, full
assert none["accepted"] == 0.0 and none["tokens_per_check"] < 1.5, none
assert all(x["tok_s"] > 0 and x["ratio_min"] <= x["ratio"] <= x["ratio_max"] for x in r["runs"])
PY
# as many guesses as pay (--draft-min 0, llmchat's default): the same tokens
run_bench --shape 15M --speculate 3 --draft-min 0 --prompt 16 --gen 40 --json \
    --cache "$T/cache" </dev/null
assert_status 0
"$PYTHON" - "$T/out" <<'PY' || fail "--draft-min 0's JSON is not what it should be: $(cat "$T/out")"
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert r["guesses"] == 3 and r["draft_min"] == 0 and r["same"] is True, r
assert all(0 <= x["accepted"] <= 1 and x["tok_s"] > 0 for x in r["runs"]), r
assert r["runs"][-1]["accepted"] == 0.0, r
PY
run_bench --shape 15M --draft-min 1 </dev/null
assert_status 2
assert_file_contains "--draft-min alone" "$T/err" "--draft-min is for --speculate"
run_bench --shape 15M --speculate 2 --draft-min 3 </dev/null
assert_status 2
assert_file_contains "--draft-min over K" "$T/err" "--draft-min 3 is more than --speculate 2"
run_bench --shape 15M --draft-shape 15M </dev/null
assert_status 2
assert_file_contains "--draft-shape alone" "$T/err" "--draft-shape is for --speculate"
run_bench --shape 15M --huge-pages sometimes </dev/null
assert_status 2
assert_file_contains "a bad --huge-pages" "$T/err" "--huge-pages must be auto, on or off, not 'sometimes'"
pass "--speculate gives plain decoding's tokens at each fixed acceptance rate, with a draft's cost, K fixed or chosen"

# ---- --agreeing-draft: a model and a draft of its first layers that agree ----
run_bench --shape 15M --speculate 3 --agreeing-draft 2 --prompt 16 --gen 12 --rounds 2 --json \
    --cache "$T/cache" --anchor-server "$T/no-such-llama-server" </dev/null
assert_status 0
assert_file_contains "no llama-server" "$T/err" "cannot run llama-server at $T/no-such-llama-server"
"$PYTHON" - "$T/out" <<'PY' || fail "--agreeing-draft's JSON is not what it should be: $(cat "$T/out")"
import json, sys
lines = open(sys.argv[1]).read().strip().splitlines()
assert len(lines) == 1, lines
r = json.loads(lines[0])
assert r["shape"] == "15M" and r["draft_layers"] == 2 and r["guesses"] == 3, r
assert r["same"] is True and r["rounds"] == 2 and r["gen"] == 12, r
assert r["plain_tok_s"] > 0 and r["speculative_tok_s"] > 0, r
assert r["speedup_min"] <= r["speedup"] <= r["speedup_max"], r
assert r["accepted"] > 0.5, r  # the draft computes the model's own tokens
assert "llama_cpp" not in r, r
PY
# the pair: the model (layers from 2 on add nothing) and the draft cut from its file
# (its first 2 layers) write the same text
model=$T/cache/random-15M-quiet-from-2-q8_0.gguf
draft=$T/cache/random-15M-quiet-from-2-q8_0-first-2.gguf
for f in "$model" "$draft"; do
    run_llmchat -m generate -z "$DATA/tokenizer.bin" -n 12 -t 0 -i "Once" "$f" </dev/null
    assert_status 0
    cp "$T/out" "$f.text"
done
cmp -s "$model.text" "$draft.text" ||
    fail "the model and its draft write different text: $(cat "$model.text") / $(cat "$draft.text")"
[ "$(wc -c <"$draft")" -lt "$(wc -c <"$model")" ] || fail "the draft file is not smaller than the model's"
run_bench --shape 15M --agreeing-draft 2 </dev/null
assert_status 2
assert_file_contains "--agreeing-draft alone" "$T/err" "--agreeing-draft is for --speculate"
run_bench --shape 15M --speculate 2 --agreeing-draft 6 --cache "$T/cache" </dev/null
assert_status 1
assert_file_contains "a draft of every layer" "$T/out" "15M          has 6 layers: a draft of its first 6 is the model"
pass "--agreeing-draft: a model and its first layers write the same text; speculative decoding with that draft gives plain decoding's tokens"

# ---- bad options ----
run_bench --shape 3B </dev/null
[ "$rc" -ne 0 ] || fail "an unknown shape exited 0"
assert_file_contains "message" "$T/err" "llmchat-bench: unknown shape '3B'"
run_bench --threads 0 </dev/null
[ "$rc" -ne 0 ] || fail "--threads 0 exited 0"
assert_file_contains "message" "$T/err" "llmchat-bench: --threads"
run_bench --probe-mib 1 </dev/null
[ "$rc" -eq 2 ] || fail "--probe-mib 1 exited $rc"
assert_file_contains "message" "$T/err" "llmchat-bench: --probe-mib"
: >"$T/file"
run_bench --shape 15M --cache "$T/file/sub" </dev/null
[ "$rc" -ne 0 ] || fail "an impossible cache directory exited 0"
assert_file_contains "message" "$T/err" "$T/file/sub"
run_bench --against gpt </dev/null
[ "$rc" -eq 2 ] || fail "--against gpt exited $rc"
assert_file_contains "message" "$T/err" "llmchat-bench: --against takes llama.cpp"
run_bench --prefetch t1 </dev/null
[ "$rc" -eq 2 ] || fail "--prefetch t1 exited $rc"
assert_file_contains "message" "$T/err" "llmchat-bench: --prefetch must be t0, nta or none, not 't1'"
run_bench --gen 0 </dev/null
[ "$rc" -eq 2 ] || fail "--gen 0 exited $rc"
assert_file_contains "message" "$T/err" "--gen"
run_bench --sweep-at 1,x </dev/null
[ "$rc" -eq 2 ] || fail "--sweep-at 1,x exited $rc"
assert_file_contains "message" "$T/err" "--sweep-at"
pass "bad options: a message naming the problem, non-zero exit"

# ---- --patch: the activation-patching grid against one forward pass ----
run_bench -s 15M -c "$T/cache" --patch 6 --json </dev/null
assert_status 0
"$PYTHON" - "$T/out" <<'PY' || fail "--patch --json: $(cat "$T/out")"
import json, sys
o = json.loads(open(sys.argv[1]).read())
assert o["shape"] == "15M" and o["positions"] == 6 and o["layers"] == 6, o
# every layer x position from the prompts' first difference (2), p..5 again
assert o["runs"] == 24 and o["positions_run"] == 6 * (4 + 3 + 2 + 1), o
assert o["forward_s"] > 0 and o["grid_s"] > 0 and o["patch_ratio"] > 0, o
PY
run_bench --patch 1 </dev/null
[ "$rc" -eq 2 ] || fail "--patch 1 exited $rc"
assert_file_contains "message" "$T/err" "--patch"
pass "--patch: the grid's runs and the ratio to one forward pass"

# ---- scripts/bench-many-core on a machine it cannot fully use ----
# no llama.cpp there: the rows run llmchat alone and say so, the Q4_K_M rows (which need
# llama-quantize) are left out with no file of theirs, the run ends 0 with its figures; an llmchat-bench that
# does not run there stops it at once, saying why in log.txt
BUILD=$(dirname "$BENCH")
XDG_CACHE_HOME=$T/xdg LLAMA_CPP_BIN=$T/no-llama QUICK_SHAPES=15M \
    sh "$LLMCHAT_SRCDIR/scripts/bench-many-core" --speed-2026 "$BUILD" "$T/many" >"$T/many.out" 2>&1 ||
    fail "bench-many-core without llama.cpp: $(tail -n 5 "$T/many.out")"
assert_file_contains "the run says it has no llama.cpp" "$T/many/log.txt" "llmchat's figures alone, no ratios"
assert_file_contains "the Q4_K_M rows are left out" "$T/many/log.txt" "left out (no llama-quantize)"
for f in "$T"/many/*q4_k_m*; do # nor are their files: an empty one reads as a failed row
    [ -e "$f" ] && fail "bench-many-core without llama-quantize wrote $(basename "$f")"
done
"$PYTHON" - "$T/many/speed-q8_0.jsonl" <<'PY' || fail "bench-many-core's Q8_0 rows (above)"
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["sweep_threads"] for r in rows][:1] == [1], rows
for r in rows:
    assert math.isfinite(r["decode_tok_s"]) and r["decode_tok_s"] > 0, r
    assert "decode_ratio" not in r, r
PY
[ -s "$T/many/machine.txt" ] || fail "bench-many-core wrote no machine.txt"
mkdir -p "$T/broken"
printf '#!/bin/sh\necho "error while loading shared libraries: libcurl.so.4" >&2\nexit 127\n' >"$T/broken/llmchat-bench"
chmod +x "$T/broken/llmchat-bench"
rc=0
sh "$LLMCHAT_SRCDIR/scripts/bench-many-core" --speed-2026 "$T/broken" "$T/many2" >"$T/many2.out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "bench-many-core with an llmchat-bench that does not run exited $rc"
assert_file_contains "why llmchat-bench does not run" "$T/many2/log.txt" "libcurl.so.4"
pass "bench-many-core without llama.cpp keeps llmchat's figures; an llmchat-bench that cannot run stops it, saying why"
