/* ab-decode.c — the paired in-process A/B behind "Decode reads four rows at a time"
 * (docs/performance.md): kernels_matvec over every matrix of a 1B-shaped (or, with a
 * fifth argument 0, a 110M-shaped) stack of random GGUF Q8_0 blocks, variant A and B
 * alternating (ABBA), the median of the pairs' speed ratios.
 *
 * Not built by the project: it needs a toggle in the kernel, which was this while
 * measuring (x86-avx512.c, matvec_q8b_avx512):
 *     int kernels_exp_dr1;   (a global beside the function)
 *     for (; cached && !kernels_exp_dr1 && r + DECODE_ROWS <= r1; r += DECODE_ROWS) {
 * so that variant 1 reads one row at a time. Then, in build/:
 *   gcc -O2 -fopenmp -I../src/kernels -I../src/tools/bench -I../src -I. ab-decode.c \
 *       ../src/tools/bench/random_blocks.c ../src/tools/bench/stats.c \
 *       libllmkernels.a libllmbase.a -lm -o ab-decode
 *   ./ab-decode THREADS 1 4 PAIRS [1|0]     (A = one row, B = four rows) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "ggml_type.h"
#include "kernels.h"
#include "quant.h"
#include "random_blocks.h"
#include "stats.h"
extern int kernels_exp_dr1;
typedef struct { int rows, cols; } shp;
int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    int A = argc > 2 ? atoi(argv[2]) : 1, B = argc > 3 ? atoi(argv[3]) : 4;
    int pairs = argc > 4 ? atoi(argv[4]) : 30;
    omp_set_num_threads(threads);
    kernels_init(KERNELS_AVX512);
    int big = argc > 5 ? atoi(argv[5]) : 1;
    shp L1[] = {{2048, 2048}, {256, 2048}, {256, 2048}, {2048, 2048}, {5632, 2048}, {5632, 2048}, {2048, 5632}};
    shp L2[] = {{768, 768}, {768, 768}, {768, 768}, {768, 768}, {2048, 768}, {2048, 768}, {768, 2048}};
    shp *L = big ? L1 : L2;
    int nl = big ? 22 : 12, nm = 7;
    tensor *w = calloc(nl * nm, sizeof *w);
    size_t total = 0;
    for (int i = 0; i < nl * nm; i++) {
        size_t rb;
        shp s = L[i % nm];
        uint8_t *d = random_rows(GGML_TYPE_Q8_0, s.rows, s.cols, &rb);
        w[i] = (tensor){.type = TENSOR_Q8_0_BLOCKS, .rows = s.rows, .cols = s.cols, .stride = s.cols, .group = 32, .blocks = d, .btype = GGML_TYPE_Q8_0, .row_bytes = rb};
        total += rb * s.rows;
    }
    float *x = malloc(4 * 5632), *out = malloc(4 * 5632);
    for (int i = 0; i < 5632; i++) x[i] = (float)((int)(random_u32() % 2001) - 1000) / 1000.0f;
    qbatch *q2 = qbatch_new(1, 2048, 32), *q5 = qbatch_new(1, 5632, 32), *q7 = qbatch_new(1, 768, 32);
    qbatch_quantize(q2, x, 1); qbatch_quantize(q5, x, 1); qbatch_quantize(q7, x, 1);
    double ratio[200], ta[200], tb[200];
    for (int p = -2; p < pairs; p++) {
        double t[2];
        for (int k = 0; k < 2; k++) {
            int v = (p & 1) ? (k ? A : B) : (k ? B : A);
            kernels_exp_dr1 = (v == 1);
            double t0 = stats_now_s();
            for (int i = 0; i < nl * nm; i++)
                kernels_matvec(out, &w[i], NULL, w[i].cols == 2048 ? q2 : w[i].cols == 768 ? q7 : q5);
            double dt = stats_now_s() - t0;
            t[v == A ? 0 : 1] = dt;
        }
        if (p >= 0) { ratio[p] = t[0] / t[1]; ta[p] = total / t[0] / 1e9; tb[p] = total / t[1] / 1e9; }
    }
    /* sort */
    for (int a = 0; a < pairs; a++) for (int b = a + 1; b < pairs; b++) {
        if (ratio[b] < ratio[a]) { double z = ratio[a]; ratio[a] = ratio[b]; ratio[b] = z; }
        if (ta[b] < ta[a]) { double z = ta[a]; ta[a] = ta[b]; ta[b] = z; }
        if (tb[b] < tb[a]) { double z = tb[a]; tb[a] = tb[b]; tb[b] = z; }
    }
    printf("%.2f GB; A=%d %.2f GB/s (%.2f-%.2f), B=%d %.2f GB/s (%.2f-%.2f); B/A speed median %.3f (q1 %.3f q3 %.3f)\n",
           total / 1e9, A, ta[pairs / 2], ta[0], ta[pairs - 1], B, tb[pairs / 2], tb[0], tb[pairs - 1],
           ratio[pairs / 2], ratio[pairs / 4], ratio[3 * pairs / 4]);
    return 0;
}
