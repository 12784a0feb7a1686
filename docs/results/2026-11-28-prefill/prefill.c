/* prefill.c — times transformer_forward_batch over N tokens (default 512), REPS times, on one
 * GGUF file: the prefill of "Prefill: attention key tiles, weights a row block ahead"
 * (docs/performance.md) without llmchat-bench's bandwidth probe and decode windows, for
 * perf and for alternating builds (ab.sh beside it). Not built by the project. In build/:
 *   gcc -O2 -g -fopenmp -I../src/kernels -I../src/formats -I../src/core -I../src \
 *       -I../src/base -I../src/tools/bench -I. ../docs/results/2026-11-28-prefill/prefill.c \
 *       ../src/tools/bench/stats.c libllmcore.a libllmformats.a libllmkernels.a \
 *       libllmbase.a -lm -o prefill-NAME
 *   ./prefill-NAME FILE.gguf THREADS REPS [N]   (one line of tok/s a rep) */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
#include "model.h"
#include "transformer.h"
#include "kernels.h"
#include "stats.h"
int main(int argc, char **argv)
{
    int threads = atoi(argv[2]), reps = atoi(argv[3]), n = argc > 4 ? atoi(argv[4]) : 512;
    omp_set_num_threads(threads);
    kernels_init(KERNELS_AUTO);
    model_options o; model_options_default(&o);
    model *m; transformer *t; llm_err err;
    if (model_open(argv[1], &o, &m, &err) != LLM_OK || transformer_new(m, 1024, &t, &err) != LLM_OK) { fprintf(stderr, "%s\n", err.text); return 1; }
    int *tok = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) tok[i] = 1 + (i * 7) % 500;
    for (int r = 0; r < reps; r++) {
        double t0 = stats_now_s();
        transformer_forward_batch(t, tok, n, 0, NULL, NULL);
        double dt = stats_now_s() - t0;
        printf("%.1f tok/s\n", n / dt);
    }
    return 0;
}
