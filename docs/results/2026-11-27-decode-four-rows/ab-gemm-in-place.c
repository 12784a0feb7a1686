/* ab-gemm-in-place.c — the paired in-process A/B behind "GGUF Q8_0 in place"
 * (docs/performance.md): kernels_gemm over a 1B-shaped stack of random GGUF Q8_0
 * blocks and N vectors, the AMX table's gemm_q8b (blocks read in place) against rows
 * made Q8_0 16 at a time, alternating, the median of the pairs' speed ratios.
 *
 * Not built by the project: it needs a toggle, which was this while measuring
 * (kernels.c, kernels_gemm):
 *     int kernels_exp_noq8b;   (a global)
 *     else if (w->type == TENSOR_Q8_0_BLOCKS && k->gemm_q8b && !kernels_exp_noq8b)
 * Build as ab-decode.c says; ./ab-gemm-in-place THREADS PAIRS N */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include "ggml_type.h"
#include "kernels.h"
#include "quant.h"
#include "random_blocks.h"
#include "stats.h"
extern int kernels_exp_noq8b;
typedef struct { int rows, cols; } shp;
int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1, pairs = argc > 2 ? atoi(argv[2]) : 10, n = argc > 3 ? atoi(argv[3]) : 256;
    omp_set_num_threads(threads);
    kernels_init(KERNELS_AUTO);

    shp L[] = {{2048, 2048}, {256, 2048}, {256, 2048}, {2048, 2048}, {5632, 2048}, {5632, 2048}, {2048, 5632}};
    int nl = 22, nm = 7;
    tensor *w = calloc(nl * nm, sizeof *w);
    for (int i = 0; i < nl * nm; i++) {
        size_t rb; shp s = L[i % nm];
        uint8_t *d = random_rows(GGML_TYPE_Q8_0, s.rows, s.cols, &rb);
        w[i] = (tensor){.type = TENSOR_Q8_0_BLOCKS, .rows = s.rows, .cols = s.cols, .stride = s.cols, .group = 32, .blocks = d, .btype = GGML_TYPE_Q8_0, .row_bytes = rb};
    }
    float *x = malloc(4 * (size_t)5632 * n), *out = malloc(4 * (size_t)5632 * n);
    for (size_t i = 0; i < (size_t)5632 * n; i++) x[i] = (float)((int)(random_u32() % 2001) - 1000) / 1000.0f;
    qbatch *q2 = qbatch_new(n, 2048, 32), *q5 = qbatch_new(n, 5632, 32);
    qbatch_quantize(q2, x, n); qbatch_quantize(q5, x, n);
    double ratio[100], ta[100], tb[100];
    for (int p = -1; p < pairs; p++) {
        double t[2];
        for (int k = 0; k < 2; k++) {
            int v = (p & 1) ? !k : k; /* v=1: in place (B) */
            kernels_exp_noq8b = !v;
            double t0 = stats_now_s();
            for (int i = 0; i < nl * nm; i++)
                kernels_gemm(out, &w[i], NULL, w[i].cols == 2048 ? q2 : q5, n);
            t[v] = stats_now_s() - t0;
        }
        if (p >= 0) { ratio[p] = t[0] / t[1]; ta[p] = n / t[0]; tb[p] = n / t[1]; }
    }
    for (int a = 0; a < pairs; a++) for (int b = a + 1; b < pairs; b++) {
        if (ratio[b] < ratio[a]) { double z = ratio[a]; ratio[a] = ratio[b]; ratio[b] = z; }
        if (ta[b] < ta[a]) { double z = ta[a]; ta[a] = ta[b]; ta[b] = z; }
        if (tb[b] < tb[a]) { double z = tb[a]; tb[a] = tb[b]; tb[b] = z; }
    }
    printf("threads %d n %d: made Q8_0 %.1f tok/s (%.1f-%.1f), in place %.1f tok/s (%.1f-%.1f); in place / made median %.3f (min %.3f max %.3f)\n",
           threads, n, ta[pairs / 2], ta[0], ta[pairs - 1], tb[pairs / 2], tb[0], tb[pairs - 1], ratio[pairs / 2], ratio[0], ratio[pairs - 1]);
}
