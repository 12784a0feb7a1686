/* bench.c — llmchat-bench: speed of llmchat on random-weight models of real shapes,
 * through the path users run (the engine, as `llmchat -m generate` drives it), and
 * beside another engine on the same model.
 *
 * Writes llama2.c v2 (int8 Q8_0) files of named shapes (15M ... 7B) into a cache
 * directory on demand (bench/shapes.h), then for each shape opens the file with
 * model_open and times an engine with generate mode's options (greedy): prefill of a
 * prompt, time to first token, decode, resident memory, and decode as a fraction of the
 * bandwidth limit (every weight byte is read once per decoded token). With --against
 * (or --anchor PATH) it also writes the shape as a GGUF Q8_0 file and alternates
 * llmchat's prefill and decode with llama.cpp's llama-bench, both on that file
 * (bench/anchor.h), reporting the medians of the per-round ratios. Prints a table,
 * or one JSON object per shape with --json.
 *
 * The machine's memory bandwidth may swing by 2x from minute to minute, so the
 * roofline is measured in pairs: decoding runs in short windows (>= 50 ms), each
 * between two streaming reads of a 512 MiB buffer on all cores, and the figure is
 * the median over the windows of weight bytes/s over the mean of those two reads.
 * --long (near vs far in the context: the forward pass alone, at positions the engine
 * would need a long prompt to reach) and --scaling (one thread vs all) alternate their
 * windows the same way and report medians of per-pair ratios.
 *
 * Each measurement runs in a forked child, so peak resident memory is per shape and
 * an OpenMP thread pool never crosses a fork; the parent only writes files, forks,
 * runs the other programs and prints. A front end: it prints and exits. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef __APPLE__
#include <mach/mach.h>
#endif

#include "anchor.h"
#include "cpus.h"
#include "probe.h"
#include "quantize.h"
#include "shapes.h"
#include "shell_quote.h"
#include "clock.h"
#include "engine.h"
#include "kernels.h"
#include "model.h"
#include "transformer.h"

enum {
    MAX_PROMPT = 4096,
    ROUNDS_DEFAULT = 3, /* side-by-side rounds */
    ROUNDS_MAX = 9,
    ANCHOR_GEN = 128,   /* tokens of the side-by-side decode test (llama-bench -n) */
};

typedef struct {
    int threads;        /* 0: OpenMP's default */
    int steps;          /* decode tokens, split into ROUNDS windows */
    int prompt;         /* prefill tokens (capped by the context) */
    bool json, long_ctx, scaling;
    const char *cache;  /* directory for the model files */
    const char *llmchat;   /* the program, for the TUI column */
    const char *tokenizer; /* a 32000-token tokenizer.bin, for the TUI column */
    const char *tui_script; /* llmchat-bench-tui */
    kernels_isa isa;    /* kernels to force (KERNELS_AUTO: the best) */
    bool against;       /* --against llama.cpp or --anchor PATH given */
    const char *anchor; /* llama-bench (NULL: $LLMCHAT_ANCHOR_LLAMA_BENCH) */
    int anchor_reps;    /* repetitions of each test per round (0: llama-bench's 5) */
    int rounds;         /* side-by-side rounds */
    bool gguf;          /* --format gguf: llmchat opens the GGUF file, not the llama2.c one */
    const char *quant;  /* --quant TYPE: the GGUF file made TYPE by llama-quantize (NULL: Q8_0) */
    const char *quantize; /* --quantize PATH: that llama-quantize */
    bool sweep;         /* --sweep: rounds on 1, 2, 4, ... threads instead of the table */
} options;

/* What a child measures for one shape (sent to the parent through a pipe). */
typedef struct {
    int ok;
    char error[512];
    char kernel[32];
    char kv_cache[8];   /* "q8_0" or "f32" */
    char probe_way[8];  /* how the stream passes read (probe.h): "plain", "t0", "nta" */
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
} result;

/* One side-by-side round of llmchat (a child) on one shape: llama-bench's two tests. */
typedef struct {
    int ok;
    char error[512];
    double prefill_tok_s, decode_tok_s; /* means over the repetitions, as avg_ts */
} round_result;

/* The side-by-side comparison of one shape. */
typedef struct {
    int rounds;          /* rounds done (0: not measured, why says why) */
    char why[600];
    int n_prompt, n_gen, reps;
    double ours_prefill[ROUNDS_MAX], ours_decode[ROUNDS_MAX];
    double theirs_prefill[ROUNDS_MAX], theirs_decode[ROUNDS_MAX];
    double prefill_ratio, decode_ratio; /* medians of the per-round ratios */
    double prefill_ratio_min, prefill_ratio_max, decode_ratio_min, decode_ratio_max;
} side_result;

/* Seconds of the monotonic clock. */
static double now_s(void)
{
    return clock_ms() / 1e3;
}

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

/* The 1-minute load average; -1 if unknown. */
static double load_average(void)
{
    double l[1];
    return getloadavg(l, 1) == 1 ? l[0] : -1.0;
}

/* ---------------------------------------------------------------- measurements */

/* The way of reading (probe.h) this process's stream passes use: the fastest of
 * probe_pick's, chosen at the first pass. */
static int stream_way = -1;

/* One read of buf on `threads` threads, as fast as the machine reads: GB/s. */
static double stream_pass(const uint64_t *buf, size_t bytes, int threads)
{
    if (stream_way < 0)
        stream_way = (int)probe_pick(buf, bytes, threads, 2);
    return probe_read(buf, bytes, threads, (probe_way)stream_way);
}

/* Best of `reps` stream passes over a fresh buffer of `bytes` on `threads` threads. */
static double measure_bandwidth(size_t bytes, int reps, int threads)
{
    uint64_t *buf = probe_new(bytes);
    if (!buf)
        return 0.0;
    double best = 0.0;
    for (int rep = 0; rep < reps; rep++) {
        double bw = stream_pass(buf, bytes, threads);
        if (bw > best)
            best = bw;
    }
    probe_free(buf, bytes);
    return best;
}

/* CPU seconds the machine spent busy, all CPUs, steal included (the hypervisor ran
 * something else), from /proc/stat (Linux) or the host's CPU load ticks (macOS); -1 if
 * unknown. */
static double machine_busy_s(void)
{
#ifdef __APPLE__
    host_cpu_load_info_data_t info;
    mach_msg_type_number_t count = HOST_CPU_LOAD_INFO_COUNT;
    if (host_statistics(mach_host_self(), HOST_CPU_LOAD_INFO, (host_info_t)&info, &count) !=
        KERN_SUCCESS)
        return -1.0;
    return (double)((unsigned long long)info.cpu_ticks[CPU_STATE_USER] +
                    info.cpu_ticks[CPU_STATE_SYSTEM] + info.cpu_ticks[CPU_STATE_NICE]) /
           sysconf(_SC_CLK_TCK);
#else
    unsigned long long v[8];
    FILE *f = fopen("/proc/stat", "r");
    int k = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                       &v[3], &v[4], &v[5], &v[6], &v[7])
              : 0;
    if (f)
        fclose(f);
    if (k != 8)
        return -1.0;
    /* user nice system [idle iowait] irq softirq steal */
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / sysconf(_SC_CLK_TCK);
#endif
}

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* What other processes take of the machine while something is timed: a snapshot,
 * then cpu_others() = their share of all CPUs' time since (0 .. 1, -1 unknown).
 * OpenMP threads spin while they wait, so this process is busy all the time it
 * runs; /proc/stat counts in ticks (10 ms), so short spans are rough. */
typedef struct {
    double wall, busy, self;
} cpu_mark;

static cpu_mark cpu_now(void)
{
    return (cpu_mark){now_s(), machine_busy_s(), process_cpu_s()};
}

static double cpu_others(cpu_mark from)
{
    cpu_mark to = cpu_now();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (from.busy < 0 || to.busy < 0 || cpus < 1 || to.wall <= from.wall)
        return -1.0;
    double others = (to.busy - from.busy) - (to.self - from.self);
    others /= (to.wall - from.wall) * cpus;
    return others < 0 ? 0 : others > 1 ? 1 : others;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of x[0..n) (n >= 1; x is reordered), with the smallest and largest in
 * *lo and *hi when those are not NULL. */
static double median(double *x, int n, double *lo, double *hi)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    if (lo)
        *lo = x[0];
    if (hi)
        *hi = x[n - 1];
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* Resident memory now, MB (as file_mb): /proc/self/statm on Linux, the task's resident
 * size on macOS; elsewhere, and when those cannot be read, getrusage's peak resident
 * size (kilobytes on Linux and the BSDs). */
static double rss_now_mb(void)
{
#ifdef __APPLE__
    mach_task_basic_info_data_t info;
    mach_msg_type_number_t count = MACH_TASK_BASIC_INFO_COUNT;
    if (task_info(mach_task_self(), MACH_TASK_BASIC_INFO, (task_info_t)&info, &count) ==
        KERN_SUCCESS)
        return info.resident_size / 1e6;
#endif
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    if (resident > 0)
        return resident * (double)sysconf(_SC_PAGESIZE) / 1e6;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0.0;
#ifdef __APPLE__
    return ru.ru_maxrss / 1e6; /* bytes there */
#else
    return ru.ru_maxrss * 1024.0 / 1e6;
#endif
}

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

/* Weight bytes one decoded token reads: every matrix once, norms, one embedding row. */
static double decode_bytes(const model *m)
{
    const model_config *c = &m->config;
    double b = tensor_bytes(&m->wcls) + 4.0 * (2 * c->n_layers + 1) * c->dim;
    for (int l = 0; l < c->n_layers; l++) {
        const model_layer *ly = &m->layers[l];
        const tensor *ts[7] = {&ly->wq, &ly->wk, &ly->wv, &ly->wo, &ly->w1, &ly->w2, &ly->w3};
        for (int i = 0; i < 7; i++)
            b += tensor_bytes(ts[i]);
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
#define STREAM_BYTES ((size_t)512 << 20) /* the paired passes' buffer */
#define WINDOW_MIN_S 0.05   /* a decode window lasts at least this long... */
#define DECODE_BUDGET_S 10.0 /* ...unless ROUNDS windows would take longer than this */
#define CPU_OTHERS_WARN 0.1  /* the table warns above this share of other processes */

/* ---------------------------------------------------------------- the engine */

/* An engine as `llmchat -m generate -t 0` makes one without a trace: greedy sampling,
 * no prompt candidates, no attention capture, no candidates per step. Greedy, because
 * random weights give a flat distribution, over which top-p would sort most of the
 * vocabulary each token: a cost a real model's peaked distribution does not have. */
static llm_status bench_engine(const model *m, engine **e, llm_err *err)
{
    engine_options o;
    engine_options_default(&o);
    o.record_prompt = false;
    o.top_n = 0;
    o.capture_attention = false;
    o.sampler.temperature = 0.0f;
    return engine_new(m, NULL, &o, e, err);
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
    double t0 = now_s();
    if (engine_prefill(e, tokens, n, &err) != LLM_OK)
        return -1.0;
    return now_s() - t0;
}

/* Generates n tokens with engine_step; returns the seconds taken (< 0 on failure),
 * each token's in dt[0..n) when dt is not NULL. */
static double decode_window(engine *e, int n, double *dt)
{
    llm_err err;
    double t0 = now_s(), prev = t0;
    for (int i = 0; i < n; i++) {
        int tok;
        if (engine_step(e, &tok, &err) != LLM_OK)
            return -1.0;
        double now = now_s();
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
static void decode_rounds(engine *e, int w, int span, int all, const uint64_t *sbuf, result *r)
{
    double ratio[ROUNDS], bw[ROUNDS + 1], win_s[ROUNDS];
    double *dt = malloc(sizeof(double) * ROUNDS * (size_t)w); /* (round, token) */
    double total = 0.0, t_start = now_s();
    int n = 0;
    restart(e);
    bw[0] = stream_pass(sbuf, STREAM_BYTES, all);
    for (; n < ROUNDS; n++) {
        if (n >= 3 && now_s() - t_start > 2 * DECODE_BUDGET_S)
            break; /* the machine slowed down a lot: 3 rounds will do */
        if (engine_pos(e) + w > span + 1)
            restart(e);
        win_s[n] = decode_window(e, w, dt ? dt + (size_t)n * w : NULL);
        bw[n + 1] = stream_pass(sbuf, STREAM_BYTES, all);
        total += win_s[n];
    }
    for (int i = 0; i < n; i++)
        ratio[i] = w * r->weight_bytes_per_token / win_s[i] / ((bw[i] + bw[i + 1]) / 2 * 1e9);
    int tokens = n * w;
    r->decode_rounds = n;
    r->decode_window = w;
    r->decode_steps = tokens;
    r->decode_tok_s = tokens / total;
    r->decode_roofline = median(ratio, n, &r->decode_roofline_min, &r->decode_roofline_max);
    r->bandwidth_gb_s = median(bw, n + 1, &r->bandwidth_min_gb_s, &r->bandwidth_max_gb_s);
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
static void scaling_pairs(engine *e, int w, const uint64_t *sbuf, result *r)
{
    double one[PAIRS], many[PAIRS], ratio[PAIRS];
    double bw_one[PAIRS], bw_many[PAIRS], bw_ratio[PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        set_threads(1);
        restart(e);
        bw_one[i] = stream_pass(sbuf, STREAM_BYTES, 1);
        one[i] = w / decode_window(e, w, NULL);
        set_threads(r->threads);
        restart(e);
        bw_many[i] = stream_pass(sbuf, STREAM_BYTES, r->threads);
        many[i] = w / decode_window(e, w, NULL);
        ratio[i] = many[i] / one[i];
        bw_ratio[i] = bw_many[i] / bw_one[i];
    }
    r->scaling_pairs = PAIRS;
    r->decode_tok_s_1t = median(one, PAIRS, NULL, NULL);
    r->decode_tok_s_nt = median(many, PAIRS, NULL, NULL);
    r->thread_speedup = median(ratio, PAIRS, NULL, NULL);
    r->stream_gb_s_1t = median(bw_one, PAIRS, NULL, NULL);
    r->stream_gb_s_nt = median(bw_many, PAIRS, NULL, NULL);
    r->stream_speedup = median(bw_ratio, PAIRS, NULL, NULL);
}

/* Decodes n tokens greedily with the transformer alone from pos, starting with *tok
 * and leaving the next token there; returns the seconds taken. */
static double forward_window(transformer *t, int *tok, int pos, int n)
{
    int vocab = transformer_model(t)->config.vocab_size;
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        *tok = argmax(transformer_forward(t, *tok, pos + i, NULL), vocab);
    return now_s() - t0;
}

/* --long: PAIRS times, a window of w forward passes at position 100, then one at
 * position `far` (the KV cache holds whatever earlier windows left there; only the
 * time matters). Medians of each and of the per-pair far/near ratios. */
static void long_pairs(const model *m, int w, int far, result *r)
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
    r->long_tok_s_near = median(near_ts, PAIRS, NULL, NULL);
    r->long_tok_s_far = median(far_ts, PAIRS, NULL, NULL);
    r->long_ratio = median(ratio, PAIRS, NULL, NULL);
}

/* Sets the thread count (o->threads, or the CPUs this process may run on, as llmchat
 * does) and the kernels; returns the CPUs this process may run on. */
static int child_setup(const options *o, int *threads, char *kernel, size_t kernel_size)
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
    return all;
}

static void run_shape(const options *o, const shape *s, const char *path, result *r)
{
    memset(r, 0, sizeof *r);
    r->load_avg = load_average();
    /* stream passes run on OpenMP's default count, whatever --threads says, as the
     * roofline is against the machine's limit */
    int all = child_setup(o, &r->threads, r->kernel, sizeof r->kernel);

    llm_err err;
    model *m = NULL;
    double t0 = now_s();
    if (model_open(path, NULL, &m, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.text);
        return;
    }
    r->load_s = now_s() - t0;
    engine *e = NULL;
    if (bench_engine(m, &e, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.text);
        model_close(m);
        return;
    }
    const model_config *c = &m->config;
    r->group = m->group;
    r->file_mb = m->file_bytes / 1e6;
    r->kv_mb = engine_kv_bytes(e) / 1e6;
    snprintf(r->kv_cache, sizeof r->kv_cache, "%s",
             engine_kv_cache(e) == TRANSFORMER_KV_F32 ? "f32" : "q8_0");
    r->weight_bytes_per_token = decode_bytes(m);
    int ctx = engine_ctx(e);
    (void)s;

    static int tokens[MAX_PROMPT];
    int n = o->prompt < ctx - 1 ? o->prompt : ctx - 1;
    prompt_tokens(tokens, n, c->vocab_size);

    /* warm up: touch every weight page and the buffers once */
    timed_prefill(e, tokens, n < 8 ? n : 8);
    decode_window(e, 2, NULL);

    /* prefill and the first decoded token, as a user waits for them: best of two
     * (one if slow) */
    cpu_mark timed = cpu_now();
    double best = 1e30, ttft = 1e30, first = 1e30;
    for (int rep = 0; rep < 2; rep++) {
        double dt = timed_prefill(e, tokens, n);
        double step = decode_window(e, 1, NULL);
        if (dt < 0 || step < 0) {
            snprintf(r->error, sizeof r->error, "the engine failed to prefill or step");
            engine_free(e);
            model_close(m);
            return;
        }
        best = dt < best ? dt : best;
        ttft = dt + step < ttft ? dt + step : ttft;
        first = step < first ? step : first;
        if (dt > 5.0)
            break;
    }
    r->prefill_tokens = n;
    r->prefill_tok_s = n / best;
    r->ttft_s = ttft;

    /* peak resident memory before the stream buffer is mapped; pages first touched
     * later (KV rows past the prompt, --long's far windows) stay resident and are
     * counted at the end */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r->peak_rss_mb = ru.ru_maxrss * 1024.0 / 1e6; /* ru_maxrss is in KiB */

    /* decode from position 1, as llama-bench's "tg" test does from 0, in windows
     * paired with stream passes (--long shows the speed deeper in the context) */
    int steps = o->steps < ctx - 2 ? o->steps : ctx - 2;
    int w = window_tokens(steps, first, ctx);
    int span = steps > w ? steps : w;
    r->decode_pos = 1;
    uint64_t *sbuf = probe_new(STREAM_BYTES);
    if (!sbuf) {
        snprintf(r->error, sizeof r->error, "cannot map %zu MiB for the bandwidth passes",
                 STREAM_BYTES >> 20);
        engine_free(e);
        model_close(m);
        return;
    }
    decode_rounds(e, w, span, all, sbuf, r);
    snprintf(r->probe_way, sizeof r->probe_way, "%s", probe_way_name((probe_way)stream_way));
    if (o->scaling)
        scaling_pairs(e, w, sbuf, r);
    probe_free(sbuf, STREAM_BYTES);
    engine_free(e);
    if (o->long_ctx && ctx - w > 400)
        long_pairs(m, w, ctx - w < 4000 ? ctx - w : 4000, r);

    r->cpu_others = cpu_others(timed);

    /* pages touched since the snapshot, the stream buffer unmapped */
    double rss = rss_now_mb();
    if (rss > r->peak_rss_mb)
        r->peak_rss_mb = rss;
    r->ok = 1;
    model_close(m);
}

/* One side-by-side round of llmchat: llama-bench's "pp" test (a prompt of n_prompt
 * tokens from an empty context) and "tg" (n_gen tokens from an empty context), each
 * `reps` times after a warm-up, as tokens per second averaged over the repetitions. */
static void run_round(const options *o, const char *path, int n_prompt, int n_gen, int reps,
                      round_result *r)
{
    memset(r, 0, sizeof *r);
    int threads;
    char kernel[32];
    child_setup(o, &threads, kernel, sizeof kernel);
    llm_err err;
    model *m = NULL;
    engine *e = NULL;
    if (model_open(path, NULL, &m, &err) != LLM_OK || bench_engine(m, &e, &err) != LLM_OK) {
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

/* ---------------------------------------------------------------- children */

/* Runs fn in a child process; the child writes `size` bytes of result to a pipe. */
static int in_child(void (*fn)(const options *, const void *, void *), const options *o,
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

typedef struct {
    const shape *s;
    const char *path;
} shape_arg;

static void child_shape(const options *o, const void *arg, void *out)
{
    const shape_arg *a = arg;
    run_shape(o, a->s, a->path, out);
}

typedef struct {
    const char *path;
    int n_prompt, n_gen, reps;
} round_arg;

static void child_round(const options *o, const void *arg, void *out)
{
    const round_arg *a = arg;
    run_round(o, a->path, a->n_prompt, a->n_gen, a->reps, out);
}

static void child_bandwidth(const options *o, const void *arg, void *out)
{
    (void)o;
    (void)arg;
    /* every CPU this process may run on, whatever --threads says, as in the rounds */
    int all = 1;
#ifdef _OPENMP
    all = cpus_usable();
#endif
    *(double *)out = measure_bandwidth((size_t)1 << 30, 8, all);
}

/* ---------------------------------------------------------------- side by side */

/* --against: `rounds` times, llmchat's round (a child) then llama-bench, both on the
 * same GGUF file (llmchat reads its Q8_0 blocks in place); the medians of the per-round
 * ratios. Stops at the first failure, keeping the rounds done. Without a llama_bench
 * (--sweep alone), llmchat's rounds only, on that file. */
static void side_by_side(const options *o, const shape *s, const char *gguf_path,
                         const char *llama_bench, side_result *sr)
{
    int reps = o->anchor_reps > 0 ? o->anchor_reps : 5; /* llama-bench's default */
    sr->n_prompt = o->prompt < s->seq_len ? o->prompt : s->seq_len;
    sr->n_gen = ANCHOR_GEN < s->seq_len - 1 ? ANCHOR_GEN : s->seq_len - 1;
    sr->reps = reps;
    int threads = cpus_threads(o->threads, cpus_usable(), NULL);
    double pr[ROUNDS_MAX], dr[ROUNDS_MAX];
    for (int i = 0; i < o->rounds; i++) {
        round_result ours;
        round_arg a = {gguf_path, sr->n_prompt, sr->n_gen, reps};
        if (in_child(child_round, o, &a, &ours, sizeof ours) != 0 || !ours.ok) {
            snprintf(sr->why, sizeof sr->why, "llmchat's round failed: %s",
                     ours.ok ? "the process died" : ours.error);
            break;
        }
        anchor_result theirs = {1.0, 1.0};
        if (llama_bench && anchor_run(llama_bench, gguf_path, sr->n_prompt, sr->n_gen, threads,
                                      o->anchor_reps, &theirs, sr->why, sizeof sr->why) != 0)
            break;
        int k = sr->rounds++;
        sr->ours_prefill[k] = ours.prefill_tok_s;
        sr->ours_decode[k] = ours.decode_tok_s;
        if (!llama_bench) {
            if (!o->json)
                fprintf(stderr, "llmchat-bench: %s round %d: llmchat %.1f / %.1f tok/s "
                                "(prefill / decode)\n", s->name, k + 1, ours.prefill_tok_s,
                        ours.decode_tok_s);
            continue;
        }
        sr->theirs_prefill[k] = theirs.prefill_tok_s;
        sr->theirs_decode[k] = theirs.decode_tok_s;
        pr[k] = ours.prefill_tok_s / theirs.prefill_tok_s;
        dr[k] = ours.decode_tok_s / theirs.decode_tok_s;
        if (!o->json)
            fprintf(stderr, "llmchat-bench: %s round %d: llmchat %.1f / %.1f tok/s, "
                            "llama.cpp %.1f / %.1f tok/s (prefill / decode)\n",
                    s->name, k + 1, ours.prefill_tok_s, ours.decode_tok_s,
                    theirs.prefill_tok_s, theirs.decode_tok_s);
    }
    if (sr->rounds > 0 && llama_bench) {
        sr->prefill_ratio = median(pr, sr->rounds, &sr->prefill_ratio_min, &sr->prefill_ratio_max);
        sr->decode_ratio = median(dr, sr->rounds, &sr->decode_ratio_min, &sr->decode_ratio_max);
    }
}

/* ---------------------------------------------------------------- TUI column */

/* The TUI's decode speed as a fraction of generate mode's, and both modes' time to
 * first token, through the real program on the same model and prompt: the
 * llmchat-bench-tui script runs one pair (generate mode, then the TUI in a private tmux
 * server); TUI_PAIRS pairs alternate and the medians are reported (of the per-pair
 * ratios, and of each figure). */
enum { TUI_PAIRS = 3 };

typedef struct {
    double fraction;    /* < 0: not measured (why says why) */
    double gen_tok_s, tui_tok_s, ui_fraction, gen_ttft_s, tui_ttft_s;
    int pairs;          /* pairs measured */
    char why[256];
} tui_result;

/* A first message of about `tokens` tokens (a sentence of 13 tokens, repeated). */
static void tui_prompt(char *buf, size_t size, int tokens)
{
    static const char sentence[] = "Once upon a time there was a little girl named Lily. ";
    buf[0] = '\0';
    for (int t = 0; t + 13 <= tokens && strlen(buf) + sizeof sentence < size; t += 13)
        strcat(buf, sentence);
    if (!buf[0])
        snprintf(buf, size, "Once upon a time");
}

static void measure_tui_once(const options *o, const char *model_path, int prompt_tokens,
                             tui_result *r)
{
    static char prompt[16384], cmd[20000];
    tui_prompt(prompt, sizeof prompt, prompt_tokens);
    cmd[0] = '\0';
    shell_quote(cmd, sizeof cmd, o->tui_script);
    strcat(cmd, " ");
    shell_quote(cmd, sizeof cmd, o->llmchat);
    strcat(cmd, " ");
    shell_quote(cmd, sizeof cmd, model_path);
    strcat(cmd, " ");
    shell_quote(cmd, sizeof cmd, o->tokenizer);
    size_t n = strlen(cmd);
    snprintf(cmd + n, sizeof cmd - n, " %d %d ", o->steps, o->threads);
    shell_quote(cmd, sizeof cmd, prompt);
    strcat(cmd, " 2>&1");
    r->fraction = -1.0;
    fflush(NULL);
    FILE *p = popen(cmd, "r");
    char line[1024] = "";
    for (char buf[1024]; p && fgets(buf, sizeof buf, p);)
        snprintf(line, sizeof line, "%s", buf);
    int status = p ? pclose(p) : -1;
    line[strcspn(line, "\n")] = '\0';
    double gen_ms, tui_ms;
    if (status != 0 ||
        sscanf(line, "generate_prefill_ms=%lf generate_tok_s=%lf tui_prefill_ms=%lf "
                     "tui_tok_s=%lf ui_fraction=%lf",
               &gen_ms, &r->gen_tok_s, &tui_ms, &r->tui_tok_s, &r->ui_fraction) != 5 ||
        r->gen_tok_s <= 0 || r->tui_tok_s <= 0) {
        snprintf(r->why, sizeof r->why, "%.200s", line[0] ? line : "llmchat-bench-tui failed");
        return;
    }
    r->gen_ttft_s = gen_ms / 1e3 + 1.0 / r->gen_tok_s;
    r->tui_ttft_s = tui_ms / 1e3 + 1.0 / r->tui_tok_s;
    r->fraction = r->tui_tok_s / r->gen_tok_s;
}

static void measure_tui(const options *o, const shape *s, const char *model_path, tui_result *r)
{
    double fraction[TUI_PAIRS], gen[TUI_PAIRS], tui[TUI_PAIRS], ui[TUI_PAIRS];
    double gen_ttft[TUI_PAIRS], tui_ttft[TUI_PAIRS];
    /* the prompt of the prefill figures, leaving room for the reply */
    int tokens = o->prompt < s->seq_len - o->steps - 64 ? o->prompt : s->seq_len - o->steps - 64;
    for (int i = 0; i < TUI_PAIRS; i++) {
        measure_tui_once(o, model_path, tokens, r);
        if (r->fraction < 0)
            return; /* r->why says why */
        fraction[i] = r->fraction;
        gen[i] = r->gen_tok_s;
        tui[i] = r->tui_tok_s;
        ui[i] = r->ui_fraction;
        gen_ttft[i] = r->gen_ttft_s;
        tui_ttft[i] = r->tui_ttft_s;
    }
    r->fraction = median(fraction, TUI_PAIRS, NULL, NULL);
    r->gen_tok_s = median(gen, TUI_PAIRS, NULL, NULL);
    r->tui_tok_s = median(tui, TUI_PAIRS, NULL, NULL);
    r->ui_fraction = median(ui, TUI_PAIRS, NULL, NULL);
    r->gen_ttft_s = median(gen_ttft, TUI_PAIRS, NULL, NULL);
    r->tui_ttft_s = median(tui_ttft, TUI_PAIRS, NULL, NULL);
    r->pairs = TUI_PAIRS;
}

/* ---------------------------------------------------------------- output */

/* s as JSON string content (quotes and backslashes escaped, control characters left
 * out). */
static void json_text(const char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s >= 0x20)
            putchar(*s);
}

static void json_array(const char *key, const double *x, int n)
{
    printf(",\"%s\":[", key);
    for (int i = 0; i < n; i++)
        printf("%s%.2f", i ? "," : "", x[i]);
    printf("]");
}

static void print_json(const shape *s, const result *r, const tui_result *tr,
                       const side_result *sr, bool against, double bw_start)
{
    if (!r->ok) {
        printf("{\"shape\":\"%s\",\"error\":\"", s->name);
        json_text(r->error);
        printf("\"}\n");
        return;
    }
    printf("{\"shape\":\"%s\",\"kernel\":\"%s\",\"threads\":%d,\"group\":%d,"
           "\"prefill_tokens\":%d,\"prefill_tok_s\":%.1f,\"decode_steps\":%d,\"decode_pos\":%d,"
           "\"decode_tok_s\":%.2f,\"bandwidth_gb_s\":%.2f,\"decode_bytes_per_token\":%.0f,"
           "\"decode_roofline\":%.3f,\"ttft_s\":%.4f,\"peak_rss_mb\":%.1f,\"file_mb\":%.1f,"
           "\"kv_cache\":\"%s\",\"kv_cache_mb\":%.1f,\"load_s\":%.3f,\"decode_peak_tok_s\":%.2f,"
           "\"decode_roofline_peak\":%.3f,\"decode_rounds\":%d,\"decode_window_tokens\":%d,"
           "\"decode_roofline_min\":%.3f,\"decode_roofline_max\":%.3f,"
           "\"bandwidth_min_gb_s\":%.2f,\"bandwidth_max_gb_s\":%.2f,\"bandwidth_start_gb_s\":%.2f,"
           "\"bandwidth_way\":\"%s\","
           "\"cpu_others\":%.3f,\"load_avg\":%.2f",
           s->name, r->kernel, r->threads, r->group, r->prefill_tokens, r->prefill_tok_s,
           r->decode_steps, r->decode_pos, r->decode_tok_s, r->bandwidth_gb_s,
           r->weight_bytes_per_token, r->decode_roofline, r->ttft_s, r->peak_rss_mb, r->file_mb,
           r->kv_cache, r->kv_mb, r->load_s, r->decode_peak_tok_s,
           r->weight_bytes_per_token * r->decode_peak_tok_s / (r->bandwidth_gb_s * 1e9),
           r->decode_rounds, r->decode_window, r->decode_roofline_min, r->decode_roofline_max,
           r->bandwidth_min_gb_s, r->bandwidth_max_gb_s, bw_start, r->probe_way, r->cpu_others,
           r->load_avg);
    if (r->long_pairs > 0)
        printf(",\"decode_tok_s_pos%.0f\":%.2f,\"decode_tok_s_pos%.0f\":%.2f,\"long_ratio\":%.3f,"
               "\"long_pairs\":%d", r->long_pos_near, r->long_tok_s_near, r->long_pos_far,
               r->long_tok_s_far, r->long_ratio, r->long_pairs);
    if (r->scaling_pairs > 0)
        printf(",\"decode_tok_s_1t\":%.2f,\"decode_tok_s_%dt\":%.2f,\"thread_speedup\":%.3f,"
               "\"stream_gb_s_1t\":%.2f,\"stream_gb_s_%dt\":%.2f,\"stream_speedup\":%.3f,"
               "\"scaling_pairs\":%d", r->decode_tok_s_1t, r->threads, r->decode_tok_s_nt,
               r->thread_speedup, r->stream_gb_s_1t, r->threads, r->stream_gb_s_nt,
               r->stream_speedup, r->scaling_pairs);
    if (against && sr->rounds > 0) {
        printf(",\"anchor\":\"llama.cpp\",\"anchor_rounds\":%d,\"anchor_prompt\":%d,"
               "\"anchor_gen\":%d,\"anchor_reps\":%d,\"prefill_ratio\":%.3f,\"decode_ratio\":%.3f,"
               "\"prefill_ratio_min\":%.3f,\"prefill_ratio_max\":%.3f,"
               "\"decode_ratio_min\":%.3f,\"decode_ratio_max\":%.3f",
               sr->rounds, sr->n_prompt, sr->n_gen, sr->reps, sr->prefill_ratio,
               sr->decode_ratio, sr->prefill_ratio_min, sr->prefill_ratio_max,
               sr->decode_ratio_min, sr->decode_ratio_max);
        json_array("llmchat_prefill_tok_s", sr->ours_prefill, sr->rounds);
        json_array("llamacpp_prefill_tok_s", sr->theirs_prefill, sr->rounds);
        json_array("llmchat_decode_tok_s", sr->ours_decode, sr->rounds);
        json_array("llamacpp_decode_tok_s", sr->theirs_decode, sr->rounds);
    } else if (against) {
        printf(",\"anchor\":null,\"anchor_note\":\"");
        json_text(sr->why);
        printf("\"");
    }
    if (tr->fraction >= 0) {
        printf(",\"tui_decode_fraction\":%.3f,\"tui_tok_s\":%.1f,\"generate_tok_s\":%.1f,"
               "\"tui_ui_fraction\":%.4f,\"tui_ttft_s\":%.4f,\"generate_ttft_s\":%.4f,"
               "\"tui_pairs\":%d}\n", tr->fraction, tr->tui_tok_s, tr->gen_tok_s, tr->ui_fraction,
               tr->tui_ttft_s, tr->gen_ttft_s, tr->pairs);
    } else {
        printf(",\"tui_decode_fraction\":null,\"tui_note\":\"");
        json_text(tr->why);
        printf("\"}\n");
    }
}

static void print_row(const shape *s, const result *r, const tui_result *tr,
                      const side_result *sr, bool against)
{
    if (!r->ok) {
        printf("%-6s  error: %s\n", s->name, r->error);
        return;
    }
    char tui[32] = "-";
    if (tr->fraction >= 0)
        snprintf(tui, sizeof tui, "%.1f%%", 100 * tr->fraction);
    printf("%-6s %9.1f %9.1f %8.1f%% %7.1f %8.3f %9.1f %8.1f %7.2f %8s\n", s->name,
           r->prefill_tok_s, r->decode_tok_s, 100 * r->decode_roofline, r->bandwidth_gb_s,
           r->ttft_s, r->peak_rss_mb, r->file_mb, r->load_s, tui);
    printf("       roofline %.1f%% .. %.1f%% over %d windows of %d tokens, "
           "bandwidth %.1f .. %.1f GB/s, load average %.2f\n", 100 * r->decode_roofline_min,
           100 * r->decode_roofline_max, r->decode_rounds, r->decode_window,
           r->bandwidth_min_gb_s, r->bandwidth_max_gb_s, r->load_avg);
    if (r->long_pairs > 0)
        printf("       decode at pos %.0f: %.2f tok/s, at pos %.0f: %.2f tok/s, far/near %.3f"
               " (medians of %d pairs)\n", r->long_pos_near, r->long_tok_s_near, r->long_pos_far,
               r->long_tok_s_far, r->long_ratio, r->long_pairs);
    if (r->scaling_pairs > 0)
        printf("       decode on 1 thread: %.2f tok/s, on %d: %.2f tok/s, speedup %.3f;"
               " read bandwidth %.1f GB/s, %.1f GB/s, speedup %.3f (medians of %d pairs)\n",
               r->decode_tok_s_1t, r->threads, r->decode_tok_s_nt, r->thread_speedup,
               r->stream_gb_s_1t, r->stream_gb_s_nt, r->stream_speedup, r->scaling_pairs);
    if (tr->fraction >= 0)
        printf("       TUI: decode %.1f tok/s against generate mode's %.1f, time to first token "
               "%.3f s against %.3f s (medians of %d pairs)\n", tr->tui_tok_s, tr->gen_tok_s,
               tr->tui_ttft_s, tr->gen_ttft_s, tr->pairs);
    if (against && sr->rounds > 0)
        printf("       against llama.cpp (pp%d / tg%d, %d rounds): prefill %.2fx (%.2f .. %.2f), "
               "decode %.2fx (%.2f .. %.2f)\n", sr->n_prompt, sr->n_gen, sr->rounds,
               sr->prefill_ratio, sr->prefill_ratio_min, sr->prefill_ratio_max, sr->decode_ratio,
               sr->decode_ratio_min, sr->decode_ratio_max);
    else if (against)
        printf("       against llama.cpp: not measured: %s\n", sr->why);
    if (r->cpu_others > CPU_OTHERS_WARN)
        printf("       warning: other processes took %.0f%% of the CPUs meanwhile: the figures "
               "above are not this program's alone\n", 100 * r->cpu_others);
}

/* ---------------------------------------------------------------- options */

/* ---------------------------------------------------------------- --sweep */

/* The thread counts of a sweep up to `all`: 1, 2, 4, ... and `all` itself; how many. */
static int sweep_counts(int all, int *counts, int max)
{
    int n = 0;
    for (int t = 1; t < all && n < max - 1; t *= 2)
        counts[n++] = t;
    counts[n++] = all;
    return n;
}

/* The median of llmchat's prefill and decode over a side-by-side's rounds. */
static void ours_medians(side_result *sr, double *prefill, double *decode)
{
    double lo, hi;
    *prefill = median(sr->ours_prefill, sr->rounds, &lo, &hi);
    *decode = median(sr->ours_decode, sr->rounds, &lo, &hi);
}

static void print_sweep_row(const shape *s, int threads, side_result *sr, bool theirs, bool json)
{
    double pp, tg;
    if (sr->rounds == 0) {
        if (json)
            printf("{\"shape\":\"%s\",\"sweep_threads\":%d,\"error\":\"", s->name, threads);
        else
            printf("%7d  error: ", threads);
        json_text(sr->why);
        printf(json ? "\"}\n" : "\n");
        return;
    }
    ours_medians(sr, &pp, &tg);
    double lo, hi, their_pp = 0, their_tg = 0;
    if (theirs) {
        their_pp = median(sr->theirs_prefill, sr->rounds, &lo, &hi);
        their_tg = median(sr->theirs_decode, sr->rounds, &lo, &hi);
    }
    if (!json) {
        printf("%7d %10.1f %10.2f", threads, pp, tg);
        if (theirs)
            printf(" %10.1f %10.2f %8.2fx %8.2fx", their_pp, their_tg, sr->prefill_ratio,
                   sr->decode_ratio);
        printf("\n");
        return;
    }
    printf("{\"shape\":\"%s\",\"sweep_threads\":%d,\"rounds\":%d,\"prompt\":%d,\"gen\":%d,"
           "\"prefill_tok_s\":%.2f,\"decode_tok_s\":%.2f", s->name, threads, sr->rounds,
           sr->n_prompt, sr->n_gen, pp, tg);
    json_array("llmchat_prefill_tok_s", sr->ours_prefill, sr->rounds);
    json_array("llmchat_decode_tok_s", sr->ours_decode, sr->rounds);
    if (theirs) {
        printf(",\"llamacpp_prefill_tok_s_median\":%.2f,\"llamacpp_decode_tok_s_median\":%.2f,"
               "\"prefill_ratio\":%.3f,\"decode_ratio\":%.3f", their_pp, their_tg,
               sr->prefill_ratio, sr->decode_ratio);
        json_array("llamacpp_prefill_tok_s", sr->theirs_prefill, sr->rounds);
        json_array("llamacpp_decode_tok_s", sr->theirs_decode, sr->rounds);
    }
    printf("}\n");
}

/* --sweep: for each thread count, o->rounds rounds of llmchat (and llama-bench with
 * --against) on `path`; one row per count. Returns the counts that failed. */
static int sweep_shape(const options *o, const shape *s, const char *path,
                       const char *llama_bench, const char *anchor_why)
{
    int all = o->threads > 0 ? o->threads : cpus_usable(), counts[16];
    int n = sweep_counts(all, counts, 16), failures = 0;
    if (!o->json) {
        printf("llmchat-bench --sweep: %s, %s, %d round%s a row (medians)%s%s\n", s->name, path,
               o->rounds, o->rounds == 1 ? "" : "s",
               o->against && !llama_bench ? "; against llama.cpp: not measured: " : "",
               o->against && !llama_bench ? anchor_why : "");
        printf("%7s %10s %10s", "threads", "prefill", "decode");
        if (llama_bench)
            printf(" %10s %10s %9s %9s", "llama.cpp", "llama.cpp", "prefill", "decode");
        printf("\n%7s %10s %10s", "", "tok/s", "tok/s");
        if (llama_bench)
            printf(" %10s %10s %9s %9s", "prefill", "decode", "ratio", "ratio");
        printf("\n");
    }
    for (int i = 0; i < n; i++) {
        options one = *o;
        one.threads = counts[i];
        side_result sr;
        memset(&sr, 0, sizeof sr);
        side_by_side(&one, s, path, llama_bench, &sr);
        failures += sr.rounds == 0;
        print_sweep_row(s, counts[i], &sr, llama_bench != NULL, o->json);
        fflush(stdout);
    }
    return failures;
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: llmchat-bench [OPTIONS]\n"
            "Speed of llmchat on random-weight int8 models of real shapes, through the engine\n"
            "as `llmchat -m generate` runs it, and beside llama.cpp on the same model.\n\n"
            "  -s, --shape NAME    15M, 42M, 110M, 1B, 7B (repeatable or a comma list;\n"
            "                      default 15M,110M)\n"
            "  -T, --threads N     threads (default: the CPUs this process may run on)\n"
            "  -n, --steps N       decode tokens from position 1, split into 8 windows (default\n"
            "                      128; windows are lengthened to last >= 50 ms and shortened\n"
            "                      so that all 8 take about 10 s)\n"
            "  -p, --prompt N      prefill tokens (default 512, capped by the context)\n"
            "  -c, --cache DIR     model files (default $XDG_CACHE_HOME/llmchat-bench)\n"
            "      --long          also decode at position 100 and at 4000 (or the end of\n"
            "                      the context, if shorter): 5 near/far window pairs\n"
            "      --scaling       also decode on 1 thread and on all: 5 window pairs\n"
            "      --sweep         instead of the table: prefill and decode (llama-bench's pp\n"
            "                      and tg tests) on 1, 2, 4, ... threads up to -T or all\n"
            "                      CPUs, --rounds rounds each, one row per thread count; with\n"
            "                      --against, llama.cpp beside it and the ratios\n"
            "      --kernels NAME  force the kernels: auto, scalar, avx2, avx512, neon,\n"
            "                      neon-dotprod (default: auto, the best the CPU has; --isa\n"
            "                      is a synonym)\n"
            "      --format F      the file llmchat times: llama2c (default, int8 v2) or gguf\n"
            "                      (Q8_0, the file --against gives llama-bench)\n"
            "      --quant TYPE    the GGUF file made TYPE (q4_k_m, q4_0, q5_k_m, q6_k, ...) by\n"
            "                      llama-quantize from the Q8_0 one, and timed by both engines\n"
            "                      (implies --format gguf); llama-quantize is --quantize PATH,\n"
            "                      $LLMCHAT_ANCHOR_LLAMA_QUANTIZE, or the one beside the\n"
            "                      llama-bench (says so and stops when there is none)\n"
            "      --quantize PATH that llama-quantize\n"
            "      --against llama.cpp\n"
            "                      also write each shape as a GGUF Q8_0 file and alternate\n"
            "                      llmchat with llama-bench -p N -n 128 on it, 3 rounds; the\n"
            "                      llama-bench is $LLMCHAT_ANCHOR_LLAMA_BENCH (skipped with a\n"
            "                      message when unset)\n"
            "      --anchor PATH   the same with this llama-bench\n"
            "      --rounds N      side-by-side rounds (default 3, at most 9)\n"
            "      --anchor-reps N repetitions of each test in a round (llama-bench -r;\n"
            "                      default llama-bench's 5)\n"
            "      --json          one JSON object per shape instead of a table\n"
            "      --llmchat PATH  the llmchat program: measure the TUI's decode speed as a\n"
            "                      fraction of generate mode's, and both modes' time to first\n"
            "                      token (needs tmux and a 32000-token tokenizer)\n"
            "      --tokenizer F   a 32000-token tokenizer.bin for those runs (default: the\n"
            "                      cache dir's tokenizer.bin)\n"
            "      --tui-script F  the llmchat-bench-tui script that runs one pair (default: the\n"
            "                      installed one)\n"
            "  -h, --help\n\n"
            "Memory bandwidth may change by 2x within minutes, so speed is compared with it in\n"
            "pairs close in time. The decode runs in 8 windows, each between two streaming\n"
            "reads of a 512 MiB buffer on all CPUs (4 streams a thread, the widest loads; of\n"
            "three ways to look ahead, the fastest on this machine: bandwidth_way); a\n"
            "window's roofline = weight bytes read per token x its tok/s / the mean\n"
            "bandwidth of the reads before and after it.\n"
            "decode roofline and bw are medians over windows and reads (JSON: decode_roofline,\n"
            "bandwidth_gb_s; _min/_max the extremes); decode tok/s is all window tokens over\n"
            "all window time. --long gives long_ratio, the median far/near tok/s over\n"
            "pairs; --scaling thread_speedup, the median all/1-thread tok/s over pairs, and\n"
            "stream_speedup, the same ratio for a streaming read (decode cannot scale better).\n"
            "--against gives prefill_ratio and decode_ratio, the medians of llmchat's over\n"
            "llama.cpp's tok/s in each round. The bandwidth measured once at the start (1 GiB,\n"
            "best of 8) is bandwidth_start_gb_s. Pairing cannot undo other programs competing\n"
            "for the cores: cpu_others is their share of the CPUs while a shape was timed (the\n"
            "table warns above 10%%), load_avg the load average when it started.\n"
            "JSON adds decode_peak_tok_s, the best 16 consecutive tokens. Files are written\n"
            "once (7B: about 7 GB, and as much again for its GGUF) and reused.\n");
}

static int parse_int(const char *s, const char *what, int lo, int hi)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "llmchat-bench: %s must be an integer from %d to %d, not '%s'\n", what,
                lo, hi, s);
        exit(2);
    }
    return (int)v;
}

static kernels_isa parse_isa(const char *name)
{
    kernels_isa isa;
    if (!kernels_isa_parse(name, &isa)) {
        fprintf(stderr, "llmchat-bench: unknown kernel set '%s' (auto, scalar, avx2, avx512, neon, "
                "neon-dotprod)\n",
                name);
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
            fprintf(stderr, "llmchat-bench: unknown shape '%s' (15M, 42M, 110M, 1B, 7B)\n", tok);
            exit(2);
        }
        want[i] = true;
    }
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

int main(int argc, char **argv)
{
    options o = {.steps = 128, .prompt = 512, .rounds = ROUNDS_DEFAULT};
    bool want[16] = {false};
    bool any = false;
    enum {
        OPT_JSON = 256, OPT_LONG, OPT_LLMCHAT, OPT_ISA, OPT_TOKENIZER, OPT_SCALING, OPT_AGAINST,
        OPT_ANCHOR, OPT_ROUNDS, OPT_ANCHOR_REPS, OPT_TUI_SCRIPT, OPT_FORMAT, OPT_QUANT,
        OPT_QUANTIZE, OPT_SWEEP,
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
        {"tui-script", required_argument, NULL, OPT_TUI_SCRIPT},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"quant", required_argument, NULL, OPT_QUANT},
        {"quantize", required_argument, NULL, OPT_QUANTIZE},
        {"sweep", no_argument, NULL, OPT_SWEEP},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "s:T:n:p:c:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': add_shapes(optarg, want); any = true; break;
        case 'T': o.threads = parse_int(optarg, "--threads", 1, 1024); break;
        case 'n': o.steps = parse_int(optarg, "--steps", 1, 1000000); break;
        case 'p': o.prompt = parse_int(optarg, "--prompt", 1, MAX_PROMPT); break;
        case 'c': o.cache = optarg; break;
        case OPT_JSON: o.json = true; break;
        case OPT_LONG: o.long_ctx = true; break;
        case OPT_SCALING: o.scaling = true; break;
        case OPT_SWEEP: o.sweep = true; break;
        case OPT_LLMCHAT: o.llmchat = optarg; break;
        case OPT_ISA: o.isa = parse_isa(optarg); break;
        case OPT_TOKENIZER: o.tokenizer = optarg; break;
        case OPT_TUI_SCRIPT: o.tui_script = optarg; break;
        case OPT_FORMAT:
            if (strcmp(optarg, "gguf") && strcmp(optarg, "llama2c")) {
                fprintf(stderr, "llmchat-bench: --format must be gguf or llama2c, not '%s'\n", optarg);
                exit(2);
            }
            o.gguf = !strcmp(optarg, "gguf");
            break;
        case OPT_QUANT:
            if (!quantize_type_ok(optarg)) {
                fprintf(stderr, "llmchat-bench: --quant must be q4_0, q4_1, q5_0, q5_1, q4_k_m, "
                        "q4_k_s, q5_k_m, q5_k_s or q6_k, not '%s'\n", optarg);
                return 2;
            }
            o.quant = optarg;
            o.gguf = true;
            break;
        case OPT_QUANTIZE: o.quantize = optarg; break;
        case OPT_AGAINST:
            if (strcmp(optarg, "llama.cpp") != 0) {
                fprintf(stderr, "llmchat-bench: --against takes llama.cpp, not '%s'\n", optarg);
                return 2;
            }
            o.against = true;
            break;
        case OPT_ANCHOR: o.against = true; o.anchor = optarg; break;
        case OPT_ROUNDS: o.rounds = parse_int(optarg, "--rounds", 1, ROUNDS_MAX); break;
        case OPT_ANCHOR_REPS: o.anchor_reps = parse_int(optarg, "--anchor-reps", 1, 100); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "llmchat-bench: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (!any)
        want[0] = want[2] = true; /* 15M, 110M */

    static char cache[4096];
    if (!o.cache) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        if (xdg && *xdg)
            snprintf(cache, sizeof cache, "%s/llmchat-bench", xdg);
        else
            snprintf(cache, sizeof cache, "%s/.cache/llmchat-bench", home && *home ? home : "/tmp");
        o.cache = cache;
    }
    make_dirs(o.cache);
    static char tok_path[4096];
    if (o.llmchat && !o.tokenizer) {
        snprintf(tok_path, sizeof tok_path, "%s/tokenizer.bin", o.cache);
        if (access(tok_path, R_OK) == 0)
            o.tokenizer = tok_path;
    }
    if (o.llmchat && !o.tui_script)
        o.tui_script = tui_script_installed();
    const char *llama_bench = NULL;
    char anchor_why[320] = "";
    if (o.against)
        llama_bench = anchor_find(o.anchor, anchor_why, sizeof anchor_why);

    const char *llama_quantize = NULL;
    if (o.quant) {
        char why[320];
        const char *beside = o.anchor ? o.anchor : getenv("LLMCHAT_ANCHOR_LLAMA_BENCH");
        if (!(llama_quantize = quantize_find(o.quantize, beside, why, sizeof why))) {
            fprintf(stderr, "llmchat-bench: --quant %s: %s\n", o.quant, why);
            return 1;
        }
    }

    static char paths[16][4096], gguf_paths[16][4096];
    char err[512];
    for (int i = 0; i < bench_n_shapes; i++) {
        if (!want[i])
            continue;
        snprintf(paths[i], sizeof paths[i], "%s/random-%s-q8_0.bin", o.cache, bench_shapes[i].name);
        if (!o.gguf && shape_write_llama2c(&bench_shapes[i], paths[i], err, sizeof err) != 0)
            die("%s", err);
        snprintf(gguf_paths[i], sizeof gguf_paths[i], "%s/random-%s-q8_0.gguf", o.cache,
                 bench_shapes[i].name);
        if ((llama_bench || o.gguf) &&
            shape_write_gguf(&bench_shapes[i], gguf_paths[i], err, sizeof err) != 0)
            die("%s", err);
        if (o.quant) { /* that file made o.quant: the one both engines time */
            char q8[4096];
            memcpy(q8, gguf_paths[i], sizeof q8);
            snprintf(gguf_paths[i], sizeof gguf_paths[i], "%s/random-%s-%s.gguf", o.cache,
                     bench_shapes[i].name, o.quant);
            if (quantize_file(llama_quantize, q8, gguf_paths[i], o.quant, o.threads, err,
                              sizeof err) != 0)
                die("%s", err);
        }
        if (o.gguf) /* llmchat times the GGUF file as well: the very file llama-bench reads */
            memcpy(paths[i], gguf_paths[i], sizeof paths[i]);
    }

    if (o.sweep) {
        int failures = 0;
        for (int i = 0; i < bench_n_shapes; i++)
            if (want[i])
                failures += sweep_shape(&o, &bench_shapes[i], llama_bench ? gguf_paths[i] : paths[i],
                                        llama_bench, anchor_why);
        return failures ? 1 : 0;
    }
    double bw = 0.0;
    if (in_child(child_bandwidth, &o, NULL, &bw, sizeof bw) != 0 || bw <= 0.0)
        die("%s", "measuring the bandwidth failed");

    bool header = false;
    int failures = 0;
    for (int i = 0; i < bench_n_shapes; i++) {
        if (!want[i])
            continue;
        const shape *s = &bench_shapes[i];
        result r;
        shape_arg sa = {s, paths[i]};
        if (in_child(child_shape, &o, &sa, &r, sizeof r) != 0) {
            memset(&r, 0, sizeof r);
            snprintf(r.error, sizeof r.error, "the measuring process died (out of memory?)");
        }
        failures += !r.ok;
        tui_result tr = {.fraction = -1.0};
        if (!o.llmchat)
            snprintf(tr.why, sizeof tr.why, "not measured: give --llmchat PATH");
        else if (!o.tokenizer)
            snprintf(tr.why, sizeof tr.why, "no 32000-token tokenizer.bin (--tokenizer FILE)");
        else if (!o.tui_script)
            snprintf(tr.why, sizeof tr.why, "llmchat-bench-tui not found (--tui-script FILE)");
        else if (r.ok)
            measure_tui(&o, s, paths[i], &tr);
        side_result sr;
        memset(&sr, 0, sizeof sr);
        if (o.against && !llama_bench)
            snprintf(sr.why, sizeof sr.why, "%s", anchor_why);
        else if (o.against && r.ok)
            side_by_side(&o, s, gguf_paths[i], llama_bench, &sr);
        if (o.json) {
            print_json(s, &r, &tr, &sr, o.against, bw);
        } else {
            if (!header) {
                printf("llmchat-bench: kernel %s, %d threads, read bandwidth at start %.2f GB/s "
                       "(bw: median of the passes paired with decode windows)\n",
                       r.ok ? r.kernel : "?", r.threads, bw);
                printf("%-6s %9s %9s %9s %7s %8s %9s %8s %7s %8s\n", "shape", "prefill", "decode",
                       "roofline", "bw", "ttft_s", "rss_MB", "file_MB", "load_s", "tui");
                printf("%-6s %9s %9s %9s %7s %8s %9s %8s %7s %8s\n", "", "tok/s", "tok/s", "median",
                       "GB/s", "", "", "", "", "decode");
                header = true;
            }
            print_row(s, &r, &tr, &sr, o.against);
            if (o.llmchat && tr.fraction < 0)
                printf("       TUI column: %s\n", tr.why);
        }
        fflush(stdout);
    }
    return failures ? 1 : 0;
}
