/* barrier.c — spin for a bounded time, then sleep: see barrier.h for why. */
#include "barrier.h"

#include <sched.h>
#include <stdbool.h>

#include "clock.h"

/* Sleeping is a futex on Linux; elsewhere (or built with -DLLMCHAT_NO_FUTEX, as CI
 * does once to test it) one process-wide mutex and condition variable. */
#if defined(__linux__) && !defined(LLMCHAT_NO_FUTEX)
#define BARRIER_FUTEX 1
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#include <pthread.h>
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sleep_cond = PTHREAD_COND_INITIALIZER;
#endif

/* Pauses between two looks at the clock while spinning: a look costs about as much
 * as a few pauses, and 32 pauses last 0.3 to 2 microseconds depending on the CPU. */
enum { PAUSES_PER_CLOCK = 32 };

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Blocks while *word == value (or returns at once if it already differs). */
static void sleep_while(atomic_uint *word, unsigned value)
{
#ifdef BARRIER_FUTEX
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
#else
    /* the waker changes *word before it takes the lock to broadcast: no lost wake-up */
    pthread_mutex_lock(&sleep_lock);
    while (atomic_load(word) == value)
        pthread_cond_wait(&sleep_cond, &sleep_lock);
    pthread_mutex_unlock(&sleep_lock);
#endif
}

static void wake_all(atomic_uint *word)
{
#ifdef BARRIER_FUTEX
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
#else
    (void)word;
    pthread_mutex_lock(&sleep_lock);
    pthread_cond_broadcast(&sleep_cond);
    pthread_mutex_unlock(&sleep_lock);
#endif
}

void barrier_init(barrier *b, unsigned threads, unsigned long long spin_ns)
{
    atomic_init(&b->arrived, 0);
    atomic_init(&b->round, 0);
    atomic_init(&b->sleepers, 0);
    atomic_init(&b->sleeps, 0);
    b->threads = threads ? threads : 1;
    b->spin_ns = spin_ns;
}

/* Spins until `round` moves on or spin_ns pass; true if it moved on. */
static bool spin_until(const barrier *b, unsigned round)
{
    unsigned long long start = 0;
    for (;;) {
        for (int i = 0; i < PAUSES_PER_CLOCK; i++) {
            if (atomic_load_explicit(&b->round, memory_order_acquire) != round)
                return true;
            cpu_relax();
        }
        unsigned long long now = clock_ns();
        if (!start)
            start = now;
        else if (now - start >= b->spin_ns)
            return false;
    }
}

void barrier_wait(barrier *b)
{
    if (b->threads == 1)
        return;
    unsigned round = atomic_load(&b->round);
    if (atomic_fetch_add(&b->arrived, 1) + 1 == b->threads) {
        /* the last one: nobody touches `arrived` again until `round` moves */
        atomic_store(&b->arrived, 0);
        atomic_fetch_add(&b->round, 1);
        if (atomic_load(&b->sleepers))
            wake_all(&b->round);
        return;
    }
    if (b->spin_ns && spin_until(b, round))
        return;
    /* sequentially consistent: either the last thread sees this sleeper and wakes
     * it, or this thread sees the new round before it sleeps */
    atomic_fetch_add(&b->sleepers, 1);
    if (atomic_load(&b->round) == round)
        atomic_fetch_add_explicit(&b->sleeps, 1, memory_order_relaxed);
    while (atomic_load(&b->round) == round)
        sleep_while(&b->round, round);
    atomic_fetch_sub(&b->sleepers, 1);
}

unsigned long long barrier_sleeps(const barrier *b)
{
    return atomic_load_explicit(&b->sleeps, memory_order_relaxed);
}

unsigned long long barrier_spin_for(int threads, int cpus)
{
    return threads <= cpus ? BARRIER_SPIN_NS : BARRIER_SPIN_SHARED_NS;
}
