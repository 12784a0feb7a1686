/* parse_number.c — whole texts as numbers (see parse_number.h). Owns nothing. */
#include "parse_number.h"

#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whether text is written as a decimal: an optional sign, digits (for a fraction:
 * with a '.' among or after them, and an exponent), nothing else: no blanks, no hex,
 * no "inf" or "nan". */
static bool decimal_text(const char *text, bool fraction)
{
    const char *p = text + (*text == '+' || *text == '-');
    int digits = 0;
    for (; isdigit((unsigned char)*p); p++)
        digits++;
    if (fraction && *p == '.')
        for (p++; isdigit((unsigned char)*p); p++)
            digits++;
    if (digits == 0)
        return false;
    if (fraction && (*p == 'e' || *p == 'E')) {
        p++;
        p += *p == '+' || *p == '-';
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return *p == '\0';
}

bool parse_int(const char *text, long min, long max, int *out)
{
    if (!decimal_text(text, false))
        return false;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max)
        return false;
    *out = (int)v;
    return true;
}

/* text with its '.' made the locale's decimal point, in buf; text itself when the
 * locale's point is '.' or text has none (or does not fit). */
static const char *c_decimal(const char *text, char *buf, size_t size)
{
    const char *point = localeconv()->decimal_point;
    const char *dot = strchr(text, '.');
    if (!dot || !point || !strcmp(point, "."))
        return text;
    size_t lead = (size_t)(dot - text), n_point = strlen(point), rest = strlen(dot + 1);
    if (lead + n_point + rest + 1 > size)
        return text;
    memcpy(buf, text, lead);
    memcpy(buf + lead, point, n_point);
    memcpy(buf + lead + n_point, dot + 1, rest + 1);
    return buf;
}

bool parse_float(const char *text, float *out)
{
    if (!decimal_text(text, true))
        return false;
    char buf[128], *end;
    const char *s = c_decimal(text, buf, sizeof buf);
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

bool parse_u64(const char *text, uint64_t *out)
{
    text += *text == '+';
    if (!isdigit((unsigned char)*text))
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end)
        return false;
    *out = (uint64_t)v;
    return true;
}

bool parse_index_prefix(const char *text, long max, int *out, const char **end)
{
    long v = 0;
    const char *p = text;
    for (; isdigit((unsigned char)*p); p++) {
        v = v * 10 + (*p - '0');
        if (v > max)
            return false;
    }
    if (p == text)
        return false;
    *out = (int)v;
    *end = p;
    return true;
}

bool parse_index_range(const char *text, long max, int *first, int *last)
{
    int a, b;
    const char *p;
    if (!parse_index_prefix(text, max, &a, &p) || *p != '-' ||
        !parse_index_prefix(p + 1, max, &b, &p) || *p || b < a)
        return false;
    *first = a;
    *last = b;
    return true;
}
