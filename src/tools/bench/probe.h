/* bench/probe.h — llmchat-bench's memory bandwidth probe: how fast the machine it runs on can
 * read memory, the limit decode is measured against. Part of the benchmark. */
#ifndef LLMCHAT_BENCH_PROBE_H
#define LLMCHAT_BENCH_PROBE_H

#include <stddef.h>
#include <stdint.h>

/* How a read looks ahead: hardware prefetchers only, software prefetches 8 KiB ahead
 * into every cache level, or non-temporal ones (as the decode kernels do). Which is
 * fastest depends on the CPU, so the probe tries each. */
typedef enum { PROBE_PLAIN, PROBE_T0, PROBE_NTA, PROBE_WAYS } probe_way;

/* "plain", "t0" or "nta". */
const char *probe_way_name(probe_way way);

/* A buffer of `bytes` (a multiple of 64 KiB) for probe_read, every page written once
 * (by all threads, so that its pages spread as the readers' will) so that no read
 * faults; NULL if it cannot be mapped. probe_free unmaps it. */
uint64_t *probe_new(size_t bytes);
void probe_free(uint64_t *buf, size_t bytes);

/* One read of the whole buffer on `threads` OpenMP threads, STREAM-like: each thread
 * reads its contiguous share as PROBE_STREAMS streams at once, a 64-byte line from
 * each in turn with the widest loads the CPU has, looking ahead `way`. GB/s. */
double probe_read(const uint64_t *buf, size_t bytes, int threads, probe_way way);

/* The fastest way on the machine it runs on: each tried `tries` times, the best read kept. */
probe_way probe_pick(const uint64_t *buf, size_t bytes, int threads, int tries);

enum { PROBE_STREAMS = 4 };

#endif
