/* cli_options.h — the command line: parsed options shared by every front end. */
#ifndef LLMCHAT_CLI_OPTIONS_H
#define LLMCHAT_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

#include "kernels.h"
#include "sampler.h"
#include "transformer.h"

/* The most tokens -n may ask for: far beyond any context, small enough that no
 * count derived from it overflows. */
enum { CLI_STEPS_MAX = 1000000 };

typedef enum { MODE_AUTO = 0, MODE_TUI, MODE_CHAT, MODE_GENERATE, MODE_TOKENIZE, MODE_PERPLEXITY } cli_mode;

typedef struct {
    cli_mode mode;
    const char *model_path;
    const char *tokenizer_path;  /* NULL: beside the model, then the data dir */
    const char *prompt;          /* -i */
    const char *file;            /* -f */
    const char *system;          /* -y */
    sampler_config sampler;      /* -t -p -k --min-p --repeat-penalty --repeat-last-n -s */
    bool seed_given;
    int steps;                   /* -n; -1 = mode default */
    int ctx;                     /* -c; 0 = model's */
    int threads;                 /* -T; 0 = all cores */
    const char *trace_path;      /* --trace */
    bool trace_attn;             /* --trace-attn */
    bool pieces;                 /* tokenize --pieces */
    tensor_type weights;         /* --weights q8_0|f32 */
    kernels_isa isa;               /* --kernels auto|scalar|avx2|avx512 */
    transformer_kv kv_cache;     /* --kv-cache auto|q8_0|f32 */
    bool mouse;                  /* tui --mouse */
    bool no_color;               /* --no-color or NO_COLOR set */
    int top_k_shown;             /* tui: candidates shown in the Tokens pane (default 10) */
} cli_options;

/* Parses argv. Returns 0 on success, 2 on a usage error (message printed to stderr),
 * or -1 when --help / --version was handled (exit 0). */
int cli_parse(int argc, char **argv, cli_options *o);
void cli_usage(FILE *f);

#endif
