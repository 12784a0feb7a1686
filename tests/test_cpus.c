/* test_cpus.c — the default thread count: the CPUs this process may run on (its
 * affinity mask), never more; more on request, said to oversubscribe. */
#define _GNU_SOURCE
#include <check.h>
#include <sched.h>
#include <unistd.h>

#include "cpus.h"
#include "testutil.h"

START_TEST(test_usable_is_the_affinity_mask)
{
    cpu_set_t all;
    CPU_ZERO(&all);
    ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
    ck_assert_int_eq(cpus_usable(), CPU_COUNT(&all));
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    ck_assert(cpus_usable() >= 1 && (online <= 0 || cpus_usable() <= online));

    /* as under `taskset -c N`: one CPU allowed, one usable */
    int first = 0;
    while (!CPU_ISSET(first, &all))
        first++;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
    ck_assert_int_eq(cpus_usable(), 1);
    ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
    ck_assert_int_eq(cpus_usable(), CPU_COUNT(&all));
}
END_TEST

START_TEST(test_threads_choice)
{
    int over = -1;
    ck_assert_int_eq(cpus_threads(0, 16, &over), 16); /* default: every usable CPU */
    ck_assert_int_eq(over, 0);
    ck_assert_int_eq(cpus_threads(0, 1, &over), 1);
    ck_assert_int_eq(over, 0);
    ck_assert_int_eq(cpus_threads(4, 16, &over), 4); /* fewer on request */
    ck_assert_int_eq(over, 0);
    ck_assert_int_eq(cpus_threads(16, 16, &over), 16);
    ck_assert_int_eq(over, 0);
    ck_assert_int_eq(cpus_threads(17, 16, &over), 17); /* more is allowed, and said */
    ck_assert_int_eq(over, 1);
    ck_assert_int_eq(cpus_threads(2, 0, &over), 2); /* no CPU count: taken as one */
    ck_assert_int_eq(over, 1);
    ck_assert_int_eq(cpus_threads(0, 3, NULL), 3);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("cpus");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_usable_is_the_affinity_mask);
    tcase_add_test(core, test_threads_choice);
    suite_add_tcase(s, core);
    return s;
}

TEST_MAIN(make_suite)
