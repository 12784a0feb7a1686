/* bench/machine.h — what the machine llmchat-bench runs on does besides the work it
 * times: how fast it reads memory (the limit decode is measured against), what share
 * of the CPUs other processes took meanwhile, the load average, and this process's
 * resident memory. Part of the benchmark. */
#ifndef LLMCHAT_BENCH_MACHINE_H
#define LLMCHAT_BENCH_MACHINE_H

#include <stddef.h>
#include <stdint.h>

/* The 1-minute load average; -1 if unknown. */
double machine_load_average(void);

/* One read of buf (a probe_new buffer) on `threads` threads, as fast as the machine
 * reads: GB/s. The first pass of the process picks the way of reading (probe.h) that
 * every later pass uses. */
double machine_stream_pass(const uint64_t *buf, size_t bytes, int threads);
/* The way the stream passes read: "plain", "t0" or "nta" (probe_way_name). */
const char *machine_stream_way(void);

/* Best of `reps` stream passes over a fresh buffer of `bytes` on `threads` threads,
 * GB/s; 0 if the buffer cannot be mapped. */
double machine_bandwidth(size_t bytes, int reps, int threads);

/* What other processes take of the machine while something is timed: a snapshot,
 * then machine_cpu_others() = their share of all CPUs' time since (0 .. 1, -1
 * unknown). OpenMP threads spin while they wait, so this process is busy all the time
 * it runs; /proc/stat counts in ticks (10 ms), so short spans are rough. */
typedef struct {
    double wall, busy, self;
} cpu_mark;

cpu_mark machine_cpu_now(void);
double machine_cpu_others(cpu_mark from);

/* Resident memory now, MB: /proc/self/statm, the task's size on macOS, else getrusage's
 * peak; 0 if none can be read. */
double machine_rss_mb(void);

#endif
