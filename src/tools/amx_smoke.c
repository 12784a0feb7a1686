/* amx_smoke.c — amx-smoke (`make smoke-amx`): the first run of the AMX kernels on a
 * machine, in seconds. Prints what CPUID, XCR0 and Linux's arch_prctl say about AMX;
 * then runs the AMX table's prefill GEMM (kernels_gemm) against the plain-C GEMM's bits
 * (Q8_0) and the AVX-512 VNNI table's (Q8_0_BLOCKS, Q4_K, Q6_K), on one thread and on
 * every CPU, a line PASS or FAIL each with the first value that differs; a tile
 * instruction the CPU refuses (SIGILL, SIGSEGV) is named with the stage that ran it.
 * Then, unless --no-bench, one thread's and every thread's GEMM time on the 1B and 7B
 * matrix shapes (512 vectors), avx512-vnni beside avx512-amx, the best of 3 each.
 * Exit status: 0 every check passed, 1 a check failed, 2 no AMX here (or in the build),
 * 3 a tile instruction faulted. Usage: amx-smoke [--no-bench]. */
#include "config.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "ggml_type.h"
#include "kernels.h"
#include "quant.h"
#include "x86-amx.h"

static uint64_t rng = 0x853c49e6748fea9bull;

static uint32_t rng_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static float rng_f(void)
{
    return (float)(rng_u32() % 2000001) / 1000000.0f - 1.0f;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* What runs now, for the fault handler. */
static const char *volatile stage = "start";

/* The kernels' scratch of every GEMM here (made in main). */
static kernels_workspace *work;

static void say(const char *s)
{
    ssize_t r = write(STDERR_FILENO, s, strlen(s));
    (void)r;
}

static void on_fault(int sig)
{
    say(sig == SIGILL ? "\namx-smoke: SIGILL" : sig == SIGSEGV ? "\namx-smoke: SIGSEGV"
                                                               : "\namx-smoke: SIGBUS");
    say(" during: ");
    say(stage);
    say("\n");
    if (sig == SIGILL)
        say("  SIGILL from a tile instruction: #UD (a tile used before LDTILECFG, or with\n"
            "  rows/columns its configuration does not allow), or Linux refusing the tile\n"
            "  data (ARCH_REQ_XCOMP_PERM not granted; see the probe line above).\n");
    else
        say("  SIGSEGV/SIGBUS: LDTILECFG raises #GP for a configuration the CPU rejects\n"
            "  (palette, reserved bytes, rows > 16, colsb > 64); or a tile load or store\n"
            "  went past its buffer.\n");
    _exit(3);
}

/* Every result a float's bits equal: "" or the first difference. */
static const char *first_difference(const float *got, const float *want, int n, int rows,
                                    char *buf, size_t size)
{
    for (size_t o = 0; o < (size_t)n * rows; o++)
        if (memcmp(&got[o], &want[o], sizeof(float)) != 0) {
            snprintf(buf, size, "out[%zu] (vector %zu, row %zu) = %.9g, want %.9g", o,
                     o / rows, o % rows, got[o], want[o]);
            return buf;
        }
    return "";
}

/* A random tensor: Q8_0 (group), Q8_0_BLOCKS or the ggml block type `btype`; data in
 * *mem (freed by the caller), scales about 2^-8. */
static tensor make_tensor(tensor_type type, int btype, int rows, int cols, int group,
                          void **mem, void **mem2)
{
    tensor t = {.type = type, .rows = rows, .cols = cols, .stride = cols, .group = 32};
    if (type == TENSOR_Q8_0) {
        int8_t *q = malloc((size_t)rows * cols);
        float *s = malloc(sizeof(float) * (size_t)rows * (cols / group));
        for (size_t i = 0; i < (size_t)rows * cols; i++)
            q[i] = (int8_t)((int)(rng_u32() % 255) - 127);
        for (size_t i = 0; i < (size_t)rows * (cols / group); i++)
            s[i] = ldexpf(1.0f + 0.5f * rng_f(), -8);
        t.group = group;
        t.q = q;
        t.scale = s;
        *mem = q;
        *mem2 = s;
        return t;
    }
    const ggml_type_info *info = ggml_type_get(type == TENSOR_BLOCKS ? (ggml_type)btype
                                                                     : GGML_TYPE_Q8_0);
    size_t row_bytes = (size_t)cols / info->block * info->bytes;
    uint8_t *b = malloc(row_bytes * rows);
    for (size_t i = 0; i < row_bytes * rows; i++)
        b[i] = (uint8_t)rng_u32();
    int at[2] = {btype == GGML_TYPE_Q6_K ? 208 : 0, btype == GGML_TYPE_Q4_K ? 2 : -1};
    for (size_t blk = 0; blk < row_bytes * rows / info->bytes; blk++)
        for (int h = 0; h < 2; h++)
            if (at[h] >= 0) {
                uint16_t v = ggml_f32_to_fp16(ldexpf(1.0f + 0.5f * rng_f(), -8));
                memcpy(b + blk * info->bytes + at[h], &v, 2);
            }
    t.blocks = b;
    t.btype = btype;
    t.row_bytes = row_bytes;
    *mem = b;
    *mem2 = NULL;
    return t;
}

static const char *type_name(const tensor *t)
{
    return t->type == TENSOR_Q8_0          ? "Q8_0"
           : t->type == TENSOR_Q8_0_BLOCKS ? "Q8_0_BLOCKS"
                                           : ggml_type_name((ggml_type)t->btype);
}

/* One check: w times n random vectors on `threads` threads; AMX against the scalar
 * table (Q8_0) or the AVX-512 table. Returns true on PASS. */
static bool check(const tensor *w, int n, int threads)
{
    float *x = malloc(sizeof(float) * (size_t)n * w->cols);
    for (size_t i = 0; i < (size_t)n * w->cols; i++)
        x[i] = 2.0f * rng_f();
    qbatch *xq = qbatch_new(n, w->cols, w->group);
    qbatch_quantize(xq, x, n);
    size_t outs = (size_t)n * w->rows;
    float *got = malloc(sizeof(float) * outs), *want = malloc(sizeof(float) * outs);
    kernels_isa ref = w->type == TENSOR_Q8_0 ? KERNELS_SCALAR : KERNELS_AVX512;
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    char label[128], diff[160];
    snprintf(label, sizeof label, "%s %dx%d group %d, %d vectors, %d thread%s", type_name(w),
             w->rows, w->cols, w->group, n, threads, threads == 1 ? "" : "s");
    kernels_init(ref);
    stage = "the reference GEMM";
    bool ok = kernels_gemm(work, want, w, NULL, xq, n);
    kernels_init(KERNELS_AMX);
    for (size_t i = 0; i < outs; i++)
        got[i] = NAN;
    stage = label;
    ok = kernels_gemm(work, got, w, NULL, xq, n) && ok;
    stage = "between checks";
    const char *d = ok ? first_difference(got, want, n, w->rows, diff, sizeof diff)
                       : "out of memory for the kernels' scratch";
    printf("%s  %s (against %s)%s%s\n", *d ? "FAIL" : "PASS", label, kernels_isa_name(ref),
           *d ? ": " : "", d);
    fflush(stdout);
    free(x);
    free(got);
    free(want);
    qbatch_free(xq);
    return !*d;
}

/* Best of 3 of kernels_gemm(w, n vectors) on kernels `isa`, in seconds. */
static double time_gemm(kernels_isa isa, const tensor *w, const qbatch *xq, float *out, int n)
{
    kernels_init(isa);
    double best = INFINITY;
    for (int i = 0; i < 4; i++) { /* the first run warms up */
        double t0 = now_s();
        kernels_gemm(work, out, w, NULL, xq, n);
        double t = now_s() - t0;
        if (i && t < best)
            best = t;
    }
    return best;
}

static void bench(int threads)
{
    static const struct {
        const char *what;
        int rows, cols, btype; /* btype < 0: Q8_0 */
    } shapes[] = {
        {"1B attn 2048x2048", 2048, 2048, -1}, {"1B ffn up 5632x2048", 5632, 2048, -1},
        {"1B ffn down 2048x5632", 2048, 5632, -1}, {"7B attn 4096x4096", 4096, 4096, -1},
        {"7B ffn up 11008x4096", 11008, 4096, -1}, {"1B ffn up, Q4_K", 5632, 2048, GGML_TYPE_Q4_K},
        {"7B attn, Q6_K", 4096, 4096, GGML_TYPE_Q6_K},
    };
    const int n = 512;
    printf("\nGEMM of %d vectors, best of 3 (ms; GMAC/s), avx512-vnni | avx512-amx | ratio:\n", n);
    for (int tn = 0; tn < 2; tn++) {
        int nt = tn ? threads : 1;
        if (tn && threads == 1)
            break;
#ifdef _OPENMP
        omp_set_num_threads(nt);
#endif
        printf("%d thread%s\n", nt, nt == 1 ? "" : "s");
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            void *m1, *m2;
            tensor w = make_tensor(shapes[s].btype < 0 ? TENSOR_Q8_0 : TENSOR_BLOCKS,
                                   shapes[s].btype, shapes[s].rows, shapes[s].cols, 32, &m1, &m2);
            float *x = malloc(sizeof(float) * (size_t)n * w.cols);
            for (size_t i = 0; i < (size_t)n * w.cols; i++)
                x[i] = rng_f();
            qbatch *xq = qbatch_new(n, w.cols, 32);
            qbatch_quantize(xq, x, n);
            float *out = malloc(sizeof(float) * (size_t)n * w.rows);
            stage = "the benchmark";
            double a = time_gemm(KERNELS_AVX512, &w, xq, out, n);
            double b = time_gemm(KERNELS_AMX, &w, xq, out, n);
            double macs = (double)n * w.rows * w.cols * 1e-9;
            printf("  %-24s %8.2f ms %6.1f | %8.2f ms %6.1f | %5.2fx\n", shapes[s].what,
                   a * 1e3, macs / a, b * 1e3, macs / b, a / b);
            fflush(stdout);
            free(x);
            free(out);
            qbatch_free(xq);
            free(m1);
            free(m2);
        }
    }
}

int main(int argc, char **argv)
{
    bool no_bench = argc > 1 && strcmp(argv[1], "--no-bench") == 0;
    if (argc > 2 || (argc == 2 && !no_bench)) {
        fprintf(stderr, "usage: amx-smoke [--no-bench]\n");
        return 2;
    }
    char why[400];
    kernels_amx_describe(why, sizeof why);
    printf("amx-smoke: %s\n", why);
    if (!kernels_isa_supported(KERNELS_AMX)) {
        printf("amx-smoke: the avx512-amx kernels cannot run here%s\n",
#ifdef HAVE_KERNELS_AMX
               " (see above)"
#else
               ": this build has no AMX table (configure found no assembler for the tile "
               "instructions)"
#endif
        );
        return 2;
    }
    work = kernels_workspace_new();
    if (!work) {
        fprintf(stderr, "amx-smoke: out of memory\n");
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_fault};
    sigaction(SIGILL, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_num_procs();
#endif
    static const struct {
        tensor_type type;
        int btype, rows, cols, group, n;
    } cases[] = {
        {TENSOR_Q8_0, 0, 16, 256, 32, 16},          {TENSOR_Q8_0, 0, 61, 288, 32, 33},
        {TENSOR_Q8_0, 0, 37, 768, 64, 70},          {TENSOR_Q8_0, 0, 9, 320, 160, 17},
        {TENSOR_Q8_0, 0, 760, 4096, 32, 150},       {TENSOR_Q8_0, 0, 2048, 2048, 32, 64},
        {TENSOR_Q8_0_BLOCKS, 0, 40, 2048, 32, 33},  {TENSOR_BLOCKS, GGML_TYPE_Q4_K, 40, 2048, 32, 70},
        {TENSOR_BLOCKS, GGML_TYPE_Q6_K, 17, 512, 32, 17},
    };
    int failed = 0, total = 0;
    for (int tn = 0; tn < 2; tn++) {
        if (tn && threads == 1)
            break;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            void *m1, *m2;
            tensor w = make_tensor(cases[c].type, cases[c].btype, cases[c].rows, cases[c].cols,
                                   cases[c].group, &m1, &m2);
            failed += !check(&w, cases[c].n, tn ? threads : 1);
            total++;
            free(m1);
            free(m2);
        }
    }
    printf("amx-smoke: %s: %d of %d checks passed\n", failed ? "FAIL" : "PASS", total - failed,
           total);
    if (!failed && !no_bench)
        bench(threads);
    kernels_workspace_free(work);
    return failed ? 1 : 0;
}
