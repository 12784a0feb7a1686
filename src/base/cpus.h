/* cpus.h — how many CPUs this process may run on, and the thread count llmchat uses
 * by default: that many, never more. Owns nothing. */
#ifndef LLMCHAT_CPUS_H
#define LLMCHAT_CPUS_H

/* The CPUs in this process's affinity mask (sched_getaffinity: what `taskset` and
 * cgroup cpusets allow), else the CPUs online; at least 1. */
int cpus_usable(void);

/* The thread count for a request: `requested` when > 0, else cpus (the usable CPUs).
 * *oversubscribed is set when the count is larger than cpus (threads will take turns
 * on the CPUs; allowed, but slower). */
int cpus_threads(int requested, int cpus, int *oversubscribed);

#endif
