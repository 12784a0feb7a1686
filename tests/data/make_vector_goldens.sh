#!/bin/sh
# make_vector_goldens.sh — makes tests/data/control_vector/happy.gguf and
# tests/data/golden/control_vector_greedy.jsonl (read by tests/e2e_control_vector.sh).
#
# 1. happy.gguf: llmchat's own `/vector make` on stories260K.gguf (fp32), the mean
#    difference of the residual streams of "She was happy and laughed and smiled." and
#    "She was sad and cried." after each layer, in llama.cpp's control-vector format.
# 2. For each case (scale, layer range), llama.cpp's llama-cli (ggerganov/llama.cpp@c392e509,
#    the shared anchors) continues "Once upon a time" greedily on stories260K.gguf with
#    --control-vector-scaled happy.gguf SCALE [--control-vector-layer-range FIRST LAST];
#    its text (the leading blank llama-cli prints dropped) is the golden line.
#
# Run by hand from the source tree, with a built llmchat and the anchors:
#   LLMCHAT=build/llmchat LLAMA_CLI=/work/shared/anchors/llama.cpp/llama-cli \
#       sh tests/data/make_vector_goldens.sh
# The tests never run llama-cli.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
LLMCHAT=${LLMCHAT:-build/llmchat}
LLAMA_CLI=${LLAMA_CLI:-/work/shared/anchors/llama.cpp/llama-cli}
model=$here/stories260K.gguf
out=$here/golden/control_vector_greedy.jsonl
prompt="Once upon a time"
steps=60

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && printf '%s\n' '/vector make happy "She was happy and laughed and smiled." "She was sad and cried."' |
    "$OLDPWD/$LLMCHAT" -m chat -t 0 -n 1 --no-config --weights f32 "$model" >/dev/null 2>&1)
cp "$tmp/happy.gguf" "$here/control_vector/happy.gguf"

: >"$out"
# scale first last (0 0: every layer)
for c in "0.5 0 0" "1.0 2 4" "-0.7 1 4" "1.5 3 3" "0.8 1 1"; do
    set -- $c
    range=""
    [ "$2" = 0 ] || range="--control-vector-layer-range $2 $3"
    # shellcheck disable=SC2086
    "$LLAMA_CLI" -m "$model" -p "$prompt" -n "$steps" --temp 0 -no-cnv --no-warmup -t 1 \
        --simple-io --control-vector-scaled "$here/control_vector/happy.gguf" "$1" $range \
        </dev/null 2>/dev/null >"$tmp/text"
    python3 - "$1" "$2" "$3" "$prompt" "$steps" "$tmp/text" >>"$out" <<'PY'
import json, sys
scale, first, last, prompt, steps, path = sys.argv[1:]
text = open(path, encoding="utf-8").read()
text = text[1:] if text.startswith(" ") else text
text = text.rstrip("\n")
print(json.dumps({"model": "stories260K.gguf", "vector": "control_vector/happy.gguf",
                  "scale": scale, "layers": "" if first == "0" else f"{first}-{last}",
                  "prompt": prompt, "steps": int(steps), "text": text}))
PY
done
echo "wrote $out"
