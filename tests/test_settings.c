/* test_settings.c — the live settings (/set, and the command line and config file
 * rows of the same options): every name takes its values, bad names and values are
 * refused with a message and change nothing, and the settings are shown as name
 * value pairs that /set accepts back. */
#include <string.h>

#include "settings.h"
#include "testutil.h"

/* Field by field: memcmp would also compare the structs' padding. */
static bool same(const live_settings *a, const live_settings *b)
{
    const sampler_config *x = &a->sampler, *y = &b->sampler;
    return x->temperature == y->temperature && x->top_p == y->top_p && x->top_k == y->top_k &&
           x->min_p == y->min_p && x->repeat_penalty == y->repeat_penalty &&
           x->repeat_last_n == y->repeat_last_n && x->seed == y->seed && a->steps == b->steps &&
           a->slow_motion_ms == b->slow_motion_ms;
}

static live_settings defaults(void)
{
    live_settings s;
    memset(&s, 0, sizeof s);
    sampler_config_default(&s.sampler);
    s.sampler.seed = 42;
    return s;
}

START_TEST(test_each_name)
{
    live_settings s = defaults();
    ck_assert_ptr_null(settings_apply(&s, "temperature", "0.7"));
    ck_assert(s.sampler.temperature == 0.7f);
    ck_assert_ptr_null(settings_apply(&s, "top-k", "40"));
    ck_assert_int_eq(s.sampler.top_k, 40);
    ck_assert_ptr_null(settings_apply(&s, "top-p", "0.5"));
    ck_assert(s.sampler.top_p == 0.5f);
    ck_assert_ptr_null(settings_apply(&s, "min-p", "0.05"));
    ck_assert(s.sampler.min_p == 0.05f);
    ck_assert_ptr_null(settings_apply(&s, "repeat-penalty", "1.3"));
    ck_assert(s.sampler.repeat_penalty == 1.3f);
    ck_assert_ptr_null(settings_apply(&s, "repeat-last-n", "16"));
    ck_assert_int_eq(s.sampler.repeat_last_n, 16);
    ck_assert_ptr_null(settings_apply(&s, "seed", "18446744073709551615"));
    ck_assert(s.sampler.seed == UINT64_MAX);
    ck_assert_ptr_null(settings_apply(&s, "steps", "100"));
    ck_assert_int_eq(s.steps, 100);
    ck_assert_ptr_null(settings_apply(&s, "slow-motion", "250"));
    ck_assert_int_eq(s.slow_motion_ms, 250);
    ck_assert_ptr_nonnull(settings_apply(&s, "slow-motion", "10001"));
    ck_assert_ptr_nonnull(settings_apply(&s, "slow-motion", "-1"));
    ck_assert_int_eq(s.slow_motion_ms, 250);
    llm_err err;
    ck_assert_int_eq(settings_set_line(&s, "  temperature   0  ", &err), LLM_OK);
    ck_assert(s.sampler.temperature == 0.0f);
    /* every value the setters accept passes the sampler's own check */
    ck_assert_int_eq(sampler_config_check(&s.sampler, &err), LLM_OK);
    ck_assert(settings_is_live("min-p") && !settings_is_live("ctx") && !settings_is_live(""));
}
END_TEST

START_TEST(test_refused)
{
    const struct {
        const char *line, *says;
    } bad[] = {
        {"temprature 1", "unknown setting 'temprature'"},
        {"ctx 10", "unknown setting 'ctx'"},
        {"temperature", "temperature needs a value"},
        {"temperature -1", "temperature must be a number >= 0 (at most 3.4e+38), got '-1'"},
        {"temperature abc", "temperature must be a number >= 0 (at most 3.4e+38), got 'abc'"},
        {"temperature nan", "got 'nan'"},
        {"temperature 1e999", "got '1e999'"},
        {"top-p 0", "top-p must be in (0, 1], got '0'"},
        {"top-p 1.5", "top-p must be in (0, 1]"},
        {"top-k -3", "top-k must be an integer from 0 to 2147483647"},
        {"top-k 2.5", "got '2.5'"},
        {"min-p 1", "min-p must be in [0, 1)"},
        {"repeat-penalty 0", "repeat-penalty must be a number > 0"},
        {"seed -1", "seed must be a non-negative integer"},
        {"steps 1000001", "steps must be an integer from 0 to 1000000"},
        {"steps 10 20", "one name and one value"},
        {"", "set what?"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        live_settings s = defaults(), before = s;
        llm_err err = {{0}};
        ck_assert_int_eq(settings_set_line(&s, bad[i].line, &err), LLM_ERR_ARG);
        ck_assert_msg(strstr(err.text, bad[i].says) != NULL, "'%s' said '%s'", bad[i].line,
                      err.text);
        ck_assert_msg(same(&s, &before), "'%s' changed the settings", bad[i].line);
    }
}
END_TEST

START_TEST(test_format_round_trips)
{
    live_settings s = defaults();
    llm_err err;
    settings_set_line(&s, "temperature 0.25", &err);
    settings_set_line(&s, "top-k 7", &err);
    settings_set_line(&s, "steps 12", &err);
    settings_set_line(&s, "slow-motion 100", &err);
    char text[256];
    settings_format(&s, text, sizeof text);
    /* these pairs, in this order, two spaces apart (the table's other rows between them) */
    const char *pairs[] = {"temperature 0.25", "top-k 7", "top-p 0.9", "min-p 0",
                           "repeat-penalty 1", "repeat-last-n 64", "seed 42", "steps 12",
                           "slow-motion 100"};
    const char *at = text;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const char *found = strstr(at, pairs[i]);
        ck_assert_msg(found && (found == text || !strncmp(found - 2, "  ", 2)),
                      "[%s] lacks [%s] after [%s]", text, pairs[i], at);
        at = found + strlen(pairs[i]);
    }
    /* each pair is accepted back and gives the same settings */
    live_settings t = defaults();
    t.sampler.seed = 1;
    char *save, *copy = strdup(text);
    int names = 0;
    for (char *pair = strtok_r(copy, " ", &save); pair; pair = strtok_r(NULL, " ", &save)) {
        char *value = strtok_r(NULL, " ", &save);
        ck_assert_ptr_nonnull(value);
        ck_assert_str_eq(pair, settings_table[names++].name);
        ck_assert_ptr_null(settings_apply(&t, pair, value));
    }
    free(copy);
    ck_assert_ptr_null(settings_table[names].name);
    ck_assert(same(&s, &t));
    settings_format_short(&s.sampler, text, sizeof text);
    ck_assert_str_eq(text, "T 0.25 k 7 p 0.9");
}
END_TEST

static Suite *settings_suite(void)
{
    Suite *s = suite_create("settings");
    TCase *c = tcase_create("core");
    tcase_add_test(c, test_each_name);
    tcase_add_test(c, test_refused);
    tcase_add_test(c, test_format_round_trips);
    suite_add_tcase(s, c);
    return s;
}

TEST_MAIN(settings_suite)
