/* cpus.c — the CPUs this process may run on (see cpus.h). */
#define _GNU_SOURCE
#include "cpus.h"

#include <sched.h>
#include <unistd.h>

int cpus_usable(void)
{
    int n = 0;
#ifdef CPU_COUNT
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
#endif
    if (n <= 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        n = online > 0 ? (int)online : 1;
    }
    return n;
}

int cpus_threads(int requested, int cpus, int *oversubscribed)
{
    if (cpus < 1)
        cpus = 1;
    int n = requested > 0 ? requested : cpus;
    if (oversubscribed)
        *oversubscribed = n > cpus;
    return n;
}
