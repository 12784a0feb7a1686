/* test_json.c — the JSON reader: values of every type, string escapes (UTF-8,
 * surrogate pairs, raw-byte escapes as json_write_string writes them), exact 64-bit
 * integers, a decimal comma locale, and refusals with line and column for broken
 * text, trailing garbage and nesting beyond the depth limit. */
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "testutil.h"
#include "trace.h"

static json_value *parse_ok(const char *text)
{
    json_value *v;
    llm_err err;
    ck_assert_msg(json_parse(text, strlen(text), &v, &err) == LLM_OK, "%s: %s", text, err.text);
    return v;
}

static void parse_fails(const char *text, const char *where)
{
    json_value *v;
    llm_err err;
    ck_assert_msg(json_parse(text, strlen(text), &v, &err) == LLM_ERR_FORMAT, "accepted: %s", text);
    ck_assert_ptr_null(v);
    if (where)
        ck_assert_msg(strstr(err.text, where) != NULL, "%s: %s", text, err.text);
}

START_TEST(test_values)
{
    json_value *v = parse_ok(" {\"a\": [1, -2.5e3, true, false, null, \"x\"], \"b\": {},"
                             " \"c\": [], \"a2\": 0}\n");
    ck_assert_int_eq(v->type, JSON_OBJECT);
    ck_assert_uint_eq(v->count, 4);
    const json_value *a = json_get(v, "a");
    ck_assert_int_eq(a->type, JSON_ARRAY);
    ck_assert_uint_eq(a->count, 6);
    int i;
    double d;
    bool b;
    const char *s;
    ck_assert(json_as_int(json_at(a, 0), &i) && i == 1);
    ck_assert(json_as_double(json_at(a, 1), &d) && d == -2500.0);
    ck_assert(!json_as_int(json_at(a, 1), &i)); /* not written as an integer */
    ck_assert(json_as_bool(json_at(a, 2), &b) && b);
    ck_assert(json_as_bool(json_at(a, 3), &b) && !b);
    ck_assert_int_eq(json_at(a, 4)->type, JSON_NULL);
    ck_assert(json_as_string(json_at(a, 5), &s) && strcmp(s, "x") == 0);
    ck_assert_ptr_null(json_at(a, 6));
    ck_assert(!json_as_string(json_at(a, 0), &s));
    ck_assert_int_eq(json_get(v, "b")->type, JSON_OBJECT);
    ck_assert_uint_eq(json_get(v, "c")->count, 0);
    ck_assert_ptr_null(json_get(v, "zz"));
    ck_assert_ptr_null(json_get(a, "a"));
    json_free(v);

    v = parse_ok("{\"k\": 1, \"k\": 2}"); /* the last of a repeated key */
    ck_assert(json_as_int(json_get(v, "k"), &i) && i == 2);
    json_free(v);
    json_free(NULL);
}
END_TEST

START_TEST(test_integers)
{
    json_value *v = parse_ok("[18446744073709551615, 18446744073709551616, -1, 2147483648, -2147483648]");
    uint64_t u;
    int i;
    ck_assert(json_as_u64(json_at(v, 0), &u) && u == UINT64_MAX);
    ck_assert(!json_as_u64(json_at(v, 1), &u));
    ck_assert(!json_as_u64(json_at(v, 2), &u));
    ck_assert(json_as_int(json_at(v, 2), &i) && i == -1);
    ck_assert(!json_as_int(json_at(v, 3), &i));
    ck_assert(json_as_int(json_at(v, 4), &i) && i == -2147483647 - 1);
    json_free(v);
}
END_TEST

START_TEST(test_strings)
{
    json_value *v = parse_ok("[\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\", \"\\u00e9\", \"\\u20ac\\ud83d\\ude00\","
                             " \"caf\xc3\xa9\", \"nul\\u0000in\", \"\\udce9\\udc80x\\udcff\"]");
    ck_assert_str_eq(json_at(v, 0)->text, "a\"b\\c/d\b\f\n\r\t");
    ck_assert_str_eq(json_at(v, 1)->text, "\xc3\xa9"); /* U+00E9, as any JSON reader reads it */
    ck_assert_str_eq(json_at(v, 2)->text, "\xe2\x82\xac\xf0\x9f\x98\x80");
    ck_assert_str_eq(json_at(v, 3)->text, "caf\xc3\xa9");
    ck_assert_uint_eq(json_at(v, 4)->length, 6);
    ck_assert_int_eq(memcmp(json_at(v, 4)->text, "nul\0in", 6), 0);
    /* a lone \udc80..\udcff is a raw byte (what json_write_string writes for invalid UTF-8) */
    ck_assert_str_eq(json_at(v, 5)->text, "\xe9\x80x\xff");
    json_free(v);
}
END_TEST

/* llmchat's files from before JSON_RAW_BYTES_MEMBER: \u0080..\u00FF are raw bytes. */
START_TEST(test_latin1_bytes)
{
    const char *text = "[\"\\u00e9\\u0080\", \"\\u0100\\ud83d\\ude00\", \"\\u007f\"]";
    json_value *v;
    llm_err err = {{0}};
    ck_assert_int_eq(json_parse_bytes(text, strlen(text), JSON_LATIN1_BYTES, &v, &err), LLM_OK);
    ck_assert_str_eq(json_at(v, 0)->text, "\xe9\x80");
    ck_assert_str_eq(json_at(v, 1)->text, "\xc4\x80\xf0\x9f\x98\x80");
    ck_assert_str_eq(json_at(v, 2)->text, "\x7f");
    json_free(v);
    /* a lone surrogate meant nothing then: still refused */
    const char *lone = "[\"\\udce9\"]";
    ck_assert_int_ne(json_parse_bytes(lone, strlen(lone), JSON_LATIN1_BYTES, &v, &err), LLM_OK);
    ck_assert_ptr_null(v);
    ck_assert_ptr_nonnull(strstr(err.text, "low surrogate"));
}
END_TEST

/* Whatever bytes json_write_string writes, the reader gives back. */
START_TEST(test_round_trip_bytes)
{
    char in[256];
    for (int i = 0; i < 255; i++)
        in[i] = (char)(i + 1);
    in[255] = '\0';
    const char *path = temp_path("json.txt");
    FILE *f = fopen(path, "w+");
    ck_assert_ptr_nonnull(f);
    fputc('[', f);
    json_write_string(f, in);
    fputc(',', f);
    json_write_string(f, "\xf0\x9f\x98\x80 \xc3\xa9 \xc3 \xff");
    fputc(']', f);
    rewind(f);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(path);
    json_value *v = parse_ok(text);
    ck_assert_str_eq(json_at(v, 0)->text, in);
    ck_assert_str_eq(json_at(v, 1)->text, "\xf0\x9f\x98\x80 \xc3\xa9 \xc3 \xff");
    json_free(v);
}
END_TEST

START_TEST(test_decimal_comma_locale)
{
    if (!setlocale(LC_NUMERIC, "de_DE.UTF-8") && !setlocale(LC_NUMERIC, "fr_FR.UTF-8")) {
        setlocale(LC_NUMERIC, "C");
        return; /* no such locale installed: the C locale path is tested above */
    }
    json_value *v = parse_ok("[0.25, 1e-2]");
    double d;
    ck_assert(json_as_double(json_at(v, 0), &d) && d == 0.25);
    ck_assert(json_as_double(json_at(v, 1), &d) && d == 0.01);
    json_free(v);
    setlocale(LC_NUMERIC, "C");
}
END_TEST

START_TEST(test_refusals)
{
    parse_fails("", "line 1, column 1");
    parse_fails("{", "end of the text");
    parse_fails("{\"a\" 1}", "expected ':'");
    parse_fails("{\"a\": 1,}", "member name");
    parse_fails("[1 2]", "expected ','");
    parse_fails("[1,]", "expected a value");
    parse_fails("{}\n  x", "line 2, column 3");
    parse_fails("[01]", NULL);
    parse_fails("[1.]", "decimal point");
    parse_fails("[1e]", "exponent");
    parse_fails("[-]", "digit");
    parse_fails("[NaN]", NULL);
    parse_fails("[tru]", NULL);
    parse_fails("[\"abc]", "not closed");
    parse_fails("[\"a\nb\"]", "control character");
    parse_fails("[\"\\x\"]", "unknown escape");
    parse_fails("[\"\\u12\"]", "4 hex digits");
    parse_fails("[\"\\ud800\"]", "high surrogate");
    parse_fails("[\"\\ud800\\u0041\"]", "high surrogate");
    parse_fails("[\"\\udc00\"]", "low surrogate");
    parse_fails("[\"\\udc7f\"]", "low surrogate"); /* only \udc80..\udcff are bytes */
    parse_fails("[\"\\udd00\"]", "low surrogate");
    parse_fails("{'a': 1}", NULL);
    parse_fails("[1] // comment", "after the end");
}
END_TEST

START_TEST(test_depth_limit)
{
    char deep[4 * JSON_DEPTH_MAX + 8];
    int d = JSON_DEPTH_MAX;
    memset(deep, '[', (size_t)d);
    memset(deep + d, ']', (size_t)d);
    deep[2 * d] = '\0';
    json_value *v = parse_ok(deep);
    json_free(v);
    memset(deep, '[', (size_t)d + 1);
    memset(deep + d + 1, ']', (size_t)d + 1);
    deep[2 * d + 2] = '\0';
    parse_fails(deep, "nested too deeply");

    /* a megabyte of brackets is refused, not a stack overflow */
    size_t big = 1 << 20;
    char *huge = malloc(big + 1);
    memset(huge, '[', big);
    huge[big] = '\0';
    parse_fails(huge, "nested too deeply");
    free(huge);
}
END_TEST

static Suite *json_suite(void)
{
    Suite *s = suite_create("json");
    TCase *core = tcase_create("core");
    tcase_add_test(core, test_values);
    tcase_add_test(core, test_integers);
    tcase_add_test(core, test_strings);
    tcase_add_test(core, test_latin1_bytes);
    tcase_add_test(core, test_round_trip_bytes);
    tcase_add_test(core, test_decimal_comma_locale);
    suite_add_tcase(s, core);
    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_refusals);
    tcase_add_test(limits, test_depth_limit);
    suite_add_tcase(s, limits);
    return s;
}

TEST_MAIN(json_suite)
