/* barrier.h — the barrier the threads of the one-token forward pass meet at: it spins
 * for a bounded time, then sleeps.
 *
 * A token's threads meet at a barrier about five times a layer, every few tens to
 * hundreds of microseconds. On an idle machine the last thread arrives within
 * microseconds of the others, so a spinning wait (no system call, no wake-up) is the
 * fastest; when a thread has no core (another process, or more threads than CPUs) a
 * spinning waiter keeps the core the late thread needs. So a waiter spins with `pause`
 * for at most `spin_ns` of wall time (measured, not counted in pauses, whose cost
 * differs twentyfold between CPUs), then blocks in the kernel (a futex on Linux,
 * sched_yield elsewhere), which frees its core for the late thread. The counter the
 * threads arrive on and the word they wait on sit on separate cache lines, so that
 * waiters reading one do not slow the arrivals on the other. Owns nothing. */
#ifndef LLMCHAT_BARRIER_H
#define LLMCHAT_BARRIER_H

#include <stdatomic.h>

enum {
    BARRIER_LINE = 64,                /* bytes of a cache line */
    BARRIER_SPIN_NS = 200 * 1000,     /* spin bound when every thread has a CPU */
    BARRIER_SPIN_SHARED_NS = 2 * 1000, /* when threads outnumber the CPUs */
};

typedef struct {
    _Alignas(BARRIER_LINE) atomic_uint arrived; /* threads that reached the barrier in this round */
    _Alignas(BARRIER_LINE) atomic_uint round;   /* bumped by the last thread to arrive; waited on */
    atomic_uint sleepers;                       /* threads blocked in the kernel */
    _Alignas(BARRIER_LINE) atomic_ullong sleeps; /* times a thread blocked, since barrier_init */
    unsigned threads;            /* threads that must arrive */
    unsigned long long spin_ns;  /* how long a waiter spins before it blocks */
} barrier;

/* Before the threads use it, by one thread, with the team's size (>= 1; 0 is taken as
 * 1) and the spin bound (BARRIER_SPIN_NS, BARRIER_SPIN_SHARED_NS, or 0: block at once). */
void barrier_init(barrier *b, unsigned threads, unsigned long long spin_ns);
/* Returns once all `threads` threads have called it for this round, and not before.
 * Everything a thread wrote before it is visible to every thread after it. A waiter
 * spins for at most spin_ns, then sleeps until the last thread arrives. */
void barrier_wait(barrier *b);
/* How many times a waiter blocked in the kernel since barrier_init. */
unsigned long long barrier_sleeps(const barrier *b);
/* The spin bound for a team of `threads` on a process that may run on `cpus` CPUs:
 * BARRIER_SPIN_NS when each thread can have a CPU, else BARRIER_SPIN_SHARED_NS. */
unsigned long long barrier_spin_for(int threads, int cpus);

#endif
