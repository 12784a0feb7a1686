/* openmp_wait.c — the OpenMP runtime's wait policy, set before it starts
 * (openmp_wait.h). Owns nothing. */
#define _POSIX_C_SOURCE 200809L
#include "openmp_wait.h"

#include <stdlib.h>
#include <unistd.h>

/* Set, with the spin count, on the start that sets them: the next start knows that
 * they are its own, not the user's. */
#define MARK "LLMCHAT_OPENMP_WAIT_SET"

void openmp_wait_apply(char **argv)
{
    if (getenv(MARK)) { /* the second start: the runtime has read them */
        unsetenv(MARK);
        unsetenv("GOMP_SPINCOUNT");
        return;
    }
#if defined(_OPENMP) && defined(__GNUC__) && !defined(__clang__)
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT"))
        return; /* the user's choice */
    if (setenv(MARK, "1", 1) != 0 || setenv("GOMP_SPINCOUNT", OPENMP_WAIT_SPINS, 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    unsetenv(MARK); /* no exec: on with the runtime's own default */
    unsetenv("GOMP_SPINCOUNT");
#else
    (void)argv;
#endif
}
