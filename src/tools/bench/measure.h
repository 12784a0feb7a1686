/* bench/measure.h — what llmchat-bench measures of llmchat, each measurement in a
 * forked child: peak resident memory is then per shape, an OpenMP thread pool never
 * crosses a fork, and the parent only writes files, forks, runs the other programs and
 * prints. A child sends its figures back through a pipe. Part of the benchmark. */
#ifndef LLMCHAT_BENCH_MEASURE_H
#define LLMCHAT_BENCH_MEASURE_H

#include "bench_options.h"

/* What a child measures for one shape. */
typedef struct {
    int ok;
    char error[512];
    char kernel[32];
    char kv_cache[8];   /* "q8_0" or "f32" */
    char probe_way[8];  /* how the stream passes read (probe.h): "plain", "t0", "nta" */
    int probe_mib;      /* the probe's buffer (--probe-mib); the stream passes read half */
    int panels;         /* the model's GGUF Q8_0 was read from decode panels */
    int huge_pages;     /* the weights asked for 2 MiB pages (--huge-pages) */
    int threads, group, prefill_tokens, decode_steps, decode_pos;
    double load_s, prefill_tok_s, decode_tok_s, ttft_s, peak_rss_mb, file_mb, kv_mb;
    double decode_peak_tok_s; /* best PEAK_WINDOW consecutive tokens */
    double weight_bytes_per_token;
    /* decode windows paired with stream passes: medians, smallest, largest */
    int decode_rounds, decode_window; /* windows done, tokens a window */
    double decode_roofline, decode_roofline_min, decode_roofline_max;
    double bandwidth_gb_s, bandwidth_min_gb_s, bandwidth_max_gb_s;
    int long_pairs; /* --long: 0 if not measured */
    double long_pos_near, long_pos_far, long_tok_s_near, long_tok_s_far, long_ratio;
    int scaling_pairs; /* --scaling: 0 if not measured */
    double decode_tok_s_1t, decode_tok_s_nt, thread_speedup;
    double stream_gb_s_1t, stream_gb_s_nt, stream_speedup; /* the memory's own scaling */
    double cpu_others; /* other processes' share of the CPUs while timed (-1: unknown) */
    double load_avg;   /* the 1-minute load average when the shape started */
} shape_result;

/* One side-by-side round of llmchat (a child) on one shape: llama-bench's two tests. */
typedef struct {
    int ok;
    char error[512];
    double prefill_tok_s, decode_tok_s; /* means over the repetitions, as avg_ts */
} round_result;

/* Times the model file at path with the engine as `llmchat -m generate` runs it: load,
 * prefill of o->prompt tokens, time to first token, decode of o->steps tokens in
 * windows paired with stream passes, peak resident memory; --long and --scaling's
 * pairs when o asks. Returns 0 (r->ok says whether it worked, r->error why not), or -1
 * when the child died. */
int measure_shape(const bench_options *o, const char *path, shape_result *r);

/* One side-by-side round of llmchat: llama-bench's "pp" test (a prompt of n_prompt
 * tokens from an empty context) and "tg" (n_gen tokens from an empty context), each
 * `reps` times after a warm-up, as tokens per second averaged over the repetitions.
 * Returns as measure_shape. */
int measure_round(const bench_options *o, const char *path, int n_prompt, int n_gen, int reps,
                  round_result *r);

/* An activation-patching grid against one forward pass (--patch). */
typedef struct {
    int ok;
    char error[512];
    char kernel[32];
    int threads, positions, layers, runs, passes;
    long positions_run;
    double forward_s;   /* one forward pass of the prompt on the batch kernels, best of 3 */
    double grid_s;      /* patching_run's resid_pre grid over every layer (KL) */
    double ratio;       /* grid_s / forward_s */
} patch_timing;

/* Times the grid of -m patch (patching.h: resid_pre, every layer, n positions, the KL
 * metric) on the model file at path against one forward pass of its n-token prompt
 * (a random prompt and the same with one token changed). Returns as measure_shape. */
int measure_patch(const bench_options *o, const char *path, int n, patch_timing *r);

/* Speculative decoding against plain decoding (--speculate). */
enum { SPECULATE_RATES = 4, SPECULATE_ROUNDS = 3 };
typedef struct {
    int ok;
    char error[512];
    char kernel[32];
    int threads, guesses, prompt, gen;
    double plain_tok_s;                   /* median over the rounds */
    double rate[SPECULATE_RATES];         /* each guess kept right with this probability */
    double accepted[SPECULATE_RATES];     /* the share of guesses the sampler took */
    double tokens_per_check[SPECULATE_RATES]; /* tokens a call of the transformer (a step)
                                                 gave: a check's, where every step checks */
    double tok_s[SPECULATE_RATES];        /* median over the rounds */
    double ratio[SPECULATE_RATES], ratio_min[SPECULATE_RATES], ratio_max[SPECULATE_RATES];
                                          /* speculative / plain tok/s, median of rounds */
    int same;                             /* every run gave the plain run's tokens */
} speculate_timing;

/* Times greedy decoding of o->gen tokens after an o->prompt-token random prompt, plain
 * (engine_step) and speculative (engine_step_guessed, k guesses a step) in turn, for
 * SPECULATE_ROUNDS rounds. The guesses are the plain run's next tokens, each replaced
 * by a wrong one with probability 1 - rate: the acceptance rate is fixed by the
 * benchmark, not by a guesser's luck, and the cost of a check is the real one. With
 * draft_path (not NULL), a draft model of that file (draft.h) is asked for each step's
 * guesses first, so that its cost is paid; its guesses are then replaced. Returns as
 * measure_shape. */
int measure_speculate(const bench_options *o, const char *path, const char *draft_path, int k,
                      speculate_timing *r);

/* One round of speculative decoding with a real draft model (--agreeing-draft). */
enum { DRAFT_TOKENS_MAX = 1024 };
typedef struct {
    int ok;
    char error[512];
    char kernel[32];
    int threads, guesses, prompt, gen;
    int prompt_tokens[MAX_PROMPT]; /* the prompt, for the other engine */
    double plain_tok_s, spec_tok_s;
    double accepted;          /* the share of the draft's guesses the sampler took */
    double tokens_per_check;  /* tokens a call of the transformer (a step) gave */
    int same;                 /* the speculative tokens are the plain run's */
    int tokens[DRAFT_TOKENS_MAX]; /* the plain run's first tokens (gen of them at most) */
} draft_round;

/* One round: greedy decoding of o->gen tokens after an o->prompt-token random prompt
 * on the model at path, plain, then speculative with the draft model at draft_path
 * making up to k guesses a step (draft.h, the guesser `llmchat --draft` runs), after a
 * plain warm-up. Returns as measure_shape. */
int measure_draft_round(const bench_options *o, const char *path, const char *draft_path, int k,
                        draft_round *r);

/* The machine's read bandwidth at the start: the best of 8 passes over --probe-mib
 * (1 GiB) on every CPU this process may run on, GB/s. Returns 0, or -1 when the child
 * died. */
int measure_bandwidth(const bench_options *o, double *gb_s);

#endif
