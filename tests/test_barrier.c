/* test_barrier.c — the barrier of the one-token forward pass: no thread passes a round
 * before all have arrived, writes before it are seen after it, a waiter blocks (rather
 * than spin on) when told not to spin, with as many threads as cores and with 16 on
 * however few cores the machine has (slow, but it must pass). No timing is asserted. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "barrier.h"
#include "testutil.h"

enum { MAX_THREADS = 16, ROUNDS = 2000 };

typedef struct {
    barrier *b;
    int id, threads, rounds;
    volatile int *slots; /* (threads) each thread's latest round */
    int errors;          /* slots seen out of step */
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (int round = 1; round <= w->rounds; round++) {
        w->slots[w->id] = round;
        barrier_wait(w->b);
        for (int i = 0; i < w->threads; i++)
            w->errors += w->slots[i] != round; /* everyone wrote this round, nobody the next */
        barrier_wait(w->b);
    }
    return NULL;
}

/* `threads` threads through `rounds` rounds of two barriers each, spinning spin_ns. */
static void run(int threads, int rounds, unsigned long long spin_ns)
{
    barrier b;
    barrier_init(&b, (unsigned)threads, spin_ns);
    volatile int slots[MAX_THREADS] = {0};
    worker w[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    for (int i = 0; i < threads; i++) {
        w[i] = (worker){&b, i, threads, rounds, slots, 0};
        ck_assert_int_eq(pthread_create(&tid[i], NULL, work, &w[i]), 0);
    }
    int errors = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        errors += w[i].errors;
    }
    ck_assert_msg(errors == 0, "%d threads, spin %llu ns: %d slots seen out of step", threads,
                  spin_ns, errors);
}

START_TEST(test_rounds)
{
    run(1, ROUNDS, BARRIER_SPIN_NS);
    run(2, ROUNDS, BARRIER_SPIN_NS);
    run(3, ROUNDS, BARRIER_SPIN_NS);
    run(2, ROUNDS, 0); /* every waiter blocks in the kernel at once */
    run(3, ROUNDS, BARRIER_SPIN_SHARED_NS);
}
END_TEST

/* 16 threads on however many cores (2 where the suite runs): most waiters find their
 * peers without a core, spin out their bound and sleep; every round still holds. */
START_TEST(test_sixteen_threads)
{
    run(MAX_THREADS, ROUNDS / 4, BARRIER_SPIN_SHARED_NS);
    run(MAX_THREADS, ROUNDS / 8, BARRIER_SPIN_NS);
    run(MAX_THREADS, ROUNDS / 4, 0);
}
END_TEST

START_TEST(test_single_thread)
{
    barrier b;
    barrier_init(&b, 1, BARRIER_SPIN_NS);
    for (int i = 0; i < 10; i++)
        barrier_wait(&b); /* returns at once */
    ck_assert_uint_eq(barrier_sleeps(&b), 0);
    barrier_init(&b, 0, 0); /* treated as one */
    barrier_wait(&b);
    ck_assert_uint_eq(barrier_sleeps(&b), 0);
}
END_TEST

typedef struct {
    barrier *b;
    atomic_int arrived; /* set by the late thread just before it reaches the barrier */
} late_arg;

/* Reaches the barrier only once the other thread has gone to sleep there (its sleep
 * counted): no nap whose length the machine's load could make too short. A waiter that
 * never sleeps keeps this thread away, and the test fails by its time limit. */
static void *arrive_late(void *arg)
{
    late_arg *a = arg;
    struct timespec poll = {0, 100 * 1000};
    while (barrier_sleeps(a->b) == 0)
        nanosleep(&poll, NULL);
    atomic_store(&a->arrived, 1);
    barrier_wait(a->b);
    return NULL;
}

/* With no spin, a thread that reaches the barrier first blocks in the kernel (it is
 * counted) and returns only after the late one arrived. */
START_TEST(test_waiter_sleeps)
{
    barrier b;
    barrier_init(&b, 2, 0);
    late_arg a = {&b, 0};
    pthread_t late;
    ck_assert_int_eq(pthread_create(&late, NULL, arrive_late, &a), 0);
    barrier_wait(&b);
    ck_assert_int_eq(atomic_load(&a.arrived), 1);
    pthread_join(late, NULL);
    ck_assert_uint_eq(barrier_sleeps(&b), 1);
}
END_TEST

/* A bounded spin: a waiter that spins for at most 1 ms, whose peer arrives only once it
 * sleeps, ends up asleep rather than spinning for ever. */
START_TEST(test_spin_is_bounded)
{
    barrier b;
    barrier_init(&b, 2, 1000 * 1000);
    late_arg a = {&b, 0};
    pthread_t late;
    ck_assert_int_eq(pthread_create(&late, NULL, arrive_late, &a), 0);
    barrier_wait(&b);
    ck_assert_int_eq(atomic_load(&a.arrived), 1);
    pthread_join(late, NULL);
    ck_assert_uint_eq(barrier_sleeps(&b), 1);
}
END_TEST

START_TEST(test_spin_choice)
{
    ck_assert_uint_eq(barrier_spin_for(1, 1), BARRIER_SPIN_NS);
    ck_assert_uint_eq(barrier_spin_for(16, 16), BARRIER_SPIN_NS);
    ck_assert_uint_eq(barrier_spin_for(2, 16), BARRIER_SPIN_NS);
    ck_assert_uint_eq(barrier_spin_for(17, 16), BARRIER_SPIN_SHARED_NS);
    ck_assert_uint_eq(barrier_spin_for(16, 2), BARRIER_SPIN_SHARED_NS);
    ck_assert(BARRIER_SPIN_SHARED_NS < BARRIER_SPIN_NS);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("barrier");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 120);
    tcase_add_test(core, test_rounds);
    tcase_add_test(core, test_single_thread);
    tcase_add_test(core, test_waiter_sleeps);
    tcase_add_test(core, test_spin_is_bounded);
    tcase_add_test(core, test_spin_choice);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_set_timeout(limits, 300);
    tcase_add_test(limits, test_sixteen_threads);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(make_suite)
