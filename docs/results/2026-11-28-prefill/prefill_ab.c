/* prefill_ab.c — in-process A/B: one process alternates two versions of the prefill code
 * (old, new) on one GGUF file, PAIRS pairs after a warm-up of each, the order swapped every
 * pair; prints the median ratio new/old of tok/s with its quartiles and each side's median.
 * Not built by the project. It needs a tree whose src/core/forward.c defines
 * `int ab_new` and keeps the old code beside the new, chosen by its bits (2026-11-28: bit 1
 * matmul_shared's loop of kernels_gemm calls against kernels_gemm_shared, bit 2 the
 * row-by-row forward_rmsnorm loops of pass_norm and pass_out_block against
 * rmsnorm_rows). Built in that tree's build/ as prefill.c is (see prefill.c), then:
 *   ./prefill-ab FILE.gguf THREADS PAIRS [N [NEW]]   (NEW: the ab_new value, default 3) */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include "model.h"
#include "transformer.h"
#include "kernels.h"
#include "stats.h"
extern int ab_new;
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv)
{
    int threads = atoi(argv[2]), pairs = atoi(argv[3]), n = argc > 4 ? atoi(argv[4]) : 512, newv = argc > 5 ? atoi(argv[5]) : 3;
    omp_set_num_threads(threads);
    kernels_init(KERNELS_AUTO);
    model_options o; model_options_default(&o); o.no_panels = true;
    model *m; transformer *t; llm_err err;
    if (model_open(argv[1], &o, &m, &err) != LLM_OK || transformer_new(m, 1024, &t, &err) != LLM_OK) { fprintf(stderr, "%s\n", err.text); return 1; }
    int *tok = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) tok[i] = 1 + (i * 7) % 500;
    double *r = malloc(sizeof(double) * pairs), *a = malloc(sizeof(double) * pairs), *b = malloc(sizeof(double) * pairs);
    for (int w = 0; w < 2; w++) { ab_new = w ? newv : 0; transformer_forward_batch(t, tok, n, 0, NULL, NULL); }
    for (int p = 0; p < pairs; p++) {
        double tt[2];
        for (int k = 0; k < 2; k++) {
            int side = (p & 1) ? 1 - k : k;
            ab_new = side ? newv : 0;
            double t0 = stats_now_s();
            transformer_forward_batch(t, tok, n, 0, NULL, NULL);
            tt[side] = n / (stats_now_s() - t0);
        }
        a[p] = tt[0]; b[p] = tt[1]; r[p] = tt[1] / tt[0];
    }
    qsort(r, pairs, sizeof(double), cmpd); qsort(a, pairs, sizeof(double), cmpd); qsort(b, pairs, sizeof(double), cmpd);
    printf("%s %d threads, %d pairs: new/old %.3f (quartiles %.3f-%.3f); old %.1f new %.1f tok/s (medians)\n", argv[1], threads, pairs, r[pairs / 2], r[pairs / 4], r[3 * pairs / 4], a[pairs / 2], b[pairs / 2]);
    return 0;
}
