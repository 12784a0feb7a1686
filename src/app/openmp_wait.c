/* openmp_wait.c — the OpenMP runtime's wait policy, set before it starts
 * (openmp_wait.h). Owns one flag: whether it set the variable. */
#define _POSIX_C_SOURCE 200809L
#include "openmp_wait.h"

#include <stdbool.h>
#include <stdlib.h>

static bool set_here;

void openmp_wait_preinit(int argc, char **argv, char **envp)
{
    (void)argc;
    (void)argv;
    (void)envp;
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT"))
        return; /* the user's choice */
    set_here = setenv("OMP_WAIT_POLICY", "passive", 1) == 0;
}

void openmp_wait_forget(void)
{
    if (set_here)
        unsetenv("OMP_WAIT_POLICY");
    set_here = false;
}
