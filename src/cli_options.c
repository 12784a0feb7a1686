/* cli_options.c — parses and validates the command line (see DESIGN.md, "Command line").
 * Every bad value is a usage error (exit status 2) with a message naming the option. */
#include "cli_options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"

enum {
    OPT_MIN_P = 256, OPT_REPEAT_PENALTY, OPT_REPEAT_LAST_N, OPT_TRACE, OPT_TRACE_ATTN,
    OPT_PIECES, OPT_WEIGHTS, OPT_KERNELS, OPT_KV_CACHE, OPT_MOUSE, OPT_NO_COLOR,
};

static const struct option long_options[] = {
    {"tokenizer", required_argument, NULL, 'z'},
    {"mode", required_argument, NULL, 'm'},
    {"prompt", required_argument, NULL, 'i'},
    {"file", required_argument, NULL, 'f'},
    {"system", required_argument, NULL, 'y'},
    {"temperature", required_argument, NULL, 't'},
    {"top-p", required_argument, NULL, 'p'},
    {"top-k", required_argument, NULL, 'k'},
    {"min-p", required_argument, NULL, OPT_MIN_P},
    {"repeat-penalty", required_argument, NULL, OPT_REPEAT_PENALTY},
    {"repeat-last-n", required_argument, NULL, OPT_REPEAT_LAST_N},
    {"seed", required_argument, NULL, 's'},
    {"steps", required_argument, NULL, 'n'},
    {"ctx", required_argument, NULL, 'c'},
    {"threads", required_argument, NULL, 'T'},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"trace-attn", no_argument, NULL, OPT_TRACE_ATTN},
    {"pieces", no_argument, NULL, OPT_PIECES},
    {"weights", required_argument, NULL, OPT_WEIGHTS},
    {"kernels", required_argument, NULL, OPT_KERNELS},
    {"kv-cache", required_argument, NULL, OPT_KV_CACHE},
    {"mouse", no_argument, NULL, OPT_MOUSE},
    {"no-color", no_argument, NULL, OPT_NO_COLOR},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

void cli_usage(FILE *f)
{
    fputs("usage: llmchat [OPTIONS] MODEL\n"
          "Chat with a local Llama 2 model and watch what it does.\n"
          "\n"
          "  -z, --tokenizer FILE    tokenizer (default: tokenizer.bin or tokN.bin beside MODEL,\n"
          "                          then the data directory)\n"
          "  -m, --mode MODE         tui | chat | generate | tokenize | perplexity\n"
          "                          (default: tui on a terminal, else chat)\n"
          "  -i, --prompt TEXT       generate/tokenize: the input; chat/tui: the first message\n"
          "  -f, --file FILE         read the input text from FILE (- for stdin)\n"
          "  -y, --system TEXT       system prompt\n"
          "  -t, --temperature F     0 = greedy (default 1.0)\n"
          "  -p, --top-p F           nucleus sampling (default 0.9; 1 = off)\n"
          "  -k, --top-k N           keep the N most likely tokens (default 0 = off)\n"
          "      --min-p F           drop tokens below F x the top probability (default 0 = off)\n"
          "      --repeat-penalty F  penalise recent tokens (default 1 = off)\n"
          "      --repeat-last-n N   tokens the penalty looks back over (default 64)\n"
          "  -s, --seed N            random seed (default: time-based, shown in the status)\n"
          "  -n, --steps N           most new tokens per reply/generation (generate: 256;\n"
          "                          chat: 0 = until the model ends its reply)\n"
          "  -c, --ctx N             context length (default: the model's)\n"
          "  -T, --threads N         OpenMP threads (default: all cores)\n"
          "      --trace FILE        write one JSON line per step record\n"
          "      --trace-attn        include attention weights in the trace\n"
          "      --pieces            tokenize: print pieces instead of ids\n"
          "      --weights TYPE      q8_0 (default) or f32: compute with int8 or fp32 weights\n"
          "      --kernels ISA       auto | scalar | avx2 | avx512 (default auto)\n"
          "      --kv-cache TYPE     q8_0 or f32 (default: q8_0 with int8 weights, f32 with f32)\n"
          "      --mouse             tui: enable the mouse (wheel scrolls)\n"
          "      --no-color          tui: no colours (also when NO_COLOR is set)\n"
          "  -h, --help              show this help\n"
          "  -V, --version           show the version\n"
          "\n"
          "Exit status: 0 success, 1 runtime failure, 2 usage error.\n"
          "See llmchat(1) for the modes, the chat commands and the TUI keys.\n",
          f);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "llmchat: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'llmchat --help' for more information.\n");
    va_end(ap);
    return 2;
}

static bool parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

static bool parse_float(const char *s, float *out)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static bool parse_seed(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || *s == '-')
        return false;
    *out = v;
    return true;
}

static void defaults(cli_options *o)
{
    memset(o, 0, sizeof *o);
    sampler_config_default(&o->sampler);
    o->steps = -1;
    o->weights = TENSOR_Q8_0;
    o->isa = KERNELS_AUTO;
    o->kv_cache = TRANSFORMER_KV_AUTO;
    o->top_k_shown = 10;
    const char *nc = getenv("NO_COLOR");
    o->no_color = nc && *nc;
}

int cli_parse(int argc, char **argv, cli_options *o)
{
    defaults(o);
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":z:m:i:f:y:t:p:k:s:n:c:T:hV", long_options, NULL)) != -1) {
        switch (c) {
        case 'z': o->tokenizer_path = optarg; break;
        case 'm':
            if (!strcmp(optarg, "tui")) o->mode = MODE_TUI;
            else if (!strcmp(optarg, "chat")) o->mode = MODE_CHAT;
            else if (!strcmp(optarg, "generate")) o->mode = MODE_GENERATE;
            else if (!strcmp(optarg, "tokenize")) o->mode = MODE_TOKENIZE;
            else if (!strcmp(optarg, "perplexity")) o->mode = MODE_PERPLEXITY;
            else
                return usage_error("unknown mode '%s' (tui, chat, generate, tokenize, perplexity)",
                                   optarg);
            break;
        case 'i': o->prompt = optarg; break;
        case 'f': o->file = optarg; break;
        case 'y': o->system = optarg; break;
        case 't':
            if (!parse_float(optarg, &o->sampler.temperature) || o->sampler.temperature < 0)
                return usage_error("--temperature must be a number >= 0, got '%s'", optarg);
            break;
        case 'p':
            if (!parse_float(optarg, &o->sampler.top_p) || o->sampler.top_p <= 0 ||
                o->sampler.top_p > 1)
                return usage_error("--top-p must be in (0, 1], got '%s'", optarg);
            break;
        case 'k':
            if (!parse_int(optarg, 0, INT_MAX, &o->sampler.top_k))
                return usage_error("--top-k must be an integer >= 0, got '%s'", optarg);
            break;
        case OPT_MIN_P:
            if (!parse_float(optarg, &o->sampler.min_p) || o->sampler.min_p < 0 ||
                o->sampler.min_p >= 1)
                return usage_error("--min-p must be in [0, 1), got '%s'", optarg);
            break;
        case OPT_REPEAT_PENALTY:
            if (!parse_float(optarg, &o->sampler.repeat_penalty) || o->sampler.repeat_penalty <= 0)
                return usage_error("--repeat-penalty must be a number > 0, got '%s'", optarg);
            break;
        case OPT_REPEAT_LAST_N:
            if (!parse_int(optarg, 0, INT_MAX, &o->sampler.repeat_last_n))
                return usage_error("--repeat-last-n must be an integer >= 0, got '%s'", optarg);
            break;
        case 's':
            if (!parse_seed(optarg, &o->sampler.seed))
                return usage_error("--seed must be a non-negative integer, got '%s'", optarg);
            o->seed_given = true;
            break;
        case 'n':
            if (!parse_int(optarg, 0, CLI_STEPS_MAX, &o->steps))
                return usage_error("--steps must be an integer from 0 to %d, got '%s'",
                                   CLI_STEPS_MAX, optarg);
            break;
        case 'c':
            if (!parse_int(optarg, 1, INT_MAX, &o->ctx))
                return usage_error("--ctx must be an integer >= 1, got '%s'", optarg);
            break;
        case 'T':
            if (!parse_int(optarg, 1, 1024, &o->threads))
                return usage_error("--threads must be an integer in 1..1024, got '%s'", optarg);
            break;
        case OPT_TRACE: o->trace_path = optarg; break;
        case OPT_TRACE_ATTN: o->trace_attn = true; break;
        case OPT_PIECES: o->pieces = true; break;
        case OPT_WEIGHTS:
            if (!strcmp(optarg, "q8_0") || !strcmp(optarg, "int8")) o->weights = TENSOR_Q8_0;
            else if (!strcmp(optarg, "f32") || !strcmp(optarg, "fp32")) o->weights = TENSOR_F32;
            else
                return usage_error("--weights must be q8_0 or f32, got '%s'", optarg);
            break;
        case OPT_KV_CACHE:
            if (!strcmp(optarg, "auto")) o->kv_cache = TRANSFORMER_KV_AUTO;
            else if (!strcmp(optarg, "q8_0") || !strcmp(optarg, "int8")) o->kv_cache = TRANSFORMER_KV_Q8_0;
            else if (!strcmp(optarg, "f32") || !strcmp(optarg, "fp32")) o->kv_cache = TRANSFORMER_KV_F32;
            else
                return usage_error("--kv-cache must be auto, q8_0 or f32, got '%s'", optarg);
            break;
        case OPT_KERNELS:
            if (!kernels_isa_parse(optarg, &o->isa))
                return usage_error("--kernels must be auto, scalar, avx2 or avx512, got '%s'",
                                   optarg);
            if (!kernels_isa_supported(o->isa))
                return usage_error("--kernels %s: this CPU or this build cannot run them",
                                   optarg);
            break;
        case OPT_MOUSE: o->mouse = true; break;
        case OPT_NO_COLOR: o->no_color = true; break;
        case 'h':
            cli_usage(stdout);
            return -1;
        case 'V':
            printf("llmchat %s\n", PACKAGE_VERSION);
            return -1;
        case ':':
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt)
                return usage_error("unknown option '-%c'", optopt);
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        o->model_path = argv[optind++];
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (!o->model_path && !(o->mode == MODE_TOKENIZE && o->tokenizer_path))
        return usage_error("no MODEL given");
    if (o->trace_attn && !o->trace_path)
        return usage_error("--trace-attn needs --trace FILE");
    if (o->prompt && o->file)
        return usage_error("give the input with -i or -f, not both");
    if (!o->seed_given)
        o->sampler.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    if (o->mode == MODE_AUTO)
        o->mode = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) ? MODE_TUI : MODE_CHAT;
    return 0;
}
