/* openmp_wait.h — how the OpenMP runtime's idle threads wait between parallel regions:
 * asleep (OMP_WAIT_POLICY=passive), not spinning, unless the user's environment sets
 * OMP_WAIT_POLICY or GOMP_SPINCOUNT itself.
 *
 * A spinning worker holds its core while it waits; on a machine where other programs
 * want the cores too (a laptop, a shared server), it takes the time slice the thread
 * with the work needs, and a batch's many regions collapse (docs/performance.md, "The
 * OpenMP wait policy": a 2-thread prompt at a fifth of the one-thread speed beside two
 * busy programs). Asleep, a region costs a wake-up of microseconds: nothing beside the
 * milliseconds of a chunk of prompt or a token of a model worth threads.
 *
 * The runtime reads its environment when it is loaded, before main: each program puts
 * openmp_wait_preinit in its .preinit_array (OPENMP_WAIT_PREINIT in its main file),
 * which the dynamic loader runs before any library's constructor. The variable is set
 * for the runtime only: the program's own environment (what it hands to programs it
 * starts, such as llama-bench) stays the user's. */
#ifndef LLMCHAT_APP_OPENMP_WAIT_H
#define LLMCHAT_APP_OPENMP_WAIT_H

void openmp_wait_preinit(int argc, char **argv, char **envp);

/* Puts openmp_wait_preinit in the program's .preinit_array: once, in the file with main. */
typedef void (*openmp_wait_fn)(int argc, char **argv, char **envp);
#define OPENMP_WAIT_PREINIT                                                                  \
    __attribute__((section(".preinit_array"), used)) static const openmp_wait_fn             \
        openmp_wait_entry = openmp_wait_preinit

/* Removes what openmp_wait_preinit set from the environment (the runtime has read it),
 * so that programs this one starts see the user's. Call at the start of main. */
void openmp_wait_forget(void);

#endif
