/* test_team.c — the decode team's size beside busy programs: one thread fewer after a
 * token whose threads waited for a CPU more than 1/TEAM_WAIT_PART of it, one more after
 * TEAM_GOOD_RUN tokens that did not; never below one, never above the maximum; back to
 * all threads within (max - 1) * TEAM_GOOD_RUN tokens once the machine is idle (no long
 * fallback to one thread). */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <sched.h>

#include "team.h"
#include "testutil.h"

enum { TOKEN_NS = 10 * 1000 * 1000 }; /* a 10 ms token */
#define STARVED (TOKEN_NS / TEAM_WAIT_PART + 1) /* waits that make it starved */

/* Runs `tokens` tokens of TOKEN_NS that waited `waited` ns for a CPU each; the last
 * token's size. */
static int run_tokens(team *t, int max, int tokens, long long waited)
{
    int used = team_threads(t, max);
    for (int i = 0; i < tokens; i++) {
        used = team_threads(t, max);
        team_update(t, used, max, waited, TOKEN_NS);
    }
    return used;
}

START_TEST(test_starts_with_all)
{
    team t = {0};
    ck_assert_int_eq(team_threads(&t, 16), 16);
    ck_assert_int_eq(team_threads(&t, 1), 1);
    ck_assert_int_eq(team_threads(&t, 0), 1);
    run_tokens(&t, 16, 1000, 0); /* an idle machine: all threads, always */
    ck_assert_int_eq(team_threads(&t, 16), 16);
    /* kernel threads taking CPUs for microseconds are not starvation */
    run_tokens(&t, 16, 100, TOKEN_NS / TEAM_WAIT_PART);
    ck_assert_int_eq(team_threads(&t, 16), 16);
}
END_TEST

START_TEST(test_one_fewer_per_starved_token)
{
    team t = {0};
    for (int want = 15; want >= 1; want--) {
        run_tokens(&t, 16, 1, STARVED);
        ck_assert_int_eq(team_threads(&t, 16), want);
    }
    run_tokens(&t, 16, 50, TOKEN_NS);
    ck_assert_int_eq(team_threads(&t, 16), 1); /* never below one */
}
END_TEST

START_TEST(test_back_to_all_when_idle)
{
    team t = {0};
    run_tokens(&t, 16, 40, 4LL * TOKEN_NS); /* busy: down to one thread */
    ck_assert_int_eq(team_threads(&t, 16), 1);
    run_tokens(&t, 16, TEAM_GOOD_RUN - 1, 0);
    ck_assert_int_eq(team_threads(&t, 16), 1);
    run_tokens(&t, 16, 1, 0);
    ck_assert_int_eq(team_threads(&t, 16), 2); /* one more after a good run */
    int tokens = TEAM_GOOD_RUN;
    while (team_threads(&t, 16) < 16 && tokens < 1000)
        tokens += run_tokens(&t, 16, 1, 0) > 0;
    ck_assert_int_le(tokens, 15 * TEAM_GOOD_RUN);
    run_tokens(&t, 16, 100, 0);
    ck_assert_int_eq(team_threads(&t, 16), 16); /* never above the maximum */
}
END_TEST

/* One busy program beside a 16-thread team: the team settles one below the CPUs,
 * trying all of them again after every good run. */
START_TEST(test_settles_beside_a_busy_program)
{
    team t = {0};
    int at15 = 0;
    for (int i = 0; i < 200; i++) {
        int used = team_threads(&t, 16);
        at15 += used == 15;
        ck_assert_int_ge(used, 14);
        team_update(&t, used, 16, used == 16 ? TOKEN_NS : 0, TOKEN_NS); /* 16 wait, 15 do not */
    }
    ck_assert_int_ge(at15, 150);
}
END_TEST

START_TEST(test_maximum_changes)
{
    team t = {0};
    run_tokens(&t, 16, 3, STARVED); /* 13 */
    ck_assert_int_eq(team_threads(&t, 8), 8); /* fewer lanes now: clamped */
    team_update(&t, 20, 8, 0, TOKEN_NS); /* a count above the maximum is the maximum */
    ck_assert_int_eq(team_threads(&t, 8), 8);
}
END_TEST

/* The wait for a CPU never runs backwards, and two threads on one CPU, both busy,
 * wait for it (the kernel says so, or counts their preemptions). */
static void *spin_and_wait(void *arg)
{
    long long *waited = arg, a = team_cpu_wait_ns();
    ck_assert_int_ge(a, 0);
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < 200UL * 1000 * 1000; i++)
        x += i;
    *waited = team_cpu_wait_ns() - a;
    return NULL;
}

START_TEST(test_cpu_wait)
{
    long long a = team_cpu_wait_ns();
    ck_assert_int_ge(a, 0);
    ck_assert_int_ge(team_cpu_wait_ns(), a);
#ifdef __linux__
    cpu_set_t all, one;
    CPU_ZERO(&all);
    ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
    int first = 0;
    while (!CPU_ISSET(first, &all))
        first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0); /* threads inherit it */
    long long w[2] = {0, 0};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, spin_and_wait, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
    ck_assert_msg(w[0] + w[1] > 0, "two busy threads on one CPU never waited for it");
#endif
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("team");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_starts_with_all);
    tcase_add_test(core, test_one_fewer_per_starved_token);
    tcase_add_test(core, test_back_to_all_when_idle);
    tcase_add_test(core, test_settles_beside_a_busy_program);
    tcase_add_test(core, test_maximum_changes);
    tcase_add_test(core, test_cpu_wait);
    suite_add_tcase(s, core);
    return s;
}

TEST_MAIN(make_suite)
