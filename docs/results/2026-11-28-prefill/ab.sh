#!/bin/bash
# ab.sh MODEL THREADS ROUNDS REPS NAME...: runs ./prefill-NAME (prefill.c beside this file,
# built from each tree compared) in turn, ROUNDS times, each REPS + 1 reps of which the
# first is dropped; prints the median and quartiles of every NAME's reps (tok/s).
M=$1; T=$2; R=$3; N=$4; shift 4
tag=$(basename $M .gguf)-$T
for b in "$@"; do rm -f ab-$tag-$b.txt; done
for r in $(seq 1 $R); do for b in "$@"; do ./prefill-$b $M $T $((N+1)) | tail -$N | cut -d' ' -f1 >> ab-$tag-$b.txt; done; done
for b in "$@"; do echo "$tag $b $(sort -n ab-$tag-$b.txt | awk '{a[NR]=$1} END{print "n="NR, "q1="a[int(NR/4)+1], "med="a[int(NR/2)+1], "q3="a[int(3*NR/4)+1]}')"; done
