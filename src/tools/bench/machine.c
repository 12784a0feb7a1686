/* bench/machine.c — what the machine does besides the measured work (see machine.h):
 * its memory bandwidth, other processes' share of the CPUs, the load average, this
 * process's resident memory. Linux: getloadavg, /proc/stat, /proc/self/statm; macOS:
 * getloadavg and mach's host and task statistics; elsewhere getrusage's peak. */
#define _GNU_SOURCE
#include "machine.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#ifdef __APPLE__
#include <mach/mach.h>
#endif

#include "probe.h"
#include "stats.h"

double machine_load_average(void)
{
    double l[1];
    return getloadavg(l, 1) == 1 ? l[0] : -1.0;
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
 * something else), from /proc/stat (Linux) or the host's CPU load ticks (macOS); -1 if
 * unknown. */
static double machine_busy_s(void)
{
#ifdef __APPLE__
    host_cpu_load_info_data_t info;
    mach_msg_type_number_t count = HOST_CPU_LOAD_INFO_COUNT;
    if (host_statistics(mach_host_self(), HOST_CPU_LOAD_INFO, (host_info_t)&info, &count) !=
        KERN_SUCCESS)
        return -1.0;
    return (double)((unsigned long long)info.cpu_ticks[CPU_STATE_USER] +
                    info.cpu_ticks[CPU_STATE_SYSTEM] + info.cpu_ticks[CPU_STATE_NICE]) /
           sysconf(_SC_CLK_TCK);
#else
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
#endif
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
#ifdef __APPLE__
    mach_task_basic_info_data_t info;
    mach_msg_type_number_t count = MACH_TASK_BASIC_INFO_COUNT;
    if (task_info(mach_task_self(), MACH_TASK_BASIC_INFO, (task_info_t)&info, &count) ==
        KERN_SUCCESS)
        return info.resident_size / 1e6;
#endif
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    if (resident > 0)
        return resident * (double)sysconf(_SC_PAGESIZE) / 1e6; /* MB, as file_mb */
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0.0;
#ifdef __APPLE__
    return ru.ru_maxrss / 1e6; /* bytes there */
#else
    return ru.ru_maxrss * 1024.0 / 1e6;
#endif
}
