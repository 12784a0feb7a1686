/* bench/side_by_side.h — llmchat beside llama.cpp on the same model: rounds of
 * llmchat (a child, measure.h) alternated with llama-bench (anchor.h) on one GGUF
 * file, llama-bench's pp and tg tests in each, and the medians of the per-round
 * ratios. Part of the benchmark. */
#ifndef LLMCHAT_BENCH_SIDE_BY_SIDE_H
#define LLMCHAT_BENCH_SIDE_BY_SIDE_H

#include "bench_options.h"
#include "shapes.h"

/* The side-by-side comparison of one shape. */
typedef struct {
    int rounds;          /* rounds done (0: not measured, why says why) */
    int ours_rounds;     /* llmchat's rounds done: rounds, or one more when llama-bench
                            failed after llmchat's round (why says how) */
    char why[600];
    int n_prompt, n_gen, reps;
    double ours_prefill[ROUNDS_MAX], ours_decode[ROUNDS_MAX];
    double theirs_prefill[ROUNDS_MAX], theirs_decode[ROUNDS_MAX];
    double prefill_ratio, decode_ratio; /* medians of the per-round ratios */
    double prefill_ratio_min, prefill_ratio_max, decode_ratio_min, decode_ratio_max;
} side_result;

/* --against: `rounds` times, llmchat's round (a child) then llama-bench, both on the
 * same GGUF file (llmchat reads its Q8_0 blocks in place); the medians of the per-round
 * ratios. Stops at the first failure, keeping the rounds done (and llmchat's figures of
 * a round whose llama-bench failed: ours_rounds). Without a llama_bench
 * (--sweep alone), llmchat's rounds only, on that file. */
void side_by_side_run(const bench_options *o, const shape *s, const char *gguf_path,
                      const char *llama_bench, side_result *sr);

#endif
