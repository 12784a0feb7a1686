/* barrier.h — a barrier for the threads of one parallel region that spins for a few
 * tens of microseconds and then sleeps.
 *
 * The one-token forward pass meets at a barrier about five times a layer. OpenMP's
 * own barrier spins for a long time before it sleeps, which is right on an idle
 * machine and ruinous on a busy one: when another process (or a second llmchat)
 * holds a core, a spinning thread keeps the core that the late thread needs, and a
 * token takes milliseconds per barrier. This one spins briefly (a barrier on an idle
 * machine completes within the spin), then blocks in the kernel (a futex on Linux,
 * sched_yield elsewhere) so the late thread can run. Owns nothing. */
#ifndef LLMCHAT_BARRIER_H
#define LLMCHAT_BARRIER_H

#include <stdatomic.h>

typedef struct {
    atomic_uint arrived;  /* threads that reached the barrier in this round */
    atomic_uint round;    /* bumped by the last thread to arrive; sleepers wait on it */
    atomic_uint sleepers; /* threads blocked in the kernel */
    atomic_ullong asleep_ns; /* nanoseconds threads spent asleep, summed, since then */
    unsigned long long started_ns; /* monotonic time of barrier_init */
    unsigned threads;     /* threads that must arrive */
} barrier;

/* Before the threads use it, by one thread, with the team's size (>= 1). */
void barrier_init(barrier *b, unsigned threads);
/* Returns once all `threads` threads have called it for this round. Everything a
 * thread wrote before it is visible to every thread after it. */
void barrier_wait(barrier *b);
/* The time threads spent asleep since barrier_init, summed over threads, in
 * nanoseconds. On an idle machine only imbalance puts threads to sleep (a few percent
 * of the wall time); a large share means a thread waited for one without a core. */
unsigned long long barrier_asleep_ns(const barrier *b);
/* barrier_asleep_ns as a share of the threads' time since barrier_init (0..1): the
 * forward pass's sign, at the end of a token, that its threads lacked cores. */
double barrier_asleep_share(const barrier *b);

#endif
