/* test_parse_number.c — the one parser of every number the user types
 * (src/base/parse_number.c): whole texts, ranges and pairs, and the limits where a
 * sscanf("%d") would wrap (2^31, 2^32, 2^64) or a float overflow (1e999); one syntax,
 * a sign and decimal digits, for every kind (no blanks, no hex). */
#include <limits.h>
#include <locale.h>
#include <stdint.h>

#include "parse_number.h"
#include "testutil.h"

START_TEST(test_int_whole_text)
{
    int v = 7;
    ck_assert(parse_int("42", 0, 100, &v) && v == 42);
    ck_assert(parse_int("+5", 0, 100, &v) && v == 5);
    ck_assert(parse_int("-3", -5, 5, &v) && v == -3);
    v = 7;
    ck_assert(!parse_int("42x", 0, 100, &v));
    ck_assert(!parse_int("", 0, 100, &v));
    ck_assert(!parse_int("101", 0, 100, &v));
    ck_assert(!parse_int("4294967296", 0, INT_MAX, &v)); /* 2^32: never 0 */
    ck_assert(!parse_int("2147483648", 0, INT_MAX, &v));
    ck_assert(!parse_int("99999999999999999999999", 0, INT_MAX, &v));
    ck_assert(!parse_int(" 5", 0, 100, &v)); /* no blanks, no hex: as a seed, a float */
    ck_assert(!parse_int("0x10", 0, 100, &v));
    ck_assert(!parse_int("-", -5, 5, &v));
    ck_assert_int_eq(v, 7); /* untouched on failure */
}
END_TEST

START_TEST(test_float_range)
{
    float f = 1.0f;
    ck_assert(parse_float("0.5", &f) && f == 0.5f);
    ck_assert(parse_float("3.4e38", &f));
    f = 1.0f;
    ck_assert(!parse_float("1e999", &f));
    ck_assert(!parse_float("3.5e38", &f));
    ck_assert(!parse_float("nan", &f));
    ck_assert(!parse_float("inf", &f));
    ck_assert(!parse_float("0.5 ", &f));
    ck_assert(!parse_float(" 0.5", &f));
    ck_assert(!parse_float("0x10", &f)); /* a decimal: strtof would take hex */
    ck_assert(!parse_float("1e-50", &f)); /* too small for a float, as 1e39 is too large */
    ck_assert(!parse_float("1e", &f));
    ck_assert(!parse_float(".", &f));
    ck_assert(!parse_float("infinity", &f));
    ck_assert(f == 1.0f);
    ck_assert(parse_float("-.5", &f) && f == -0.5f);
    ck_assert(parse_float("+2", &f) && f == 2.0f);
    ck_assert(parse_float("1.", &f) && f == 1.0f);
    ck_assert(parse_float("1E+2", &f) && f == 100.0f);
    f = 1.0f;
    ck_assert(f == 1.0f);
    /* the decimal point is '.' under any locale */
    if (setlocale(LC_NUMERIC, "de_DE.UTF-8") || setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
        ck_assert(parse_float("0.25", &f) && f == 0.25f);
        setlocale(LC_NUMERIC, "C");
    }
}
END_TEST

START_TEST(test_u64)
{
    uint64_t v = 0;
    ck_assert(parse_u64("18446744073709551615", &v) && v == UINT64_MAX);
    ck_assert(!parse_u64("18446744073709551616", &v)); /* 2^64 */
    ck_assert(!parse_u64("-1", &v));
    ck_assert(!parse_u64(" 1", &v));
    ck_assert(parse_u64("+5", &v) && v == 5); /* a sign as parse_int takes it */
    ck_assert(!parse_u64("+", &v));
    ck_assert(!parse_u64("+-5", &v));
}
END_TEST

START_TEST(test_index_prefix)
{
    int v = -1;
    const char *end = NULL;
    const char *text = "12:3";
    ck_assert(parse_index_prefix(text, INT_MAX, &v, &end) && v == 12 && end == text + 2);
    ck_assert(!parse_index_prefix(":3", INT_MAX, &v, &end));
    ck_assert(!parse_index_prefix("-1", INT_MAX, &v, &end)); /* no sign */
    ck_assert(!parse_index_prefix("4294967296:1", INT_MAX, &v, &end));
    ck_assert(!parse_index_prefix("4294967297", INT_MAX, &v, &end));
    ck_assert(!parse_index_prefix("2147483648", INT_MAX, &v, &end));
    ck_assert(parse_index_prefix("2147483647", INT_MAX, &v, &end) && v == INT_MAX);
    ck_assert(!parse_index_prefix("100000000000000000000000000", INT_MAX, &v, &end));
    ck_assert(!parse_index_prefix("8", 7, &v, &end));
}
END_TEST

START_TEST(test_index_range)
{
    int a = -1, b = -1;
    ck_assert(parse_index_range("1-3", INT_MAX, &a, &b) && a == 1 && b == 3);
    ck_assert(parse_index_range("2-2", INT_MAX, &a, &b) && a == 2 && b == 2);
    a = b = -1;
    ck_assert(!parse_index_range("3-1", INT_MAX, &a, &b));
    ck_assert(!parse_index_range("4294967296-4294967297", INT_MAX, &a, &b)); /* not 0-1 */
    ck_assert(!parse_index_range("0-4294967297", INT_MAX, &a, &b));
    ck_assert(!parse_index_range("1-3x", INT_MAX, &a, &b));
    ck_assert(!parse_index_range("1", INT_MAX, &a, &b));
    ck_assert(!parse_index_range("-1-3", INT_MAX, &a, &b));
    ck_assert(!parse_index_range("1 - 3", INT_MAX, &a, &b));
    ck_assert(a == -1 && b == -1);
}
END_TEST

static Suite *parse_number_suite(void)
{
    Suite *s = suite_create("parse_number");
    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_int_whole_text);
    tcase_add_test(limits, test_float_range);
    tcase_add_test(limits, test_u64);
    tcase_add_test(limits, test_index_prefix);
    tcase_add_test(limits, test_index_range);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(parse_number_suite)
