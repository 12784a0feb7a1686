/* block_dots.c — bench-block-dots (`make bench-kernels`): how long one thread takes for
 * the decode product (kernels_matvec, one vector) of Q8_0 and each K/legacy block type used in place,
 * on every instruction set this build and CPU have: ns per 256 values and GB/s of weights
 * read, with the rows in cache (512 KiB of rows, repeated: in L2 on most CPUs) and
 * streamed from memory (256 MiB of rows, once a pass); Q8_0 and Q4_K also from their
 * decode panels where the table reads them ("Q8_0p", "Q4_Kp", GB/s counting the blocks'
 * bytes). Rows of 2048 values of random blocks with small finite scales; the
 * best of 5 passes. A developers' tool: kernel-alone figures in docs/results/ come from
 * it. Usage: bench-block-dots [COLS [NAME ...]]: COLS a multiple of 256 (default 2048);
 * each NAME an instruction set (--kernels' names) or a type (Q4_K, ...) to time alone,
 * every set and every type when none of either is named, or vN: the product of N
 * vectors at once (kernels_matmul, 2 <= N <= 8: a check of speculative decoding's
 * guesses), its time still given per 256 weight values, so that it reads against the
 * one-vector figure as what the check costs in decoded tokens; or tN: each product on N
 * threads (the rows split as decode splits them; the time is the product's wall time,
 * so that two threads streaming side by side show what memory gives them). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "ggml_type.h"
#include "kernels.h"
#include "quant.h"
#include "random_blocks.h"
#include "stats.h"

static const ggml_type types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0,
                                  GGML_TYPE_Q5_1, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K,
                                  GGML_TYPE_Q6_K, GGML_TYPE_MXFP4};

/* The kernels' scratch of every product here (made in main). */
static kernels_workspace *work;

/* The vectors of each product (vN; 1: kernels_matvec). */
static int vectors = 1;

/* The threads each product is split over (tN; the rows shared as decode shares them). */
static int threads = 1;

/* Best seconds of 5 passes of `reps` products over w. */
static double best_of_5(const tensor *w, const qbatch *xq, float *out, int reps)
{
    double best = INFINITY;
    for (int pass = 0; pass < 5; pass++) {
        double t0 = stats_now_s();
        for (int r = 0; r < reps; r++)
            if (vectors == 1)
                kernels_matvec(work, out, w, NULL, xq);
            else
                kernels_matmul(work, out, w, NULL, xq, vectors);
        double dt = stats_now_s() - t0;
        if (dt < best)
            best = dt;
    }
    return best;
}

static void time_type(ggml_type type, int cols, const qbatch *xq)
{
    static const struct {
        const char *where;
        size_t bytes;
        int reps;
    } runs[] = {{"cache", (size_t)512 << 10, 500}, {"memory", (size_t)256 << 20, 1}};
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        size_t row_bytes = (size_t)cols / ggml_type_get(type)->block * ggml_type_get(type)->bytes;
        int rows = (int)(runs[k].bytes / row_bytes);
        uint8_t *data = random_rows(type, rows, cols, &row_bytes);
        float *out = malloc(sizeof(float) * rows * (size_t)vectors);
        if (!data || !out) {
            fprintf(stderr, "bench-block-dots: out of memory\n");
            exit(1);
        }
        /* Q8_0 is used in place as TENSOR_Q8_0_BLOCKS, as the loader does */
        tensor w = {.type = type == GGML_TYPE_Q8_0 ? TENSOR_Q8_0_BLOCKS : TENSOR_BLOCKS,
                    .rows = rows, .cols = cols, .stride = cols, .group = 32, .blocks = data,
                    .btype = (int)type, .row_bytes = row_bytes};
        double s = best_of_5(&w, xq, out, runs[k].reps);
        double values = (double)runs[k].reps * rows * cols;
        printf("  %-5s %-6s %7.2f ns/256 values %7.2f GB/s\n", ggml_type_name(type), runs[k].where,
               s / values * 256 * 1e9, (double)runs[k].reps * rows * row_bytes / s / 1e9);
        uint8_t *panels = NULL;
        /* Q4_K's panels take its rows' place, as the loader packs them where the file
           was read in (the rows past the last group of 8 stay blocks); Q8_0's are a copy,
           and the panels alone are read */
        bool in_place = type == GGML_TYPE_Q4_K;
        if (kernels_panels_read(&w) &&
            (in_place || (panels = aligned_alloc(64, (kernels_panels_bytes(&w) + 63) / 64 * 64))) &&
            kernels_panels_pack(in_place ? data : panels, &w)) {
            if (!in_place) {
                free(data);
                data = NULL;
                w.blocks = NULL;
            }
            w.panels = in_place ? data : panels;
            s = best_of_5(&w, xq, out, runs[k].reps);
            char name[16];
            snprintf(name, sizeof name, "%sp", ggml_type_name(type));
            printf("  %-5s %-6s %7.2f ns/256 values %7.2f GB/s\n", name, runs[k].where,
                   s / values * 256 * 1e9, (double)runs[k].reps * rows * row_bytes / s / 1e9);
        }
        free(panels);
        free(out);
        free(data);
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: bench-block-dots [COLS [ISA | TYPE ...]] (COLS a multiple of 256; "
                    "ISA one of %s; TYPE one of Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q4_K Q5_K Q6_K MXFP4; "
                    "vN: N vectors at once, 2 <= N <= 8; tN: on N threads, 1 <= N <= 64)\n",
            kernels_isa_choices());
    return 2;
}

int main(int argc, char **argv)
{
    int cols = argc > 1 ? atoi(argv[1]) : 2048;
    if (cols <= 0 || cols % 256)
        return usage();
    /* the sets and types named after COLS; none named of either: all of it */
    bool isa_named[KERNELS_COUNT] = {0}, any_isa = false;
    bool type_named[sizeof types / sizeof types[0]] = {0}, any_type = false;
    for (int a = 2; a < argc; a++) {
        kernels_isa isa;
        size_t t = 0;
        while (t < sizeof types / sizeof types[0] && strcasecmp(argv[a], ggml_type_name(types[t])))
            t++;
        char *end;
        if (t < sizeof types / sizeof types[0]) {
            type_named[t] = any_type = true;
        } else if (argv[a][0] == 'v' && (vectors = (int)strtol(argv[a] + 1, &end, 10), !*end)) {
            if (vectors < 2 || vectors > 8) {
                fprintf(stderr, "bench-block-dots: '%s': N must be 2 to 8\n", argv[a]);
                return usage();
            }
        } else if (argv[a][0] == 't' && (threads = (int)strtol(argv[a] + 1, &end, 10), !*end)) {
            if (threads < 1 || threads > 64) {
                fprintf(stderr, "bench-block-dots: '%s': N must be 1 to 64\n", argv[a]);
                return usage();
            }
        } else if (kernels_isa_parse(argv[a], &isa) && isa != KERNELS_AUTO) {
            isa_named[isa] = any_isa = true;
        } else {
            fprintf(stderr, "bench-block-dots: '%s' is neither an instruction set nor a type\n",
                    argv[a]);
            return usage();
        }
    }
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    float *x = malloc(sizeof(float) * cols * (size_t)vectors);
    qbatch *xq = qbatch_new(vectors, cols, 32);
    work = kernels_workspace_new();
    if (!x || !xq || !work) {
        fprintf(stderr, "bench-block-dots: out of memory\n");
        return 1;
    }
    for (int i = 0; i < cols * vectors; i++)
        x[i] = (float)((int)(random_u32() % 2001) - 1000) / 1000.0f;
    qbatch_quantize(xq, x, vectors);
    if (threads > 1)
        printf("%d threads", threads);
    else
        printf("one thread");
    printf(", rows of %d values: in cache (512 KiB) and from memory (256 MiB)", cols);
    if (vectors > 1)
        printf("; %d vectors a product, the time per 256 weight values", vectors);
    printf("\n");
    for (int isa = KERNELS_SCALAR; isa < KERNELS_COUNT; isa++) {
        if (!kernels_isa_supported((kernels_isa)isa) || (any_isa && !isa_named[isa]))
            continue;
        kernels_init((kernels_isa)isa);
        printf("%s\n", kernels_isa_name((kernels_isa)isa));
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
            if (!any_type || type_named[t])
                time_type(types[t], cols, xq);
    }
    kernels_workspace_free(work);
    qbatch_free(xq);
    free(x);
    return 0;
}
