/* settings.c — parsing, checking and formatting the live settings (settings.h).
 *
 * Owns nothing: works on the caller's live_settings. Each value must be a whole
 * number or a decimal in its setting's range; the messages are phrases that follow
 * the setting's name, as the command line and the config file print them. */
#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const settings_names[] = {
    "temperature", "top-k", "top-p", "min-p", "repeat-penalty", "repeat-last-n", "seed",
    "steps", "slow-motion", NULL,
};

static bool parse_float(const char *v, float *out)
{
    char *end;
    errno = 0;
    float f = strtof(v, &end);
    if (end == v || *end || errno || !isfinite(f))
        return false;
    *out = f;
    return true;
}

static bool parse_int(const char *v, long min, long max, int *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || errno || n < min || n > max)
        return false;
    *out = (int)n;
    return true;
}

static int setting_index(const char *name)
{
    for (int i = 0; settings_names[i]; i++)
        if (!strcmp(name, settings_names[i]))
            return i;
    return -1;
}

bool settings_is_live(const char *name)
{
    return name && setting_index(name) >= 0;
}

const char *settings_apply(live_settings *s, const char *name, const char *v)
{
    sampler_config *c = &s->sampler;
    float f;
    switch (setting_index(name)) {
    case 0:
        if (!parse_float(v, &f) || f < 0)
            return "must be a number >= 0";
        c->temperature = f;
        return NULL;
    case 1: return parse_int(v, 0, INT32_MAX, &c->top_k) ? NULL : "must be an integer >= 0";
    case 2:
        if (!parse_float(v, &f) || f <= 0 || f > 1)
            return "must be in (0, 1]";
        c->top_p = f;
        return NULL;
    case 3:
        if (!parse_float(v, &f) || f < 0 || f >= 1)
            return "must be in [0, 1)";
        c->min_p = f;
        return NULL;
    case 4:
        if (!parse_float(v, &f) || f <= 0)
            return "must be a number > 0";
        c->repeat_penalty = f;
        return NULL;
    case 5: return parse_int(v, 0, INT32_MAX, &c->repeat_last_n) ? NULL : "must be an integer >= 0";
    case 6: {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (end == v || *end || errno || *v == '-' || *v == '+' || isspace((unsigned char)*v))
            return "must be a non-negative integer";
        c->seed = n;
        return NULL;
    }
    case 7:
        return parse_int(v, 0, SETTINGS_STEPS_MAX, &s->steps) ? NULL
                                                                : "must be an integer from 0 to 1000000";
    case 8:
        return parse_int(v, 0, SETTINGS_SLOW_MOTION_MAX, &s->slow_motion_ms)
                   ? NULL
                   : "must be a number of milliseconds from 0 to 10000";
    default: return "is not a setting";
    }
}

llm_status settings_set_line(live_settings *s, const char *line, llm_err *err)
{
    char name[64], value[128];
    const char *p = line ? line : "";
    size_t n = 0;
    while (isspace((unsigned char)*p))
        p++;
    while (*p && !isspace((unsigned char)*p) && n < sizeof name - 1)
        name[n++] = *p++;
    name[n] = '\0';
    if (!*name)
        return llm_fail(err, LLM_ERR_ARG, "set what? /set NAME VALUE, NAME one of temperature, "
                                          "top-k, top-p, min-p, repeat-penalty, repeat-last-n, "
                                          "seed, steps, slow-motion");
    if (!settings_is_live(name) || (*p && !isspace((unsigned char)*p)))
        return llm_fail(err, LLM_ERR_ARG, "unknown setting '%s': one of temperature, top-k, "
                                          "top-p, min-p, repeat-penalty, repeat-last-n, seed, "
                                          "steps, slow-motion", name);
    while (isspace((unsigned char)*p))
        p++;
    n = 0;
    while (*p && !isspace((unsigned char)*p) && n < sizeof value - 1)
        value[n++] = *p++;
    value[n] = '\0';
    if (!*value)
        return llm_fail(err, LLM_ERR_ARG, "%s needs a value: /set %s VALUE", name, name);
    while (isspace((unsigned char)*p))
        p++;
    if (*p)
        return llm_fail(err, LLM_ERR_ARG, "/set takes one name and one value, e.g. "
                                          "'/set temperature 0.7'");
    live_settings next = *s;
    const char *why = settings_apply(&next, name, value);
    if (why)
        return llm_fail(err, LLM_ERR_ARG, "%s %s, got '%s'", name, why, value);
    *s = next;
    return LLM_OK;
}

int settings_format(const live_settings *s, char *buf, size_t size)
{
    const sampler_config *c = &s->sampler;
    return snprintf(buf, size,
                    "temperature %g  top-k %d  top-p %g  min-p %g  repeat-penalty %g  "
                    "repeat-last-n %d  seed %" PRIu64 "  steps %d  slow-motion %d",
                    c->temperature, c->top_k, c->top_p, c->min_p, c->repeat_penalty,
                    c->repeat_last_n, c->seed, s->steps, s->slow_motion_ms);
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
