/* bench/sweep.h — llmchat-bench --sweep: prefill and decode (llama-bench's pp and tg
 * tests) on 1, 2, 4, ... threads up to -T or all CPUs, --rounds rounds each, one row
 * per thread count; with --against, llama.cpp beside it and the ratios. Part of the
 * benchmark. */
#ifndef LLMCHAT_BENCH_SWEEP_H
#define LLMCHAT_BENCH_SWEEP_H

#include "bench_options.h"
#include "shapes.h"

/* --sweep: for each thread count, o->rounds rounds of llmchat (and llama-bench with
 * --against) on `path`; one row per count. Returns the counts that failed. */
int sweep_shape(const bench_options *o, const shape *s, const char *path, const char *llama_bench,
                const char *anchor_why);

#endif
