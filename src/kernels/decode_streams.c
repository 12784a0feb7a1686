/* kernels/decode_streams.c — the one place that decides how many weight streams a
 * decode thread reads side by side (kernels_decode_streams in kernels.h).
 *
 * With four, the AVX-512 one-vector kernels read four rows at once (x's part computed
 * once a call and shared), and GGUF Q8_0 matrices get their decode panels by default,
 * read four panels at once. With one, those kernels read one row after the other,
 * front to back, with x's part computed per 64-byte chunk, and no panels are made
 * unless asked for. Each row's result has the same bits either way.
 *
 * Four by default on Intel CPUs, one elsewhere. On Intel's server cores four streams
 * keep more of the memory's lines in flight from one core; on AMD Zen 4 four rows read
 * side by side ran at half the speed of one, whose single walk through the matrix the
 * hardware prefetchers follow. The figures from both kinds of machine are in
 * docs/performance.md ("Decode streams by CPU"); llmchat-bench --decode-streams times
 * each way without a rebuild. */
#include "kernels.h"

static int chosen; /* 1 or 4; 0: this CPU's default */

/* Read once per product and thread: __builtin_cpu_is is a load of what the runtime's
 * constructor found (no __builtin_cpu_init needed after constructors have run). */
static int cpu_default(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_cpu_is("intel") ? 4 : 1;
#else
    return 1;
#endif
}

void kernels_set_decode_streams(int streams)
{
    chosen = streams == 1 || streams == 4 ? streams : 0;
}

int kernels_decode_streams(void)
{
    return chosen ? chosen : cpu_default();
}
