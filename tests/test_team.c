/* test_team.c — the decode team's size beside busy programs: one thread fewer after a
 * token whose threads were preempted, one more after TEAM_GOOD_RUN tokens that were
 * not; never below one, never above the maximum; back to all threads within
 * (max - 1) * TEAM_GOOD_RUN tokens once the machine is idle (no long fallback to one
 * thread). */
#include <check.h>

#include "team.h"
#include "testutil.h"

/* Runs `tokens` tokens at `preempted` preemptions each; the last token's size. */
static int run_tokens(team *t, int max, int tokens, long preempted)
{
    int used = team_threads(t, max);
    for (int i = 0; i < tokens; i++) {
        used = team_threads(t, max);
        team_update(t, used, max, preempted);
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
    run_tokens(&t, 16, 100, TEAM_PREEMPTED - 1); /* a stray preemption is not starvation */
    ck_assert_int_eq(team_threads(&t, 16), 16);
}
END_TEST

START_TEST(test_one_fewer_per_starved_token)
{
    team t = {0};
    for (int want = 15; want >= 1; want--) {
        run_tokens(&t, 16, 1, TEAM_PREEMPTED);
        ck_assert_int_eq(team_threads(&t, 16), want);
    }
    run_tokens(&t, 16, 50, 100);
    ck_assert_int_eq(team_threads(&t, 16), 1); /* never below one */
}
END_TEST

START_TEST(test_back_to_all_when_idle)
{
    team t = {0};
    run_tokens(&t, 16, 40, 1000); /* busy: down to one thread */
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
        team_update(&t, used, 16, used == 16 ? 50 : 0); /* 16 are preempted, 15 are not */
    }
    ck_assert_int_ge(at15, 150);
}
END_TEST

START_TEST(test_maximum_changes)
{
    team t = {0};
    run_tokens(&t, 16, 3, TEAM_PREEMPTED); /* 13 */
    ck_assert_int_eq(team_threads(&t, 8), 8); /* fewer lanes now: clamped */
    team_update(&t, 20, 8, 0); /* a count above the maximum is taken as the maximum */
    ck_assert_int_eq(team_threads(&t, 8), 8);
}
END_TEST

START_TEST(test_preemptions_count_up)
{
    long a = team_preemptions();
    ck_assert_int_ge(a, 0);
    ck_assert_int_ge(team_preemptions(), a);
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
    tcase_add_test(core, test_preemptions_count_up);
    suite_add_tcase(s, core);
    return s;
}

TEST_MAIN(make_suite)
