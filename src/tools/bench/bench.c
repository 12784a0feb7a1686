/* bench.c — llmchat-bench: speed of llmchat on random-weight models of real shapes,
 * through the path users run (the engine, as `llmchat -m generate` drives it), and
 * beside another engine on the same model.
 *
 * Writes llama2.c v2 (int8 Q8_0) files of named shapes (15M ... 7B) into a cache
 * directory on demand (shapes.h), GGUF Q8_0 files for the shapes of the other families
 * (qwen2-0.5B ... gemma3-1B), then for each shape opens the file with model_open
 * and times an engine with generate mode's options (greedy): prefill of a prompt, time
 * to first token, decode, resident memory, and decode as a fraction of the bandwidth
 * limit (every weight byte is read once per decoded token; measure.h, machine.h). With
 * --against (or --anchor PATH) it also writes the shape as a GGUF Q8_0 file and
 * alternates llmchat's prefill and decode with llama.cpp's llama-bench, both on that
 * file (side_by_side.h, anchor.h), reporting the medians of the per-round ratios; with
 * --llmchat, the TUI's share of the decode speed (tui_timing.h); with --sweep, rounds
 * on 1, 2, 4, ... threads instead (sweep.h); with --patch N, an activation-patching
 * grid against one forward pass (measure_patch). Prints a table, or one JSON object per
 * shape with --json (report.h).
 *
 * This file is the program's steps: the options (bench_options.h), the other programs
 * it runs, the model files, then a sweep or the table. Each measurement runs in a
 * forked child (measure.h); the parent only writes files, forks, runs the other
 * programs and prints. A front end: it prints and exits. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agreeing_draft.h"
#include "anchor.h"
#include "anchor_server.h"
#include "bench_options.h"
#include "cpus.h"
#include "gguf_cut.h"
#include "measure.h"
#include "openmp_wait.h"
#include "quantize.h"
#include "report.h"
#include "shapes.h"
#include "side_by_side.h"
#include "served.h"
#include "sweep.h"
#include "tui_timing.h"
#include "std_streams.h"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "llmchat-bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void make_dirs(const char *dir)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(buf, 0755);
            *p = '/';
        }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        die("cannot create the cache directory %s: %s", dir, strerror(errno));
}

/* The other programs llmchat-bench runs beside llmchat. */
typedef struct {
    const char *llama_bench;    /* --against: llama-bench; NULL without, or when none is found */
    char anchor_why[320];       /* ... why none was found */
    const char *llama_quantize; /* --quant: llama-quantize */
} programs;

/* Finds llama-bench (--against, --anchor) and llama-quantize (--quant). Returns 0, or
 * 1 when --quant has no llama-quantize (said on stderr). */
static int find_programs(const bench_options *o, programs *p)
{
    memset(p, 0, sizeof *p);
    if (o->against)
        p->llama_bench = anchor_find(o->anchor, p->anchor_why, sizeof p->anchor_why);
    if (o->quant) {
        char why[320];
        const char *beside = o->anchor ? o->anchor : getenv("LLMCHAT_ANCHOR_LLAMA_BENCH");
        if (!(p->llama_quantize = quantize_find(o->quantize, beside, why, sizeof why))) {
            fprintf(stderr, "llmchat-bench: --quant %s: %s\n", o->quant, why);
            return 1;
        }
    }
    return 0;
}

/* The files a shape is timed on. */
typedef struct {
    char path[4096]; /* the one llmchat times: llama2.c, or with --format gguf the GGUF one */
    char gguf[4096]; /* the GGUF one llama-bench times: Q8_0, or --quant's type */
} shape_files;

/* Writes shape s's files into the cache (unless they are there), as the options ask:
 * the llama2.c file, the GGUF Q8_0 one for llama-bench or --format gguf, and --quant's
 * made from it. Ends the program when one cannot be written. */
static void write_files(const bench_options *o, const programs *p, const shape *s, shape_files *f)
{
    char err[512];
    bool gguf = o->gguf || !shape_has_llama2c(s); /* the other families have none */
    snprintf(f->path, sizeof f->path, "%s/random-%s-q8_0.bin", o->cache, s->name);
    if (!gguf && shape_write_llama2c(s, f->path, err, sizeof err) != 0)
        die("%s", err);
    snprintf(f->gguf, sizeof f->gguf, "%s/random-%s-q8_0.gguf", o->cache, s->name);
    if ((p->llama_bench || gguf) && shape_write_gguf(s, f->gguf, err, sizeof err) != 0)
        die("%s", err);
    if (o->quant) { /* that file made o->quant: the one both engines time */
        char q8[4096];
        memcpy(q8, f->gguf, sizeof q8);
        snprintf(f->gguf, sizeof f->gguf, "%s/random-%s-%s.gguf", o->cache, s->name, o->quant);
        int threads = cpus_threads(o->threads, cpus_usable(), NULL);
        if (quantize_file(p->llama_quantize, q8, f->gguf, o->quant, threads, err, sizeof err) != 0)
            die("%s", err);
    }
    if (gguf) /* llmchat times the GGUF file as well: the very file llama-bench reads */
        memcpy(f->path, f->gguf, sizeof f->path);
}

/* The TUI column of a shape timed as r, or why it is not measured. */
static void tui_column(const bench_options *o, const shape *s, const shape_files *f, const shape_result *r,
                       tui_result *tr)
{
    *tr = (tui_result){.fraction = -1.0};
    if (!o->llmchat)
        snprintf(tr->why, sizeof tr->why, "not measured: give --llmchat PATH");
    else if (!o->tokenizer)
        snprintf(tr->why, sizeof tr->why, "no 32000-token tokenizer.bin (--tokenizer FILE)");
    else if (!o->tui_script)
        snprintf(tr->why, sizeof tr->why, "llmchat-bench-tui not found (--tui-script FILE)");
    else if (r->ok)
        tui_timing_measure(o, s, f->path, tr);
}

/* The table (or the JSON objects): the bandwidth at the start, then for each shape
 * its measurement, the TUI column and llama.cpp beside it. Returns the exit status:
 * 1 when a shape failed. */
static int run_table(const bench_options *o, const programs *p, shape_files *files)
{
    double bw = 0.0;
    if (measure_bandwidth(o, &bw) != 0 || bw <= 0.0)
        die("%s", "measuring the bandwidth failed");
    bool header = false;
    int failures = 0;
    for (int i = 0; i < bench_n_shapes; i++) {
        if (!o->want[i])
            continue;
        const shape *s = &bench_shapes[i];
        shape_result r;
        if (measure_shape(o, files[i].path, &r) != 0) {
            memset(&r, 0, sizeof r);
            snprintf(r.error, sizeof r.error, "the measuring process died (out of memory?)");
        }
        failures += !r.ok;
        tui_result tr;
        tui_column(o, s, &files[i], &r, &tr);
        side_result sr;
        memset(&sr, 0, sizeof sr);
        if (o->against && !p->llama_bench)
            snprintf(sr.why, sizeof sr.why, "%s", p->anchor_why);
        else if (o->against && r.ok)
            side_by_side_run(o, s, files[i].gguf, p->llama_bench, &sr);
        if (o->json) {
            report_json(s, &r, &tr, &sr, o->against, bw);
        } else {
            if (!header)
                report_table_header(&r, bw);
            header = true;
            report_row(s, &r, &tr, &sr, o->against);
            if (o->llmchat && tr.fraction < 0)
                printf("       TUI column: %s\n", tr.why);
        }
        fflush(stdout);
    }
    return failures ? 1 : 0;
}

/* --patch: each shape's activation-patching grid against one forward pass. */
static int run_patch_table(const bench_options *o, shape_files *files)
{
    int failures = 0;
    if (!o->json)
        printf("activation patching: -m patch's resid_pre grid (every layer x %d positions, "
               "KL) against one forward pass of the %d-token prompt (batch kernels)\n",
               o->patch, o->patch);
    for (int i = 0; i < bench_n_shapes; i++) {
        if (!o->want[i])
            continue;
        patch_timing r;
        if (measure_patch(o, files[i].path, o->patch, &r) != 0) {
            memset(&r, 0, sizeof r);
            snprintf(r.error, sizeof r.error, "the measuring process died (out of memory?)");
        }
        failures += !r.ok;
        const char *name = bench_shapes[i].name;
        if (!r.ok && o->json)
            printf("{\"shape\": \"%s\", \"error\": \"%s\"}\n", name, r.error);
        else if (!r.ok)
            printf("%-12s failed: %s\n", name, r.error);
        else if (o->json)
            printf("{\"shape\": \"%s\", \"threads\": %d, \"kernel\": \"%s\", \"positions\": %d, "
                   "\"layers\": %d, \"runs\": %d, \"passes\": %d, \"positions_run\": %ld, "
                   "\"forward_s\": %.6f, \"grid_s\": %.4f, \"patch_ratio\": %.1f}\n",
                   name, r.threads, r.kernel, r.positions, r.layers, r.runs, r.passes,
                   r.positions_run, r.forward_s, r.grid_s, r.ratio);
        else
            printf("%-12s %d layers x %d positions: %d runs in %d passes (%ld positions) in "
                   "%.2f s; one forward pass %.1f ms; %.1fx (%d threads, %s)\n",
                   name, r.layers, r.positions, r.runs, r.passes, r.positions_run, r.grid_s,
                   r.forward_s * 1e3, r.ratio, r.threads, r.kernel);
        fflush(stdout);
    }
    return failures ? 1 : 0;
}

/* --speculate K: each shape's speculative decoding against plain decoding. */
static int run_speculate_table(const bench_options *o, shape_files *files)
{
    int failures = 0;
    if (!o->json) {
        char asked[48];
        if (o->draft_min < 0)
            snprintf(asked, sizeof asked, "%d guesses a step", o->speculate);
        else /* as llmchat --draft-min N --draft-max K chooses */
            snprintf(asked, sizeof asked, "%d to %d guesses a step as they pay", o->draft_min,
                     o->speculate);
        printf("speculative decoding: %s against plain decoding (greedy), %d "
               "rounds alternating; each guess right with the probability given%s%s\n",
               asked, SPECULATE_ROUNDS, o->draft_shape >= 0 ? "; the guesses' cost a "
               "draft model's of shape " : "",
               o->draft_shape >= 0 ? bench_shapes[o->draft_shape].name : "");
    }
    for (int i = 0; i < bench_n_shapes; i++) {
        if (!o->want[i])
            continue;
        speculate_timing r;
        const char *draft = o->draft_shape >= 0 ? files[o->draft_shape].path : NULL;
        if (measure_speculate(o, files[i].path, draft, o->speculate, &r) != 0) {
            memset(&r, 0, sizeof r);
            snprintf(r.error, sizeof r.error, "the measuring process died (out of memory?)");
        }
        failures += !r.ok || !r.same;
        const char *name = bench_shapes[i].name;
        if (!r.ok) {
            printf(o->json ? "{\"shape\": \"%s\", \"error\": \"%s\"}\n" : "%-12s failed: %s\n",
                   name, r.error);
            continue;
        }
        if (o->json) {
            char least[16] = "null"; /* --draft-min, or null: always the guesses */
            if (o->draft_min >= 0)
                snprintf(least, sizeof least, "%d", o->draft_min);
            printf("{\"shape\": \"%s\", \"threads\": %d, \"kernel\": \"%s\", \"guesses\": %d, "
                   "\"draft_min\": %s, "
                   "\"prompt\": %d, \"gen\": %d, \"draft\": %s%s%s, \"plain_tok_s\": %.2f, "
                   "\"same\": %s, \"runs\": [",
                   name, r.threads, r.kernel, r.guesses, least, r.prompt, r.gen, draft ? "\"" : "",
                   draft ? bench_shapes[o->draft_shape].name : "null", draft ? "\"" : "",
                   r.plain_tok_s, r.same ? "true" : "false");
            for (int k = 0; k < SPECULATE_RATES; k++)
                printf("%s{\"rate\": %.2f, \"accepted\": %.3f, \"tokens_per_check\": %.2f, "
                       "\"tok_s\": %.2f, \"ratio\": %.3f, \"ratio_min\": %.3f, "
                       "\"ratio_max\": %.3f}",
                       k ? ", " : "", r.rate[k], r.accepted[k], r.tokens_per_check[k], r.tok_s[k],
                       r.ratio[k], r.ratio_min[k], r.ratio_max[k]);
            printf("]}\n");
        } else {
            printf("%-12s plain %.1f tok/s (%d threads, %s; -p %d, %d tokens)%s\n", name,
                   r.plain_tok_s, r.threads, r.kernel, r.prompt, r.gen,
                   r.same ? "" : "  THE TOKENS DIFFER FROM PLAIN DECODING");
            for (int k = 0; k < SPECULATE_RATES; k++)
                printf("  right %.1f: accepted %4.0f%%, %.2f tokens a call, %7.1f tok/s, "
                       "%.2fx (%.2f-%.2f)\n",
                       r.rate[k], 100 * r.accepted[k], r.tokens_per_check[k], r.tok_s[k],
                       r.ratio[k], r.ratio_min[k], r.ratio_max[k]);
        }
        fflush(stdout);
    }
    return failures ? 1 : 0;
}

/* --speculate K --agreeing-draft L: each shape's pair (shapes.h: shape_agreeing_pair)
 * written and timed by llmchat and llama-server. */
static int run_agreeing_table(const bench_options *o, const programs *p)
{
    char why[512];
    const char *beside = o->anchor ? o->anchor : getenv("LLMCHAT_ANCHOR_LLAMA_BENCH");
    const char *server = anchor_server_find(o->anchor_server, beside, why, sizeof why);
    fprintf(o->json ? stderr : stdout,
            "%sspeculative decoding with a real draft model that agrees with the model, %d "
            "guesses a step, greedy, %d rounds alternating%s%s\n",
            o->json ? "llmchat-bench: " : "", o->speculate, o->rounds,
            server ? "; llama.cpp: " : "; ", server ? server : why);
    int failures = 0;
    for (int i = 0; i < bench_n_shapes; i++) {
        if (!o->want[i])
            continue;
        const shape *s = &bench_shapes[i];
        if (o->agreeing_draft >= s->n_layers) {
            printf("%-12s has %d layers: a draft of its first %d is the model\n", s->name,
                   s->n_layers, o->agreeing_draft);
            failures++;
            continue;
        }
        static char target_name[64];
        static shape target;
        static shape_files tf;
        static char draft[4200];
        char err[512];
        shape_agreeing_model(s, o->agreeing_draft, &target, target_name, sizeof target_name);
        write_files(o, p, &target, &tf);
        /* the draft cut from the very file (quantized, where --quant asks), so that its
         * layers are the model's bytes whatever type each layer was given */
        snprintf(draft, sizeof draft, "%.*s-first-%d.gguf", (int)(strlen(tf.path) - 5), tf.path,
                 o->agreeing_draft);
        if (gguf_cut_layers(tf.path, draft, o->agreeing_draft, err, sizeof err) != 0)
            die("%s", err);
        failures += agreeing_draft_shape(o, s->name, o->agreeing_draft, tf.path, draft, server);
    }
    return failures ? 1 : 0;
}

/* The benchmark's run, its exit status. */
static int bench(int argc, char **argv)
{
    static bench_options o;
    int rc = bench_options_parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    kernels_set_prefetch(o.prefetch);
    kernels_set_decode_streams(o.decode_streams);
    if (o.server) /* a served model: no shape, no file */
        return served_run(&o);
    make_dirs(o.cache);
    static programs p;
    if (find_programs(&o, &p) != 0)
        return 1;
    static shape_files files[BENCH_SHAPES_MAX];
    for (int i = 0; i < bench_n_shapes && !o.agreeing_draft; i++)
        if (o.want[i] || i == o.draft_shape)
            write_files(&o, &p, &bench_shapes[i], &files[i]);
    if (o.patch)
        return run_patch_table(&o, files);
    if (o.speculate && o.agreeing_draft)
        return run_agreeing_table(&o, &p);
    if (o.speculate)
        return run_speculate_table(&o, files);
    if (!o.sweep)
        return run_table(&o, &p, files);
    int failures = 0;
    for (int i = 0; i < bench_n_shapes; i++)
        if (o.want[i])
            failures += sweep_shape(&o, &bench_shapes[i], p.llama_bench ? files[i].gguf : files[i].path,
                                    p.llama_bench, p.anchor_why);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    std_streams_open();
    openmp_wait_apply(argv);
    return std_streams_close("llmchat-bench", bench(argc, argv));
}
