/* settings.c — the table of live settings, and their defaults, parsing, checking and
 * formatting through it (settings.h).
 *
 * Owns the table, and the range phrases and --help texts made from its rows. Works on
 * the caller's live_settings; never prints. A value must be a whole number or a
 * decimal in its setting's range, whether it comes as text or as a JSON member; the
 * messages are phrases that follow the setting's name, as /set, the command line, the
 * config file, the sampler's check and the saved chat's reader print them. */
#include "settings.h"

#include <ctype.h>
#include <inttypes.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "parse_number.h"

#define SAMPLER_FIELD(f) (offsetof(live_settings, sampler) + offsetof(sampler_config, f))

const setting_info settings_table[] = {
    {.name = "temperature", .trace_key = "temperature", .chat_key = "temperature",
     .chat_place = 1, .short_name = 't', .arg = "F", .type = SETTING_NUMBER,
     .default_value = 1, .brief = "T", .min = 0, .max = INFINITY,
     .offset = SAMPLER_FIELD(temperature), .help = "0 = greedy"},
    {.name = "top-k", .trace_key = "top_k", .chat_key = "top-k", .chat_place = 3,
     .short_name = 'k', .arg = "N", .type = SETTING_INTEGER, .default_value = 0,
     .has_off = true, .off = 0, .brief = "k", .min = 0, .max = INT32_MAX,
     .offset = SAMPLER_FIELD(top_k), .help = "keep the N most likely tokens"},
    {.name = "top-p", .trace_key = "top_p", .chat_key = "top-p", .chat_place = 2,
     .short_name = 'p', .arg = "F", .type = SETTING_NUMBER, .default_value = 0.9,
     .has_off = true, .off = 1, .brief = "p", .min = 0, .min_excluded = true, .max = 1,
     .offset = SAMPLER_FIELD(top_p), .help = "nucleus sampling"},
    {.name = "min-p", .trace_key = "min_p", .chat_key = "min-p", .chat_place = 4,
     .arg = "F", .type = SETTING_NUMBER, .default_value = 0, .has_off = true, .off = 0,
     .brief = "min-p", .min = 0, .max = 1, .max_excluded = true,
     .offset = SAMPLER_FIELD(min_p), .help = "drop tokens below F x the top probability"},
    {.name = "repeat-penalty", .trace_key = "repeat_penalty", .chat_key = "repeat-penalty",
     .chat_place = 5, .arg = "F", .type = SETTING_NUMBER, .default_value = 1,
     .has_off = true, .off = 1, .brief = "rep", .min = 0, .min_excluded = true,
     .max = INFINITY, .offset = SAMPLER_FIELD(repeat_penalty),
     .help = "penalise recent tokens"},
    {.name = "repeat-last-n", .trace_key = "repeat_last_n", .chat_key = "repeat-last-n",
     .chat_place = 6, .arg = "N", .type = SETTING_INTEGER, .default_value = 64,
     .min = 0, .max = INT32_MAX, .offset = SAMPLER_FIELD(repeat_last_n),
     .help = "tokens the penalty looks back over"},
    {.name = "seed", .trace_key = "seed", .chat_key = "seed", .chat_place = 7,
     .short_name = 's', .arg = "N", .type = SETTING_SEED, .default_value = 0,
     .default_words = "time-based, shown in the status", .min = 0,
     .max = (double)UINT64_MAX, .offset = SAMPLER_FIELD(seed), .help = "random seed"},
    {.name = "steps", .trace_key = "steps", .chat_key = "steps", .chat_place = 8,
     .short_name = 'n', .arg = "N", .type = SETTING_INTEGER, .default_value = 0,
     .default_words = "generate 256; chat 0 = until the model ends its reply",
     .min = 0, .max = SETTINGS_STEPS_MAX, .offset = offsetof(live_settings, steps),
     .help = "most new tokens per reply/generation"},
    {.name = "slow-motion", .arg = "MS", .type = SETTING_INTEGER, .default_value = 0,
     .has_off = true, .off = 0, .min = 0, .max = SETTINGS_SLOW_MOTION_MAX,
     .unit = "milliseconds", .offset = offsetof(live_settings, slow_motion_ms),
     .help = "tui: wait MS milliseconds after each reply token, to watch and steer it; "
             "/set slow-motion, the s key and LLMCHAT_STEP_DELAY_MS set it too"},
    {.name = NULL},
};

_Static_assert(sizeof settings_table / sizeof settings_table[0] == SETTINGS_COUNT + 1,
               "SETTINGS_COUNT counts the rows of settings_table");

const setting_info *settings_find(const char *name)
{
    for (const setting_info *r = settings_table; name && r->name; r++)
        if (!strcmp(name, r->name))
            return r;
    return NULL;
}

bool settings_is_live(const char *name)
{
    return settings_find(name) != NULL;
}

bool settings_of_sampler(const setting_info *row)
{
    size_t from = offsetof(live_settings, sampler);
    return row->offset >= from && row->offset < from + sizeof(sampler_config);
}

/* ---- a row's field in a live_settings ---- */

static const void *field(const setting_info *row, const live_settings *s)
{
    return (const char *)s + row->offset;
}

double settings_value(const setting_info *row, const live_settings *s)
{
    switch (row->type) {
    case SETTING_NUMBER: return *(const float *)field(row, s);
    case SETTING_INTEGER: return *(const int *)field(row, s);
    case SETTING_SEED: return (double)*(const uint64_t *)field(row, s);
    }
    return NAN;
}

/* The whole numbers an integer row allows. */
static long int_min(const setting_info *row)
{
    return (long)row->min + row->min_excluded;
}

static long int_max(const setting_info *row)
{
    return (long)row->max - row->max_excluded;
}

bool settings_in_range(const setting_info *row, const live_settings *s)
{
    if (row->type == SETTING_SEED)
        return true; /* every uint64_t is a seed */
    double v = settings_value(row, s);
    if (!isfinite(v))
        return false;
    bool above = row->min_excluded ? v > row->min : v >= row->min;
    bool below = row->max_excluded ? v < row->max : v <= row->max;
    return above && below;
}

void settings_copy(const setting_info *row, live_settings *to, const live_settings *from)
{
    size_t bytes = row->type == SETTING_NUMBER ? sizeof(float)
                   : row->type == SETTING_INTEGER ? sizeof(int) : sizeof(uint64_t);
    memcpy((char *)to + row->offset, field(row, from), bytes);
}

/* Sets row's field in s to x (a whole number for an integer or the seed). */
static void set_field(const setting_info *row, live_settings *s, double x)
{
    void *to = (char *)s + row->offset;
    switch (row->type) {
    case SETTING_NUMBER: *(float *)to = (float)x; break;
    case SETTING_INTEGER: *(int *)to = (int)x; break;
    case SETTING_SEED: *(uint64_t *)to = (uint64_t)x; break;
    }
}

void settings_default(live_settings *s)
{
    memset(s, 0, sizeof *s);
    for (const setting_info *r = settings_table; r->name; r++)
        set_field(r, s, r->default_value);
}

/* ---- what a row allows, in words ---- */

static void describe_range(const setting_info *row, char *buf, size_t size)
{
    switch (row->type) {
    case SETTING_NUMBER:
        if (isinf(row->max))
            snprintf(buf, size, "must be a number %s %g (at most %.2g)",
                     row->min_excluded ? ">" : ">=", row->min, (double)FLT_MAX);
        else
            snprintf(buf, size, "must be in %c%g, %g%c", row->min_excluded ? '(' : '[', row->min,
                     row->max, row->max_excluded ? ')' : ']');
        return;
    case SETTING_INTEGER:
        snprintf(buf, size, "must be %s%s from %ld to %ld", row->unit ? "a number of " : "an integer",
                 row->unit ? row->unit : "", int_min(row), int_max(row));
        return;
    case SETTING_SEED:
        snprintf(buf, size, "must be a non-negative integer up to %" PRIu64, UINT64_MAX);
        return;
    }
}

const char *settings_range(const setting_info *row)
{
    static char ranges[SETTINGS_COUNT][96]; /* made once, from the bounds */
    char *buf = ranges[row - settings_table];
    if (!*buf)
        describe_range(row, buf, sizeof ranges[0]);
    return buf;
}

const char *settings_value_text(const setting_info *row, const live_settings *s, char *buf,
                                size_t size)
{
    switch (row->type) {
    case SETTING_NUMBER: snprintf(buf, size, "%g", *(const float *)field(row, s)); break;
    case SETTING_INTEGER: snprintf(buf, size, "%d", *(const int *)field(row, s)); break;
    case SETTING_SEED: snprintf(buf, size, "%" PRIu64, *(const uint64_t *)field(row, s)); break;
    }
    return buf;
}

/* "(default 0.9; 1 = off)": the default as settings_format shows a value, and the
 * value that turns the setting off. */
static void describe_default(const setting_info *row, char *buf, size_t size)
{
    if (row->default_words) {
        snprintf(buf, size, "(default: %s)", row->default_words);
        return;
    }
    live_settings s;
    settings_default(&s);
    char def[32], off[32];
    settings_value_text(row, &s, def, sizeof def);
    set_field(row, &s, row->off);
    settings_value_text(row, &s, off, sizeof off);
    if (!row->has_off)
        snprintf(buf, size, "(default %s)", def);
    else if (!strcmp(def, off))
        snprintf(buf, size, "(default %s = off)", def);
    else
        snprintf(buf, size, "(default %s; %s = off)", def, off);
}

const char *settings_help(const setting_info *row)
{
    static char helps[SETTINGS_COUNT][256]; /* made once, from the row */
    char *buf = helps[row - settings_table];
    if (!*buf) {
        char def[128];
        describe_default(row, def, sizeof def);
        snprintf(buf, sizeof helps[0], "%s %s", row->help, def);
    }
    return buf;
}

/* ---- setting values ---- */

const char *settings_parse(const setting_info *row, live_settings *s, const char *value)
{
    live_settings next = *s;
    void *to = (char *)&next + row->offset;
    bool ok = false;
    switch (row->type) {
    case SETTING_NUMBER: ok = parse_float(value, to); break;
    case SETTING_INTEGER: ok = parse_int(value, int_min(row), int_max(row), to); break;
    case SETTING_SEED: ok = parse_u64(value, to); break;
    }
    if (!ok || !settings_in_range(row, &next))
        return settings_range(row);
    *s = next;
    return NULL;
}

const char *settings_from_json(const setting_info *row, live_settings *s,
                               const struct json_value *v)
{
    /* a number's own text, parsed as typed text is: JSON's numbers are a part of what
     * the command line takes, so a value means the same in a file */
    if (v->type != JSON_NUMBER || !v->text)
        return settings_range(row);
    return settings_parse(row, s, v->text);
}

const char *settings_apply(live_settings *s, const char *name, const char *value)
{
    const setting_info *row = settings_find(name);
    return row ? settings_parse(row, s, value) : "is not a setting";
}

/* "temperature, top-k, ..., slow-motion": every name, for the messages. */
static const char *all_names(void)
{
    static char names[256];
    if (!*names)
        for (const setting_info *r = settings_table; r->name; r++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     r == settings_table ? "" : ", ", r->name);
    return names;
}

/* Copies the next blank-separated word of *p into word and moves *p past it and the
 * blanks after it. False when the word was longer than size - 1 bytes (then cut). */
static bool next_word(const char **p, char *word, size_t size)
{
    size_t n = 0;
    bool fits = true;
    for (; **p && !isspace((unsigned char)**p); (*p)++) {
        if (n < size - 1)
            word[n++] = **p;
        else
            fits = false;
    }
    word[n] = '\0';
    while (isspace((unsigned char)**p))
        (*p)++;
    return fits;
}

llm_status settings_set_line(live_settings *s, const char *line, llm_err *err)
{
    char name[64], value[128];
    const char *p = line ? line : "";
    while (isspace((unsigned char)*p))
        p++;
    next_word(&p, name, sizeof name);
    if (!*name)
        return llm_fail(err, LLM_ERR_ARG, "set what? /set NAME VALUE, NAME one of %s", all_names());
    const setting_info *row = settings_find(name);
    if (!row)
        return llm_fail(err, LLM_ERR_ARG, "unknown setting '%s': one of %s", name, all_names());
    bool whole = next_word(&p, value, sizeof value);
    if (!*value)
        return llm_fail(err, LLM_ERR_ARG, "%s needs a value: /set %s VALUE", name, name);
    if (*p)
        return llm_fail(err, LLM_ERR_ARG, "/set takes one name and one value, e.g. "
                                          "'/set temperature 0.7'");
    const char *why = whole ? settings_parse(row, s, value) : settings_range(row);
    if (why)
        return llm_fail(err, LLM_ERR_ARG, "%s %s, got '%s%s'", name, why, value, whole ? "" : "...");
    return LLM_OK;
}

int settings_format(const live_settings *s, char *buf, size_t size)
{
    size_t o = 0;
    if (size)
        buf[0] = '\0';
    for (const setting_info *r = settings_table; r->name; r++) {
        char value[32];
        settings_value_text(r, s, value, sizeof value);
        o += (size_t)snprintf(buf + (o < size ? o : size), o < size ? size - o : 0, "%s%s %s",
                              r == settings_table ? "" : "  ", r->name, value);
    }
    return (int)o;
}

int settings_format_short(const sampler_config *c, char *buf, size_t size)
{
    live_settings s = {.sampler = *c};
    size_t o = 0;
    if (size)
        buf[0] = '\0';
    for (const setting_info *r = settings_table; r->name; r++) {
        bool off = r->has_off && settings_value(r, &s) == r->off;
        if (!r->brief || !settings_of_sampler(r) || off)
            continue;
        char value[32];
        settings_value_text(r, &s, value, sizeof value);
        o += (size_t)snprintf(buf + (o < size ? o : size), o < size ? size - o : 0, "%s%s %s",
                              o ? " " : "", r->brief, value);
    }
    return (int)o;
}
