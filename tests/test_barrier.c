/* test_barrier.c — the spin-then-sleep barrier: no thread passes a round before all
 * have arrived, and writes before it are seen after it, with as many threads as
 * cores and with more (so that some must sleep). */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "barrier.h"
#include "testutil.h"

enum { MAX_THREADS = 8, ROUNDS = 3000 };

typedef struct {
    barrier *b;
    int id, threads;
    volatile int *slots; /* (threads) each thread's latest round */
    int errors;          /* slots seen out of step */
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (int round = 1; round <= ROUNDS; round++) {
        w->slots[w->id] = round;
        barrier_wait(w->b);
        for (int i = 0; i < w->threads; i++)
            w->errors += w->slots[i] != round; /* everyone wrote this round, nobody the next */
        barrier_wait(w->b);
    }
    return NULL;
}

static void run(int threads)
{
    barrier b;
    barrier_init(&b, (unsigned)threads);
    volatile int slots[MAX_THREADS] = {0};
    worker w[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    for (int i = 0; i < threads; i++) {
        w[i] = (worker){&b, i, threads, slots, 0};
        ck_assert_int_eq(pthread_create(&tid[i], NULL, work, &w[i]), 0);
    }
    int errors = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        errors += w[i].errors;
    }
    ck_assert_msg(errors == 0, "%d threads: %d slots seen out of step", threads, errors);
}

START_TEST(test_rounds)
{
    run(1);
    run(2);
    run(3);
    run(MAX_THREADS); /* more threads than this machine's cores: some sleep */
}
END_TEST

START_TEST(test_single_thread)
{
    barrier b;
    barrier_init(&b, 1);
    for (int i = 0; i < 10; i++)
        barrier_wait(&b); /* returns at once */
    ck_assert_uint_eq(barrier_asleep_ns(&b), 0);
    barrier_init(&b, 0); /* treated as one */
    barrier_wait(&b);
}
END_TEST

static void *arrive_late(void *arg)
{
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    barrier_wait(arg);
    return NULL;
}

/* A thread that waits 200 ms for another one sleeps, and the time it slept is counted:
 * it is what tells the forward pass that a thread had no core. */
START_TEST(test_asleep_time)
{
    barrier b;
    barrier_init(&b, 2);
    pthread_t late;
    ck_assert_int_eq(pthread_create(&late, NULL, arrive_late, &b), 0);
    barrier_wait(&b);
    pthread_join(late, NULL);
    unsigned long long ns = barrier_asleep_ns(&b);
    ck_assert_msg(ns >= 50ull * 1000 * 1000 && ns < 10ull * 1000 * 1000 * 1000,
                  "asleep %llu ns while the other thread slept 200 ms", ns);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("barrier");
    TCase *core = tcase_create("core");
    tcase_set_timeout(core, 60);
    tcase_add_test(core, test_rounds);
    tcase_add_test(core, test_single_thread);
    tcase_add_test(core, test_asleep_time);
    suite_add_tcase(s, core);
    return s;
}

TEST_MAIN(make_suite)
