/* bench/stats.c — seconds of the monotonic clock, medians (see stats.h). */
#include "stats.h"

#include <math.h>
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

double stats_median(const double *x, int n, double *lo, double *hi)
{
    double *s = malloc(sizeof *s * (size_t)(n > 0 ? n : 1));
    if (!s || n <= 0) {
        free(s);
        if (lo)
            *lo = NAN;
        if (hi)
            *hi = NAN;
        return NAN;
    }
    for (int i = 0; i < n; i++)
        s[i] = x[i];
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    if (lo)
        *lo = s[0];
    if (hi)
        *hi = s[n - 1];
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}
