/* openmp_wait.c — the OpenMP runtime's wait policy, set before it starts
 * (openmp_wait.h). Owns nothing. */
#define _POSIX_C_SOURCE 200809L
#include "openmp_wait.h"

#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif

#if defined(_OPENMP) && defined(__GNUC__) && !defined(__clang__)
/* Whether the program runs under valgrind, whose own executable /proc/self/exe names
 * and which would follow a new start only when told to: there the runtime keeps its
 * default (valgrind checks correctness, not the wait). */
static bool under_valgrind(void)
{
#ifdef RUNNING_ON_VALGRIND
    return RUNNING_ON_VALGRIND;
#else
    return false;
#endif
}
#endif

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
    if (under_valgrind())
        return;
    char self[PATH_MAX]; /* the program's file, by its name: the same file started again */
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || (size_t)n >= sizeof self - 1)
        return;
    self[n] = '\0';
    if (setenv(MARK, "1", 1) != 0 || setenv("GOMP_SPINCOUNT", OPENMP_WAIT_SPINS, 1) != 0)
        return;
    execv(self, argv);
    unsetenv(MARK); /* no exec: on with the runtime's own default */
    unsetenv("GOMP_SPINCOUNT");
#else
    (void)argv;
#endif
}
