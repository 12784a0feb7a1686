/* ab-panels.c — the paired in-process A/B behind "Decode panels" (docs/performance.md):
 * kernels_matvec over every matrix of a stack of random GGUF Q8_0 blocks, A = read from
 * the blocks (matvec_q8b), B = the same tensors read from their panels, alternating
 * (ABBA), the median of the pairs' speed ratios and quartiles. Not built by the
 * project; it needs no toggle (the panels are a tensor field). In build/:
 *   gcc -O2 -fopenmp -I../src/kernels -I../src/tools/bench -I../src -I../src/base -I. \
 *       ../docs/results/2026-11-28-decode-panels/ab-panels.c \
 *       ../src/tools/bench/random_blocks.c ../src/tools/bench/stats.c \
 *       libllmkernels.a libllmbase.a -lm -o ab-panels
 *   ./ab-panels THREADS PAIRS SHAPE
 * SHAPE 1: a 1B-shaped stack (22 layers, 1.03 GB, from memory); 0: 110M-shaped (12
 * layers of 768, 0.09 GB); 2: one 1024 x 1024 matrix a thousand times (in cache).
 *
 * With PA and PB in the environment it compares two ways of reading the panels
 * instead (the "streams" figures): both sides read panels, A with the kernel's toggle
 * kernels_exp_pair = PA, B with PB. The toggle was this while measuring, in
 * x86-avx512-panels.c's kernels_avx512_matmul_q8p: a global
 *     int kernels_exp_pair;
 * and, for n == 1 with r0 on a panel, kernels_exp_pair panels at a time through
 * panel_streams with P = 1, 2 or 4 before the one-panel loop (0: that loop alone).
 * Without the toggle built in, PA and PB are refused. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <omp.h>
#include "ggml_type.h"
#include "kernels.h"
#include "quant.h"
#include "random_blocks.h"
#include "stats.h"
extern int kernels_exp_pair __attribute__((weak));
typedef struct { int rows, cols; } shp;
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    int pairs = argc > 2 ? atoi(argv[2]) : 30;
    int big = argc > 3 ? atoi(argv[3]) : 1;
    const char *pa = getenv("PA"), *pb = getenv("PB");
    bool streams = pa && pb;
    if (streams && !&kernels_exp_pair) {
        fprintf(stderr, "ab-panels: PA and PB need the kernel's toggle (see the header)\n");
        return 2;
    }
    omp_set_num_threads(threads);
    kernels_init(KERNELS_AUTO);
    shp L1[] = {{2048, 2048}, {256, 2048}, {256, 2048}, {2048, 2048}, {5632, 2048}, {5632, 2048}, {2048, 5632}};
    shp L2[] = {{768, 768}, {768, 768}, {768, 768}, {768, 768}, {2048, 768}, {2048, 768}, {768, 2048}};
    shp L3[] = {{1024, 1024}};
    shp *L = big == 1 ? L1 : big == 0 ? L2 : L3;
    int nl = big == 1 ? 22 : big == 0 ? 12 : 1, nm = big == 2 ? 1 : 7;
    tensor *w = calloc(nl * nm, sizeof *w), *wp = calloc(nl * nm, sizeof *wp);
    size_t total = 0;
    for (int i = 0; i < nl * nm; i++) {
        size_t rb;
        shp s = L[i % nm];
        uint8_t *d = random_rows(GGML_TYPE_Q8_0, s.rows, s.cols, &rb);
        w[i] = (tensor){.type = TENSOR_Q8_0_BLOCKS, .rows = s.rows, .cols = s.cols, .stride = s.cols, .group = 32, .blocks = d, .btype = GGML_TYPE_Q8_0, .row_bytes = rb};
        wp[i] = w[i];
        uint8_t *pb = aligned_alloc(64, (kernels_panels_bytes(&w[i]) + 63) / 64 * 64);
        kernels_panels_pack(pb, &w[i]);
        wp[i].panels = pb;
        total += rb * s.rows;
    }
    float *x = malloc(4 * 5632), *out = malloc(4 * 5632);
    for (int i = 0; i < 5632; i++) x[i] = (float)((int)(random_u32() % 2001) - 1000) / 1000.0f;
    qbatch *q2 = qbatch_new(1, 2048, 32), *q5 = qbatch_new(1, 5632, 32), *q7 = qbatch_new(1, 768, 32);
    qbatch_quantize(q2, x, 1); qbatch_quantize(q5, x, 1); qbatch_quantize(q7, x, 1);
    qbatch *q1 = qbatch_new(1, 1024, 32); qbatch_quantize(q1, x, 1);
    printf("table %s, panels wanted %d\n", kernels_isa_name(kernels_init(KERNELS_AUTO)), kernels_panels_wanted());
    double ratio[200], ta[200], tb[200];
    for (int p = -2; p < pairs; p++) {
        double t[2];
        for (int k = 0; k < 2; k++) {
            int v = (p & 1) ? !k : k; /* 0 = A blocks, 1 = B panels (or PA, PB) */
            tensor *ws = v || streams ? wp : w;
            if (streams)
                kernels_exp_pair = atoi(v ? pb : pa);
            double t0 = stats_now_s();
            for (int rep = 0; rep < (big == 2 ? 1000 : 1); rep++)
            for (int i = 0; i < nl * nm; i++)
                kernels_matvec(out, &ws[i], NULL, ws[i].cols == 2048 ? q2 : ws[i].cols == 768 ? q7 : ws[i].cols == 1024 ? q1 : q5);
            t[v] = stats_now_s() - t0;
        }
        if (p >= 0) { ratio[p] = t[0] / t[1]; ta[p] = total * (big == 2 ? 1000 : 1) / t[0] / 1e9; tb[p] = total * (big == 2 ? 1000 : 1) / t[1] / 1e9; }
    }
    qsort(ratio, pairs, sizeof(double), cmpd); qsort(ta, pairs, sizeof(double), cmpd); qsort(tb, pairs, sizeof(double), cmpd);
    printf("%d thr %.2f GB; %s %.2f GB/s (%.2f-%.2f), %s %.2f GB/s (%.2f-%.2f); B/A median %.3f (q1 %.3f q3 %.3f)\n",
           threads, total / 1e9, streams ? "A" : "blocks", ta[pairs / 2], ta[0], ta[pairs - 1],
           streams ? "B" : "panels", tb[pairs / 2], tb[0], tb[pairs - 1],
           ratio[pairs / 2], ratio[pairs / 4], ratio[3 * pairs / 4]);
    return 0;
}
