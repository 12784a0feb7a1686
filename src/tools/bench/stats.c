/* bench/stats.c — seconds of the monotonic clock, medians (see stats.h). */
#include "stats.h"

#include <stdlib.h>

#include "clock.h"

double stats_now_s(void)
{
    return clock_ms() / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_median(double *x, int n, double *lo, double *hi)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    if (lo)
        *lo = x[0];
    if (hi)
        *hi = x[n - 1];
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}
