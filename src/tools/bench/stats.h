/* bench/stats.h — the arithmetic of llmchat-bench's figures: seconds of the monotonic
 * clock, and the median of a sample with its extremes (every figure it reports is a
 * median over windows, pairs or rounds). Part of the benchmark. */
#ifndef LLMCHAT_BENCH_STATS_H
#define LLMCHAT_BENCH_STATS_H

/* Seconds of the monotonic clock. */
double stats_now_s(void);

/* Median of x[0..n) (x as it was: a report prints the rounds in their order), with the
 * smallest and largest in *lo and *hi when those are not NULL; NaN for n < 1 or no
 * memory. */
double stats_median(const double *x, int n, double *lo, double *hi);

#endif
