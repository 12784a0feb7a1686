/* bench/machine.c — what the machine does besides the measured work (see machine.h):
 * its memory bandwidth, other processes' share of the CPUs, the load average, this
 * process's resident memory. Linux: /proc/loadavg, /proc/stat, /proc/self/statm. */
#define _GNU_SOURCE
#include "machine.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "stats.h"

double machine_load_average(void)
{
    double l = -1.0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = -1.0;
        fclose(f);
    }
    return l;
}

/* The way of reading (probe.h) this process's stream passes use: the fastest of
 * probe_pick's, chosen at the first pass. */
static int stream_way = -1;

/* One read of buf on `threads` threads, as fast as the machine reads: GB/s. */
double machine_stream_pass(const uint64_t *buf, size_t bytes, int threads)
{
    if (stream_way < 0)
        stream_way = (int)probe_pick(buf, bytes, threads, 2);
    return probe_read(buf, bytes, threads, (probe_way)stream_way);
}

const char *machine_stream_way(void)
{
    return probe_way_name((probe_way)stream_way);
}

double machine_bandwidth(size_t bytes, int reps, int threads)
{
    uint64_t *buf = probe_new(bytes);
    if (!buf)
        return 0.0;
    double best = 0.0;
    for (int rep = 0; rep < reps; rep++) {
        double bw = machine_stream_pass(buf, bytes, threads);
        if (bw > best)
            best = bw;
    }
    probe_free(buf, bytes);
    return best;
}

/* CPU seconds the machine spent busy, all CPUs, steal included (the hypervisor ran
 * something else), from /proc/stat; -1 if unknown. */
static double machine_busy_s(void)
{
    unsigned long long v[8];
    FILE *f = fopen("/proc/stat", "r");
    int k = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                       &v[3], &v[4], &v[5], &v[6], &v[7])
              : 0;
    if (f)
        fclose(f);
    if (k != 8)
        return -1.0;
    /* user nice system [idle iowait] irq softirq steal */
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / sysconf(_SC_CLK_TCK);
}

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

cpu_mark machine_cpu_now(void)
{
    return (cpu_mark){stats_now_s(), machine_busy_s(), process_cpu_s()};
}

double machine_cpu_others(cpu_mark from)
{
    cpu_mark to = machine_cpu_now();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (from.busy < 0 || to.busy < 0 || cpus < 1 || to.wall <= from.wall)
        return -1.0;
    double others = (to.busy - from.busy) - (to.self - from.self);
    others /= (to.wall - from.wall) * cpus;
    return others < 0 ? 0 : others > 1 ? 1 : others;
}

double machine_rss_mb(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (double)sysconf(_SC_PAGESIZE) / 1e6; /* MB, as file_mb */
}
