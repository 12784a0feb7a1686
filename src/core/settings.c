/* settings.c — the table of live settings, and parsing, checking and formatting
 * them through it (settings.h).
 *
 * Owns the table and the range phrases made from its bounds. Works on the caller's
 * live_settings; never prints. A value must be a whole number or a decimal in its
 * setting's range; the messages are phrases that follow the setting's name, as /set,
 * the command line, the config file and the sampler's check print them. */
#include "settings.h"

#include <ctype.h>
#include <inttypes.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse_number.h"

#define SAMPLER_FIELD(f) (offsetof(live_settings, sampler) + offsetof(sampler_config, f))

const setting_info settings_table[] = {
    {.name = "temperature", .short_name = 't', .arg = "F", .type = SETTING_NUMBER,
     .min = 0, .max = INFINITY, .offset = SAMPLER_FIELD(temperature),
     .help = "0 = greedy (default 1.0)"},
    {.name = "top-k", .short_name = 'k', .arg = "N", .type = SETTING_INTEGER,
     .min = 0, .max = INT32_MAX, .offset = SAMPLER_FIELD(top_k),
     .help = "keep the N most likely tokens (default 0 = off)"},
    {.name = "top-p", .short_name = 'p', .arg = "F", .type = SETTING_NUMBER,
     .min = 0, .min_excluded = true, .max = 1, .offset = SAMPLER_FIELD(top_p),
     .help = "nucleus sampling (default 0.9; 1 = off)"},
    {.name = "min-p", .arg = "F", .type = SETTING_NUMBER,
     .min = 0, .max = 1, .max_excluded = true, .offset = SAMPLER_FIELD(min_p),
     .help = "drop tokens below F x the top probability (default 0 = off)"},
    {.name = "repeat-penalty", .arg = "F", .type = SETTING_NUMBER,
     .min = 0, .min_excluded = true, .max = INFINITY, .offset = SAMPLER_FIELD(repeat_penalty),
     .help = "penalise recent tokens (default 1 = off)"},
    {.name = "repeat-last-n", .arg = "N", .type = SETTING_INTEGER,
     .min = 0, .max = INT32_MAX, .offset = SAMPLER_FIELD(repeat_last_n),
     .help = "tokens the penalty looks back over (default 64)"},
    {.name = "seed", .short_name = 's', .arg = "N", .type = SETTING_SEED,
     .min = 0, .max = (double)UINT64_MAX, .offset = SAMPLER_FIELD(seed),
     .help = "random seed (default: time-based, shown in the status)"},
    {.name = "steps", .short_name = 'n', .arg = "N", .type = SETTING_INTEGER,
     .min = 0, .max = SETTINGS_STEPS_MAX, .offset = offsetof(live_settings, steps),
     .help = "most new tokens per reply/generation (generate: 256;\nchat: 0 = until the model "
             "ends its reply)"},
    {.name = "slow-motion", .arg = "MS", .type = SETTING_INTEGER,
     .min = 0, .max = SETTINGS_SLOW_MOTION_MAX, .unit = "milliseconds",
     .offset = offsetof(live_settings, slow_motion_ms),
     .help = "tui: wait MS milliseconds after each reply token, to\nwatch and steer it (default "
             "0; also /set slow-motion,\nthe s key, LLMCHAT_STEP_DELAY_MS)"},
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

static double field_value(const setting_info *row, const live_settings *s)
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
    double v = field_value(row, s);
    if (!isfinite(v))
        return false;
    bool above = row->min_excluded ? v > row->min : v >= row->min;
    bool below = row->max_excluded ? v < row->max : v <= row->max;
    return above && below;
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
        if (int_max(row) >= INT32_MAX)
            snprintf(buf, size, "must be an integer >= %ld", int_min(row));
        else
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
    size_t o = (size_t)snprintf(buf, size, "T %g", c->temperature);
    if (c->top_k > 0 && o < size)
        o += (size_t)snprintf(buf + o, size - o, " k %d", c->top_k);
    if (c->top_p < 1.0f && o < size)
        o += (size_t)snprintf(buf + o, size - o, " p %g", c->top_p);
    if (c->min_p > 0.0f && o < size)
        o += (size_t)snprintf(buf + o, size - o, " min-p %g", c->min_p);
    if (c->repeat_penalty != 1.0f && o < size)
        o += (size_t)snprintf(buf + o, size - o, " rep %g", c->repeat_penalty);
    return (int)o;
}
