#!/bin/bash
# visit.sh — one visit to the 16-core machine for issue 32: the rows its targets name,
# cheapest first, each bounded so the whole ends by DEADLINE seconds.
set -u
D=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-/tmp/out}
mkdir -p "$O"
S=$(date +%s)
DEADLINE=${DEADLINE:-555}
log() { echo "$(date -u +%T) +$(($(date +%s) - S))s $*" | tee -a "$O/log.txt"; }
left() { # left MAX: seconds for the next step, at most MAX
    l=$((DEADLINE - ($(date +%s) - S)))
    [ "$l" -gt "$1" ] && l=$1
    [ "$l" -lt 1 ] && l=1
    echo "$l"
}
export XDG_CACHE_HOME=/tmp/cache
mkdir -p "$XDG_CACHE_HOME"
{ lscpu; echo; nproc; free -g; uname -a; ls -la "$D"; } >"$O/machine.txt" 2>&1
B=$D/llmchat-bench
"$B" --help >/dev/null 2>&1 || { export LD_LIBRARY_PATH=$D/lib; log "using the carried libgomp"; }
log "llama.cpp native build"
timeout "$(left 170)" sh "$D/anchors/llama.cpp-src/build-native.sh" /tmp/ln >>"$O/log.txt" 2>&1 || log "build failed"
export LLMCHAT_ANCHOR_LLAMA_BENCH=/tmp/ln/llama-bench
A="--against llama.cpp --anchor-reps 1 --steps 64 --json"

log "1B Q8_0 sweep 1,2,4,8,16"
timeout "$(left 170)" "$B" --shape 1B --format gguf --sweep-at 1,2,4,8,16 --rounds 1 $A \
    >"$O/sweep-1B.jsonl" 2>>"$O/log.txt" || log "rc $?"

log "7B Q8_0 16 threads, 2 rounds"
timeout "$(left 200)" "$B" --shape 7B --format gguf --rounds 2 $A \
    >"$O/q8_0-7B.jsonl" 2>>"$O/log.txt" || log "rc $?"

log "7B prefill 512, 16 threads: CHUNK_BUDGET 32 MB (main) and 64 MB (c64), alternating"
f=$XDG_CACHE_HOME/llmchat-bench/random-7B-q8_0.gguf
for r in 1 2; do
    for v in main c64; do
        timeout "$(left 40)" "$D/prefill-$v" "$f" 16 4 2>&1 | sed "s/^/$v /" >>"$O/prefill-7B.txt"
    done
done
rm -f "$XDG_CACHE_HOME"/llmchat-bench/random-7B*

log "1B Q4_K_M sweep 1,2,4,8,16"
timeout "$(left 170)" "$B" --shape 1B --quant q4_k_m --quantize /tmp/ln/llama-quantize \
    --sweep-at 1,2,4,8,16 --rounds 1 $A >"$O/q4_k_m-1B.jsonl" 2>>"$O/log.txt" || log "rc $?"

log "1B Q8_0 16 threads, 5 rounds"
timeout "$(left 120)" "$B" --shape 1B --format gguf --rounds 5 $A \
    >"$O/steady-1B.jsonl" 2>>"$O/log.txt" || log "rc $?"
log done
