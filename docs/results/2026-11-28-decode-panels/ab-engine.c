/* ab-engine.c — the paired in-process A/B of the whole decode behind "Decode panels"
 * (docs/performance.md): one GGUF file opened twice, A without panels (no_panels), B
 * with, transformer_forward over windows of W tokens, A and B alternating (ABBA), the
 * median of the pairs' speed ratios and quartiles. Not built by the project. In build/:
 *   gcc -O2 -fopenmp -I../src/kernels -I../src/formats -I../src/core -I../src \
 *       -I../src/base -I../src/tools/bench -I. \
 *       ../docs/results/2026-11-28-decode-panels/ab-engine.c ../src/tools/bench/stats.c \
 *       libllmcore.a libllmformats.a libllmkernels.a libllmbase.a -lm -o ab-engine
 *   ./ab-engine FILE.gguf THREADS PAIRS [W]   (the files llmchat-bench --format gguf
 *   writes: ~/.cache/llmchat-bench/random-1B-q8_0.gguf) */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include "model.h"
#include "transformer.h"
#include "kernels.h"
#include "stats.h"
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv)
{
    const char *path = argv[1];
    int threads = atoi(argv[2]), pairs = atoi(argv[3]), W = argc > 4 ? atoi(argv[4]) : 16;
    omp_set_num_threads(threads);
    kernels_init(KERNELS_AUTO);
    model_options o; model_options_default(&o);
    model *m[2]; transformer *t[2]; llm_err err;
    for (int v = 0; v < 2; v++) {
        o.no_panels = v == 0;
        if (model_open(path, &o, &m[v], &err) != LLM_OK || transformer_new(m[v], 1024, &t[v], &err) != LLM_OK) { fprintf(stderr, "%s\n", err.text); return 1; }
    }
    printf("panels: A %zu B %zu bytes\n", m[0]->panel_bytes, m[1]->panel_bytes);
    int pos[2] = {0, 0};
    double ratio[400], ta[400], tb[400];
    for (int p = -2; p < pairs; p++) {
        double tt[2];
        for (int k = 0; k < 2; k++) {
            int v = (p & 1) ? !k : k;
            if (pos[v] + W >= 1024) pos[v] = 0;
            double t0 = stats_now_s();
            for (int i = 0; i < W; i++) transformer_forward(t[v], 1 + (pos[v] * 7) % 500, pos[v], NULL), pos[v]++;
            tt[v] = stats_now_s() - t0;
        }
        if (p >= 0) { ratio[p] = tt[0] / tt[1]; ta[p] = W / tt[0]; tb[p] = W / tt[1]; }
    }
    qsort(ratio, pairs, sizeof(double), cmpd); qsort(ta, pairs, sizeof(double), cmpd); qsort(tb, pairs, sizeof(double), cmpd);
    printf("%d thr: blocks %.2f tok/s (%.2f-%.2f), panels %.2f tok/s (%.2f-%.2f); panels/blocks median %.3f (q1 %.3f q3 %.3f)\n",
           threads, ta[pairs/2], ta[0], ta[pairs-1], tb[pairs/2], tb[0], tb[pairs-1], ratio[pairs/2], ratio[pairs/4], ratio[3*pairs/4]);
    return 0;
}
