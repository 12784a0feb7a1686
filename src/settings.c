/* settings.c — parsing, checking and formatting the live settings (settings.h).
 *
 * Owns nothing: works on the caller's live_settings. A value must be a whole number
 * or decimal in the option's range; the sampler's ranges come from
 * sampler_config_check, so /set and the command line agree. */
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
    "steps", NULL,
};

static bool parse_float(const char *v, float *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end || errno == ERANGE || !isfinite(d))
        return false;
    *out = (float)d;
    return true;
}

static bool parse_long(const char *v, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || errno == ERANGE || n < min || n > max)
        return false;
    *out = n;
    return true;
}

static bool parse_u64(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    if (*v == '-')
        return false;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v || *end || errno == ERANGE)
        return false;
    *out = (uint64_t)n;
    return true;
}

static llm_status bad_number(llm_err *err, const char *name, const char *value, const char *kind)
{
    return llm_fail(err, LLM_ERR_ARG, "%s takes %s, not '%s'", name, kind, value);
}

llm_status settings_set(live_settings *s, const char *name, const char *value, llm_err *err)
{
    if (!name || !*name)
        return llm_fail(err, LLM_ERR_ARG, "set what? one of temperature, top-k, top-p, min-p, "
                                          "repeat-penalty, repeat-last-n, seed, steps");
    int which = -1;
    for (int i = 0; settings_names[i]; i++)
        if (strcmp(name, settings_names[i]) == 0)
            which = i;
    if (which < 0)
        return llm_fail(err, LLM_ERR_ARG, "unknown setting '%s': one of temperature, top-k, "
                                          "top-p, min-p, repeat-penalty, repeat-last-n, seed, "
                                          "steps", name);
    if (!value || !*value)
        return llm_fail(err, LLM_ERR_ARG, "%s needs a value", name);
    live_settings next = *s;
    sampler_config *c = &next.sampler;
    long n;
    switch (which) {
    case 0:
        if (!parse_float(value, &c->temperature))
            return bad_number(err, name, value, "a number");
        break;
    case 1:
        if (!parse_long(value, 0, INT32_MAX, &n))
            return bad_number(err, name, value, "a whole number >= 0 (0 = off)");
        c->top_k = (int)n;
        break;
    case 2:
        if (!parse_float(value, &c->top_p))
            return bad_number(err, name, value, "a number");
        break;
    case 3:
        if (!parse_float(value, &c->min_p))
            return bad_number(err, name, value, "a number");
        break;
    case 4:
        if (!parse_float(value, &c->repeat_penalty))
            return bad_number(err, name, value, "a number");
        break;
    case 5:
        if (!parse_long(value, 0, INT32_MAX, &n))
            return bad_number(err, name, value, "a whole number >= 0");
        c->repeat_last_n = (int)n;
        break;
    case 6:
        if (!parse_u64(value, &c->seed))
            return bad_number(err, name, value, "a whole number from 0 to 18446744073709551615");
        break;
    default:
        if (!parse_long(value, 0, SETTINGS_STEPS_MAX, &n))
            return llm_fail(err, LLM_ERR_ARG,
                            "steps takes a whole number from 0 (until the model ends its "
                            "reply) to %d, not '%s'", SETTINGS_STEPS_MAX, value);
        next.steps = (int)n;
        break;
    }
    llm_err why;
    if (sampler_config_check(c, &why) != LLM_OK) {
        const char *text = why.text;
        while (*text == '-') /* the check names the option: --top-p ... */
            text++;
        return llm_fail(err, LLM_ERR_ARG, "%s", text);
    }
    *s = next;
    return LLM_OK;
}

llm_status settings_set_line(live_settings *s, const char *line, llm_err *err)
{
    char name[64], value[128];
    const char *p = line ? line : "";
    while (isspace((unsigned char)*p))
        p++;
    size_t n = 0;
    while (*p && !isspace((unsigned char)*p) && n < sizeof name - 1)
        name[n++] = *p++;
    name[n] = '\0';
    if (*p && !isspace((unsigned char)*p))
        return llm_fail(err, LLM_ERR_ARG, "unknown setting '%.40s...'", name);
    while (isspace((unsigned char)*p))
        p++;
    n = 0;
    while (*p && !isspace((unsigned char)*p) && n < sizeof value - 1)
        value[n++] = *p++;
    value[n] = '\0';
    if (*p && !isspace((unsigned char)*p))
        return llm_fail(err, LLM_ERR_ARG, "%s: the value is too long", name);
    while (isspace((unsigned char)*p))
        p++;
    if (*p)
        return llm_fail(err, LLM_ERR_ARG, "/set takes one name and one value, e.g. "
                                          "'/set temperature 0.7'");
    return settings_set(s, name, value, err);
}

int settings_format(const live_settings *s, char *buf, size_t size)
{
    const sampler_config *c = &s->sampler;
    return snprintf(buf, size,
                    "temperature %g  top-k %d  top-p %g  min-p %g  repeat-penalty %g  "
                    "repeat-last-n %d  seed %" PRIu64 "  steps %d",
                    c->temperature, c->top_k, c->top_p, c->min_p, c->repeat_penalty,
                    c->repeat_last_n, c->seed, s->steps);
}
