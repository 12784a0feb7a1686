/* bench/sweep.c — llmchat-bench --sweep (see sweep.h). */
#include "sweep.h"

#include <stdio.h>
#include <string.h>

#include "cpus.h"
#include "report.h"
#include "side_by_side.h"

/* The thread counts of a sweep: --sweep-at's list, else 1, 2, 4, ... up to `all` and
 * `all` itself; how many. */
static int sweep_counts(const int *at, int all, int *counts, int max)
{
    int n = 0;
    if (at[0]) {
        while (n < max && at[n])
            counts[n] = at[n], n++;
        return n;
    }
    for (int t = 1; t < all && n < max - 1; t *= 2)
        counts[n++] = t;
    counts[n++] = all;
    return n;
}

int sweep_shape(const bench_options *o, const shape *s, const char *path, const char *llama_bench,
                const char *anchor_why)
{
    int all = o->threads > 0 ? o->threads : cpus_usable(), counts[16];
    int n = sweep_counts(o->sweep_at, all, counts, 16), failures = 0;
    report_sweep_header(o, s, path, llama_bench, anchor_why);
    for (int i = 0; i < n; i++) {
        bench_options one = *o;
        one.threads = counts[i];
        side_result sr;
        memset(&sr, 0, sizeof sr);
        side_by_side_run(&one, s, path, llama_bench, &sr);
        failures += sr.rounds == 0;
        report_sweep_row(o, s, counts[i], &sr, llama_bench != NULL);
        fflush(stdout);
    }
    return failures;
}
