/* gemm_rate.c — bench-gemm (`make bench-kernels`): the prefill product (kernels_gemm)
 * of one weight matrix and a batch of vectors, on every instruction set this build and
 * CPU have, on one thread and on all: int8 multiply-adds per second (GOPS counts a
 * multiply-add as two operations) for a Q8_0 matrix, a Q4_K one and a Q6_K one (which
 * the GEMM reaches through rows unpacked to Q8_0; Q6_K's groups of two scales each in one
 * pass where the table has gemm_q8_halves, else as two products). The best of 5 passes; random weights and
 * activations. A developers' tool for the question "is prefill bound by the kernel's
 * arithmetic on this CPU": kernel-alone figures in docs/results/ come from it.
 * Usage: bench-gemm [ROWS COLS VECTORS] (COLS a multiple of 256; default 2048 2048 512). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "ggml_type.h"
#include "kernels.h"
#include "quant.h"
#include "random_blocks.h"
#include "stats.h"

static void *alloc_or_die(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench-gemm: out of memory\n");
        exit(1);
    }
    return p;
}

/* Best seconds of 5 passes of kernels_gemm(w, x) on `threads` threads, in work. */
static double best_of_5(kernels_workspace *work, const tensor *w, const float *x,
                        const qbatch *xq, int n, float *out, int threads)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    double best = INFINITY;
    for (int pass = 0; pass < 5; pass++) {
        double t0 = stats_now_s();
        kernels_gemm(work, out, w, x, xq, n);
        double dt = stats_now_s() - t0;
        if (dt < best)
            best = dt;
    }
    return best;
}

int main(int argc, char **argv)
{
    int rows = 2048, cols = 2048, n = 512;
    if (argc == 4) {
        rows = atoi(argv[1]);
        cols = atoi(argv[2]);
        n = atoi(argv[3]);
    }
    if ((argc != 1 && argc != 4) || rows <= 0 || cols <= 0 || cols % 256 || n < 16) {
        fprintf(stderr, "usage: bench-gemm [ROWS COLS VECTORS] (COLS a multiple of 256, "
                        "VECTORS at least 16)\n");
        return 2;
    }
    int all = 1;
#ifdef _OPENMP
    all = omp_get_max_threads();
#endif
    float *x = alloc_or_die(sizeof(float) * (size_t)n * cols);
    float *out = alloc_or_die(sizeof(float) * (size_t)n * rows);
    for (size_t i = 0; i < (size_t)n * cols; i++)
        x[i] = (float)((int)(random_u32() % 2001) - 1000) / 1000.0f;
    qbatch *xq = qbatch_new(n, cols, 32);
    int8_t *q = alloc_or_die((size_t)rows * cols);
    float *scale = alloc_or_die(sizeof(float) * (size_t)rows * (cols / 32));
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        q[i] = (int8_t)(random_u32() % 255 - 127);
    for (size_t i = 0; i < (size_t)rows * (cols / 32); i++)
        scale[i] = ldexpf(1.0f + (float)(random_u32() % 1000) / 2000.0f, -8);
    size_t k_row_bytes;
    uint8_t *k = random_rows(GGML_TYPE_Q4_K, rows, cols, &k_row_bytes);
    size_t k6_row_bytes;
    uint8_t *k6 = random_rows(GGML_TYPE_Q6_K, rows, cols, &k6_row_bytes);
    kernels_workspace *work = kernels_workspace_new();
    if (!xq || !k || !k6 || !work) {
        fprintf(stderr, "bench-gemm: out of memory\n");
        return 1;
    }
    qbatch_quantize(xq, x, n);
    tensor w8 = {.type = TENSOR_Q8_0, .rows = rows, .cols = cols, .stride = cols, .group = 32,
                 .q = q, .scale = scale};
    tensor w4 = {.type = TENSOR_BLOCKS, .rows = rows, .cols = cols, .stride = cols, .group = 32,
                 .blocks = k, .btype = GGML_TYPE_Q4_K, .row_bytes = k_row_bytes};
    tensor w6 = {.type = TENSOR_BLOCKS, .rows = rows, .cols = cols, .stride = cols, .group = 32,
                 .blocks = k6, .btype = GGML_TYPE_Q6_K, .row_bytes = k6_row_bytes};
    const double ops = 2.0 * rows * cols * n;
    printf("prefill GEMM, %d x %d weights times %d vectors: GOPS (a multiply-add is 2), best "
           "of 5, on 1 and %d threads\n", rows, cols, n, all);
    for (int isa = KERNELS_SCALAR + 1; isa < KERNELS_COUNT; isa++) {
        if (!kernels_isa_supported((kernels_isa)isa))
            continue;
        kernels_init((kernels_isa)isa);
        const tensor *ws[] = {&w8, &w4, &w6};
        const char *names[] = {"Q8_0", "Q4_K", "Q6_K"};
        for (int t = 0; t < 3; t++) {
            double one = best_of_5(work, ws[t], x, xq, n, out, 1);
            double many = best_of_5(work, ws[t], x, xq, n, out, all);
            printf("  %-14s %-5s %8.1f GOPS 1 thread %9.1f GOPS %d threads\n",
                   kernels_isa_name((kernels_isa)isa), names[t], ops / one / 1e9,
                   ops / many / 1e9, all);
        }
    }
    kernels_workspace_free(work);
    qbatch_free(xq);
    free(x);
    free(out);
    free(q);
    free(scale);
    free(k);
    free(k6);
    return 0;
}
