/* kernels/prefetch.c — the one place that decides how the matrix kernels prefetch the
 * weights they stream (kernels_prefetch in kernels.h; prefetch_weights in
 * kernels/simd.h is what every table calls).
 *
 * The default is T0, a prefetch into every cache level. A decode product reads each
 * weight once per token, which makes the non-temporal hint look right, but what NTA
 * does differs by CPU: on Intel's server cores it fills the line into L1 alone, not L2,
 * so it must arrive just in time, and a line evicted from L1 before the kernel reaches
 * it is read from memory again; on AMD Zen it behaves much like T0. T0 costs nothing
 * where NTA is fine and is much faster where it is not. The figures behind this choice,
 * from both kinds of machine, are in docs/performance.md
 * ("Prefetching the weights"); llmchat-bench --prefetch times each way without a
 * rebuild. */
#include <string.h>

#include "simd.h"

kernels_prefetch kernels_weight_prefetch = KERNELS_PREFETCH_T0;

static const char *const prefetch_names[] = {
    [KERNELS_PREFETCH_T0] = "t0",
    [KERNELS_PREFETCH_NTA] = "nta",
    [KERNELS_PREFETCH_NONE] = "none",
};

void kernels_set_prefetch(kernels_prefetch way)
{
    kernels_weight_prefetch = way;
}

kernels_prefetch kernels_get_prefetch(void)
{
    return kernels_weight_prefetch;
}

const char *kernels_prefetch_name(kernels_prefetch way)
{
    return (unsigned)way < sizeof prefetch_names / sizeof prefetch_names[0] ? prefetch_names[way]
                                                                            : "?";
}

bool kernels_prefetch_parse(const char *name, kernels_prefetch *out)
{
    for (size_t i = 0; i < sizeof prefetch_names / sizeof prefetch_names[0]; i++)
        if (strcmp(name, prefetch_names[i]) == 0) {
            *out = (kernels_prefetch)i;
            return true;
        }
    return false;
}
