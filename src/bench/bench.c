/* bench.c — llmchat-bench: speed of the core on random-weight models of real shapes.
 *
 * Writes llama2.c v2 (int8 Q8_0) files of named shapes (15M ... 7B) into a cache
 * directory on demand, then for each shape loads the file with model_open and times
 * the transformer API: batched prefill, one-token decode, time to first token,
 * resident memory, and the decode speed as a fraction of the bandwidth limit (every
 * weight byte is read once per decoded token). Prints a table, or one JSON object
 * per shape with --json.
 *
 * The machine's memory bandwidth may swing by 2x from minute to minute, so the
 * roofline is measured in pairs: decoding runs in short windows (>= 50 ms), each
 * between two streaming reads of a 512 MiB buffer on all cores, and the figure is
 * the median over the windows of weight bytes/s over the mean of those two reads.
 * --long (near vs far in the context) and --scaling (one thread vs all) alternate
 * their windows the same way and report medians of per-pair ratios. A bandwidth
 * measured once at the start is printed for reference only.
 *
 * Each measurement runs in a forked child, so peak resident memory is per shape and
 * an OpenMP thread pool never crosses a fork; the parent only writes files, forks
 * and prints. A front end: it prints and exits. Owns nothing the core uses. */
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

#include "clock.h"
#include "model.h"
#include "kernels.h"
#include "transformer.h"

typedef struct {
    const char *name;
    int dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
    int shared; /* classifier shared with the token embedding */
} shape;

static const shape shapes[] = {
    {"15M", 288, 768, 6, 6, 6, 32000, 256, 1},
    {"42M", 512, 1376, 8, 8, 8, 32000, 1024, 1},
    {"110M", 768, 2048, 12, 12, 12, 32000, 1024, 1},
    {"1B", 2048, 5632, 22, 32, 4, 32000, 2048, 0},
    {"7B", 4096, 11008, 32, 32, 32, 32000, 4096, 0},
};
enum { N_SHAPES = sizeof shapes / sizeof *shapes, MAX_PROMPT = 512 };

typedef struct {
    int threads;        /* 0: OpenMP's default */
    int steps;          /* decode tokens, split into ROUNDS windows */
    int prompt;         /* prefill tokens (capped by the context) */
    bool json, long_ctx, scaling;
    const char *cache;  /* directory for the model files */
    const char *llmchat;   /* the program, for the TUI column */
    const char *tokenizer; /* a 32000-token tokenizer.bin, for the TUI column */
    kernels_isa isa;      /* kernels to force (KERNELS_AUTO: the best) */
} options;

/* What a child measures for one shape (sent to the parent through a pipe). */
typedef struct {
    int ok;
    char error[512];
    char kernel[32];
    char kv_cache[8];   /* "q8_0" or "f32" */
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
} result;

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

/* ---------------------------------------------------------------- model files */

/* Q8_0 group: 64, halved until it divides both row lengths, so that groups never
 * straddle rows and the file is used in place (15M: 288 -> 32; 42M: 1376 -> 32). */
static int shape_group(const shape *s)
{
    int g = 64;
    while (g > 32 && (s->dim % g || s->hidden_dim % g))
        g /= 2;
    return g;
}

static uint64_t q8_bytes(uint64_t n, int group)
{
    return n + n / group * 4;
}

static uint64_t shape_file_bytes(const shape *s)
{
    uint64_t d = s->dim, h = s->hidden_dim, L = s->n_layers, V = s->vocab_size;
    uint64_t kv = (uint64_t)s->n_kv_heads * (d / s->n_heads);
    int g = shape_group(s);
    uint64_t b = 256 + 4 * (2 * L * d + d);
    b += q8_bytes(V * d, g);
    b += L * (2 * q8_bytes(d * d, g) + 2 * q8_bytes(kv * d, g) + 3 * q8_bytes(h * d, g));
    if (!s->shared)
        b += q8_bytes(V * d, g);
    return b;
}

static uint64_t rng_next(uint64_t *st)
{
    uint64_t x = *st;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *st = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Writes n int8 values, uniform in [-127, 127], then n / group scales giving the
 * weights a standard deviation of about 0.02 — in chunks, never the whole tensor. */
static int write_q8_tensor(FILE *f, uint64_t n, int group, uint64_t *rng)
{
    enum { CHUNK = 1 << 20 };
    static int8_t buf[CHUNK];
    static float sbuf[CHUNK / 4];
    for (uint64_t done = 0; done < n;) {
        size_t k = n - done < CHUNK ? (size_t)(n - done) : CHUNK;
        for (size_t i = 0; i < k; i += 8) {
            uint64_t r = rng_next(rng);
            for (size_t j = 0; j < 8 && i + j < k; j++) {
                int8_t v = (int8_t)(r >> (8 * j));
                buf[i + j] = v == -128 ? -127 : v;
            }
        }
        if (fwrite(buf, 1, k, f) != k)
            return -1;
        done += k;
    }
    const float scale = 0.02f / 73.3f; /* std of uniform [-127, 127] is 73.3 */
    for (size_t i = 0; i < CHUNK / 4; i++)
        sbuf[i] = scale;
    for (uint64_t left = n / group; left > 0;) {
        size_t k = left < CHUNK / 4 ? (size_t)left : CHUNK / 4;
        if (fwrite(sbuf, 4, k, f) != k)
            return -1;
        left -= k;
    }
    return 0;
}

static void write_header(FILE *f, const shape *s)
{
    unsigned char h[256] = {0};
    uint32_t magic = 0x616b3432;
    int32_t fields[9] = {2, s->dim, s->hidden_dim, s->n_layers, s->n_heads, s->n_kv_heads,
                         s->vocab_size, s->seq_len, 0};
    memcpy(h, &magic, 4);
    memcpy(h + 4, fields, 8 * 4);
    h[36] = (unsigned char)s->shared;
    int32_t g = shape_group(s);
    memcpy(h + 37, &g, 4);
    fwrite(h, 1, sizeof h, f);
}

/* Makes sure cache/<name>.bin exists with the size the shape implies; writes it
 * (to a temporary name, renamed when complete) if not. */
static void ensure_model(const options *o, const shape *s, char *path, size_t size)
{
    snprintf(path, size, "%s/random-%s-q80.bin", o->cache, s->name);
    struct stat st;
    uint64_t want = shape_file_bytes(s);
    if (stat(path, &st) == 0 && (uint64_t)st.st_size == want)
        return;
    fprintf(stderr, "llmchat-bench: writing %s (%.1f MB)...\n", path, want / 1e6);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        die("cannot write the model file: %s", strerror(errno));
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)s->dim * 1000003u;
    uint64_t d = s->dim, h = s->hidden_dim, L = s->n_layers, V = s->vocab_size;
    uint64_t kv = (uint64_t)s->n_kv_heads * (d / s->n_heads);
    int g = shape_group(s);
    write_header(f, s);
    /* rms_att, rms_ffn (layers, dim), rms_final (dim): all ones */
    float one = 1.0f;
    for (uint64_t i = 0; i < 2 * L * d + d; i++)
        fwrite(&one, 4, 1, f);
    int bad = write_q8_tensor(f, V * d, g, &rng);
    const uint64_t sizes[7] = {d * d, kv * d, kv * d, d * d, h * d, d * h, h * d};
    for (int t = 0; t < 7 && !bad; t++)
        for (uint64_t l = 0; l < L && !bad; l++)
            bad = write_q8_tensor(f, sizes[t], g, &rng);
    if (!s->shared && !bad)
        bad = write_q8_tensor(f, V * d, g, &rng);
    if (bad || fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0) {
        unlink(tmp);
        die("writing the model file failed: %s", strerror(errno));
    }
    if (rename(tmp, path) != 0)
        die("cannot rename the model file: %s", strerror(errno));
}

/* ---------------------------------------------------------------- measurements */

static volatile uint64_t stream_sink; /* keeps stream_pass's sums alive */

/* A buffer of `bytes` for stream_pass, every page written once so that no pass
 * faults; NULL if it cannot be mapped. munmap frees it. */
static uint64_t *stream_new(size_t bytes)
{
    size_t n = bytes / sizeof(uint64_t);
    uint64_t *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return NULL;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        buf[i] = i;
    return buf;
}

/* One streaming sum over buf on `threads` threads: the read bandwidth, GB/s.
 * Reads run 8 KiB ahead with non-temporal prefetches, as the matvec kernels do
 * (hardware prefetchers stop at 4 KiB pages), so the figure is what a streaming reader
 * can reach. */
static double stream_pass(const uint64_t *buf, size_t bytes, int threads)
{
    size_t n = bytes / sizeof(uint64_t);
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    double t0 = now_s();
#pragma omp parallel for schedule(static) num_threads(threads) reduction(+ : s0, s1, s2, s3)
    for (size_t i = 0; i < n; i += 8) {
        __builtin_prefetch(buf + i + 8192 / sizeof(uint64_t), 0, 0);
        s0 += buf[i] + buf[i + 4];
        s1 += buf[i + 1] + buf[i + 5];
        s2 += buf[i + 2] + buf[i + 6];
        s3 += buf[i + 3] + buf[i + 7];
    }
    double t = now_s() - t0;
    stream_sink += s0 + s1 + s2 + s3;
    return bytes / t / 1e9;
}

/* Best of `reps` stream passes over a fresh buffer of `bytes` on `threads` threads. */
static double measure_bandwidth(size_t bytes, int reps, int threads)
{
    uint64_t *buf = stream_new(bytes);
    if (!buf)
        return 0.0;
    double best = 0.0;
    for (int rep = 0; rep < reps; rep++) {
        double bw = stream_pass(buf, bytes, threads);
        if (bw > best)
            best = bw;
    }
    munmap(buf, bytes);
    return best;
}

/* CPU seconds the machine spent busy, all CPUs, steal included (the hypervisor ran
 * something else), from /proc/stat; -1 if unknown. */
static double machine_busy_s(void)
{
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

/* Resident memory now, MB (0 if /proc is not there). */
static double rss_now_mb(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (double)sysconf(_SC_PAGESIZE) / 1e6; /* MB, as file_mb */
}

static uint64_t tensor_bytes(const tensor *t)
{
    if (t->type == TENSOR_F32)
        return (uint64_t)t->rows * t->stride * 4;
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

/* Decodes n tokens greedily from pos, starting with *tok and leaving the next token
 * there; returns the seconds taken, each token's in dt[0..n) when dt is not NULL. */
static double decode_window(transformer *t, int *tok, int pos, int n, double *dt)
{
    int vocab = transformer_model(t)->config.vocab_size;
    double t0 = now_s(), prev = t0;
    for (int i = 0; i < n; i++) {
        const float *logits = transformer_forward(t, *tok, pos + i, NULL);
        *tok = argmax(logits, vocab);
        double now = now_s();
        if (dt)
            dt[i] = now - prev;
        prev = now;
    }
    return prev - t0;
}

/* Tokens per decode window: at least steps / ROUNDS, so that the rounds cover the
 * positions one run of `steps` tokens from 0 would, and at least WINDOW_MIN_S
 * worth; fewer when ROUNDS windows would take more than DECODE_BUDGET_S (7B at
 * ~0.17 s a token: 7); never past the context. tok_s: one token's seconds. */
static int window_tokens(int steps, double tok_s, int ctx)
{
    if (tok_s < 1e-6)
        tok_s = 1e-6;
    int w = (steps + ROUNDS - 1) / ROUNDS;
    if (WINDOW_MIN_S / tok_s > w)
        w = (int)ceil(WINDOW_MIN_S / tok_s);
    if (ROUNDS * w * tok_s > DECODE_BUDGET_S)
        w = (int)(DECODE_BUDGET_S / (ROUNDS * tok_s));
    if (w > ctx - 1)
        w = ctx - 1;
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

/* The decode roofline, paired in time: ROUNDS times, a stream pass over the
 * buffer on `all` threads, then a window of w tokens, and one pass more at the
 * end. A round's ratio is its window's weight bytes per second over the mean
 * bandwidth of the passes just before and just after the window (single passes
 * are noisy: +-10% at 10 ms). Windows walk the positions [0, span) and start
 * again at 0 when the next would pass its end. */
static void decode_rounds(transformer *t, int tok, int w, int span, int all,
                          const uint64_t *sbuf, result *r)
{
    double ratio[ROUNDS], bw[ROUNDS + 1], win_s[ROUNDS];
    double *dt = malloc(sizeof(double) * ROUNDS * (size_t)w); /* (round, token) */
    double total = 0.0, t_start = now_s();
    int n = 0, pos = 0;
    bw[0] = stream_pass(sbuf, STREAM_BYTES, all);
    for (; n < ROUNDS; n++) {
        if (n >= 3 && now_s() - t_start > 2 * DECODE_BUDGET_S)
            break; /* the machine slowed down a lot: 3 rounds will do */
        if (pos + w > span)
            pos = 0;
        win_s[n] = decode_window(t, &tok, pos, w, dt ? dt + (size_t)n * w : NULL);
        bw[n + 1] = stream_pass(sbuf, STREAM_BYTES, all);
        pos += w;
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

/* --long: PAIRS times, a window of w tokens at position 100, then one at
 * position `far` (the KV cache holds whatever earlier windows left there; only
 * the time matters). Medians of each and of the per-pair far/near ratios. */
static void long_pairs(transformer *t, int tok, int w, int far, result *r)
{
    double near_ts[PAIRS], far_ts[PAIRS], ratio[PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        near_ts[i] = w / decode_window(t, &tok, 100, w, NULL);
        far_ts[i] = w / decode_window(t, &tok, far, w, NULL);
        ratio[i] = far_ts[i] / near_ts[i];
    }
    r->long_pairs = PAIRS;
    r->long_pos_near = 100;
    r->long_pos_far = far;
    r->long_tok_s_near = median(near_ts, PAIRS, NULL, NULL);
    r->long_tok_s_far = median(far_ts, PAIRS, NULL, NULL);
    r->long_ratio = median(ratio, PAIRS, NULL, NULL);
}

/* --scaling: PAIRS times, a window of w tokens from position 0 on one thread,
 * then the same window on r->threads, each after a stream pass on as many threads.
 * Medians of each and of the per-pair ratios. Decode is bound by memory, so its
 * speedup can be no larger than the stream's: where one core alone nearly fills the
 * memory bus, a second core cannot double decode, and stream_speedup shows it. */
static void scaling_pairs(transformer *t, int tok, int w, const uint64_t *sbuf, result *r)
{
    double one[PAIRS], many[PAIRS], ratio[PAIRS];
    double bw_one[PAIRS], bw_many[PAIRS], bw_ratio[PAIRS];
    for (int i = 0; i < PAIRS; i++) {
        int k = tok;
        set_threads(1);
        bw_one[i] = stream_pass(sbuf, STREAM_BYTES, 1);
        one[i] = w / decode_window(t, &k, 0, w, NULL);
        k = tok;
        set_threads(r->threads);
        bw_many[i] = stream_pass(sbuf, STREAM_BYTES, r->threads);
        many[i] = w / decode_window(t, &k, 0, w, NULL);
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

static void run_shape(const options *o, const shape *s, const char *path, result *r)
{
    memset(r, 0, sizeof *r);
    int all = 1; /* stream passes: OpenMP's default, whatever --threads says, as
                  * the roofline is against the machine's limit */
#ifdef _OPENMP
    all = omp_get_max_threads();
    if (o->threads > 0)
        omp_set_num_threads(o->threads);
    r->threads = omp_get_max_threads();
#else
    r->threads = 1;
#endif
    snprintf(r->kernel, sizeof r->kernel, "%s", kernels_isa_name(kernels_init(o->isa)));

    llm_err err;
    model *m = NULL;
    double t0 = now_s();
    if (model_open(path, NULL, &m, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.text);
        return;
    }
    r->load_s = now_s() - t0;
    transformer *t = NULL;
    if (transformer_new(m, 0, &t, &err) != LLM_OK) {
        snprintf(r->error, sizeof r->error, "%s", err.text);
        model_close(m);
        return;
    }
    const model_config *c = &m->config;
    r->group = m->group;
    r->file_mb = m->file_bytes / 1e6;
    r->kv_mb = transformer_kv_bytes(t) / 1e6;
    snprintf(r->kv_cache, sizeof r->kv_cache, "%s",
             transformer_kv_type(t) == TRANSFORMER_KV_F32 ? "f32" : "q8_0");
    r->weight_bytes_per_token = decode_bytes(m);
    int ctx = transformer_ctx(t);

    int tokens[MAX_PROMPT];
    uint64_t rng = 12345;
    int n = o->prompt < ctx - 1 ? o->prompt : ctx - 1;
    for (int i = 0; i < n; i++)
        tokens[i] = 3 + (int)(rng_next(&rng) % (uint64_t)(c->vocab_size - 3));

    /* warm up: touch every weight page and the buffers once */
    int tok = tokens[0];
    transformer_forward_batch(t, tokens, n < 8 ? n : 8, 0, NULL, NULL);
    decode_window(t, &tok, 8, 2, NULL);

    /* prefill (best of two unless slow), then the first decoded token */
    cpu_mark timed = cpu_now();
    double best = 1e30;
    for (int rep = 0; rep < 2; rep++) {
        double p0 = now_s();
        transformer_forward_batch(t, tokens, n, 0, NULL, NULL);
        double dt = now_s() - p0;
        if (dt < best)
            best = dt;
        if (dt > 5.0)
            break;
    }
    tok = tokens[n - 1];
    double first = decode_window(t, &tok, n, 1, NULL);
    r->prefill_tokens = n;
    r->prefill_tok_s = n / best;
    r->ttft_s = best + first;

    /* peak resident memory before the stream buffer is mapped; pages first touched
     * later (KV rows past the prompt, --long's far windows) stay resident and are
     * counted at the end */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r->peak_rss_mb = ru.ru_maxrss * 1024.0 / 1e6; /* ru_maxrss is in KiB */

    /* decode from position 0, as llama-bench's "tg" test does, in windows paired
     * with stream passes (--long shows the speed deeper in the context) */
    int steps = o->steps < ctx - 1 ? o->steps : ctx - 1;
    int w = window_tokens(steps, first, ctx);
    int span = steps > w ? steps : w;
    r->decode_pos = 0;
    uint64_t *sbuf = stream_new(STREAM_BYTES);
    if (!sbuf) {
        snprintf(r->error, sizeof r->error, "cannot map %zu MiB for the bandwidth passes",
                 STREAM_BYTES >> 20);
        transformer_free(t);
        model_close(m);
        return;
    }
    decode_rounds(t, tok, w, span, all, sbuf, r);

    if (o->long_ctx && ctx - w > 400)
        long_pairs(t, tok, w, ctx - w < 4000 ? ctx - w : 4000, r);
    if (o->scaling)
        scaling_pairs(t, tok, w, sbuf, r);
    munmap(sbuf, STREAM_BYTES);

    r->cpu_others = cpu_others(timed);

    /* pages touched since the snapshot, the stream buffer unmapped */
    double rss = rss_now_mb();
    if (rss > r->peak_rss_mb)
        r->peak_rss_mb = rss;
    r->ok = 1;
    transformer_free(t);
    model_close(m);
}

/* Runs fn in a child process; the child writes `size` bytes of result to a pipe. */
static int in_child(void (*fn)(const options *, const shape *, const char *, void *),
                    const options *o, const shape *s, const char *path, void *out, size_t size)
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
        fn(o, s, path, buf);
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

static void child_shape(const options *o, const shape *s, const char *path, void *out)
{
    run_shape(o, s, path, out);
}

static void child_bandwidth(const options *o, const shape *s, const char *path, void *out)
{
    /* OpenMP's default thread count, whatever --threads says, as in the rounds */
    int all = 1;
#ifdef _OPENMP
    all = omp_get_max_threads();
#endif
    *(double *)out = measure_bandwidth((size_t)1 << 30, 8, all);
}

/* ---------------------------------------------------------------- TUI column */

/* The TUI's decode speed as a fraction of generate mode's, both through the real
 * program on the same model, prompt and step count: generate's own summary line
 * against the TUI's LLMCHAT_TUI_STATS line (reply tokens over reply wall time, which
 * includes drawing and key polling), the TUI running in a private tmux server. The
 * two runs alternate TUI_PAIRS times and the medians are reported (of the per-pair
 * ratios, and of each speed): one pair alone moves with the machine's bandwidth by
 * ±20%. */
enum { TUI_PAIRS = 3 };

typedef struct {
    double fraction;    /* < 0: not measured (why says why) */
    double gen_tok_s, tui_tok_s, ui_fraction;
    int pairs;          /* pairs measured */
    char why[160];
} tui_result;

/* Appends s to buf single-quoted for sh. */
static void shell_quote(char *buf, size_t size, const char *s)
{
    size_t n = strlen(buf);
    if (n + 1 < size)
        buf[n++] = '\'';
    for (; *s && n + 5 < size; s++) {
        if (*s == '\'') {
            memcpy(buf + n, "'\\''", 4);
            n += 4;
        } else {
            buf[n++] = *s;
        }
    }
    if (n + 1 < size)
        buf[n++] = '\'';
    buf[n] = '\0';
}

static void append(char *buf, size_t size, const char *s)
{
    size_t n = strlen(buf);
    snprintf(buf + n, size - n, "%s", s);
}

/* The llmchat command line shared by both runs (mode appended by the caller). */
static void llmchat_args(char *cmd, size_t size, const options *o, const char *model_path)
{
    char num[64];
    shell_quote(cmd, size, o->llmchat);
    snprintf(num, sizeof num, " -t 0 -s 1 -n %d", o->steps);
    append(cmd, size, num);
    if (o->threads > 0) {
        snprintf(num, sizeof num, " -T %d", o->threads);
        append(cmd, size, num);
    }
    append(cmd, size, " -z ");
    shell_quote(cmd, size, o->tokenizer);
    append(cmd, size, " -i 'Once upon a time' ");
    shell_quote(cmd, size, model_path);
}

static bool file_line_scan(const char *path, const char *key, char *line, size_t size)
{
    FILE *f = fopen(path, "r");
    bool found = false;
    if (!f)
        return false;
    while (!found && fgets(line, (int)size, f))
        found = strstr(line, key) != NULL;
    fclose(f);
    return found;
}

static bool tmux_pane_has(const char *server, const char *a, const char *b)
{
    char cmd[256], buf[4096];
    snprintf(cmd, sizeof cmd, "tmux -L %s capture-pane -p -t 0 2>/dev/null", server);
    FILE *p = popen(cmd, "r");
    bool has_a = false, has_b = false;
    if (!p)
        return false;
    while (fgets(buf, sizeof buf, p)) {
        has_a = has_a || strstr(buf, a);
        has_b = has_b || strstr(buf, b);
    }
    pclose(p);
    return has_a && has_b;
}

static void measure_tui_once(const options *o, const char *model_path, tui_result *r)
{
    memset(r, 0, sizeof *r);
    r->fraction = -1.0;
    if (system("tmux -V >/dev/null 2>&1") != 0) {
        snprintf(r->why, sizeof r->why, "tmux not found");
        return;
    }
    if (!o->tokenizer) {
        snprintf(r->why, sizeof r->why, "no 32000-token tokenizer.bin (--tokenizer FILE)");
        return;
    }
    char dir[] = "/tmp/llmchat-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        snprintf(r->why, sizeof r->why, "no temporary directory");
        return;
    }
    char gen_err[64], stats[64], script[64], server[64], cmd[8192], line[1024];
    snprintf(gen_err, sizeof gen_err, "%s/generate.err", dir);
    snprintf(stats, sizeof stats, "%s/tui.stats", dir);
    snprintf(script, sizeof script, "%s/tui.sh", dir);
    snprintf(server, sizeof server, "llmchat-bench-%d", (int)getpid());

    /* generate mode */
    cmd[0] = '\0';
    llmchat_args(cmd, sizeof cmd, o, model_path);
    append(cmd, sizeof cmd, " -m generate >/dev/null 2>");
    append(cmd, sizeof cmd, gen_err);
    int gen_tokens = 0;
    if (system(cmd) != 0 || !file_line_scan(gen_err, "generated:", line, sizeof line) ||
        sscanf(strstr(line, "generated:"), "generated: %d tok, %lf tok/s", &gen_tokens,
               &r->gen_tok_s) != 2 || r->gen_tok_s <= 0) {
        snprintf(r->why, sizeof r->why, "generate mode failed (see %s)", gen_err);
        return;
    }

    /* the TUI, in a private tmux server, wide enough for the full status line */
    FILE *f = fopen(script, "w");
    if (!f) {
        snprintf(r->why, sizeof r->why, "cannot write %s", script);
        return;
    }
    cmd[0] = '\0';
    llmchat_args(cmd, sizeof cmd, o, model_path);
    fprintf(f, "TERM=xterm-256color LLMCHAT_TUI_STATS='%s' exec %s -m tui\n", stats, cmd);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "tmux -L %s -f /dev/null new-session -d -x 250 -y 50 'sh %s' >/dev/null 2>&1",
             server, script);
    bool done = false;
    if (system(cmd) == 0) {
        /* Each look at the pane runs sh and a tmux client, a few milliseconds of CPU:
         * on two cores, looking every 100 ms while the reply ran cost the TUI's
         * decoding threads their cores. So wait out most of the reply first (generate
         * mode's time, plus a second to start), then look every 250 ms. */
        double t0 = now_s();
        usleep((useconds_t)((0.9 * o->steps / r->gen_tok_s + 1.0) * 1e6));
        while (now_s() - t0 < 300.0 && !(done = tmux_pane_has(server, " idle ", "| reply ")))
            usleep(250 * 1000);
        snprintf(cmd, sizeof cmd,
                 "tmux -L %s send-keys -t 0 -l /quit >/dev/null 2>&1; "
                 "tmux -L %s send-keys -t 0 Enter >/dev/null 2>&1", server, server);
        if (system(cmd) != 0)
            done = false;
        snprintf(cmd, sizeof cmd, "tmux -L %s has-session >/dev/null 2>&1", server);
        for (int i = 0; i < 100 && system(cmd) == 0; i++)
            usleep(100 * 1000);
    }
    snprintf(cmd, sizeof cmd, "tmux -L %s kill-server >/dev/null 2>&1", server);
    if (system(cmd) != 0) {
        /* already gone: the usual case */
    }
    long long tokens = 0;
    double reply_ms = 0, tok_s = 0;
    const char *p = file_line_scan(stats, "tui stats:", line, sizeof line) ? strstr(line, "tokens") : NULL;
    if (!done || !p || sscanf(p, "tokens %lld, reply %lf ms (%lf tok/s)", &tokens, &reply_ms, &tok_s) != 3 ||
        tokens <= 0 || reply_ms <= 0) {
        snprintf(r->why, sizeof r->why, "the TUI run did not finish or report (see %s)", stats);
        return;
    }
    const char *u = strstr(line, "ui_fraction");
    if (u)
        sscanf(u, "ui_fraction %lf", &r->ui_fraction);
    r->tui_tok_s = tokens * 1000.0 / reply_ms;
    r->fraction = r->tui_tok_s / r->gen_tok_s;
    unlink(gen_err);
    unlink(stats);
    unlink(script);
    rmdir(dir);
}

static void measure_tui(const options *o, const char *model_path, tui_result *r)
{
    double fraction[TUI_PAIRS], gen[TUI_PAIRS], tui[TUI_PAIRS], ui[TUI_PAIRS];
    for (int i = 0; i < TUI_PAIRS; i++) {
        measure_tui_once(o, model_path, r);
        if (r->fraction < 0)
            return; /* r->why says why */
        fraction[i] = r->fraction;
        gen[i] = r->gen_tok_s;
        tui[i] = r->tui_tok_s;
        ui[i] = r->ui_fraction;
    }
    r->fraction = median(fraction, TUI_PAIRS, NULL, NULL);
    r->gen_tok_s = median(gen, TUI_PAIRS, NULL, NULL);
    r->tui_tok_s = median(tui, TUI_PAIRS, NULL, NULL);
    r->ui_fraction = median(ui, TUI_PAIRS, NULL, NULL);
    r->pairs = TUI_PAIRS;
}

/* ---------------------------------------------------------------- output */

static void print_json(const shape *s, const result *r, const tui_result *tr, double bw_start)
{
    if (!r->ok) {
        printf("{\"shape\":\"%s\",\"error\":\"", s->name);
        for (const char *p = r->error; *p; p++)
            if (*p == '"' || *p == '\\')
                printf("\\%c", *p);
            else if ((unsigned char)*p >= 0x20)
                putchar(*p);
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
           "\"cpu_others\":%.3f",
           s->name, r->kernel, r->threads, r->group, r->prefill_tokens, r->prefill_tok_s,
           r->decode_steps, r->decode_pos, r->decode_tok_s, r->bandwidth_gb_s,
           r->weight_bytes_per_token, r->decode_roofline, r->ttft_s, r->peak_rss_mb, r->file_mb,
           r->kv_cache, r->kv_mb, r->load_s, r->decode_peak_tok_s,
           r->weight_bytes_per_token * r->decode_peak_tok_s / (r->bandwidth_gb_s * 1e9),
           r->decode_rounds, r->decode_window, r->decode_roofline_min, r->decode_roofline_max,
           r->bandwidth_min_gb_s, r->bandwidth_max_gb_s, bw_start, r->cpu_others);
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
    if (tr->fraction >= 0)
        printf(",\"tui_decode_fraction\":%.3f,\"tui_tok_s\":%.1f,\"generate_tok_s\":%.1f,"
               "\"tui_ui_fraction\":%.4f,\"tui_pairs\":%d}\n", tr->fraction, tr->tui_tok_s,
               tr->gen_tok_s, tr->ui_fraction, tr->pairs);
    else
        printf(",\"tui_decode_fraction\":null,\"tui_note\":\"%s\"}\n", tr->why);
}

static void print_row(const shape *s, const result *r, const tui_result *tr)
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
           "bandwidth %.1f .. %.1f GB/s\n", 100 * r->decode_roofline_min, 100 * r->decode_roofline_max, r->decode_rounds,
           r->decode_window, r->bandwidth_min_gb_s, r->bandwidth_max_gb_s);
    if (r->long_pairs > 0)
        printf("       decode at pos %.0f: %.2f tok/s, at pos %.0f: %.2f tok/s, far/near %.3f"
               " (medians of %d pairs)\n", r->long_pos_near, r->long_tok_s_near, r->long_pos_far,
               r->long_tok_s_far, r->long_ratio, r->long_pairs);
    if (r->scaling_pairs > 0)
        printf("       decode on 1 thread: %.2f tok/s, on %d: %.2f tok/s, speedup %.3f;"
               " read bandwidth %.1f GB/s, %.1f GB/s, speedup %.3f (medians of %d pairs)\n",
               r->decode_tok_s_1t, r->threads, r->decode_tok_s_nt, r->thread_speedup,
               r->stream_gb_s_1t, r->stream_gb_s_nt, r->stream_speedup, r->scaling_pairs);
    if (r->cpu_others > CPU_OTHERS_WARN)
        printf("       warning: other processes took %.0f%% of the CPUs meanwhile: the figures "
               "above are not this program's alone\n", 100 * r->cpu_others);
}

/* ---------------------------------------------------------------- options */

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: llmchat-bench [OPTIONS]\n"
            "Speed of llmchat's core on random-weight int8 models of real shapes.\n\n"
            "  -s, --shape NAME    15M, 42M, 110M, 1B, 7B (repeatable or a comma list;\n"
            "                      default 15M,110M)\n"
            "  -T, --threads N     OpenMP threads (default: all cores)\n"
            "  -n, --steps N       decode tokens from position 0, split into 8 windows (default\n"
            "                      128; windows are lengthened to last >= 50 ms and shortened\n"
            "                      so that all 8 take about 10 s)\n"
            "  -p, --prompt N      prefill tokens (default 512, capped by the context)\n"
            "  -c, --cache DIR     model files (default $XDG_CACHE_HOME/llmchat-bench)\n"
            "      --long          also decode at position 100 and at 4000 (or the end of\n"
            "                      the context, if shorter): 5 near/far window pairs\n"
            "      --scaling       also decode on 1 thread and on all: 5 window pairs\n"
            "      --kernels NAME  force the kernels: auto, scalar, avx2, avx512 (default: auto,\n"
            "                      the best the CPU has; --isa is a synonym)\n"
            "      --json          one JSON object per shape instead of a table\n"
            "      --llmchat PATH  the llmchat program: measure the TUI's decode speed as a\n"
            "                      fraction of generate mode's (needs tmux)\n"
            "      --tokenizer F   a 32000-token tokenizer.bin for those runs (default: the\n"
            "                      cache dir's, then $LLMCHAT_SHARED/models, ../shared/models)\n"
            "  -h, --help\n\n"
            "Memory bandwidth may change by 2x within minutes, so speed is compared with it in\n"
            "pairs close in time. The decode runs in 8 windows, each between two streaming\n"
            "reads of a 512 MiB buffer on all cores; a window's roofline = weight bytes read\n"
            "per token x its tok/s / the mean bandwidth of the reads before and after it.\n"
            "decode roofline and bw are medians over windows and reads (JSON: decode_roofline,\n"
            "bandwidth_gb_s; _min/_max the extremes); decode tok/s is all window tokens over\n"
            "all window time. --long gives long_ratio, the median far/near tok/s over\n"
            "pairs; --scaling thread_speedup, the median all/1-thread tok/s over pairs, and\n"
            "stream_speedup, the same ratio for a streaming read (decode cannot scale better). The\n"
            "bandwidth measured once at the start (1 GiB, best of 8) is bandwidth_start_gb_s.\n"
            "Pairing cannot undo other programs competing for the cores: cpu_others is their\n"
            "share of the CPUs while a shape was timed (the table warns above 10%%).\n"
            "JSON adds decode_peak_tok_s, the best 16 consecutive tokens. Files are written\n"
            "once (7B: about 7 GB) and reused.\n");
}

static int parse_int(const char *s, const char *what, int lo)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > 1000000) {
        fprintf(stderr, "llmchat-bench: %s must be an integer >= %d, not '%s'\n", what, lo, s);
        exit(2);
    }
    return (int)v;
}

static kernels_isa parse_isa(const char *name)
{
    kernels_isa isa;
    if (!kernels_isa_parse(name, &isa)) {
        fprintf(stderr, "llmchat-bench: unknown kernel set '%s' (auto, scalar, avx2, avx512)\n",
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
        while (i < N_SHAPES && strcasecmp(shapes[i].name, tok) != 0)
            i++;
        if (i == N_SHAPES) {
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

int main(int argc, char **argv)
{
    options o = {.steps = 128, .prompt = MAX_PROMPT};
    bool want[N_SHAPES] = {false};
    bool any = false;
    enum { OPT_JSON = 256, OPT_LONG, OPT_LLMCHAT, OPT_ISA, OPT_TOKENIZER, OPT_SCALING };
    static const struct option longopts[] = {
        {"shape", required_argument, NULL, 's'},   {"threads", required_argument, NULL, 'T'},
        {"steps", required_argument, NULL, 'n'},   {"prompt", required_argument, NULL, 'p'},
        {"cache", required_argument, NULL, 'c'},   {"json", no_argument, NULL, OPT_JSON},
        {"long", no_argument, NULL, OPT_LONG},     {"llmchat", required_argument, NULL, OPT_LLMCHAT},
        {"kernels", required_argument, NULL, OPT_ISA}, {"isa", required_argument, NULL, OPT_ISA},
        {"tokenizer", required_argument, NULL, OPT_TOKENIZER},
        {"scaling", no_argument, NULL, OPT_SCALING},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "s:T:n:p:c:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': add_shapes(optarg, want); any = true; break;
        case 'T': o.threads = parse_int(optarg, "--threads", 1); break;
        case 'n': o.steps = parse_int(optarg, "--steps", 1); break;
        case 'p': o.prompt = parse_int(optarg, "--prompt", 1); break;
        case 'c': o.cache = optarg; break;
        case OPT_JSON: o.json = true; break;
        case OPT_LONG: o.long_ctx = true; break;
        case OPT_SCALING: o.scaling = true; break;
        case OPT_LLMCHAT: o.llmchat = optarg; break;
        case OPT_ISA: o.isa = parse_isa(optarg); break;
        case OPT_TOKENIZER: o.tokenizer = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "llmchat-bench: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (o.prompt > MAX_PROMPT)
        o.prompt = MAX_PROMPT;
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
        const char *shared = getenv("LLMCHAT_SHARED");
        const char *cands[3][2] = {{o.cache, "tokenizer.bin"},
                                   {shared && *shared ? shared : NULL, "models/tokenizer.bin"},
                                   {"../shared", "models/tokenizer.bin"}};
        for (int i = 0; i < 3 && !o.tokenizer; i++) {
            if (!cands[i][0])
                continue;
            snprintf(tok_path, sizeof tok_path, "%s/%s", cands[i][0], cands[i][1]);
            if (access(tok_path, R_OK) == 0)
                o.tokenizer = tok_path;
        }
    }

    static char paths[N_SHAPES][4096];
    for (int i = 0; i < N_SHAPES; i++)
        if (want[i])
            ensure_model(&o, &shapes[i], paths[i], sizeof paths[i]);

    double bw = 0.0;
    if (in_child(child_bandwidth, &o, NULL, NULL, &bw, sizeof bw) != 0 || bw <= 0.0)
        die("%s", "measuring the bandwidth failed");

    bool header = false;
    int failures = 0;
    for (int i = 0; i < N_SHAPES; i++) {
        if (!want[i])
            continue;
        result r;
        if (in_child(child_shape, &o, &shapes[i], paths[i], &r, sizeof r) != 0) {
            memset(&r, 0, sizeof r);
            snprintf(r.error, sizeof r.error, "the measuring process died (out of memory?)");
        }
        failures += !r.ok;
        tui_result tr = {.fraction = -1.0};
        if (!o.llmchat)
            snprintf(tr.why, sizeof tr.why, "not measured: give --llmchat PATH");
        else if (r.ok)
            measure_tui(&o, paths[i], &tr);
        if (o.json) {
            print_json(&shapes[i], &r, &tr, bw);
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
            print_row(&shapes[i], &r, &tr);
            if (o.llmchat && tr.fraction < 0)
                printf("       TUI column: %s\n", tr.why);
        }
        fflush(stdout);
    }
    return failures ? 1 : 0;
}
