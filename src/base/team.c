/* team.c — the size of the one-token forward pass's thread team (see team.h). */
#define _GNU_SOURCE
#include "team.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

/* A preemption's typical cost when the kernel does not say the wait: a slice. */
#define SWITCH_NS 1000000LL

int team_threads(const team *t, int max)
{
    if (max < 1)
        max = 1;
    return t->size <= 0 || t->size > max ? max : t->size;
}

void team_update(team *t, int used, int max, long long waited_ns, long long token_ns)
{
    if (max < 1)
        max = 1;
    if (used < 1)
        used = 1;
    if (used > max)
        used = max;
    if (waited_ns > 0 && waited_ns * TEAM_WAIT_PART > token_ns) {
        t->size = used > 1 ? used - 1 : 1;
        t->good = 0;
        return;
    }
    t->size = used;
    if (used < max && ++t->good >= TEAM_GOOD_RUN) {
        t->size = used + 1;
        t->good = 0;
    }
}

#ifdef __linux__
/* This thread's schedstat file, kept open (OpenMP's threads live as long as the
 * process); reopened when the thread is another (after a fork). -1: none. */
static _Thread_local int stat_fd = -2;
static _Thread_local long stat_tid;

static long long run_delay_ns(void)
{
    long tid = (long)syscall(SYS_gettid);
    if (stat_fd == -2 || stat_tid != tid) {
        if (stat_fd >= 0)
            close(stat_fd);
        stat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
        stat_tid = tid;
    }
    char buf[96];
    ssize_t n = stat_fd >= 0 ? pread(stat_fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *end;
    strtoull(buf, &end, 10); /* time on a CPU, then time waiting for one */
    return end == buf ? -1 : (long long)strtoull(end, NULL, 10);
}
#endif

long long team_cpu_wait_ns(void)
{
#ifdef __linux__
    long long ns = run_delay_ns();
    if (ns >= 0)
        return ns;
#endif
#ifdef RUSAGE_THREAD
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0)
        return (long long)ru.ru_nivcsw * SWITCH_NS;
#endif
    return 0;
}
