#!/bin/sh
# e2e_bench.sh — llmchat-bench end to end on its smallest shape (15M, a 17 MB file
# written into a scratch cache): --json prints one object with the documented keys,
# every figure a positive finite number; peak resident memory stays within the file
# plus the KV cache plus 64 MB (except in a sanitizer build, whose shadow memory is
# resident too); --scaling adds the thread and stream speedups; the
# file it writes is a model llmchat itself loads and runs; bad options get a message
# and a non-zero exit. Asserts no speed: timing belongs to the benchmark, not to tests.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

BENCH=$(dirname "$LLMCHAT_BIN")/llmchat-bench
[ -x "$BENCH" ] || hard_error "$BENCH is not an executable (was it built?)"

run_bench() {
    run_program llmchat-bench "$BENCH" "$@"
}

# ---- one shape, JSON, with --scaling ----
run_bench --shape 15M --json --steps 16 --prompt 32 --scaling --cache "$T/cache" </dev/null
assert_status 0
[ -s "$T/cache/random-15M-q80.bin" ] || fail "no model file in the cache directory"
"$PYTHON" - "$T/out" "$T/cache/random-15M-q80.bin" "${LLMCHAT_SANITIZERS:-no}" <<'PYEOF' || fail "the JSON object is not what --help documents"
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

# ---- the file it wrote is a model llmchat runs (random weights: any tokens) ----
run_llmchat -m generate -z "$DATA/tokenizer.bin" -n 8 -t 0 -i "Once" "$T/cache/random-15M-q80.bin" </dev/null
assert_status 0
pass "llmchat runs the benchmark's model file"

# ---- the table, reusing the cached file ----
run_bench --shape 15M --steps 16 --prompt 32 --cache "$T/cache" </dev/null
assert_status 0
assert_not_contains "stderr of a second run" "$(cat "$T/err")" "writing"
assert_file_contains "table" "$T/out" "prefill"
grep -q '^15M ' "$T/out" || fail "no 15M row in the table"
pass "table; the cached file is reused"

# ---- bad options ----
run_bench --shape 3B </dev/null
[ "$rc" -ne 0 ] || fail "an unknown shape exited 0"
assert_file_contains "message" "$T/err" "llmchat-bench: unknown shape '3B'"
run_bench --threads 0 </dev/null
[ "$rc" -ne 0 ] || fail "--threads 0 exited 0"
assert_file_contains "message" "$T/err" "llmchat-bench: --threads"
: >"$T/file"
run_bench --shape 15M --cache "$T/file/sub" </dev/null
[ "$rc" -ne 0 ] || fail "an impossible cache directory exited 0"
assert_file_contains "message" "$T/err" "$T/file/sub"
pass "bad options: a message naming the problem, non-zero exit"
