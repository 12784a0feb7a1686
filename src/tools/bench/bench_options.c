/* bench/bench_options.c — llmchat-bench's command line (see bench_options.h): the
 * option table for getopt_long, --help's text, the checks of each value, and the
 * defaults that depend on the environment. */
#define _GNU_SOURCE
#include "config.h"

#include "bench_options.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "model.h"
#include "parse_number.h"
#include "quantize.h"
#include "shapes.h"

enum { ROUNDS_DEFAULT = 3 }; /* side-by-side rounds */

/* text, word-wrapped to lines of 80 columns, each `indent` spaces in. */
static void print_indented(FILE *f, const char *text, int indent)
{
    int col = 0;
    for (const char *p = text; *p;) {
        size_t word = strcspn(p, " ");
        if (col && col + 1 + (int)word > 80) {
            fputc('\n', f);
            col = 0;
        }
        if (!col)
            col = fprintf(f, "%*s", indent, "");
        else
            col += fprintf(f, " ");
        col += fprintf(f, "%.*s", (int)word, p);
        p += word;
        p += strspn(p, " ");
    }
    fputc('\n', f);
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: llmchat-bench [OPTIONS]\n"
            "Speed of llmchat on random-weight int8 models of real shapes, through the engine\n"
            "as `llmchat -m generate` runs it, and beside llama.cpp on the same model.\n\n"
            "  -s, --shape NAME    15M, 42M, 110M, 1B, 7B, llama3.2-1B, or a family's:\n"
            "                      qwen2-0.5B, qwen3-0.6B, phi3-3.8B, gemma-2B,\n"
            "                      gemma2-2B, gemma3-1B;\n"
            "                      mixtures of experts: qwen3moe-1B-A0.3B,\n"
            "                      qwen3moe-30B-A3B, gpt-oss-1B-A0.2B, gpt-oss-20b;\n"
            "                      hybrids: qwen3.5-0.8B, qwen3.5-4B, gemma-4-E2B;\n"
            "                      gemma-4-moe-0.7B-A0.5B (GGUF files);\n"
            "                      repeatable or a comma list (default 15M,110M)\n"
            "  -T, --threads N     threads (default: the CPUs this process may run on)\n"
            "  -n, --steps N       decode tokens from position 1, split into 8 windows\n"
            "                      (default 128; windows are lengthened to last >= 50 ms\n"
            "                      and shortened so that all 8 take about 10 s)\n"
            "  -p, --prompt N      prefill tokens (default 512, capped by the context)\n"
            "  -c, --cache DIR     model files (default $XDG_CACHE_HOME/llmchat-bench)\n"
            "      --long          also decode at position 100 and at 4000 (or the end of\n"
            "                      the context, if shorter): 5 near/far window pairs\n"
            "      --scaling       also decode on 1 thread and on all: 5 window pairs\n"
            "      --sweep         instead of the table: prefill and decode (llama-bench's pp\n"
            "                      and tg tests) on 1, 2, 4, ... threads up to -T or all\n"
            "                      CPUs, --rounds rounds each, one row per thread count; with\n"
            "                      --against, llama.cpp beside it and the ratios\n"
            "      --sweep-at LIST the same on these thread counts only (a comma list, such\n"
            "                      as 1,4,16)\n"
            "      --kernels NAME  force the kernels, one of\n");
    print_indented(f, KERNELS_ISA_CHOICES, 22);
    fprintf(f,
            "                      (default: auto, the best the CPU has; --isa is a synonym)\n"
            "      --prefetch WAY  how the kernels prefetch the weights they stream: t0 (the\n"
            "                      default), nta (non-temporal) or none; one run a way\n"
            "                      compares them on a machine without a rebuild\n"
            "      --panels on|off whether GGUF Q8_0 files are also packed into the panels\n"
            "                      decode reads on AVX-512 VNNI CPUs, and Q4_K ones held in\n"
            "                      those of the x86 kernels (default: as llmchat, Q8_0\n"
            "                      where decode reads four streams, Q4_K on x86)\n"
            "      --huge-pages auto|on|off  the weights in memory of 2 MiB pages (the\n"
            "                      file read in) or mapped in 4 KiB pages (default: as\n"
            "                      llmchat, auto)\n"
            "      --decode-streams N  weight streams a decode thread reads side by side, 1\n"
            "                      or 4 (default: 4 on Intel, 1 elsewhere, as llmchat)\n"
            "      --probe-mib N   the memory bandwidth probe's buffer (default 1024; the\n"
            "                      passes between decode windows read half of it): a\n"
            "                      buffer the caches hold reads faster than memory, so keep\n"
            "                      it several times the last-level cache (a smaller one\n"
            "                      only makes a quick run, as the tests do)\n"
            "      --format F      the file llmchat times: llama2c (default, int8 v2) or gguf\n"
            "                      (Q8_0, the file --against gives llama-bench)\n"
            "      --quant TYPE    the GGUF file made TYPE (q4_k_m, q4_0, q5_k_m, q6_k,\n"
            "                      mxfp4_moe: experts MXFP4, ...) by llama-quantize from\n"
            "                      the Q8_0 one, and timed by\n"
            "                      both engines (implies --format gguf); llama-quantize is\n"
            "                      --quantize PATH, $LLMCHAT_ANCHOR_LLAMA_QUANTIZE, or the\n"
            "                      one beside the llama-bench (says so and stops when\n"
            "                      there is none)\n"
            "      --quantize PATH that llama-quantize\n"
            "      --against llama.cpp\n"
            "                      also write each shape as a GGUF Q8_0 file and alternate\n"
            "                      llmchat with llama-bench -p N -n G on it, 3 rounds; the\n"
            "                      llama-bench is $LLMCHAT_ANCHOR_LLAMA_BENCH (skipped with a\n"
            "                      message when unset)\n"
            "      --anchor PATH   the same with this llama-bench\n"
            "      --rounds N      side-by-side rounds (default 3, at most 9)\n"
            "      --anchor-reps N repetitions of each test in a round (llama-bench -r;\n"
            "                      default llama-bench's 5)\n"
            "      --gen G         tokens of the side-by-side decode test, both engines'\n"
            "                      (llama-bench -n G; default 128): fewer let a big shape's\n"
            "                      rows on one or two threads fit a short run\n"
            "      --patch N       instead of the table: activation patching (-m patch's\n"
            "                      resid_pre grid, every layer x N positions, KL) against\n"
            "                      one forward pass of the N-token prompt, as a ratio\n"
            "      --speculate K   instead of the table: speculative decoding, K guesses a\n"
            "                      step, against plain decoding of --gen G tokens after a\n"
            "                      -p N prompt (greedy), alternating, 3 rounds; the guesses\n"
            "                      are the plain run's own tokens, each kept right with\n"
            "                      probability 1, 0.8, 0.6 and 0 (the acceptance rate fixed),\n"
            "                      and the two outputs compared token for token\n"
            "      --draft-min N   with --speculate K: ask for between N and K guesses a\n"
            "                      step, as many as pay by the acceptance and the cost\n"
            "                      measured so far (what llmchat does: its --draft-min,\n"
            "                      default 0); without it, always K\n"
            "      --draft-shape NAME\n"
            "                      --speculate with a draft model of that shape run for\n"
            "                      the guesses (its cost paid; its guesses replaced by the\n"
            "                      fixed-rate ones)\n"
            "      --agreeing-draft L\n"
            "                      --speculate K with a real draft model that agrees with\n"
            "                      the model: the shape's first L layers (cut from the\n"
            "                      model's file), and as the model the shape with every\n"
            "                      later layer's output projections zero (it reads them\n"
            "                      all, and gives the tokens of its first L layers); plain\n"
            "                      and speculative decoding of --gen G tokens by llmchat\n"
            "                      (--draft's guesser) and by llama.cpp's llama-server\n"
            "                      (-md, --spec-draft-n-max K) on the same two GGUF files\n"
            "                      (--quant applies to both), --rounds R rounds alternating\n"
            "                      (implies --format gguf)\n"
            "      --anchor-server PATH\n"
            "                      that llama-server (default: $LLMCHAT_ANCHOR_LLAMA_SERVER,\n"
            "                      or the one beside --anchor's llama-bench; without one\n"
            "                      only llmchat is timed)\n"
            "      --server URL    instead of the table: a served model (llama-server, vLLM,\n"
            "                      ollama): time to first token of a -p N token prompt and\n"
            "                      decode tok/s of --gen G tokens, --rounds R requests\n"
            "                      (default 3), each prompt new to the server's cache\n"
            "      --server-model NAME, --api-key-env NAME\n"
            "                      the served model, and the variable holding the API key\n"
            "      --json          one JSON object per shape instead of a table\n"
            "      --llmchat PATH  the llmchat program: measure the TUI's decode speed as a\n"
            "                      fraction of generate mode's, and both modes' time to first\n"
            "                      token (needs tmux and a 32000-token tokenizer)\n"
            "      --tokenizer F   a 32000-token tokenizer.bin for those runs (default: the\n"
            "                      cache dir's tokenizer.bin)\n"
            "      --tui-script F  the llmchat-bench-tui script that runs one pair\n"
            "                      (default: the installed one)\n"
            "  -h, --help\n"
            "  -V, --version\n\n"
            "Memory bandwidth may change by 2x within minutes, so speed is compared with it\n"
            "in pairs close in time. The decode runs in 8 windows, each between two\n"
            "streaming reads of a 512 MiB buffer (half --probe-mib) on all CPUs (4 streams a\n"
            "thread, the widest loads; of three ways to look ahead, the fastest on this\n"
            "machine: bandwidth_way); a window's roofline = weight bytes read per token x its\n"
            "tok/s / the mean bandwidth of the reads before and after it.\n"
            "decode roofline and bw are medians over windows and reads (JSON:\n"
            "decode_roofline, bandwidth_gb_s; _min/_max the extremes); decode tok/s is all\n"
            "window tokens over all window time. --long gives long_ratio, the median\n"
            "far/near tok/s over pairs; --scaling thread_speedup, the median all/1-thread\n"
            "tok/s over pairs, and stream_speedup, the same ratio for a streaming read\n"
            "(decode cannot scale better). --against gives prefill_ratio and decode_ratio,\n"
            "the medians of llmchat's over llama.cpp's tok/s in each round. The bandwidth\n"
            "measured once at the start (best of 8 reads of --probe-mib) is\n"
            "bandwidth_start_gb_s. Pairing cannot undo other programs competing for the\n"
            "cores: cpu_others is their share of the CPUs while a shape was timed (the table\n"
            "warns above 10%%), load_avg the load average when it started.\n"
            "JSON adds decode_peak_tok_s, the best 16 consecutive tokens. Files are written\n"
            "once (7B: about 7 GB, and as much again for its GGUF) and reused.\n");
}

/* An integer option's value from lo to hi; a usage error (exit 2) otherwise. */
static int int_option(const char *s, const char *what, int lo, int hi)
{
    int v;
    if (!parse_int(s, lo, hi, &v)) {
        fprintf(stderr, "llmchat-bench: %s must be an integer from %d to %d, not '%s'\n", what,
                lo, hi, s);
        exit(2);
    }
    return v;
}

/* A comma list of thread counts (1..1024) into at[], at most max - 1 of them, 0 after. */
static void parse_thread_list(const char *list, int *at, int max)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n == max - 1) {
            fprintf(stderr, "llmchat-bench: --sweep-at takes at most %d thread counts\n", max - 1);
            exit(2);
        }
        at[n++] = int_option(t, "each of --sweep-at's thread counts", 1, 1024);
    }
    if (n == 0) {
        fprintf(stderr, "llmchat-bench: --sweep-at needs thread counts, such as 1,4,16\n");
        exit(2);
    }
    at[n] = 0;
}

static kernels_isa parse_isa(const char *name)
{
    kernels_isa isa;
    if (!kernels_isa_parse(name, &isa)) {
        fprintf(stderr, "llmchat-bench: unknown kernel set '%s' (%s)\n", name,
                kernels_isa_choices());
        exit(2);
    }
    if (!kernels_isa_supported(isa)) {
        fprintf(stderr, "llmchat-bench: this CPU or build cannot run %s kernels\n", name);
        exit(2);
    }
    return isa;
}

static void add_shapes(const char *list, bool *want)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ", "); tok; tok = strtok(NULL, ", ")) {
        int i = 0;
        while (i < bench_n_shapes && strcasecmp(bench_shapes[i].name, tok) != 0)
            i++;
        if (i == bench_n_shapes) {
            fprintf(stderr, "llmchat-bench: unknown shape '%s' (", tok);
            for (int k = 0; k < bench_n_shapes; k++)
                fprintf(stderr, "%s%s", k ? ", " : "", bench_shapes[k].name);
            fprintf(stderr, ")\n");
            exit(2);
        }
        want[i] = true;
    }
}

/* The installed llmchat-bench-tui script, or NULL. */
static const char *tui_script_installed(void)
{
#ifdef LLMCHAT_PKGLIBEXECDIR
    static const char path[] = LLMCHAT_PKGLIBEXECDIR "/llmchat-bench-tui";
    if (access(path, X_OK) == 0)
        return path;
#endif
    return NULL;
}

/* The defaults that depend on the environment: the cache directory, the tokenizer.bin
 * in it and the installed llmchat-bench-tui (for the TUI column). */
static void fill_defaults(bench_options *o)
{
    static char cache[4096];
    if (!o->cache) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg)
            snprintf(cache, sizeof cache, "%s/llmchat-bench", xdg);
        else
            snprintf(cache, sizeof cache, "%s/.cache/llmchat-bench", home && *home ? home : "/tmp");
        o->cache = cache;
    }
    static char tok_path[4096];
    if (o->llmchat && !o->tokenizer) {
        snprintf(tok_path, sizeof tok_path, "%s/tokenizer.bin", o->cache);
        if (access(tok_path, R_OK) == 0)
            o->tokenizer = tok_path;
    }
    if (o->llmchat && !o->tui_script)
        o->tui_script = tui_script_installed();
}

/* getopt_long's error c (':' a value missing, '?' an unknown option or a flag given a
 * value, optopt naming it when it can) for the argument arg, said; returns 2. */
static int option_error(int c, const char *arg)
{
    if (optopt && !strncmp(arg, "--", 2) && strchr(arg, '=')) /* BSD answers ':' for it */
        fprintf(stderr, "llmchat-bench: option '%.*s' takes no value\n", (int)strcspn(arg, "="), arg);
    else if (c == ':')
        fprintf(stderr, "llmchat-bench: option '%s' needs a value\n", arg);
    else if (optopt && optopt < 256)
        fprintf(stderr, "llmchat-bench: unknown option '-%c'\n", optopt);
    else
        fprintf(stderr, "llmchat-bench: unknown option '%s'\n", arg);
    fprintf(stderr, "Try 'llmchat-bench --help' for the options.\n");
    return 2;
}

int bench_options_parse(int argc, char **argv, bench_options *o)
{
    *o = (bench_options){.steps = 128, .prompt = 512, .gen = 128, .rounds = ROUNDS_DEFAULT,
                         .draft_shape = -1, .draft_min = -1, .probe_mib = 1024};
    bool any = false;
    if (bench_n_shapes > BENCH_SHAPES_MAX) { /* a row added to shapes.c beyond o->want */
        fprintf(stderr, "llmchat-bench: %d shapes, room for %d: raise BENCH_SHAPES_MAX\n",
                bench_n_shapes, (int)BENCH_SHAPES_MAX);
        return 1;
    }
    enum {
        OPT_JSON = 256, OPT_LONG, OPT_LLMCHAT, OPT_ISA, OPT_TOKENIZER, OPT_SCALING, OPT_AGAINST,
        OPT_ANCHOR, OPT_ROUNDS, OPT_ANCHOR_REPS, OPT_TUI_SCRIPT, OPT_FORMAT, OPT_QUANT,
        OPT_QUANTIZE, OPT_SWEEP, OPT_PREFETCH, OPT_SWEEP_AT, OPT_PANELS, OPT_HUGE_PAGES,
        OPT_DECODE_STREAMS, OPT_GEN,
        OPT_PATCH, OPT_SPECULATE, OPT_DRAFT_SHAPE, OPT_SERVER, OPT_SERVER_MODEL, OPT_API_KEY_ENV,
        OPT_AGREEING_DRAFT, OPT_ANCHOR_SERVER, OPT_PROBE_MIB, OPT_DRAFT_MIN,
    };
    static const struct option longopts[] = {
        {"shape", required_argument, NULL, 's'},   {"threads", required_argument, NULL, 'T'},
        {"steps", required_argument, NULL, 'n'},   {"prompt", required_argument, NULL, 'p'},
        {"cache", required_argument, NULL, 'c'},   {"json", no_argument, NULL, OPT_JSON},
        {"long", no_argument, NULL, OPT_LONG},     {"llmchat", required_argument, NULL, OPT_LLMCHAT},
        {"kernels", required_argument, NULL, OPT_ISA}, {"isa", required_argument, NULL, OPT_ISA},
        {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
        {"scaling", no_argument, NULL, OPT_SCALING},
        {"against", required_argument, NULL, OPT_AGAINST},
        {"anchor", required_argument, NULL, OPT_ANCHOR},
        {"rounds", required_argument, NULL, OPT_ROUNDS},
        {"anchor-reps", required_argument, NULL, OPT_ANCHOR_REPS},
        {"gen", required_argument, NULL, OPT_GEN},
        {"patch", required_argument, NULL, OPT_PATCH},
        {"speculate", required_argument, NULL, OPT_SPECULATE},
        {"draft-shape", required_argument, NULL, OPT_DRAFT_SHAPE},
        {"draft-min", required_argument, NULL, OPT_DRAFT_MIN},
        {"agreeing-draft", required_argument, NULL, OPT_AGREEING_DRAFT},
        {"anchor-server", required_argument, NULL, OPT_ANCHOR_SERVER},
        {"server", required_argument, NULL, OPT_SERVER},
        {"server-model", required_argument, NULL, OPT_SERVER_MODEL},
        {"api-key-env", required_argument, NULL, OPT_API_KEY_ENV},
        {"tui-script", required_argument, NULL, OPT_TUI_SCRIPT},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"quant", required_argument, NULL, OPT_QUANT},
        {"quantize", required_argument, NULL, OPT_QUANTIZE},
        {"sweep", no_argument, NULL, OPT_SWEEP},
        {"prefetch", required_argument, NULL, OPT_PREFETCH},
        {"panels", required_argument, NULL, OPT_PANELS},
        {"huge-pages", required_argument, NULL, OPT_HUGE_PAGES},
        {"decode-streams", required_argument, NULL, OPT_DECODE_STREAMS},
        {"sweep-at", required_argument, NULL, OPT_SWEEP_AT},
        {"probe-mib", required_argument, NULL, OPT_PROBE_MIB},
        {"help", no_argument, NULL, 'h'},          {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0; /* its messages name the program by its path: said here instead */
    while ((c = getopt_long(argc, argv, ":s:T:n:p:c:hV", longopts, NULL)) != -1) {
        switch (c) {
        case 's': add_shapes(optarg, o->want); any = true; break;
        case 'T': o->threads = int_option(optarg, "--threads", 1, 1024); break;
        case 'n': o->steps = int_option(optarg, "--steps", 1, 1000000); break;
        case 'p': o->prompt = int_option(optarg, "--prompt", 1, MAX_PROMPT); break;
        case 'c': o->cache = optarg; break;
        case OPT_JSON: o->json = true; break;
        case OPT_LONG: o->long_ctx = true; break;
        case OPT_SCALING: o->scaling = true; break;
        case OPT_SWEEP: o->sweep = true; break;
        case OPT_SWEEP_AT: parse_thread_list(optarg, o->sweep_at, 16); o->sweep = true; break;
        case OPT_LLMCHAT: o->llmchat = optarg; break;
        case OPT_ISA: o->isa = parse_isa(optarg); break;
        case OPT_TOKENIZER: o->tokenizer = optarg; break;
        case OPT_TUI_SCRIPT: o->tui_script = optarg; break;
        case OPT_FORMAT:
            if (strcmp(optarg, "gguf") && strcmp(optarg, "llama2c")) {
                fprintf(stderr, "llmchat-bench: --format must be gguf or llama2c, not '%s'\n", optarg);
                exit(2);
            }
            o->gguf = !strcmp(optarg, "gguf");
            break;
        case OPT_QUANT:
            if (!quantize_type_ok(optarg)) {
                fprintf(stderr, "llmchat-bench: --quant must be q4_0, q4_1, q5_0, q5_1, q4_k_m, "
                        "q4_k_s, q5_k_m, q5_k_s, q6_k or mxfp4_moe, not '%s'\n", optarg);
                return 2;
            }
            o->quant = optarg;
            o->gguf = true;
            break;
        case OPT_QUANTIZE: o->quantize = optarg; break;
        case OPT_PANELS:
            if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
                fprintf(stderr, "llmchat-bench: --panels must be on or off, not '%s'\n", optarg);
                return 2;
            }
            o->no_panels = strcmp(optarg, "off") == 0;
            o->panels_given = true;
            break;
        case OPT_HUGE_PAGES: {
            model_huge_pages huge;
            if (!model_huge_pages_parse(optarg, &huge)) {
                fprintf(stderr, "llmchat-bench: --huge-pages must be auto, on or off, not '%s'\n",
                        optarg);
                return 2;
            }
            o->huge_pages = (int)huge;
            break;
        }
        case OPT_DECODE_STREAMS:
            if (strcmp(optarg, "1") != 0 && strcmp(optarg, "4") != 0) {
                fprintf(stderr, "llmchat-bench: --decode-streams must be 1 or 4, not '%s'\n",
                        optarg);
                return 2;
            }
            o->decode_streams = atoi(optarg);
            break;
        case OPT_PREFETCH:
            if (!kernels_prefetch_parse(optarg, &o->prefetch)) {
                fprintf(stderr, "llmchat-bench: --prefetch must be t0, nta or none, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case OPT_AGAINST:
            if (strcmp(optarg, "llama.cpp") != 0) {
                fprintf(stderr, "llmchat-bench: --against takes llama.cpp, not '%s'\n", optarg);
                return 2;
            }
            o->against = true;
            break;
        case OPT_ANCHOR: o->against = true; o->anchor = optarg; break;
        case OPT_ROUNDS: o->rounds = int_option(optarg, "--rounds", 1, ROUNDS_MAX); break;
        case OPT_ANCHOR_REPS: o->anchor_reps = int_option(optarg, "--anchor-reps", 1, 100); break;
        case OPT_GEN: o->gen = int_option(optarg, "--gen", 1, MAX_PROMPT); break;
        case OPT_PATCH: o->patch = int_option(optarg, "--patch", 2, 256); break;
        case OPT_SPECULATE: o->speculate = int_option(optarg, "--speculate", 1, 16); break;
        case OPT_DRAFT_MIN: o->draft_min = int_option(optarg, "--draft-min", 0, 16); break;
        case OPT_DRAFT_SHAPE: {
            bool one[BENCH_SHAPES_MAX] = {false};
            add_shapes(optarg, one);
            for (int i = 0; i < bench_n_shapes; i++)
                if (one[i])
                    o->draft_shape = i;
            break;
        }
        case OPT_SERVER:
            if (strncmp(optarg, "http://", 7) != 0 && strncmp(optarg, "https://", 8) != 0) {
                fprintf(stderr, "llmchat-bench: --server must be an http:// or https:// URL, not "
                                "'%s'\n", optarg);
                return 2;
            }
            o->server = optarg;
            break;
        case OPT_AGREEING_DRAFT:
            o->agreeing_draft = int_option(optarg, "--agreeing-draft", 1, 1000);
            o->gguf = true;
            break;
        case OPT_ANCHOR_SERVER: o->anchor_server = optarg; break;
        case OPT_PROBE_MIB: o->probe_mib = int_option(optarg, "--probe-mib", 2, 65536); break;
        case OPT_SERVER_MODEL: o->server_model = optarg; break;
        case OPT_API_KEY_ENV: o->api_key_env = optarg; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("llmchat-bench %s\n", PACKAGE_VERSION); return 0;
        default: return option_error(c, argv[optind - 1]);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "llmchat-bench: unexpected argument '%s'\n", argv[optind]);
        fprintf(stderr, "Try 'llmchat-bench --help' for the options.\n");
        return 2;
    }
    if (o->draft_shape >= 0 && !o->speculate) {
        fprintf(stderr, "llmchat-bench: --draft-shape is for --speculate\n");
        return 2;
    }
    if (o->draft_min >= 0 && !o->speculate) {
        fprintf(stderr, "llmchat-bench: --draft-min is for --speculate\n");
        return 2;
    }
    if (o->draft_min > o->speculate) {
        fprintf(stderr, "llmchat-bench: --draft-min %d is more than --speculate %d\n",
                o->draft_min, o->speculate);
        return 2;
    }
    if (o->agreeing_draft && (!o->speculate || o->draft_shape >= 0)) {
        fprintf(stderr, "llmchat-bench: --agreeing-draft is for --speculate, without "
                        "--draft-shape\n");
        return 2;
    }
    if (!any)
        o->want[0] = o->want[2] = true; /* 15M, 110M */
    fill_defaults(o);
    return -1;
}
