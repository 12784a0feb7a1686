/* team.c — the size of the one-token forward pass's thread team (see team.h). */
#define _GNU_SOURCE
#include "team.h"

#include <sys/resource.h>

int team_threads(const team *t, int max)
{
    if (max < 1)
        max = 1;
    return t->size <= 0 || t->size > max ? max : t->size;
}

void team_update(team *t, int used, int max, long preempted)
{
    if (max < 1)
        max = 1;
    if (used < 1)
        used = 1;
    if (used > max)
        used = max;
    if (preempted >= TEAM_PREEMPTED) {
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

long team_preemptions(void)
{
#ifdef RUSAGE_THREAD
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) == 0)
        return ru.ru_nivcsw;
#endif
    return 0;
}
