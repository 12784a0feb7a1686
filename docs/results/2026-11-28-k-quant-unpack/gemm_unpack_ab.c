/* gemm_unpack_ab.c — in-process A/B of the K-quant unpack behind "Prefill: K-quant rows unpacked
 * 32 bytes at a time" (docs/performance.md): kernels_gemm of one random ROWS x COLS matrix of
 * TYPE (q4_k, q5_k, q6_k) with N vectors on the chosen table, A the plain-C unpack_row, B
 * kernels_x86_unpack_row, ABBA pairs; prints the median speed ratio B/A with quartiles.
 * Not built by the project. In build/:
 *   gcc -O2 -fopenmp -I../src/kernels -I../src/base -I../src/tools/bench -I. \
 *       ../docs/results/2026-11-28-k-quant-unpack/gemm_unpack_ab.c ../src/tools/bench/stats.c \
 *       ../src/tools/bench/random_blocks.c libllmkernels.a libllmbase.a -lm -o gemm-unpack-ab
 *   ./gemm-unpack-ab TYPE ROWS COLS N PAIRS THREADS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "ggml_type.h"
#include "kernels.h"
#include "quant.h"
#include "table.h"
#include "random_blocks.h"
#include "stats.h"
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv)
{
    ggml_type type = strcmp(argv[1], "q6_k") == 0 ? GGML_TYPE_Q6_K : strcmp(argv[1], "q5_k") == 0 ? GGML_TYPE_Q5_K : GGML_TYPE_Q4_K;
    int rows = atoi(argv[2]), cols = atoi(argv[3]), n = atoi(argv[4]), pairs = atoi(argv[5]);
    omp_set_num_threads(atoi(argv[6]));
    kernels_init(KERNELS_AUTO);
    kernel_table *k = (kernel_table *)kernels_active();
    float *x = malloc(sizeof(float) * (size_t)n * cols), *out = malloc(sizeof(float) * (size_t)n * rows);
    for (size_t i = 0; i < (size_t)n * cols; i++) x[i] = (float)((int)(random_u32() % 2001) - 1000) / 1000.0f;
    qbatch *xq = qbatch_new(n, cols, 32);
    qbatch_quantize(xq, x, n);
    size_t rb; uint8_t *blk = random_rows(type, rows, cols, &rb);
    tensor w = {.type = TENSOR_BLOCKS, .rows = rows, .cols = cols, .stride = cols, .group = 32, .blocks = blk, .btype = type, .row_bytes = rb};
    double *ratio = malloc(sizeof(double) * pairs), ta = 0, tb = 0;
    for (int p = 0; p < pairs; p++) {
        double t[2] = {0, 0};
        for (int s = 0; s < 4; s++) {
            int v = (s == 0 || s == 3) ? 0 : 1;
            k->unpack_row = v ? kernels_x86_unpack_row : kernels_unpack_row;
            double t0 = stats_now_s();
            kernels_gemm(out, &w, x, xq, n);
            t[v] += stats_now_s() - t0;
        }
        ratio[p] = t[0] / t[1]; ta += t[0]; tb += t[1];
    }
    qsort(ratio, pairs, sizeof(double), cmpd);
    printf("%s %dx%d n %d: B/A speed median %.3f (q1 %.3f, q3 %.3f); A %.1f GOPS, B %.1f GOPS\n", argv[1], rows, cols, n, ratio[pairs / 2], ratio[pairs / 4], ratio[3 * pairs / 4],
           4.0 * rows * cols * n * pairs / ta / 1e9, 4.0 * rows * cols * n * pairs / tb / 1e9);
    return 0;
}
