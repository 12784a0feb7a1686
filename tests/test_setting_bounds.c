/* test_setting_bounds.c — every live setting's bounds, the three ways a value comes in:
 * /set (command_run on a session that session_open made over the bundled model),
 * the command line (options_parse) and the config file (options_parse --config
 * FILE). For each setting a value just inside each bound is accepted and takes
 * effect (the sampler's settings as the engine's sampler holds them, the others as
 * the session holds them), and a value just outside is refused with a message that
 * names the setting and its range, the settings unchanged.
 *
 * The bounds and the words below are this test's own, written from the manual, not
 * read from settings_table: a table that drifts from them fails here. A setting
 * added to the table without a row here fails too. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command.h"
#include "options.h"
#include "session.h"
#include "settings.h"
#include "testutil.h"

/* One setting: two values just inside its bounds, two just outside, and its range
 * in the words every refusal must use. */
static const struct {
    const char *name;
    const char *inside[2], *outside[2]; /* [0] at the lower bound, [1] at the upper */
    const char *range;
} rows[] = {
    {"temperature", {"0", "3.4e38"}, {"-0.001", "3.5e38"},
     "must be a number >= 0 (at most 3.4e+38)"},
    {"top-k", {"0", "2147483647"}, {"-1", "2147483648"}, "must be an integer from 0 to 2147483647"},
    {"top-p", {"0.000001", "1"}, {"0", "1.000001"}, "must be in (0, 1]"},
    {"min-p", {"0", "0.999999"}, {"-0.000001", "1"}, "must be in [0, 1)"},
    {"repeat-penalty", {"0.000001", "3.4e38"}, {"0", "3.5e38"},
     "must be a number > 0 (at most 3.4e+38)"},
    {"repeat-last-n", {"0", "2147483647"}, {"-1", "2147483648"}, "must be an integer from 0 to 2147483647"},
    {"seed", {"0", "18446744073709551615"}, {"-1", "18446744073709551616"},
     "must be a non-negative integer up to 18446744073709551615"},
    {"steps", {"0", "1000000"}, {"-1", "1000001"}, "must be an integer from 0 to 1000000"},
    {"slow-motion", {"0", "10000"}, {"-1", "10001"},
     "must be a number of milliseconds from 0 to 10000"},
};
enum { N_ROWS = sizeof rows / sizeof rows[0] };

/* Does ls hold value for the setting name? Field by field, by name: not through the
 * table's offsets, which this test checks. */
static bool holds(const live_settings *ls, const char *name, const char *value)
{
    const sampler_config *c = &ls->sampler;
    float f = strtof(value, NULL);
    long n = strtol(value, NULL, 10);
    if (!strcmp(name, "temperature")) return c->temperature == f;
    if (!strcmp(name, "top-k")) return c->top_k == n;
    if (!strcmp(name, "top-p")) return c->top_p == f;
    if (!strcmp(name, "min-p")) return c->min_p == f;
    if (!strcmp(name, "repeat-penalty")) return c->repeat_penalty == f;
    if (!strcmp(name, "repeat-last-n")) return c->repeat_last_n == n;
    if (!strcmp(name, "seed")) return c->seed == strtoull(value, NULL, 10);
    if (!strcmp(name, "steps")) return ls->steps == n;
    if (!strcmp(name, "slow-motion")) return ls->slow_motion_ms == n;
    ck_abort_msg("no field for '%s'", name);
    return false;
}

/* The setting name's field in ls as text, by name, for comparing. */
static const char *field_text(const live_settings *ls, const char *name, char *buf, size_t size)
{
    const sampler_config *c = &ls->sampler;
    if (!strcmp(name, "temperature")) snprintf(buf, size, "%.9g", c->temperature);
    else if (!strcmp(name, "top-k")) snprintf(buf, size, "%d", c->top_k);
    else if (!strcmp(name, "top-p")) snprintf(buf, size, "%.9g", c->top_p);
    else if (!strcmp(name, "min-p")) snprintf(buf, size, "%.9g", c->min_p);
    else if (!strcmp(name, "repeat-penalty")) snprintf(buf, size, "%.9g", c->repeat_penalty);
    else if (!strcmp(name, "repeat-last-n")) snprintf(buf, size, "%d", c->repeat_last_n);
    else if (!strcmp(name, "seed")) snprintf(buf, size, "%" PRIu64, c->seed);
    else if (!strcmp(name, "steps")) snprintf(buf, size, "%d", ls->steps);
    else if (!strcmp(name, "slow-motion")) snprintf(buf, size, "%d", ls->slow_motion_ms);
    else ck_abort_msg("no field for '%s'", name);
    return buf;
}

static bool same_setting(const live_settings *a, const live_settings *b, const char *name)
{
    char x[32], y[32];
    return !strcmp(field_text(a, name, x, sizeof x), field_text(b, name, y, sizeof y));
}

/* ---- stderr, caught ---- */

static int saved_stderr = -1;

static void catch_stderr(void)
{
    fflush(stderr);
    saved_stderr = dup(STDERR_FILENO);
    int fd = open(temp_path("stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    dup2(fd, STDERR_FILENO);
    close(fd);
}

/* What went to stderr since catch_stderr (a static buffer). */
static const char *caught_stderr(void)
{
    static char text[8192];
    fflush(stderr);
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    FILE *f = fopen(temp_path("stderr"), "r");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* ---- the session the values go to ---- */

static const session_needs chat_needs = {.engine = true, .chat = true, .top_n = 10};

/* Parses args (after "llmchat -m chat" and one thread, before the bundled model) into
 * o. Returns options_parse's status; its stderr into *said. */
static int parse(app_options *o, const char *const *args, int n_args, const char **said)
{
    char *argv[16] = {"llmchat", "-m", "chat", "--autosave", "never", "-T", "1"};
    int argc = 7;
    for (int i = 0; i < n_args; i++)
        argv[argc++] = (char *)args[i];
    argv[argc++] = (char *)data_path("chat260K.bin");
    argv[argc] = NULL;
    catch_stderr();
    int rc = options_parse(argc, argv, o);
    *said = caught_stderr();
    return rc;
}

/* The settings a session made from o holds: the sampler's as its engine's sampler has
 * them. */
static live_settings settings_in_force(app_options *o)
{
    session s;
    ck_assert_int_eq(session_open(&s, o, &chat_needs), 0);
    live_settings ls = session_settings(&s);
    ck_assert_int_eq(session_close(&s), 0);
    return ls;
}

static void setup(void)
{
    setenv("XDG_CONFIG_HOME", temp_path("no-config-here"), 1);
    setenv("XDG_STATE_HOME", temp_path("state"), 1);
    unsetenv("LLMCHAT_MODEL");
    unsetenv("LLMCHAT_STEP_DELAY_MS");
}

START_TEST(test_every_setting_has_a_row)
{
    ck_assert_int_eq(N_ROWS, SETTINGS_COUNT);
    for (const setting_info *t = settings_table; t->name; t++) {
        bool found = false;
        for (int i = 0; i < N_ROWS; i++)
            found |= !strcmp(rows[i].name, t->name);
        ck_assert_msg(found, "setting '%s' has no bounds to test", t->name);
    }
}
END_TEST

/* ---- the command line ---- */

START_TEST(test_option)
{
    for (int i = 0; i < N_ROWS; i++) {
        char option[64];
        snprintf(option, sizeof option, "--%s", rows[i].name);
        for (int b = 0; b < 2; b++) {
            app_options o;
            const char *said;
            const char *in[] = {"--no-config", option, rows[i].inside[b]};
            ck_assert_msg(parse(&o, in, 3, &said) == 0, "%s %s refused: %s", option,
                          rows[i].inside[b], said);
            live_settings ls = settings_in_force(&o);
            ck_assert_msg(holds(&ls, rows[i].name, rows[i].inside[b]),
                          "%s %s did not take effect", option, rows[i].inside[b]);
            options_free(&o);

            const char *out[] = {"--no-config", option, rows[i].outside[b]};
            ck_assert_msg(parse(&o, out, 3, &said) == 2, "%s %s accepted", option,
                          rows[i].outside[b]);
            char want[256];
            snprintf(want, sizeof want, "llmchat: %s %s, got '%s'\n", option, rows[i].range,
                     rows[i].outside[b]);
            ck_assert_msg(strstr(said, want) == said, "%s %s said [%s], not [%s]", option,
                          rows[i].outside[b], said, want);
            options_free(&o);
        }
    }
}
END_TEST

/* ---- the config file ---- */

START_TEST(test_config_file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", temp_path("config")); /* temp_path's slots rotate */
    app_options defaults;
    const char *said;
    const char *none[] = {"--no-config"};
    ck_assert_int_eq(parse(&defaults, none, 1, &said), 0);
    live_settings before = settings_in_force(&defaults);
    for (int i = 0; i < N_ROWS; i++) {
        for (int b = 0; b < 2; b++) {
            for (int inside = 1; inside >= 0; inside--) {
                const char *value = inside ? rows[i].inside[b] : rows[i].outside[b];
                FILE *f = fopen(path, "w");
                ck_assert_ptr_nonnull(f);
                fprintf(f, "# bounds\n%s = %s\n", rows[i].name, value);
                fclose(f);
                app_options o;
                const char *args[] = {"--config", path};
                ck_assert_int_eq(parse(&o, args, 2, &said), 0);
                live_settings ls = settings_in_force(&o);
                if (inside) {
                    ck_assert_msg(!*said, "%s = %s warned: %s", rows[i].name, value, said);
                    ck_assert_msg(holds(&ls, rows[i].name, value), "%s = %s did not take effect",
                                  rows[i].name, value);
                } else {
                    char want[512], shown[4096];
                    snprintf(want, sizeof want, "llmchat: %s:2: %s %s, got '%s'\n",
                             options_shown_path(path, shown, sizeof shown), rows[i].name,
                             rows[i].range, value);
                    ck_assert_msg(!strcmp(said, want), "%s = %s said [%s], not [%s]",
                                  rows[i].name, value, said, want);
                    /* the setting keeps its default (the seed: a fresh time-based one) */
                    if (strcmp(rows[i].name, "seed") != 0)
                        ck_assert_msg(same_setting(&ls, &before, rows[i].name),
                                      "%s = %s changed it", rows[i].name, value);
                }
                options_free(&o);
            }
        }
    }
    options_free(&defaults);
    remove(path);
}
END_TEST

/* ---- /set ---- */

typedef struct {
    char said[4][512];
    int n_said;
} recorder;

static void rec_say(command_host *h, const char *text)
{
    recorder *r = h->user;
    if (r->n_said < 4)
        snprintf(r->said[r->n_said++], sizeof r->said[0], "%s", text);
}
static void rec_changed(command_host *h, command_change what) { (void)h, (void)what; }

/* Runs "/set NAME VALUE" on h's session; returns what it said. */
static const char *set(command_host *h, const char *name, const char *value)
{
    recorder *r = h->user;
    r->n_said = 0;
    char line[256];
    snprintf(line, sizeof line, "/set %s %s", name, value);
    command_call call;
    ck_assert(command_parse(line, &call));
    command_run(h, &call);
    ck_assert_int_eq(r->n_said, 1);
    return r->said[0];
}

START_TEST(test_set)
{
    app_options o;
    const char *said;
    const char *none[] = {"--no-config"};
    ck_assert_int_eq(parse(&o, none, 1, &said), 0);
    session s;
    ck_assert_int_eq(session_open(&s, &o, &chat_needs), 0);
    recorder r = {0};
    command_host h = {.front_end = COMMAND_REPL, .s = &s, .user = &r, .say = rec_say,
                      .changed = rec_changed};
    for (int i = 0; i < N_ROWS; i++) {
        for (int b = 0; b < 2; b++) {
            const char *in = rows[i].inside[b], *out = rows[i].outside[b];
            said = set(&h, rows[i].name, in);
            ck_assert_msg(!strncmp(said, "from the next token: ", 21), "/set %s %s said [%s]",
                          rows[i].name, in, said);
            live_settings now = session_settings(&s);
            ck_assert_msg(holds(&now, rows[i].name, in), "/set %s %s did not take effect",
                          rows[i].name, in);
            /* the sampler's own settings are the engine's sampler's: there is no copy */
            ck_assert(!memcmp(&now.sampler, engine_sampler_config(s.e), sizeof now.sampler));

            said = set(&h, rows[i].name, out);
            char want[256];
            snprintf(want, sizeof want, "/set: %s %s, got '%s'", rows[i].name, rows[i].range, out);
            ck_assert_msg(!strcmp(said, want), "/set %s %s said [%s], not [%s]", rows[i].name,
                          out, said, want);
            live_settings after = session_settings(&s);
            ck_assert_msg(holds(&after, rows[i].name, in), "/set %s %s changed it", rows[i].name, out);
        }
    }
    ck_assert_int_eq(session_close(&s), 0);
    options_free(&o);
}
END_TEST

/* ---- the sampler's own check ---- */

static void put_temperature(sampler_config *c) { c->temperature = -0.001f; }
static void put_top_k(sampler_config *c) { c->top_k = -1; }
static void put_top_p(sampler_config *c) { c->top_p = 0.0f; }
static void put_min_p(sampler_config *c) { c->min_p = -0.000001f; }
static void put_repeat_penalty(sampler_config *c) { c->repeat_penalty = 0.0f; }
static void put_repeat_last_n(sampler_config *c) { c->repeat_last_n = -1; }

START_TEST(test_sampler_check_agrees)
{
    /* each sampler setting just below its lower bound: the sampler refuses it, in the
     * words /set uses (but naming the option) */
    static const struct {
        const char *name;
        void (*put)(sampler_config *c);
    } below[] = {
        {"temperature", put_temperature}, {"top-k", put_top_k}, {"top-p", put_top_p},
        {"min-p", put_min_p}, {"repeat-penalty", put_repeat_penalty},
        {"repeat-last-n", put_repeat_last_n},
    };
    for (size_t k = 0; k < sizeof below / sizeof below[0]; k++) {
        int i = 0;
        while (strcmp(rows[i].name, below[k].name) != 0)
            i++;
        sampler_config c;
        sampler_config_default(&c);
        below[k].put(&c);
        llm_err err;
        ck_assert_int_eq(sampler_config_check(&c, &err), LLM_ERR_ARG);
        char want[128];
        snprintf(want, sizeof want, "--%s %s, got ", rows[i].name, rows[i].range);
        ck_assert_msg(!strncmp(err.text, want, strlen(want)), "the sampler said [%s], not [%s...]",
                      err.text, want);
    }
}
END_TEST

static Suite *bounds_suite(void)
{
    Suite *s = suite_create("setting_bounds");
    TCase *c = tcase_create("core");
    tcase_add_checked_fixture(c, setup, NULL);
    tcase_set_timeout(c, 120);
    tcase_add_test(c, test_every_setting_has_a_row);
    tcase_add_test(c, test_option);
    tcase_add_test(c, test_config_file);
    tcase_add_test(c, test_set);
    tcase_add_test(c, test_sampler_check_agrees);
    suite_add_tcase(s, c);
    return s;
}

TEST_MAIN(bounds_suite)
