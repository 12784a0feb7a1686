/* bench/bench_options.h — llmchat-bench's command line: the options, their defaults,
 * --help, and the shapes asked for. Part of the benchmark, a front end: a bad option
 * is said on stderr and ends the program (exit status 2). */
#ifndef LLMCHAT_BENCH_OPTIONS_H
#define LLMCHAT_BENCH_OPTIONS_H

#include <stdbool.h>

#include "kernels.h"

enum {
    MAX_PROMPT = 4096,
    ROUNDS_MAX = 9,      /* side-by-side rounds, at most */
    BENCH_SHAPES_MAX = 32, /* rows of bench_shapes (shapes.h) an option set can name */
};

typedef struct {
    int threads;        /* 0: OpenMP's default */
    int steps;          /* decode tokens, split into ROUNDS windows */
    int prompt;         /* prefill tokens (capped by the context) */
    int gen;            /* side-by-side decode tokens, llama-bench's -n (capped by the context) */
    int patch;          /* --patch N: time an activation-patching grid of N positions
                           instead (0: not) */
    int speculate;      /* --speculate K: time speculative decoding with K guesses a step
                           at fixed acceptance rates instead (0: not) */
    int draft_min;      /* --draft-min N: with --speculate K, between N and K guesses a step
                           as they pay (engine_options.guess_min); -1: always K */
    int draft_shape;    /* --draft-shape NAME: its row in bench_shapes, a draft model run
                           beside (its cost paid, its guesses replaced); -1: none */
    int agreeing_draft; /* --agreeing-draft L: time a real draft model, the shape's first L
                           layers, against the shape with its later layers quiet, beside
                           llama-server's speculative decoding on the same pair (0: not) */
    const char *anchor_server; /* --anchor-server PATH: that llama-server */
    bool json, long_ctx, scaling;
    const char *cache;  /* directory for the model files */
    const char *llmchat;   /* the program, for the TUI column */
    const char *tokenizer; /* a 32000-token tokenizer.bin, for the TUI column */
    const char *tui_script; /* llmchat-bench-tui */
    kernels_isa isa;    /* kernels to force (KERNELS_AUTO: the best) */
    kernels_prefetch prefetch; /* how the kernels prefetch weights (--prefetch) */
    bool no_panels;     /* --panels off: GGUF Q8_0 without decode panels */
    bool panels_given;  /* --panels given (else the CPU's default, as llmchat) */
    int huge_pages;     /* --huge-pages: a model_huge_pages (default auto, as llmchat) */
    int decode_streams; /* --decode-streams 1|4 (0: the CPU's default) */
    int probe_mib;      /* --probe-mib: the bandwidth probe's buffer, MiB (the decode
                           rounds' paired passes read half of it) */
    bool against;       /* --against llama.cpp or --anchor PATH given */
    const char *anchor; /* llama-bench (NULL: $LLMCHAT_ANCHOR_LLAMA_BENCH) */
    int anchor_reps;    /* repetitions of each test per round (0: llama-bench's 5) */
    int rounds;         /* side-by-side rounds */
    bool gguf;          /* --format gguf: llmchat opens the GGUF file, not the llama2.c one */
    const char *quant;  /* --quant TYPE: the GGUF file made TYPE by llama-quantize (NULL: Q8_0) */
    const char *quantize; /* --quantize PATH: that llama-quantize */
    bool sweep;         /* --sweep: rounds on 1, 2, 4, ... threads instead of the table */
    int sweep_at[16];   /* --sweep-at: the sweep's thread counts instead (0 ends the list) */
    bool want[BENCH_SHAPES_MAX]; /* the shapes to time, by their row in bench_shapes */
    const char *server; /* --server URL: time a served model instead (served.h) */
    const char *server_model; /* --server-model NAME */
    const char *api_key_env;  /* --api-key-env NAME */
} bench_options;

/* Parses argv into o, with the defaults of what it leaves out: the shapes 15M and
 * 110M, the cache directory ($XDG_CACHE_HOME/llmchat-bench), its tokenizer.bin and
 * the installed llmchat-bench-tui for the TUI column. Returns -1 to go on, or the
 * exit status: 0 after --help, 2 after a usage error (said on stderr). */
int bench_options_parse(int argc, char **argv, bench_options *o);

#endif
