/* openmp_wait.h — how the OpenMP runtime's idle threads wait between parallel regions:
 * a short spin, then asleep (GNU libgomp's GOMP_SPINCOUNT=10000 instead of its own
 * 300000: rounds of a loop that waits with one `pause` each, a fifth of a millisecond
 * on an AMD Zen 5, more on Intel cores, whose `pause` is slower), unless the user's
 * environment sets OMP_WAIT_POLICY or GOMP_SPINCOUNT itself.
 *
 * A spinning worker holds its core while it waits; on a machine where other programs
 * want the cores too (a laptop, a shared server), it takes the time slice the thread
 * with the work needs, and a batch's many regions collapse. Asleep at once
 * (OMP_WAIT_POLICY=passive), every region pays a wake-up. The short spin keeps the
 * quiet machine's speed and does not collapse beside busy programs
 * (docs/performance.md, "The OpenMP wait policy"; scripts/bench-wait-policy measures
 * it).
 *
 * libgomp reads its environment once, when it is loaded, before main runs, and has no
 * call to change the spin count later: so the program starts itself again (execv of
 * the file /proc/self/exe names, the same arguments, a millisecond) with the variable
 * set, and the second start takes it out of its own environment again, so that the
 * programs it starts (llama-bench) see the user's. Built without GCC's OpenMP, under
 * valgrind, or when exec fails, nothing changes. */
#ifndef LLMCHAT_APP_OPENMP_WAIT_H
#define LLMCHAT_APP_OPENMP_WAIT_H

/* The spin count set (GOMP_SPINCOUNT): iterations of a waiting thread's loop. */
#define OPENMP_WAIT_SPINS "10000"

/* Call first in main, with main's argv: returns once the runtime runs with the wait
 * policy (having started the program again when it had to). */
void openmp_wait_apply(char **argv);

#endif
