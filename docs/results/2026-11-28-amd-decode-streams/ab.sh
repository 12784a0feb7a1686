#!/bin/bash
# A/B decode: base (1a536c8) vs HEAD panels on vs HEAD panels off, alternating
export XDG_CACHE_HOME=/tmp/cache
H=/work/main/build/llmchat-bench; B=/tmp/base/build/llmchat-bench
for r in 1 2 3; do
 for s in 110M 1B; do for t in 1 2; do
  for v in base on off; do
   case $v in base) cmd="$B";; on) cmd="$H --panels on";; off) cmd="$H --panels off";; esac
   o=$($cmd -s $s --format gguf -T $t -p 16 --json 2>/dev/null | tail -1)
   d=$(echo "$o" | grep -o '"decode_tok_s":[0-9.]*' | cut -d: -f2)
   rf=$(echo "$o" | grep -o '"decode_roofline":[0-9.]*' | cut -d: -f2)
   echo "$r $s $t $v $d $rf"
  done
 done; done
done
