#!/bin/sh
# make_llamacpp_greedy.sh — writes golden/llamacpp_greedy_q4_k_m.txt: llama.cpp's greedy text
# (llama-cli --temp 0, ggerganov/llama.cpp@c392e509) on rand256-q4_k_m.gguf for two prompts,
# one block per prompt:
#   === PROMPT<TAB>N_PREDICT
#   the text llama-cli printed (its leading space dropped), then a newline
# Run once, by hand, where the anchors are (not by the tests):
#   sh tests/data/make_llamacpp_greedy.sh /work/shared/anchors/llama.cpp/llama-cli
set -eu
cli=${1:?usage: make_llamacpp_greedy.sh PATH/TO/llama-cli}
dir=$(dirname "$0")
model=$dir/rand256-q4_k_m.gguf
out=$dir/golden/llamacpp_greedy_q4_k_m.txt
: >"$out"
for pair in "Once upon a time:40" "Lily and Tom:24"; do
    prompt=${pair%:*}
    n=${pair##*:}
    printf '=== %s\t%s\n' "$prompt" "$n" >>"$out"
    "$cli" -m "$model" -p "$prompt" -n "$n" --temp 0 -no-cnv -t 2 --seed 1 </dev/null 2>/dev/null |
        sed '1s/^ //' >>"$out"
    printf '\n' >>"$out"
done
