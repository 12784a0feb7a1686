/* bench/measure.c — what llmchat-bench times, each in a forked child (see measure.h):
 * one shape through the engine as `llmchat -m generate` runs it (prefill, time to
 * first token, decode in windows paired with stream passes, --long, --scaling), one
 * side-by-side round (llama-bench's pp and tg tests), the bandwidth at the start.
 *
 * The machine's memory bandwidth may swing by 2x from minute to minute, so the
 * roofline is measured in pairs: decoding runs in short windows (>= 50 ms), each
 * between two streaming reads of a 512 MiB buffer (half --probe-mib) on all cores, and
 * the figure is the median over the windows of weight bytes/s over the mean of those
 * two reads.
 * --long (near vs far in the context: the forward pass alone, at positions the engine
 * would need a long prompt to reach) and --scaling (one thread vs all) alternate their
 * windows the same way and report medians of per-pair ratios. */
#define _GNU_SOURCE
#include "measure.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpus.h"
#include "draft.h"
#include "engine.h"
#include "kernels.h"
#include "machine.h"
#include "model.h"
#include "patching.h"
#include "probe.h"
#include "shapes.h"
#include "stats.h"
#include "transformer.h"

static uint64_t tensor_bytes(const tensor *t)
{
    if (t->type == TENSOR_F32)
        return (uint64_t)t->rows * t->stride * 4;
    if (t->type == TENSOR_Q8_0_BLOCKS)
        return (uint64_t)t->rows * (t->cols / QUANT_BLOCK) * QUANT_BLOCK_BYTES;
    if (t->type == TENSOR_BLOCKS)
        return (uint64_t)t->rows * t->row_bytes;
    return (uint64_t)t->rows * t->stride + (uint64_t)t->rows * (t->stride / t->group) * 4;
}

/* Weight bytes one decoded token reads: every matrix once (of a mixture of experts, the
 * router and expert_used_count experts' matrices: the random weights choose experts
 * alike on average), norms, one embedding row. */
static double decode_bytes(const model *m)
{
    const model_config *c = &m->config;
    double b = tensor_bytes(&m->wcls) + 4.0 * (2 * c->n_layers + 1) * c->dim;
    for (int l = 0; l < c->n_layers; l++) {
        const model_layer *ly = &m->layers[l];
        const tensor *ts[7] = {&ly->wq, &ly->wk, &ly->wv, &ly->wo, &ly->w1, &ly->w2, &ly->w3};
        for (int i = 0; i < 7; i++)
            b += tensor_bytes(ts[i]);
        if (c->n_experts > 0)
            b += tensor_bytes(&ly->router) +
                 (double)c->n_experts_used * (tensor_bytes(&ly->expert_gate[0]) +
                                              tensor_bytes(&ly->expert_up[0]) +
                                              tensor_bytes(&ly->expert_down[0]));
    }
    return b + (double)tensor_bytes(&m->token_embedding) / c->vocab_size;
}

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

enum {
    PEAK_WINDOW = 16,  /* tokens in decode_peak_tok_s */
    ROUNDS = 8,        /* decode windows between stream passes for the roofline */
    PAIRS = 5,         /* window pairs for --long and --scaling */
};
#define WINDOW_MIN_S 0.05   /* a decode window lasts at least this long... */
#define DECODE_BUDGET_S 10.0 /* ...unless ROUNDS windows would take longer than this */

/* ---------------------------------------------------------------- the engine */

/* An engine as `llmchat -m generate -t 0` makes one without a trace: greedy sampling,
 * no prompt candidates, no attention capture, no candidates per step. Greedy, because
 * random weights give a flat distribution, over which top-p would sort most of the
 * vocabulary each token: a cost a real model's peaked distribution does not have.
 * guess_min is engine_options.guess_min (--draft-min; -1: always the guesses asked). */
static llm_status bench_engine_guessing(const model *m, int guess_min, engine **e, llm_err *err)
{
    engine_options o;
    engine_options_default(&o);
    o.guess_min = guess_min;
    o.record_prompt = false;
    o.top_n = 0;
    o.capture_attention = false;
    o.sampler.temperature = 0.0f;
    return engine_new(m, NULL, &o, e, err);
}

static llm_status bench_engine(const model *m, engine **e, llm_err *err)
{
    return bench_engine_guessing(m, -1, e, err);
}

/* n prompt tokens: BOS, then ids drawn from [3, vocab) (the same every run). */
static void prompt_tokens(int *tokens, int n, int vocab)
{
    shape_rng rng = {12345};
    tokens[0] = 1;
    for (int i = 1; i < n; i++)
        tokens[i] = 3 + (int)(shape_rng_next(&rng) % (uint64_t)(vocab - 3));
}

/* Forgets the sequence, then prefills tokens: seconds taken (< 0 on failure). */
static double timed_prefill(engine *e, const int *tokens, int n)
{
    llm_err err;
    if (engine_rewind(e, 0, &err) != LLM_OK)
        return -1.0;
    double t0 = stats_now_s();
    if (engine_prefill(e, tokens, n, &err) != LLM_OK)
        return -1.0;
    return stats_now_s() - t0;
}

/* Generates n tokens with engine_step; returns the seconds taken (< 0 on failure),
 * each token's in dt[0..n) when dt is not NULL. */
static double decode_window(engine *e, int n, double *dt)
{
    llm_err err;
    double t0 = stats_now_s(), prev = t0;
    for (int i = 0; i < n; i++) {
        int tok;
        if (engine_step(e, &tok, &err) != LLM_OK)
            return -1.0;
        double now = stats_now_s();
        if (dt)
            dt[i] = now - prev;
        prev = now;
    }
    return prev - t0;
}

/* Tokens per decode window: at least steps / ROUNDS, so that the rounds cover the
 * positions one run of `steps` tokens from 0 would, and at least WINDOW_MIN_S
 * worth; fewer when ROUNDS windows would take more than DECODE_BUDGET_S; never past
 * the context. tok_s: one token's seconds. */
static int window_tokens(int steps, double tok_s, int ctx)
{
    if (tok_s < 1e-6)
        tok_s = 1e-6;
    int w = (steps + ROUNDS - 1) / ROUNDS;
    if (WINDOW_MIN_S / tok_s > w)
        w = (int)ceil(WINDOW_MIN_S / tok_s);
    if (ROUNDS * w * tok_s > DECODE_BUDGET_S)
        w = (int)(DECODE_BUDGET_S / (ROUNDS * tok_s));
    if (w > ctx - 2)
        w = ctx - 2;
    return w < 1 ? 1 : w;
}

#ifdef _OPENMP
static void set_threads(int n)
{
    omp_set_num_threads(n);
}
#else
static void set_threads(int n)
{
    (void)n;
}
#endif

/* Makes the engine's sequence [BOS] again (decode windows start from position 1). */
static bool restart(engine *e)
{
    llm_err err;
    const int bos = 1;
    return engine_rewind(e, 0, &err) == LLM_OK && engine_prefill(e, &bos, 1, &err) == LLM_OK;
}

/* The decode roofline, paired in time: ROUNDS times, a stream pass over the buffer on
 * `all` threads, then a window of w tokens, and one pass more at the end. A round's
 * ratio is its window's weight bytes per second over the mean bandwidth of the
 * passes just before and just after the window (single passes are noisy). Windows
 * walk the positions [1, span] and start again from [BOS] when the next would pass
 * its end. */
static void decode_rounds(engine *e, int w, int span, int all, const uint64_t *sbuf, size_t sbytes,
                          shape_result *r)
{
    double ratio[ROUNDS], bw[ROUNDS + 1], win_s[ROUNDS];
    double *dt = malloc(sizeof(double) * ROUNDS * (size_t)w); /* (round, token) */
    double total = 0.0, t_start = stats_now_s();
    int n = 0;
    restart(e);
    bw[0] = machine_stream_pass(sbuf, sbytes, all);
    for (; n < ROUNDS; n++) {
        if (n >= 3 && stats_now_s() - t_start > 2 * DECODE_BUDGET_S)
            break; /* the machine slowed down a lot: 3 rounds will do */
        if (engine_pos(e) + w > span + 1)
            restart(e);
        win_s[n] = decode_window(e, w, dt ? dt + (size_t)n * w : NULL);
        bw[n + 1] = machine_stream_pass(sbuf, sbytes, all);
        total += win_s[n];
    }
    for (int i = 0; i < n; i++)
        ratio[i] = w * r->weight_bytes_per_token / win_s[i] / ((bw[i] + bw[i + 1]) / 2 * 1e9);
    int tokens = n * w;
    r->decode_rounds = n;
    r->decode_window = w;
    r->decode_steps = tokens;
    r->decode_tok_s = tokens / total;
    r->decode_roofline = stats_median(ratio, n, &r->decode_roofline_min, &r->decode_roofline_max);
    r->bandwidth_gb_s = stats_median(bw, n + 1, &r->bandwidth_min_gb_s, &r->bandwidth_max_gb_s);
    /* best PEAK_WINDOW consecutive tokens, the stream passes left out */
    r->decode_peak_tok_s = r->decode_tok_s;
    for (int k = 0; dt && k + PEAK_WINDOW <= tokens; k++) {
        double s = 0.0;
        for (int j = k; j < k + PEAK_WINDOW; j++)
            s += dt[j];
        if (PEAK_WINDOW / s > r->decode_peak_tok_s)
            r->decode_peak_tok_s = PEAK_WINDOW / s;
    }
    free(dt);
}

/* --scaling: PAIRS times, a window of w tokens from position 1 on one thread, then the
 * same window on r->threads, each after a stream pass on as many threads. Medians of
 * each and of the per-pair ratios. Decode is bound by memory, so its speedup can be no
 * larger than the stream's. */
static void scaling_pairs(engine *e, int w, const uint64_t *sbuf, size_t sbytes, shape_result *r)
{
    double one[PAIRS], many[PAIRS], ratio[PAIRS];
    double bw_one[PAIRS], bw_many[PAIRS], bw_ratio[PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        set_threads(1);
        restart(e);
        bw_one[i] = machine_stream_pass(sbuf, sbytes, 1);
        one[i] = w / decode_window(e, w, NULL);
        set_threads(r->threads);
        restart(e);
        bw_many[i] = machine_stream_pass(sbuf, sbytes, r->threads);
        many[i] = w / decode_window(e, w, NULL);
        ratio[i] = many[i] / one[i];
        bw_ratio[i] = bw_many[i] / bw_one[i];
    }
    r->scaling_pairs = PAIRS;
    r->decode_tok_s_1t = stats_median(one, PAIRS, NULL, NULL);
    r->decode_tok_s_nt = stats_median(many, PAIRS, NULL, NULL);
    r->thread_speedup = stats_median(ratio, PAIRS, NULL, NULL);
    r->stream_gb_s_1t = stats_median(bw_one, PAIRS, NULL, NULL);
    r->stream_gb_s_nt = stats_median(bw_many, PAIRS, NULL, NULL);
    r->stream_speedup = stats_median(bw_ratio, PAIRS, NULL, NULL);
}

/* Decodes n tokens greedily with the transformer alone from pos, starting with *tok
 * and leaving the next token there; returns the seconds taken. Exits when the
 * transformer fails (out of memory). */
static double forward_window(transformer *t, int *tok, int pos, int n)
{
    int vocab = transformer_model(t)->config.vocab_size;
    double t0 = stats_now_s();
    for (int i = 0; i < n; i++) {
        const float *logits = transformer_forward(t, *tok, pos + i, NULL);
        if (!logits) {
            llm_err err;
            transformer_error(t, &err);
            fprintf(stderr, "llmchat-bench: %s\n", err.text);
            exit(1);
        }
        *tok = argmax(logits, vocab);
    }
    return stats_now_s() - t0;
}

/* --long: PAIRS times, a window of w forward passes at position 100, then one at
 * position `far` (the KV cache holds whatever earlier windows left there; only the
 * time matters). Medians of each and of the per-pair far/near ratios. */
static void long_pairs(const model *m, int w, int far, shape_result *r)
{
    transformer *t;
    llm_err err;
    if (transformer_new(m, 0, &t, &err) != LLM_OK)
        return;
    double near_ts[PAIRS], far_ts[PAIRS], ratio[PAIRS];
    int tok = 1;
    forward_window(t, &tok, 0, 2);
    for (int i = 0; i < PAIRS; i++) {
        near_ts[i] = w / forward_window(t, &tok, 100, w);
        far_ts[i] = w / forward_window(t, &tok, far, w);
        ratio[i] = far_ts[i] / near_ts[i];
    }
    transformer_free(t);
    r->long_pairs = PAIRS;
    r->long_pos_near = 100;
    r->long_pos_far = far;
    r->long_tok_s_near = stats_median(near_ts, PAIRS, NULL, NULL);
    r->long_tok_s_far = stats_median(far_ts, PAIRS, NULL, NULL);
    r->long_ratio = stats_median(ratio, PAIRS, NULL, NULL);
}

/* Sets the thread count (o->threads, or the CPUs this process may run on, as llmchat
 * does) and the kernels; returns the CPUs this process may run on. */
static int child_setup(const bench_options *o, int *threads, char *kernel, size_t kernel_size)
{
    int all = 1;
#ifdef _OPENMP
    all = cpus_usable();
    omp_set_num_threads(cpus_threads(o->threads, all, NULL));
    *threads = omp_get_max_threads();
#else
    *threads = 1;
#endif
    snprintf(kernel, kernel_size, "%s", kernels_isa_name(kernels_init(o->isa)));
    kernels_set_prefetch(o->prefetch);
    kernels_set_decode_streams(o->decode_streams);
    return all;
}

/* model_open with what o asks of the loader (--panels, --huge-pages). */
static llm_status open_model(const bench_options *o, const char *path, model **m, llm_err *err)
{
    model_options mo;
    model_options_default(&mo);
    mo.no_panels = o->panels_given ? o->no_panels : !kernels_panels_by_default();
    mo.k4_panels = o->panels_given ? !o->no_panels : kernels_k4_panels_by_default();
    mo.huge_pages = (model_huge_pages)o->huge_pages;
    return model_open(path, &mo, m, err);
}

/* Opens the model at path and an engine on it; fills r's load time, Q8_0 group, file
 * and KV cache sizes and weight bytes per token. False, with r->error said and
 * nothing left open, when either fails. */
static bool open_shape(const bench_options *o, const char *path, shape_result *r, model **m,
                       engine **e)
{
    llm_err err;
    double t0 = stats_now_s();
    if (open_model(o, path, m, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.text);
        return false;
    }
    r->load_s = stats_now_s() - t0;
    r->panels = (*m)->panel_bytes + (*m)->k4_panel_bytes > 0;
    r->huge_pages = (*m)->huge_pages;
    if (bench_engine(*m, e, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.text);
        model_close(*m);
        return false;
    }
    r->group = (*m)->group;
    r->file_mb = (*m)->file_bytes / 1e6;
    r->kv_mb = engine_kv_bytes(*e) / 1e6;
    snprintf(r->kv_cache, sizeof r->kv_cache, "%s",
             engine_kv_cache(*e) == TRANSFORMER_KV_F32 ? "f32" : "q8_0");
    r->weight_bytes_per_token = decode_bytes(*m);
    return true;
}

/* Prefill of tokens[0..n) and the first decoded token, as a user waits for them: best
 * of two (one if slow), into r; *first: the first token's seconds. False, with
 * r->error said, when the engine fails. */
static bool time_prefill(engine *e, const int *tokens, int n, shape_result *r, double *first)
{
    double best = 1e30, ttft = 1e30;
    *first = 1e30;
    for (int rep = 0; rep < 2; rep++) {
        double dt = timed_prefill(e, tokens, n);
        double step = decode_window(e, 1, NULL);
        if (dt < 0 || step < 0) {
            snprintf(r->error, sizeof r->error, "the engine failed to prefill or step");
            return false;
        }
        best = dt < best ? dt : best;
        ttft = dt + step < ttft ? dt + step : ttft;
        *first = step < *first ? step : *first;
        if (dt > 5.0)
            break;
    }
    r->prefill_tokens = n;
    r->prefill_tok_s = n / best;
    r->ttft_s = ttft;
    return true;
}

/* Decode from position 1, as llama-bench's "tg" test does from 0, in windows paired
 * with stream passes on `all` threads (and --scaling's pairs); first: one token's
 * seconds, to size the windows. *w: the tokens of a window. False, with r->error
 * said, when the stream buffer cannot be mapped. */
static bool time_decode(const bench_options *o, engine *e, int all, double first, shape_result *r, int *w)
{
    int ctx = engine_ctx(e);
    int steps = o->steps < ctx - 2 ? o->steps : ctx - 2;
    *w = window_tokens(steps, first, ctx);
    int span = steps > *w ? steps : *w;
    r->decode_pos = 1;
    size_t sbytes = (size_t)o->probe_mib << 19; /* half the probe's buffer */
    uint64_t *sbuf = probe_new(sbytes);
    if (!sbuf) {
        snprintf(r->error, sizeof r->error, "cannot map %zu MiB for the bandwidth passes",
                 sbytes >> 20);
        return false;
    }
    decode_rounds(e, *w, span, all, sbuf, sbytes, r);
    snprintf(r->probe_way, sizeof r->probe_way, "%s", machine_stream_way());
    r->probe_mib = o->probe_mib;
    if (o->scaling)
        scaling_pairs(e, *w, sbuf, sbytes, r);
    probe_free(sbuf, sbytes);
    return true;
}

/* Everything the table and the JSON report of one shape, in this process (a child). */
static void run_shape(const bench_options *o, const char *path, shape_result *r)
{
    memset(r, 0, sizeof *r);
    r->load_avg = machine_load_average();
    /* stream passes run on OpenMP's default count, whatever --threads says, as the
     * roofline is against the machine's limit */
    int all = child_setup(o, &r->threads, r->kernel, sizeof r->kernel);
    model *m = NULL;
    engine *e = NULL;
    if (!open_shape(o, path, r, &m, &e))
        return;
    int ctx = engine_ctx(e);
    static int tokens[MAX_PROMPT];
    int n = o->prompt < ctx - 1 ? o->prompt : ctx - 1;
    prompt_tokens(tokens, n, m->config.vocab_size);

    /* warm up: touch every weight page and the buffers once */
    timed_prefill(e, tokens, n < 8 ? n : 8);
    decode_window(e, 2, NULL);

    cpu_mark timed = machine_cpu_now();
    double first;
    int w = 0;
    bool ok = time_prefill(e, tokens, n, r, &first);
    if (ok) {
        /* peak resident memory before the stream buffer is mapped; pages first touched
         * later (KV rows past the prompt, --long's far windows) stay resident and are
         * counted at the end */
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        r->peak_rss_mb = ru.ru_maxrss * 1024.0 / 1e6; /* ru_maxrss is in KiB */
        ok = time_decode(o, e, all, first, r, &w);
    }
    engine_free(e);
    if (!ok) {
        model_close(m);
        return;
    }
    if (o->long_ctx && ctx - w > 400)
        long_pairs(m, w, ctx - w < 4000 ? ctx - w : 4000, r);

    r->cpu_others = machine_cpu_others(timed);

    /* pages touched since the snapshot, the stream buffer unmapped */
    double rss = machine_rss_mb();
    if (rss > r->peak_rss_mb)
        r->peak_rss_mb = rss;
    r->ok = 1;
    model_close(m);
}

/* One side-by-side round of llmchat: llama-bench's "pp" test (a prompt of n_prompt
 * tokens from an empty context) and "tg" (n_gen tokens from an empty context), each
 * `reps` times after a warm-up, as tokens per second averaged over the repetitions. */
static void run_round(const bench_options *o, const char *path, int n_prompt, int n_gen, int reps,
                      round_result *r)
{
    memset(r, 0, sizeof *r);
    int threads;
    char kernel[32];
    child_setup(o, &threads, kernel, sizeof kernel);
    llm_err err;
    model *m = NULL;
    engine *e = NULL;
    if (open_model(o, path, &m, &err) != LLM_OK || bench_engine(m, &e, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.text);
        model_close(m);
        return;
    }
    static int tokens[MAX_PROMPT];
    prompt_tokens(tokens, n_prompt, m->config.vocab_size);
    timed_prefill(e, tokens, n_prompt < 8 ? n_prompt : 8);
    decode_window(e, 2, NULL);
    double pp = 0.0, tg = 0.0;
    bool ok = true;
    for (int i = 0; i < reps && ok; i++) {
        double dt = timed_prefill(e, tokens, n_prompt);
        ok = dt > 0;
        pp += n_prompt / dt;
    }
    for (int i = 0; i < reps && ok; i++) {
        ok = restart(e);
        double dt = ok ? decode_window(e, n_gen, NULL) : -1.0;
        ok = dt > 0;
        tg += n_gen / dt;
    }
    if (ok) {
        r->prefill_tok_s = pp / reps;
        r->decode_tok_s = tg / reps;
        r->ok = 1;
    } else {
        snprintf(r->error, sizeof r->error, "the engine failed to prefill or step");
    }
    engine_free(e);
    model_close(m);
}

/* The patching grid against one forward pass, into r (measure_patch). */
static void run_patch(const bench_options *o, const char *path, int n, patch_timing *r)
{
    model *m;
    llm_err err;
    child_setup(o, &r->threads, r->kernel, sizeof r->kernel);
    if (open_model(o, path, &m, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.text);
        return;
    }
    transformer *t = NULL;
    int *clean = malloc(sizeof(int) * 2 * (size_t)n), *corrupt = clean ? clean + n : NULL;
    if (!clean || transformer_new_kv(m, patching_ctx(m, n), TRANSFORMER_KV_AUTO, &t, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", clean ? err.text : "out of memory");
        free(clean);
        model_close(m);
        return;
    }
    prompt_tokens(clean, n, m->config.vocab_size);
    memcpy(corrupt, clean, sizeof(int) * (size_t)n);
    corrupt[n / 3] = (clean[n / 3] + 1) % m->config.vocab_size;
    r->positions = n;
    r->layers = m->config.n_layers;
    r->forward_s = 1e30;
    for (int k = 0; k < 4; k++) { /* a warm-up, then the best of 3 */
        double t0 = stats_now_s();
        if (!transformer_run(t, clean, n, 0, TRANSFORMER_KERNELS_BATCH, NULL, NULL)) {
            transformer_error(t, &err);
            snprintf(r->error, sizeof r->error, "%s", err.text);
            goto done;
        }
        double dt = stats_now_s() - t0;
        if (k > 0 && dt < r->forward_s)
            r->forward_s = dt;
    }
    patch_spec s = {.site = PATCH_RESID_PRE, .metric = PATCH_KL, .layer_first = 0,
                    .layer_last = m->config.n_layers - 1};
    patch_result pr;
    double t0 = stats_now_s();
    if (patching_run(t, clean, corrupt, n, &s, &pr, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.text);
        patch_result_free(&pr);
        goto done;
    }
    r->grid_s = stats_now_s() - t0;
    r->runs = pr.runs;
    r->passes = pr.passes;
    r->positions_run = pr.positions_run;
    r->ratio = r->grid_s / r->forward_s;
    r->ok = 1;
    patch_result_free(&pr);
done:
    transformer_free(t);
    free(clean);
    model_close(m);
}

/* ---------------------------------------------------------------- speculative decoding */

/* The oracle guesser of measure_speculate: the plain run's tokens after the prompt. */
typedef struct {
    const int *plain; /* (gen) the plain run's tokens */
    int gen, prompt, vocab;
    double rate;
    shape_rng rng;
    draft *d;         /* asked first, for its cost, or NULL */
} oracle;

static int oracle_guess(void *user, const int *tokens, int n, int *guess, int max)
{
    oracle *a = user;
    if (a->d)
        draft_guesser(a->d, tokens, n, guess, max);
    for (int j = 0; j < max; j++) {
        int at = n - a->prompt + j; /* the plain token the guess stands for */
        int right = at < a->gen ? a->plain[at] : 3;
        double u = (double)(shape_rng_next(&a->rng) >> 11) / 9007199254740992.0;
        guess[j] = u < a->rate ? right : 3 + (right - 3 + 1) % (a->vocab - 3);
    }
    return max;
}

/* Decodes gen tokens after a prefill of the prompt: plain (a == NULL) or with a's guesses,
 * k a step at most. The tokens into out (gen), the seconds into *s, the guesses and the
 * accepted ones into *guessed, *accepted, the calls of the transformer (steps) into
 * *calls. False on failure (r->error). */
static bool timed_decode(engine *e, const int *prompt, int n_prompt, int gen, oracle *a, int k,
                         int *out, double *s, long long *guessed, long long *accepted,
                         long long *calls, char *why, size_t why_size)
{
    llm_err err;
    if (engine_rewind(e, 0, &err) != LLM_OK || engine_prefill(e, prompt, n_prompt, &err) != LLM_OK) {
        snprintf(why, why_size, "%s", err.text);
        return false;
    }
    engine_stats before = *engine_get_stats(e);
    double t0 = stats_now_s();
    *calls = 0;
    for (int done = 0; done < gen; ++*calls) {
        int got[ENGINE_GUESS_MAX + 1], n_got = 0;
        int g = gen - done - 1 < k ? gen - done - 1 : k;
        llm_status st = engine_step_guessed(e, a ? oracle_guess : NULL, a, g, got, &n_got, &err);
        if (st != LLM_OK) {
            snprintf(why, why_size, "%s", err.text);
            return false;
        }
        for (int i = 0; i < n_got && done < gen; i++)
            out[done++] = got[i];
    }
    *s = stats_now_s() - t0;
    const engine_stats *after = engine_get_stats(e);
    *guessed = after->guessed - before.guessed;
    *accepted = after->accepted - before.accepted;
    return true;
}

static void run_speculate(const bench_options *o, const char *path, const char *draft_path, int k,
                          speculate_timing *r)
{
    static const double rates[SPECULATE_RATES] = {1.0, 0.8, 0.6, 0.0};
    child_setup(o, &r->threads, r->kernel, sizeof r->kernel);
    model *m = NULL;
    engine *e = NULL;
    llm_err err;
    if (open_model(o, path, &m, &err) != LLM_OK ||
        bench_engine_guessing(m, o->draft_min, &e, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.text);
        model_close(m);
        return;
    }
    int ctx = engine_ctx(e);
    model *dm = NULL;
    draft *d = NULL;
    int *prompt = NULL, *plain = NULL, *got = NULL;
    if (draft_path && (open_model(o, draft_path, &dm, &err) != LLM_OK ||
                       draft_new(dm, dm->config.seq_len < ctx ? dm->config.seq_len : ctx, &d,
                                 &err) != LLM_OK)) {
        snprintf(r->error, sizeof r->error, "the draft: %.480s", err.text);
        goto done;
    }
    int n_prompt = o->prompt < ctx / 2 ? o->prompt : ctx / 2;
    int gen = o->gen < ctx - n_prompt - k - 1 ? o->gen : ctx - n_prompt - k - 1;
    int vocab = m->config.vocab_size;
    prompt = malloc(sizeof(int) * (size_t)n_prompt);
    plain = malloc(sizeof(int) * (size_t)gen);
    got = malloc(sizeof(int) * (size_t)gen);
    if (!prompt || !plain || !got || n_prompt < 1 || gen < 1) {
        snprintf(r->error, sizeof r->error, "out of memory, or no room in the context");
        goto done;
    }
    prompt_tokens(prompt, n_prompt, vocab);
    r->guesses = k;
    r->prompt = n_prompt;
    r->gen = gen;
    r->same = 1;
    double plain_s[SPECULATE_ROUNDS], spec_s[SPECULATE_RATES][SPECULATE_ROUNDS],
        ratio[SPECULATE_RATES][SPECULATE_ROUNDS];
    long long guessed[SPECULATE_RATES] = {0}, accepted[SPECULATE_RATES] = {0},
              calls[SPECULATE_RATES] = {0};
    long long g0, a0, c0;
    /* a warm-up, which also gives the plain tokens the guesses are made of */
    if (!timed_decode(e, prompt, n_prompt, gen, NULL, 0, plain, &plain_s[0], &g0, &a0, &c0,
                      r->error, sizeof r->error))
        goto done;
    for (int round = 0; round < SPECULATE_ROUNDS; round++) {
        if (!timed_decode(e, prompt, n_prompt, gen, NULL, 0, got, &plain_s[round], &g0, &a0, &c0,
                          r->error, sizeof r->error))
            goto done;
        r->same &= !memcmp(got, plain, sizeof(int) * (size_t)gen);
        for (int i = 0; i < SPECULATE_RATES; i++) {
            oracle a = {plain, gen, n_prompt, vocab, rates[i], {777u + (uint64_t)round}, d};
            long long g, acc, c;
            if (!timed_decode(e, prompt, n_prompt, gen, &a, k, got, &spec_s[i][round], &g, &acc,
                              &c, r->error, sizeof r->error))
                goto done;
            r->same &= !memcmp(got, plain, sizeof(int) * (size_t)gen);
            guessed[i] += g;
            accepted[i] += acc;
            calls[i] += c;
            ratio[i][round] = plain_s[round] / spec_s[i][round];
        }
    }
    double lo, hi;
    r->plain_tok_s = gen / stats_median(plain_s, SPECULATE_ROUNDS, &lo, &hi);
    for (int i = 0; i < SPECULATE_RATES; i++) {
        r->rate[i] = rates[i];
        r->accepted[i] = guessed[i] ? (double)accepted[i] / guessed[i] : 0.0;
        r->tokens_per_check[i] =
            calls[i] ? (double)(gen * SPECULATE_ROUNDS) / calls[i] : 1.0;
        r->tok_s[i] = gen / stats_median(spec_s[i], SPECULATE_ROUNDS, &lo, &hi);
        r->ratio[i] = stats_median(ratio[i], SPECULATE_ROUNDS, &r->ratio_min[i], &r->ratio_max[i]);
    }
    r->ok = 1;
done:
    free(prompt);
    free(plain);
    free(got);
    draft_free(d);
    model_close(dm);
    engine_free(e);
    model_close(m);
}

static void run_draft_round(const bench_options *o, const char *path, const char *draft_path,
                            int k, draft_round *r)
{
    child_setup(o, &r->threads, r->kernel, sizeof r->kernel);
    model *m = NULL, *dm = NULL;
    engine *e = NULL;
    draft *d = NULL;
    int *spec = NULL, *plain = NULL;
    llm_err err;
    if (open_model(o, path, &m, &err) != LLM_OK ||
        bench_engine_guessing(m, o->draft_min, &e, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.text);
        goto done;
    }
    int ctx = engine_ctx(e);
    if (open_model(o, draft_path, &dm, &err) != LLM_OK ||
        draft_new(dm, dm->config.seq_len < ctx ? dm->config.seq_len : ctx, &d, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "the draft: %.480s", err.text);
        goto done;
    }
    if (dm->config.vocab_size != m->config.vocab_size) {
        snprintf(r->error, sizeof r->error, "the draft's vocabulary (%d) is not the model's (%d)",
                 dm->config.vocab_size, m->config.vocab_size);
        goto done;
    }
    int n_prompt = o->prompt < ctx / 2 ? o->prompt : ctx / 2;
    int gen = o->gen < ctx - n_prompt - k - 1 ? o->gen : ctx - n_prompt - k - 1;
    if (gen > DRAFT_TOKENS_MAX)
        gen = DRAFT_TOKENS_MAX;
    plain = malloc(sizeof(int) * (size_t)(gen > 0 ? gen : 1));
    spec = malloc(sizeof(int) * (size_t)(gen > 0 ? gen : 1));
    if (!plain || !spec || n_prompt < 1 || gen < 1) {
        snprintf(r->error, sizeof r->error, "out of memory, or no room in the context");
        goto done;
    }
    prompt_tokens(r->prompt_tokens, n_prompt, m->config.vocab_size);
    r->guesses = k;
    r->prompt = n_prompt;
    r->gen = gen;
    double plain_s, spec_s;
    long long g, acc, calls = 0;
    if (!timed_decode(e, r->prompt_tokens, n_prompt, gen, NULL, 0, plain, &plain_s, &g, &acc,
                      &calls, r->error, sizeof r->error) || /* the warm-up */
        !timed_decode(e, r->prompt_tokens, n_prompt, gen, NULL, 0, plain, &plain_s, &g, &acc,
                      &calls, r->error, sizeof r->error))
        goto done;
    engine_stats before = *engine_get_stats(e);
    if (engine_rewind(e, 0, &err) != LLM_OK ||
        engine_prefill(e, r->prompt_tokens, n_prompt, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.text);
        goto done;
    }
    /* the speculative run's clock starts after its prefill, as the plain run's */
    double t0 = stats_now_s();
    calls = 0;
    for (int done = 0; done < gen; calls++) {
        int got[ENGINE_GUESS_MAX + 1], n_got = 0;
        int want = gen - done - 1 < k ? gen - done - 1 : k;
        if (engine_step_guessed(e, draft_guesser, d, want, got, &n_got, &err) != LLM_OK) {
            snprintf(r->error, sizeof r->error, "%s", err.text);
            goto done;
        }
        for (int i = 0; i < n_got && done < gen; i++)
            spec[done++] = got[i];
    }
    spec_s = stats_now_s() - t0;
    const engine_stats *after = engine_get_stats(e);
    long long guessed = after->guessed - before.guessed;
    r->accepted = guessed ? (double)(after->accepted - before.accepted) / (double)guessed : 0.0;
    r->tokens_per_check = calls ? (double)gen / (double)calls : 1.0;
    r->plain_tok_s = gen / plain_s;
    r->spec_tok_s = gen / spec_s;
    r->same = !memcmp(spec, plain, sizeof(int) * (size_t)gen);
    memcpy(r->tokens, plain, sizeof(int) * (size_t)gen);
    r->ok = 1;
done:
    free(plain);
    free(spec);
    draft_free(d);
    model_close(dm);
    engine_free(e);
    model_close(m);
}

/* ---------------------------------------------------------------- children */

/* Runs fn in a child process; the child writes `size` bytes of result to a pipe. */
static int in_child(void (*fn)(const bench_options *, const void *, void *), const bench_options *o,
                    const void *arg, void *out, size_t size)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fd[0]);
        char *buf = calloc(1, size);
        fn(o, arg, buf);
        ssize_t w = write(fd[1], buf, size);
        _exit(w == (ssize_t)size ? 0 : 1);
    }
    close(fd[1]);
    size_t got = 0;
    while (got < size) {
        ssize_t k = read(fd[0], (char *)out + got, size - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    return got == size && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* arg: the file's path */
static void child_shape(const bench_options *o, const void *arg, void *out)
{
    run_shape(o, arg, out);
}

typedef struct {
    const char *path;
    int n_prompt, n_gen, reps;
} round_arg;

static void child_round(const bench_options *o, const void *arg, void *out)
{
    const round_arg *a = arg;
    run_round(o, a->path, a->n_prompt, a->n_gen, a->reps, out);
}

typedef struct {
    const char *path;
    int n;
} patch_arg;

static void child_patch(const bench_options *o, const void *arg, void *out)
{
    const patch_arg *a = arg;
    run_patch(o, a->path, a->n, out);
}

typedef struct {
    const char *path, *draft_path;
    int k;
} speculate_arg;

static void child_speculate(const bench_options *o, const void *arg, void *out)
{
    const speculate_arg *a = arg;
    run_speculate(o, a->path, a->draft_path, a->k, out);
}

static void child_draft_round(const bench_options *o, const void *arg, void *out)
{
    const speculate_arg *a = arg;
    run_draft_round(o, a->path, a->draft_path, a->k, out);
}

static void child_bandwidth(const bench_options *o, const void *arg, void *out)
{
    (void)arg;
    /* every CPU this process may run on, whatever --threads says, as in the rounds */
    int all = 1;
#ifdef _OPENMP
    all = cpus_usable();
#endif
    *(double *)out = machine_bandwidth((size_t)o->probe_mib << 20, 8, all);
}

/* ---------------------------------------------------------------- what the parent calls */

int measure_shape(const bench_options *o, const char *path, shape_result *r)
{
    return in_child(child_shape, o, path, r, sizeof *r);
}

int measure_round(const bench_options *o, const char *path, int n_prompt, int n_gen, int reps,
                  round_result *r)
{
    round_arg a = {path, n_prompt, n_gen, reps};
    return in_child(child_round, o, &a, r, sizeof *r);
}

int measure_patch(const bench_options *o, const char *path, int n, patch_timing *r)
{
    patch_arg a = {path, n};
    return in_child(child_patch, o, &a, r, sizeof *r);
}

int measure_bandwidth(const bench_options *o, double *gb_s)
{
    return in_child(child_bandwidth, o, NULL, gb_s, sizeof *gb_s);
}

int measure_speculate(const bench_options *o, const char *path, const char *draft_path, int k,
                      speculate_timing *r)
{
    speculate_arg a = {path, draft_path, k};
    return in_child(child_speculate, o, &a, r, sizeof *r);
}

int measure_draft_round(const bench_options *o, const char *path, const char *draft_path, int k,
                        draft_round *r)
{
    speculate_arg a = {path, draft_path, k};
    return in_child(child_draft_round, o, &a, r, sizeof *r);
}
