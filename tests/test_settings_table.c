/* test_settings_table.c — every row of settings_table, walked: a setting is its row
 * (and its sampler code), and everything else follows from the row. For each row a
 * value other than its default goes in through /set, the command line and the config
 * file and comes back out of a trace's header and records and a saved chat; a file
 * that leaves it out reads its default; a file that spells it the other format's way
 * reads it too; --help states its default; sampler_config_default is the table's.
 * A trace and a saved chat that llmchat wrote with its per-setting writers
 * (tests/data/settings/, see tests/data/README.md) load with the values they were
 * written with, and the writers write those settings in the same bytes. */
#define _GNU_SOURCE
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chatfile.h"
#include "json.h"
#include "options.h"
#include "settings.h"
#include "testutil.h"
#include "trace.h"
#include "trace_read.h"

/* ---- values ---- */

/* A value row allows that is not its default, as /set takes it. */
static const char *other_value(const setting_info *row, char *buf, size_t size)
{
    switch (row->type) {
    case SETTING_SEED:
        snprintf(buf, size, "18446744073709551615"); /* every bit of a uint64_t */
        break;
    case SETTING_INTEGER: {
        long v = (long)row->default_value + 7;
        if (v > (long)row->max)
            v = (long)row->default_value - 1;
        snprintf(buf, size, "%ld", v);
        break;
    }
    case SETTING_NUMBER: {
        double lo = row->min, hi = isinf(row->max) ? row->default_value + 1 : row->max;
        double v = lo + 0.3 * (hi - lo);
        if ((float)v == (float)row->default_value)
            v = lo + 0.7 * (hi - lo);
        snprintf(buf, size, "%g", v);
        break;
    }
    }
    return buf;
}

/* Every setting at its default, then, with every_row, each at its other_value (through
 * /set). */
static live_settings settings_made(bool every_row)
{
    live_settings s;
    settings_default(&s);
    for (const setting_info *row = settings_table; every_row && row->name; row++) {
        char value[64], line[128];
        snprintf(line, sizeof line, "%s %s", row->name, other_value(row, value, sizeof value));
        llm_err err;
        ck_assert_msg(settings_set_line(&s, line, &err) == LLM_OK, "/set %s: %s", line, err.text);
    }
    return s;
}

/* Does row hold the same value in a and b? Its text (exact for the integers and the
 * seed) and its number (exact for a float). */
static bool same_value(const setting_info *row, const live_settings *a, const live_settings *b)
{
    char x[64], y[64];
    settings_value_text(row, a, x, sizeof x);
    settings_value_text(row, b, y, sizeof y);
    return !strcmp(x, y) &&
           (row->type == SETTING_SEED || settings_value(row, a) == settings_value(row, b));
}

static void assert_same(const char *where, const setting_info *row, const live_settings *got,
                        const live_settings *want)
{
    char x[64], y[64];
    ck_assert_msg(same_value(row, got, want), "%s: %s is %s, not %s", where, row->name,
                  settings_value_text(row, got, x, sizeof x),
                  settings_value_text(row, want, y, sizeof y));
}

/* ---- the rows themselves ---- */

START_TEST(test_rows_are_whole)
{
    live_settings def;
    settings_default(&def);
    sampler_config sc;
    sampler_config_default(&sc);
    live_settings from_sampler = {.sampler = sc};
    int n = 0, n_chat = 0;
    bool place_taken[SETTINGS_COUNT + 1] = {false};
    for (const setting_info *row = settings_table; row->name; row++, n++) {
        /* what the sampler runs with is in every file that records a run */
        if (settings_of_sampler(row)) {
            ck_assert_msg(row->trace_key && row->chat_key, "%s has no key in traces or chats",
                          row->name);
            assert_same("sampler_config_default", row, &from_sampler, &def);
        }
        ck_assert_msg(settings_in_range(row, &def), "%s's default is out of its bounds",
                      row->name);
        ck_assert_msg(!row->has_off || row->type != SETTING_SEED, "%s: a seed is never off",
                      row->name);
        if (row->chat_key) {
            ck_assert_msg(row->chat_place >= 1 && row->chat_place <= SETTINGS_COUNT &&
                              !place_taken[row->chat_place],
                          "%s: chat_place %d is not a free place from 1", row->name,
                          row->chat_place);
            place_taken[row->chat_place] = true;
            n_chat++;
        }
        for (const setting_info *o = settings_table; o < row; o++) {
            ck_assert_msg(!row->trace_key || !o->trace_key || strcmp(row->trace_key, o->trace_key),
                          "trace key %s twice", row->trace_key);
            ck_assert_msg(!row->chat_key || !o->chat_key || strcmp(row->chat_key, o->chat_key),
                          "chat key %s twice", row->chat_key);
        }
    }
    ck_assert_int_eq(n, SETTINGS_COUNT);
    for (int p = 1; p <= n_chat; p++)
        ck_assert_msg(place_taken[p], "no setting takes chat place %d of %d", p, n_chat);
}
END_TEST

/* ---- through a trace ---- */

/* Writes a trace whose header and one sampled record carry s; returns its path. */
static const char *write_trace(const live_settings *s)
{
    const char *path = temp_path("settings.jsonl");
    trace_writer *t = NULL;
    llm_err err;
    ck_assert_int_eq(trace_open(path, NULL, NULL, false, &t, &err), LLM_OK);
    trace_run run = {.mode = "chat", .sampler = &s->sampler, .steps = s->steps, .ctx = 64};
    trace_describe(t, &run);
    step_record r;
    memset(&r, 0, sizeof r);
    r.token = 1;
    r.phase = STEP_GEN;
    r.next = 2;
    r.next_rank = 1;
    r.n_top = 1;
    r.top[0] = (step_candidate){.id = 2, .logit = 1, .prob = 0.5f, .p_final = 1};
    r.sampled = true;
    r.sampler.config = s->sampler;
    r.sampler.chosen = 2;
    r.sampler.chosen_rank = 1;
    r.sampler.draw = 0.5f;
    ck_assert_int_eq(trace_write(t, &r), LLM_OK);
    ck_assert_int_eq(trace_close(t, &err), LLM_OK);
    return path;
}

/* The header's settings and the first record's sampler settings of trace r. */
static void trace_settings(const trace_reader *r, live_settings *header, live_settings *record)
{
    const trace_header *h = trace_reader_header(r);
    ck_assert(h->has_sampler);
    *header = (live_settings){.sampler = h->sampler, .steps = h->steps};
    ck_assert_int_ge(trace_reader_count(r), 1);
    ck_assert_int_eq(trace_reader_records_partial(r), 0);
    *record = (live_settings){.sampler = trace_reader_record(r, 0)->sampler.config};
}

static void check_trace(const char *what, const trace_reader *r, const live_settings *want)
{
    live_settings header, record;
    trace_settings(r, &header, &record);
    char where[128];
    for (const setting_info *row = settings_table; row->name; row++) {
        if (!row->trace_key)
            continue;
        snprintf(where, sizeof where, "%s, header", what);
        assert_same(where, row, &header, want);
        if (settings_of_sampler(row)) {
            snprintf(where, sizeof where, "%s, record", what);
            assert_same(where, row, &record, want);
        }
    }
}

START_TEST(test_trace_round_trip)
{
    for (int every = 0; every <= 1; every++) {
        live_settings want = settings_made(every);
        const char *path = write_trace(&want);
        trace_reader *r = NULL;
        llm_err err;
        ck_assert_int_eq(trace_read_file(path, &r, &err), LLM_OK);
        check_trace(every ? "a trace of other values" : "a trace of the defaults", r, &want);
        trace_reader_free(r);
        remove(path);
    }
}
END_TEST

/* A member list of s ("\"top-p\": 0.3, ...") under each row's chat key (chat_keys) or
 * trace key, for the rows that have both or the asked one. */
static void members(const live_settings *s, bool chat_keys, char *buf, size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (const setting_info *row = settings_table; row->name; row++) {
        const char *key = chat_keys && row->chat_key ? row->chat_key : row->trace_key;
        if (!chat_keys && !key)
            key = row->chat_key;
        if (!key)
            continue;
        char value[64];
        o += (size_t)snprintf(buf + o, size - o, "%s\"%s\": %s", o ? ", " : "", key,
                              settings_value_text(row, s, value, sizeof value));
        ck_assert_uint_lt(o, size);
    }
}

START_TEST(test_trace_reads_both_spellings)
{
    live_settings want = settings_made(true), none;
    settings_default(&none);
    char m[1024], text[4096];
    members(&want, true, m, sizeof m);
    snprintf(text, sizeof text,
             "{\"llmchat_trace\": 1, \"options\": {%s, \"ctx\": 64}}\n"
             "{\"pos\": 0, \"token\": 1, \"phase\": \"gen\", \"next\": 2, \"top\": [[2, 1, 0.5]], "
             "\"sampler\": {%s, \"greedy\": false, \"chosen\": 2}}\n",
             m, m);
    trace_reader *r = NULL;
    llm_err err;
    ck_assert_int_eq(trace_read_buffer(text, strlen(text), &r, &err), LLM_OK);
    check_trace("a trace spelt as a saved chat", r, &want);
    trace_reader_free(r);

    /* a header whose options name no setting: every one at its default */
    snprintf(text, sizeof text,
             "{\"llmchat_trace\": 1, \"options\": {\"ctx\": 64}}\n"
             "{\"pos\": 0, \"token\": 1, \"phase\": \"gen\", \"next\": 2, \"top\": [[2, 1, 0.5]], "
             "\"sampler\": {\"greedy\": false, \"chosen\": 2}}\n");
    ck_assert_int_eq(trace_read_buffer(text, strlen(text), &r, &err), LLM_OK);
    check_trace("a trace that names no setting", r, &none);
    trace_reader_free(r);
}
END_TEST

/* ---- through a saved chat ---- */

/* cf printed and parsed back into *back. */
/* The settings_held of a chat file that names every setting with a chat key. */
static unsigned chat_keys_mask(void)
{
    unsigned mask = 0;
    for (int i = 0; settings_table[i].name; i++)
        if (settings_table[i].chat_key)
            mask |= 1u << i;
    return mask;
}

static void chat_round_trip(const chatfile *cf, chatfile *back, char **text)
{
    size_t len;
    FILE *f = open_memstream(text, &len);
    ck_assert_ptr_nonnull(f);
    chatfile_print(f, cf);
    fclose(f);
    llm_err err;
    ck_assert_msg(chatfile_parse("chat.json", *text, len, back, &err) == LLM_OK, "%s", err.text);
}

static void check_chat(const char *what, const chatfile *back, const live_settings *want)
{
    live_settings got = {.sampler = back->sampler, .steps = back->steps};
    for (const setting_info *row = settings_table; row->name; row++)
        if (row->chat_key)
            assert_same(what, row, &got, want);
}

START_TEST(test_chat_round_trip)
{
    for (int every = 0; every <= 1; every++) {
        live_settings want = settings_made(every);
        chatfile cf, back;
        chatfile_init(&cf);
        cf.sampler = want.sampler;
        cf.steps = want.steps;
        cf.ctx = 64;
        char *text = NULL;
        chat_round_trip(&cf, &back, &text);
        ck_assert_uint_eq(back.settings_held, chat_keys_mask());
        ck_assert_int_eq(back.ctx, 64);
        check_chat(every ? "a chat of other values" : "a chat of the defaults", &back, &want);
        free(text);
        chatfile_clear(&back);
        chatfile_clear(&cf);
    }
}
END_TEST

START_TEST(test_chat_reads_both_spellings)
{
    live_settings want = settings_made(true), none;
    settings_default(&none);
    char m[1024], text[2048];
    members(&want, false, m, sizeof m);
    snprintf(text, sizeof text, "{\"llmchat_chat\": 1, \"settings\": {%s}, \"turns\": []}", m);
    chatfile back;
    llm_err err;
    ck_assert_msg(chatfile_parse("chat.json", text, strlen(text), &back, &err) == LLM_OK, "%s",
                  err.text);
    /* the rows a saved chat holds, read under their trace keys */
    check_chat("a chat spelt as a trace", &back, &want);
    chatfile_clear(&back);

    const char *empty = "{\"llmchat_chat\": 1, \"settings\": {}, \"turns\": []}";
    ck_assert_int_eq(chatfile_parse("chat.json", empty, strlen(empty), &back, &err), LLM_OK);
    check_chat("a chat that names no setting", &back, &none);
    chatfile_clear(&back);

    /* a value out of a row's bounds is refused, naming the member and the range */
    for (const setting_info *row = settings_table; row->name; row++) {
        if (!row->chat_key || row->type == SETTING_SEED)
            continue;
        snprintf(text, sizeof text,
                 "{\"llmchat_chat\": 1, \"settings\": {\"%s\": -1e30}, \"turns\": []}",
                 row->chat_key);
        err.text[0] = '\0';
        ck_assert_int_eq(chatfile_parse("chat.json", text, strlen(text), &back, &err),
                         LLM_ERR_FORMAT);
        char want_text[256];
        snprintf(want_text, sizeof want_text, "chat.json: \"%s\" %s, got -1e30", row->chat_key,
                 settings_range(row));
        ck_assert_str_eq(err.text, want_text);
    }
}
END_TEST

/* ---- through /set, the command line and the config file ---- */

static void no_environment(void)
{
    setenv("XDG_CONFIG_HOME", temp_path("no-config-here"), 1);
    unsetenv("LLMCHAT_STEP_DELAY_MS");
    unsetenv("LLMCHAT_MODEL");
}

/* options_parse over "llmchat -m chat" and args. */
static live_settings parsed(const char *const *args, int n_args)
{
    char *argv[2 * SETTINGS_COUNT + 8] = {"llmchat", "-m", "chat"};
    int argc = 3;
    for (int i = 0; i < n_args; i++)
        argv[argc++] = (char *)args[i];
    argv[argc] = NULL;
    app_options o;
    ck_assert_int_eq(options_parse(argc, argv, &o), 0);
    live_settings s = {.sampler = o.sampler, .steps = o.steps, .slow_motion_ms = o.slow_motion_ms};
    options_free(&o);
    return s;
}

START_TEST(test_set_command_line_and_config)
{
    no_environment();
    live_settings want = settings_made(true); /* through /set */
    static char values[SETTINGS_COUNT][64], options[SETTINGS_COUNT][64];
    const char *args[2 * SETTINGS_COUNT + 1] = {"--no-config"};
    int n = 1;
    const char *config = temp_path("config");
    FILE *f = fopen(config, "w");
    ck_assert_ptr_nonnull(f);
    for (const setting_info *row = settings_table; row->name; row++) {
        int i = (int)(row - settings_table);
        other_value(row, values[i], sizeof values[i]);
        snprintf(options[i], sizeof options[i], "--%s", row->name);
        args[n++] = options[i];
        args[n++] = values[i];
        fprintf(f, "%s = %s\n", row->name, values[i]);
    }
    fclose(f);
    live_settings from_line = parsed(args, n);
    const char *from_file_args[] = {"--config", config};
    live_settings from_file = parsed(from_file_args, 2);
    remove(config);
    for (const setting_info *row = settings_table; row->name; row++) {
        assert_same("the command line", row, &from_line, &want);
        assert_same("the config file", row, &from_file, &want);
    }
}
END_TEST

/* ---- --help ---- */

/* text with every run of blanks and newlines made one space. */
static char *squeezed(const char *text)
{
    char *out = malloc(strlen(text) + 1), *o = out;
    for (const char *p = text; *p; p++)
        if (!isspace((unsigned char)*p))
            *o++ = *p;
        else if (o > out && o[-1] != ' ')
            *o++ = ' ';
    *o = '\0';
    return out;
}

START_TEST(test_help_states_defaults)
{
    char *usage = NULL;
    size_t len;
    FILE *f = open_memstream(&usage, &len);
    options_usage(f);
    fclose(f);
    char *help = squeezed(usage);
    live_settings def;
    settings_default(&def);
    for (const setting_info *row = settings_table; row->name; row++) {
        /* the option's line is "--NAME ARG" and its text, wrapped */
        char *text = squeezed(settings_help(row)), head[64];
        snprintf(head, sizeof head, "--%s %s ", row->name, row->arg);
        char *at = strstr(help, head);
        ck_assert_msg(at, "--help has no %s", head);
        ck_assert_msg(!strncmp(at + strlen(head), text, strlen(text)),
                      "--help's %s does not say [%s]", head, text);
        /* one "(default", stating the row's */
        char *d = strstr(text, "(default");
        ck_assert_msg(d && !strstr(d + 1, "(default"), "[%s]: not one (default ...)", text);
        char want[160], value[32];
        if (row->default_words)
            snprintf(want, sizeof want, "(default: %s)", row->default_words);
        else
            snprintf(want, sizeof want, "(default %s",
                     settings_value_text(row, &def, value, sizeof value));
        ck_assert_msg(!strncmp(d, want, strlen(want)), "[%s] does not state [%s]", text, want);
        free(text);
    }
    free(help);
    free(usage);
}
END_TEST

/* ---- files written before ---- */

/* The settings of the trace and the saved chat in tests/data/settings/: a chat of two
 * turns of 5 tokens started with every sampler setting off its default (-t 0.7 -k 40
 * -p 0.85 --min-p 0.05 --repeat-penalty 1.1 --repeat-last-n 32 -s 12345 -n 5 -c 128),
 * and "/set temperature 0.5", "/set top-p 0.8", "/set min-p 0.02" before the second. */
static void assert_start(const sampler_config *c)
{
    ck_assert(c->temperature == 0.7f && c->top_k == 40 && c->top_p == 0.85f &&
              c->min_p == 0.05f && c->repeat_penalty == 1.1f && c->repeat_last_n == 32 &&
              c->seed == 12345);
}

static void assert_after_set(const sampler_config *c)
{
    ck_assert(c->temperature == 0.5f && c->top_k == 40 && c->top_p == 0.8f &&
              c->min_p == 0.02f && c->repeat_penalty == 1.1f && c->repeat_last_n == 32 &&
              c->seed == 12345);
}

/* The text of s from `from` up to (not including) `to`, both found in s (a static
 * buffer). */
static const char *between(const char *s, const char *from, const char *to)
{
    static char buf[1024];
    const char *a = strstr(s, from);
    ck_assert_msg(a, "no [%s]", from);
    const char *b = strstr(a, to);
    ck_assert_msg(b, "no [%s] after [%s]", to, from);
    snprintf(buf, sizeof buf, "%.*s", (int)(b - a), a);
    return buf;
}

/* text (written now) without the members of settings the file `before` does not hold:
 * a row added to the table since is written too, and the rest must be as before.
 * sep is the format's separator between members ("," or ", "). */
static void drop_new_members(char *text, const char *before, bool chat, const char *sep)
{
    for (const setting_info *row = settings_table; row->name; row++) {
        const char *key = chat ? row->chat_key : row->trace_key;
        if (!key)
            continue;
        char member[96];
        snprintf(member, sizeof member, "\"%s\":%s", key, chat ? " " : "");
        char *at = strstr(text, member);
        if (strstr(before, member) || !at)
            continue;
        char *end = at + strcspn(at + strlen(member), ",}") + strlen(member);
        size_t n = strlen(sep);
        if (at - text >= (long)n && !strncmp(at - n, sep, n))
            at -= n; /* ", member" */
        else if (!strncmp(end, sep, n))
            end += n; /* "member, " */
        memmove(at, end, strlen(end) + 1);
    }
}

START_TEST(test_trace_written_before)
{
    const char *path = data_path("settings/trace.jsonl");
    trace_reader *r = NULL;
    llm_err err;
    ck_assert_int_eq(trace_read_file(path, &r, &err), LLM_OK);
    ck_assert_int_eq(trace_reader_problem_count(r), 0);
    const trace_header *h = trace_reader_header(r);
    ck_assert(h->has_sampler);
    assert_start(&h->sampler);
    ck_assert_int_eq(h->steps, 5);
    ck_assert_int_eq(h->ctx, 128);
    live_settings s = {.sampler = h->sampler, .steps = h->steps};
    int first = 0, second = 0;
    for (int i = 0; i < trace_reader_count(r); i++) {
        const step_record *rec = trace_reader_record(r, i);
        if (!rec->sampled)
            continue;
        if (rec->sampler.config.temperature == 0.7f) {
            ck_assert_int_eq(second, 0);
            assert_start(&rec->sampler.config);
            first++;
        } else {
            assert_after_set(&rec->sampler.config);
            second++;
        }
    }
    ck_assert_int_eq(first, 5);
    ck_assert_int_eq(second, 5);
    trace_reader_free(r);

    /* the writer writes those settings in the same bytes */
    size_t size;
    char *before = (char *)read_whole_file(path, &size);
    before = realloc(before, size + 1);
    before[size] = '\0';
    const char *written = write_trace(&s);
    char *now = (char *)read_whole_file(written, &size);
    now = realloc(now, size + 1);
    now[size] = '\0';
    char part_before[1024], part_now[1024];
    snprintf(part_before, sizeof part_before, "%s", between(before, "\"options\":", ",\"ctx\""));
    snprintf(part_now, sizeof part_now, "%s", between(now, "\"options\":", ",\"ctx\""));
    drop_new_members(part_now, part_before, false, ",");
    ck_assert_str_eq(part_now, part_before);
    snprintf(part_before, sizeof part_before, "%s",
             between(before, "\"sampler\":{", "\"n_penalized\""));
    snprintf(part_now, sizeof part_now, "%s", between(now, "\"sampler\":{", "\"n_penalized\""));
    drop_new_members(part_now, part_before, false, ",");
    ck_assert_str_eq(part_now, part_before);
    ck_assert_ptr_nonnull(strstr(before, ",\"seed\":12345,\"p_final\""));
    ck_assert_ptr_nonnull(strstr(now, ",\"seed\":12345,\"p_final\""));
    free(before);
    free(now);
    remove(written);
}
END_TEST

START_TEST(test_chat_written_before)
{
    const char *path = data_path("settings/chat.json");
    chatfile cf;
    llm_err err;
    ck_assert_int_eq(chatfile_read(path, &cf, &err), LLM_OK);
    ck_assert_uint_ne(cf.settings_held, 0);
    assert_after_set(&cf.sampler);
    ck_assert_int_eq(cf.steps, 5);
    ck_assert_int_eq(cf.ctx, 128);
    ck_assert_int_eq(cf.n_turns, 2);

    /* written again, the file is the same bytes */
    size_t size;
    char *before = (char *)read_whole_file(path, &size);
    before = realloc(before, size + 1);
    before[size] = '\0';
    char *now = NULL;
    size_t len;
    FILE *f = open_memstream(&now, &len);
    chatfile_print(f, &cf);
    fclose(f);
    drop_new_members(now, before, true, ", ");
    /* and the member newer files say how they escape raw bytes with (json.h) */
    const char *raw = ", \"" JSON_RAW_BYTES_KEY "\": " JSON_RAW_BYTES_VALUE;
    char *at = strstr(now, raw);
    ck_assert_ptr_nonnull(at);
    memmove(at, at + strlen(raw), strlen(at + strlen(raw)) + 1);
    ck_assert_str_eq(now, before);
    free(before);
    free(now);
    chatfile_clear(&cf);
}
END_TEST

/* A number in a file is read as the same text typed: every row takes and refuses the
 * same numbers from JSON as from /set (1e-50 and 1e-40 too small for a float, 2^32 for
 * an int, a negative seed), with the same words. */
START_TEST(test_json_numbers_read_as_typed)
{
    static const char *const numbers[] = {"0",     "1",   "0.5", "-1",  "1e-50", "1e-40",
                                          "1e-38", "2",   "42",  "4294967296",
                                          "3.4e38", "1e39", "18446744073709551615", "-0"};
    for (const setting_info *row = settings_table; row->name; row++)
        for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
            live_settings typed, filed;
            memset(&typed, 0, sizeof typed); /* the padding too: compared whole below */
            memset(&filed, 0, sizeof filed);
            settings_default(&typed);
            settings_default(&filed);
            json_value *v = NULL;
            llm_err err;
            ck_assert(json_parse(numbers[i], strlen(numbers[i]), &v, &err) == LLM_OK);
            const char *a = settings_parse(row, &typed, numbers[i]);
            const char *b = settings_from_json(row, &filed, v);
            ck_assert_msg((a == NULL) == (b == NULL) && (!a || !strcmp(a, b)),
                          "%s %s: typed [%s], from a file [%s]", row->name, numbers[i],
                          a ? a : "ok", b ? b : "ok");
            ck_assert_msg(!memcmp(&typed, &filed, sizeof typed), "%s %s: other values",
                          row->name, numbers[i]);
            json_free(v);
        }
    /* and what that is, for one row: a float's underflow is refused as its overflow */
    const setting_info *t = settings_find("temperature");
    live_settings ls;
    settings_default(&ls);
    json_value *v = NULL;
    llm_err err;
    ck_assert(json_parse("1e-40", 5, &v, &err) == LLM_OK);
    ck_assert_ptr_nonnull(settings_from_json(t, &ls, v));
    json_free(v);
    ck_assert(json_parse("0.25", 4, &v, &err) == LLM_OK);
    ck_assert_ptr_null(settings_from_json(t, &ls, v));
    ck_assert(ls.sampler.temperature == 0.25f);
    json_free(v);
}
END_TEST

static Suite *settings_table_suite(void)
{
    Suite *s = suite_create("settings_table");
    TCase *c = tcase_create("core");
    tcase_add_test(c, test_rows_are_whole);
    tcase_add_test(c, test_trace_round_trip);
    tcase_add_test(c, test_trace_reads_both_spellings);
    tcase_add_test(c, test_chat_round_trip);
    tcase_add_test(c, test_chat_reads_both_spellings);
    tcase_add_test(c, test_set_command_line_and_config);
    tcase_add_test(c, test_help_states_defaults);
    tcase_add_test(c, test_trace_written_before);
    tcase_add_test(c, test_chat_written_before);
    tcase_add_test(c, test_json_numbers_read_as_typed);
    suite_add_tcase(s, c);
    return s;
}

TEST_MAIN(settings_table_suite)
