/* bench/probe.c — the memory bandwidth probe: a read of a large buffer on every
 * thread, several streams a thread, wide loads (see probe.h). Its figure must be the
 * machine's limit: decode moves weight bytes no faster than the memory delivers them,
 * so a decode above the probe's figure means the probe under-read. */
#include "config.h"

#include "probe.h"

#include <sys/mman.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "clock.h"

enum { LINE = 64, AHEAD_LINES = 8192 / LINE };

/* One 64-byte line as a vector: one load on AVX-512, two on AVX2, four on SSE2. */
typedef uint64_t line_vec __attribute__((vector_size(LINE)));

static volatile uint64_t probe_sink; /* keeps the sums alive */

const char *probe_way_name(probe_way way)
{
    static const char *const names[PROBE_WAYS] = {
        [PROBE_PLAIN] = "plain", [PROBE_T0] = "t0", [PROBE_NTA] = "nta"};
    return way < PROBE_WAYS ? names[way] : "?";
}

/* The buffer's pages made at once (MAP_POPULATE, where there is one): the same 4 KiB
 * pages, without a page fault for each (on a VM, faulting them in costs several times
 * the reads that follow). */
#ifdef MAP_POPULATE
#define PROBE_MAP_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE)
#else
#define PROBE_MAP_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS)
#endif

uint64_t *probe_new(size_t bytes)
{
    size_t n = bytes / sizeof(uint64_t);
    uint64_t *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, PROBE_MAP_FLAGS, -1, 0);
    if (buf == MAP_FAILED)
        return NULL;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        buf[i] = i;
    return buf;
}

void probe_free(uint64_t *buf, size_t bytes)
{
    if (buf)
        munmap(buf, bytes);
}

/* The widest vectors the CPU has, chosen when the program starts (GCC and clang on
 * x86-64, unless ./configure --disable-simd); elsewhere the compiler's baseline. */
#if defined(HAVE_KERNELS_X86) && defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define WIDEST __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef WIDEST
#define WIDEST
#endif

/* Reads `lines` lines from each of PROBE_STREAMS streams starting `stride` lines
 * apart, a line of each in turn; the sum of everything read. HINT: -1 no prefetch, else
 * __builtin_prefetch's locality (3: every level, 0: non-temporal). */
#define READ_STREAMS(name, HINT)                                                          \
    WIDEST static uint64_t name(const line_vec *p, size_t lines, size_t stride)           \
    {                                                                                      \
        line_vec acc[PROBE_STREAMS] = {{0}};                                               \
        for (size_t i = 0; i < lines; i++)                                                 \
            for (int s = 0; s < PROBE_STREAMS; s++) {                                      \
                const line_vec *q = p + s * stride + i;                                    \
                if (HINT >= 0 && i + AHEAD_LINES < lines)                                  \
                    __builtin_prefetch(q + AHEAD_LINES, 0, HINT < 0 ? 0 : HINT);           \
                acc[s] += *q;                                                              \
            }                                                                              \
        line_vec t = acc[0] + acc[1] + acc[2] + acc[3];                                    \
        uint64_t sum = 0;                                                                  \
        for (int k = 0; k < LINE / 8; k++)                                                 \
            sum += t[k];                                                                   \
        return sum;                                                                        \
    }

READ_STREAMS(read_plain, -1)
READ_STREAMS(read_t0, 3)
READ_STREAMS(read_nta, 0)

/* Thread tid's share of `lines` lines among nt threads, in whole groups of
 * PROBE_STREAMS lines; the sum of what it read. */
static uint64_t read_share(const line_vec *base, size_t lines, int tid, int nt, probe_way way)
{
    size_t groups = lines / PROBE_STREAMS;
    size_t g0 = groups * (size_t)tid / (size_t)nt, g1 = groups * (size_t)(tid + 1) / (size_t)nt;
    size_t per = g1 - g0; /* lines a stream */
    const line_vec *p = base + g0 * PROBE_STREAMS;
    switch (way) {
    case PROBE_T0: return read_t0(p, per, per);
    case PROBE_NTA: return read_nta(p, per, per);
    default: return read_plain(p, per, per);
    }
}

double probe_read(const uint64_t *buf, size_t bytes, int threads, probe_way way)
{
    size_t lines = bytes / LINE;
    uint64_t total = 0;
    if (threads < 1)
        threads = 1;
    unsigned long long t0 = clock_ns();
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        int tid = 0, nt = 1;
#ifdef _OPENMP
        tid = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        total += read_share((const line_vec *)buf, lines, tid, nt, way);
    }
    unsigned long long t = clock_ns() - t0;
    probe_sink += total;
    return t ? (double)(lines / PROBE_STREAMS * PROBE_STREAMS * LINE) / (double)t : 0.0;
}

probe_way probe_pick(const uint64_t *buf, size_t bytes, int threads, int tries)
{
    probe_way best = PROBE_PLAIN;
    double best_gb_s = 0.0;
    for (int i = 0; i < tries; i++)
        for (int w = 0; w < PROBE_WAYS; w++) {
            double gb_s = probe_read(buf, bytes, threads, (probe_way)w);
            if (gb_s > best_gb_s) {
                best_gb_s = gb_s;
                best = (probe_way)w;
            }
        }
    return best;
}
