/* bench/anchor.h — another engine timed beside llmchat on the same model: llama.cpp's
 * llama-bench, run as a program on a GGUF file, its JSON read back.
 *
 * The comparison is llama-bench's own tests: "pp" (a prompt of n_prompt random tokens
 * from an empty context) and "tg" (n_gen tokens one at a time from an empty context),
 * each repeated and averaged (avg_ts, tokens per second). Part of the benchmark. */
#ifndef LLMCHAT_BENCH_ANCHOR_H
#define LLMCHAT_BENCH_ANCHOR_H

#include <stddef.h>

typedef struct {
    double prefill_tok_s; /* pp: avg_ts of the n_prompt test */
    double decode_tok_s;  /* tg: avg_ts of the n_gen test */
} anchor_result;

/* The llama-bench to run: `path` when not NULL, else $LLMCHAT_ANCHOR_LLAMA_BENCH.
 * Returns NULL, with the reason in why, when there is none or it is not executable. */
const char *anchor_find(const char *path, char *why, size_t why_size);

/* Runs `llama_bench -m gguf -p n_prompt -n n_gen -t threads [-r reps] -o json` and reads
 * its two figures. reps 0 keeps llama-bench's default. Returns 0, or -1 with a message
 * in why (its stderr is quoted). */
int anchor_run(const char *llama_bench, const char *gguf, int n_prompt, int n_gen, int threads,
               int reps, anchor_result *out, char *why, size_t why_size);

/* The avg_ts of the test with n_prompt and n_gen in llama-bench's JSON output text;
 * -1 if there is none. Exposed for tests. */
double anchor_json_avg_ts(const char *json, int n_prompt, int n_gen);

#endif
