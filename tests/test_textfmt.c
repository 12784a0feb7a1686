/* test_textfmt.c — not written yet. */
#include "testutil.h"
START_TEST(test_placeholder) { ck_assert_int_eq(1, 1); }
END_TEST
static Suite *make_suite(void) { Suite *s = suite_create("textfmt"); TCase *tc = tcase_create("core"); tcase_add_test(tc, test_placeholder); suite_add_tcase(s, tc); return s; }
TEST_MAIN(make_suite)
